/* Names survive the metadata service (famd) restarting (C API).
 *   persist create NAME   creates region NAME (interleaved) with a named item "kept" of
 *                         several stripes and an anonymous one, writes pattern 1 to "kept"
 *                         and pattern 2 to the anonymous item, prints the anonymous item's
 *                         global descriptor as "anon <regionId> <offset>"; keeps them
 *   persist check NAME [RID:OFF]
 *                         after famd restarted: region and item found by name with the same
 *                         size, mode and owner; pattern 1 read back; with RID:OFF the
 *                         anonymous item's pattern 2 through a descriptor built from it; a new
 *                         item can be allocated beside them (the restarted famd knows what is
 *                         taken: the old data are intact afterwards); destroys region NAME */
#include "check.h"

#define STRIPE (64u * 1024u)
#define SIZE (5 * STRIPE + 77)
#define ANON 3000u

static c_fam *fam;

static void expect_data(void *d, uint64_t n, uint64_t seed, const char *what) {
  uint8_t *buf = ft_alloc(n);
  memset(buf, 0, n);
  CHECK_OK(c_fam_get_blocking(fam, buf, d, 0, n));
  CHECK_PATTERN(buf, n, seed, 0, what);
  free(buf);
}

int main(int argc, char **argv) {
  CHECK(argc >= 3, "usage: persist create NAME | persist check NAME [RID:OFF]");
  const char *role = argv[1], *name = argv[2];
  fam = ft_init();
  if (strcmp(role, "create") == 0) {
    Fam_Region_Attributes a = ft_attrs(NONE, VOLATILE, ENABLE);
    void *r = CHECK_PTR(c_fam_create_region(fam, name, 4 * SIZE, 0640, &a));
    void *d = CHECK_PTR(c_fam_allocate_named(fam, "kept", SIZE, 0604, r));
    void *anon = CHECK_PTR(c_fam_allocate(fam, ANON, 0600, r));
    uint8_t *buf = ft_alloc(SIZE);
    ft_fill(buf, SIZE, 1, 0);
    CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, SIZE));
    ft_fill(buf, ANON, 2, 0);
    CHECK_OK(c_fam_put_blocking(fam, buf, anon, 0, ANON));
    Fam_Global_Descriptor g = unimem_fam_desc_global(anon);
    printf("anon %" PRIu64 " %" PRIu64 "\n", g.regionId, g.offset);
    unimem_fam_desc_release(anon);
    unimem_fam_desc_release(d);
    unimem_fam_desc_release(r);
    free(buf);
  } else if (strcmp(role, "check") == 0) {
    void *r = CHECK_PTR(c_fam_lookup_region(fam, name));
    Fam_Stat st;
    CHECK_OK(c_fam_stat_region(fam, r, &st));
    CHECK(st.size == 4 * SIZE || (st.size > 4 * SIZE && st.size < 4 * SIZE + 4 * 4096),
          "region size %" PRIu64, st.size);
    CHECK(st.perm == 0640, "region mode %o", (unsigned)st.perm);
    CHECK(st.uid == getuid(), "region owner %u", st.uid);
    CHECK(st.region_attributes.interleaveEnable == ENABLE, "interleave %d",
          (int)st.region_attributes.interleaveEnable);
    void *d = CHECK_PTR(c_fam_lookup(fam, "kept", name));
    CHECK_OK(c_fam_stat_data(fam, d, &st));
    CHECK(st.size == SIZE && st.perm == 0604 && st.uid == getuid(),
          "item: size %" PRIu64 ", mode %o, owner %u", st.size, (unsigned)st.perm, st.uid);
    expect_data(d, SIZE, 1, "the named item after the restart");
    void *anon = NULL;
    if (argc > 3) {
      Fam_Global_Descriptor g;
      CHECK(sscanf(argv[3], "%" SCNu64 ":%" SCNu64, &g.regionId, &g.offset) == 2,
            "RID:OFF, not %s", argv[3]);
      CHECK_OK(unimem_fam_desc_new(UNIMEM_FAM_DESC_ITEM, &g, 0, &anon));
      expect_data(anon, ANON, 2, "the anonymous item after the restart");
    }
    /* New allocations do not land on the old items. */
    void *fresh = CHECK_PTR(c_fam_allocate_named(fam, "fresh", 2 * SIZE, 0600, r));
    uint8_t *buf = ft_alloc(2 * SIZE);
    ft_fill(buf, 2 * SIZE, 3, 0);
    CHECK_OK(c_fam_put_blocking(fam, buf, fresh, 0, 2 * SIZE));
    expect_data(d, SIZE, 1, "the named item after a new allocation");
    if (anon)
      expect_data(anon, ANON, 2, "the anonymous item after a new allocation");
    EXPECT_NULL(c_fam_allocate_named(fam, "kept", 64, 0600, r), FAM_ERR_ALREADYEXIST);
    unimem_fam_desc_release(fresh);
    unimem_fam_desc_release(anon);
    unimem_fam_desc_release(d);
    CHECK_OK(c_fam_destroy_region(fam, r));
    unimem_fam_desc_release(r);
    EXPECT_NULL(c_fam_lookup_region(fam, name), FAM_ERR_NOTFOUND);
    free(buf);
  } else {
    CHECK(0, "unknown role %s", role);
  }
  char what[64];
  snprintf(what, sizeof(what), "persist %s", role);
  ft_done(fam, what);
  return 0;
}
