/* Setup, queries and the symmetric heap: PE numbers, accessibility, shmem_ptr, version,
 * shmem_malloc/calloc/realloc/align/free give the same blocks on every PE, and static data
 * (initialized and not) is reachable by other PEs. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

static long counter = 42;   /* .data */
static int table[1000];     /* .bss, more than a page */

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  int major = 0, minor = 0;
  char name[SHMEM_MAX_NAME_LEN];
  int local = 0;

  CHECK(n >= 2, "needs 2 PEs, got %d", n);
  CHECK(me >= 0 && me < n, "me %d of %d", me, n);
  shmem_info_get_version(&major, &minor);
  CHECK(major == 1 && minor == 5 && minor == SHMEM_MINOR_VERSION, "version %d.%d", major, minor);
  shmem_info_get_name(name);
  CHECK(strlen(name) > 0 && strlen(name) < SHMEM_MAX_NAME_LEN, "name");
  CHECK(shmem_pe_accessible(n - 1) && !shmem_pe_accessible(n) && !shmem_pe_accessible(-1), "pe_accessible");
  CHECK(shmem_addr_accessible(&counter, 0) && shmem_addr_accessible(&table[999], n - 1), "static accessible");
  CHECK(!shmem_addr_accessible(&local, 0), "a stack variable is accessible");
  CHECK(shmem_ptr(&counter, me) == (void *)&counter, "shmem_ptr to self");
  CHECK(counter == 42, "initialized static data lost: %ld", counter);
  shmem_barrier_all(); /* nobody writes into another PE before it checked its data */

  /* Static data: each PE writes its number into the next PE's table and counter. */
  int next = (me + 1) % n, prev = (me + n - 1) % n;
  shmem_int_p(&table[me], me + 1000, next);
  shmem_long_p(&counter, 100 + me, next);
  shmem_barrier_all();
  CHECK(table[prev] == prev + 1000, "table[%d] = %d", prev, table[prev]);
  CHECK(counter == 100 + prev, "counter %ld", counter);

  /* shmem_ptr: where it is not NULL, stores through it are the PE's memory. */
  int direct = 0;
  for (int pe = 0; pe < n; pe++) {
    long *p = shmem_ptr(&counter, pe);
    if (p && pe != me)
      direct++;
  }
  shmem_barrier_all();

  /* The heap: the same blocks on every PE. */
  long *a = shmem_malloc(100 * sizeof(long));
  int *b = shmem_calloc(5000, sizeof(int));
  double *c = shmem_align(4096, 3 * sizeof(double));
  CHECK(a && b && c, "allocation failed");
  CHECK(((uintptr_t)c & 4095) == 0, "shmem_align: %p", (void *)c);
  for (int i = 0; i < 5000; i++)
    CHECK(b[i] == 0, "calloc: b[%d] = %d", i, b[i]);
  CHECK(shmem_addr_accessible(b + 4999, next), "heap accessible");
  /* shmem_calloc zeroes before its closing barrier: a put right after it must stay (a large
   * block, whose zeroing takes long, with the put at its end). */
  long *z = shmem_calloc(1 << 17, sizeof(long));
  CHECK(z != NULL, "calloc of 1 MiB failed");
  shmem_long_p(&z[(1 << 17) - 1], me + 1, next);
  shmem_barrier_all();
  CHECK(z[(1 << 17) - 1] == prev + 1, "a put right after shmem_calloc was lost: %ld",
        z[(1 << 17) - 1]);
  shmem_free(z);
  for (int i = 0; i < 100; i++)
    a[i] = me * 1000 + i;
  shmem_barrier_all();
  long got[100];
  shmem_long_get(got, a, 100, next);
  for (int i = 0; i < 100; i++)
    CHECK(got[i] == next * 1000 + i, "a[%d] on %d = %ld", i, next, got[i]);
  shmem_barrier_all();
  a = shmem_realloc(a, 2000 * sizeof(long));
  CHECK(a && a[99] == me * 1000 + 99, "realloc kept the data");
  shmem_long_p(&a[1999], me, next);
  shmem_barrier_all();
  CHECK(a[1999] == prev, "realloc'd block on %d: %ld", prev, a[1999]);
  shmem_free(c);
  shmem_free(b);
  void *big = shmem_malloc((size_t)1 << 40);
  CHECK(big == NULL, "a 1 TiB block was allocated");
  shmem_free(a);
  printf("setup ok: PE %d of %d, %d peers directly mapped\n", me, n, direct);
  shmem_finalize();
  CHECK(counter == 100 + prev, "static data after finalize: %ld", counter);
  return 0;
}
