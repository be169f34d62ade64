/* Collectives over all PEs and over an active set: broadcast32/64, collect (different
 * lengths per PE), fcollect, alltoall32/64, alltoalls, and the reductions on int, long,
 * short and double (sum, prod, min, max, and, or, xor), dest == source included. */
#include <shmem.h>
#include <stdint.h>
#include "check.h"

#define N 4
#define MAXPES 16

static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pSync2[SHMEM_REDUCE_SYNC_SIZE];
static int pWrk_i[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
static long pWrk_l[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
static short pWrk_s[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
static double pWrk_d[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];

static int32_t b32_src[N], b32_dst[N];
static int64_t b64_src[N], b64_dst[N];
static int32_t col_src[MAXPES], col_dst[MAXPES * MAXPES];
static int64_t fcol_src[2], fcol_dst[2 * MAXPES];
static int32_t a2a_src[2 * MAXPES], a2a_dst[2 * MAXPES];
static int64_t a2as_src[2 * MAXPES * 2], a2as_dst[2 * MAXPES * 3];
static int i_red[N], i_dst[N];
static long l_red[N];
static short s_red[N], s_dst[N];
static double d_red[N], d_dst[N];

static void reset(long *p) {
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
    p[i] = SHMEM_SYNC_VALUE;
}

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(n <= MAXPES, "at most %d PEs", MAXPES);
  reset(pSync);
  reset(pSync2);
  for (int i = 0; i < N; i++) {
    b32_src[i] = me == 1 ? 100 + i : -1;
    b64_src[i] = me == 1 ? ((int64_t)1 << 40) + i : -1;
  }
  shmem_barrier_all();

  /* broadcast from PE 1 (root index 1 of the whole job) */
  shmem_broadcast32(b32_dst, b32_src, N, 1, 0, 0, n, pSync);
  shmem_broadcast64(b64_dst, b64_src, N, 1, 0, 0, n, pSync2);
  for (int i = 0; i < N && me != 1; i++) {
    CHECK(b32_dst[i] == 100 + i, "broadcast32[%d] = %d", i, b32_dst[i]);
    CHECK(b64_dst[i] == ((int64_t)1 << 40) + i, "broadcast64[%d]", i);
  }

  /* collect: PE k contributes k + 1 elements k*100 + j */
  for (int j = 0; j <= me; j++)
    col_src[j] = me * 100 + j;
  shmem_barrier_all();
  shmem_collect32(col_dst, col_src, me + 1, 0, 0, n, pSync);
  int at = 0;
  for (int k = 0; k < n; k++)
    for (int j = 0; j <= k; j++, at++)
      CHECK(col_dst[at] == k * 100 + j, "collect[%d] = %d", at, col_dst[at]);

  fcol_src[0] = me;
  fcol_src[1] = -me;
  shmem_barrier_all();
  shmem_fcollect64(fcol_dst, fcol_src, 2, 0, 0, n, pSync2);
  for (int k = 0; k < n; k++)
    CHECK(fcol_dst[2 * k] == k && fcol_dst[2 * k + 1] == -k, "fcollect at %d", k);

  /* alltoall: block k of my source goes to PE k; block j of my dest comes from PE j */
  for (int k = 0; k < n; k++) {
    a2a_src[2 * k] = me * 1000 + k;
    a2a_src[2 * k + 1] = -(me * 1000 + k);
  }
  shmem_barrier_all();
  shmem_alltoall32(a2a_dst, a2a_src, 2, 0, 0, n, pSync);
  for (int j = 0; j < n; j++)
    CHECK(a2a_dst[2 * j] == j * 1000 + me && a2a_dst[2 * j + 1] == -(j * 1000 + me), "alltoall from %d", j);
  /* alltoalls: source stride 2, dest stride 3, one element per PE */
  for (int k = 0; k < n; k++)
    a2as_src[2 * k] = me * 10 + k;
  shmem_barrier_all();
  shmem_alltoalls64(a2as_dst, a2as_src, 3, 2, 1, 0, 0, n, pSync2);
  for (int j = 0; j < n; j++)
    CHECK(a2as_dst[3 * j] == j * 10 + me, "alltoalls from %d: %lld", j, (long long)a2as_dst[3 * j]);

  /* reductions */
  for (int i = 0; i < N; i++) {
    i_red[i] = me + i;
    l_red[i] = (long)(me + 1) << i;
    s_red[i] = (short)(me % 3 + i);
    d_red[i] = me * 0.5 + i;
  }
  shmem_barrier_all();
  shmem_int_sum_to_all(i_dst, i_red, N, 0, 0, n, pWrk_i, pSync);
  for (int i = 0; i < N; i++)
    CHECK(i_dst[i] == n * (n - 1) / 2 + n * i, "int sum[%d] = %d", i, i_dst[i]);
  shmem_int_max_to_all(i_dst, i_red, N, 0, 0, n, pWrk_i, pSync2);
  CHECK(i_dst[0] == n - 1 && i_dst[3] == n + 2, "int max");
  shmem_short_min_to_all(s_dst, s_red, N, 0, 0, n, pWrk_s, pSync);
  CHECK(s_dst[0] == 0 && s_dst[2] == 2, "short min");
  shmem_double_prod_to_all(d_dst, d_red, N, 0, 0, n, pWrk_d, pSync2);
  double want = 1;
  for (int k = 0; k < n; k++)
    want *= k * 0.5 + 1;
  CHECK(d_dst[1] == want, "double prod[1] = %g, want %g", d_dst[1], want);
  shmem_long_or_to_all(l_red, l_red, N, 0, 0, n, pWrk_l, pSync); /* in place */
  long orv = 0;
  for (int k = 0; k < n; k++)
    orv |= (long)(k + 1);
  CHECK(l_red[0] == orv && l_red[2] == orv << 2, "long or in place: %ld", l_red[0]);
  shmem_int_xor_to_all(i_dst, i_red, N, 0, 0, n, pWrk_i, pSync2);
  int x = 0;
  for (int k = 0; k < n; k++)
    x ^= k + 1;
  CHECK(i_dst[1] == x, "int xor[1] = %d, want %d", i_dst[1], x);

  /* an active set: the odd PEs sum their numbers */
  if (me % 2 == 1) {
    int odds = n / 2;
    i_red[0] = me;
    shmem_int_sum_to_all(i_dst, i_red, 1, 1, 1, odds, pWrk_i, pSync);
    CHECK(i_dst[0] == odds * odds, "odd sum %d, want %d", i_dst[0], odds * odds);
  }
  shmem_barrier_all();
  printf("coll ok: PE %d of %d\n", me, n);
  shmem_finalize();
  return 0;
}
