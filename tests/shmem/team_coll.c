/* OpenSHMEM 1.5 team collectives, on SHMEM_TEAM_WORLD, on the world reversed (a split of
 * stride -1) and on the odd PEs (a split leaving PEs out): broadcast (typed, mem, C11; the
 * root's dest written too), collect (different lengths per PE), fcollect, alltoall,
 * alltoalls, and the reductions of every operation on several types (complex, long double
 * and C11 forms included), in place too; with a 1.4 active-set collective in between. */
#include <complex.h>
#include <shmem.h>
#include <stdint.h>
#include "check.h"

#define MAXPES 16
#define N 3

static int bsrc[N], bdst[N];
static long double ldsrc[N], lddst[N];
static char msrc[8], mdst[8];
static int csrc[MAXPES], cdst[MAXPES * MAXPES];
static long fsrc[2], fdst[2 * MAXPES];
static double asrc[2 * MAXPES], adst[2 * MAXPES];
static int64_t ssrc[3 * 2 * MAXPES], sdst[2 * 2 * MAXPES];
static int isrc[N], idst[N];
static unsigned ubits[N], udst[N];
static uint64_t u64src[N], u64dst[N];
static double dsrc[N], ddst[N];
static long double ld[N], ldd[N];
static double complex zsrc[N], zdst[N];
static float complex fzsrc[N], fzdst[N];
static short ssum[N];
static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
static long l14[N], l14d[N];

/* Team `t` (size tn, this PE tme, world PEs w): every collective, checked. */
static void run(const char *name, shmem_team_t t, int tn, int tme, const int *w) {
  /* Broadcast from the last team PE; its dest gets the data too. */
  int root = tn - 1;
  for (int i = 0; i < N; i++) {
    bsrc[i] = tme == root ? 7000 + i : -1;
    bdst[i] = -2;
    ldsrc[i] = tme == root ? 0.5L + i : -1;
  }
  CHECK(shmem_int_broadcast(t, bdst, bsrc, N, root) == 0, "%s: broadcast", name);
  for (int i = 0; i < N; i++) CHECK(bdst[i] == 7000 + i, "%s: bdst[%d] = %d", name, i, bdst[i]);
  CHECK(shmem_broadcast(t, lddst, ldsrc, N, root) == 0, "%s: C11 broadcast", name);
  for (int i = 0; i < N; i++) CHECK(lddst[i] == 0.5L + i, "%s: lddst[%d]", name, i);
  for (int i = 0; i < 8; i++) msrc[i] = (char)(tme == 0 ? 'a' + i : '?');
  CHECK(shmem_broadcastmem(t, mdst, msrc, 8, 0) == 0, "%s: broadcastmem", name);
  for (int i = 0; i < 8; i++) CHECK(mdst[i] == 'a' + i, "%s: mdst[%d]", name, i);
  /* In place on the root. */
  CHECK(shmem_int_broadcast(t, bsrc, bsrc, N, root) == 0, "%s: in place", name);
  for (int i = 0; i < N; i++) CHECK(bsrc[i] == 7000 + i, "%s: in place %d", name, i);

  /* Collect: team PE k gives k + 1 ints, k * 100 + j. */
  for (int j = 0; j <= tme; j++) csrc[j] = tme * 100 + j;
  CHECK(shmem_int_collect(t, cdst, csrc, (size_t)tme + 1) == 0, "%s: collect", name);
  int at = 0;
  for (int k = 0; k < tn; k++)
    for (int j = 0; j <= k; j++, at++)
      CHECK(cdst[at] == k * 100 + j, "%s: collect[%d] = %d", name, at, cdst[at]);
  CHECK(shmem_collectmem(t, cdst, csrc, sizeof(int)) == 0 && cdst[tn - 1] == (tn - 1) * 100,
        "%s: collectmem", name);

  /* Fcollect: 2 longs each, the world PE number and the team one. */
  fsrc[0] = w[tme];
  fsrc[1] = tme;
  CHECK(shmem_fcollect(t, fdst, fsrc, 2) == 0, "%s: fcollect", name);
  for (int k = 0; k < tn; k++)
    CHECK(fdst[2 * k] == w[k] && fdst[2 * k + 1] == k, "%s: fcollect %d", name, k);
  CHECK(shmem_fcollectmem(t, fdst, fsrc, 2 * sizeof(long)) == 0 && fdst[2 * root] == w[root],
        "%s: fcollectmem", name);

  /* Alltoall: block k of my source goes to team PE k, 2 doubles. */
  for (int k = 0; k < tn; k++)
    for (int i = 0; i < 2; i++) asrc[2 * k + i] = tme * 100 + k * 10 + i;
  CHECK(shmem_double_alltoall(t, adst, asrc, 2) == 0, "%s: alltoall", name);
  for (int k = 0; k < tn; k++)
    for (int i = 0; i < 2; i++)
      CHECK(adst[2 * k + i] == k * 100 + tme * 10 + i, "%s: alltoall[%d]", name, 2 * k + i);
  CHECK(shmem_alltoallmem(t, adst, asrc, 2 * sizeof(double)) == 0 &&
            adst[0] == tme * 10, "%s: alltoallmem", name);

  /* Alltoalls: source stride 3, dest stride 2, 2 elements per PE. */
  for (int k = 0; k < tn; k++)
    for (int i = 0; i < 2; i++) ssrc[3 * (2 * k + i)] = tme * 1000 + k * 10 + i;
  for (int i = 0; i < 2 * 2 * tn; i++) sdst[i] = -1;
  CHECK(shmem_int64_alltoalls(t, sdst, ssrc, 2, 3, 2) == 0, "%s: alltoalls", name);
  for (int k = 0; k < tn; k++)
    for (int i = 0; i < 2; i++) {
      CHECK(sdst[2 * (2 * k + i)] == k * 1000 + tme * 10 + i, "%s: alltoalls %d", name, k);
      CHECK(sdst[2 * (2 * k + i) + 1] == -1, "%s: alltoalls gap %d", name, k);
    }

  /* A 1.4 active-set reduction over all PEs in between (on WORLD only: all PEs take part). */
  if (t == SHMEM_TEAM_WORLD) {
    for (int i = 0; i < N; i++) l14[i] = w[tme] + i;
    shmem_long_sum_to_all(l14d, l14, N, 0, 0, tn, pWrk, pSync);
    for (int i = 0; i < N; i++)
      CHECK(l14d[i] == (long)tn * (tn - 1) / 2 + (long)tn * i, "1.4 sum %d", i);
  }

  /* Reductions. */
  int sum = 0, prod = 1, mx = -1000, mn = 1000;
  unsigned and_ = ~0u, or_ = 0, xor_ = 0;
  for (int k = 0; k < tn; k++) {
    int v = w[k] - 2;
    sum += v;
    prod *= (k % 3) + 1;
    mx = v > mx ? v : mx;
    mn = v < mn ? v : mn;
    unsigned b = 1u << w[k] | 0x80000000u;
    and_ &= b;
    or_ |= b;
    xor_ ^= b;
  }
  for (int i = 0; i < N; i++) {
    isrc[i] = w[tme] - 2 + i;
    ubits[i] = (1u << w[tme] | 0x80000000u) << i;
  }
#define RED(OP, T, WANT)                                                                      \
  do {                                                                                        \
    CHECK(shmem_##T##_##OP##_reduce(t, idst, isrc, N) == 0, "%s: " #OP, name);               \
    for (int i = 0; i < N; i++) CHECK(idst[i] == (WANT), "%s: " #OP "[%d] = %d", name, i, idst[i]); \
  } while (0)
  RED(sum, int, sum + tn * i);
  RED(max, int, mx + i);
  RED(min, int, mn + i);
  for (int i = 0; i < N; i++) isrc[i] = (tme % 3) + 1 + (i == 2 ? -(tme % 3) - 1 : 0);
  RED(prod, int, i == 2 ? 0 : prod);
  CHECK(shmem_uint_and_reduce(t, udst, ubits, N) == 0, "%s: and", name);
  for (int i = 0; i < N; i++) CHECK(udst[i] == and_ << i, "%s: and[%d] %x", name, i, udst[i]);
  CHECK(shmem_or_reduce(t, udst, ubits, N) == 0, "%s: C11 or", name);
  for (int i = 0; i < N; i++) CHECK(udst[i] == or_ << i, "%s: or[%d] %x", name, i, udst[i]);
  /* xor in place. */
  CHECK(shmem_uint_xor_reduce(t, ubits, ubits, N) == 0, "%s: xor", name);
  for (int i = 0; i < N; i++) CHECK(ubits[i] == xor_ << i, "%s: xor[%d] %x", name, i, ubits[i]);
  for (int i = 0; i < N; i++) u64src[i] = (uint64_t)1 << (w[tme] + 32 * (i % 2));
  CHECK(shmem_uint64_or_reduce(t, u64dst, u64src, N) == 0, "%s: uint64 or", name);
  uint64_t all = 0;
  for (int k = 0; k < tn; k++) all |= (uint64_t)1 << w[k];
  for (int i = 0; i < N; i++) CHECK(u64dst[i] == all << 32 * (i % 2), "%s: u64 or %d", name, i);
  for (int i = 0; i < N; i++) {
    dsrc[i] = 0.25 * w[tme] + i;
    ld[i] = 0.5L * w[tme];
    zsrc[i] = (double)w[tme] + I * (double)i;
    fzsrc[i] = 1.0f + I * 1.0f;
    ssum[i] = (short)(w[tme] + i);
  }
  double dsum = 0, dmax = -1;
  long double ldsum = 0;
  double complex zsum = 0;
  float complex fzprod = 1;
  for (int k = 0; k < tn; k++) {
    dsum += 0.25 * w[k];
    dmax = 0.25 * w[k] > dmax ? 0.25 * w[k] : dmax;
    ldsum += 0.5L * w[k];
    zsum += (double)w[k];
    fzprod *= 1.0f + I * 1.0f;
  }
  CHECK(shmem_double_sum_reduce(t, ddst, dsrc, N) == 0, "%s: double sum", name);
  for (int i = 0; i < N; i++) CHECK(ddst[i] == dsum + tn * i, "%s: dsum %d %g", name, i, ddst[i]);
  CHECK(shmem_max_reduce(t, ddst, dsrc, N) == 0, "%s: C11 double max", name);
  for (int i = 0; i < N; i++) CHECK(ddst[i] == dmax + i, "%s: dmax %d %g", name, i, ddst[i]);
  CHECK(shmem_longdouble_sum_reduce(t, ldd, ld, N) == 0 && ldd[1] == ldsum, "%s: ld sum", name);
  CHECK(shmem_complexd_sum_reduce(t, zdst, zsrc, N) == 0, "%s: complexd sum", name);
  for (int i = 0; i < N; i++)
    CHECK(creal(zdst[i]) == creal(zsum) && cimag(zdst[i]) == (double)tn * i, "%s: z %d", name, i);
  CHECK(shmem_prod_reduce(t, fzdst, fzsrc, N) == 0, "%s: C11 complexf prod", name);
  CHECK(crealf(fzdst[0]) == crealf(fzprod) && cimagf(fzdst[0]) == cimagf(fzprod), "%s: fz",
        name);
  CHECK(shmem_sum_reduce(t, ssum, ssum, N) == 0, "%s: C11 short sum in place", name);
  int ws = 0;
  for (int k = 0; k < tn; k++) ws += w[k];
  for (int i = 0; i < N; i++) CHECK(ssum[i] == ws + tn * i, "%s: short sum %d", name, i);
}

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(n <= MAXPES, "at most %d PEs", MAXPES);
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  int w[MAXPES] = {0};

  for (int i = 0; i < n; i++) w[i] = i;
  run("world", SHMEM_TEAM_WORLD, n, me, w);

  shmem_team_t rev;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev) == 0, "reverse");
  for (int i = 0; i < n; i++) w[i] = n - 1 - i;
  run("reversed", rev, n, shmem_team_my_pe(rev), w);
  shmem_team_destroy(rev);

  shmem_team_t odd = SHMEM_TEAM_INVALID;
  if (n > 1) {
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd) == 0, "odd");
    if (odd != SHMEM_TEAM_INVALID) {
      int on = shmem_team_n_pes(odd);
      for (int i = 0; i < on; i++) w[i] = 2 * i + 1;
      run("odd", odd, on, shmem_team_my_pe(odd), w);
      shmem_team_destroy(odd);
    }
  }
  CHECK(shmem_int_sum_reduce(SHMEM_TEAM_INVALID, idst, isrc, 1) != 0, "invalid team reduce");
  CHECK(shmem_broadcastmem(SHMEM_TEAM_INVALID, mdst, msrc, 1, 0) != 0, "invalid broadcast");
  shmem_barrier_all();
  printf("team_coll ok: PE %d of %d\n", me, n);
  shmem_finalize();
  return 0;
}
