/* OpenSHMEM 1.5 team contexts.
 *  - SHMEM_TEAM_NUM_CONTEXTS: a team split with it in the mask has at most num_contexts
 *    contexts open at once (one more: non-zero and SHMEM_CTX_INVALID, until one is destroyed;
 *    a context refused for its options takes no place); without the mask, no limit;
 *    shmem_team_get_config reports what was configured (0 when it was not).
 *  - A team context takes PE numbers of its team, in the typed context forms and in the C11
 *    generic forms with a context first (RMA, atomics, non-blocking atomics, put-with-signal):
 *    on the even PEs (a split of stride 2), team PE 1 is world PE 2, and world PE 1 (not in
 *    the team) must see nothing. */
#include <shmem.h>
#include <stdint.h>
#include "check.h"

#define MAXPES 64

static int got[4];          /* written on team PE 1 (world PE 2) through the context */
static long word;           /* its atomics */
static uint64_t sig;        /* its put-with-signal */
static int ring[MAXPES];    /* a ring over the team, C11 forms */

static int config_of(shmem_team_t t) {
  shmem_team_config_t c = {.num_contexts = -5};
  CHECK(shmem_team_get_config(t, SHMEM_TEAM_NUM_CONTEXTS, &c) == 0, "get_config");
  return c.num_contexts;
}

static void limits(int n) {
  shmem_team_config_t cfg = {.num_contexts = 2};
  shmem_team_t two, zero, unset;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, &cfg, SHMEM_TEAM_NUM_CONTEXTS,
                                 &two) == 0, "split with num_contexts 2");
  cfg.num_contexts = 0;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, &cfg, SHMEM_TEAM_NUM_CONTEXTS,
                                 &zero) == 0, "split with num_contexts 0");
  cfg.num_contexts = 1; /* not in the mask: ignored */
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, &cfg, 0, &unset) == 0, "unset");
  CHECK(config_of(two) == 2 && config_of(zero) == 0 && config_of(unset) == 0,
        "configs %d %d %d", config_of(two), config_of(zero), config_of(unset));

  shmem_ctx_t c[3];
  CHECK(shmem_team_create_ctx(two, 1L << 20, &c[0]) != 0, "unknown options");
  CHECK(shmem_team_create_ctx(two, 0, &c[0]) == 0, "first of 2");
  CHECK(shmem_team_create_ctx(two, SHMEM_CTX_PRIVATE, &c[1]) == 0, "second of 2");
  c[2] = SHMEM_CTX_DEFAULT;
  CHECK(shmem_team_create_ctx(two, 0, &c[2]) != 0 && c[2] == SHMEM_CTX_INVALID, "third of 2");
  shmem_ctx_destroy(c[0]);
  CHECK(shmem_team_create_ctx(two, 0, &c[0]) == 0, "a destroyed context's place");
  CHECK(shmem_team_create_ctx(two, 0, &c[2]) != 0, "third of 2, again");
  shmem_ctx_destroy(c[0]);
  shmem_ctx_destroy(c[1]);

  CHECK(shmem_team_create_ctx(zero, 0, &c[0]) != 0 && c[0] == SHMEM_CTX_INVALID, "0 of 0");

  shmem_ctx_t many[8];
  for (int i = 0; i < 8; i++)
    CHECK(shmem_team_create_ctx(unset, 0, &many[i]) == 0, "unlimited context %d", i);
  for (int i = 0; i < 8; i++) shmem_ctx_destroy(many[i]);

  shmem_team_destroy(two);
  shmem_team_destroy(zero);
  shmem_team_destroy(unset);
}

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(n >= 3 && n <= MAXPES, "3 to %d PEs", MAXPES);
  limits(n);

  /* The even PEs, one context each (the limit is 1). */
  shmem_team_config_t cfg = {.num_contexts = 1};
  shmem_team_t even;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &cfg,
                                 SHMEM_TEAM_NUM_CONTEXTS, &even) == 0, "even split");
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  if (even != SHMEM_TEAM_INVALID) {
    CHECK(shmem_team_create_ctx(even, 0, &ctx) == 0, "even context");
    CHECK(shmem_team_translate_pe(even, 1, SHMEM_TEAM_WORLD) == 2, "team PE 1 is world PE 2");
  }

  /* Team PE 0 (world 0) writes to team PE 1 through the context, C11 forms first. */
  if (me == 0) {
    int two[2] = {11, 12};
    shmem_put(ctx, got, two, 2, 1);
    shmem_p(ctx, &got[2], 13, 1);
    CHECK(shmem_atomic_fetch_add(ctx, &word, 5L, 1) == 0, "fetch_add");
    shmem_atomic_add(ctx, &word, 10L, 1);
    long f = -1;
    shmem_atomic_fetch_inc_nbi(ctx, &f, &word, 1);
    shmem_ctx_quiet(ctx);
    CHECK(f == 15, "fetch_inc_nbi fetched %ld", f);
    shmem_ctx_long_atomic_fetch_add_nbi(ctx, &f, &word, 100, 1); /* typed */
    shmem_ctx_quiet(ctx);
    CHECK(f == 16, "typed fetch_add_nbi fetched %ld", f);
    int v = 14;
    shmem_put_signal(ctx, &got[3], &v, 1, &sig, 1, SHMEM_SIGNAL_ADD, 1);
    shmem_ctx_quiet(ctx);
    CHECK(shmem_g(ctx, &got[2], 1) == 13, "C11 g through the context");
    CHECK(shmem_atomic_fetch(ctx, &word, 1) == 116, "C11 fetch through the context");
    /* The same PE by its world number, without the context. */
    CHECK(shmem_int_g(&got[0], 2) == 11 && shmem_long_g(&word, 2) == 116, "world PE 2");
    /* SHMEM_CTX_DEFAULT keeps world numbers. */
    CHECK(shmem_g(SHMEM_CTX_DEFAULT, &got[1], 2) == 12, "default context");
  }
  shmem_barrier_all();
  if (me == 2) {
    CHECK(got[0] == 11 && got[1] == 12 && got[2] == 13 && got[3] == 14, "world PE 2: %d %d %d %d",
          got[0], got[1], got[2], got[3]);
    CHECK(word == 116 && sig == 1, "world PE 2: word %ld, signal %lu", word, (unsigned long)sig);
  } else {
    CHECK(got[0] == 0 && got[1] == 0 && got[2] == 0 && got[3] == 0 && word == 0 && sig == 0,
          "world PE %d was written", me);
  }

  /* A ring over the team, C11 generic forms with the context: team PE i gets its
   * predecessor's world number. */
  if (even != SHMEM_TEAM_INVALID) {
    int tme = shmem_team_my_pe(even), tn = shmem_team_n_pes(even);
    int next = (tme + 1) % tn, prev = (tme + tn - 1) % tn;
    shmem_p(ctx, &ring[tme], me, next);
    shmem_ctx_quiet(ctx);
    shmem_team_sync(even);
    CHECK(ring[prev] == 2 * prev, "ring[%d] = %d, want %d", prev, ring[prev], 2 * prev);
    CHECK(shmem_g(ctx, &ring[tme], next) == me, "ring read back from team PE %d", next);
    shmem_ctx_destroy(ctx);
    shmem_team_destroy(even);
  }

  shmem_barrier_all();
  printf("team_ctx ok: PE %d of %d\n", me, n);
  shmem_finalize();
  return 0;
}
