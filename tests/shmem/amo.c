/* Atomics: every PE adds to, increments and swaps words on PE 0 and on its partner, on the
 * 1.4 names and the deprecated 1.3 ones; exact sums checked after a barrier. */
#include <shmem.h>
#include <stdint.h>
#include "check.h"

#define ROUNDS 20

static int i_sum;
static long l_sum;
static long long ll_cnt;
static uint32_t u32_bits;
static uint64_t u64_bits = ~0ull;
static int64_t i64_cswap;
static double d_val;
static float f_val;

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  size_t *sz = shmem_malloc(sizeof(size_t));
  *sz = 0;
  shmem_barrier_all();

  for (int i = 0; i < ROUNDS; i++) {
    shmem_int_atomic_add(&i_sum, me + 1, 0);
    (void)shmem_long_atomic_fetch_add(&l_sum, 2, 0);
    shmem_longlong_atomic_inc(&ll_cnt, 0);
    (void)shmem_size_atomic_fetch_inc(sz, 0);
    (void)shmem_int_fadd(&i_sum, 1, 0);   /* 1.3 names */
    (void)shmem_long_finc(&l_sum, 0);
  }
  shmem_uint32_atomic_or(&u32_bits, 1u << me, 0);
  (void)shmem_uint64_atomic_fetch_and(&u64_bits, ~(1ull << me), 0);
  shmem_barrier_all();
  if (me == 0) {
    int want_i = ROUNDS * (n * (n + 1) / 2) + ROUNDS * n;
    CHECK(i_sum == want_i, "i_sum %d, want %d", i_sum, want_i);
    CHECK(l_sum == 3L * ROUNDS * n, "l_sum %ld", l_sum);
    CHECK(ll_cnt == (long long)ROUNDS * n, "ll_cnt %lld", ll_cnt);
    CHECK(*sz == (size_t)ROUNDS * n, "size counter %zu", *sz);
    CHECK(u32_bits == (1u << n) - 1, "or: %x", u32_bits);
    CHECK(u64_bits == ~((1ull << n) - 1), "and: %llx", (unsigned long long)u64_bits);
  }
  CHECK(shmem_int_atomic_fetch(&i_sum, 0) == ROUNDS * (n * (n + 1) / 2) + ROUNDS * n, "fetch");

  /* compare_swap: exactly one PE wins each round. */
  int wins = 0;
  for (int r = 0; r < 5; r++) {
    if (shmem_int64_atomic_compare_swap(&i64_cswap, r * n, r * n + 1 + me, 0) == r * n)
      wins++;
    shmem_barrier_all();
    if (me == 0)
      shmem_int64_atomic_set(&i64_cswap, (r + 1) * n, 0);
    shmem_barrier_all();
  }
  int *all_wins = shmem_malloc(sizeof(int));
  *all_wins = 0;
  shmem_barrier_all();
  shmem_int_atomic_add(all_wins, wins, 0);
  shmem_barrier_all();
  if (me == 0)
    CHECK(*all_wins == 5, "compare_swap winners %d over 5 rounds", *all_wins);

  /* swap and xor on the partner; float and double fetch/set/swap; 1.3 cswap/swap. */
  int to = (me + 1) % n;
  shmem_double_atomic_set(&d_val, 1.5 + me, to);
  shmem_barrier_all();
  CHECK(d_val == 1.5 + (me + n - 1) % n, "double set: %g", d_val);
  shmem_barrier_all();
  CHECK(shmem_double_atomic_swap(&d_val, -2.0, to) == 1.5 + me, "double swap");
  shmem_float_set(&f_val, 0.25f, to);
  shmem_barrier_all();
  CHECK(shmem_float_fetch(&f_val, me) == 0.25f, "float set/fetch: %g", f_val);
  CHECK(shmem_int_swap(&i_sum, 7, me) >= 0, "1.3 swap");
  CHECK(shmem_int_cswap(&i_sum, 7, 9, me) == 7 && i_sum == 9, "1.3 cswap");
  uint64_t v = shmem_uint64_atomic_fetch(&u64_bits, me);
  CHECK(shmem_uint64_atomic_fetch_xor(&u64_bits, 3, me) == v, "xor: old value");
  CHECK(u64_bits == (v ^ 3), "xor: %llx", (unsigned long long)u64_bits);
  printf("amo ok: PE %d\n", me);
  shmem_finalize();
  return 0;
}
