/* OpenSHMEM 1.5 non-blocking atomics (shmem_TYPENAME_atomic_*_nbi, ctx and C11 forms), as 6
 * PEs on 3 nodes: each PE runs a sequence of them on its own word of a neighbour on its node
 * (me ^ 1) and of a PE on another node (me + 2), and checks every fetched value after
 * shmem_quiet and the word at the end; then every PE fetch-increments PE 0's counter: the
 * counter ends at n * INCS and each PE's fetched values increase. */
#include <shmem.h>
#include "check.h"

#define MAXPE 16
#define INCS 20

static long words[MAXPE];
static unsigned int bits[MAXPE];
static double dbl[MAXPE];
static float flt[MAXPE];
static long long counter;

static void sequence(int me, int pe) {
  long f[8];
  shmem_long_atomic_set(&words[me], 10, pe);
  shmem_long_atomic_fetch_nbi(&f[0], &words[me], pe);
  shmem_long_atomic_swap_nbi(&f[1], &words[me], 20, pe);
  shmem_long_atomic_compare_swap_nbi(&f[2], &words[me], 20, 30, pe);
  shmem_ctx_long_atomic_compare_swap_nbi(SHMEM_CTX_DEFAULT, &f[3], &words[me], 99, 40, pe);
  shmem_long_atomic_fetch_inc_nbi(&f[4], &words[me], pe);
  shmem_atomic_fetch_add_nbi(&f[5], &words[me], 5L, pe);
  shmem_atomic_fetch_nbi(SHMEM_CTX_DEFAULT, &f[6], &words[me], pe);
  shmem_quiet();
  long want[7] = {10, 10, 20, 30, 30, 31, 36};
  for (int i = 0; i < 7; i++)
    CHECK(f[i] == want[i], "PE %d, step %d: fetched %ld, want %ld", pe, i, f[i], want[i]);
  CHECK(shmem_long_atomic_fetch(&words[me], pe) == 36, "PE %d: final", pe);

  unsigned int u[4];
  shmem_uint_atomic_set(&bits[me], 0xf0, pe);
  shmem_uint_atomic_fetch_and_nbi(&u[0], &bits[me], 0x3c, pe);
  shmem_atomic_fetch_or_nbi(&u[1], &bits[me], 0x01u, pe);
  shmem_ctx_uint_atomic_fetch_xor_nbi(SHMEM_CTX_DEFAULT, &u[2], &bits[me], 0xff, pe);
  shmem_atomic_fetch_xor_nbi(SHMEM_CTX_DEFAULT, &u[3], &bits[me], 0u, pe);
  shmem_quiet();
  CHECK(u[0] == 0xf0 && u[1] == 0x30 && u[2] == 0x31 && u[3] == 0xce,
        "PE %d: bitwise fetched %x %x %x %x", pe, u[0], u[1], u[2], u[3]);

  double d[2];
  float fl;
  shmem_double_atomic_set(&dbl[me], 1.5, pe);
  shmem_double_atomic_swap_nbi(&d[0], &dbl[me], -2.25, pe);
  shmem_atomic_fetch_nbi(&d[1], &dbl[me], pe);
  shmem_atomic_swap_nbi(&fl, &flt[me], 0.5f, pe);
  shmem_quiet();
  CHECK(d[0] == 1.5 && d[1] == -2.25 && fl == 0.0f, "PE %d: double %g %g, float %g", pe, d[0],
        d[1], fl);
  CHECK(shmem_float_atomic_fetch(&flt[me], pe) == 0.5f, "PE %d: float swapped in", pe);
  shmem_float_atomic_set(&flt[me], 0.0f, pe);
}

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(n <= MAXPE && n % 2 == 0, "an even number of PEs, at most %d", MAXPE);
  sequence(me, me ^ 1);
  sequence(me, (me + 2) % n);
  sequence(me, me);

  shmem_barrier_all();
  long long prev = -1, f;
  for (int i = 0; i < INCS; i++) {
    shmem_longlong_atomic_fetch_inc_nbi(&f, &counter, 0);
    shmem_quiet();
    CHECK(f > prev && f < (long long)n * INCS, "fetched %lld after %lld", f, prev);
    prev = f;
  }
  shmem_barrier_all();
  if (me == 0)
    CHECK(counter == (long long)n * INCS, "counter %lld, want %d", counter, n * INCS);
  printf("amo_nbi ok: PE %d\n", me);
  shmem_finalize();
  return 0;
}
