/* Shared by the OpenFAM test programs (C, and C++ through check.hpp). A failed check names
 * the PE, the place and the values, and exits 1; a program that gets to its end prints
 * "PE <n>: <name> ok". Error conventions (userspace/fam/include/ABI.md): a C function
 * returning int gives 0 or minus a Fam_Error code, one returning a pointer gives NULL, and
 * either way c_fam_error() / c_fam_error_msg() then say what failed. */
#ifndef FAM_TEST_CHECK_H
#define FAM_TEST_CHECK_H
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fam/fam_c.h>
#include <fam/fam_abi.h>

#ifndef __cplusplus
/* OpenFAM's Fam_Error codes (fam_exception.h, C++ only): the C API returns minus these. */
#define FAM_NO_ERROR 0
#define FAM_ERR_UNKNOWN 1
#define FAM_ERR_NOPERM 2
#define FAM_ERR_TIMEOUT 3
#define FAM_ERR_INVALID 4
#define FAM_ERR_NOT_CREATED 7
#define FAM_ERR_NOTFOUND 8
#define FAM_ERR_ALREADYEXIST 9
#define FAM_ERR_OUTOFRANGE 13
#define FAM_ERR_NO_SPACE 14
#define FAM_ERR_NULLPTR 15
#define FAM_ERR_UNIMPL 16
#define FAM_ERR_RESOURCE 17
#define FAM_ERR_INVALIDOP 18
#define FAM_ERR_NAME_TOO_LONG 23
#endif

/* The group every program joins. */
#define FT_GROUP "default"

/* This PE's id for the messages (-1 until fam_initialize told it). */
static inline int *ft_pe_ptr(void) {
  static int pe = -1;
  return &pe;
}
#define FT_PE (*ft_pe_ptr())

/* Name of a Fam_Error code, for messages. */
static inline const char *ft_err_name(int code) {
  static const char *const names[] = {
      "FAM_NO_ERROR", "FAM_ERR_UNKNOWN", "FAM_ERR_NOPERM", "FAM_ERR_TIMEOUT",
      "FAM_ERR_INVALID", "FAM_ERR_LIBFABRIC", "FAM_ERR_SHM", "FAM_ERR_NOT_CREATED",
      "FAM_ERR_NOTFOUND", "FAM_ERR_ALREADYEXIST", "FAM_ERR_ALLOCATOR", "FAM_ERR_RPC",
      "FAM_ERR_PMI", "FAM_ERR_OUTOFRANGE", "FAM_ERR_NO_SPACE", "FAM_ERR_NULLPTR",
      "FAM_ERR_UNIMPL", "FAM_ERR_RESOURCE", "FAM_ERR_INVALIDOP", "FAM_ERR_RPC_CLIENT_NOTFOUND",
      "FAM_ERR_MEMSERV_LIST_EMPTY", "FAM_ERR_METADATA", "FAM_ERR_MEMORY",
      "FAM_ERR_NAME_TOO_LONG", "FAM_ERR_ATL_QUEUE_FULL", "FAM_ERR_ATL_QUEUE_INSERT",
      "FAM_ERR_ATL_NOT_ENABLED", "FAM_ERR_ATL", "FAM_BACKUP_NOT_CREATED",
      "FAM_BACKUP_NOTFOUND", "FAM_BACKUP_INFO_NOTFOUND", "FAM_ERR_NOT_PWR_TWO"};
  if (code < 0)
    code = -code;
  return code < (int)(sizeof(names) / sizeof(names[0])) ? names[code] : "(not a Fam_Error)";
}

#define CHECK(cond, ...)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "FAIL PE %d %s:%d: %s: ", FT_PE, __FILE__, __LINE__, #cond);         \
      fprintf(stderr, __VA_ARGS__);                                                        \
      fprintf(stderr, "\n");                                                               \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

/* EXPR (an int result of the C API) is 0. */
#define CHECK_OK(expr)                                                                     \
  do {                                                                                     \
    int ft_rc_ = (expr);                                                                   \
    CHECK(ft_rc_ == 0, "returned %d (%s): %s", ft_rc_, ft_err_name(ft_rc_),                \
          c_fam_error_msg());                                                              \
  } while (0)

/* EXPR (an int result of the C API) is -CODE, and c_fam_error() says CODE. */
#define EXPECT_ERR(expr, code)                                                             \
  do {                                                                                     \
    int ft_rc_ = (expr);                                                                   \
    CHECK(ft_rc_ == -(code), "returned %d (%s), expected -%d (%s)", ft_rc_,                \
          ft_rc_ ? ft_err_name(ft_rc_) : "success", (int)(code), ft_err_name(code));       \
    CHECK(c_fam_error() == (code), "c_fam_error() %d (%s) after %s", c_fam_error(),        \
          ft_err_name(c_fam_error()), ft_err_name(code));                                  \
  } while (0)

/* EXPR (a pointer result of the C API) is NULL with c_fam_error() CODE. */
#define EXPECT_NULL(expr, code)                                                            \
  do {                                                                                     \
    const void *ft_p_ = (expr);                                                            \
    CHECK(ft_p_ == NULL, "succeeded, expected %s", ft_err_name(code));                     \
    CHECK(c_fam_error() == (code), "failed with %d (%s: %s), expected %s", c_fam_error(), \
          ft_err_name(c_fam_error()), c_fam_error_msg(), ft_err_name(code));              \
  } while (0)

/* P, a pointer result of the C API, with a failure's code and message if it is NULL. */
static inline void *ft_ptr(const void *p, const char *what, const char *file, int line) {
  if (p == NULL) {
    fprintf(stderr, "FAIL PE %d %s:%d: %s returned NULL: %d (%s): %s\n", FT_PE, file, line,
            what, c_fam_error(), ft_err_name(c_fam_error()), c_fam_error_msg());
    exit(1);
  }
  return (void *)p;
}
#define CHECK_PTR(expr) ft_ptr((expr), #expr, __FILE__, __LINE__)

/* A name no earlier run used: PREFIX-WHAT-<pid>-<nanoseconds>, in BUF of LEN bytes. */
static inline void ft_unique(char *buf, size_t len, const char *prefix, const char *what) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(buf, len, "%s-%s-%ld-%lx", prefix, what, (long)getpid(),
           (unsigned long)(ts.tv_sec * 1000000000L + ts.tv_nsec));
}

/* The byte the pattern SEED has at byte OFF of an item: any range of it can be checked. */
static inline uint8_t ft_pat(uint64_t seed, uint64_t off) {
  uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull ^ (seed * 0xBF58476D1CE4E5B9ull);
  x ^= x >> 29;
  return (uint8_t)(x ^ (x >> 41));
}
/* BUF[0..N) = pattern SEED from item offset OFF. */
static inline void ft_fill(void *buf, size_t n, uint64_t seed, uint64_t off) {
  uint8_t *b = (uint8_t *)buf;
  for (size_t i = 0; i < n; i++)
    b[i] = ft_pat(seed, off + i);
}
/* Offset in BUF of the first byte that is not pattern SEED from item offset OFF, or -1. */
static inline long ft_mismatch(const void *buf, size_t n, uint64_t seed, uint64_t off) {
  const uint8_t *b = (const uint8_t *)buf;
  for (size_t i = 0; i < n; i++)
    if (b[i] != ft_pat(seed, off + i))
      return (long)i;
  return -1;
}
/* BUF[0..N) holds pattern SEED from item offset OFF; WHAT names it in the failure. */
#define CHECK_PATTERN(buf, n, seed, off, what)                                             \
  do {                                                                                     \
    long ft_at_ = ft_mismatch((buf), (n), (seed), (off));                                  \
    CHECK(ft_at_ < 0, "%s: byte %" PRIu64 " is 0x%02x, expected 0x%02x (pattern %d)",      \
          (what), (uint64_t)(off) + (uint64_t)ft_at_, ((const uint8_t *)(buf))[ft_at_],    \
          ft_pat((seed), (uint64_t)(off) + (uint64_t)ft_at_), (int)(seed));                \
  } while (0)

/* A malloc()ed buffer of N bytes (fails the test if there is no memory). */
static inline void *ft_alloc(size_t n) {
  void *p = malloc(n ? n : 1);
  CHECK(p != NULL, "malloc(%zu)", n);
  return p;
}

/* An option's value as an int (PE_ID, PE_COUNT): the library's malloc()ed copy, freed. */
static inline int ft_int_option(c_fam *fam, const char *name) {
  const int *v = (const int *)ft_ptr(c_fam_get_option(fam, name), name, __FILE__, __LINE__);
  int r = *v;
  free((void *)v);
  return r;
}

/* A new, initialised instance (group FT_GROUP, options from the configuration: NULL);
 * sets FT_PE from the PE_ID option. */
static inline c_fam *ft_init(void) {
  c_fam *fam = (c_fam *)CHECK_PTR(c_fam_create());
  CHECK_OK(c_fam_initialize(fam, FT_GROUP, NULL));
  FT_PE = ft_int_option(fam, "PE_ID");
  return fam;
}
/* Finalizes and frees FAM, then prints "PE <n>: NAME ok". */
static inline void ft_done(c_fam *fam, const char *name) {
  CHECK_OK(c_fam_finalize(fam, FT_GROUP));
  c_fam_delete(fam);
  printf("PE %d: %s ok\n", FT_PE, name);
  fflush(stdout);
}

/* Region attributes: redundancy, memory type, interleaving (the others default). */
static inline Fam_Region_Attributes ft_attrs(Fam_Redundancy_Level r, Fam_Memory_Type m,
                                             Fam_Interleave_Enable i) {
  Fam_Region_Attributes a;
  memset(&a, 0, sizeof(a));
  a.redundancyLevel = r;
  a.memoryType = m;
  a.interleaveEnable = i;
  return a;
}

/* Status of a descriptor (a Fam_Descriptor_Status). */
static inline int ft_status(const void *desc) {
  return (int)unimem_fam_desc_get(desc, UNIMEM_FAM_ATTR_STATUS);
}

#endif
