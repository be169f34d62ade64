/* OpenSHMEM 1.5 teams: the predefined teams (WORLD, SHARED = the PEs of this node, INVALID),
 * strided splits (positive and negative strides, of a split team too), 2D splits, PE
 * translation, configurations, team sync, shmem_team_ptr against shmem_ptr, team contexts
 * (RMA with team PE numbers), the error returns of bad splits and of SHMEM_TEAM_INVALID, and
 * slot reuse: teams destroyed and made again, up to the limit and back. */
#include <shmem.h>
#include "check.h"

#define MAXPES 64

static int cell;                /* written through shmem_team_ptr and team contexts */
static int from_ctx[MAXPES];    /* one slot per team PE of the context's team */
static int node_sum, node_src;  /* a reduction over SHMEM_TEAM_SHARED */

/* The world PEs of `t`, checked against translate in both directions. */
static int members(shmem_team_t t, int *world) {
  int n = shmem_team_n_pes(t);
  for (int i = 0; i < n; i++) {
    world[i] = shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD);
    CHECK(world[i] >= 0 && world[i] < shmem_n_pes(), "team PE %d is world PE %d", i, world[i]);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, world[i], t) == i, "round trip of %d", i);
  }
  return n;
}

static void split_2d(shmem_team_t parent, int xrange) {
  int p = shmem_team_my_pe(parent), np = shmem_team_n_pes(parent);
  shmem_team_t x, y;
  int r = shmem_team_split_2d(parent, xrange, NULL, 0, &x, NULL, 0, &y);
  CHECK(r == 0 && x != SHMEM_TEAM_INVALID && y != SHMEM_TEAM_INVALID, "2d split %d: %d", xrange, r);
  int xr = xrange < np ? xrange : np;
  int row = p / xr, col = p % xr;
  int nx = shmem_team_n_pes(x), ny = shmem_team_n_pes(y);
  CHECK(shmem_team_my_pe(x) == col && shmem_team_my_pe(y) == row, "2d %d: x %d y %d", xrange,
        shmem_team_my_pe(x), shmem_team_my_pe(y));
  int want_nx = np - row * xr < xr ? np - row * xr : xr;
  int want_ny = (np - col + xr - 1) / xr;
  CHECK(nx == want_nx && ny == want_ny, "2d %d: sizes %d %d, want %d %d", xrange, nx, ny,
        want_nx, want_ny);
  for (int i = 0; i < nx; i++)
    CHECK(shmem_team_translate_pe(x, i, parent) == row * xr + i, "2d x member %d", i);
  for (int i = 0; i < ny; i++)
    CHECK(shmem_team_translate_pe(y, i, parent) == i * xr + col, "2d y member %d", i);
  /* Both axes work as teams: a sum over each. */
  static int one = 1, cnt;
  CHECK(shmem_int_sum_reduce(x, &cnt, &one, 1) == 0 && cnt == nx, "sum over x: %d", cnt);
  CHECK(shmem_int_sum_reduce(y, &cnt, &one, 1) == 0 && cnt == ny, "sum over y: %d", cnt);
  shmem_team_destroy(x);
  shmem_team_destroy(y);
}

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  int world[MAXPES];
  CHECK(n <= MAXPES, "at most %d PEs", MAXPES);

  /* WORLD and INVALID. */
  CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == n,
        "world");
  CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1 && shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1,
        "invalid team queries");
  CHECK(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD) == -1, "translate");
  CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, n, SHMEM_TEAM_WORLD) == -1, "PE n");
  CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, "sync of the invalid team");
  shmem_team_config_t cfg = {.num_contexts = 7};
  CHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &cfg) != 0, "config");
  CHECK(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &cfg) == 0 &&
            cfg.num_contexts == 0, "world config %d", cfg.num_contexts);
  CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, &cell, 0) == NULL, "ptr on the invalid team");
  shmem_team_destroy(SHMEM_TEAM_INVALID); /* no operation */
  CHECK(shmem_team_sync(SHMEM_TEAM_WORLD) == 0, "world sync");

  /* SHARED: the PEs shmem_ptr reaches, and no other. */
  int ns = members(SHMEM_TEAM_SHARED, world);
  int mine = shmem_team_my_pe(SHMEM_TEAM_SHARED);
  CHECK(ns >= 1 && world[mine] == me, "shared: %d PEs, I am %d", ns, mine);
  for (int pe = 0; pe < n; pe++) {
    int in = shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, SHMEM_TEAM_SHARED) >= 0;
    CHECK((shmem_ptr(&cell, pe) != NULL) == in, "shmem_ptr to PE %d, in SHARED: %d", pe, in);
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, &cell, pe) == shmem_ptr(&cell, pe), "team_ptr %d", pe);
  }
  /* Store to the next PE of the node through the pointer. */
  int next = (mine + 1) % ns;
  int *p = shmem_team_ptr(SHMEM_TEAM_SHARED, &cell, next);
  CHECK(p != NULL && p == shmem_ptr(&cell, world[next]), "shared team_ptr");
  *p = 1000 + me;
  CHECK(shmem_team_ptr(SHMEM_TEAM_SHARED, &cell, ns) == NULL, "team_ptr past the team");
  shmem_team_sync(SHMEM_TEAM_SHARED);
  int prev = (mine + ns - 1) % ns;
  CHECK(cell == 1000 + world[prev], "cell %d, want %d", cell, 1000 + world[prev]);
  node_src = me;
  CHECK(shmem_int_sum_reduce(SHMEM_TEAM_SHARED, &node_sum, &node_src, 1) == 0, "shared sum");
  int want = 0;
  for (int i = 0; i < ns; i++) want += world[i];
  CHECK(node_sum == want, "sum over the node: %d, want %d", node_sum, want);
  shmem_barrier_all();

  /* Even PEs, with a configuration; odd PEs get SHMEM_TEAM_INVALID. */
  shmem_team_t even = (shmem_team_t)&cell; /* overwritten by the split */
  cfg.num_contexts = 3;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &cfg,
                                 SHMEM_TEAM_NUM_CONTEXTS, &even) == 0, "even split");
  if (me % 2) {
    CHECK(even == SHMEM_TEAM_INVALID, "odd PE in the even team");
  } else {
    CHECK(shmem_team_my_pe(even) == me / 2 && shmem_team_n_pes(even) == (n + 1) / 2, "even");
    CHECK(shmem_team_translate_pe(even, 1, SHMEM_TEAM_WORLD) == (n > 2 ? 2 : -1), "even 1");
    cfg.num_contexts = 0;
    CHECK(shmem_team_get_config(even, SHMEM_TEAM_NUM_CONTEXTS, &cfg) == 0 && cfg.num_contexts == 3,
          "even config %d", cfg.num_contexts);
    CHECK(shmem_team_sync(even) == 0, "even sync");
    shmem_sync(even); /* the C11 form */
    /* A split of a split: every other even PE (world 0, 4, 8, ...). */
    shmem_team_t quarter;
    int ne = shmem_team_n_pes(even);
    CHECK(shmem_team_split_strided(even, 0, 2, (ne + 1) / 2, NULL, 0, &quarter) == 0, "quarter");
    CHECK((quarter != SHMEM_TEAM_INVALID) == (me % 4 == 0), "quarter member");
    if (quarter != SHMEM_TEAM_INVALID) {
      CHECK(shmem_team_my_pe(quarter) == me / 4, "quarter my_pe");
      CHECK(shmem_team_translate_pe(quarter, shmem_team_my_pe(quarter), even) == me / 2, "q->e");
      shmem_team_destroy(quarter);
    }
    split_2d(even, 2);
    shmem_team_destroy(even);
  }
  shmem_barrier_all();

  /* World reversed (stride -1): team PE i is world PE n-1-i. */
  shmem_team_t rev;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev) == 0, "reverse");
  CHECK(shmem_team_my_pe(rev) == n - 1 - me && shmem_team_n_pes(rev) == n, "reverse my_pe");
  members(rev, world);
  for (int i = 0; i < n; i++) CHECK(world[i] == n - 1 - i, "reverse member %d", i);

  /* A context of the reversed team: RMA with its PE numbers. */
  shmem_ctx_t ctx;
  shmem_team_t got = SHMEM_TEAM_INVALID;
  CHECK(shmem_team_create_ctx(rev, 0, &ctx) == 0, "team context");
  CHECK(shmem_ctx_get_team(ctx, &got) == 0 && got == rev, "context's team");
  int rme = shmem_team_my_pe(rev), target = (rme + 1) % n;
  shmem_ctx_int_p(ctx, &from_ctx[rme], 500 + rme, target);
  shmem_ctx_quiet(ctx);
  CHECK(shmem_ctx_int_g(ctx, &from_ctx[rme], target) == 500 + rme, "g through the context");
  shmem_team_sync(rev);
  int src = (rme + n - 1) % n;
  CHECK(from_ctx[src] == 500 + src, "from_ctx[%d] = %d", src, from_ctx[src]);
  /* The world PE of that write: team PE target of rev is world n-1-target. */
  CHECK(shmem_int_g(&from_ctx[rme], n - 1 - target) == 500 + rme, "the same PE by world number");
  shmem_ctx_destroy(ctx);
  CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &got) == 0 && got == SHMEM_TEAM_WORLD, "default");
  CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &got) != 0 && got == SHMEM_TEAM_INVALID, "invalid");
  CHECK(shmem_ctx_create(0, &ctx) == 0, "world context");
  CHECK(shmem_ctx_get_team(ctx, &got) == 0 && got == SHMEM_TEAM_WORLD, "world context's team");
  shmem_ctx_destroy(ctx);
  CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &ctx) != 0 && ctx == SHMEM_CTX_INVALID,
        "context of the invalid team");
  shmem_team_destroy(rev);

  /* Bad splits: non-zero and SHMEM_TEAM_INVALID on every PE of the parent. */
  shmem_team_t bad = SHMEM_TEAM_WORLD;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n + 1, NULL, 0, &bad) != 0 &&
            bad == SHMEM_TEAM_INVALID, "size n+1");
  bad = SHMEM_TEAM_WORLD;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 0, 2, NULL, 0, &bad) != 0 &&
            bad == SHMEM_TEAM_INVALID, "stride 0");
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 0, NULL, 0, &bad) != 0, "size 0");
  CHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &bad) != 0, "of invalid");
  shmem_team_t x, y;
  CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, NULL, 0, &x, NULL, 0, &y) != 0 &&
            x == SHMEM_TEAM_INVALID && y == SHMEM_TEAM_INVALID, "xrange 0");

  /* 2D splits of the world. */
  for (int xr = 1; xr <= 3; xr++) split_2d(SHMEM_TEAM_WORLD, xr);
  split_2d(SHMEM_TEAM_WORLD, n + 2);

  /* Slots are reused: many more teams made and destroyed than the limit. */
  for (int i = 0; i < 200; i++) {
    shmem_team_t t;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t) == 0, "round %d", i);
    CHECK(shmem_team_sync(t) == 0, "round %d sync", i);
    shmem_team_destroy(t);
  }
  /* The limit: 64 teams per PE, WORLD and SHARED included; then all destroyed, and again. */
  static shmem_team_t many[64];
  int made = 0;
  for (;;) {
    shmem_team_t t = SHMEM_TEAM_WORLD;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t) != 0) {
      CHECK(t == SHMEM_TEAM_INVALID, "a failed split gives SHMEM_TEAM_INVALID");
      break;
    }
    CHECK(made < 64, "more than 64 teams");
    many[made++] = t;
  }
  CHECK(made == 62, "%d teams made besides WORLD and SHARED, want 62", made);
  for (int i = 0; i < made; i++) shmem_team_destroy(many[i]);
  shmem_team_t again;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &again) == 0, "again");
  shmem_team_destroy(again);

  shmem_barrier_all();
  printf("teams ok: PE %d of %d, %d on this node\n", me, n, ns);
  shmem_finalize();
  return 0;
}
