/* A 1.4-style OpenSHMEM program (C11 generic interfaces, symmetric heap), as a user would
 * write it: a token travels the ring twice with shmem_p and shmem_wait_until, every PE adds
 * into a counter on PE 0 with shmem_atomic_fetch_add, and PE 0 checks the totals with
 * shmem_g and shmem_atomic_fetch. Prints "ring11: PASS" on PE 0. */
#include <shmem.h>
#include <stdio.h>

int main(void) {
  shmem_init();
  int me = shmem_my_pe();
  int npes = shmem_n_pes();
  long *token = shmem_malloc(sizeof(long));
  int *counter = shmem_calloc(1, sizeof(int));
  double *sum = shmem_malloc(sizeof(double));
  *token = -1;
  *sum = 0;
  shmem_barrier_all();

  for (long lap = 0; lap < 2; lap++) {
    if (me != 0 || lap > 0)
      shmem_wait_until(token, SHMEM_CMP_EQ, lap * npes + me);
    shmem_p(token, lap * npes + me + 1, (me + 1) % npes);
  }
  int ticket = shmem_atomic_fetch_add(counter, 1, 0);
  double mine = me + 0.5;
  shmem_double_atomic_set(sum, 0.0, me);
  shmem_barrier_all();
  shmem_put(sum, &mine, 1, me);
  shmem_barrier_all();

  int ok = 1;
  if (me == 0) {
    shmem_wait_until(token, SHMEM_CMP_EQ, 2L * npes);
    if (shmem_atomic_fetch(counter, 0) != npes)
      ok = 0;
    for (int pe = 0; pe < npes; pe++)
      if (shmem_g(sum, pe) != pe + 0.5)
        ok = 0;
    printf("ring11: %s (%d PEs)\n", ok ? "PASS" : "FAIL", npes);
  }
  if (ticket < 0 || ticket >= npes)
    ok = 0;
  shmem_free(sum);
  shmem_free(counter);
  shmem_free(token);
  shmem_finalize();
  return ok ? 0 : 1;
}
