/* The data path through the C API, on an item interleaved in 64 KiB stripes (and one that
 * is not): blocking and non-blocking put and get of the whole item, of ranges crossing
 * stripe boundaries and of its last bytes; strided and indexed gather and scatter, blocking
 * and not; fam_copy + fam_copy_wait within an item and between items of two regions; and
 * bad input, which must write nothing (read back to check): a range past the end or
 * overflowing (OUTOFRANGE), size 0 (INVALID), a NULL buffer (INVALID or NULLPTR: OpenFAM
 * says INVALID; accepted both), a copy past the end (OUTOFRANGE).
 *   data [PREFIX]   names its regions PREFIX-... (default "data"), plus pid and time */
#include "check.h"

#define STRIPE (64u * 1024u)
#define SIZE (3 * STRIPE + 5000) /* four stripes, the last partial */

static c_fam *fam;

/* The whole of item D (SIZE bytes) is pattern SEED, except [at, at+n) which is SEED2. */
static void expect_item(void *d, uint64_t seed, uint64_t at, uint64_t n, uint64_t seed2,
                        const char *what) {
  uint8_t *buf = ft_alloc(SIZE);
  memset(buf, 0, SIZE);
  CHECK_OK(c_fam_get_blocking(fam, buf, d, 0, SIZE));
  CHECK_PATTERN(buf, at, seed, 0, what);
  CHECK_PATTERN(buf + at, n, seed2, at, what);
  CHECK_PATTERN(buf + at + n, SIZE - at - n, seed, at + n, what);
  free(buf);
}

/* Puts pattern SEED2 over [at, at+n) of D (blocking or not), reads it back (both ways),
 * and checks the rest of the item still holds SEED; then puts SEED back there. */
static void range(void *d, uint64_t seed, uint64_t at, uint64_t n, uint64_t seed2, int nb) {
  uint8_t *buf = ft_alloc(n), *back = ft_alloc(n);
  ft_fill(buf, n, seed2, at);
  if (nb) {
    CHECK_OK(c_fam_put_nonblocking(fam, buf, d, at, n));
    CHECK_OK(c_fam_quiet(fam));
  } else {
    CHECK_OK(c_fam_put_blocking(fam, buf, d, at, n));
  }
  memset(back, 0, n);
  CHECK_OK(c_fam_get_blocking(fam, back, d, at, n));
  CHECK_PATTERN(back, n, seed2, at, "range, blocking get");
  memset(back, 0, n);
  CHECK_OK(c_fam_get_nonblocking(fam, back, d, at, n));
  CHECK_OK(c_fam_quiet(fam));
  CHECK_PATTERN(back, n, seed2, at, "range, non-blocking get");
  expect_item(d, seed, at, n, seed2, "around a range");
  ft_fill(buf, n, seed, at);
  CHECK_OK(c_fam_put_blocking(fam, buf, d, at, n));
  free(buf);
  free(back);
}

/* Every test of the data path on item D of SIZE bytes. */
static void data_path(void *d, const char *what) {
  uint8_t *buf = ft_alloc(SIZE);
  printf("PE %d: data path on the %s item\n", FT_PE, what);

  /* Whole item, blocking, then non-blocking. */
  ft_fill(buf, SIZE, 1, 0);
  CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, SIZE));
  expect_item(d, 1, 0, 0, 1, "whole item, blocking put");
  ft_fill(buf, SIZE, 2, 0);
  CHECK_OK(c_fam_put_nonblocking(fam, buf, d, 0, SIZE));
  CHECK_OK(c_fam_quiet(fam));
  expect_item(d, 2, 0, 0, 2, "whole item, non-blocking put");
  /* Several non-blocking puts outstanding at once, then one quiet. */
  for (int i = 0; i < 4; i++) {
    /* Half of each stripe; the last stripe holds only 5000 bytes. */
    uint64_t n = i < 3 ? STRIPE / 2 : 4000;
    ft_fill(buf + i * STRIPE, n, 3, i * STRIPE);
    CHECK_OK(c_fam_put_nonblocking(fam, buf + i * STRIPE, d, i * STRIPE, n));
  }
  CHECK_OK(c_fam_quiet(fam));
  uint8_t *back = ft_alloc(SIZE);
  CHECK_OK(c_fam_get_blocking(fam, back, d, 0, SIZE));
  CHECK(memcmp(back, buf, SIZE) == 0, "after four non-blocking puts");
  ft_fill(buf, SIZE, 2, 0);
  CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, SIZE));

  /* Ranges across the stripe boundaries, inside a stripe, and at the end. */
  range(d, 2, STRIPE - 100, 200, 4, 0);
  range(d, 2, 2 * STRIPE - 1, 2, 5, 1);
  range(d, 2, STRIPE - 7, STRIPE + 14, 6, 0); /* three stripes */
  range(d, 2, 10, 1, 7, 1);
  range(d, 2, 3 * STRIPE + 1, 4999, 8, 0);
  range(d, 2, SIZE - 1, 1, 9, 1);
  range(d, 2, SIZE - 3000, 3000, 10, 0);

  /* Bad input writes nothing. */
  ft_fill(buf, SIZE, 11, 0);
  EXPECT_ERR(c_fam_put_blocking(fam, buf, d, SIZE - 10, 11), FAM_ERR_OUTOFRANGE);
  EXPECT_ERR(c_fam_put_blocking(fam, buf, d, SIZE, 1), FAM_ERR_OUTOFRANGE);
  EXPECT_ERR(c_fam_put_blocking(fam, buf, d, 0, SIZE + 1), FAM_ERR_OUTOFRANGE);
  EXPECT_ERR(c_fam_put_blocking(fam, buf, d, UINT64_MAX - 1, 4), FAM_ERR_OUTOFRANGE);
  EXPECT_ERR(c_fam_put_blocking(fam, buf, d, 8, 0), FAM_ERR_INVALID);
  int rc = c_fam_put_nonblocking(fam, buf, d, SIZE - 10, 11);
  if (rc == 0) /* a non-blocking put may report its failure at quiet */
    rc = c_fam_quiet(fam);
  CHECK(rc == -FAM_ERR_OUTOFRANGE, "non-blocking put past the end: %d (%s)", rc,
        ft_err_name(rc));
  rc = c_fam_put_blocking(fam, NULL, d, 0, 16);
  CHECK(rc == -FAM_ERR_INVALID || rc == -FAM_ERR_NULLPTR, "put from NULL: %d (%s)", rc,
        ft_err_name(rc));
  memset(back, 0x5a, SIZE);
  EXPECT_ERR(c_fam_get_blocking(fam, back, d, SIZE - 10, 11), FAM_ERR_OUTOFRANGE);
  EXPECT_ERR(c_fam_get_blocking(fam, back, d, UINT64_MAX, 1), FAM_ERR_OUTOFRANGE);
  EXPECT_ERR(c_fam_get_blocking(fam, back, d, 0, 0), FAM_ERR_INVALID);
  rc = c_fam_get_nonblocking(fam, back, d, SIZE, 1);
  if (rc == 0)
    rc = c_fam_quiet(fam);
  CHECK(rc == -FAM_ERR_OUTOFRANGE, "non-blocking get past the end: %d (%s)", rc,
        ft_err_name(rc));
  CHECK_OK(c_fam_quiet(fam)); /* the failure was reported once */
  expect_item(d, 2, 0, 0, 2, "after the refused puts");

  /* Gather / scatter: 8-byte elements; element i of the item is at byte 8*i. */
  enum { EL = 8, N = 10 };
  uint64_t nel = SIZE / EL;
  uint64_t first = (STRIPE / EL) - 3, stride = 1000; /* crosses every stripe */
  CHECK(first + (N - 1) * stride < nel, "strided range");
  uint64_t vals[N], got[N];
  for (int i = 0; i < N; i++)
    vals[i] = 0xABCD000000000000ull + (uint64_t)i;
  CHECK_OK(c_fam_scatter_blocking_stride(fam, vals, d, N, first, stride, EL));
  memset(got, 0, sizeof(got));
  CHECK_OK(c_fam_gather_blocking_stride(fam, got, d, N, first, stride, EL));
  CHECK(memcmp(got, vals, sizeof(vals)) == 0, "strided gather");
  /* What lies between the strides is untouched, and each element is where it should be. */
  CHECK_OK(c_fam_get_blocking(fam, back, d, 0, SIZE));
  for (uint64_t e = 0; e < nel; e++) {
    uint64_t k = (e - first) / stride;
    int scattered = e >= first && (e - first) % stride == 0 && k < N;
    if (scattered)
      CHECK(memcmp(back + e * EL, &vals[k], EL) == 0, "element %" PRIu64, e);
    else
      CHECK_PATTERN(back + e * EL, EL, 2, e * EL, "between the strides");
  }
  CHECK_PATTERN(back + nel * EL, SIZE - nel * EL, 2, nel * EL, "after the last element");
  ft_fill(buf, SIZE, 2, 0);
  CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, SIZE));

  uint64_t idx[N] = {nel - 1, 0, STRIPE / EL, STRIPE / EL - 1, 17, 2 * STRIPE / EL,
                     3 * STRIPE / EL + 1, 5, nel - 2, 4000};
  for (int i = 0; i < N; i++)
    vals[i] = 0x1111111111111111ull * (uint64_t)(i + 1);
  CHECK_OK(c_fam_scatter_nonblocking_index(fam, vals, d, N, idx, EL));
  CHECK_OK(c_fam_quiet(fam));
  memset(got, 0, sizeof(got));
  CHECK_OK(c_fam_gather_nonblocking_index(fam, got, d, N, idx, EL));
  CHECK_OK(c_fam_quiet(fam));
  CHECK(memcmp(got, vals, sizeof(vals)) == 0, "indexed gather");
  memset(got, 0, sizeof(got));
  CHECK_OK(c_fam_gather_blocking_index(fam, got, d, N, idx, EL));
  CHECK(memcmp(got, vals, sizeof(vals)) == 0, "indexed blocking gather");
  for (int i = 0; i < N; i++) {
    uint64_t v;
    CHECK_OK(c_fam_get_blocking(fam, &v, d, idx[i] * EL, EL));
    CHECK(v == vals[i], "element %" PRIu64 " = %" PRIx64, idx[i], v);
  }
  CHECK_OK(c_fam_scatter_nonblocking_stride(fam, vals, d, N, 1, 3, EL));
  CHECK_OK(c_fam_quiet(fam));
  memset(got, 0, sizeof(got));
  CHECK_OK(c_fam_gather_nonblocking_stride(fam, got, d, N, 1, 3, EL));
  CHECK_OK(c_fam_quiet(fam));
  CHECK(memcmp(got, vals, sizeof(vals)) == 0, "strided non-blocking gather");
  CHECK_OK(c_fam_scatter_blocking_index(fam, vals, d, 1, idx, EL));

  /* Gather / scatter out of range write nothing. */
  ft_fill(buf, SIZE, 2, 0);
  CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, SIZE));
  EXPECT_ERR(c_fam_scatter_blocking_stride(fam, vals, d, N, nel - 5, 1, EL),
             FAM_ERR_OUTOFRANGE);
  uint64_t bad[2] = {1, nel};
  EXPECT_ERR(c_fam_scatter_blocking_index(fam, vals, d, 2, bad, EL), FAM_ERR_OUTOFRANGE);
  EXPECT_ERR(c_fam_gather_blocking_index(fam, got, d, 2, bad, EL), FAM_ERR_OUTOFRANGE);
  EXPECT_ERR(c_fam_gather_blocking_stride(fam, got, d, N, 0, nel, EL), FAM_ERR_OUTOFRANGE);
  EXPECT_ERR(c_fam_scatter_blocking_index(fam, vals, d, 0, idx, EL), FAM_ERR_INVALID);
  EXPECT_ERR(c_fam_gather_blocking_stride(fam, got, d, 0, 0, 1, EL), FAM_ERR_INVALID);
  EXPECT_ERR(c_fam_gather_nonblocking_index(fam, got, d, 0, idx, EL), FAM_ERR_INVALID);
  expect_item(d, 2, 0, 0, 2, "after the refused scatters");
  free(buf);
  free(back);
}

int main(int argc, char **argv) {
  const char *prefix = argc > 1 ? argv[1] : "data";
  char n1[128], n2[128];
  fam = ft_init();
  ft_unique(n1, sizeof(n1), prefix, "interleaved");
  ft_unique(n2, sizeof(n2), prefix, "single");
  Fam_Region_Attributes ai = ft_attrs(NONE, VOLATILE, ENABLE);
  Fam_Region_Attributes as = ft_attrs(NONE, VOLATILE, DISABLE);
  void *r1 = CHECK_PTR(c_fam_create_region(fam, n1, 4 * SIZE, 0600, &ai));
  void *r2 = CHECK_PTR(c_fam_create_region(fam, n2, 4 * SIZE, 0600, &as));
  void *d1 = CHECK_PTR(c_fam_allocate_named(fam, "item", SIZE, 0600, r1));
  void *d2 = CHECK_PTR(c_fam_allocate_named(fam, "item", SIZE, 0600, r2));
  data_path(d1, "interleaved");
  data_path(d2, "single-server");

  /* fam_copy: d1 holds pattern 2; copy ranges within it and into d2 (another region). */
  uint8_t *buf = ft_alloc(SIZE);
  ft_fill(buf, SIZE, 12, 0);
  CHECK_OK(c_fam_put_blocking(fam, buf, d2, 0, SIZE));
  void *w = CHECK_PTR(c_fam_copy(fam, d1, 0, d2, 0, SIZE));
  CHECK_OK(c_fam_copy_wait(fam, w));
  expect_item(d2, 2, 0, 0, 2, "whole-item copy");
  ft_fill(buf, SIZE, 12, 0);
  CHECK_OK(c_fam_put_blocking(fam, buf, d2, 0, SIZE));
  /* Two copies outstanding at once: stripe-crossing ranges to the same offsets. */
  void *wa = CHECK_PTR(c_fam_copy(fam, d1, STRIPE - 50, d2, STRIPE - 50, 100));
  void *wb = CHECK_PTR(c_fam_copy(fam, d1, 3 * STRIPE, d2, 3 * STRIPE, 5000));
  CHECK_OK(c_fam_copy_wait(fam, wb));
  CHECK_OK(c_fam_copy_wait(fam, wa));
  CHECK_OK(c_fam_get_blocking(fam, buf, d2, 0, SIZE));
  CHECK_PATTERN(buf, STRIPE - 50, 12, 0, "before the first copied range");
  CHECK_PATTERN(buf + STRIPE - 50, 100, 2, STRIPE - 50, "first copied range");
  CHECK_PATTERN(buf + STRIPE + 50, 2 * STRIPE - 50, 12, STRIPE + 50, "between the copies");
  CHECK_PATTERN(buf + 3 * STRIPE, 5000, 2, 3 * STRIPE, "second copied range");
  /* Within one item, to another offset (non-overlapping). */
  w = CHECK_PTR(c_fam_copy(fam, d1, 0, d1, 2 * STRIPE, 1000));
  CHECK_OK(c_fam_copy_wait(fam, w));
  CHECK_OK(c_fam_get_blocking(fam, buf, d1, 2 * STRIPE, 1000));
  CHECK_PATTERN(buf, 1000, 2, 0, "copy within an item");
  /* Out of range: refused (at the start or by the wait), nothing written. */
  ft_fill(buf, SIZE, 12, 0);
  CHECK_OK(c_fam_put_blocking(fam, buf, d2, 0, SIZE));
  int rc;
  w = c_fam_copy(fam, d1, SIZE - 10, d2, 0, 11);
  rc = w ? c_fam_copy_wait(fam, w) : -c_fam_error();
  CHECK(rc == -FAM_ERR_OUTOFRANGE, "copy from past the end: %d (%s)", rc, ft_err_name(rc));
  w = c_fam_copy(fam, d1, 0, d2, SIZE - 10, 11);
  rc = w ? c_fam_copy_wait(fam, w) : -c_fam_error();
  CHECK(rc == -FAM_ERR_OUTOFRANGE, "copy to past the end: %d (%s)", rc, ft_err_name(rc));
  expect_item(d2, 12, 0, 0, 12, "after the refused copies");

  CHECK_OK(c_fam_deallocate(fam, d1));
  CHECK_OK(c_fam_deallocate(fam, d2));
  unimem_fam_desc_release(d1);
  unimem_fam_desc_release(d2);
  CHECK_OK(c_fam_destroy_region(fam, r1));
  CHECK_OK(c_fam_destroy_region(fam, r2));
  unimem_fam_desc_release(r1);
  unimem_fam_desc_release(r2);
  free(buf);
  ft_done(fam, "data");
  return 0;
}
