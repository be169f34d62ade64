/* Interleaving over the cluster's lenders (C API): an item of several MiB in a region with
 * interleaving enabled spans every lender (num_memservers of fam_stat, and the descriptor's
 * used-server count, are LENDERS; the server ids distinct), one of at most a stripe spans one;
 * in a region with interleaving disabled a large item spans one. A pattern written over each
 * whole item, and in pieces of odd sizes at odd offsets, reads back.
 *   interleave [LENDERS [PREFIX]]   LENDERS: the lenders famd was given (default 3) */
#include "check.h"

#define MIB (1024u * 1024u)
#define SIZE (6 * MIB + 12345)

static c_fam *fam;

/* Item D: fam_stat and the descriptor say it spans SERVERS memory servers, distinct. */
static void expect_servers(void *d, uint64_t servers, const char *what) {
  Fam_Stat st;
  memset(&st, 0, sizeof(st));
  CHECK_OK(c_fam_stat_data(fam, d, &st));
  printf("PE %d: interleave: %s: %" PRIu64 " memory server(s), interleave size %" PRIu64 "\n",
         FT_PE, what, st.num_memservers, st.interleaveSize);
  CHECK(st.num_memservers == servers, "%s: %" PRIu64 " memory servers, expected %" PRIu64,
        what, st.num_memservers, servers);
  for (uint64_t i = 0; i < st.num_memservers; i++)
    for (uint64_t j = 0; j < i; j++)
      CHECK(st.memory_servers[i] != st.memory_servers[j], "%s: server %" PRIu64 " twice",
            what, st.memory_servers[i]);
  uint64_t used = unimem_fam_desc_get(d, UNIMEM_FAM_ATTR_USED_MEMSRV_CNT);
  CHECK(used == servers, "%s: descriptor's used server count %" PRIu64, what, used);
  if (servers > 1)
    CHECK(st.interleaveSize > 0 && (st.interleaveSize & (st.interleaveSize - 1)) == 0,
          "%s: interleave size %" PRIu64, what, st.interleaveSize);
}

/* Whole-item and piecewise writes of item D (N bytes) read back. */
static void roundtrip(void *d, uint64_t n) {
  uint8_t *buf = ft_alloc(n);
  ft_fill(buf, n, 1, 0);
  CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, n));
  memset(buf, 0, n);
  CHECK_OK(c_fam_get_blocking(fam, buf, d, 0, n));
  CHECK_PATTERN(buf, n, 1, 0, "whole item");
  /* Pieces of a prime size from odd offsets, alternately blocking and not. */
  uint64_t piece = 40009;
  for (uint64_t off = 7, i = 0; off < n; off += piece, i++) {
    uint64_t len = off + piece <= n ? piece : n - off;
    ft_fill(buf + off, len, 2, off);
    if (i % 2)
      CHECK_OK(c_fam_put_blocking(fam, buf + off, d, off, len));
    else
      CHECK_OK(c_fam_put_nonblocking(fam, buf + off, d, off, len));
  }
  CHECK_OK(c_fam_quiet(fam));
  memset(buf, 0, n);
  CHECK_OK(c_fam_get_nonblocking(fam, buf, d, 0, n));
  CHECK_OK(c_fam_quiet(fam));
  CHECK_PATTERN(buf, 7, 1, 0, "before the pieces");
  CHECK_PATTERN(buf + 7, n - 7, 2, 7, "the pieces");
  free(buf);
}

int main(int argc, char **argv) {
  uint64_t lenders = argc > 1 ? strtoull(argv[1], NULL, 0) : 3;
  const char *prefix = argc > 2 ? argv[2] : "interleave";
  char n1[128], n2[128];
  fam = ft_init();
  CHECK(lenders >= 1, "LENDERS %" PRIu64, lenders);
  ft_unique(n1, sizeof(n1), prefix, "on");
  ft_unique(n2, sizeof(n2), prefix, "off");
  Fam_Region_Attributes on = ft_attrs(NONE, VOLATILE, ENABLE);
  Fam_Region_Attributes off = ft_attrs(NONE, VOLATILE, DISABLE);
  void *r1 = CHECK_PTR(c_fam_create_region(fam, n1, 4 * SIZE, 0600, &on));
  void *r2 = CHECK_PTR(c_fam_create_region(fam, n2, 2 * SIZE, 0600, &off));
  Fam_Stat st;
  CHECK_OK(c_fam_stat_region(fam, r1, &st));
  CHECK(st.region_attributes.interleaveEnable == ENABLE, "region 1 interleave %d",
        (int)st.region_attributes.interleaveEnable);
  CHECK(st.num_memservers == lenders, "region 1 has %" PRIu64 " memory servers, expected %" PRIu64,
        st.num_memservers, lenders);

  void *big = CHECK_PTR(c_fam_allocate_named(fam, "big", SIZE, 0600, r1));
  expect_servers(big, lenders, "large interleaved item");
  roundtrip(big, SIZE);
  void *small = CHECK_PTR(c_fam_allocate_named(fam, "small", 4096, 0600, r1));
  expect_servers(small, 1, "one-page item of an interleaved region");
  roundtrip(small, 4096);
  /* Consecutive items start on different lenders (OpenFAM leaves placement to the
   * implementation; unimem deals them round-robin): several small items use them all. */
  uint64_t seen[256], nseen = 0;
  void *items[8];
  for (int i = 0; i < 8; i++) {
    items[i] = CHECK_PTR(c_fam_allocate(fam, 4096, 0600, r1));
    CHECK_OK(c_fam_stat_data(fam, items[i], &st));
    uint64_t s = st.memory_servers[0], k;
    for (k = 0; k < nseen && seen[k] != s; k++)
      ;
    if (k == nseen && nseen < 256)
      seen[nseen++] = s;
  }
  CHECK(nseen == lenders, "8 small items on %" PRIu64 " lenders, expected %" PRIu64, nseen,
        lenders);
  for (int i = 0; i < 8; i++) {
    CHECK_OK(c_fam_deallocate(fam, items[i]));
    unimem_fam_desc_release(items[i]);
  }

  void *flat = CHECK_PTR(c_fam_allocate_named(fam, "flat", SIZE, 0600, r2));
  expect_servers(flat, 1, "large item of a region without interleaving");
  roundtrip(flat, SIZE);
  /* Between the two layouts: a copy reads back the same. */
  void *w = CHECK_PTR(c_fam_copy(fam, big, 0, flat, 0, SIZE));
  CHECK_OK(c_fam_copy_wait(fam, w));
  uint8_t *buf = ft_alloc(SIZE);
  CHECK_OK(c_fam_get_blocking(fam, buf, flat, 0, SIZE));
  CHECK_PATTERN(buf, 7, 1, 0, "copied, start");
  CHECK_PATTERN(buf + 7, SIZE - 7, 2, 7, "copied");
  free(buf);

  void *all[] = {big, small, flat};
  for (int i = 0; i < 3; i++) {
    CHECK_OK(c_fam_deallocate(fam, all[i]));
    unimem_fam_desc_release(all[i]);
  }
  CHECK_OK(c_fam_destroy_region(fam, r1));
  CHECK_OK(c_fam_destroy_region(fam, r2));
  unimem_fam_desc_release(r1);
  unimem_fam_desc_release(r2);
  ft_done(fam, "interleave");
  return 0;
}
