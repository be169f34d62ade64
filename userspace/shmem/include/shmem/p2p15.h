/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shmem/p2p15.h: the OpenSHMEM 1.5 point-to-point routines of libshmem, included by shmem.h
 * (do not include it alone); see docs/SHMEM.md, "OpenSHMEM 1.5 point-to-point".
 *
 *  - put-with-signal: shmem_TYPENAME_put_signal[_nbi], shmem_putSIZE_signal[_nbi],
 *    shmem_putmem_signal[_nbi], their shmem_ctx_ forms and the C11 shmem_put_signal[_nbi];
 *    shmem_signal_fetch, shmem_signal_wait_until. The data goes first (a GSAS bulk write the
 *    home service has applied when it answers), then the 64-bit signal as an atomic of the
 *    same service (WRITE for SHMEM_SIGNAL_SET, FETCH_ADD for SHMEM_SIGNAL_ADD): the signal is
 *    never seen before the data. Both are delivered when the call returns (_nbi included).
 *  - non-blocking atomics: shmem_TYPENAME_atomic_{fetch,swap,compare_swap,fetch_inc,
 *    fetch_add,fetch_and,fetch_or,fetch_xor}_nbi (+ ctx, C11): *fetch is written before they
 *    return (the spec only promises it after shmem_quiet).
 *  - waits and tests on several variables: shmem_TYPENAME_{wait_until,test}_{all,any,some}
 *    and their _vector forms (+ C11). status may be NULL; a nonzero entry leaves its variable
 *    out. An empty set (nelems 0, or every entry left out): wait_until_all returns, test_all
 *    returns 1, the any forms return SIZE_MAX and the some forms 0.
 *  - shmem_malloc_with_hints (the hints change nothing here; unknown bits are ignored),
 *    shmem_pcontrol (no effect).
 */
#ifndef SHMEM_P2P15_H
#define SHMEM_P2P15_H

#ifndef SHMEM_H
#error "include <shmem.h>, not <shmem/p2p15.h>"
#endif

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

void *shmem_malloc_with_hints(size_t size, long hints);
static inline void shmem_pcontrol(const int level, ...) { (void)level; }

uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* Internal entry points of the generated families. */
void unimem_shmem_put_signal(const char *routine, void *dest, const void *src, size_t n,
                             uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
size_t unimem_shmem_wait15(const char *routine, int kind, int test, int type, void *ivars,
                           size_t nelems, size_t *indices, const int *status, int cmp,
                           const void *values, int vector);

/* ---- Put-with-signal ---- */

#define _SHMEM_SIG_ARGS(T)                                                                      \
  (T * dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op,   \
   int pe),                                                                                     \
      (dest, source, nelems, sig_addr, signal, sig_op, pe)

/* shmem_NAME_put_signal and _nbi: TP the pointed type, SZ the bytes of an element. */
#define _SHMEM_PUT_SIGNAL(NAME, TP, SZ)                                                         \
  static inline void shmem_##NAME##_signal(TP *dest, const TP *source, size_t nelems,            \
                                           uint64_t *sig_addr, uint64_t signal, int sig_op,     \
                                           int pe) {                                            \
    unimem_shmem_put_signal("shmem_" #NAME "_signal", dest, source, nelems * (SZ), sig_addr,    \
                            signal, sig_op, pe);                                                \
  }                                                                                             \
  static inline void shmem_##NAME##_signal_nbi(TP *dest, const TP *source, size_t nelems,        \
                                               uint64_t *sig_addr, uint64_t signal,             \
                                               int sig_op, int pe) {                            \
    unimem_shmem_put_signal("shmem_" #NAME "_signal_nbi", dest, source, nelems * (SZ),          \
                            sig_addr, signal, sig_op, pe);                                      \
  }                                                                                             \
  _SHMEM_CTX_V1(NAME##_signal, _SHMEM_SIG_ARGS(TP))                                             \
  _SHMEM_CTX_V1(NAME##_signal_nbi, _SHMEM_SIG_ARGS(TP))

#define _SHMEM_PUT_SIGNAL_T(N, T) _SHMEM_PUT_SIGNAL(N##_put, T, sizeof(T))

_SHMEM_PUT_SIGNAL_T(float, float)
_SHMEM_PUT_SIGNAL_T(double, double)
_SHMEM_PUT_SIGNAL_T(longdouble, long double)
_SHMEM_PUT_SIGNAL_T(char, char)
_SHMEM_PUT_SIGNAL_T(schar, signed char)
_SHMEM_PUT_SIGNAL_T(short, short)
_SHMEM_PUT_SIGNAL_T(int, int)
_SHMEM_PUT_SIGNAL_T(long, long)
_SHMEM_PUT_SIGNAL_T(longlong, long long)
_SHMEM_PUT_SIGNAL_T(uchar, unsigned char)
_SHMEM_PUT_SIGNAL_T(ushort, unsigned short)
_SHMEM_PUT_SIGNAL_T(uint, unsigned int)
_SHMEM_PUT_SIGNAL_T(ulong, unsigned long)
_SHMEM_PUT_SIGNAL_T(ulonglong, unsigned long long)
_SHMEM_PUT_SIGNAL_T(int8, int8_t)
_SHMEM_PUT_SIGNAL_T(int16, int16_t)
_SHMEM_PUT_SIGNAL_T(int32, int32_t)
_SHMEM_PUT_SIGNAL_T(int64, int64_t)
_SHMEM_PUT_SIGNAL_T(uint8, uint8_t)
_SHMEM_PUT_SIGNAL_T(uint16, uint16_t)
_SHMEM_PUT_SIGNAL_T(uint32, uint32_t)
_SHMEM_PUT_SIGNAL_T(uint64, uint64_t)
_SHMEM_PUT_SIGNAL_T(size, size_t)
_SHMEM_PUT_SIGNAL_T(ptrdiff, ptrdiff_t)
_SHMEM_PUT_SIGNAL(put8, void, 1)
_SHMEM_PUT_SIGNAL(put16, void, 2)
_SHMEM_PUT_SIGNAL(put32, void, 4)
_SHMEM_PUT_SIGNAL(put64, void, 8)
_SHMEM_PUT_SIGNAL(put128, void, 16)
_SHMEM_PUT_SIGNAL(putmem, void, 1)

/* ---- Non-blocking atomics: the operation is done, and *fetch written, at once ---- */

/* shmem_N_atomic_NAME_nbi(T *fetch, PARAMS): *fetch = old value of OP(a, b) on dest. */
#define _SHMEM_AMO_NBI(N, T, NAME, OP, PARAMS, ARGS, DEST, A, B)                                \
  static inline void shmem_##N##_atomic_##NAME##_nbi(T *fetch, _SHMEM_UNPAREN PARAMS) {         \
    uint64_t r = unimem_shmem_amo("shmem_" #N "_atomic_" #NAME "_nbi", (void *)(DEST),          \
                                  sizeof(T), OP, A, B, pe);                                     \
    memcpy(fetch, &r, sizeof(T));                                                               \
  }                                                                                             \
  static inline void shmem_ctx_##N##_atomic_##NAME##_nbi(shmem_ctx_t ctx, T *fetch,             \
                                                         _SHMEM_UNPAREN PARAMS) {               \
    pe = _shmem_ctx_pe(ctx, pe);                                                                \
    shmem_##N##_atomic_##NAME##_nbi(fetch, _SHMEM_UNPAREN ARGS);                                \
  }
#define _SHMEM_NBI_VALUE(N, T, NAME, OP)                                                        \
  _SHMEM_AMO_NBI(N, T, NAME, OP, (T * dest, T value, int pe), (dest, value, pe), dest,         \
                 _shmem_bits(&value, sizeof(T)), 0)

/* fetch, swap: every AMO type. */
#define _SHMEM_AMO_EXT_NBI(N, T)                                                                \
  _SHMEM_AMO_NBI(N, T, fetch, _SHMEM_AMO_FETCH, (const T *source, int pe), (source, pe),        \
                 source, 0, 0)                                                                  \
  _SHMEM_NBI_VALUE(N, T, swap, _SHMEM_AMO_SWAP)
/* compare_swap, fetch_inc, fetch_add: the standard AMO types. */
#define _SHMEM_AMO_STD_NBI(N, T)                                                                \
  _SHMEM_AMO_EXT_NBI(N, T)                                                                      \
  _SHMEM_AMO_NBI(N, T, compare_swap, _SHMEM_AMO_CSWAP, (T * dest, T cond, T value, int pe),     \
                 (dest, cond, value, pe), dest, _shmem_bits(&cond, sizeof(T)),                  \
                 _shmem_bits(&value, sizeof(T)))                                                \
  _SHMEM_AMO_NBI(N, T, fetch_inc, _SHMEM_AMO_FADD, (T * dest, int pe), (dest, pe), dest, 1, 0)  \
  _SHMEM_NBI_VALUE(N, T, fetch_add, _SHMEM_AMO_FADD)
/* fetch_and, fetch_or, fetch_xor: the bitwise AMO types. */
#define _SHMEM_AMO_BIT_NBI(N, T)                                                                \
  _SHMEM_NBI_VALUE(N, T, fetch_and, _SHMEM_AMO_FAND)                                            \
  _SHMEM_NBI_VALUE(N, T, fetch_or, _SHMEM_AMO_FOR)                                              \
  _SHMEM_NBI_VALUE(N, T, fetch_xor, _SHMEM_AMO_FXOR)

_SHMEM_AMO_STD_NBI(int, int)
_SHMEM_AMO_STD_NBI(long, long)
_SHMEM_AMO_STD_NBI(longlong, long long)
_SHMEM_AMO_STD_NBI(uint, unsigned int)
_SHMEM_AMO_STD_NBI(ulong, unsigned long)
_SHMEM_AMO_STD_NBI(ulonglong, unsigned long long)
_SHMEM_AMO_STD_NBI(int32, int32_t)
_SHMEM_AMO_STD_NBI(int64, int64_t)
_SHMEM_AMO_STD_NBI(uint32, uint32_t)
_SHMEM_AMO_STD_NBI(uint64, uint64_t)
_SHMEM_AMO_STD_NBI(size, size_t)
_SHMEM_AMO_STD_NBI(ptrdiff, ptrdiff_t)
_SHMEM_AMO_EXT_NBI(float, float)
_SHMEM_AMO_EXT_NBI(double, double)
_SHMEM_AMO_BIT_NBI(uint, unsigned int)
_SHMEM_AMO_BIT_NBI(ulong, unsigned long)
_SHMEM_AMO_BIT_NBI(ulonglong, unsigned long long)
_SHMEM_AMO_BIT_NBI(int32, int32_t)
_SHMEM_AMO_BIT_NBI(int64, int64_t)
_SHMEM_AMO_BIT_NBI(uint32, uint32_t)
_SHMEM_AMO_BIT_NBI(uint64, uint64_t)

/* ---- Waits and tests on several variables ---- */

/* The element type code of unimem_shmem_wait15: its size, 0x100 if signed. */
#define _SHMEM_WAIT_TY(T) ((int)sizeof(T) | (((T)-1 < (T)1) ? 0x100 : 0))
#define _SHMEM_W15(N, T, NAME, KIND, TEST, IND, VAL, VEC)                                       \
  unimem_shmem_wait15("shmem_" #N "_" #NAME, KIND, TEST, _SHMEM_WAIT_TY(T), ivars, nelems, IND, \
                      status, cmp, VAL, VEC)

#define _SHMEM_WAIT15(N, T)                                                                     \
  static inline void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status,     \
                                                int cmp, T cmp_value) {                         \
    (void)_SHMEM_W15(N, T, wait_until_all, 0, 0, NULL, &cmp_value, 0);                          \
  }                                                                                             \
  static inline size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status,   \
                                                  int cmp, T cmp_value) {                       \
    return _SHMEM_W15(N, T, wait_until_any, 1, 0, NULL, &cmp_value, 0);                         \
  }                                                                                             \
  static inline size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices,    \
                                                   const int *status, int cmp, T cmp_value) {   \
    return _SHMEM_W15(N, T, wait_until_some, 2, 0, indices, &cmp_value, 0);                     \
  }                                                                                             \
  static inline void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems,                 \
                                                       const int *status, int cmp,              \
                                                       T *cmp_values) {                         \
    (void)_SHMEM_W15(N, T, wait_until_all_vector, 0, 0, NULL, cmp_values, 1);                   \
  }                                                                                             \
  static inline size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems,               \
                                                         const int *status, int cmp,            \
                                                         T *cmp_values) {                       \
    return _SHMEM_W15(N, T, wait_until_any_vector, 1, 0, NULL, cmp_values, 1);                  \
  }                                                                                             \
  static inline size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems,              \
                                                          size_t *indices, const int *status,   \
                                                          int cmp, T *cmp_values) {             \
    return _SHMEM_W15(N, T, wait_until_some_vector, 2, 0, indices, cmp_values, 1);              \
  }                                                                                             \
  static inline int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp,   \
                                         T cmp_value) {                                         \
    return (int)_SHMEM_W15(N, T, test_all, 0, 1, NULL, &cmp_value, 0);                          \
  }                                                                                             \
  static inline size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status,         \
                                            int cmp, T cmp_value) {                             \
    return _SHMEM_W15(N, T, test_any, 1, 1, NULL, &cmp_value, 0);                               \
  }                                                                                             \
  static inline size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices,          \
                                             const int *status, int cmp, T cmp_value) {         \
    return _SHMEM_W15(N, T, test_some, 2, 1, indices, &cmp_value, 0);                           \
  }                                                                                             \
  static inline int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status,     \
                                                int cmp, T *cmp_values) {                       \
    return (int)_SHMEM_W15(N, T, test_all_vector, 0, 1, NULL, cmp_values, 1);                   \
  }                                                                                             \
  static inline size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status,  \
                                                   int cmp, T *cmp_values) {                    \
    return _SHMEM_W15(N, T, test_any_vector, 1, 1, NULL, cmp_values, 1);                        \
  }                                                                                             \
  static inline size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices,   \
                                                    const int *status, int cmp,                 \
                                                    T *cmp_values) {                            \
    return _SHMEM_W15(N, T, test_some_vector, 2, 1, indices, cmp_values, 1);                    \
  }

_SHMEM_WAIT15(short, short)
_SHMEM_WAIT15(int, int)
_SHMEM_WAIT15(long, long)
_SHMEM_WAIT15(longlong, long long)
_SHMEM_WAIT15(ushort, unsigned short)
_SHMEM_WAIT15(uint, unsigned int)
_SHMEM_WAIT15(ulong, unsigned long)
_SHMEM_WAIT15(ulonglong, unsigned long long)
_SHMEM_WAIT15(int32, int32_t)
_SHMEM_WAIT15(int64, int64_t)
_SHMEM_WAIT15(uint32, uint32_t)
_SHMEM_WAIT15(uint64, uint64_t)
_SHMEM_WAIT15(size, size_t)
_SHMEM_WAIT15(ptrdiff, ptrdiff_t)

/* ---- C11 generic interfaces ---- */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

/* The argument count up to 8 (shmem.h's _SHMEM_NARGS stops at 7). */
#define _SHMEM_P2P_NARGS(...) _SHMEM_P2P_NARGS_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define _SHMEM_P2P_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, N, ...) N
#define _SHMEM_P2P_CALL(name, ...) \
  _SHMEM_CAT(_shmem_g_##name##_, _SHMEM_P2P_NARGS(__VA_ARGS__))(__VA_ARGS__)

#define shmem_put_signal(...) _SHMEM_P2P_CALL(put_signal, __VA_ARGS__)
#define _shmem_g_put_signal_7(dest, source, nelems, sig_addr, signal, sig_op, pe) \
  _SHMEM_G_RMA(dest, put_signal)(dest, source, nelems, sig_addr, signal, sig_op, pe)
#define _shmem_g_put_signal_8(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe) \
  _SHMEM_G_RMA_CTX(dest, put_signal)(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe)
#define shmem_put_signal_nbi(...) _SHMEM_P2P_CALL(put_signal_nbi, __VA_ARGS__)
#define _shmem_g_put_signal_nbi_7(dest, source, nelems, sig_addr, signal, sig_op, pe) \
  _SHMEM_G_RMA(dest, put_signal_nbi)(dest, source, nelems, sig_addr, signal, sig_op, pe)
#define _shmem_g_put_signal_nbi_8(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe) \
  _SHMEM_G_RMA_CTX(dest, put_signal_nbi)(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe)

#define shmem_atomic_fetch_nbi(...) _SHMEM_P2P_CALL(atomic_fetch_nbi, __VA_ARGS__)
#define _shmem_g_atomic_fetch_nbi_3(fetch, source, pe) \
  _SHMEM_G_AMO_EXT(source, fetch_nbi)(fetch, source, pe)
#define _shmem_g_atomic_fetch_nbi_4(ctx, fetch, source, pe) \
  _SHMEM_G_AMO_EXT_CTX(source, fetch_nbi)(ctx, fetch, source, pe)
#define shmem_atomic_swap_nbi(...) _SHMEM_P2P_CALL(atomic_swap_nbi, __VA_ARGS__)
#define _shmem_g_atomic_swap_nbi_4(fetch, dest, value, pe) \
  _SHMEM_G_AMO_EXT(dest, swap_nbi)(fetch, dest, value, pe)
#define _shmem_g_atomic_swap_nbi_5(ctx, fetch, dest, value, pe) \
  _SHMEM_G_AMO_EXT_CTX(dest, swap_nbi)(ctx, fetch, dest, value, pe)
#define shmem_atomic_compare_swap_nbi(...) _SHMEM_P2P_CALL(atomic_compare_swap_nbi, __VA_ARGS__)
#define _shmem_g_atomic_compare_swap_nbi_5(fetch, dest, cond, value, pe) \
  _SHMEM_G_AMO(dest, compare_swap_nbi)(fetch, dest, cond, value, pe)
#define _shmem_g_atomic_compare_swap_nbi_6(ctx, fetch, dest, cond, value, pe) \
  _SHMEM_G_AMO_CTX(dest, compare_swap_nbi)(ctx, fetch, dest, cond, value, pe)
#define shmem_atomic_fetch_inc_nbi(...) _SHMEM_P2P_CALL(atomic_fetch_inc_nbi, __VA_ARGS__)
#define _shmem_g_atomic_fetch_inc_nbi_3(fetch, dest, pe) \
  _SHMEM_G_AMO(dest, fetch_inc_nbi)(fetch, dest, pe)
#define _shmem_g_atomic_fetch_inc_nbi_4(ctx, fetch, dest, pe) \
  _SHMEM_G_AMO_CTX(dest, fetch_inc_nbi)(ctx, fetch, dest, pe)
#define shmem_atomic_fetch_add_nbi(...) _SHMEM_P2P_CALL(atomic_fetch_add_nbi, __VA_ARGS__)
#define _shmem_g_atomic_fetch_add_nbi_4(fetch, dest, value, pe) \
  _SHMEM_G_AMO(dest, fetch_add_nbi)(fetch, dest, value, pe)
#define _shmem_g_atomic_fetch_add_nbi_5(ctx, fetch, dest, value, pe) \
  _SHMEM_G_AMO_CTX(dest, fetch_add_nbi)(ctx, fetch, dest, value, pe)
#define shmem_atomic_fetch_and_nbi(...) _SHMEM_P2P_CALL(atomic_fetch_and_nbi, __VA_ARGS__)
#define _shmem_g_atomic_fetch_and_nbi_4(fetch, dest, value, pe) \
  _SHMEM_G_AMO_BIT(dest, fetch_and_nbi)(fetch, dest, value, pe)
#define _shmem_g_atomic_fetch_and_nbi_5(ctx, fetch, dest, value, pe) \
  _SHMEM_G_AMO_BIT_CTX(dest, fetch_and_nbi)(ctx, fetch, dest, value, pe)
#define shmem_atomic_fetch_or_nbi(...) _SHMEM_P2P_CALL(atomic_fetch_or_nbi, __VA_ARGS__)
#define _shmem_g_atomic_fetch_or_nbi_4(fetch, dest, value, pe) \
  _SHMEM_G_AMO_BIT(dest, fetch_or_nbi)(fetch, dest, value, pe)
#define _shmem_g_atomic_fetch_or_nbi_5(ctx, fetch, dest, value, pe) \
  _SHMEM_G_AMO_BIT_CTX(dest, fetch_or_nbi)(ctx, fetch, dest, value, pe)
#define shmem_atomic_fetch_xor_nbi(...) _SHMEM_P2P_CALL(atomic_fetch_xor_nbi, __VA_ARGS__)
#define _shmem_g_atomic_fetch_xor_nbi_4(fetch, dest, value, pe) \
  _SHMEM_G_AMO_BIT(dest, fetch_xor_nbi)(fetch, dest, value, pe)
#define _shmem_g_atomic_fetch_xor_nbi_5(ctx, fetch, dest, value, pe) \
  _SHMEM_G_AMO_BIT_CTX(dest, fetch_xor_nbi)(ctx, fetch, dest, value, pe)

#define shmem_wait_until_all(ivars, nelems, status, cmp, cmp_value) \
  _SHMEM_G_WAIT(ivars, wait_until_all)(ivars, nelems, status, cmp, cmp_value)
#define shmem_wait_until_any(ivars, nelems, status, cmp, cmp_value) \
  _SHMEM_G_WAIT(ivars, wait_until_any)(ivars, nelems, status, cmp, cmp_value)
#define shmem_wait_until_some(ivars, nelems, indices, status, cmp, cmp_value) \
  _SHMEM_G_WAIT(ivars, wait_until_some)(ivars, nelems, indices, status, cmp, cmp_value)
#define shmem_wait_until_all_vector(ivars, nelems, status, cmp, cmp_values) \
  _SHMEM_G_WAIT(ivars, wait_until_all_vector)(ivars, nelems, status, cmp, cmp_values)
#define shmem_wait_until_any_vector(ivars, nelems, status, cmp, cmp_values) \
  _SHMEM_G_WAIT(ivars, wait_until_any_vector)(ivars, nelems, status, cmp, cmp_values)
#define shmem_wait_until_some_vector(ivars, nelems, indices, status, cmp, cmp_values) \
  _SHMEM_G_WAIT(ivars, wait_until_some_vector)(ivars, nelems, indices, status, cmp, cmp_values)
#define shmem_test_all(ivars, nelems, status, cmp, cmp_value) \
  _SHMEM_G_WAIT(ivars, test_all)(ivars, nelems, status, cmp, cmp_value)
#define shmem_test_any(ivars, nelems, status, cmp, cmp_value) \
  _SHMEM_G_WAIT(ivars, test_any)(ivars, nelems, status, cmp, cmp_value)
#define shmem_test_some(ivars, nelems, indices, status, cmp, cmp_value) \
  _SHMEM_G_WAIT(ivars, test_some)(ivars, nelems, indices, status, cmp, cmp_value)
#define shmem_test_all_vector(ivars, nelems, status, cmp, cmp_values) \
  _SHMEM_G_WAIT(ivars, test_all_vector)(ivars, nelems, status, cmp, cmp_values)
#define shmem_test_any_vector(ivars, nelems, status, cmp, cmp_values) \
  _SHMEM_G_WAIT(ivars, test_any_vector)(ivars, nelems, status, cmp, cmp_values)
#define shmem_test_some_vector(ivars, nelems, indices, status, cmp, cmp_values) \
  _SHMEM_G_WAIT(ivars, test_some_vector)(ivars, nelems, indices, status, cmp, cmp_values)

#endif /* C11 */

#endif /* SHMEM_P2P15_H */
