// Data items through the C++ API: named and anonymous allocation, lookup by name, stat,
// change of permissions, fam_close, descriptors rebuilt from a Fam_Global_Descriptor,
// deallocation (the descriptor becomes DESC_INVALID); and the errors, each changing
// nothing: unknown item or region (NOTFOUND), a taken name (ALREADYEXIST), size 0 and mode
// bits beyond 0777 (INVALID), a name of 256 bytes (NAME_TOO_LONG), more than the region
// holds (NO_SPACE), control-path calls on a context (NOPERM).
//   items [PREFIX]   names its region PREFIX-... (default "items"), plus pid and time
#include "check.hpp"

#define MIB (1024u * 1024u)

static const char *prefix = "items";

// D's size, perm and name (stat and descriptor agree), owned by this process.
static void expect_item(fam *f, Fam_Descriptor *d, const char *name, uint64_t size,
                        mode_t mode) {
  Fam_Stat st;
  memset(&st, 0, sizeof(st));
  f->fam_stat(d, &st);
  CHECK(st.size == size, "%s: stat size %" PRIu64 ", expected %" PRIu64, name, st.size, size);
  CHECK(st.perm == mode, "%s: stat perm %o, expected %o", name, (unsigned)st.perm,
        (unsigned)mode);
  if (name[0] != '\0')
    CHECK(st.name && strcmp(st.name, name) == 0, "stat name %s, expected %s", st.name, name);
  else
    CHECK(st.name == NULL || st.name[0] == '\0', "anonymous item named %s", st.name);
  CHECK(st.uid == getuid() && st.gid == getgid(), "%s: owner %u:%u", name, st.uid, st.gid);
  CHECK(st.num_memservers >= 1, "%s: %" PRIu64 " memory servers", name, st.num_memservers);
  CHECK(d->get_size() == size, "%s: descriptor size %" PRIu64, name, d->get_size());
  CHECK(d->get_desc_status() == DESC_INIT_DONE ||
            d->get_desc_status() == DESC_INIT_DONE_BUT_KEY_NOT_VALID,
        "%s: descriptor status %d", name, d->get_desc_status());
}

// Writes pattern SEED over D's first N bytes and reads it back.
static void roundtrip(fam *f, Fam_Descriptor *d, size_t n, uint64_t seed) {
  uint8_t *buf = static_cast<uint8_t *>(ft_alloc(n));
  ft_fill(buf, n, seed, 0);
  f->fam_put_blocking(buf, d, 0, n);
  memset(buf, 0, n);
  f->fam_get_blocking(buf, d, 0, n);
  CHECK_PATTERN(buf, n, seed, 0, "roundtrip");
  free(buf);
}

static void body(fam *f) {
  char rname[128], missing[128];
  ft_unique(rname, sizeof(rname), prefix, "region");
  ft_unique(missing, sizeof(missing), prefix, "missing");
  STEP("create the region");
  Fam_Region_Descriptor *r = f->fam_create_region(rname, 4 * MIB, 0700, NULL);

  STEP("allocate a named item");
  Fam_Descriptor *a = f->fam_allocate("a", 4096, 0600, r);
  expect_item(f, a, "a", 4096, 0600);
  CHECK(a->get_name() && strcmp(a->get_name(), "a") == 0, "descriptor name %s",
        a->get_name());
  CHECK(a->get_perm() == 0600, "descriptor perm %o", (unsigned)a->get_perm());
  roundtrip(f, a, 4096, 1);

  STEP("allocate an anonymous item");
  Fam_Descriptor *anon = f->fam_allocate(100, 0640, r);
  expect_item(f, anon, "", 100, 0640);
  roundtrip(f, anon, 100, 2);
  Fam_Global_Descriptor ga = a->get_global_descriptor(), gn = anon->get_global_descriptor();
  CHECK(ga.regionId == gn.regionId && ga.offset != gn.offset,
        "global descriptors {%" PRIu64 ",%" PRIu64 "} and {%" PRIu64 ",%" PRIu64 "}",
        ga.regionId, ga.offset, gn.regionId, gn.offset);

  STEP("look the item up by name");
  Fam_Descriptor *la = f->fam_lookup("a", rname);
  expect_item(f, la, "a", 4096, 0600);
  Fam_Global_Descriptor gl = la->get_global_descriptor();
  CHECK(gl.regionId == ga.regionId && gl.offset == ga.offset, "lookup's global descriptor");
  uint8_t buf[4096];
  f->fam_get_blocking(buf, la, 0, sizeof(buf));
  CHECK_PATTERN(buf, sizeof(buf), 1, 0, "through the looked-up descriptor");

  STEP("a descriptor rebuilt from the global descriptor");
  Fam_Descriptor *rebuilt = new Fam_Descriptor(ga);
  CHECK(rebuilt->get_desc_status() == DESC_UNINITIALIZED, "status %d before first use",
        rebuilt->get_desc_status());
  memset(buf, 0, sizeof(buf));
  f->fam_get_blocking(buf, rebuilt, 100, 200);
  CHECK_PATTERN(buf, 200, 1, 100, "through the rebuilt descriptor");
  CHECK(rebuilt->get_size() == 4096, "rebuilt size %" PRIu64, rebuilt->get_size());
  delete rebuilt;

  STEP("copies of a descriptor share it");
  {
    Fam_Descriptor copy(*la);
    CHECK(copy.get_size() == 4096, "copy's size %" PRIu64, copy.get_size());
  }
  CHECK(la->get_size() == 4096, "size %" PRIu64 " after the copy went", la->get_size());

  STEP("fam_close: the descriptor is done with, a new lookup is not");
  f->fam_close(la);
  EXPECT_FAM_ERROR(f->fam_get_blocking(buf, la, 0, 64), FAM_ERR_INVALIDOP);
  EXPECT_FAM_ERROR(f->fam_put_blocking(buf, la, 0, 64), FAM_ERR_INVALIDOP);
  delete la;
  la = f->fam_lookup("a", rname);
  memset(buf, 0, sizeof(buf));
  f->fam_get_blocking(buf, la, 0, 64);
  CHECK_PATTERN(buf, 64, 1, 0, "after fam_close and a new lookup");
  delete la;

  STEP("errors");
  EXPECT_FAM_ERROR(f->fam_lookup("nothing", rname), FAM_ERR_NOTFOUND);
  EXPECT_FAM_ERROR(f->fam_lookup("a", missing), FAM_ERR_NOTFOUND);
  EXPECT_FAM_ERROR(f->fam_allocate("a", 4096, 0600, r), FAM_ERR_ALREADYEXIST);
  expect_item(f, a, "a", 4096, 0600);
  memset(buf, 0, sizeof(buf));
  f->fam_get_blocking(buf, a, 0, 4096);
  CHECK_PATTERN(buf, 4096, 1, 0, "a after a duplicate allocation");
  EXPECT_FAM_ERROR(f->fam_allocate("zero", 0, 0600, r), FAM_ERR_INVALID);
  EXPECT_FAM_ERROR(f->fam_lookup("zero", rname), FAM_ERR_NOTFOUND);
  EXPECT_FAM_ERROR(f->fam_allocate(static_cast<uint64_t>(0), 0600, r), FAM_ERR_INVALID);
  EXPECT_FAM_ERROR(f->fam_allocate("badmode", 64, 02600, r), FAM_ERR_INVALID);
  EXPECT_FAM_ERROR(f->fam_lookup("badmode", rname), FAM_ERR_NOTFOUND);
  std::string longname(256, 'n');
  EXPECT_FAM_ERROR(f->fam_allocate(longname.c_str(), 64, 0600, r), FAM_ERR_NAME_TOO_LONG);
  EXPECT_FAM_ERROR(f->fam_allocate("huge", 8 * MIB, 0600, r), FAM_ERR_NO_SPACE);
  EXPECT_FAM_ERROR(f->fam_lookup("huge", rname), FAM_ERR_NOTFOUND);
  // The failures took no space: what is left of the region can still be allocated.
  Fam_Descriptor *rest = f->fam_allocate("rest", 3 * MIB, 0600, r);
  roundtrip(f, rest, 3 * MIB, 3);
  EXPECT_FAM_ERROR(f->fam_allocate("more", MIB, 0600, r), FAM_ERR_NO_SPACE);

  STEP("a context refuses the control path");
  fam_context *ctx = f->fam_context_open();
  EXPECT_FAM_ERROR(ctx->fam_allocate("ctx", 64, 0600, r), FAM_ERR_NOPERM);
  EXPECT_FAM_ERROR(ctx->fam_lookup("a", rname), FAM_ERR_NOPERM);
  memset(buf, 0, sizeof(buf));
  ctx->fam_get_blocking(buf, a, 0, 64);
  ctx->fam_quiet();
  CHECK_PATTERN(buf, 64, 1, 0, "through a context");
  f->fam_context_close(ctx);
  delete ctx;

  STEP("change permissions");
  f->fam_change_permissions(a, 0640);
  Fam_Descriptor *la2 = f->fam_lookup("a", rname);
  expect_item(f, la2, "a", 4096, 0640);
  delete la2;
  EXPECT_FAM_ERROR(f->fam_change_permissions(a, 010640), FAM_ERR_INVALID);
  Fam_Stat st;
  f->fam_stat(a, &st);
  CHECK(st.perm == 0640, "perm %o after a refused change", (unsigned)st.perm);

  STEP("deallocate");
  f->fam_deallocate(a);
  CHECK(a->get_desc_status() == DESC_INVALID, "status %d after deallocate",
        a->get_desc_status());
  EXPECT_FAM_ERROR(f->fam_lookup("a", rname), FAM_ERR_NOTFOUND);
  EXPECT_FAM_ERROR(f->fam_get_blocking(buf, a, 0, 64), FAM_ERR_NOTFOUND);
  EXPECT_FAM_ERROR(f->fam_deallocate(a), FAM_ERR_NOTFOUND);
  EXPECT_FAM_ERROR(f->fam_stat(a, &st), FAM_ERR_NOTFOUND);
  EXPECT_FAM_ERROR(f->fam_close(a), FAM_ERR_NOTFOUND);
  delete a;
  // The name is free again.
  a = f->fam_allocate("a", 64, 0600, r);
  expect_item(f, a, "a", 64, 0600);
  f->fam_deallocate(a);
  delete a;
  f->fam_deallocate(anon);
  delete anon;
  f->fam_deallocate(rest);
  delete rest;

  STEP("destroy the region");
  f->fam_destroy_region(r);
  CHECK(r->get_desc_status() == DESC_INVALID, "region status %d", r->get_desc_status());
  EXPECT_FAM_ERROR(f->fam_allocate("late", 64, 0600, r), FAM_ERR_NOTFOUND);
  delete r;
}

int main(int argc, char **argv) {
  if (argc > 1)
    prefix = argv[1];
  return ft_main("items", body);
}
