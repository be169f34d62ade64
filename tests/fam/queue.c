/* Memory-side operations (the OpenFAM paper's fam_queue_operation / fam_aggregate_flush, a
 * unimem extension; C API). Every result is read back with fam_get.
 *   queue run [PREFIX]          an item of 1 MiB in a region interleaved over the lenders:
 *                               OP_SCATTER, OP_ADD_INDEXED (an element twice, and more than a
 *                               batch of 256 on one server, which goes before the flush),
 *                               OP_GATHER of 8- and 4-byte elements, all spread over the
 *                               servers; bad input fails at once and queues nothing
 *   queue owner REGION          creates REGION and item "q" with mode 0644 (others read
 *                               only), elements 0..N-1 = 1000 + i
 *   queue other REGION          another user: OP_ADD_INDEXED is queued, fam_aggregate_flush
 *                               says FAM_ERR_NOPERM; OP_GATHER works and sees nothing added
 *   queue check REGION          the owner again: nothing changed; destroys REGION */
#include "check.h"

#define SIZE (1024u * 1024u)
#define N 4096u /* 8-byte elements the owner/other/check roles use */

static c_fam *fam;

/* Element I (8 bytes) of item D, read with fam_get. */
static uint64_t get64(void *d, uint64_t i) {
  uint64_t v = 0;
  CHECK_OK(c_fam_get_blocking(fam, &v, d, i * 8, 8));
  return v;
}

/* Elements spread over the item: i * 4099 (a prime) modulo the element count. */
static uint64_t spread(uint64_t i, uint64_t count) { return (i * 4099u + 7) % count; }

static void run(const char *prefix) {
  char rn[128];
  ft_unique(rn, sizeof(rn), prefix, "r");
  Fam_Region_Attributes on = ft_attrs(NONE, VOLATILE, ENABLE);
  void *r = CHECK_PTR(c_fam_create_region(fam, rn, 4 * SIZE, 0600, &on));
  void *d = CHECK_PTR(c_fam_allocate_named(fam, "q", SIZE, 0600, r));
  Fam_Stat st;
  memset(&st, 0, sizeof(st));
  CHECK_OK(c_fam_stat_data(fam, d, &st));
  printf("PE %d: queue: item of %u bytes on %" PRIu64 " memory server(s)\n", FT_PE, SIZE,
         st.num_memservers);
  const uint64_t count = SIZE / 8;
  enum { M = 1000 };
  uint64_t *ix = ft_alloc(M * sizeof(uint64_t));
  uint64_t *vals = ft_alloc(M * sizeof(uint64_t));
  for (uint64_t i = 0; i < M; i++) {
    ix[i] = spread(i, count);
    vals[i] = 0x1000000000ull + i;
  }
  /* Scatter, then add i twice to each (two operations), and 300 adds of 1 to element 5. */
  CHECK_OK(c_fam_queue_operation(fam, OP_SCATTER, vals, d, M, ix, 8));
  uint64_t *adds = ft_alloc(M * sizeof(uint64_t));
  for (uint64_t i = 0; i < M; i++)
    adds[i] = i;
  CHECK_OK(c_fam_queue_operation(fam, OP_ADD_INDEXED, adds, d, M, ix, 8));
  CHECK_OK(c_fam_queue_operation(fam, OP_ADD_INDEXED, adds, d, M, ix, 8));
  uint64_t five[300], ones[300];
  for (int i = 0; i < 300; i++) {
    five[i] = 5;
    ones[i] = 1;
  }
  CHECK_OK(c_fam_queue_operation(fam, OP_ADD_INDEXED, ones, d, 300, five, 8));
  /* The values were taken when queued: the buffers may change before the flush. */
  memset(adds, 0, M * sizeof(uint64_t));
  CHECK_OK(c_fam_aggregate_flush(fam, d));
  for (uint64_t i = 0; i < M; i++) {
    /* spread() never hits element 5 for these i (i * 4099 + 2 is no multiple of 2^17). */
    uint64_t v = get64(d, ix[i]);
    uint64_t want = 0x1000000000ull + 3 * i;
    CHECK(v == want, "element %" PRIu64 ": %#" PRIx64 ", expected %#" PRIx64, ix[i], v, want);
  }
  CHECK(get64(d, 5) == 300, "element 5: %" PRIu64 ", expected 300", get64(d, 5));
  /* Gather of the same elements, 8 bytes, and of 4-byte elements (the low halves). */
  uint64_t *got = ft_alloc(M * sizeof(uint64_t));
  CHECK_OK(c_fam_queue_operation(fam, OP_GATHER, got, d, M, ix, 8));
  uint32_t *got4 = ft_alloc(M * sizeof(uint32_t));
  uint64_t *ix4 = ft_alloc(M * sizeof(uint64_t));
  for (uint64_t i = 0; i < M; i++)
    ix4[i] = 2 * ix[i]; /* little-endian: the low half of element ix[i] */
  CHECK_OK(c_fam_queue_operation(fam, OP_GATHER, got4, d, M, ix4, 4));
  CHECK_OK(c_fam_aggregate_flush(fam, d));
  for (uint64_t i = 0; i < M; i++) {
    uint64_t want = 0x1000000000ull + 3 * i;
    CHECK(got[i] == want, "gathered %" PRIu64 ": %#" PRIx64, i, got[i]);
    CHECK(got4[i] == (uint32_t)want, "gathered 4-byte %" PRIu64 ": %#x", i, got4[i]);
  }
  /* 4-byte adds wrap within their element: the high half stays. */
  uint32_t big = 0xffffffffu;
  uint64_t low5 = 10; /* the low half of element 5 */
  CHECK_OK(c_fam_queue_operation(fam, OP_ADD_INDEXED, &big, d, 1, &low5, 4));
  CHECK_OK(c_fam_aggregate_flush(fam, d));
  CHECK(get64(d, 5) == 299, "element 5 after a 32-bit add of -1: %" PRIu64, get64(d, 5));
  /* Bad input fails at once and queues nothing. */
  uint64_t past = count, one = 1, before = get64(d, 1);
  EXPECT_ERR(c_fam_queue_operation(fam, OP_SCATTER, &one, d, 1, &past, 8), FAM_ERR_OUTOFRANGE);
  EXPECT_ERR(c_fam_queue_operation(fam, OP_SCATTER, &one, d, 1, &one, 2), FAM_ERR_INVALID);
  EXPECT_ERR(c_fam_queue_operation(fam, OP_SCATTER, &one, d, 1, &one, 16), FAM_ERR_INVALID);
  CHECK_OK(c_fam_aggregate_flush(fam, d));
  CHECK(get64(d, 1) == before, "element 1 changed by refused operations: %" PRIu64,
        get64(d, 1));
  free(ix);
  free(vals);
  free(adds);
  free(got);
  free(got4);
  free(ix4);
  CHECK_OK(c_fam_deallocate(fam, d));
  CHECK_OK(c_fam_destroy_region(fam, r));
}

static void owner(const char *region) {
  Fam_Region_Attributes on = ft_attrs(NONE, VOLATILE, ENABLE);
  void *r = CHECK_PTR(c_fam_create_region(fam, region, 4 * SIZE, 0644, &on));
  void *d = CHECK_PTR(c_fam_allocate_named(fam, "q", N * 8, 0644, r));
  uint64_t *v = ft_alloc(N * 8);
  for (uint64_t i = 0; i < N; i++)
    v[i] = 1000 + i;
  CHECK_OK(c_fam_put_blocking(fam, v, d, 0, N * 8));
  free(v);
}

/* Elements 0, 7, ..., every 7th, of the other and check roles. */
static void other(const char *region) {
  void *d = CHECK_PTR(c_fam_lookup(fam, "q", region));
  enum { K = N / 7 };
  uint64_t ix[K], one[K];
  for (uint64_t i = 0; i < K; i++) {
    ix[i] = 7 * i;
    one[i] = 1;
  }
  /* Queued without complaint (the home decides), refused at the flush, nothing added. */
  CHECK_OK(c_fam_queue_operation(fam, OP_ADD_INDEXED, one, d, K, ix, 8));
  EXPECT_ERR(c_fam_aggregate_flush(fam, d), FAM_ERR_NOPERM);
  CHECK_OK(c_fam_aggregate_flush(fam, d));
  CHECK_OK(c_fam_queue_operation(fam, OP_SCATTER, one, d, 3, ix, 8));
  EXPECT_ERR(c_fam_aggregate_flush(fam, d), FAM_ERR_NOPERM);
  uint64_t got[K];
  CHECK_OK(c_fam_queue_operation(fam, OP_GATHER, got, d, K, ix, 8));
  CHECK_OK(c_fam_aggregate_flush(fam, d));
  for (uint64_t i = 0; i < K; i++)
    CHECK(got[i] == 1000 + 7 * i, "gathered element %" PRIu64 ": %" PRIu64, 7 * i, got[i]);
}

static void check(const char *region) {
  void *d = CHECK_PTR(c_fam_lookup(fam, "q", region));
  uint64_t *v = ft_alloc(N * 8);
  CHECK_OK(c_fam_get_blocking(fam, v, d, 0, N * 8));
  for (uint64_t i = 0; i < N; i++)
    CHECK(v[i] == 1000 + i, "element %" PRIu64 ": %" PRIu64 ", expected %" PRIu64, i, v[i],
          1000 + i);
  free(v);
  void *r = CHECK_PTR(c_fam_lookup_region(fam, region));
  CHECK_OK(c_fam_deallocate(fam, d));
  CHECK_OK(c_fam_destroy_region(fam, r));
}

int main(int argc, char **argv) {
  const char *role = argc > 1 ? argv[1] : "run";
  fam = ft_init();
  if (strcmp(role, "run") == 0) {
    run(argc > 2 ? argv[2] : "queue");
    ft_done(fam, "queue");
    return 0;
  }
  CHECK(argc > 2, "usage: queue run [PREFIX] | owner|other|check REGION");
  if (strcmp(role, "owner") == 0)
    owner(argv[2]);
  else if (strcmp(role, "other") == 0)
    other(argv[2]);
  else if (strcmp(role, "check") == 0)
    check(argv[2]);
  else
    CHECK(0, "unknown role %s", role);
  char name[64];
  snprintf(name, sizeof(name), "queue %s", role);
  ft_done(fam, name);
  return 0;
}
