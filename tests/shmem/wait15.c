/* OpenSHMEM 1.5 waits and tests on several variables, as 6 PEs on 3 nodes (2 per node):
 *  - all: every PE sets its flag on every PE; wait_until_all ends with all set, test_all is 1;
 *  - any: a PE collects every index once with wait_until_any, leaving each one out (status)
 *    once seen; with every entry left out: SIZE_MAX at once (wait and test), as with nelems 0;
 *  - some (vector): PE p adds p + 1 to counter p of every PE, late for some; wait_until_some
 *    _vector with per-entry values returns each index once; test_some on untouched variables
 *    returns 0, and wait_until_some on an empty set 0; test_all on an empty set is 1;
 *  - entries left out by status are not waited for (a variable nobody sets);
 *  - signed and unsigned comparisons of the same bits, short and 64-bit unsigned variables;
 *  - C11 generic forms. Every return value is checked. */
#include <shmem.h>
#include <unistd.h>
#include "check.h"

#define MAXPE 16

static int flags[MAXPE];
static long counters[MAXPE];
static long never[MAXPE]; /* no other PE writes these */
static short shorts[MAXPE];
static unsigned long long big[2];

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(n <= MAXPE, "at most %d PEs", MAXPE);
  size_t idx[MAXPE];
  int status[MAXPE] = {0};
  int none[MAXPE];
  for (int i = 0; i < MAXPE; i++)
    none[i] = 1;

  /* Nothing is set yet anywhere: tests find nothing. */
  CHECK(shmem_long_test_any(never, n, NULL, SHMEM_CMP_NE, 0) == SIZE_MAX, "test_any: none");
  CHECK(shmem_long_test_some(never, n, idx, NULL, SHMEM_CMP_NE, 0) == 0, "test_some: none");
  CHECK(shmem_long_test_all(never, n, NULL, SHMEM_CMP_NE, 0) == 0, "test_all: none");
  CHECK(shmem_long_test_all(never, n, NULL, SHMEM_CMP_EQ, 0) == 1, "test_all: all zero");

  /* Empty test sets: every entry left out, or nelems 0. Nothing waits. */
  CHECK(shmem_long_wait_until_any(never, n, none, SHMEM_CMP_NE, 0) == SIZE_MAX, "any, empty");
  CHECK(shmem_long_wait_until_any(never, 0, NULL, SHMEM_CMP_NE, 0) == SIZE_MAX, "any, 0");
  CHECK(shmem_long_wait_until_some(never, n, idx, none, SHMEM_CMP_NE, 0) == 0, "some, empty");
  CHECK(shmem_long_wait_until_some(never, 0, idx, NULL, SHMEM_CMP_NE, 0) == 0, "some, 0");
  shmem_long_wait_until_all(never, n, none, SHMEM_CMP_NE, 0);
  shmem_long_wait_until_all(never, 0, NULL, SHMEM_CMP_NE, 0);
  CHECK(shmem_long_test_all(never, n, none, SHMEM_CMP_NE, 0) == 1, "test_all, empty");
  CHECK(shmem_long_test_any(never, n, none, SHMEM_CMP_EQ, 0) == SIZE_MAX, "test_any, empty");
  CHECK(shmem_long_test_some(never, n, idx, none, SHMEM_CMP_EQ, 0) == 0, "test_some, empty");
  CHECK(shmem_long_test_any_vector(never, 0, NULL, SHMEM_CMP_EQ, never) == SIZE_MAX, "vec 0");
  shmem_barrier_all();

  /* all: flag me on every PE. PE 0 is late (the others wait for it). */
  if (me == 0)
    usleep(200000);
  for (int k = 0; k < n; k++)
    shmem_int_atomic_set(&flags[me], 1, (me + k) % n);
  shmem_int_wait_until_all(flags, n, NULL, SHMEM_CMP_EQ, 1);
  for (int i = 0; i < n; i++)
    CHECK(flags[i] == 1, "flag %d: %d", i, flags[i]);
  CHECK(shmem_int_test_all(flags, n, NULL, SHMEM_CMP_EQ, 1) == 1, "test_all");
  CHECK(shmem_test_all(flags, n, NULL, SHMEM_CMP_EQ, 1) == 1, "C11 test_all");

  /* any: every index once, each left out once seen. */
  int seen[MAXPE] = {0};
  for (int k = 0; k < n; k++) {
    size_t i = shmem_int_wait_until_any(flags, n, status, SHMEM_CMP_EQ, 1);
    CHECK(i < (size_t)n, "wait_until_any returned %zu", i);
    CHECK(status[i] == 0 && !seen[i], "index %zu twice", i);
    seen[i] = 1;
    status[i] = 1;
  }
  CHECK(shmem_int_wait_until_any(flags, n, status, SHMEM_CMP_EQ, 1) == SIZE_MAX, "all seen");
  CHECK(shmem_wait_until_any(flags, n, status, SHMEM_CMP_EQ, 1) == SIZE_MAX, "C11 all seen");
  CHECK(shmem_int_test_any(flags, n, status, SHMEM_CMP_EQ, 1) == SIZE_MAX, "test_any seen");
  shmem_barrier_all();

  /* Left out entries are not waited for: never[] is 0, wait for != 0 on entries all left out
   * but one that is set locally. */
  for (int i = 0; i < n; i++)
    status[i] = i != me;
  never[me] = 5;
  shmem_long_wait_until_all(never, n, status, SHMEM_CMP_EQ, 5);
  CHECK(shmem_long_wait_until_any(never, n, status, SHMEM_CMP_EQ, 5) == (size_t)me, "any me");
  CHECK(shmem_long_test_some(never, n, idx, status, SHMEM_CMP_GT, 4) == 1 && idx[0] == (size_t)me,
        "some: me");
  never[me] = 0;

  /* some, vector: PE p adds p + 1 to counters[p]; the odd PEs late. */
  long want[MAXPE];
  for (int i = 0; i < n; i++) {
    want[i] = i + 1;
    status[i] = 0;
    seen[i] = 0;
  }
  shmem_barrier_all();
  if (me % 2)
    usleep(100000);
  for (int k = 0; k < n; k++)
    shmem_long_atomic_add(&counters[me], me + 1, (me + k) % n);
  int got = 0;
  while (got < n) {
    size_t c = shmem_long_wait_until_some_vector(counters, n, idx, status, SHMEM_CMP_EQ, want);
    CHECK(c >= 1 && c <= (size_t)(n - got), "wait_until_some_vector returned %zu", c);
    for (size_t j = 0; j < c; j++) {
      size_t i = idx[j];
      CHECK(i < (size_t)n && !seen[i] && counters[i] == (long)i + 1, "index %zu", i);
      seen[i] = 1;
      status[i] = 1;
      got++;
    }
  }
  CHECK(shmem_long_wait_until_some_vector(counters, n, idx, status, SHMEM_CMP_EQ, want) == 0,
        "some: empty set");
  CHECK(shmem_long_test_all_vector(counters, n, NULL, SHMEM_CMP_EQ, want) == 1, "all vector");
  CHECK(shmem_test_some_vector(counters, n, idx, NULL, SHMEM_CMP_GE, want) == (size_t)n,
        "C11 some vector");
  want[n - 1] = 0;
  CHECK(shmem_long_test_any_vector(counters, n, NULL, SHMEM_CMP_LT, want) == SIZE_MAX, "LT");
  CHECK(shmem_long_test_any_vector(counters, n, NULL, SHMEM_CMP_GT, want) == (size_t)(n - 1),
        "GT: only the last");
  CHECK(shmem_long_test_all_vector(counters, n, NULL, SHMEM_CMP_LE, want) == 0, "LE: not all");
  shmem_barrier_all();

  /* Types: short (-1 < 0), unsigned 64-bit (all ones > 0). */
  shorts[me] = -1;
  CHECK(shmem_short_test_any(shorts, n, NULL, SHMEM_CMP_LT, 0) == (size_t)me, "short -1 < 0");
  CHECK(shmem_ushort_test_any((unsigned short *)shorts, n, NULL, SHMEM_CMP_GT, 60000) ==
            (size_t)me,
        "ushort 65535 > 60000");
  big[1] = ~0ULL;
  CHECK(shmem_ulonglong_test_some(big, 2, idx, NULL, SHMEM_CMP_GT, 0) == 1 && idx[0] == 1,
        "ulonglong all ones > 0");
  CHECK(shmem_test_some(big, 2, idx, NULL, SHMEM_CMP_GT, 0ULL) == 1, "C11 test_some");
  CHECK(shmem_longlong_test_any((long long *)big, 2, NULL, SHMEM_CMP_LT, 0) == 1,
        "signed: all ones is -1");
  shmem_uint64_wait_until_all((uint64_t *)big, 2, NULL, SHMEM_CMP_GE, 0);

  printf("wait15 ok: PE %d\n", me);
  shmem_finalize();
  return 0;
}
