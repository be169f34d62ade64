/* fam_barrier_all with several PEs (C API; unimem_fam_barrier_all is fam::fam_barrier_all).
 * PE 0 creates region NAME with an item of PE_COUNT slots (removing one a failed run left);
 * after a barrier every PE looks it up, puts its id into its slot (and a fetch_add into a
 * shared counter); after a barrier every PE reads every slot and the counter. Repeated for
 * several rounds, each with new values, so a barrier that lets a PE through early is seen.
 * PE 0 destroys the region at the end.
 *   barrier [NAME]   run by oshrun as N PEs; NAME default "fam-barrier-test"
 *   barrier NAME abort STATUS
 *                    after a barrier PE 0 calls fam_abort(STATUS): the job must end on every
 *                    PE with STATUS (oshrun's exit status); the others wait at most 60 s and
 *                    say "survived" if nothing ended them */
#include "check.h"

#define ROUNDS 5

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "fam-barrier-test";
  c_fam *fam = ft_init();
  int me = FT_PE, n = ft_int_option(fam, "PE_COUNT");
  CHECK(n >= 1 && me < n, "PE_ID %d of PE_COUNT %d", me, n);
  if (argc > 3 && strcmp(argv[2], "abort") == 0) {
    CHECK_OK(unimem_fam_barrier_all(fam));
    if (me == 0) {
      printf("PE 0: fam_abort(%s)\n", argv[3]);
      fflush(stdout);
      c_fam_abort(fam, atoi(argv[3]));
      CHECK(0, "fam_abort returned");
    }
    sleep(60);
    printf("PE %d: survived fam_abort\n", me);
    return 1;
  }
  uint64_t size = (uint64_t)(n + 1) * sizeof(uint64_t);
  void *r = NULL, *d = NULL;
  if (me == 0) {
    r = c_fam_lookup_region(fam, name);
    if (r) {
      printf("PE 0: barrier: removing region %s a failed run left\n", name);
      CHECK_OK(c_fam_destroy_region(fam, r));
      unimem_fam_desc_release(r);
    }
    r = CHECK_PTR(c_fam_create_region(fam, name, 1024 * 1024, 0600, NULL));
    d = CHECK_PTR(c_fam_allocate_named(fam, "slots", size, 0600, r));
    uint64_t *zero = ft_alloc(size);
    memset(zero, 0, size);
    CHECK_OK(c_fam_put_blocking(fam, zero, d, 0, size));
    free(zero);
  }
  CHECK_OK(unimem_fam_barrier_all(fam));
  if (me != 0)
    d = CHECK_PTR(c_fam_lookup(fam, "slots", name));
  uint64_t *slots = ft_alloc(size);
  for (int round = 1; round <= ROUNDS; round++) {
    uint64_t mine = (uint64_t)round << 32 | (uint64_t)me;
    CHECK_OK(c_fam_put_blocking(fam, &mine, d, (uint64_t)me * sizeof(uint64_t), sizeof(mine)));
    uint64_t old;
    CHECK_OK(c_fam_fetch_add_uint64(fam, d, (uint64_t)n * sizeof(uint64_t), 1, &old));
    CHECK_OK(unimem_fam_barrier_all(fam));
    CHECK_OK(c_fam_get_blocking(fam, slots, d, 0, size));
    for (int pe = 0; pe < n; pe++)
      CHECK(slots[pe] == ((uint64_t)round << 32 | (uint64_t)pe),
            "round %d: slot %d holds %#" PRIx64, round, pe, slots[pe]);
    CHECK(slots[n] == (uint64_t)round * (uint64_t)n, "round %d: counter %" PRIu64, round,
          slots[n]);
    /* Nobody writes the next round before everyone read this one. */
    CHECK_OK(unimem_fam_barrier_all(fam));
  }
  free(slots);
  unimem_fam_desc_release(d);
  if (me == 0) {
    CHECK_OK(c_fam_destroy_region(fam, r));
    unimem_fam_desc_release(r);
  }
  ft_done(fam, "barrier");
  return 0;
}
