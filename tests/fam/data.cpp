// The data path through the C++ API (data.c does the same through the C API, in more
// detail): put and get, blocking and not, across 64 KiB stripes and at the end of an
// interleaved item; every gather and scatter overload; fam_copy and fam_copy_wait; out of
// range (OUTOFRANGE) and size 0 (INVALID) throw and write nothing. Built as data-cpp.
//   data-cpp [PREFIX]   names its region PREFIX-... (default "data-cpp"), plus pid and time
#include <vector>

#include "check.hpp"

static const uint64_t STRIPE = 64 * 1024;
static const uint64_t SIZE = 2 * STRIPE + 123;
static const char *prefix = "data-cpp";

// D holds pattern SEED everywhere.
static void expect_all(fam *f, Fam_Descriptor *d, uint64_t seed, const char *what) {
  std::vector<uint8_t> back(SIZE, 0);
  f->fam_get_blocking(back.data(), d, 0, SIZE);
  CHECK_PATTERN(back.data(), SIZE, seed, 0, what);
}

static void body(fam *f) {
  char rname[128];
  ft_unique(rname, sizeof(rname), prefix, "region");
  STEP("create region and items");
  Fam_Region_Attributes a = ft_attrs(NONE, VOLATILE, ENABLE);
  Fam_Region_Descriptor *r = f->fam_create_region(rname, 8 * SIZE, 0600, &a);
  Fam_Descriptor *d = f->fam_allocate("d", SIZE, 0600, r);
  Fam_Descriptor *e = f->fam_allocate("e", SIZE, 0600, r);
  std::vector<uint8_t> buf(SIZE), back(SIZE);

  STEP("blocking put and get");
  ft_fill(buf.data(), SIZE, 1, 0);
  f->fam_put_blocking(buf.data(), d, 0, SIZE);
  expect_all(f, d, 1, "blocking put");

  STEP("non-blocking put and get across a stripe boundary");
  ft_fill(buf.data(), 300, 2, STRIPE - 150);
  f->fam_put_nonblocking(buf.data(), d, STRIPE - 150, 300);
  f->fam_quiet();
  f->fam_get_nonblocking(back.data(), d, STRIPE - 150, 300);
  f->fam_quiet();
  CHECK_PATTERN(back.data(), 300, 2, STRIPE - 150, "non-blocking");
  ft_fill(buf.data(), 300, 1, STRIPE - 150);
  f->fam_put_blocking(buf.data(), d, STRIPE - 150, 300);

  STEP("the last bytes");
  ft_fill(buf.data(), 123, 3, 2 * STRIPE);
  f->fam_put_blocking(buf.data(), d, 2 * STRIPE, 123);
  f->fam_get_blocking(back.data(), d, SIZE - 1, 1);
  CHECK(back[0] == ft_pat(3, SIZE - 1), "last byte 0x%02x", back[0]);
  ft_fill(buf.data(), 123, 1, 2 * STRIPE);
  f->fam_put_blocking(buf.data(), d, 2 * STRIPE, 123);

  STEP("out of range and size 0 throw, write nothing");
  ft_fill(buf.data(), SIZE, 9, 0);
  EXPECT_FAM_ERROR(f->fam_put_blocking(buf.data(), d, SIZE - 1, 2), FAM_ERR_OUTOFRANGE);
  EXPECT_FAM_ERROR(f->fam_put_blocking(buf.data(), d, SIZE, 1), FAM_ERR_OUTOFRANGE);
  EXPECT_FAM_ERROR(f->fam_put_blocking(buf.data(), d, 0, 0), FAM_ERR_INVALID);
  EXPECT_FAM_ERROR(f->fam_get_blocking(back.data(), d, SIZE - 1, 2), FAM_ERR_OUTOFRANGE);
  EXPECT_FAM_ERROR(f->fam_get_blocking(back.data(), d, 1, 0), FAM_ERR_INVALID);
  expect_all(f, d, 1, "after the refused puts");

  STEP("gather and scatter, strided and indexed, blocking and not");
  const uint64_t N = 6, EL = 4, nel = SIZE / EL;
  uint32_t vals[N] = {11, 22, 33, 44, 55, 66}, got[N];
  uint64_t first = STRIPE / EL - 2, stride = (nel - first) / N;
  f->fam_scatter_blocking(vals, d, N, first, stride, EL);
  memset(got, 0, sizeof(got));
  f->fam_gather_blocking(got, d, N, first, stride, EL);
  CHECK(memcmp(got, vals, sizeof(vals)) == 0, "strided blocking");
  for (uint64_t i = 0; i < N; i++)
    vals[i] += 1000;
  f->fam_scatter_nonblocking(vals, d, N, first, stride, EL);
  f->fam_quiet();
  memset(got, 0, sizeof(got));
  f->fam_gather_nonblocking(got, d, N, first, stride, EL);
  f->fam_quiet();
  CHECK(memcmp(got, vals, sizeof(vals)) == 0, "strided non-blocking");
  uint64_t idx[N] = {nel - 1, 0, STRIPE / EL, 2 * STRIPE / EL - 1, 7, STRIPE / EL + 1};
  f->fam_scatter_blocking(vals, d, N, idx, EL);
  memset(got, 0, sizeof(got));
  f->fam_gather_blocking(got, d, N, idx, EL);
  CHECK(memcmp(got, vals, sizeof(vals)) == 0, "indexed blocking");
  for (uint64_t i = 0; i < N; i++)
    vals[i] += 1000;
  f->fam_scatter_nonblocking(vals, d, N, idx, EL);
  f->fam_quiet();
  memset(got, 0, sizeof(got));
  f->fam_gather_nonblocking(got, d, N, idx, EL);
  f->fam_quiet();
  CHECK(memcmp(got, vals, sizeof(vals)) == 0, "indexed non-blocking");
  for (uint64_t i = 0; i < N; i++) {
    uint32_t v = 0;
    f->fam_get_blocking(&v, d, idx[i] * EL, EL);
    CHECK(v == vals[i], "element %" PRIu64 " = %u, expected %u", idx[i], v, vals[i]);
  }
  // The queued memory-side operations (a unimem extension): the C++ methods.
  uint32_t addv[N] = {1, 2, 3, 4, 5, 6};
  f->fam_queue_operation(OP_ADD_INDEXED, addv, d, N, idx, EL);
  f->fam_aggregate_flush(d);
  memset(got, 0, sizeof(got));
  f->fam_queue_operation(OP_GATHER, got, d, N, idx, EL);
  f->fam_aggregate_flush(d);
  for (uint64_t i = 0; i < N; i++) {
    uint32_t v = 0;
    f->fam_get_blocking(&v, d, idx[i] * EL, EL);
    CHECK(v == vals[i] + addv[i] && got[i] == v, "queued add to element %" PRIu64 ": %u, %u",
          idx[i], v, got[i]);
  }
  f->fam_scatter_blocking(vals, d, N, idx, EL);
  uint64_t bad[1] = {nel};
  EXPECT_FAM_ERROR(f->fam_queue_operation(OP_SCATTER, vals, d, 1, bad, EL), FAM_ERR_OUTOFRANGE);
  EXPECT_FAM_ERROR(f->fam_scatter_blocking(vals, d, 1, bad, EL), FAM_ERR_OUTOFRANGE);
  EXPECT_FAM_ERROR(f->fam_gather_blocking(got, d, N, nel - 2, 1, EL), FAM_ERR_OUTOFRANGE);

  STEP("fam_copy");
  ft_fill(buf.data(), SIZE, 4, 0);
  f->fam_put_blocking(buf.data(), d, 0, SIZE);
  void *w = f->fam_copy(d, 0, e, 0, SIZE);
  f->fam_copy_wait(w);
  expect_all(f, e, 4, "copied item");
  ft_fill(buf.data(), SIZE, 5, 0);
  f->fam_put_blocking(buf.data(), e, 0, SIZE);
  w = f->fam_copy(d, STRIPE - 1, e, STRIPE - 1, 2);
  f->fam_copy_wait(w);
  f->fam_get_blocking(back.data(), e, 0, SIZE);
  CHECK_PATTERN(back.data(), STRIPE - 1, 5, 0, "before the copied bytes");
  CHECK_PATTERN(back.data() + STRIPE - 1, 2, 4, STRIPE - 1, "copied bytes");
  CHECK_PATTERN(back.data() + STRIPE + 1, SIZE - STRIPE - 1, 5, STRIPE + 1, "after them");
  bool threw = false;
  try {
    w = f->fam_copy(d, SIZE - 1, e, 0, 2);
    f->fam_copy_wait(w);
  } catch (Fam_Exception &x) {
    threw = true;
    CHECK(x.fam_error() == FAM_ERR_OUTOFRANGE, "copy past the end: %s",
          ft_err_name(x.fam_error()));
  }
  CHECK(threw, "a copy past the end succeeded");
  f->fam_get_blocking(back.data(), e, 0, 2);
  CHECK_PATTERN(back.data(), 2, 5, 0, "after the refused copy");

  STEP("clean up");
  f->fam_deallocate(d);
  f->fam_deallocate(e);
  delete d;
  delete e;
  f->fam_destroy_region(r);
  delete r;
}

int main(int argc, char **argv) {
  if (argc > 1)
    prefix = argv[1];
  return ft_main("data-cpp", body);
}
