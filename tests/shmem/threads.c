/* SHMEM_THREAD_MULTIPLE: two threads per PE make RMA and atomic calls at once (each thread
 * has its own GSAS handle): Fetch&Adds on PE 0's counter and puts into distinct slots of the
 * next PE; exact results checked after a barrier. */
#include <pthread.h>
#include <shmem.h>
#include "check.h"

#define THREADS 2
#define OPS 50

static long counter;
static long slots[THREADS][OPS];

static void *work(void *arg) {
  long t = (long)arg;
  int me = shmem_my_pe(), next = (me + 1) % shmem_n_pes();
  for (int i = 0; i < OPS; i++) {
    shmem_long_atomic_fetch_add(&counter, 1, 0);
    shmem_long_p(&slots[t][i], me * 1000 + t * 100 + i, next);
  }
  return NULL;
}

int main(void) {
  int provided = -1;
  shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
  CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
  int me = shmem_my_pe(), n = shmem_n_pes(), prev = (me + n - 1) % n;
  pthread_t th[THREADS];
  for (long t = 0; t < THREADS; t++)
    CHECK(pthread_create(&th[t], NULL, work, (void *)t) == 0, "pthread_create");
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  shmem_barrier_all();
  if (me == 0)
    CHECK(counter == (long)n * THREADS * OPS, "counter %ld, want %d", counter, n * THREADS * OPS);
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < OPS; i++)
      CHECK(slots[t][i] == prev * 1000 + t * 100 + i, "slots[%d][%d] = %ld", t, i, slots[t][i]);
  printf("threads ok: PE %d\n", me);
  shmem_finalize();
  return 0;
}
