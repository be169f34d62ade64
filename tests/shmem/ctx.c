/* Contexts (1.4): every PE makes a private context, puts its number into its right
 * neighbour's slot and adds to counters on PE 0 through it, quiets it and destroys it; the
 * default context sees every result. Unknown options are refused; SHMEM_CTX_DEFAULT works as a
 * context; the C11 generic forms take a context first too. */
#include <shmem.h>
#include <stdint.h>
#include "check.h"

#define ROUNDS 10

static long slots[256];
static long sum;
static uint64_t bits;

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n;
  shmem_ctx_t ctx = SHMEM_CTX_DEFAULT, bad = SHMEM_CTX_DEFAULT;
  CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED, &ctx) == 0, "create");
  CHECK(ctx != SHMEM_CTX_DEFAULT, "a created context is not the default one");
  CHECK(shmem_ctx_create(1L << 20, &bad) != 0, "unknown options accepted");
  /* 1.5: a context that cannot be made is SHMEM_CTX_INVALID (1.4 left it untouched). */
  CHECK(bad == SHMEM_CTX_INVALID, "a refused create did not set SHMEM_CTX_INVALID");
  shmem_ctx_destroy(bad); /* destroying SHMEM_CTX_INVALID does nothing */

  for (int i = 0; i < ROUNDS; i++) {
    shmem_ctx_long_atomic_add(ctx, &sum, me + 1, 0);
    (void)shmem_ctx_long_atomic_fetch_inc(SHMEM_CTX_DEFAULT, &sum, 0);
  }
  /* The C11 generic forms with a context first. */
  shmem_atomic_add(ctx, &sum, 1L, 0);
  (void)shmem_atomic_fetch_add(ctx, &sum, -1L, 0);
  shmem_ctx_uint64_atomic_or(ctx, &bits, 1ull << (me % 64), 0);
  long mine = 1000 + me;
  shmem_ctx_long_put_nbi(ctx, &slots[me], &mine, 1, right);
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();

  int left = (me + n - 1) % n;
  CHECK(slots[left] == 1000 + left, "slot of PE %d: %ld", left, slots[left]);
  CHECK(shmem_ctx_long_g(ctx, &slots[me], right) == 1000 + me, "get through the context");
  CHECK(shmem_g(ctx, &slots[me], right) == 1000 + me, "generic get with a context");
  long want = (long)ROUNDS * (n * (n + 1) / 2) + (long)ROUNDS * n;
  CHECK(shmem_ctx_long_atomic_fetch(ctx, &sum, 0) == want, "sum, want %ld", want);
  if (me == 0) {
    uint64_t all = n >= 64 ? ~0ull : (1ull << n) - 1;
    CHECK(bits == all, "or: %llx", (unsigned long long)bits);
  }
  shmem_ctx_destroy(ctx);
  shmem_barrier_all();
  printf("ctx ok: PE %d\n", me);
  shmem_finalize();
  return 0;
}
