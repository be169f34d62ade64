/* Regions through the C API: create, lookup, stat, resize, change permissions, destroy;
 * each region attribute (redundancy, memory type, interleaving); and the errors, each of
 * which must change nothing: a taken name (ALREADYEXIST), an unknown one (NOTFOUND), size 0
 * and mode bits beyond 0777 (INVALID), a name of 256 bytes (NAME_TOO_LONG; 255 is fine),
 * shrinking below what the items take (OUTOFRANGE), attributes unimem does not provide
 * (RAID: UNIMPL, persistent memory: NOT_CREATED), destroying twice (NOTFOUND).
 *   regions [PREFIX]   names its regions PREFIX-... (default "regions"), plus pid and time */
#include "check.h"

#define MIB (1024u * 1024u)

static c_fam *fam;

static void stat_region(void *r, Fam_Stat *st) {
  memset(st, 0, sizeof(*st));
  CHECK_OK(c_fam_stat_region(fam, r, st));
}

/* Region R is named NAME, SIZE bytes, mode MODE, owned by this process's uid and gid. */
static void expect_region(void *r, const char *name, uint64_t size, mode_t mode) {
  Fam_Stat st;
  stat_region(r, &st);
  CHECK(st.size == size, "%s: size %" PRIu64 ", expected %" PRIu64, name, st.size, size);
  CHECK(st.perm == mode, "%s: perm %o, expected %o", name, (unsigned)st.perm, (unsigned)mode);
  CHECK(st.name && strcmp(st.name, name) == 0, "name %s, expected %s", st.name, name);
  CHECK(st.uid == getuid() && st.gid == getgid(), "%s: owner %u:%u, expected %u:%u", name,
        st.uid, st.gid, (unsigned)getuid(), (unsigned)getgid());
  CHECK(st.num_memservers >= 1 && st.num_memservers <= 256, "%s: %" PRIu64 " memory servers",
        name, st.num_memservers);
  CHECK(unimem_fam_desc_get(r, UNIMEM_FAM_ATTR_KIND) == UNIMEM_FAM_DESC_REGION, "kind");
  CHECK(ft_status(r) != DESC_INVALID, "%s: descriptor invalid", name);
}

/* A region created with attributes A reports them in fam_stat (a default may be reported
 * as what it resolved to); one that cannot be made fails with CODE and leaves no region. */
static void attrs_case(const char *prefix, const char *what, Fam_Region_Attributes a, int code) {
  char name[128];
  ft_unique(name, sizeof(name), prefix, what);
  void *r = c_fam_create_region(fam, name, MIB, 0600, &a);
  if (code) {
    CHECK(r == NULL, "%s: created, expected %s", what, ft_err_name(code));
    CHECK(c_fam_error() == code, "%s: failed with %s (%s), expected %s", what,
          ft_err_name(c_fam_error()), c_fam_error_msg(), ft_err_name(code));
    EXPECT_NULL(c_fam_lookup_region(fam, name), FAM_ERR_NOTFOUND);
    return;
  }
  CHECK(r != NULL, "%s: %s: %s", what, ft_err_name(c_fam_error()), c_fam_error_msg());
  expect_region(r, name, MIB, 0600);
  Fam_Stat st;
  stat_region(r, &st);
  Fam_Region_Attributes got = st.region_attributes;
  CHECK(got.redundancyLevel == a.redundancyLevel ||
            (a.redundancyLevel == REDUNDANCY_LEVEL_DEFAULT && got.redundancyLevel == NONE),
        "%s: redundancy %d", what, (int)got.redundancyLevel);
  CHECK(got.memoryType == a.memoryType ||
            (a.memoryType == MEMORY_TYPE_DEFAULT && got.memoryType == VOLATILE),
        "%s: memory type %d", what, (int)got.memoryType);
  CHECK(got.interleaveEnable == a.interleaveEnable ||
            (a.interleaveEnable == INTERLEAVE_DEFAULT &&
             (got.interleaveEnable == ENABLE || got.interleaveEnable == DISABLE)),
        "%s: interleave %d", what, (int)got.interleaveEnable);
  /* The descriptor's own view agrees. */
  CHECK(unimem_fam_desc_get(r, UNIMEM_FAM_ATTR_INTERLEAVE_ENABLE) ==
                (uint64_t)got.interleaveEnable ||
            unimem_fam_desc_get(r, UNIMEM_FAM_ATTR_INTERLEAVE_ENABLE) == 0,
        "%s: descriptor's interleave %" PRIu64, what,
        unimem_fam_desc_get(r, UNIMEM_FAM_ATTR_INTERLEAVE_ENABLE));
  CHECK_OK(c_fam_destroy_region(fam, r));
  unimem_fam_desc_release(r);
}

int main(int argc, char **argv) {
  const char *prefix = argc > 1 ? argv[1] : "regions";
  char name[128], other[128];
  fam = ft_init();

  /* Create, lookup, stat. */
  ft_unique(name, sizeof(name), prefix, "main");
  void *r = CHECK_PTR(c_fam_create_region(fam, name, MIB, 0600, NULL));
  expect_region(r, name, MIB, 0600);
  void *again = CHECK_PTR(c_fam_lookup_region(fam, name));
  CHECK(again != r, "lookup returned the creator's descriptor (each call returns a new one)");
  expect_region(again, name, MIB, 0600);
  Fam_Global_Descriptor g1 = unimem_fam_desc_global(r), g2 = unimem_fam_desc_global(again);
  CHECK(g1.regionId == g2.regionId, "region ids %" PRIu64 " and %" PRIu64, g1.regionId,
        g2.regionId);
  unimem_fam_desc_release(again);

  /* A size that is not a whole number of pages is rounded up, never down. */
  ft_unique(other, sizeof(other), prefix, "odd");
  void *odd = CHECK_PTR(c_fam_create_region(fam, other, MIB + 1, 0644, NULL));
  Fam_Stat st;
  stat_region(odd, &st);
  CHECK(st.size >= MIB + 1, "size %" PRIu64 " for %u bytes", st.size, MIB + 1);
  CHECK_OK(c_fam_destroy_region(fam, odd));
  unimem_fam_desc_release(odd);

  /* Errors that change nothing. */
  EXPECT_NULL(c_fam_create_region(fam, name, 2 * MIB, 0644, NULL), FAM_ERR_ALREADYEXIST);
  expect_region(r, name, MIB, 0600);
  ft_unique(other, sizeof(other), prefix, "missing");
  EXPECT_NULL(c_fam_lookup_region(fam, other), FAM_ERR_NOTFOUND);
  EXPECT_NULL(c_fam_create_region(fam, other, 0, 0600, NULL), FAM_ERR_INVALID);
  EXPECT_NULL(c_fam_lookup_region(fam, other), FAM_ERR_NOTFOUND);
  EXPECT_NULL(c_fam_create_region(fam, other, MIB, 04777, NULL), FAM_ERR_INVALID);
  EXPECT_NULL(c_fam_lookup_region(fam, other), FAM_ERR_NOTFOUND);
  EXPECT_NULL(c_fam_create_region(fam, "", MIB, 0600, NULL), FAM_ERR_INVALID);
  char longname[300];
  memset(longname, 'x', sizeof(longname));
  longname[256] = '\0';
  EXPECT_NULL(c_fam_create_region(fam, longname, MIB, 0600, NULL), FAM_ERR_NAME_TOO_LONG);
  /* 255 bytes is allowed: unique, so that a failed earlier run does not collide. */
  ft_unique(longname, sizeof(longname), prefix, "long");
  size_t l = strlen(longname);
  memset(longname + l, 'y', 255 - l);
  longname[255] = '\0';
  void *lr = CHECK_PTR(c_fam_create_region(fam, longname, MIB, 0600, NULL));
  expect_region(lr, longname, MIB, 0600);
  CHECK_OK(c_fam_destroy_region(fam, lr));
  unimem_fam_desc_release(lr);

  /* Resize: larger, smaller, not below what the items take, not to 0. */
  CHECK_OK(c_fam_resize_region(fam, r, 4 * MIB));
  expect_region(r, name, 4 * MIB, 0600);
  void *item = CHECK_PTR(c_fam_allocate_named(fam, "big", 2 * MIB, 0600, r));
  EXPECT_ERR(c_fam_resize_region(fam, r, MIB), FAM_ERR_OUTOFRANGE);
  expect_region(r, name, 4 * MIB, 0600);
  EXPECT_ERR(c_fam_resize_region(fam, r, 0), FAM_ERR_INVALID);
  expect_region(r, name, 4 * MIB, 0600);
  CHECK_OK(c_fam_resize_region(fam, r, 3 * MIB));
  expect_region(r, name, 3 * MIB, 0600);
  /* Data survives a resize. */
  uint8_t buf[256];
  ft_fill(buf, sizeof(buf), 7, 1000);
  CHECK_OK(c_fam_put_blocking(fam, buf, item, 1000, sizeof(buf)));
  CHECK_OK(c_fam_resize_region(fam, r, 5 * MIB));
  memset(buf, 0, sizeof(buf));
  CHECK_OK(c_fam_get_blocking(fam, buf, item, 1000, sizeof(buf)));
  CHECK_PATTERN(buf, sizeof(buf), 7, 1000, "item after resize");
  CHECK_OK(c_fam_deallocate(fam, item));
  unimem_fam_desc_release(item);

  /* Change permissions; a bad mode changes nothing. */
  CHECK_OK(c_fam_change_permissions_region(fam, r, 0640));
  expect_region(r, name, 5 * MIB, 0640);
  again = CHECK_PTR(c_fam_lookup_region(fam, name));
  expect_region(again, name, 5 * MIB, 0640);
  unimem_fam_desc_release(again);
  EXPECT_ERR(c_fam_change_permissions_region(fam, r, 01640), FAM_ERR_INVALID);
  expect_region(r, name, 5 * MIB, 0640);
  CHECK_OK(c_fam_change_permissions_region(fam, r, 0600));

  /* Every attribute. */
  attrs_case(prefix, "defaults", ft_attrs(REDUNDANCY_LEVEL_DEFAULT, MEMORY_TYPE_DEFAULT,
                                          INTERLEAVE_DEFAULT), 0);
  attrs_case(prefix, "none", ft_attrs(NONE, MEMORY_TYPE_DEFAULT, INTERLEAVE_DEFAULT), 0);
  attrs_case(prefix, "raid1", ft_attrs(RAID1, MEMORY_TYPE_DEFAULT, INTERLEAVE_DEFAULT),
             FAM_ERR_UNIMPL);
  attrs_case(prefix, "raid5", ft_attrs(RAID5, MEMORY_TYPE_DEFAULT, INTERLEAVE_DEFAULT),
             FAM_ERR_UNIMPL);
  attrs_case(prefix, "volatile", ft_attrs(NONE, VOLATILE, INTERLEAVE_DEFAULT), 0);
  attrs_case(prefix, "persistent", ft_attrs(NONE, PERSISTENT, INTERLEAVE_DEFAULT),
             FAM_ERR_NOT_CREATED);
  attrs_case(prefix, "interleaved", ft_attrs(NONE, VOLATILE, ENABLE), 0);
  attrs_case(prefix, "not-interleaved", ft_attrs(NONE, VOLATILE, DISABLE), 0);

  /* Destroy: the descriptor becomes invalid, the name free; twice is NOTFOUND. */
  CHECK_OK(c_fam_destroy_region(fam, r));
  CHECK(ft_status(r) == DESC_INVALID, "status %d after destroy", ft_status(r));
  EXPECT_NULL(c_fam_lookup_region(fam, name), FAM_ERR_NOTFOUND);
  EXPECT_ERR(c_fam_destroy_region(fam, r), FAM_ERR_NOTFOUND);
  memset(&st, 0, sizeof(st));
  EXPECT_ERR(c_fam_stat_region(fam, r, &st), FAM_ERR_NOTFOUND);
  EXPECT_NULL(c_fam_lookup(fam, "big", name), FAM_ERR_NOTFOUND);
  unimem_fam_desc_release(r);
  /* The name can be used again. */
  r = CHECK_PTR(c_fam_create_region(fam, name, MIB, 0600, NULL));
  expect_region(r, name, MIB, 0600);
  CHECK_OK(c_fam_destroy_region(fam, r));
  unimem_fam_desc_release(r);

  ft_done(fam, "regions");
  return 0;
}
