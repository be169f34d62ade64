/* Permissions across users (C API). The owner and the other user are different uids in
 * different primary groups, so the "other" bits of MODE decide what the other user may do.
 * Lookup and stat need read (or ownership), data reads need read, data writes need write,
 * allocating in, resizing and destroying a region or deallocating an item need write (or
 * ownership), changing a mode needs ownership: everything else is FAM_ERR_NOPERM, and a
 * refused write changes nothing (the owner's check role reads it all back).
 *   perm owner REGION ITEM MODE    creates region REGION and item ITEM, both MODE (octal),
 *                                  writes pattern 1 over the item but its last 8 bytes, which
 *                                  hold the uint64 100; prints "global <regionId> <offset>"
 *   perm other REGION ITEM EXPECT [RID:OFF]
 *                                  as another user: EXPECT is what MODE grants it: none, read
 *                                  or write (read and write: by name, write needs read to find
 *                                  the item). RID:OFF (the owner's global line) also tries the
 *                                  data path through a descriptor built from it, which must be
 *                                  refused as by name
 *   perm check REGION ITEM EXPECT  the owner again: the item holds what it wrote, or with
 *                                  EXPECT write the other's pattern 2 over its first 4 KiB and
 *                                  101 at the end; nothing else changed; destroys REGION
 *   perm keep REGION ITEM          an open descriptor keeps its access across narrower modes,
 *                                  as OpenFAM's do (an open file's after a chmod): creates
 *                                  REGION and ITEM 0600, narrows the item to 0200 and then 0,
 *                                  reading and writing through its descriptor all along; after
 *                                  fam_close nothing is kept and the mode (0) decides
 *   perm keep-after REGION ITEM    a new process, after that one ended: what it kept is gone
 *                                  (mode 0 refuses the owner's reads); mode 0600 gives them
 *                                  back, the data is what the keeping process wrote; destroys
 *                                  REGION */
#include "check.h"

#define SIZE 8192u
#define HALF 4096u

static c_fam *fam;

enum expect { NONE_, READ_, WRITE_ };

static enum expect parse_expect(const char *s) {
  if (strcmp(s, "none") == 0)
    return NONE_;
  if (strcmp(s, "read") == 0)
    return READ_;
  CHECK(strcmp(s, "write") == 0, "EXPECT is none, read or write, not %s", s);
  return WRITE_;
}

/* An int result that is 0 when ALLOWED, else -FAM_ERR_NOPERM. */
#define EXPECT_ALLOWED(allowed, expr)                                                     \
  do {                                                                                    \
    if (allowed)                                                                          \
      CHECK_OK(expr);                                                                     \
    else                                                                                  \
      EXPECT_ERR(expr, FAM_ERR_NOPERM);                                                   \
  } while (0)

/* The data path on D as the other user: reads allowed if CAN_READ, writes if CAN_WRITE. */
static void data_path(void *d, int can_read, int can_write, const char *how) {
  uint8_t *buf = ft_alloc(SIZE);
  printf("PE %d: perm: data path %s: read %s, write %s\n", FT_PE, how,
         can_read ? "allowed" : "refused", can_write ? "allowed" : "refused");
  memset(buf, 0, SIZE);
  EXPECT_ALLOWED(can_read, c_fam_get_blocking(fam, buf, d, 0, SIZE - 8));
  if (can_read)
    CHECK_PATTERN(buf, SIZE - 8, 1, 0, "the owner's data");
  uint64_t v = 0;
  EXPECT_ALLOWED(can_read, c_fam_fetch_uint64(fam, d, SIZE - 8, &v));
  if (can_read)
    CHECK(v == 100, "the owner's counter: %" PRIu64, v);
  if (can_write) {
    ft_fill(buf, HALF, 2, 0);
    CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, HALF));
    CHECK_OK(c_fam_fetch_add_uint64(fam, d, SIZE - 8, 1, &v));
    CHECK(v == 100, "fetch_add found %" PRIu64, v);
    free(buf);
    return;
  }
  ft_fill(buf, SIZE, 3, 0);
  EXPECT_ERR(c_fam_put_blocking(fam, buf, d, 0, HALF), FAM_ERR_NOPERM);
  EXPECT_ERR(c_fam_fetch_add_uint64(fam, d, SIZE - 8, 1, &v), FAM_ERR_NOPERM);
  EXPECT_ERR(c_fam_scatter_blocking_stride(fam, buf, d, 4, 0, 2, 8), FAM_ERR_NOPERM);
  /* Non-blocking ones may be refused at once or by the quiet. */
  int rc = c_fam_put_nonblocking(fam, buf, d, HALF, 16);
  if (rc == 0)
    rc = c_fam_quiet(fam);
  CHECK(rc == -FAM_ERR_NOPERM, "non-blocking put: %d (%s)", rc, ft_err_name(rc));
  rc = c_fam_add_uint64(fam, d, SIZE - 8, 1);
  if (rc == 0)
    rc = c_fam_quiet(fam);
  CHECK(rc == -FAM_ERR_NOPERM, "non-blocking add: %d (%s)", rc, ft_err_name(rc));
  /* A refused mapping: no pointer to write through (reading needs read). */
  void *m = c_fam_map(fam, d);
  if (m) {
    CHECK(can_read, "mapped an item it may not read");
    CHECK_OK(c_fam_unmap(fam, m, d));
  } else {
    CHECK(c_fam_error() == FAM_ERR_NOPERM, "fam_map: %s", ft_err_name(c_fam_error()));
  }
  free(buf);
}

static void other(const char *region, const char *item, enum expect e, const char *global) {
  int can_read = e != NONE_, can_write = e == WRITE_;
  void *r = c_fam_lookup_region(fam, region);
  if (!can_read) {
    CHECK(r == NULL, "looked up region %s it may not read", region);
    CHECK(c_fam_error() == FAM_ERR_NOPERM, "region lookup: %s, expected FAM_ERR_NOPERM",
          ft_err_name(c_fam_error()));
  } else {
    CHECK(r != NULL, "region lookup: %s: %s", ft_err_name(c_fam_error()), c_fam_error_msg());
  }
  void *d = c_fam_lookup(fam, item, region);
  if (!can_read) {
    CHECK(d == NULL, "looked up item %s it may not read", item);
    CHECK(c_fam_error() == FAM_ERR_NOPERM, "item lookup: %s, expected FAM_ERR_NOPERM",
          ft_err_name(c_fam_error()));
  } else {
    CHECK(d != NULL, "item lookup: %s: %s", ft_err_name(c_fam_error()), c_fam_error_msg());
    Fam_Stat st;
    CHECK_OK(c_fam_stat_data(fam, d, &st));
    CHECK(st.size == SIZE && st.uid != getuid(), "stat: size %" PRIu64 ", owner %u", st.size,
          st.uid);
    CHECK_OK(c_fam_stat_region(fam, r, &st));
    /* Never the other user's: changing modes. */
    EXPECT_ERR(c_fam_change_permissions_data(fam, d, 0777), FAM_ERR_NOPERM);
    EXPECT_ERR(c_fam_change_permissions_region(fam, r, 0777), FAM_ERR_NOPERM);
    /* A writer's, and only a writer's: the control path on the owner's region. Destroying
     * the region or deallocating the item would end the test: only their refusal is tried. */
    if (can_write) {
      void *mine = CHECK_PTR(c_fam_allocate_named(fam, "others", 64, 0600, r));
      CHECK_OK(c_fam_deallocate(fam, mine));
      unimem_fam_desc_release(mine);
    } else {
      EXPECT_NULL(c_fam_allocate_named(fam, "others", 64, 0600, r), FAM_ERR_NOPERM);
      EXPECT_NULL(c_fam_allocate(fam, 64, 0600, r), FAM_ERR_NOPERM);
      EXPECT_ERR(c_fam_resize_region(fam, r, 4 * SIZE), FAM_ERR_NOPERM);
      EXPECT_ERR(c_fam_deallocate(fam, d), FAM_ERR_NOPERM);
      EXPECT_ERR(c_fam_destroy_region(fam, r), FAM_ERR_NOPERM);
      CHECK(ft_status(d) != DESC_INVALID, "a refused deallocate invalidated the descriptor");
    }
    data_path(d, can_read, can_write, "by name");
    unimem_fam_desc_release(d);
    unimem_fam_desc_release(r);
  }
  if (global && !can_write) {
    /* The owner's item by its global descriptor: still only what the mode grants. */
    Fam_Global_Descriptor g;
    CHECK(sscanf(global, "%" SCNu64 ":%" SCNu64, &g.regionId, &g.offset) == 2,
          "RID:OFF, not %s", global);
    void *gd = NULL;
    CHECK_OK(unimem_fam_desc_new(UNIMEM_FAM_DESC_ITEM, &g, SIZE, &gd));
    data_path(gd, can_read, 0, "by global descriptor");
    unimem_fam_desc_release(gd);
  }
}

static void check(const char *region, const char *item, enum expect e) {
  void *d = CHECK_PTR(c_fam_lookup(fam, item, region));
  uint8_t *buf = ft_alloc(SIZE);
  CHECK_OK(c_fam_get_blocking(fam, buf, d, 0, SIZE));
  if (e == WRITE_) {
    CHECK_PATTERN(buf, HALF, 2, 0, "the other user's write");
    CHECK_PATTERN(buf + HALF, SIZE - HALF - 8, 1, HALF, "past the other user's write");
  } else {
    CHECK_PATTERN(buf, SIZE - 8, 1, 0, "after the refused writes");
  }
  uint64_t v;
  memcpy(&v, buf + SIZE - 8, sizeof(v));
  CHECK(v == (e == WRITE_ ? 101u : 100u), "counter %" PRIu64, v);
  EXPECT_NULL(c_fam_lookup(fam, "others", region), FAM_ERR_NOTFOUND);
  Fam_Stat st;
  CHECK_OK(c_fam_stat_data(fam, d, &st));
  CHECK(st.uid == getuid() && st.size == SIZE, "item's owner %u, size %" PRIu64, st.uid,
        st.size);
  unimem_fam_desc_release(d);
  void *r = CHECK_PTR(c_fam_lookup_region(fam, region));
  CHECK_OK(c_fam_stat_region(fam, r, &st));
  /* At least what was asked (OpenFAM raises regions to 1 MiB, as famd does). */
  CHECK(st.size >= 2 * SIZE, "region resized to %" PRIu64, st.size);
  CHECK_OK(c_fam_destroy_region(fam, r));
  unimem_fam_desc_release(r);
  free(buf);
}

static void keep(const char *region, const char *item) {
  void *r = CHECK_PTR(c_fam_create_region(fam, region, 2 * SIZE, 0700, NULL));
  void *d = CHECK_PTR(c_fam_allocate_named(fam, item, SIZE, 0600, r));
  uint8_t *buf = ft_alloc(SIZE);
  ft_fill(buf, SIZE, 1, 0);
  CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, SIZE));
  CHECK_OK(c_fam_change_permissions_data(fam, d, 0200));
  memset(buf, 0, SIZE);
  CHECK_OK(c_fam_get_blocking(fam, buf, d, 0, SIZE));
  CHECK_PATTERN(buf, SIZE, 1, 0, "read through the open descriptor after mode 0200");
  CHECK_OK(c_fam_change_permissions_data(fam, d, 0));
  ft_fill(buf, HALF, 4, 0);
  CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, HALF));
  memset(buf, 0, SIZE);
  CHECK_OK(c_fam_get_blocking(fam, buf, d, 0, SIZE));
  CHECK_PATTERN(buf, HALF, 4, 0, "read back through the open descriptor after mode 0");
  CHECK_PATTERN(buf + HALF, SIZE - HALF, 1, HALF, "past the write, after mode 0");
  /* A descriptor built from the global one, without a lookup: the process's keep covers it
   * while an open descriptor of the item keeps the item; after the close, the mode decides. */
  Fam_Global_Descriptor g = unimem_fam_desc_global(d);
  void *gd = NULL;
  CHECK_OK(unimem_fam_desc_new(UNIMEM_FAM_DESC_ITEM, &g, SIZE, &gd));
  CHECK_OK(c_fam_get_blocking(fam, buf, gd, 0, 64));
  CHECK_OK(c_fam_close(fam, d));
  EXPECT_ERR(c_fam_get_blocking(fam, buf, gd, 0, 64), FAM_ERR_NOPERM);
  EXPECT_ERR(c_fam_put_blocking(fam, buf, gd, 0, 64), FAM_ERR_NOPERM);
  unimem_fam_desc_release(gd);
  unimem_fam_desc_release(d);
  unimem_fam_desc_release(r);
  free(buf);
}

static void keep_after(const char *region, const char *item) {
  /* The owner looks it up (ownership), but mode 0 gives it nothing to keep. */
  void *d = CHECK_PTR(c_fam_lookup(fam, item, region));
  uint8_t *buf = ft_alloc(SIZE);
  EXPECT_ERR(c_fam_get_blocking(fam, buf, d, 0, 64), FAM_ERR_NOPERM);
  CHECK_OK(c_fam_change_permissions_data(fam, d, 0600));
  CHECK_OK(c_fam_get_blocking(fam, buf, d, 0, SIZE));
  CHECK_PATTERN(buf, HALF, 4, 0, "the keeping process's write");
  CHECK_PATTERN(buf + HALF, SIZE - HALF, 1, HALF, "past it");
  CHECK_OK(c_fam_deallocate(fam, d));
  unimem_fam_desc_release(d);
  void *r = CHECK_PTR(c_fam_lookup_region(fam, region));
  CHECK_OK(c_fam_destroy_region(fam, r));
  unimem_fam_desc_release(r);
  free(buf);
}

int main(int argc, char **argv) {
  CHECK(argc >= 4, "usage: perm owner REGION ITEM MODE | perm other REGION ITEM EXPECT "
                   "[RID:OFF] | perm check REGION ITEM EXPECT | perm keep|keep-after REGION ITEM");
  const char *role = argv[1], *region = argv[2], *item = argv[3];
  fam = ft_init();
  CHECK(argc >= 5 || strncmp(role, "keep", 4) == 0, "perm %s: REGION ITEM and one more argument",
        role);
  if (strcmp(role, "keep") == 0) {
    keep(region, item);
  } else if (strcmp(role, "keep-after") == 0) {
    keep_after(region, item);
  } else if (strcmp(role, "owner") == 0) {
    mode_t mode = (mode_t)strtoul(argv[4], NULL, 8);
    void *r = CHECK_PTR(c_fam_create_region(fam, region, 2 * SIZE, mode, NULL));
    void *d = CHECK_PTR(c_fam_allocate_named(fam, item, SIZE, mode, r));
    uint8_t *buf = ft_alloc(SIZE);
    ft_fill(buf, SIZE - 8, 1, 0);
    CHECK_OK(c_fam_put_blocking(fam, buf, d, 0, SIZE - 8));
    CHECK_OK(c_fam_set_uint64(fam, d, SIZE - 8, 100));
    CHECK_OK(c_fam_quiet(fam));
    Fam_Stat st;
    CHECK_OK(c_fam_stat_data(fam, d, &st));
    CHECK(st.perm == mode, "item mode %o, expected %o", (unsigned)st.perm, (unsigned)mode);
    Fam_Global_Descriptor g = unimem_fam_desc_global(d);
    printf("global %" PRIu64 " %" PRIu64 "\n", g.regionId, g.offset);
    unimem_fam_desc_release(d);
    unimem_fam_desc_release(r);
    free(buf);
  } else if (strcmp(role, "other") == 0) {
    other(region, item, parse_expect(argv[4]), argc > 5 ? argv[5] : NULL);
  } else if (strcmp(role, "check") == 0) {
    check(region, item, parse_expect(argv[4]));
  } else {
    CHECK(0, "unknown role %s", role);
  }
  char what[64];
  snprintf(what, sizeof(what), "perm %s", role);
  ft_done(fam, what);
  return 0;
}
