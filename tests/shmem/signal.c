/* OpenSHMEM 1.5 put-with-signal. Run as 6 PEs on 3 nodes (2 per node), so that PE me's
 * neighbour me+1 is on its node for even me (copy + atomic) and on another node for odd me,
 * and me+2 always on another node (GSAS bulk write, then the service's atomic):
 *  - a ring of puts larger than a page with SHMEM_SIGNAL_SET: when the signal is seen, every
 *    word of the data is there (the data is new every lap);
 *  - every PE sends its slot to every PE with SHMEM_SIGNAL_ADD (typed, sized, putmem, ctx,
 *    _nbi and C11 generic forms): the count reaches exactly n, every slot is right;
 *    shmem_signal_fetch reads it;
 *  - shmem_signal_wait_until returns the value that satisfied it; a put of 0 elements still
 *    signals; SET replaces what ADD left; ADD wraps around 2^64;
 *  - "signal badop": an unknown sig_op ends the job with a message naming the routine, before
 *    anything is written (tests/cluster/shmem.sh checks the message). */
#include <shmem.h>
#include <string.h>
#include "check.h"

#define BIG 3000 /* longs: 24000 bytes, several pages */
#define LAPS 4
#define SLOT 16
#define MAXPE 16

static long ring[BIG];
static uint64_t ring_sig;
static long slots[5][MAXPE][SLOT];
static uint64_t count;
static uint64_t steps;
static char empty_dest[8];
static uint64_t empty_sig;

int main(int argc, char **argv) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(n <= MAXPE, "at most %d PEs", MAXPE);
  int next = (me + 1) % n, prev = (me + n - 1) % n;

  if (argc == 2 && strcmp(argv[1], "badop") == 0) {
    long v = 1;
    if (me == 0)
      shmem_long_put_signal(&ring[0], &v, 1, &ring_sig, 1, 7, next);
    shmem_barrier_all();
    printf("not reached: PE %d\n", me);
    shmem_finalize();
    return 0;
  }

  /* Ring with SET: lap l's data is prev's rank and l in every word. */
  static long src[BIG];
  for (int lap = 1; lap <= LAPS; lap++) {
    for (int i = 0; i < BIG; i++)
      src[i] = (long)lap * 1000000 + me * 1000 + i % 997;
    shmem_long_put_signal(ring, src, BIG, &ring_sig, (uint64_t)lap, SHMEM_SIGNAL_SET, next);
    uint64_t got = shmem_signal_wait_until(&ring_sig, SHMEM_CMP_EQ, (uint64_t)lap);
    CHECK(got == (uint64_t)lap, "lap %d: wait returned %llu", lap, (unsigned long long)got);
    for (int i = 0; i < BIG; i++)
      CHECK(ring[i] == (long)lap * 1000000 + prev * 1000 + i % 997,
            "lap %d: word %d is %ld when the signal is there", lap, i, ring[i]);
    shmem_barrier_all();
  }
  CHECK(shmem_signal_fetch(&ring_sig) == LAPS, "signal_fetch after the ring: %llu",
        (unsigned long long)shmem_signal_fetch(&ring_sig));

  /* ADD from everyone, five forms, each into its own slots: count reaches 5 * n. */
  long mine[SLOT];
  for (int i = 0; i < SLOT; i++)
    mine[i] = me * 100 + i;
  for (int k = 0; k < n; k++) {
    int pe = (me + k) % n;
    shmem_long_put_signal(slots[0][me], mine, SLOT, &count, 1, SHMEM_SIGNAL_ADD, pe);
    shmem_put64_signal_nbi(slots[1][me], mine, SLOT, &count, 1, SHMEM_SIGNAL_ADD, pe);
    shmem_ctx_putmem_signal(SHMEM_CTX_DEFAULT, slots[2][me], mine, sizeof mine, &count, 1,
                            SHMEM_SIGNAL_ADD, pe);
    shmem_put_signal(slots[3][me], mine, SLOT, &count, 1, SHMEM_SIGNAL_ADD, pe);
    shmem_put_signal_nbi(SHMEM_CTX_DEFAULT, slots[4][me], mine, SLOT, &count, 1,
                         SHMEM_SIGNAL_ADD, pe);
  }
  shmem_quiet();
  uint64_t want = 5 * (uint64_t)n;
  CHECK(shmem_signal_wait_until(&count, SHMEM_CMP_GE, want) == want, "count: %llu, want %llu",
        (unsigned long long)count, (unsigned long long)want);
  for (int f = 0; f < 5; f++)
    for (int p = 0; p < n; p++)
      for (int i = 0; i < SLOT; i++)
        CHECK(slots[f][p][i] == p * 100 + i, "form %d, from PE %d, word %d: %ld", f, p, i,
              slots[f][p][i]);
  shmem_barrier_all();
  CHECK(shmem_signal_fetch(&count) == want, "signal_fetch: %llu",
        (unsigned long long)shmem_signal_fetch(&count));

  /* wait_until returns the value that satisfied it: prev adds 2 three times (0, 2, 4, 6),
   * waiting for >= 5 can only end on 6. */
  for (int i = 0; i < 3; i++)
    shmem_putmem_signal(empty_dest, "x", 0, &steps, 2, SHMEM_SIGNAL_ADD, next);
  CHECK(shmem_signal_wait_until(&steps, SHMEM_CMP_GE, 5) == 6, "wait returned %llu",
        (unsigned long long)steps);
  CHECK(shmem_signal_wait_until(&steps, SHMEM_CMP_NE, 0) == 6, "NE");
  CHECK(shmem_signal_wait_until(&steps, SHMEM_CMP_LT, 7) == 6, "LT");
  CHECK(empty_dest[0] == 0, "a put of 0 bytes wrote %d", empty_dest[0]);
  shmem_barrier_all();

  /* SET replaces; ADD wraps (unsigned 64-bit); both across nodes (me + 2). */
  int far = (me + 2) % n, from_far = (me + n - 2) % n;
  shmem_barrier_all();
  char c = (char)('a' + me);
  shmem_char_put_signal(empty_dest, &c, 1, &empty_sig, UINT64_MAX, SHMEM_SIGNAL_SET, far);
  shmem_barrier_all();
  CHECK(shmem_signal_fetch(&empty_sig) == UINT64_MAX, "SET of 2^64-1: %llu",
        (unsigned long long)empty_sig);
  CHECK(empty_dest[0] == 'a' + from_far, "char from PE %d: %c", from_far, empty_dest[0]);
  shmem_barrier_all();
  shmem_uint64_put_signal((uint64_t *)(void *)empty_dest, &want, 0, &empty_sig, 3,
                          SHMEM_SIGNAL_ADD, far);
  shmem_barrier_all();
  CHECK(shmem_signal_fetch(&empty_sig) == 2, "2^64-1 + 3 wraps to 2: %llu",
        (unsigned long long)empty_sig);
  shmem_barrier_all();
  shmem_int8_put_signal((int8_t *)empty_dest, (int8_t *)&c, 1, &empty_sig, 42, SHMEM_SIGNAL_SET,
                        far);
  shmem_barrier_all();
  CHECK(shmem_signal_wait_until(&empty_sig, SHMEM_CMP_EQ, 42) == 42, "SET after ADD");

  printf("signal ok: PE %d\n", me);
  shmem_finalize();
  return 0;
}
