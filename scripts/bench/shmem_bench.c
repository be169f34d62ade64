/* OpenSHMEM micro-benchmark (scripts/bench/shmem.sh). The same source builds against libshmem
 * (oshcc) and Open MPI's OpenSHMEM (OpenSHMEM 1.4 only in Open MPI 4.1): the OpenSHMEM 1.5
 * parts are compiled only where shmem.h defines SHMEM_SIGNAL_SET (put-with-signal and the
 * non-blocking atomics) and SHMEM_TEAM_WORLD (team reductions), so Open MPI's binary reports
 * the 1.4 baselines alone. PE 0 times single operations on PE 1 (the last PE):
 *   - put: putmem + quiet, get: getmem, over sizes 8 B - 1 MiB;
 *   - put_signal (1.5): putmem_signal (SHMEM_SIGNAL_SET) + quiet at 8 B, 4 KiB and 64 KiB,
 *     against put_set, what a 1.4 program does: putmem + fence + long atomic_set + quiet;
 *   - fetch_add, compare_swap, add + quiet on a long; fetch_add_nbi (1.5) + quiet, against
 *     the blocking fetch_add;
 *   - reductions over every PE, each call after an untimed barrier_all: sum_reduce (1.5,
 *     long_sum_reduce on SHMEM_TEAM_WORLD) against the 1.4 sum_to_all over the same PEs, of
 *     1 and 1024 longs (size 8 and 8192);
 *   - shmem_barrier_all over every PE (last: its line ends a complete output).
 * Prints one line per measurement:
 *   RESULT op=<put|get|put_signal|put_set|fetch_add|fetch_add_nbi|compare_swap|add|
 *          sum_reduce|sum_to_all|barrier_all> size=<bytes> reps=<n>
 *          median_us=<> p25_us=<> p75_us=<> mb_per_s=<size / median>
 *   shmem_bench [REPS]   (default 100; transfers of 64 KiB and more use REPS / 10, at least 3)
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXSIZE (1 << 20)
#define REDMAX 1024 /* longs in the larger reduction */
#define WRKSIZE (REDMAX / 2 + 1 > SHMEM_REDUCE_MIN_WRKDATA_SIZE ? REDMAX / 2 + 1 \
                                                               : SHMEM_REDUCE_MIN_WRKDATA_SIZE)

static long target, flag;
static long red_src[REDMAX], red_dst[REDMAX], pwrk[WRKSIZE];
static long psync[2][SHMEM_REDUCE_SYNC_SIZE]; /* alternated between calls */
#ifdef SHMEM_SIGNAL_SET
static uint64_t sig;
#endif

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int reps_for(size_t size, int reps) {
  return size >= 65536 ? (reps / 10 < 3 ? 3 : reps / 10) : reps;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void report(const char *op, size_t size, double *t, int n) {
  qsort(t, n, sizeof(double), cmp);
  double med = t[n / 2];
  printf("RESULT op=%s size=%zu reps=%d median_us=%.2f p25_us=%.2f p75_us=%.2f mb_per_s=%.3f\n",
         op, size, n, med, t[n / 4], t[(3 * n) / 4], med > 0 ? size / med : 0.0);
  fflush(stdout);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 100;
  if (reps < 3)
    reps = 3;
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes(), peer = npes - 1;
  char *sym = shmem_malloc(MAXSIZE);
  char *local = malloc(MAXSIZE);
  double *t = malloc(sizeof(double) * reps);
  if (!sym || !local || !t || peer == 0) {
    fprintf(stderr, "shmem_bench: needs 2 PEs and a 1 MiB symmetric buffer\n");
    shmem_global_exit(1);
  }
  memset(local, 1, MAXSIZE);
  memset(sym, 2, MAXSIZE);
  for (int i = 0; i < REDMAX; i++)
    red_src[i] = me + i;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < SHMEM_REDUCE_SYNC_SIZE; j++)
      psync[i][j] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  if (me == 0) {
    for (size_t size = 8; size <= MAXSIZE; size *= 8) {
      int n = reps_for(size, reps);
      for (int i = 0; i < n; i++) {
        double t0 = now_us();
        shmem_putmem(sym, local, size, peer);
        shmem_quiet();
        t[i] = now_us() - t0;
      }
      report("put", size, t, n);
      for (int i = 0; i < n; i++) {
        double t0 = now_us();
        shmem_getmem(local, sym, size, peer);
        t[i] = now_us() - t0;
      }
      report("get", size, t, n);
      if (size * 8 > MAXSIZE && size != MAXSIZE)
        size = MAXSIZE / 8; /* end on exactly 1 MiB */
    }
    static const size_t sig_sizes[] = {8, 4096, 65536};
    for (size_t k = 0; k < sizeof(sig_sizes) / sizeof(sig_sizes[0]); k++) {
      size_t size = sig_sizes[k];
      int n = reps_for(size, reps);
#ifdef SHMEM_SIGNAL_SET
      for (int i = 0; i < n; i++) {
        double t0 = now_us();
        shmem_putmem_signal(sym, local, size, &sig, (uint64_t)i + 1, SHMEM_SIGNAL_SET, peer);
        shmem_quiet();
        t[i] = now_us() - t0;
      }
      report("put_signal", size, t, n);
#endif
      /* The 1.4 way: the fence orders the flag after the data. */
      for (int i = 0; i < n; i++) {
        double t0 = now_us();
        shmem_putmem(sym, local, size, peer);
        shmem_fence();
        shmem_long_atomic_set(&flag, i + 1, peer);
        shmem_quiet();
        t[i] = now_us() - t0;
      }
      report("put_set", size, t, n);
    }
    for (int i = 0; i < reps; i++) {
      double t0 = now_us();
      (void)shmem_long_atomic_fetch_add(&target, 1, peer);
      t[i] = now_us() - t0;
    }
    report("fetch_add", 8, t, reps);
#ifdef SHMEM_SIGNAL_SET
    for (int i = 0; i < reps; i++) {
      long fetched;
      double t0 = now_us();
      shmem_long_atomic_fetch_add_nbi(&fetched, &target, 1, peer);
      shmem_quiet();
      t[i] = now_us() - t0;
    }
    report("fetch_add_nbi", 8, t, reps);
#endif
    for (int i = 0; i < reps; i++) {
      double t0 = now_us();
      (void)shmem_long_atomic_compare_swap(&target, i, i + 1, peer);
      t[i] = now_us() - t0;
    }
    report("compare_swap", 8, t, reps);
    for (int i = 0; i < reps; i++) {
      double t0 = now_us();
      shmem_long_atomic_add(&target, 1, peer);
      shmem_quiet();
      t[i] = now_us() - t0;
    }
    report("add", 8, t, reps);
  }
  /* Reductions: every PE calls them; an untimed barrier_all lines the PEs up first. */
  static const int red_n[] = {1, REDMAX};
  for (size_t k = 0; k < sizeof(red_n) / sizeof(red_n[0]); k++) {
    int n = red_n[k];
#ifdef SHMEM_TEAM_WORLD
    for (int i = 0; i < reps; i++) {
      shmem_barrier_all();
      double t0 = now_us();
      if (shmem_long_sum_reduce(SHMEM_TEAM_WORLD, red_dst, red_src, n) != 0) {
        fprintf(stderr, "shmem_bench: shmem_long_sum_reduce failed\n");
        shmem_global_exit(1);
      }
      t[i] = now_us() - t0;
    }
    if (me == 0)
      report("sum_reduce", n * sizeof(long), t, reps);
#endif
    for (int i = 0; i < reps; i++) {
      shmem_barrier_all();
      double t0 = now_us();
      shmem_long_sum_to_all(red_dst, red_src, n, 0, 0, npes, pwrk, psync[i & 1]);
      t[i] = now_us() - t0;
    }
    if (me == 0)
      report("sum_to_all", n * sizeof(long), t, reps);
  }
  shmem_barrier_all();
  for (int i = 0; i < reps; i++) {
    double t0 = now_us();
    shmem_barrier_all();
    t[i] = now_us() - t0;
  }
  if (me == 0)
    report("barrier_all", 0, t, reps);
  shmem_barrier_all();
  shmem_free(sym);
  shmem_finalize();
  return 0;
}
