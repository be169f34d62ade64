/* OpenSHMEM micro-benchmark (scripts/bench/shmem.sh), plain OpenSHMEM 1.4 so that the same
 * source builds against libshmem (oshcc) and Open MPI's OpenSHMEM. PE 0 times single
 * operations on PE 1 (the last PE): putmem + quiet and getmem over sizes 8 B - 1 MiB, atomic
 * fetch_add, compare_swap and add + quiet on a long; and shmem_barrier_all over every PE.
 * Prints one line per measurement:
 *   RESULT op=<put|get|fetch_add|compare_swap|add|barrier_all> size=<bytes> reps=<n>
 *          median_us=<> p25_us=<> p75_us=<> mb_per_s=<size / median>
 *   shmem_bench [REPS]   (default 100; transfers of 64 KiB and more use REPS / 10, at least 3)
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXSIZE (1 << 20)

static long target;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
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
  int me = shmem_my_pe(), peer = shmem_n_pes() - 1;
  char *sym = shmem_malloc(MAXSIZE);
  char *local = malloc(MAXSIZE);
  double *t = malloc(sizeof(double) * reps);
  if (!sym || !local || !t || peer == 0) {
    fprintf(stderr, "shmem_bench: needs 2 PEs and a 1 MiB symmetric buffer\n");
    shmem_global_exit(1);
  }
  memset(local, 1, MAXSIZE);
  memset(sym, 2, MAXSIZE);
  shmem_barrier_all();
  if (me == 0) {
    for (size_t size = 8; size <= MAXSIZE; size *= 8) {
      int n = size >= 65536 ? (reps / 10 < 3 ? 3 : reps / 10) : reps;
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
    for (int i = 0; i < reps; i++) {
      double t0 = now_us();
      (void)shmem_long_atomic_fetch_add(&target, 1, peer);
      t[i] = now_us() - t0;
    }
    report("fetch_add", 8, t, reps);
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
