/* Zero-element collectives (OpenSHMEM 1.5: a null pointer is allowed where its count is 0):
 * every team collective and reduction on SHMEM_TEAM_WORLD with nelems 0 and NULL source and
 * dest (mem, typed and C11 forms) must return 0; the same with symmetric buffers leaves dest
 * untouched; the deprecated active-set forms with 0 elements and NULL buffers complete; and a
 * collect where some PEs give 0 elements still gathers the others'. */
#include <shmem.h>
#include <stdint.h>
#include "check.h"

#define MAXPES 64

static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int src[MAXPES], dst[MAXPES];

/* A team collective's return value: 0. */
#define ZERO(call) CHECK((call) == 0, "%s", #call)

static void team_forms(shmem_team_t t) {
  ZERO(shmem_broadcastmem(t, NULL, NULL, 0, 0));
  ZERO(shmem_collectmem(t, NULL, NULL, 0));
  ZERO(shmem_fcollectmem(t, NULL, NULL, 0));
  ZERO(shmem_alltoallmem(t, NULL, NULL, 0));
  ZERO(shmem_alltoallsmem(t, NULL, NULL, 1, 1, 0));

  ZERO(shmem_int_broadcast(t, NULL, NULL, 0, 0));
  ZERO(shmem_long_broadcast(t, NULL, NULL, 0, 0));
  ZERO(shmem_double_collect(t, NULL, NULL, 0));
  ZERO(shmem_int_collect(t, NULL, NULL, 0));
  ZERO(shmem_long_fcollect(t, NULL, NULL, 0));
  ZERO(shmem_char_alltoall(t, NULL, NULL, 0));
  ZERO(shmem_int64_alltoalls(t, NULL, NULL, 1, 1, 0));
  ZERO(shmem_longdouble_alltoalls(t, NULL, NULL, 2, 3, 0));

  ZERO(shmem_uint_and_reduce(t, NULL, NULL, 0));
  ZERO(shmem_uint_or_reduce(t, NULL, NULL, 0));
  ZERO(shmem_uint64_xor_reduce(t, NULL, NULL, 0));
  ZERO(shmem_int_min_reduce(t, NULL, NULL, 0));
  ZERO(shmem_double_max_reduce(t, NULL, NULL, 0));
  ZERO(shmem_int_sum_reduce(t, NULL, NULL, 0));
  ZERO(shmem_long_prod_reduce(t, NULL, NULL, 0));
  ZERO(shmem_complexd_sum_reduce(t, NULL, NULL, 0));

  /* C11: the pointer's type picks the routine; NULL of that type. */
  int *none = NULL;
  ZERO(shmem_broadcast(t, none, none, 0, 0));
  ZERO(shmem_collect(t, none, none, 0));
  ZERO(shmem_fcollect(t, none, none, 0));
  ZERO(shmem_alltoall(t, none, none, 0));
  ZERO(shmem_alltoalls(t, none, none, 1, 1, 0));
  ZERO(shmem_sum_reduce(t, none, none, 0));
  ZERO(shmem_max_reduce(t, none, none, 0));
}

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(n <= MAXPES, "at most %d PEs", MAXPES);

  team_forms(SHMEM_TEAM_WORLD);

  /* Symmetric buffers, 0 elements: nothing is written. */
  for (int i = 0; i < MAXPES; i++) dst[i] = -1 - i;
  src[0] = me;
  ZERO(shmem_int_broadcast(SHMEM_TEAM_WORLD, dst, src, 0, n - 1));
  ZERO(shmem_int_collect(SHMEM_TEAM_WORLD, dst, src, 0));
  ZERO(shmem_int_fcollect(SHMEM_TEAM_WORLD, dst, src, 0));
  ZERO(shmem_int_alltoall(SHMEM_TEAM_WORLD, dst, src, 0));
  ZERO(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 0));
  for (int i = 0; i < MAXPES; i++) CHECK(dst[i] == -1 - i, "dst[%d] = %d", i, dst[i]);

  /* collect with 0 elements from the odd PEs: the even PEs' numbers, in order. */
  src[0] = 100 + me;
  ZERO(shmem_int_collect(SHMEM_TEAM_WORLD, dst, src, me % 2 ? 0 : 1));
  for (int i = 0; i < (n + 1) / 2; i++)
    CHECK(dst[i] == 100 + 2 * i, "collected[%d] = %d", i, dst[i]);
  CHECK(dst[(n + 1) / 2] == -1 - (n + 1) / 2, "collect wrote past its %d elements", (n + 1) / 2);

  /* The 1.4 active-set forms, 0 elements and NULL buffers: they return nothing, so they must
   * just end; a barrier between them, as the spec asks before a pSync is used again. */
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
#define AS(call) (call, shmem_barrier_all())
  AS(shmem_broadcast32(NULL, NULL, 0, 0, 0, 0, n, pSync));
  AS(shmem_broadcast64(NULL, NULL, 0, 0, 0, 0, n, pSync));
  AS(shmem_collect32(NULL, NULL, 0, 0, 0, n, pSync));
  AS(shmem_collect64(NULL, NULL, 0, 0, 0, n, pSync));
  AS(shmem_fcollect32(NULL, NULL, 0, 0, 0, n, pSync));
  AS(shmem_fcollect64(NULL, NULL, 0, 0, 0, n, pSync));
  AS(shmem_alltoall32(NULL, NULL, 0, 0, 0, n, pSync));
  AS(shmem_alltoalls64(NULL, NULL, 1, 1, 0, 0, 0, n, pSync));
  AS(shmem_int_sum_to_all(NULL, NULL, 0, 0, 0, n, (int *)pWrk, pSync));
  AS(shmem_long_max_to_all(NULL, NULL, 0, 0, 0, n, pWrk, pSync));

  /* A split team too (the even PEs). */
  shmem_team_t even;
  ZERO(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even));
  if (even != SHMEM_TEAM_INVALID) {
    team_forms(even);
    shmem_team_destroy(even);
  }

  shmem_barrier_all();
  printf("nop_coll ok: PE %d of %d\n", me, n);
  shmem_finalize();
  return 0;
}
