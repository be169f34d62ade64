/* RMA: put/get/p/g of several types into static and heap objects of another node's PE,
 * iput/iget, the nbi forms, sized puts, and a transfer of many pages. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

#define BIG (3 * 4096 + 123)

static short s_arr[8];
static double d_arr[8];
static int64_t strided[20];
static char bytes[BIG];
static long long ll_val;

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  /* The partner is half the job away: on another node when PEs are placed in blocks. */
  int to = (me + n / 2) % n, from = (me + n - n / 2) % n;
  float *f = shmem_malloc(8 * sizeof(float));
  unsigned char *heap_bytes = shmem_malloc(BIG);
  CHECK(f && heap_bytes, "malloc");

  short s_src[8];
  double d_src[8];
  float f_src[8];
  for (int i = 0; i < 8; i++) {
    s_src[i] = (short)(me * 10 + i);
    d_src[i] = me + i / 4.0;
    f_src[i] = (float)(me * 2 + i);
  }
  shmem_short_put(s_arr, s_src, 8, to);
  shmem_double_put(d_arr, d_src, 8, to);
  shmem_float_put_nbi(f, f_src, 8, to);
  shmem_longlong_p(&ll_val, (long long)me << 40, to);
  shmem_quiet();
  shmem_barrier_all();
  for (int i = 0; i < 8; i++) {
    CHECK(s_arr[i] == from * 10 + i, "s_arr[%d] = %d", i, s_arr[i]);
    CHECK(d_arr[i] == from + i / 4.0, "d_arr[%d] = %g", i, d_arr[i]);
    CHECK(f[i] == (float)(from * 2 + i), "f[%d] = %g", i, f[i]);
  }
  CHECK(ll_val == (long long)from << 40, "ll_val %llx", ll_val);

  /* Gets from the partner: what it received from its own source. */
  short s_got[8];
  float f_got[8];
  shmem_short_get(s_got, s_arr, 8, to);
  shmem_float_get_nbi(f_got, f, 8, to);
  shmem_quiet();
  for (int i = 0; i < 8; i++) {
    CHECK(s_got[i] == me * 10 + i, "got s[%d] = %d", i, s_got[i]);
    CHECK(f_got[i] == (float)(me * 2 + i), "got f[%d] = %g", i, f_got[i]);
  }
  CHECK(shmem_longlong_g(&ll_val, to) == (long long)me << 40, "g");
  CHECK(shmem_double_g(&d_arr[7], to) == me + 7 / 4.0, "double g");

  /* Strided: elements 0, 2, 4, ... of src to 0, 3, 6, ... of the partner's array. */
  int64_t src[10];
  for (int i = 0; i < 10; i++)
    src[i] = me * 100 + i;
  shmem_barrier_all();
  shmem_int64_iput(strided, src, 3, 2, 5, to);
  shmem_barrier_all();
  for (int i = 0; i < 5; i++)
    CHECK(strided[3 * i] == from * 100 + 2 * i, "strided[%d] = %lld", 3 * i, (long long)strided[3 * i]);
  CHECK(strided[1] == 0 && strided[2] == 0, "iput wrote between the strides");
  int64_t back[5];
  shmem_iget64(back, strided, 1, 3, 5, to);
  for (int i = 0; i < 5; i++)
    CHECK(back[i] == me * 100 + 2 * i, "iget[%d] = %lld", i, (long long)back[i]);

  /* Many pages: static to heap, crossing page boundaries, and sized puts. */
  for (int i = 0; i < BIG; i++)
    bytes[i] = (char)(i * 7 + me);
  shmem_barrier_all();
  shmem_putmem(heap_bytes, bytes, BIG, to);
  shmem_barrier_all();
  for (int i = 0; i < BIG; i++)
    CHECK(heap_bytes[i] == (unsigned char)(i * 7 + from), "heap_bytes[%d] = %d", i, heap_bytes[i]);
  static char back_big[BIG];
  shmem_getmem(back_big, heap_bytes, BIG, to);
  CHECK(memcmp(back_big, bytes, BIG) == 0, "getmem of %d bytes", BIG);
  uint32_t w[4] = {1u + me, 2, 3, 4};
  shmem_barrier_all();
  shmem_put32(&strided[10], w, 4, to);
  shmem_put128(&strided[14], w, 1, to);
  shmem_barrier_all();
  uint32_t *r = (uint32_t *)&strided[10];
  CHECK(r[0] == 1u + from && r[3] == 4 && r[8] == 1u + from && r[11] == 4, "put32/put128");
  printf("rma ok: PE %d, partner %d\n", me, to);
  shmem_finalize();
  return 0;
}
