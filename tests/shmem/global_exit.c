/* shmem_global_exit(status) ends the whole job with that status (issue 33):
 *   global_exit STATUS   the last PE calls shmem_global_exit(STATUS) while every other PE
 *                        waits in a barrier that only it could complete; oshrun must stop them
 *                        and exit with STATUS (its low 8 bits, as exit(3) keeps them). */
#include <shmem.h>
#include <stdlib.h>
#include <unistd.h>
#include "check.h"

int main(int argc, char **argv) {
  shmem_init();
  CHECK(argc == 2, "usage: global_exit STATUS");
  int me = shmem_my_pe(), last = shmem_n_pes() - 1;
  CHECK(last > 0, "needs at least 2 PEs");
  if (me == last) {
    printf("global_exit: PE %d calls shmem_global_exit(%s)\n", me, argv[1]);
    fflush(stdout);
    /* Give the others time to be in the barrier. */
    sleep(1);
    shmem_global_exit(atoi(argv[1]));
    printf("not reached\n");
    abort();
  }
  printf("waiting\n");
  fflush(stdout);
  shmem_barrier_all();
  printf("not reached either\n");
  shmem_finalize();
  return 0;
}
