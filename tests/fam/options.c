/* Initialisation and options through the C API: fam_initialize with NULL options and with
 * an explicit Fam_Options; fam_list_options (NULL-terminated, one malloc block, has
 * VERSION, DEFAULT_REGION_NAME, PE_ID, PE_COUNT, LOC_BUF_SIZE); fam_get_option of every
 * listed option, PE_ID and PE_COUNT as ints (0 <= PE_ID < PE_COUNT), an unknown option
 * (NULL, INVALID); the default region (Fam_Options.defaultRegionName): fam_allocate with no
 * region puts the item there; finalize then initialize again on one instance works;
 * initialize twice is refused (INVALIDOP), finalize twice does nothing (OpenFAM finalises after a
 * failed initialize); every call
 * before initialize or after finalize is refused (INVALIDOP).
 *   options [PREFIX]   names its region PREFIX-... (default "options"), plus pid and time */
#include "check.h"

/* NAME is in LIST. */
static int listed(const char **list, const char *name) {
  for (int i = 0; list[i]; i++)
    if (strcmp(list[i], name) == 0)
      return 1;
  return 0;
}

static void check_options(c_fam *fam) {
  const char **list = CHECK_PTR(c_fam_list_options(fam));
  int n = 0;
  while (list[n])
    n++;
  CHECK(n >= 5 && n < 100, "%d options", n);
  const char *required[] = {"VERSION", "DEFAULT_REGION_NAME", "PE_ID", "PE_COUNT",
                            "LOC_BUF_SIZE"};
  for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
    CHECK(listed(list, required[i]), "option %s not listed", required[i]);
  for (int i = 0; i < n; i++) {
    const void *v = c_fam_get_option(fam, list[i]);
    CHECK(v != NULL, "option %s listed but not gettable: %s", list[i], c_fam_error_msg());
    if (strcmp(list[i], "PE_ID") == 0 || strcmp(list[i], "PE_COUNT") == 0)
      printf("PE %d: option %s = %d\n", FT_PE, list[i], *(const int *)v);
    else if (strcmp(list[i], "LOC_BUF_SIZE") == 0)
      printf("PE %d: option %s = %" PRIu64 "\n", FT_PE, list[i], *(const uint64_t *)v);
    else
      printf("PE %d: option %s = \"%s\"\n", FT_PE, list[i], (const char *)v);
    free((void *)v);
  }
  free((void *)list); /* one block: array and strings */
  int pe = ft_int_option(fam, "PE_ID"), count = ft_int_option(fam, "PE_COUNT");
  CHECK(count >= 1 && pe >= 0 && pe < count, "PE_ID %d, PE_COUNT %d", pe, count);
  const char *version = CHECK_PTR(c_fam_get_option(fam, "VERSION"));
  CHECK(version[0] != '\0', "empty VERSION");
  free((void *)version);
  EXPECT_NULL(c_fam_get_option(fam, "NO_SUCH_OPTION"), FAM_ERR_INVALID);
  EXPECT_NULL(c_fam_get_option(fam, "pe_id"), FAM_ERR_INVALID); /* names are exact */
}

int main(int argc, char **argv) {
  const char *prefix = argc > 1 ? argv[1] : "options";
  char rname[128];

  /* Before initialize: refused. */
  c_fam *fam = CHECK_PTR(c_fam_create());
  EXPECT_NULL(c_fam_get_option(fam, "PE_ID"), FAM_ERR_INVALIDOP);
  EXPECT_NULL(c_fam_lookup_region(fam, "anything"), FAM_ERR_INVALIDOP);
  /* Finalising what is not initialised does nothing (OpenFAM's own tests finalise after an
   * initialize that failed). */
  CHECK_OK(c_fam_finalize(fam, FT_GROUP));

  /* NULL options. */
  CHECK_OK(c_fam_initialize(fam, FT_GROUP, NULL));
  FT_PE = ft_int_option(fam, "PE_ID");
  check_options(fam);
  EXPECT_ERR(c_fam_initialize(fam, FT_GROUP, NULL), FAM_ERR_INVALIDOP);
  ft_unique(rname, sizeof(rname), prefix, "default");
  void *r = CHECK_PTR(c_fam_create_region(fam, rname, 1024 * 1024, 0600, NULL));
  unimem_fam_desc_release(r);
  CHECK_OK(c_fam_finalize(fam, FT_GROUP));
  CHECK_OK(c_fam_finalize(fam, FT_GROUP)); /* twice: nothing to do */
  EXPECT_NULL(c_fam_lookup_region(fam, "anything"), FAM_ERR_INVALIDOP); /* finalised */
  EXPECT_NULL(c_fam_lookup_region(fam, rname), FAM_ERR_INVALIDOP);

  /* Again on the same instance, with explicit options: all given members are kept. */
  Fam_Options opts;
  memset(&opts, 0, sizeof(opts));
  opts.defaultRegionName = rname;
  opts.famThreadModel = (char *)"FAM_THREAD_MULTIPLE";
  CHECK_OK(c_fam_initialize(fam, FT_GROUP, &opts));
  check_options(fam);
  const char *v = CHECK_PTR(c_fam_get_option(fam, "DEFAULT_REGION_NAME"));
  CHECK(strcmp(v, rname) == 0, "DEFAULT_REGION_NAME %s, expected %s", v, rname);
  free((void *)v);
  const char **list = CHECK_PTR(c_fam_list_options(fam));
  if (listed(list, "FAM_THREAD_MODEL")) {
    v = CHECK_PTR(c_fam_get_option(fam, "FAM_THREAD_MODEL"));
    CHECK(strcmp(v, "FAM_THREAD_MULTIPLE") == 0, "FAM_THREAD_MODEL %s", v);
    free((void *)v);
  }
  free((void *)list);
  /* An item allocated without a region lands in the default region. */
  void *d = CHECK_PTR(c_fam_allocate_named(fam, "in-default", 4096, 0600, NULL));
  void *look = CHECK_PTR(c_fam_lookup(fam, "in-default", rname));
  Fam_Global_Descriptor g1 = unimem_fam_desc_global(d), g2 = unimem_fam_desc_global(look);
  CHECK(g1.regionId == g2.regionId && g1.offset == g2.offset, "default region's item");
  unimem_fam_desc_release(look);
  CHECK_OK(c_fam_deallocate(fam, d));
  unimem_fam_desc_release(d);
  r = CHECK_PTR(c_fam_lookup_region(fam, rname));
  CHECK_OK(c_fam_destroy_region(fam, r));
  unimem_fam_desc_release(r);
  EXPECT_NULL(c_fam_lookup_region(fam, rname), FAM_ERR_NOTFOUND);

  /* A second instance in the same process works alongside. */
  c_fam *second = CHECK_PTR(c_fam_create());
  CHECK_OK(c_fam_initialize(second, FT_GROUP, NULL));
  CHECK(ft_int_option(second, "PE_ID") == FT_PE, "second instance's PE_ID");
  CHECK_OK(c_fam_finalize(second, FT_GROUP));
  c_fam_delete(second);

  /* Deleting an instance that is still initialised finalizes it. */
  c_fam *third = CHECK_PTR(c_fam_create());
  CHECK_OK(c_fam_initialize(third, FT_GROUP, NULL));
  c_fam_delete(third);

  ft_done(fam, "options");
  return 0;
}
