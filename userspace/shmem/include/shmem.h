/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shmem.h: OpenSHMEM 1.5 for unimem, over GSAS (seed 001's Gmem). C interface of libshmem
 * (userspace/shmem); see docs/SHMEM.md.
 *
 *   oshcc prog.c -o prog            (or: cc prog.c $(pkg-config --cflags --libs shmem))
 *   oshrun -np 6 /opt/unimem/bin/prog
 *
 * Symmetric objects: the program's global and static variables (.data, .bss) and the
 * symmetric heap (shmem_malloc and friends; SHMEM_SYMMETRIC_SIZE bytes per PE; oshrun
 * sizes it from the GSAS pool when it is not set: docs/SHMEM.md).
 * Every put, get and atomic has completed when the call returns: shmem_quiet and shmem_fence
 * only order the calling PE's own accesses.
 *
 * Errors in a call (a PE out of range, an address that is not symmetric, a bad active set,
 * a GSAS failure) print "shmem: PE <n>: <routine>: <what>" and end the job (every PE).
 *
 * The typed families are generated below by macros over a few unimem_shmem_* entry points;
 * those are internal and may change.
 */
#ifndef SHMEM_H
#define SHMEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "unimem OpenSHMEM over GSAS"

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_LE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_GE 5

#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 4
#define SHMEM_BARRIER_SYNC_SIZE 4
#define SHMEM_BCAST_SYNC_SIZE 4
#define SHMEM_REDUCE_SYNC_SIZE 4
#define SHMEM_COLLECT_SYNC_SIZE 4
#define SHMEM_ALLTOALL_SYNC_SIZE 4
#define SHMEM_ALLTOALLS_SYNC_SIZE 4
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1

/* Deprecated spellings (1.3 and before). */
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_LE SHMEM_CMP_LE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_GE SHMEM_CMP_GE

/* Setup and queries. */
void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
/* Loads and stores reach the result: for this PE and the PEs of its node; NULL otherwise. */
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);

/* The symmetric heap (collective: every PE makes the same calls). */
void *shmem_malloc(size_t size);
void *shmem_calloc(size_t count, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void *shmem_align(size_t alignment, size_t size);
void shmem_free(void *ptr);

/* Contexts (1.4). Every operation has completed when its call returns, on every context, so a
 * context orders nothing the default one does not: contexts are handles over the same path.
 * shmem_ctx_create returns nonzero (and leaves *ctx) for unknown options. */
typedef struct unimem_shmem_ctx *shmem_ctx_t;
#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)
#define SHMEM_CTX_DEFAULT ((shmem_ctx_t)0)
int shmem_ctx_create(long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);

/* The context form of a routine: the routine itself (see above), on the PE of the context's
 * team (shmem_team_create_ctx) that `pe` names. Every context form (typed, sized, C11 generic,
 * put-with-signal, non-blocking atomics) translates `pe` through _shmem_ctx_pe alone. */
int unimem_shmem_ctx_pe(shmem_ctx_t ctx, int pe);
static inline int _shmem_ctx_pe(shmem_ctx_t ctx, int pe) {
  return ctx ? unimem_shmem_ctx_pe(ctx, pe) : pe;
}
#define _SHMEM_UNPAREN(...) __VA_ARGS__
#define _SHMEM_CTX_V(NAME, PARAMS, ARGS)                                                        \
  static inline void shmem_ctx_##NAME(shmem_ctx_t ctx, _SHMEM_UNPAREN PARAMS) {                 \
    pe = _shmem_ctx_pe(ctx, pe);                                                                \
    shmem_##NAME ARGS;                                                                          \
  }
#define _SHMEM_CTX_R(R, NAME, PARAMS, ARGS)                                                     \
  static inline R shmem_ctx_##NAME(shmem_ctx_t ctx, _SHMEM_UNPAREN PARAMS) {                    \
    pe = _shmem_ctx_pe(ctx, pe);                                                                \
    return shmem_##NAME ARGS;                                                                   \
  }

/* Ordering, locks, collectives. */
void shmem_quiet(void);
void shmem_fence(void);
static inline void shmem_ctx_quiet(shmem_ctx_t ctx) {
  (void)ctx;
  shmem_quiet();
}
static inline void shmem_ctx_fence(shmem_ctx_t ctx) {
  (void)ctx;
  shmem_fence();
}
void shmem_barrier_all(void);
void shmem_sync_all(void);
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);

/* Internal entry points of the generated families. */
void unimem_shmem_put(const char *routine, void *dest, const void *src, size_t n, int pe);
void unimem_shmem_get(const char *routine, void *dest, const void *src, size_t n, int pe);
void unimem_shmem_strided(int get, void *dest, const void *src, const ptrdiff_t strides[2],
                          size_t nelems, size_t size, int pe);
uint64_t unimem_shmem_amo(const char *routine, void *target, size_t size, int op, uint64_t a,
                          uint64_t b, int pe);
void unimem_shmem_poll(void);
void unimem_shmem_coll(int kind, size_t width, void *dest, const void *src,
                       const ptrdiff_t args[4], const int set[3], long *pSync);
void unimem_shmem_reduce(int type, int op, void *dest, const void *src, int nreduce,
                         const int set[3], long *pSync);

/* ---- RMA ---- */

#define _SHMEM_RMA(N, T)                                                                       \
  static inline void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe) {        \
    unimem_shmem_put("shmem_" #N "_put", dest, source, nelems * sizeof(T), pe);                \
  }                                                                                             \
  static inline void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe) {        \
    unimem_shmem_get("shmem_" #N "_get", dest, source, nelems * sizeof(T), pe);                \
  }                                                                                             \
  static inline void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe) {    \
    unimem_shmem_put("shmem_" #N "_put_nbi", dest, source, nelems * sizeof(T), pe);            \
  }                                                                                             \
  static inline void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe) {    \
    unimem_shmem_get("shmem_" #N "_get_nbi", dest, source, nelems * sizeof(T), pe);            \
  }                                                                                             \
  static inline void shmem_##N##_p(T *dest, T value, int pe) {                                 \
    unimem_shmem_put("shmem_" #N "_p", dest, &value, sizeof(T), pe);                           \
  }                                                                                             \
  static inline T shmem_##N##_g(const T *source, int pe) {                                     \
    T v;                                                                                        \
    unimem_shmem_get("shmem_" #N "_g", &v, source, sizeof(T), pe);                             \
    return v;                                                                                   \
  }                                                                                             \
  static inline void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,  \
                                      size_t nelems, int pe) {                                  \
    const ptrdiff_t s[2] = {dst, sst};                                                          \
    unimem_shmem_strided(0, dest, source, s, nelems, sizeof(T), pe);                           \
  }                                                                                             \
  static inline void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,  \
                                      size_t nelems, int pe) {                                  \
    const ptrdiff_t s[2] = {dst, sst};                                                          \
    unimem_shmem_strided(1, dest, source, s, nelems, sizeof(T), pe);                           \
  }                                                                                             \
  _SHMEM_CTX_RMA(N, T)

/* The context forms of a type's RMA. */
#define _SHMEM_RMA_ARGS(T) \
  (T * dest, const T *source, size_t nelems, int pe), (dest, source, nelems, pe)
#define _SHMEM_STRIDED_ARGS(T)                                                                  \
  (T * dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe),            \
      (dest, source, dst, sst, nelems, pe)
#define _SHMEM_CTX_RMA(N, T)                                                                    \
  _SHMEM_CTX_V1(N##_put, _SHMEM_RMA_ARGS(T))                                                    \
  _SHMEM_CTX_V1(N##_get, _SHMEM_RMA_ARGS(T))                                                    \
  _SHMEM_CTX_V1(N##_put_nbi, _SHMEM_RMA_ARGS(T))                                                \
  _SHMEM_CTX_V1(N##_get_nbi, _SHMEM_RMA_ARGS(T))                                                \
  _SHMEM_CTX_V1(N##_iput, _SHMEM_STRIDED_ARGS(T))                                               \
  _SHMEM_CTX_V1(N##_iget, _SHMEM_STRIDED_ARGS(T))                                               \
  _SHMEM_CTX_V(N##_p, (T * dest, T value, int pe), (dest, value, pe))                           \
  _SHMEM_CTX_R(T, N##_g, (const T *source, int pe), (source, pe))
/* _SHMEM_CTX_V with PARAMS and ARGS from one macro. */
#define _SHMEM_CTX_V1(NAME, ...) _SHMEM_CTX_V2(NAME, __VA_ARGS__)
#define _SHMEM_CTX_V2(NAME, PARAMS, ARGS) _SHMEM_CTX_V(NAME, PARAMS, ARGS)

_SHMEM_RMA(float, float)
_SHMEM_RMA(double, double)
_SHMEM_RMA(longdouble, long double)
_SHMEM_RMA(char, char)
_SHMEM_RMA(schar, signed char)
_SHMEM_RMA(short, short)
_SHMEM_RMA(int, int)
_SHMEM_RMA(long, long)
_SHMEM_RMA(longlong, long long)
_SHMEM_RMA(uchar, unsigned char)
_SHMEM_RMA(ushort, unsigned short)
_SHMEM_RMA(uint, unsigned int)
_SHMEM_RMA(ulong, unsigned long)
_SHMEM_RMA(ulonglong, unsigned long long)
_SHMEM_RMA(int8, int8_t)
_SHMEM_RMA(int16, int16_t)
_SHMEM_RMA(int32, int32_t)
_SHMEM_RMA(int64, int64_t)
_SHMEM_RMA(uint8, uint8_t)
_SHMEM_RMA(uint16, uint16_t)
_SHMEM_RMA(uint32, uint32_t)
_SHMEM_RMA(uint64, uint64_t)
_SHMEM_RMA(size, size_t)
_SHMEM_RMA(ptrdiff, ptrdiff_t)

/* Sized RMA: shmem_put8 ... shmem_iget128. */
#define _SHMEM_SIZED(B)                                                                         \
  static inline void shmem_put##B(void *dest, const void *source, size_t nelems, int pe) {     \
    unimem_shmem_put("shmem_put" #B, dest, source, nelems * (B / 8), pe);                      \
  }                                                                                             \
  static inline void shmem_get##B(void *dest, const void *source, size_t nelems, int pe) {     \
    unimem_shmem_get("shmem_get" #B, dest, source, nelems * (B / 8), pe);                      \
  }                                                                                             \
  static inline void shmem_put##B##_nbi(void *dest, const void *source, size_t nelems, int pe) { \
    unimem_shmem_put("shmem_put" #B "_nbi", dest, source, nelems * (B / 8), pe);               \
  }                                                                                             \
  static inline void shmem_get##B##_nbi(void *dest, const void *source, size_t nelems, int pe) { \
    unimem_shmem_get("shmem_get" #B "_nbi", dest, source, nelems * (B / 8), pe);               \
  }                                                                                             \
  static inline void shmem_iput##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                                   size_t nelems, int pe) {                                     \
    const ptrdiff_t s[2] = {dst, sst};                                                          \
    unimem_shmem_strided(0, dest, source, s, nelems, B / 8, pe);                               \
  }                                                                                             \
  static inline void shmem_iget##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                                   size_t nelems, int pe) {                                     \
    const ptrdiff_t s[2] = {dst, sst};                                                          \
    unimem_shmem_strided(1, dest, source, s, nelems, B / 8, pe);                               \
  }                                                                                             \
  _SHMEM_CTX_V1(put##B, _SHMEM_RMA_ARGS(void))                                                  \
  _SHMEM_CTX_V1(get##B, _SHMEM_RMA_ARGS(void))                                                  \
  _SHMEM_CTX_V1(put##B##_nbi, _SHMEM_RMA_ARGS(void))                                            \
  _SHMEM_CTX_V1(get##B##_nbi, _SHMEM_RMA_ARGS(void))                                            \
  _SHMEM_CTX_V1(iput##B, _SHMEM_STRIDED_ARGS(void))                                             \
  _SHMEM_CTX_V1(iget##B, _SHMEM_STRIDED_ARGS(void))

_SHMEM_SIZED(8)
_SHMEM_SIZED(16)
_SHMEM_SIZED(32)
_SHMEM_SIZED(64)
_SHMEM_SIZED(128)

static inline void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
  unimem_shmem_put("shmem_putmem_nbi", dest, source, nelems, pe);
}
static inline void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
  unimem_shmem_get("shmem_getmem_nbi", dest, source, nelems, pe);
}
_SHMEM_CTX_V1(putmem, _SHMEM_RMA_ARGS(void))
_SHMEM_CTX_V1(getmem, _SHMEM_RMA_ARGS(void))
_SHMEM_CTX_V1(putmem_nbi, _SHMEM_RMA_ARGS(void))
_SHMEM_CTX_V1(getmem_nbi, _SHMEM_RMA_ARGS(void))

/* ---- Atomics ---- */

#define _SHMEM_AMO_FETCH 0
#define _SHMEM_AMO_SET 1
#define _SHMEM_AMO_CSWAP 2
#define _SHMEM_AMO_SWAP 3
#define _SHMEM_AMO_FADD 4
#define _SHMEM_AMO_FAND 5
#define _SHMEM_AMO_FOR 6
#define _SHMEM_AMO_FXOR 7

/* The value's bytes, little-endian, in a 64-bit word (and back). */
static inline uint64_t _shmem_bits(const void *p, size_t n) {
  uint64_t v = 0;
  memcpy(&v, p, n);
  return v;
}

/* fetch, set, swap: every AMO type, float and double included. */
#define _SHMEM_AMO_EXT(N, T)                                                                   \
  static inline T shmem_##N##_atomic_fetch(const T *source, int pe) {                          \
    uint64_t r = unimem_shmem_amo("shmem_" #N "_atomic_fetch", (void *)source, sizeof(T),      \
                                  _SHMEM_AMO_FETCH, 0, 0, pe);                                  \
    T v;                                                                                        \
    memcpy(&v, &r, sizeof(T));                                                                  \
    return v;                                                                                   \
  }                                                                                             \
  static inline void shmem_##N##_atomic_set(T *dest, T value, int pe) {                        \
    unimem_shmem_amo("shmem_" #N "_atomic_set", dest, sizeof(T), _SHMEM_AMO_SET,               \
                     _shmem_bits(&value, sizeof(T)), 0, pe);                                    \
  }                                                                                             \
  static inline T shmem_##N##_atomic_swap(T *dest, T value, int pe) {                          \
    uint64_t r = unimem_shmem_amo("shmem_" #N "_atomic_swap", dest, sizeof(T), _SHMEM_AMO_SWAP, \
                                  _shmem_bits(&value, sizeof(T)), 0, pe);                       \
    T v;                                                                                        \
    memcpy(&v, &r, sizeof(T));                                                                  \
    return v;                                                                                   \
  }                                                                                             \
  static inline T shmem_##N##_fetch(const T *source, int pe) {                                 \
    return shmem_##N##_atomic_fetch(source, pe);                                                \
  }                                                                                             \
  static inline void shmem_##N##_set(T *dest, T value, int pe) {                               \
    shmem_##N##_atomic_set(dest, value, pe);                                                    \
  }                                                                                             \
  static inline T shmem_##N##_swap(T *dest, T value, int pe) {                                 \
    return shmem_##N##_atomic_swap(dest, value, pe);                                            \
  }                                                                                             \
  _SHMEM_CTX_R(T, N##_atomic_fetch, (const T *source, int pe), (source, pe))                    \
  _SHMEM_CTX_V(N##_atomic_set, (T * dest, T value, int pe), (dest, value, pe))                  \
  _SHMEM_CTX_R(T, N##_atomic_swap, (T * dest, T value, int pe), (dest, value, pe))

/* An atomic returning the old value: NAME, operation, operand. */
#define _SHMEM_AMO_OP(N, T, NAME, OP)                                                          \
  static inline T shmem_##N##_atomic_fetch_##NAME(T *dest, T value, int pe) {                  \
    uint64_t r = unimem_shmem_amo("shmem_" #N "_atomic_fetch_" #NAME, dest, sizeof(T), OP,      \
                                  _shmem_bits(&value, sizeof(T)), 0, pe);                       \
    T v;                                                                                        \
    memcpy(&v, &r, sizeof(T));                                                                  \
    return v;                                                                                   \
  }                                                                                             \
  static inline void shmem_##N##_atomic_##NAME(T *dest, T value, int pe) {                     \
    (void)shmem_##N##_atomic_fetch_##NAME(dest, value, pe);                                     \
  }                                                                                             \
  _SHMEM_CTX_R(T, N##_atomic_fetch_##NAME, (T * dest, T value, int pe), (dest, value, pe))      \
  _SHMEM_CTX_V(N##_atomic_##NAME, (T * dest, T value, int pe), (dest, value, pe))

/* The standard AMO types: compare_swap, fetch_inc, inc, fetch_add, add (and 1.3 names). */
#define _SHMEM_AMO_STD(N, T)                                                                   \
  _SHMEM_AMO_EXT(N, T)                                                                          \
  _SHMEM_AMO_OP(N, T, add, _SHMEM_AMO_FADD)                                                     \
  static inline T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe) {          \
    uint64_t r = unimem_shmem_amo("shmem_" #N "_atomic_compare_swap", dest, sizeof(T),         \
                                  _SHMEM_AMO_CSWAP, _shmem_bits(&cond, sizeof(T)),              \
                                  _shmem_bits(&value, sizeof(T)), pe);                          \
    T v;                                                                                        \
    memcpy(&v, &r, sizeof(T));                                                                  \
    return v;                                                                                   \
  }                                                                                             \
  static inline T shmem_##N##_atomic_fetch_inc(T *dest, int pe) {                              \
    return shmem_##N##_atomic_fetch_add(dest, (T)1, pe);                                        \
  }                                                                                             \
  static inline void shmem_##N##_atomic_inc(T *dest, int pe) {                                 \
    (void)shmem_##N##_atomic_fetch_add(dest, (T)1, pe);                                         \
  }                                                                                             \
  static inline T shmem_##N##_cswap(T *dest, T cond, T value, int pe) {                        \
    return shmem_##N##_atomic_compare_swap(dest, cond, value, pe);                              \
  }                                                                                             \
  static inline T shmem_##N##_finc(T *dest, int pe) {                                          \
    return shmem_##N##_atomic_fetch_inc(dest, pe);                                              \
  }                                                                                             \
  static inline void shmem_##N##_inc(T *dest, int pe) { shmem_##N##_atomic_inc(dest, pe); }   \
  static inline T shmem_##N##_fadd(T *dest, T value, int pe) {                                 \
    return shmem_##N##_atomic_fetch_add(dest, value, pe);                                       \
  }                                                                                             \
  static inline void shmem_##N##_add(T *dest, T value, int pe) {                               \
    shmem_##N##_atomic_add(dest, value, pe);                                                    \
  }                                                                                             \
  _SHMEM_CTX_R(T, N##_atomic_compare_swap, (T * dest, T cond, T value, int pe),                 \
               (dest, cond, value, pe))                                                         \
  _SHMEM_CTX_R(T, N##_atomic_fetch_inc, (T * dest, int pe), (dest, pe))                         \
  _SHMEM_CTX_V(N##_atomic_inc, (T * dest, int pe), (dest, pe))

/* The bitwise AMO types. */
#define _SHMEM_AMO_BIT(N, T)                                                                   \
  _SHMEM_AMO_OP(N, T, and, _SHMEM_AMO_FAND)                                                     \
  _SHMEM_AMO_OP(N, T, or, _SHMEM_AMO_FOR)                                                       \
  _SHMEM_AMO_OP(N, T, xor, _SHMEM_AMO_FXOR)

_SHMEM_AMO_STD(int, int)
_SHMEM_AMO_STD(long, long)
_SHMEM_AMO_STD(longlong, long long)
_SHMEM_AMO_STD(uint, unsigned int)
_SHMEM_AMO_STD(ulong, unsigned long)
_SHMEM_AMO_STD(ulonglong, unsigned long long)
_SHMEM_AMO_STD(int32, int32_t)
_SHMEM_AMO_STD(int64, int64_t)
_SHMEM_AMO_STD(uint32, uint32_t)
_SHMEM_AMO_STD(uint64, uint64_t)
_SHMEM_AMO_STD(size, size_t)
_SHMEM_AMO_STD(ptrdiff, ptrdiff_t)
_SHMEM_AMO_EXT(float, float)
_SHMEM_AMO_EXT(double, double)
_SHMEM_AMO_BIT(uint, unsigned int)
_SHMEM_AMO_BIT(ulong, unsigned long)
_SHMEM_AMO_BIT(ulonglong, unsigned long long)
_SHMEM_AMO_BIT(int32, int32_t)
_SHMEM_AMO_BIT(int64, int64_t)
_SHMEM_AMO_BIT(uint32, uint32_t)
_SHMEM_AMO_BIT(uint64, uint64_t)

/* ---- Point-to-point synchronization ---- */

#define _SHMEM_CMP(a, cmp, b)                                                                  \
  ((cmp) == SHMEM_CMP_EQ   ? (a) == (b)                                                         \
   : (cmp) == SHMEM_CMP_NE ? (a) != (b)                                                         \
   : (cmp) == SHMEM_CMP_GT ? (a) > (b)                                                          \
   : (cmp) == SHMEM_CMP_LE ? (a) <= (b)                                                         \
   : (cmp) == SHMEM_CMP_LT ? (a) < (b)                                                          \
                           : (a) >= (b))

#define _SHMEM_WAIT(N, T)                                                                      \
  static inline int shmem_##N##_test(T *ivar, int cmp, T cmp_value) {                          \
    T v = *(volatile T *)ivar;                                                                  \
    if (_SHMEM_CMP(v, cmp, cmp_value)) {                                                        \
      shmem_fence();                                                                            \
      return 1;                                                                                 \
    }                                                                                           \
    return 0;                                                                                   \
  }                                                                                             \
  static inline void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value) {                   \
    while (!shmem_##N##_test(ivar, cmp, cmp_value))                                             \
      unimem_shmem_poll();                                                                      \
  }                                                                                             \
  static inline void shmem_##N##_wait(T *ivar, T cmp_value) {                                  \
    shmem_##N##_wait_until(ivar, SHMEM_CMP_NE, cmp_value);                                      \
  }

_SHMEM_WAIT(short, short)
_SHMEM_WAIT(int, int)
_SHMEM_WAIT(long, long)
_SHMEM_WAIT(longlong, long long)
_SHMEM_WAIT(ushort, unsigned short)
_SHMEM_WAIT(uint, unsigned int)
_SHMEM_WAIT(ulong, unsigned long)
_SHMEM_WAIT(ulonglong, unsigned long long)
_SHMEM_WAIT(int32, int32_t)
_SHMEM_WAIT(int64, int64_t)
_SHMEM_WAIT(uint32, uint32_t)
_SHMEM_WAIT(uint64, uint64_t)
_SHMEM_WAIT(size, size_t)
_SHMEM_WAIT(ptrdiff, ptrdiff_t)

static inline void shmem_wait_until(long *ivar, int cmp, long value) {
  shmem_long_wait_until(ivar, cmp, value);
}
static inline void shmem_wait(long *ivar, long value) { shmem_long_wait(ivar, value); }

/* ---- Collectives ---- */

#define _SHMEM_COLL(B)                                                                          \
  static inline void shmem_broadcast##B(void *dest, const void *source, size_t nelems,          \
                                        int PE_root, int PE_start, int logPE_stride,            \
                                        int PE_size, long *pSync) {                             \
    const ptrdiff_t a[4] = {(ptrdiff_t)nelems, PE_root, 1, 1};                                  \
    const int s[3] = {PE_start, logPE_stride, PE_size};                                         \
    unimem_shmem_coll(0, B / 8, dest, source, a, s, pSync);                                     \
  }                                                                                             \
  static inline void shmem_collect##B(void *dest, const void *source, size_t nelems,            \
                                      int PE_start, int logPE_stride, int PE_size,              \
                                      long *pSync) {                                            \
    const ptrdiff_t a[4] = {(ptrdiff_t)nelems, 0, 1, 1};                                        \
    const int s[3] = {PE_start, logPE_stride, PE_size};                                         \
    unimem_shmem_coll(1, B / 8, dest, source, a, s, pSync);                                     \
  }                                                                                             \
  static inline void shmem_fcollect##B(void *dest, const void *source, size_t nelems,           \
                                       int PE_start, int logPE_stride, int PE_size,             \
                                       long *pSync) {                                           \
    const ptrdiff_t a[4] = {(ptrdiff_t)nelems, 0, 1, 1};                                        \
    const int s[3] = {PE_start, logPE_stride, PE_size};                                         \
    unimem_shmem_coll(2, B / 8, dest, source, a, s, pSync);                                     \
  }                                                                                             \
  static inline void shmem_alltoall##B(void *dest, const void *source, size_t nelems,           \
                                       int PE_start, int logPE_stride, int PE_size,             \
                                       long *pSync) {                                           \
    const ptrdiff_t a[4] = {(ptrdiff_t)nelems, 0, 1, 1};                                        \
    const int s[3] = {PE_start, logPE_stride, PE_size};                                         \
    unimem_shmem_coll(3, B / 8, dest, source, a, s, pSync);                                     \
  }                                                                                             \
  static inline void shmem_alltoalls##B(void *dest, const void *source, ptrdiff_t dst,          \
                                        ptrdiff_t sst, size_t nelems, int PE_start,             \
                                        int logPE_stride, int PE_size, long *pSync) {           \
    const ptrdiff_t a[4] = {(ptrdiff_t)nelems, 0, dst, sst};                                    \
    const int s[3] = {PE_start, logPE_stride, PE_size};                                         \
    unimem_shmem_coll(4, B / 8, dest, source, a, s, pSync);                                     \
  }

_SHMEM_COLL(32)
_SHMEM_COLL(64)

/* Reductions: type codes (by size for the integers) and operations. */
#define _SHMEM_T_INT(T) (sizeof(T) == 2 ? 0 : sizeof(T) == 4 ? 1 : 2)
#define _SHMEM_T_float 3
#define _SHMEM_T_double 4
#define _SHMEM_OP_and 0
#define _SHMEM_OP_or 1
#define _SHMEM_OP_xor 2
#define _SHMEM_OP_min 3
#define _SHMEM_OP_max 4
#define _SHMEM_OP_sum 5
#define _SHMEM_OP_prod 6

#define _SHMEM_REDUCE(N, T, TY, OP)                                                             \
  static inline void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce,          \
                                               int PE_start, int logPE_stride, int PE_size,     \
                                               T *pWrk, long *pSync) {                          \
    const int s[3] = {PE_start, logPE_stride, PE_size};                                         \
    (void)pWrk;                                                                                 \
    unimem_shmem_reduce(TY, _SHMEM_OP_##OP, dest, source, nreduce, s, pSync);                  \
  }

#define _SHMEM_REDUCE_ARITH(N, T, TY)                                                           \
  _SHMEM_REDUCE(N, T, TY, min)                                                                  \
  _SHMEM_REDUCE(N, T, TY, max) _SHMEM_REDUCE(N, T, TY, sum) _SHMEM_REDUCE(N, T, TY, prod)
#define _SHMEM_REDUCE_INT(N, T)                                                                 \
  _SHMEM_REDUCE_ARITH(N, T, _SHMEM_T_INT(T))                                                    \
  _SHMEM_REDUCE(N, T, _SHMEM_T_INT(T), and)                                                     \
  _SHMEM_REDUCE(N, T, _SHMEM_T_INT(T), or) _SHMEM_REDUCE(N, T, _SHMEM_T_INT(T), xor)

_SHMEM_REDUCE_INT(short, short)
_SHMEM_REDUCE_INT(int, int)
_SHMEM_REDUCE_INT(long, long)
_SHMEM_REDUCE_INT(longlong, long long)
_SHMEM_REDUCE_ARITH(float, float, _SHMEM_T_float)
_SHMEM_REDUCE_ARITH(double, double, _SHMEM_T_double)

/* ---- C11 generic interfaces (shmem_put, shmem_atomic_fetch_add, shmem_wait_until, ...) ---- */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

#define _SHMEM_G_RMA_P(P, x, OP)                                                                \
  _Generic(*(x), float: P##float_##OP, double: P##double_##OP,                                  \
           long double: P##longdouble_##OP, char: P##char_##OP,                                 \
           signed char: P##schar_##OP, short: P##short_##OP, int: P##int_##OP,                  \
           long: P##long_##OP, long long: P##longlong_##OP,                                     \
           unsigned char: P##uchar_##OP, unsigned short: P##ushort_##OP,                        \
           unsigned int: P##uint_##OP, unsigned long: P##ulong_##OP,                            \
           unsigned long long: P##ulonglong_##OP)

#define _SHMEM_G_AMO_P(P, x, OP)                                                                \
  _Generic(*(x), int: P##int_atomic_##OP, long: P##long_atomic_##OP,                            \
           long long: P##longlong_atomic_##OP, unsigned int: P##uint_atomic_##OP,               \
           unsigned long: P##ulong_atomic_##OP,                                                 \
           unsigned long long: P##ulonglong_atomic_##OP)
#define _SHMEM_G_AMO_EXT_P(P, x, OP)                                                            \
  _Generic(*(x), int: P##int_atomic_##OP, long: P##long_atomic_##OP,                            \
           long long: P##longlong_atomic_##OP, unsigned int: P##uint_atomic_##OP,               \
           unsigned long: P##ulong_atomic_##OP,                                                 \
           unsigned long long: P##ulonglong_atomic_##OP, float: P##float_atomic_##OP,           \
           double: P##double_atomic_##OP)
#define _SHMEM_G_AMO_BIT_P(P, x, OP)                                                            \
  _Generic(*(x), int: P##int32_atomic_##OP, long: P##int64_atomic_##OP,                         \
           unsigned int: P##uint_atomic_##OP, unsigned long: P##ulong_atomic_##OP,              \
           unsigned long long: P##ulonglong_atomic_##OP)
/* Each selector names the world routine (shmem_) or its context form (shmem_ctx_). */
#define _SHMEM_G_RMA(x, OP) _SHMEM_G_RMA_P(shmem_, x, OP)
#define _SHMEM_G_RMA_CTX(x, OP) _SHMEM_G_RMA_P(shmem_ctx_, x, OP)
#define _SHMEM_G_AMO(x, OP) _SHMEM_G_AMO_P(shmem_, x, OP)
#define _SHMEM_G_AMO_CTX(x, OP) _SHMEM_G_AMO_P(shmem_ctx_, x, OP)
#define _SHMEM_G_AMO_EXT(x, OP) _SHMEM_G_AMO_EXT_P(shmem_, x, OP)
#define _SHMEM_G_AMO_EXT_CTX(x, OP) _SHMEM_G_AMO_EXT_P(shmem_ctx_, x, OP)
#define _SHMEM_G_AMO_BIT(x, OP) _SHMEM_G_AMO_BIT_P(shmem_, x, OP)
#define _SHMEM_G_AMO_BIT_CTX(x, OP) _SHMEM_G_AMO_BIT_P(shmem_ctx_, x, OP)

/* Each generic routine also takes a context first, as in 1.4 (shmem_put(ctx, dest, ...)): the
 * argument count tells the forms apart, and that form is the typed shmem_ctx_ routine, so `pe`
 * is a PE of the context's team (as for the typed context forms, it orders nothing more). */
#define _SHMEM_NARGS(...) _SHMEM_NARGS_(__VA_ARGS__, 7, 6, 5, 4, 3, 2, 1, 0)
#define _SHMEM_NARGS_(_1, _2, _3, _4, _5, _6, _7, N, ...) N
#define _SHMEM_CAT(a, b) _SHMEM_CAT_(a, b)
#define _SHMEM_CAT_(a, b) a##b
#define _SHMEM_G_CALL(name, ...) \
  _SHMEM_CAT(_shmem_g_##name##_, _SHMEM_NARGS(__VA_ARGS__))(__VA_ARGS__)
#define shmem_put(...) _SHMEM_G_CALL(put, __VA_ARGS__)
#define _shmem_g_put_4(dest, source, nelems, pe) _SHMEM_G_RMA(dest, put)(dest, source, nelems, pe)
#define _shmem_g_put_5(ctx, dest, source, nelems, pe) \
  _SHMEM_G_RMA_CTX(dest, put)(ctx, dest, source, nelems, pe)
#define shmem_get(...) _SHMEM_G_CALL(get, __VA_ARGS__)
#define _shmem_g_get_4(dest, source, nelems, pe) _SHMEM_G_RMA(dest, get)(dest, source, nelems, pe)
#define _shmem_g_get_5(ctx, dest, source, nelems, pe) \
  _SHMEM_G_RMA_CTX(dest, get)(ctx, dest, source, nelems, pe)
#define shmem_put_nbi(...) _SHMEM_G_CALL(put_nbi, __VA_ARGS__)
#define _shmem_g_put_nbi_4(dest, source, nelems, pe) \
  _SHMEM_G_RMA(dest, put_nbi)(dest, source, nelems, pe)
#define _shmem_g_put_nbi_5(ctx, dest, source, nelems, pe) \
  _SHMEM_G_RMA_CTX(dest, put_nbi)(ctx, dest, source, nelems, pe)
#define shmem_get_nbi(...) _SHMEM_G_CALL(get_nbi, __VA_ARGS__)
#define _shmem_g_get_nbi_4(dest, source, nelems, pe) \
  _SHMEM_G_RMA(dest, get_nbi)(dest, source, nelems, pe)
#define _shmem_g_get_nbi_5(ctx, dest, source, nelems, pe) \
  _SHMEM_G_RMA_CTX(dest, get_nbi)(ctx, dest, source, nelems, pe)
#define shmem_p(...) _SHMEM_G_CALL(p, __VA_ARGS__)
#define _shmem_g_p_3(dest, value, pe) _SHMEM_G_RMA(dest, p)(dest, value, pe)
#define _shmem_g_p_4(ctx, dest, value, pe) _SHMEM_G_RMA_CTX(dest, p)(ctx, dest, value, pe)
#define shmem_g(...) _SHMEM_G_CALL(g, __VA_ARGS__)
#define _shmem_g_g_2(source, pe) _SHMEM_G_RMA(source, g)(source, pe)
#define _shmem_g_g_3(ctx, source, pe) _SHMEM_G_RMA_CTX(source, g)(ctx, source, pe)
#define shmem_iput(...) _SHMEM_G_CALL(iput, __VA_ARGS__)
#define _shmem_g_iput_6(dest, source, dst, sst, nelems, pe) \
  _SHMEM_G_RMA(dest, iput)(dest, source, dst, sst, nelems, pe)
#define _shmem_g_iput_7(ctx, dest, source, dst, sst, nelems, pe) \
  _SHMEM_G_RMA_CTX(dest, iput)(ctx, dest, source, dst, sst, nelems, pe)
#define shmem_iget(...) _SHMEM_G_CALL(iget, __VA_ARGS__)
#define _shmem_g_iget_6(dest, source, dst, sst, nelems, pe) \
  _SHMEM_G_RMA(dest, iget)(dest, source, dst, sst, nelems, pe)
#define _shmem_g_iget_7(ctx, dest, source, dst, sst, nelems, pe) \
  _SHMEM_G_RMA_CTX(dest, iget)(ctx, dest, source, dst, sst, nelems, pe)
#define shmem_atomic_fetch(...) _SHMEM_G_CALL(atomic_fetch, __VA_ARGS__)
#define _shmem_g_atomic_fetch_2(source, pe) _SHMEM_G_AMO_EXT(source, fetch)(source, pe)
#define _shmem_g_atomic_fetch_3(ctx, source, pe) \
  _SHMEM_G_AMO_EXT_CTX(source, fetch)(ctx, source, pe)
#define shmem_atomic_set(...) _SHMEM_G_CALL(atomic_set, __VA_ARGS__)
#define _shmem_g_atomic_set_3(dest, value, pe) _SHMEM_G_AMO_EXT(dest, set)(dest, value, pe)
#define _shmem_g_atomic_set_4(ctx, dest, value, pe) \
  _SHMEM_G_AMO_EXT_CTX(dest, set)(ctx, dest, value, pe)
#define shmem_atomic_swap(...) _SHMEM_G_CALL(atomic_swap, __VA_ARGS__)
#define _shmem_g_atomic_swap_3(dest, value, pe) _SHMEM_G_AMO_EXT(dest, swap)(dest, value, pe)
#define _shmem_g_atomic_swap_4(ctx, dest, value, pe) \
  _SHMEM_G_AMO_EXT_CTX(dest, swap)(ctx, dest, value, pe)
#define shmem_atomic_compare_swap(...) _SHMEM_G_CALL(atomic_compare_swap, __VA_ARGS__)
#define _shmem_g_atomic_compare_swap_4(dest, cond, value, pe) \
  _SHMEM_G_AMO(dest, compare_swap)(dest, cond, value, pe)
#define _shmem_g_atomic_compare_swap_5(ctx, dest, cond, value, pe) \
  _SHMEM_G_AMO_CTX(dest, compare_swap)(ctx, dest, cond, value, pe)
#define shmem_atomic_fetch_inc(...) _SHMEM_G_CALL(atomic_fetch_inc, __VA_ARGS__)
#define _shmem_g_atomic_fetch_inc_2(dest, pe) _SHMEM_G_AMO(dest, fetch_inc)(dest, pe)
#define _shmem_g_atomic_fetch_inc_3(ctx, dest, pe) \
  _SHMEM_G_AMO_CTX(dest, fetch_inc)(ctx, dest, pe)
#define shmem_atomic_inc(...) _SHMEM_G_CALL(atomic_inc, __VA_ARGS__)
#define _shmem_g_atomic_inc_2(dest, pe) _SHMEM_G_AMO(dest, inc)(dest, pe)
#define _shmem_g_atomic_inc_3(ctx, dest, pe) _SHMEM_G_AMO_CTX(dest, inc)(ctx, dest, pe)
#define shmem_atomic_fetch_add(...) _SHMEM_G_CALL(atomic_fetch_add, __VA_ARGS__)
#define _shmem_g_atomic_fetch_add_3(dest, value, pe) _SHMEM_G_AMO(dest, fetch_add)(dest, value, pe)
#define _shmem_g_atomic_fetch_add_4(ctx, dest, value, pe) \
  _SHMEM_G_AMO_CTX(dest, fetch_add)(ctx, dest, value, pe)
#define shmem_atomic_add(...) _SHMEM_G_CALL(atomic_add, __VA_ARGS__)
#define _shmem_g_atomic_add_3(dest, value, pe) _SHMEM_G_AMO(dest, add)(dest, value, pe)
#define _shmem_g_atomic_add_4(ctx, dest, value, pe) \
  _SHMEM_G_AMO_CTX(dest, add)(ctx, dest, value, pe)
#define shmem_atomic_fetch_and(...) _SHMEM_G_CALL(atomic_fetch_and, __VA_ARGS__)
#define _shmem_g_atomic_fetch_and_3(dest, value, pe) \
  _SHMEM_G_AMO_BIT(dest, fetch_and)(dest, value, pe)
#define _shmem_g_atomic_fetch_and_4(ctx, dest, value, pe) \
  _SHMEM_G_AMO_BIT_CTX(dest, fetch_and)(ctx, dest, value, pe)
#define shmem_atomic_fetch_or(...) _SHMEM_G_CALL(atomic_fetch_or, __VA_ARGS__)
#define _shmem_g_atomic_fetch_or_3(dest, value, pe) \
  _SHMEM_G_AMO_BIT(dest, fetch_or)(dest, value, pe)
#define _shmem_g_atomic_fetch_or_4(ctx, dest, value, pe) \
  _SHMEM_G_AMO_BIT_CTX(dest, fetch_or)(ctx, dest, value, pe)
#define shmem_atomic_fetch_xor(...) _SHMEM_G_CALL(atomic_fetch_xor, __VA_ARGS__)
#define _shmem_g_atomic_fetch_xor_3(dest, value, pe) \
  _SHMEM_G_AMO_BIT(dest, fetch_xor)(dest, value, pe)
#define _shmem_g_atomic_fetch_xor_4(ctx, dest, value, pe) \
  _SHMEM_G_AMO_BIT_CTX(dest, fetch_xor)(ctx, dest, value, pe)
#define shmem_atomic_and(...) _SHMEM_G_CALL(atomic_and, __VA_ARGS__)
#define _shmem_g_atomic_and_3(dest, value, pe) _SHMEM_G_AMO_BIT(dest, and)(dest, value, pe)
#define _shmem_g_atomic_and_4(ctx, dest, value, pe) \
  _SHMEM_G_AMO_BIT_CTX(dest, and)(ctx, dest, value, pe)
#define shmem_atomic_or(...) _SHMEM_G_CALL(atomic_or, __VA_ARGS__)
#define _shmem_g_atomic_or_3(dest, value, pe) _SHMEM_G_AMO_BIT(dest, or)(dest, value, pe)
#define _shmem_g_atomic_or_4(ctx, dest, value, pe) \
  _SHMEM_G_AMO_BIT_CTX(dest, or)(ctx, dest, value, pe)
#define shmem_atomic_xor(...) _SHMEM_G_CALL(atomic_xor, __VA_ARGS__)
#define _shmem_g_atomic_xor_3(dest, value, pe) _SHMEM_G_AMO_BIT(dest, xor)(dest, value, pe)
#define _shmem_g_atomic_xor_4(ctx, dest, value, pe) \
  _SHMEM_G_AMO_BIT_CTX(dest, xor)(ctx, dest, value, pe)

#define _SHMEM_G_WAIT(x, OP)                                                                    \
  _Generic(*(x), short: shmem_short_##OP, int: shmem_int_##OP, long: shmem_long_##OP,           \
           long long: shmem_longlong_##OP, unsigned short: shmem_ushort_##OP,                   \
           unsigned int: shmem_uint_##OP, unsigned long: shmem_ulong_##OP,                     \
           unsigned long long: shmem_ulonglong_##OP)
#define shmem_wait_until(ivar, cmp, value) _SHMEM_G_WAIT(ivar, wait_until)(ivar, cmp, value)
#define shmem_test(ivar, cmp, value) _SHMEM_G_WAIT(ivar, test)(ivar, cmp, value)

#endif /* C11 */

#include "shmem/teams.h"

/* ---- Deprecated (1.3 and before) ---- */

static inline void start_pes(int npes) {
  (void)npes;
  shmem_init();
}
static inline int _my_pe(void) { return shmem_my_pe(); }
static inline int _num_pes(void) { return shmem_n_pes(); }
static inline void *shmalloc(size_t size) { return shmem_malloc(size); }
static inline void shfree(void *ptr) { shmem_free(ptr); }
static inline void *shrealloc(void *ptr, size_t size) { return shmem_realloc(ptr, size); }
static inline void *shmemalign(size_t alignment, size_t size) {
  return shmem_align(alignment, size);
}
static inline void shmem_clear_cache_inv(void) {}
static inline void shmem_set_cache_inv(void) {}
static inline void shmem_udcflush(void) {}

#include "shmem/p2p15.h"
#ifdef __cplusplus
}
#endif

#endif /* SHMEM_H */
