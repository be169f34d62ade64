/* Ordering and contexts through the C API: fam_fence orders non-blocking puts and atomics
 * (a put, a fence, then a put of the same bytes: the second wins); fam_quiet completes
 * them; fam_progress counts what is outstanding (0 after quiet); contexts: open two, run the
 * data path and atomics on each with its own quiet, a context's progress counts only its
 * own operations, the control path still answers on it as on the instance, close them
 * (calls on a closed context fail), initialize/finalize/context_open on a context are
 * refused with NOPERM.
 *   ordering [PREFIX]   names its region PREFIX-... (default "ordering"), plus pid and time */
#include "check.h"

#define SIZE (256u * 1024u)

static c_fam *fam;

int main(int argc, char **argv) {
  const char *prefix = argc > 1 ? argv[1] : "ordering";
  char rname[128];
  fam = ft_init();
  ft_unique(rname, sizeof(rname), prefix, "region");
  void *r = CHECK_PTR(c_fam_create_region(fam, rname, 4 * SIZE, 0600, NULL));
  void *d = CHECK_PTR(c_fam_allocate_named(fam, "d", SIZE, 0600, r));
  uint8_t *a = ft_alloc(SIZE), *b = ft_alloc(SIZE), *back = ft_alloc(SIZE);
  uint64_t n;

  /* Nothing outstanding at first. */
  CHECK_OK(c_fam_progress(fam, &n));
  CHECK(n == 0, "%" PRIu64 " operations outstanding before any", n);

  /* put A, fence, put B over the same bytes, quiet: B is there. Many rounds. */
  for (int round = 0; round < 20; round++) {
    ft_fill(a, SIZE, 100 + round, 0);
    ft_fill(b, SIZE, 200 + round, 0);
    CHECK_OK(c_fam_put_nonblocking(fam, a, d, 0, SIZE));
    CHECK_OK(c_fam_fence(fam));
    CHECK_OK(c_fam_put_nonblocking(fam, b, d, 0, SIZE));
    CHECK_OK(c_fam_progress(fam, &n));
    CHECK(n <= 2, "%" PRIu64 " operations outstanding after two puts", n);
    CHECK_OK(c_fam_quiet(fam));
    CHECK_OK(c_fam_progress(fam, &n));
    CHECK(n == 0, "%" PRIu64 " operations outstanding after quiet", n);
    CHECK_OK(c_fam_get_blocking(fam, back, d, 0, SIZE));
    CHECK_PATTERN(back, SIZE, 200 + round, 0, "the put after the fence");
  }
  /* Atomics: set, fence, add: the add applies to the set value. */
  for (int round = 0; round < 20; round++) {
    CHECK_OK(c_fam_set_uint64(fam, d, 64, 1000));
    CHECK_OK(c_fam_fence(fam));
    CHECK_OK(c_fam_add_uint64(fam, d, 64, (uint64_t)round));
    CHECK_OK(c_fam_quiet(fam));
    uint64_t v;
    CHECK_OK(c_fam_fetch_uint64(fam, d, 64, &v));
    CHECK(v == 1000 + (uint64_t)round, "set, fence, add: %" PRIu64, v);
  }
  /* A non-blocking put then a get of the same bytes after quiet. */
  ft_fill(a, SIZE, 7, 0);
  CHECK_OK(c_fam_put_nonblocking(fam, a, d, 0, SIZE));
  CHECK_OK(c_fam_quiet(fam));
  CHECK_OK(c_fam_get_nonblocking(fam, back, d, 0, SIZE));
  CHECK_OK(c_fam_quiet(fam));
  CHECK_PATTERN(back, SIZE, 7, 0, "put then get");

  /* Contexts: each its own stream. */
  c_fam_context *c1 = CHECK_PTR(c_fam_context_open(fam));
  c_fam_context *c2 = CHECK_PTR(c_fam_context_open(fam));
  CHECK(c1 != c2 && c1 != fam, "context handles");
  ft_fill(a, SIZE / 2, 31, 0);
  ft_fill(b, SIZE / 2, 32, SIZE / 2);
  CHECK_OK(c_fam_put_nonblocking(c1, a, d, 0, SIZE / 2));
  CHECK_OK(c_fam_put_nonblocking(c2, b, d, SIZE / 2, SIZE / 2));
  CHECK_OK(c_fam_progress(fam, &n));
  CHECK(n == 0, "the instance counts %" PRIu64 " operations of its contexts", n);
  CHECK_OK(c_fam_quiet(c1));
  CHECK_OK(c_fam_progress(c1, &n));
  CHECK(n == 0, "context 1: %" PRIu64 " outstanding after its quiet", n);
  CHECK_OK(c_fam_quiet(c2));
  CHECK_OK(c_fam_get_blocking(c1, back, d, 0, SIZE));
  CHECK_PATTERN(back, SIZE / 2, 31, 0, "context 1's put");
  CHECK_PATTERN(back + SIZE / 2, SIZE / 2, 32, SIZE / 2, "context 2's put");
  /* Fence on a context. */
  CHECK_OK(c_fam_put_nonblocking(c2, a, d, 0, SIZE / 2));
  CHECK_OK(c_fam_fence(c2));
  ft_fill(b, SIZE / 2, 33, 0);
  CHECK_OK(c_fam_put_nonblocking(c2, b, d, 0, SIZE / 2));
  CHECK_OK(c_fam_quiet(c2));
  CHECK_OK(c_fam_get_blocking(fam, back, d, 0, SIZE / 2));
  CHECK_PATTERN(back, SIZE / 2, 33, 0, "a context's put after its fence");
  /* Atomics and gather on a context. */
  uint64_t old;
  CHECK_OK(c_fam_set_uint64(c1, d, 128, 5));
  CHECK_OK(c_fam_quiet(c1));
  CHECK_OK(c_fam_fetch_add_uint64(c1, d, 128, 3, &old));
  CHECK(old == 5, "fetch_add on a context: %" PRIu64, old);
  CHECK_OK(c_fam_fetch_uint64(fam, d, 128, &old));
  CHECK(old == 8, "the instance sees the context's atomic: %" PRIu64, old);
  uint64_t idx[2] = {16, 17}, got[2];
  CHECK_OK(c_fam_gather_nonblocking_index(c2, got, d, 2, idx, 8));
  CHECK_OK(c_fam_quiet(c2));
  CHECK(got[0] == 8, "gather on a context: %" PRIu64, got[0]);
  /* The control path answers on a context as on the instance. */
  void *look = CHECK_PTR(c_fam_lookup(c1, "d", rname));
  Fam_Stat st;
  CHECK_OK(c_fam_stat_data(c1, look, &st));
  CHECK(st.size == SIZE, "stat on a context: %" PRIu64, st.size);
  unimem_fam_desc_release(look);
  int pe = ft_int_option(c1, "PE_ID");
  CHECK(pe == FT_PE, "PE_ID on a context: %d", pe);
  /* What a context may not do. */
  EXPECT_ERR(c_fam_initialize(c1, FT_GROUP, NULL), FAM_ERR_NOPERM);
  EXPECT_ERR(c_fam_finalize(c1, FT_GROUP), FAM_ERR_NOPERM);
  EXPECT_NULL(c_fam_context_open(c1), FAM_ERR_NOPERM);
  /* Close: later calls on it fail (the code is the library's), the instance goes on. */
  CHECK_OK(c_fam_context_close(fam, c1));
  CHECK(c_fam_put_blocking(c1, a, d, 0, 16) != 0, "a put on a closed context succeeded");
  CHECK(c_fam_quiet(c1) != 0, "quiet on a closed context succeeded");
  c_fam_delete(c1);
  CHECK_OK(c_fam_context_close(fam, c2));
  c_fam_delete(c2);
  CHECK_OK(c_fam_get_blocking(fam, back, d, 0, 16));
  CHECK_PATTERN(back, 16, 33, 0, "the instance after closing its contexts");

  CHECK_OK(c_fam_deallocate(fam, d));
  unimem_fam_desc_release(d);
  CHECK_OK(c_fam_destroy_region(fam, r));
  unimem_fam_desc_release(r);
  free(a);
  free(b);
  free(back);
  ft_done(fam, "ordering");
  return 0;
}
