/* OpenFAM micro-benchmark (scripts/bench/fam.sh): libunimem_fam's data path against raw GSAS
 * transfers and local memory, measured in the same process. Built with famcc and libgsas
 * (gsas.pc); famd must run (the program finds it through /etc/unimem/fam.conf). Each part makes
 * a region of its own (named after the part, the node and the pid) and destroys it at the end.
 *
 *   fam_bench lat REPS
 *       a 64 KiB item in a non-interleaved region (so on one lender) and one GSAS page allocated
 *       by this process on that lender; REPS times, in an order rotated each time: fam_get and
 *       fam_put of 256 B, gsas_bulk_read and gsas_bulk_write of 256 B, gsas_nop (the bare round
 *       trip to that node's service). Every operation timed alone.
 *   fam_bench tput REPS THREADS even|random INTERLEAVE SERVERS
 *       2 x SERVERS items of 4 MiB in a region interleaved (INTERLEAVE 1: 64 KiB stripes over
 *       every lender) or not (0: each item whole on one lender, famd dealing them round-robin);
 *       THREADS threads (FAM_THREAD_MULTIPLE above 1) do fam_get / fam_put of 4 KiB - 4 MiB
 *       (x4), min(REPS, 8 MiB / size) transfers each (at least 3) per size. Placement "even":
 *       thread t's k-th transfer goes to item (t + k) mod N, the items (so the servers) in turn;
 *       "random": to an item picked uniformly at random each time (rand_r, seeded from the pid
 *       and thread), so the servers' shares and their order are uneven. Throughput is the bytes
 *       of all threads over the wall time from a barrier to the last thread's end.
 *   fam_bench map REPS
 *       a 1 MiB item in a non-interleaved region, mapped with fam_map; memcpy loads from and
 *       stores to it against the same through a malloc'd buffer, 256 B - 1 MiB (x16), REPS
 *       samples each (a sample: enough copies for 256 KiB, timed together). fam_map fails with
 *       FAM_ERR_UNIMPL for items with memory on other nodes (remote mapping is not there yet):
 *       then map_load and map_store are reported as n/a and the local baseline still runs.
 *
 * Prints one line per measurement (n/a: not measurable in this configuration):
 *   RESULT part=<lat|tput|map> op=<op> size=<bytes> threads=<n> client=<node> item_node=<node>
 *          reps=<n> median_us=<> p25_us=<> p75_us=<> mb_per_s=<>
 * op: lat fam_get, fam_put, gsas_read, gsas_write, gsas_nop (size 0); tput fam_get, fam_put;
 * map map_load, map_store, local_load, local_store. item_node is the item's first memory
 * server (tput: item 0's); mb_per_s is size / median for lat and map, all threads' bytes /
 * wall time for tput. Exits 1 with a message on any failure.
 * The program's gsas_* calls go to libgsas (linked first), which has its own handles and
 * protection tree; libunimem_fam carries its own copy of the GSAS client for the items.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fam/fam_abi.h>
#include <fam/fam_c.h>
#include <gsas.h>

/* OpenFAM's Fam_Error codes (fam_exception.h is C++ only): the C API returns minus these. */
#define BENCH_FAM_ERR_NOTFOUND 8
#define BENCH_FAM_ERR_UNIMPL 16

#define LAT_SIZE 256u
#define LAT_ITEM (64u << 10)
#define TPUT_MIN (4u << 10)
#define TPUT_MAX (4u << 20)
#define TPUT_BUDGET (8u << 20)
#define MAP_ITEM (1u << 20)
#define MAP_SAMPLE (256u << 10)
#define MAX_THREADS 64

static c_fam *fam;
static c_fam_region_desc *region;
static char region_name[96];
static int client_node = -1;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* The region goes (with its items) whatever happens, so that a failed run leaves no memory
 * lent out on the servers. */
static void cleanup(void) {
  if (region) {
    c_fam_destroy_region(fam, region);
    region = NULL;
  }
  if (fam) {
    c_fam_finalize(fam, "fam_bench");
    c_fam_delete(fam);
    fam = NULL;
  }
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fam_bench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  cleanup();
  exit(1);
}

#define FAM_OK(expr)                                                                       \
  do {                                                                                     \
    int rc_ = (expr);                                                                      \
    if (rc_ != 0)                                                                          \
      fail("%s: %d: %s", #expr, rc_, c_fam_error_msg());                                   \
  } while (0)

static void *fam_ptr(void *p, const char *what) {
  if (!p)
    fail("%s: Fam_Error %d: %s", what, c_fam_error(), c_fam_error_msg());
  return p;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p)
    fail("out of memory (%zu bytes)", n);
  return p;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One RESULT line: the median and quartiles of the n times t (sorted here, microseconds);
 * mb_per_s < 0 means size / median. */
static void report(const char *part, const char *op, size_t size, int threads, int item_node,
                   double *t, int n, double mb_per_s) {
  qsort(t, n, sizeof(double), cmp);
  double med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
  if (mb_per_s < 0)
    mb_per_s = med > 0 ? size / med : 0.0;
  printf("RESULT part=%s op=%s size=%zu threads=%d client=%d item_node=%d reps=%d median_us=%.3f "
         "p25_us=%.3f p75_us=%.3f mb_per_s=%.3f\n",
         part, op, size, threads, client_node, item_node, n, med, t[n / 4], t[(3 * n) / 4],
         mb_per_s);
  fflush(stdout);
}

static void report_na(const char *part, const char *op, size_t size, int item_node) {
  printf("RESULT part=%s op=%s size=%zu threads=1 client=%d item_node=%d reps=0 median_us=n/a "
         "p25_us=n/a p75_us=n/a mb_per_s=n/a\n",
         part, op, size, client_node, item_node);
  fflush(stdout);
}

static void fam_up(int threads) {
  Fam_Options opts;
  memset(&opts, 0, sizeof(opts));
  char model[] = "FAM_THREAD_MULTIPLE";
  if (threads > 1)
    opts.famThreadModel = model;
  fam = fam_ptr(c_fam_create(), "c_fam_create");
  FAM_OK(c_fam_initialize(fam, "fam_bench", &opts));
  client_node = gsas_node_id();
  if (client_node < 0)
    fail("gsas_node_id: %s", gsas_strerror());
}

/* A region of its own for PART, interleaved or not; one left by a killed run of the same
 * name is destroyed first. */
static void region_up(const char *part, size_t size, int interleave) {
  snprintf(region_name, sizeof(region_name), "fam-bench-%s-n%d-%ld", part, client_node,
           (long)getpid());
  c_fam_region_desc *old = c_fam_lookup_region(fam, region_name);
  if (old) {
    FAM_OK(c_fam_destroy_region(fam, old));
  } else if (c_fam_error() != BENCH_FAM_ERR_NOTFOUND) {
    fail("c_fam_lookup_region(%s): %s", region_name, c_fam_error_msg());
  }
  Fam_Region_Attributes attr;
  memset(&attr, 0, sizeof(attr));
  attr.interleaveEnable = interleave ? ENABLE : DISABLE;
  region = fam_ptr(c_fam_create_region(fam, region_name, size, 0600, &attr),
                   "c_fam_create_region");
}

/* The memory servers of an item: their count, and the first in *first. */
static int item_servers(c_fam_desc *item, int *first) {
  Fam_Stat st;
  memset(&st, 0, sizeof(st));
  FAM_OK(c_fam_stat_data(fam, item, &st));
  if (st.num_memservers == 0)
    fail("item %s has no memory server", st.name ? st.name : "?");
  *first = (int)st.memory_servers[0];
  return (int)st.num_memservers;
}

/* ---- lat ---------------------------------------------------------------------------------- */

enum { L_FAM_GET, L_FAM_PUT, L_GSAS_READ, L_GSAS_WRITE, L_GSAS_NOP, L_OPS };
static const char *const lat_name[L_OPS] = {"fam_get", "fam_put", "gsas_read", "gsas_write",
                                            "gsas_nop"};

static void lat(int reps) {
  fam_up(1);
  region_up("lat", 1u << 20, 0);
  c_fam_desc *item = fam_ptr(c_fam_allocate_named(fam, "lat", LAT_ITEM, 0600, region),
                             "c_fam_allocate_named");
  int node;
  if (item_servers(item, &node) != 1)
    fail("the latency item spans several servers");
  uint64_t page = AllocSharedPage((uint16_t)node, 1);
  if (!page)
    fail("AllocSharedPage(%d, 1): %s", node, gsas_strerror());
  char out[LAT_SIZE], in[LAT_SIZE];
  for (unsigned i = 0; i < LAT_SIZE; i++)
    out[i] = (char)(i * 7 + 1);
  /* Both paths move the bytes they are given (and warm up). */
  FAM_OK(c_fam_put_blocking(fam, out, item, 0, LAT_SIZE));
  FAM_OK(c_fam_get_blocking(fam, in, item, 0, LAT_SIZE));
  if (memcmp(in, out, LAT_SIZE))
    fail("fam_get did not return what fam_put wrote");
  memset(in, 0, sizeof(in));
  if (gsas_bulk_write(page, out, LAT_SIZE) || gsas_bulk_read(in, page, LAT_SIZE))
    fail("gsas bulk transfer: %s", gsas_strerror());
  if (memcmp(in, out, LAT_SIZE))
    fail("gsas_bulk_read did not return what gsas_bulk_write wrote");
  double *t[L_OPS];
  for (int o = 0; o < L_OPS; o++)
    t[o] = xmalloc(sizeof(double) * reps);
  for (int i = 0; i < reps; i++) {
    uint64_t off = (uint64_t)(i % 16) * LAT_SIZE; /* the same offsets on both sides */
    for (int j = 0; j < L_OPS; j++) {
      int o = (i + j) % L_OPS;
      int rc = 0;
      double t0 = now_us();
      switch (o) {
      case L_FAM_GET: rc = c_fam_get_blocking(fam, in, item, off, LAT_SIZE); break;
      case L_FAM_PUT: rc = c_fam_put_blocking(fam, out, item, off, LAT_SIZE); break;
      case L_GSAS_READ: rc = gsas_bulk_read(in, page + off, LAT_SIZE); break;
      case L_GSAS_WRITE: rc = gsas_bulk_write(page + off, out, LAT_SIZE); break;
      case L_GSAS_NOP: rc = gsas_nop((uint16_t)node); break;
      }
      t[o][i] = now_us() - t0;
      if (rc)
        fail("%s: %d: %s", lat_name[o], rc, o < L_GSAS_READ ? c_fam_error_msg() : gsas_strerror());
    }
  }
  for (int o = 0; o < L_OPS; o++) {
    report("lat", lat_name[o], o == L_GSAS_NOP ? 0 : LAT_SIZE, 1, node, t[o], reps, -1);
    free(t[o]);
  }
  if (FreeSharedPage(page))
    fail("FreeSharedPage: %s", gsas_strerror());
  unimem_fam_desc_release(item);
}

/* ---- tput --------------------------------------------------------------------------------- */

struct tput {
  int threads, random, n_items, reps;
  c_fam_desc **items;
  pthread_barrier_t start, end;
  /* The current point, set by thread 0 before the start barrier. */
  size_t size;
  int put, n, stop;
  double t0, t1;
};

struct worker {
  struct tput *tp;
  int id;
  char *buf;
  double *t; /* per transfer, reps of them */
  unsigned seed;
  int rc;
  char err[256];
};

static void transfers(struct worker *w) {
  struct tput *tp = w->tp;
  for (int k = 0; k < tp->n; k++) {
    int it = tp->random ? (int)(rand_r(&w->seed) % (unsigned)tp->n_items)
                        : (w->id + k) % tp->n_items;
    uint64_t off = ((uint64_t)k * tp->size) % TPUT_MAX;
    double t0 = now_us();
    int rc = tp->put ? c_fam_put_blocking(fam, w->buf, tp->items[it], off, tp->size)
                     : c_fam_get_blocking(fam, w->buf, tp->items[it], off, tp->size);
    w->t[k] = now_us() - t0;
    if (rc && !w->rc) {
      w->rc = rc;
      snprintf(w->err, sizeof(w->err), "%s of %zu bytes: %s", tp->put ? "fam_put" : "fam_get",
               tp->size, c_fam_error_msg());
    }
  }
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  for (;;) {
    pthread_barrier_wait(&w->tp->start);
    if (w->tp->stop)
      return NULL;
    transfers(w);
    pthread_barrier_wait(&w->tp->end);
  }
}

static void tput(int reps, int threads, int random, int interleave, int servers) {
  if (threads < 1 || threads > MAX_THREADS)
    fail("threads must be 1 - %d", MAX_THREADS);
  if (servers < 1)
    fail("servers must be at least 1");
  struct tput tp = {.threads = threads, .random = random, .n_items = 2 * servers, .reps = reps};
  fam_up(threads);
  region_up(interleave ? "tput-il" : "tput", (size_t)tp.n_items * TPUT_MAX, interleave);
  tp.items = xmalloc(sizeof(*tp.items) * tp.n_items);
  int first_node = -1, seen[256] = {0}, distinct = 0;
  for (int i = 0; i < tp.n_items; i++) {
    char name[32];
    snprintf(name, sizeof(name), "item%d", i);
    tp.items[i] = fam_ptr(c_fam_allocate_named(fam, name, TPUT_MAX, 0600, region),
                          "c_fam_allocate_named");
    int first, span = item_servers(tp.items[i], &first);
    if (i == 0)
      first_node = first;
    if (first >= 0 && first < 256 && !seen[first]++)
      distinct++;
    fprintf(stderr, "fam_bench: item%d: %d server%s from node %d\n", i, span, span > 1 ? "s" : "",
            first);
    if (interleave && span != (servers < 64 ? servers : 64))
      fail("interleaved item%d spans %d servers, expected %d", i, span, servers);
    if (!interleave && span != 1)
      fail("item%d of a non-interleaved region spans %d servers", i, span);
  }
  if (!interleave && distinct != servers)
    fail("the items are on %d servers, expected %d (famd's --lenders?)", distinct, servers);
  struct worker *w = xmalloc(sizeof(*w) * threads);
  pthread_t *tid = xmalloc(sizeof(*tid) * threads);
  double *all = xmalloc(sizeof(double) * reps * threads);
  pthread_barrier_init(&tp.start, NULL, threads);
  pthread_barrier_init(&tp.end, NULL, threads);
  for (int i = 0; i < threads; i++) {
    w[i] = (struct worker){.tp = &tp, .id = i, .seed = (unsigned)getpid() * 2654435761u + i};
    w[i].buf = xmalloc(TPUT_MAX);
    memset(w[i].buf, 'a' + i % 26, TPUT_MAX);
    w[i].t = xmalloc(sizeof(double) * reps);
  }
  /* Every item once before timing (descriptors validated, keys fetched). */
  for (int i = 0; i < tp.n_items; i++)
    FAM_OK(c_fam_get_blocking(fam, w[0].buf, tp.items[i], 0, TPUT_MIN));
  for (int i = 1; i < threads; i++)
    if (pthread_create(&tid[i], NULL, worker_main, &w[i]))
      fail("pthread_create");
  int point = 0;
  for (size_t size = TPUT_MIN; size <= TPUT_MAX; size *= 4, point++) {
    for (int j = 0; j < 2; j++) {
      tp.size = size;
      tp.put = (j + point) % 2; /* get first at every other size */
      tp.n = TPUT_BUDGET / size < (size_t)reps ? (int)(TPUT_BUDGET / size) : reps;
      if (tp.n < 3)
        tp.n = 3;
      pthread_barrier_wait(&tp.start);
      tp.t0 = now_us();
      transfers(&w[0]);
      pthread_barrier_wait(&tp.end);
      tp.t1 = now_us();
      for (int i = 0; i < threads; i++)
        if (w[i].rc)
          fail("thread %d: %s", i, w[i].err);
      int m = 0;
      for (int i = 0; i < threads; i++)
        for (int k = 0; k < tp.n; k++)
          all[m++] = w[i].t[k];
      double mbs = (double)size * tp.n * threads / (tp.t1 - tp.t0);
      report("tput", tp.put ? "fam_put" : "fam_get", size, threads, first_node, all, m, mbs);
    }
  }
  tp.stop = 1;
  pthread_barrier_wait(&tp.start);
  for (int i = 1; i < threads; i++)
    pthread_join(tid[i], NULL);
  for (int i = 0; i < tp.n_items; i++)
    unimem_fam_desc_release(tp.items[i]);
}

/* ---- map ---------------------------------------------------------------------------------- */

enum { M_MAP_LOAD, M_MAP_STORE, M_LOCAL_LOAD, M_LOCAL_STORE, M_OPS };
static const char *const map_name[M_OPS] = {"map_load", "map_store", "local_load",
                                            "local_store"};

static void map(int reps) {
  fam_up(1);
  region_up("map", 2u << 20, 0);
  c_fam_desc *item = fam_ptr(c_fam_allocate_named(fam, "map", MAP_ITEM, 0600, region),
                             "c_fam_allocate_named");
  int node;
  item_servers(item, &node);
  char *mapped = c_fam_map(fam, item);
  if (!mapped && c_fam_error() != BENCH_FAM_ERR_UNIMPL)
    fail("c_fam_map: Fam_Error %d: %s", c_fam_error(), c_fam_error_msg());
  if (!mapped)
    fprintf(stderr, "fam_bench: fam_map of an item on node %d from node %d: %s (n/a)\n", node,
            client_node, c_fam_error_msg());
  char *local = xmalloc(MAP_ITEM), *buf = xmalloc(MAP_ITEM);
  /* Every page touched before timing (the mapping's and malloc's first-touch faults). */
  memset(local, 1, MAP_ITEM);
  memset(buf, 2, MAP_ITEM);
  if (mapped) {
    memset(mapped, 1, MAP_ITEM);
    char check[64];
    FAM_OK(c_fam_get_blocking(fam, check, item, MAP_ITEM - sizeof(check), sizeof(check)));
    for (size_t i = 0; i < sizeof(check); i++)
      if (check[i] != 1)
        fail("fam_get does not see the stores made through fam_map");
  }
  double *t[M_OPS];
  for (int o = 0; o < M_OPS; o++)
    t[o] = xmalloc(sizeof(double) * reps);
  for (size_t size = 256; size <= MAP_ITEM; size *= 16) {
    size_t inner = MAP_SAMPLE / size ? MAP_SAMPLE / size : 1, slots = MAP_ITEM / size;
    for (int i = 0; i < reps; i++) {
      for (int j = 0; j < M_OPS; j++) {
        int o = (i + j) % M_OPS;
        char *far = o == M_MAP_LOAD || o == M_MAP_STORE ? mapped : local;
        int load = o == M_MAP_LOAD || o == M_LOCAL_LOAD;
        if (!far)
          continue;
        double t0 = now_us();
        for (size_t k = 0; k < inner; k++) {
          size_t off = ((k + (size_t)i) % slots) * size;
          if (load)
            memcpy(buf + off, far + off, size);
          else
            memcpy(far + off, buf + off, size);
          __asm__ volatile("" ::: "memory"); /* every copy happens */
        }
        t[o][i] = (now_us() - t0) / inner;
      }
    }
    for (int o = 0; o < M_OPS; o++) {
      if (!mapped && o < M_LOCAL_LOAD)
        report_na("map", map_name[o], size, node);
      else
        report("map", map_name[o], size, 1, node, t[o], reps, -1);
    }
  }
  for (int o = 0; o < M_OPS; o++)
    free(t[o]);
  if (mapped)
    FAM_OK(c_fam_unmap(fam, mapped, item));
  unimem_fam_desc_release(item);
}

int main(int argc, char **argv) {
  const char *usage = "usage: fam_bench lat REPS | tput REPS THREADS even|random INTERLEAVE "
                      "SERVERS | map REPS";
  if (argc < 3)
    fail("%s", usage);
  int reps = atoi(argv[2]);
  if (reps < 3)
    reps = 3;
  if (!strcmp(argv[1], "lat") && argc == 3) {
    lat(reps);
  } else if (!strcmp(argv[1], "map") && argc == 3) {
    map(reps);
  } else if (!strcmp(argv[1], "tput") && argc == 7 &&
             (!strcmp(argv[4], "even") || !strcmp(argv[4], "random"))) {
    tput(reps, atoi(argv[3]), !strcmp(argv[4], "random"), atoi(argv[5]) != 0, atoi(argv[6]));
  } else {
    fail("%s", usage);
  }
  cleanup();
  return 0;
}
