/* fam_map / fam_unmap through the C API: loads and stores through the mapping of an item
 * spanning several 64 KiB stripes (so several lenders when interleaved).
 *   map [PREFIX]        alone: stores through the pointer are seen by fam_get, fam_put and
 *                       atomics are seen through the pointer, two mappings of one item
 *                       agree, unmap; mapping a deallocated item fails (NOTFOUND);
 *                       cleans up
 *   map writer NAME     node A: creates region NAME with item "shared", puts pattern 1
 *                       with fam_put; keeps them
 *   map reader NAME     node B: maps the item, sees pattern 1 through the pointer, stores
 *                       pattern 2 over its second half through it, prints "reader: mapped",
 *                       then waits (60 s at most) until the word at offset 0 becomes POKE,
 *                       seen through the mapping
 *   map poke NAME       node A, while the reader waits: fam_set of POKE at offset 0
 *   map check NAME      node A, after the reader: fam_get sees the reader's stores; destroys
 *                       region NAME */
#include <sched.h>

#include "check.h"

#define STRIPE (64u * 1024u)
#define SIZE (3 * STRIPE + 100)
#define POKE 0x706f6b65706f6b65ull

static c_fam *fam;

/* Bytes [at, at+n) of the mapping M are pattern SEED (volatile loads). */
static void expect_mapped(const volatile uint8_t *m, uint64_t at, uint64_t n, uint64_t seed,
                          const char *what) {
  for (uint64_t i = at; i < at + n; i++)
    CHECK(m[i] == ft_pat(seed, i), "%s: mapped byte %" PRIu64 " is 0x%02x, expected 0x%02x",
          what, i, m[i], ft_pat(seed, i));
}

static void alone(const char *prefix) {
  char rname[128];
  ft_unique(rname, sizeof(rname), prefix, "region");
  void *r = CHECK_PTR(c_fam_create_region(fam, rname, 4 * SIZE, 0600, NULL));
  void *d = CHECK_PTR(c_fam_allocate_named(fam, "m", SIZE, 0600, r));
  uint8_t *buf = ft_alloc(SIZE);

  ft_fill(buf, SIZE, 1, 0);
  CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, SIZE));
  volatile uint8_t *m = CHECK_PTR(c_fam_map(fam, d));
  expect_mapped(m, 0, SIZE, 1, "after fam_put");
  /* Stores through the pointer, across the stripes, seen by fam_get. */
  for (uint64_t i = STRIPE - 10; i < 2 * STRIPE + 10; i++)
    m[i] = ft_pat(2, i);
  m[SIZE - 1] = ft_pat(2, SIZE - 1);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  CHECK_OK(c_fam_get_blocking(fam, buf, d, 0, SIZE));
  CHECK_PATTERN(buf, STRIPE - 10, 1, 0, "before the stores");
  CHECK_PATTERN(buf + STRIPE - 10, STRIPE + 20, 2, STRIPE - 10, "stores through the map");
  CHECK_PATTERN(buf + 2 * STRIPE + 10, SIZE - 2 * STRIPE - 11, 1, 2 * STRIPE + 10,
                "after the stores");
  CHECK(buf[SIZE - 1] == ft_pat(2, SIZE - 1), "the last byte stored through the map");
  /* fam_put and atomics seen through the pointer. */
  ft_fill(buf, 1000, 3, SIZE - 1000); /* the last 1000 bytes, across the last stripe start */
  CHECK_OK(c_fam_put_blocking(fam, buf, d, SIZE - 1000, 1000));
  expect_mapped(m, SIZE - 1000, 1000, 3, "fam_put seen through the map");
  CHECK_OK(c_fam_set_uint64(fam, d, 2 * STRIPE, 41));
  CHECK_OK(c_fam_add_uint64(fam, d, 2 * STRIPE, 1));
  CHECK_OK(c_fam_quiet(fam));
  uint64_t w = __atomic_load_n((uint64_t *)(m + 2 * STRIPE), __ATOMIC_SEQ_CST);
  CHECK(w == 42, "atomic seen through the map: %" PRIu64, w);
  /* Atomics through the pointer, seen by fam atomics. */
  __atomic_fetch_add((uint64_t *)(m + 2 * STRIPE), 8, __ATOMIC_SEQ_CST);
  CHECK_OK(c_fam_fetch_uint64(fam, d, 2 * STRIPE, &w));
  CHECK(w == 50, "CPU atomic through the map seen by fam_fetch: %" PRIu64, w);
  /* A second mapping of the same item sees the same bytes. */
  volatile uint8_t *m2 = CHECK_PTR(c_fam_map(fam, d));
  m2[5] = 0xA5;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  CHECK(m[5] == 0xA5, "two mappings disagree: 0x%02x", m[5]);
  CHECK_OK(c_fam_unmap(fam, (void *)m2, d));
  CHECK(m[5] == 0xA5, "the first mapping after unmapping the second");
  CHECK_OK(c_fam_unmap(fam, (void *)m, d));
  /* Unmapping something that is not a mapping of this item is refused. */
  CHECK(c_fam_unmap(fam, buf, d) != 0, "unmapped a heap buffer");
  /* The data stay after unmap. */
  CHECK_OK(c_fam_get_blocking(fam, buf, d, 5, 1));
  CHECK(buf[0] == 0xA5, "byte after unmap: 0x%02x", buf[0]);
  /* A deallocated item cannot be mapped. */
  CHECK_OK(c_fam_deallocate(fam, d));
  EXPECT_NULL(c_fam_map(fam, d), FAM_ERR_NOTFOUND);
  unimem_fam_desc_release(d);
  CHECK_OK(c_fam_destroy_region(fam, r));
  unimem_fam_desc_release(r);
  free(buf);
}

int main(int argc, char **argv) {
  const char *role = argc > 2 ? argv[1] : NULL;
  fam = ft_init();
  if (!role) {
    alone(argc > 1 ? argv[1] : "map");
    ft_done(fam, "map");
    return 0;
  }
  const char *name = argv[2];
  uint8_t *buf = ft_alloc(SIZE);
  if (strcmp(role, "writer") == 0) {
    void *r = CHECK_PTR(c_fam_create_region(fam, name, 4 * SIZE, 0600, NULL));
    void *d = CHECK_PTR(c_fam_allocate_named(fam, "shared", SIZE, 0600, r));
    ft_fill(buf, SIZE, 1, 0);
    CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, SIZE));
    unimem_fam_desc_release(d);
    unimem_fam_desc_release(r);
  } else if (strcmp(role, "reader") == 0) {
    void *d = CHECK_PTR(c_fam_lookup(fam, "shared", name));
    volatile uint8_t *m = CHECK_PTR(c_fam_map(fam, d));
    expect_mapped(m, sizeof(uint64_t), SIZE / 2 - sizeof(uint64_t), 1, "the writer's data");
    for (uint64_t i = SIZE / 2; i < SIZE; i++)
      m[i] = ft_pat(2, i);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    printf("PE %d: reader: mapped\n", FT_PE);
    fflush(stdout);
    time_t end = time(NULL) + 60;
    while (__atomic_load_n((uint64_t *)m, __ATOMIC_ACQUIRE) != POKE) {
      CHECK(time(NULL) < end, "the poke never showed through the mapping");
      sched_yield();
    }
    CHECK_OK(c_fam_unmap(fam, (void *)m, d));
    unimem_fam_desc_release(d);
  } else if (strcmp(role, "poke") == 0) {
    void *d = CHECK_PTR(c_fam_lookup(fam, "shared", name));
    CHECK_OK(c_fam_set_uint64(fam, d, 0, POKE));
    CHECK_OK(c_fam_quiet(fam));
    unimem_fam_desc_release(d);
  } else if (strcmp(role, "check") == 0) {
    void *d = CHECK_PTR(c_fam_lookup(fam, "shared", name));
    CHECK_OK(c_fam_get_blocking(fam, buf, d, 0, SIZE));
    uint64_t w;
    memcpy(&w, buf, sizeof(w));
    CHECK(w == POKE, "the poke: %" PRIx64, w);
    CHECK_PATTERN(buf + 8, SIZE / 2 - 8, 1, 8, "the writer's half");
    CHECK_PATTERN(buf + SIZE / 2, SIZE - SIZE / 2, 2, SIZE / 2, "the reader's stores");
    unimem_fam_desc_release(d);
    void *r = CHECK_PTR(c_fam_lookup_region(fam, name));
    CHECK_OK(c_fam_destroy_region(fam, r));
    unimem_fam_desc_release(r);
  } else {
    CHECK(0, "usage: map [PREFIX] | map writer|reader|poke|check NAME");
  }
  free(buf);
  char what[64];
  snprintf(what, sizeof(what), "map %s", role);
  ft_done(fam, what);
  return 0;
}
