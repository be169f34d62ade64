/* Program errors must end the job with a clear message, not hang:
 *   errors pe    PE 0 puts to PE n (out of range)
 *   errors sym   PE 0 puts to the address of a local (stack) variable
 * The other PEs wait in a barrier that never completes: oshrun must stop them.
 *   errors exit  PE 0 exits (status 0) without shmem_finalize while the others wait for it
 *                in a barrier: oshrun must stop them.
 *   errors hang  every PE prints "waiting" and waits for a flag nobody sets (oshrun's
 *                SIGINT/SIGTERM handling is tested with it). */
#include <shmem.h>
#include <string.h>
#include "check.h"

static int x;
static long flag;

int main(int argc, char **argv) {
  shmem_init();
  int local = 0;
  CHECK(argc == 2, "usage: errors pe|sym|exit|hang");
  if (strcmp(argv[1], "hang") == 0) {
    printf("waiting\n");
    fflush(stdout);
    shmem_long_wait_until(&flag, SHMEM_CMP_NE, 0);
    return 1;
  }
  if (shmem_my_pe() == 0) {
    if (strcmp(argv[1], "exit") == 0)
      return 0;
    if (strcmp(argv[1], "pe") == 0)
      shmem_int_p(&x, 1, shmem_n_pes());
    else
      shmem_int_p(&local, 1, 1);
    printf("not reached\n");
    return 0;
  }
  shmem_barrier_all();
  printf("not reached either\n");
  shmem_finalize();
  return 0;
}
