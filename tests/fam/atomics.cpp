// Every atomic of the C++ API, results checked: set and fetch of int32, int64, uint32,
// uint64, float, double and int128; fetching add, subtract, min, max, swap and
// compare-and-swap (and, or, xor for the unsigned types); the non-fetching add, subtract,
// min, max (and, or, xor) followed by fam_quiet. Values sit at stripe boundaries of an
// interleaved item and next to each other (a neighbour must never change). Bad input:
// a misaligned offset (INVALID) and one past the end (OUTOFRANGE) change nothing.
//   atomics [PREFIX]   names its region PREFIX-... (default "atomics"), plus pid and time
#include <limits>
#include <type_traits>

#include "check.hpp"

static const uint64_t STRIPE = 64 * 1024;
static const uint64_t SIZE = 2 * STRIPE + 4096;
static const char *prefix = "atomics";

// fam_fetch_<type> by type.
template <typename T> T fetch(fam *f, Fam_Descriptor *d, uint64_t off);
template <> int32_t fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_int32(d, o); }
template <> int64_t fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_int64(d, o); }
template <> uint32_t fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_uint32(d, o); }
template <> uint64_t fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_uint64(d, o); }
template <> float fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_float(d, o); }
template <> double fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_double(d, o); }

template <typename T> static double num(T v) { return static_cast<double>(v); }

// The value at OFF is WANT (read atomically and with a plain get).
template <typename T>
static void expect_at(fam *f, Fam_Descriptor *d, uint64_t off, T want, const char *what) {
  T got = fetch<T>(f, d, off);
  CHECK(got == want, "%s at %" PRIu64 ": %g, expected %g", what, off, num(got), num(want));
  T plain;
  f->fam_get_blocking(&plain, d, off, sizeof(T));
  CHECK(plain == want, "%s at %" PRIu64 " (get): %g, expected %g", what, off, num(plain),
        num(want));
}

// A non-fetching call whose failure OpenFAM reports at the next fam_quiet (an offset past the
// end, a refused write): the call itself must not throw, the quiet must, with CODE.
#define EXPECT_DEFERRED_ERROR(f, expr, code)                                               \
  do {                                                                                     \
    try {                                                                                  \
      expr;                                                                                \
    } catch (Fam_Exception & ft_e_) {                                                      \
      CHECK(false, "the call threw %s (%s); expected it at fam_quiet",                    \
            ft_err_name(ft_e_.fam_error()), ft_e_.fam_error_msg());                        \
    }                                                                                      \
    EXPECT_FAM_ERROR((f)->fam_quiet(), code);                                              \
  } while (0)

// Arithmetic, min/max, swap, compare-and-swap of type T at OFF; its neighbours (the T
// before and after) hold GUARD throughout.
template <typename T> static void arith(fam *f, Fam_Descriptor *d, uint64_t off, const char *name) {
  printf("PE %d: atomics: %s at %" PRIu64 "\n", FT_PE, name, off);
  const T guard = static_cast<T>(77);
  f->fam_set(d, off - sizeof(T), guard);
  f->fam_set(d, off + sizeof(T), guard);
  f->fam_set(d, off, static_cast<T>(10));
  f->fam_quiet();
  expect_at<T>(f, d, off, 10, name);

  CHECK(f->fam_fetch_add(d, off, static_cast<T>(5)) == 10, "%s fetch_add", name);
  expect_at<T>(f, d, off, 15, name);
  CHECK(f->fam_fetch_subtract(d, off, static_cast<T>(3)) == 15, "%s fetch_subtract", name);
  expect_at<T>(f, d, off, 12, name);
  CHECK(f->fam_fetch_min(d, off, static_cast<T>(20)) == 12, "%s fetch_min", name);
  expect_at<T>(f, d, off, 12, name);
  CHECK(f->fam_fetch_min(d, off, static_cast<T>(4)) == 12, "%s fetch_min", name);
  expect_at<T>(f, d, off, 4, name);
  CHECK(f->fam_fetch_max(d, off, static_cast<T>(2)) == 4, "%s fetch_max", name);
  expect_at<T>(f, d, off, 4, name);
  CHECK(f->fam_fetch_max(d, off, static_cast<T>(40)) == 4, "%s fetch_max", name);
  expect_at<T>(f, d, off, 40, name);
  CHECK(f->fam_swap(d, off, static_cast<T>(8)) == 40, "%s swap", name);
  expect_at<T>(f, d, off, 8, name);

  // Non-fetching, completed by fam_quiet.
  f->fam_add(d, off, static_cast<T>(7));
  f->fam_quiet();
  expect_at<T>(f, d, off, 15, name);
  f->fam_subtract(d, off, static_cast<T>(5));
  f->fam_quiet();
  expect_at<T>(f, d, off, 10, name);
  f->fam_min(d, off, static_cast<T>(3));
  f->fam_quiet();
  expect_at<T>(f, d, off, 3, name);
  f->fam_max(d, off, static_cast<T>(9));
  f->fam_quiet();
  expect_at<T>(f, d, off, 9, name);
  f->fam_min(d, off, static_cast<T>(100));
  f->fam_max(d, off, static_cast<T>(1));
  f->fam_quiet();
  expect_at<T>(f, d, off, 9, name);
  // Several outstanding at once: all of them apply.
  for (int i = 0; i < 10; i++)
    f->fam_add(d, off, static_cast<T>(1));
  f->fam_quiet();
  expect_at<T>(f, d, off, 19, name);

  // Signedness: below zero for signed types, wrap-around and the top bit for unsigned.
  if (std::is_signed<T>::value || std::is_floating_point<T>::value) {
    CHECK(f->fam_fetch_subtract(d, off, static_cast<T>(25)) == 19, "%s", name);
    expect_at<T>(f, d, off, static_cast<T>(-6), name);
    CHECK(f->fam_fetch_min(d, off, static_cast<T>(-100)) == static_cast<T>(-6), "%s", name);
    CHECK(f->fam_fetch_max(d, off, static_cast<T>(1)) == static_cast<T>(-100), "%s", name);
    expect_at<T>(f, d, off, 1, name);
    f->fam_min(d, off, static_cast<T>(-2));
    f->fam_quiet();
    expect_at<T>(f, d, off, static_cast<T>(-2), name);
  } else {
    const T top = std::numeric_limits<T>::max();
    CHECK(f->fam_fetch_max(d, off, top) == 19, "%s", name);
    expect_at<T>(f, d, off, top, name);
    CHECK(f->fam_fetch_add(d, off, static_cast<T>(2)) == top, "%s wrap", name);
    expect_at<T>(f, d, off, 1, name);
    f->fam_subtract(d, off, static_cast<T>(2));
    f->fam_quiet();
    expect_at<T>(f, d, off, top, name);
    f->fam_min(d, off, static_cast<T>(5));
    f->fam_quiet();
    expect_at<T>(f, d, off, 5, name);
  }
  expect_at<T>(f, d, off - sizeof(T), guard, "guard before");
  expect_at<T>(f, d, off + sizeof(T), guard, "guard after");
}

// Compare-and-swap of an integer type at OFF.
template <typename T> static void cas(fam *f, Fam_Descriptor *d, uint64_t off, const char *name) {
  f->fam_set(d, off, static_cast<T>(5));
  f->fam_quiet();
  CHECK(f->fam_compare_swap(d, off, static_cast<T>(5), static_cast<T>(6)) == 5, "%s cas", name);
  expect_at<T>(f, d, off, 6, name);
  CHECK(f->fam_compare_swap(d, off, static_cast<T>(5), static_cast<T>(7)) == 6,
        "%s cas that fails", name);
  expect_at<T>(f, d, off, 6, name);
}

// Bitwise and/or/xor of an unsigned type at OFF.
template <typename T> static void bits(fam *f, Fam_Descriptor *d, uint64_t off, const char *name) {
  const T hi = static_cast<T>(static_cast<T>(1) << (sizeof(T) * 8 - 1));
  f->fam_set(d, off, static_cast<T>(hi | 0xF0));
  f->fam_quiet();
  CHECK(f->fam_fetch_and(d, off, static_cast<T>(hi | 0x3C)) == static_cast<T>(hi | 0xF0),
        "%s fetch_and", name);
  expect_at<T>(f, d, off, static_cast<T>(hi | 0x30), name);
  CHECK(f->fam_fetch_or(d, off, static_cast<T>(0x03)) == static_cast<T>(hi | 0x30),
        "%s fetch_or", name);
  expect_at<T>(f, d, off, static_cast<T>(hi | 0x33), name);
  CHECK(f->fam_fetch_xor(d, off, static_cast<T>(hi | 0x11)) == static_cast<T>(hi | 0x33),
        "%s fetch_xor", name);
  expect_at<T>(f, d, off, static_cast<T>(0x22), name);
  f->fam_and(d, off, static_cast<T>(0x20));
  f->fam_quiet();
  expect_at<T>(f, d, off, static_cast<T>(0x20), name);
  f->fam_or(d, off, static_cast<T>(hi | 0x01));
  f->fam_quiet();
  expect_at<T>(f, d, off, static_cast<T>(hi | 0x21), name);
  f->fam_xor(d, off, static_cast<T>(0x21));
  f->fam_quiet();
  expect_at<T>(f, d, off, hi, name);
}

// A misaligned offset (INVALID) and one past the end (OUTOFRANGE) change nothing.
template <typename T> static void bad(fam *f, Fam_Descriptor *d, uint64_t off, const char *name) {
  printf("PE %d: atomics: %s: bad offsets\n", FT_PE, name);
  f->fam_set(d, off, static_cast<T>(42));
  f->fam_set(d, off + sizeof(T), static_cast<T>(43));
  f->fam_quiet();
  for (uint64_t mis = 1; mis < sizeof(T); mis += (sizeof(T) > 4 ? 3 : 1)) {
    uint64_t o = off + mis;
    EXPECT_FAM_ERROR(fetch<T>(f, d, o), FAM_ERR_INVALID);
    EXPECT_FAM_ERROR(f->fam_fetch_add(d, o, static_cast<T>(1)), FAM_ERR_INVALID);
    EXPECT_FAM_ERROR(f->fam_swap(d, o, static_cast<T>(1)), FAM_ERR_INVALID);
    // A misaligned offset fails in the call, as in OpenFAM.
    EXPECT_FAM_ERROR(f->fam_set(d, o, static_cast<T>(1)), FAM_ERR_INVALID);
    EXPECT_FAM_ERROR(f->fam_add(d, o, static_cast<T>(1)), FAM_ERR_INVALID);
    EXPECT_FAM_ERROR(f->fam_max(d, o, static_cast<T>(100)), FAM_ERR_INVALID);
  }
  EXPECT_FAM_ERROR(fetch<T>(f, d, SIZE), FAM_ERR_OUTOFRANGE);
  EXPECT_FAM_ERROR(f->fam_fetch_add(d, SIZE, static_cast<T>(1)), FAM_ERR_OUTOFRANGE);
  EXPECT_DEFERRED_ERROR(f, f->fam_set(d, SIZE, static_cast<T>(1)), FAM_ERR_OUTOFRANGE);
  EXPECT_DEFERRED_ERROR(f, f->fam_add(d, UINT64_MAX - sizeof(T) + 1, static_cast<T>(1)),
                        FAM_ERR_OUTOFRANGE);
  f->fam_quiet(); // nothing left to report
  expect_at<T>(f, d, off, 42, "after the refused atomics");
  expect_at<T>(f, d, off + sizeof(T), 43, "after the refused atomics (next)");
}

static void int128(fam *f, Fam_Descriptor *d, uint64_t off) {
  printf("PE %d: atomics: int128 at %" PRIu64 "\n", FT_PE, off);
  const int128_t a = (static_cast<int128_t>(0x0123456789abcdefLL) << 64) | 0x1122334455667788ULL;
  const int128_t b = -a;
  f->fam_set(d, off, a);
  f->fam_quiet();
  CHECK(f->fam_fetch_int128(d, off) == a, "int128 set/fetch");
  int128_t plain;
  f->fam_get_blocking(&plain, d, off, sizeof(plain));
  CHECK(plain == a, "int128 (get) differs");
  f->fam_set(d, off, b);
  f->fam_quiet();
  CHECK(f->fam_fetch_int128(d, off) == b, "int128 negative set/fetch");
  EXPECT_FAM_ERROR(f->fam_fetch_int128(d, off + 8), FAM_ERR_INVALID);
  EXPECT_FAM_ERROR(f->fam_set(d, off + 8, a), FAM_ERR_INVALID);
  CHECK(f->fam_fetch_int128(d, off) == b, "int128 after a misaligned set");
  int128_t old = f->fam_compare_swap(d, off, b, a);
  CHECK(old == b, "int128 compare_swap returned another value");
  CHECK(f->fam_fetch_int128(d, off) == a, "int128 compare_swap did not store");
  old = f->fam_compare_swap(d, off, b, static_cast<int128_t>(1));
  CHECK(old == a, "int128 failing compare_swap returned another value");
  CHECK(f->fam_fetch_int128(d, off) == a, "int128 failing compare_swap stored");
}

static void floats(fam *f, Fam_Descriptor *d, uint64_t off) {
  // Exact binary fractions: every result is exact.
  arith<float>(f, d, off, "float");
  arith<double>(f, d, off + 64, "double");
  f->fam_set(d, off, 1.5f);
  f->fam_quiet();
  CHECK(f->fam_fetch_add(d, off, 0.25f) == 1.5f, "float fetch_add 0.25");
  expect_at<float>(f, d, off, 1.75f, "float");
  f->fam_set(d, off + 64, 0.125);
  f->fam_add(d, off + 64, 0.5);
  f->fam_quiet();
  expect_at<double>(f, d, off + 64, 0.625, "double");
}

static void body(fam *f) {
  char rname[128];
  ft_unique(rname, sizeof(rname), prefix, "region");
  STEP("create region and item");
  Fam_Region_Attributes a = ft_attrs(NONE, VOLATILE, ENABLE);
  Fam_Region_Descriptor *r = f->fam_create_region(rname, 4 * SIZE, 0600, &a);
  Fam_Descriptor *d = f->fam_allocate("atomics", SIZE, 0600, r);

  STEP("integers");
  arith<int32_t>(f, d, 64, "int32");
  arith<int64_t>(f, d, 128, "int64");
  arith<uint32_t>(f, d, STRIPE - 4, "uint32"); // the guard after it is in the next stripe
  arith<uint64_t>(f, d, 2 * STRIPE, "uint64"); // the guard before it is in the previous one
  STEP("compare and swap");
  cas<int32_t>(f, d, 256, "int32");
  cas<int64_t>(f, d, 264, "int64");
  cas<uint32_t>(f, d, 272, "uint32");
  cas<uint64_t>(f, d, 280, "uint64");
  STEP("bitwise");
  bits<uint32_t>(f, d, 320, "uint32");
  bits<uint64_t>(f, d, STRIPE + 8, "uint64");
  STEP("float and double");
  floats(f, d, 512);
  STEP("int128");
  int128(f, d, 1024);
  STEP("bad offsets");
  bad<int32_t>(f, d, 2048, "int32");
  bad<int64_t>(f, d, 2048 + 64, "int64");
  bad<uint32_t>(f, d, 2048 + 128, "uint32");
  bad<uint64_t>(f, d, 2048 + 192, "uint64");
  bad<float>(f, d, 2048 + 256, "float");
  bad<double>(f, d, 2048 + 320, "double");

  STEP("clean up");
  f->fam_deallocate(d);
  delete d;
  f->fam_destroy_region(r);
  delete r;
}

int main(int argc, char **argv) {
  if (argc > 1)
    prefix = argv[1];
  return ft_main("atomics", body);
}
