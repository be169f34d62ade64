/* A classic OpenSHMEM program, written the way the specification's examples are: globals
 * and static arrays as symmetric data, pSync initialized by hand, a broadcast from PE 0,
 * a circular shift with shmem_int_put, a sum reduction, and deprecated 1.3 calls that old
 * programs still make. Prints one line per PE and "PASS"/"FAIL" on PE 0. */
#include <stdio.h>
#include <shmem.h>

long pSync[SHMEM_BCAST_SYNC_SIZE];
long pSyncR[SHMEM_REDUCE_SYNC_SIZE];
int pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
long source[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
long target[10];
int shift_src, shift_dst;
int total, sum_dst;
int errors;

int main(void) {
  int i, me, npes;

  for (i = 0; i < SHMEM_BCAST_SYNC_SIZE; i += 1)
    pSync[i] = SHMEM_SYNC_VALUE;
  for (i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i += 1)
    pSyncR[i] = SHMEM_SYNC_VALUE;

  start_pes(0);
  me = _my_pe();
  npes = _num_pes();
  printf("Hello from PE %d of %d\n", me, npes);

  shmem_barrier_all(); /* Wait for all PEs to initialize pSync */
  shmem_broadcast64(target, source, 10, 0, 0, 0, npes, pSync);
  if (me != 0)
    for (i = 0; i < 10; i++)
      if (target[i] != i + 1)
        errors++;

  shift_src = me;
  shmem_barrier_all();
  shmem_int_put(&shift_dst, &shift_src, 1, (me + 1) % npes);
  shmem_barrier_all();
  if (shift_dst != (me + npes - 1) % npes)
    errors++;

  shmem_int_sum_to_all(&total, &errors, 1, 0, 0, npes, pWrk, pSyncR);
  if (me == 0)
    printf("%s: %d errors over %d PEs\n", total == 0 ? "PASS" : "FAIL", total, npes);
  shmem_barrier_all();
  shmem_finalize();
  return total == 0 ? 0 : 1;
}
