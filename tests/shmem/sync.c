/* Point-to-point synchronization and locks: a token passed around the ring with puts and
 * wait_until; shmem_test; a counter incremented with a plain get and put under
 * shmem_set_lock by every PE (exact only if the lock excludes); test_lock; a barrier over
 * the even PEs only (active set with stride 2). */
#include <shmem.h>
#include "check.h"

#define LAPS 3
#define INCS 10

static int token;
static long flag;
static long lock;
static long counter;
static long pSync[SHMEM_BARRIER_SYNC_SIZE];
static int even_hits;

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++)
    pSync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();

  /* Token ring: PE 0 starts each lap; every PE waits for lap * n + me. */
  for (int lap = 0; lap < LAPS; lap++) {
    if (me != 0 || lap > 0)
      shmem_int_wait_until(&token, SHMEM_CMP_EQ, lap * n + me);
    shmem_int_p(&token, lap * n + me + 1, (me + 1) % n);
  }
  if (me == 0)
    shmem_int_wait_until(&token, SHMEM_CMP_GE, LAPS * n);
  CHECK(shmem_int_test(&token, SHMEM_CMP_GT, 0), "test");
  CHECK(!shmem_int_test(&token, SHMEM_CMP_LT, 0), "test false");
  shmem_barrier_all();

  /* fence between two puts, then the flag: the data is there when the flag is. */
  if (me == 1) {
    shmem_long_p(&counter, 1234, 0);
    shmem_fence();
    shmem_long_p(&flag, 1, 0);
  }
  if (me == 0) {
    shmem_long_wait(&flag, 0);
    CHECK(counter == 1234, "data before the flag: %ld", counter);
    counter = 0;
  }
  shmem_barrier_all();

  /* Lock: non-atomic read-modify-write of PE 0's counter. */
  for (int i = 0; i < INCS; i++) {
    shmem_set_lock(&lock);
    long v = shmem_long_g(&counter, 0);
    shmem_long_p(&counter, v + 1, 0);
    shmem_clear_lock(&lock);
  }
  shmem_barrier_all();
  if (me == 0)
    CHECK(counter == (long)INCS * n, "counter under the lock: %ld, want %d", counter, INCS * n);
  if (me == 0) {
    shmem_set_lock(&lock);
  }
  shmem_barrier_all();
  if (me == 1)
    CHECK(shmem_test_lock(&lock) == 1, "test_lock got a held lock");
  shmem_barrier_all();
  if (me == 0)
    shmem_clear_lock(&lock);
  shmem_barrier_all();
  if (me == 1) {
    CHECK(shmem_test_lock(&lock) == 0, "test_lock did not get a free lock");
    shmem_clear_lock(&lock);
  }

  /* Barrier over the even PEs, twice with the same pSync. */
  if (me % 2 == 0) {
    int evens = (n + 1) / 2;
    for (int r = 0; r < 2; r++) {
      shmem_int_atomic_inc(&even_hits, 0);
      shmem_barrier(0, 1, evens, pSync);
      CHECK(shmem_int_atomic_fetch(&even_hits, 0) >= evens * (r + 1), "even barrier round %d", r);
      shmem_barrier(0, 1, evens, pSync);
    }
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++)
      CHECK(pSync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld after the barrier", i, pSync[i]);
  }
  shmem_sync_all();
  printf("sync ok: PE %d\n", me);
  shmem_finalize();
  return 0;
}
