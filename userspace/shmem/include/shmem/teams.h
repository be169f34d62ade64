/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shmem/teams.h: OpenSHMEM 1.5 teams and team collectives for unimem (included by shmem.h;
 * see docs/SHMEM.md, "Teams").
 *
 * A team is created by a split of a parent team, collectively over the parent's members;
 * every PE has at most 64 teams at once (SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED included),
 * beyond which a split returns non-zero and SHMEM_TEAM_INVALID. SHMEM_TEAM_SHARED is the PEs
 * of the caller's node: shmem_ptr reaches exactly those.
 *
 * The team collectives return 0, or non-zero for an invalid team; as the 1.4 routines, they
 * end the job on an error in their data (a buffer that is not symmetric, a root that is not
 * a PE of the team). The broadcast writes dest on the root too (1.5). The reductions combine
 * in team order with C's arithmetic of the type. With 0 elements, source and dest may be NULL
 * (they are not looked at); the team still synchronizes.
 */
#ifndef SHMEM_TEAMS_H
#define SHMEM_TEAMS_H

typedef struct unimem_shmem_team *shmem_team_t;
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_TEAM_WORLD ((shmem_team_t)1)
#define SHMEM_TEAM_SHARED ((shmem_team_t)2)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)-1)

typedef struct {
  int num_contexts;
} shmem_team_config_t;
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);
int shmem_team_sync(shmem_team_t team);
/* NULL where shmem_ptr is (PEs of other nodes), and for a PE not in the team. */
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);
/* A context of a team: its RMA and atomics (typed, and the C11 forms with a context first) take
 * PE numbers of the team. A team split with SHMEM_TEAM_NUM_CONTEXTS in its mask has at most
 * num_contexts contexts at once: one more returns non-zero and SHMEM_CTX_INVALID until one is
 * destroyed. Without that mask, no limit (and shmem_team_get_config reports 0). */
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* Internal entry points of the generated families. */
int unimem_shmem_team_coll(shmem_team_t team, int kind, size_t width, void *dest,
                           const void *source, size_t nelems, int root, ptrdiff_t dst,
                           ptrdiff_t sst);
int unimem_shmem_team_reduce(shmem_team_t team, void *dest, const void *source, size_t nreduce,
                             size_t size, void (*combine)(void *, const void *, size_t));

/* ---- Team collectives ---- */

static inline int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source,
                                     size_t nelems, int PE_root) {
  return unimem_shmem_team_coll(team, 0, 1, dest, source, nelems, PE_root, 1, 1);
}
static inline int shmem_collectmem(shmem_team_t team, void *dest, const void *source,
                                   size_t nelems) {
  return unimem_shmem_team_coll(team, 1, 1, dest, source, nelems, 0, 1, 1);
}
static inline int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source,
                                    size_t nelems) {
  return unimem_shmem_team_coll(team, 2, 1, dest, source, nelems, 0, 1, 1);
}
static inline int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source,
                                    size_t nelems) {
  return unimem_shmem_team_coll(team, 3, 1, dest, source, nelems, 0, 1, 1);
}
static inline int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source,
                                     ptrdiff_t dst, ptrdiff_t sst, size_t nelems) {
  return unimem_shmem_team_coll(team, 4, 1, dest, source, nelems, 0, dst, sst);
}

#define _SHMEM_TEAM_COLL(N, T)                                                                  \
  static inline int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source,         \
                                          size_t nelems, int PE_root) {                         \
    return unimem_shmem_team_coll(team, 0, sizeof(T), dest, source, nelems, PE_root, 1, 1);    \
  }                                                                                             \
  static inline int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source,           \
                                        size_t nelems) {                                        \
    return unimem_shmem_team_coll(team, 1, sizeof(T), dest, source, nelems, 0, 1, 1);          \
  }                                                                                             \
  static inline int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source,          \
                                         size_t nelems) {                                       \
    return unimem_shmem_team_coll(team, 2, sizeof(T), dest, source, nelems, 0, 1, 1);          \
  }                                                                                             \
  static inline int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source,          \
                                         size_t nelems) {                                       \
    return unimem_shmem_team_coll(team, 3, sizeof(T), dest, source, nelems, 0, 1, 1);          \
  }                                                                                             \
  static inline int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source,         \
                                          ptrdiff_t dst, ptrdiff_t sst, size_t nelems) {        \
    return unimem_shmem_team_coll(team, 4, sizeof(T), dest, source, nelems, 0, dst, sst);      \
  }

_SHMEM_TEAM_COLL(float, float)
_SHMEM_TEAM_COLL(double, double)
_SHMEM_TEAM_COLL(longdouble, long double)
_SHMEM_TEAM_COLL(char, char)
_SHMEM_TEAM_COLL(schar, signed char)
_SHMEM_TEAM_COLL(short, short)
_SHMEM_TEAM_COLL(int, int)
_SHMEM_TEAM_COLL(long, long)
_SHMEM_TEAM_COLL(longlong, long long)
_SHMEM_TEAM_COLL(uchar, unsigned char)
_SHMEM_TEAM_COLL(ushort, unsigned short)
_SHMEM_TEAM_COLL(uint, unsigned int)
_SHMEM_TEAM_COLL(ulong, unsigned long)
_SHMEM_TEAM_COLL(ulonglong, unsigned long long)
_SHMEM_TEAM_COLL(int8, int8_t)
_SHMEM_TEAM_COLL(int16, int16_t)
_SHMEM_TEAM_COLL(int32, int32_t)
_SHMEM_TEAM_COLL(int64, int64_t)
_SHMEM_TEAM_COLL(uint8, uint8_t)
_SHMEM_TEAM_COLL(uint16, uint16_t)
_SHMEM_TEAM_COLL(uint32, uint32_t)
_SHMEM_TEAM_COLL(uint64, uint64_t)
_SHMEM_TEAM_COLL(size, size_t)
_SHMEM_TEAM_COLL(ptrdiff, ptrdiff_t)

/* ---- Team reductions: shmem_TYPENAME_OP_reduce(team, dest, source, nreduce) ---- */

#define _SHMEM_TR_and(a, b) ((a) & (b))
#define _SHMEM_TR_or(a, b) ((a) | (b))
#define _SHMEM_TR_xor(a, b) ((a) ^ (b))
#define _SHMEM_TR_min(a, b) ((b) < (a) ? (b) : (a))
#define _SHMEM_TR_max(a, b) ((b) > (a) ? (b) : (a))
#define _SHMEM_TR_sum(a, b) ((a) + (b))
#define _SHMEM_TR_prod(a, b) ((a) * (b))

#define _SHMEM_TEAM_REDUCE(N, T, OP)                                                            \
  static inline void _shmem_tr_##N##_##OP(void *acc, const void *x, size_t n) {                 \
    T *a = (T *)acc;                                                                            \
    const T *b = (const T *)x;                                                                  \
    for (size_t i = 0; i < n; i++)                                                              \
      a[i] = (T)_SHMEM_TR_##OP(a[i], b[i]);                                                     \
  }                                                                                             \
  static inline int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source,     \
                                              size_t nreduce) {                                 \
    return unimem_shmem_team_reduce(team, dest, source, nreduce, sizeof(T),                    \
                                    _shmem_tr_##N##_##OP);                                      \
  }

/* The spec's type tables: bitwise operations on the unsigned and fixed-size types; min and
 * max also on the signed and floating types; sum and prod also on the complex ones. */
#define _SHMEM_TR_BIT(N, T)                                                                     \
  _SHMEM_TEAM_REDUCE(N, T, and) _SHMEM_TEAM_REDUCE(N, T, or) _SHMEM_TEAM_REDUCE(N, T, xor)
#define _SHMEM_TR_ARITH(N, T)                                                                   \
  _SHMEM_TEAM_REDUCE(N, T, min)                                                                 \
  _SHMEM_TEAM_REDUCE(N, T, max) _SHMEM_TEAM_REDUCE(N, T, sum) _SHMEM_TEAM_REDUCE(N, T, prod)
#define _SHMEM_TR_ALL(N, T) _SHMEM_TR_BIT(N, T) _SHMEM_TR_ARITH(N, T)

_SHMEM_TR_ARITH(char, char)
_SHMEM_TR_ARITH(schar, signed char)
_SHMEM_TR_ARITH(short, short)
_SHMEM_TR_ARITH(int, int)
_SHMEM_TR_ARITH(long, long)
_SHMEM_TR_ARITH(longlong, long long)
_SHMEM_TR_ARITH(ptrdiff, ptrdiff_t)
_SHMEM_TR_ALL(uchar, unsigned char)
_SHMEM_TR_ALL(ushort, unsigned short)
_SHMEM_TR_ALL(uint, unsigned int)
_SHMEM_TR_ALL(ulong, unsigned long)
_SHMEM_TR_ALL(ulonglong, unsigned long long)
_SHMEM_TR_ALL(int8, int8_t)
_SHMEM_TR_ALL(int16, int16_t)
_SHMEM_TR_ALL(int32, int32_t)
_SHMEM_TR_ALL(int64, int64_t)
_SHMEM_TR_ALL(uint8, uint8_t)
_SHMEM_TR_ALL(uint16, uint16_t)
_SHMEM_TR_ALL(uint32, uint32_t)
_SHMEM_TR_ALL(uint64, uint64_t)
_SHMEM_TR_ALL(size, size_t)
_SHMEM_TR_ARITH(float, float)
_SHMEM_TR_ARITH(double, double)
_SHMEM_TR_ARITH(longdouble, long double)
/* C++ has no _Complex but as GCC's and Clang's extension, which Sandia's cxx_ tests use. */
#if !defined(__cplusplus) || defined(__GNUC__)
_SHMEM_TEAM_REDUCE(complexf, float _Complex, sum)
_SHMEM_TEAM_REDUCE(complexf, float _Complex, prod)
_SHMEM_TEAM_REDUCE(complexd, double _Complex, sum)
_SHMEM_TEAM_REDUCE(complexd, double _Complex, prod)
#endif

/* ---- C11 generic interfaces: shmem_broadcast(team, ...), shmem_sum_reduce(team, ...),
 * shmem_sync(team) besides the 1.4 shmem_sync(PE_start, logPE_stride, PE_size, pSync) ---- */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

#define shmem_broadcast(team, dest, source, nelems, PE_root) \
  _SHMEM_G_RMA(dest, broadcast)(team, dest, source, nelems, PE_root)
#define shmem_collect(team, dest, source, nelems) \
  _SHMEM_G_RMA(dest, collect)(team, dest, source, nelems)
#define shmem_fcollect(team, dest, source, nelems) \
  _SHMEM_G_RMA(dest, fcollect)(team, dest, source, nelems)
#define shmem_alltoall(team, dest, source, nelems) \
  _SHMEM_G_RMA(dest, alltoall)(team, dest, source, nelems)
#define shmem_alltoalls(team, dest, source, dst, sst, nelems) \
  _SHMEM_G_RMA(dest, alltoalls)(team, dest, source, dst, sst, nelems)

/* The signed fixed-size types are signed char, short, int and long (int64_t, LP64). */
#define _SHMEM_G_TR_BIT(x, OP)                                                                  \
  _Generic(*(x), unsigned char: shmem_uchar_##OP##_reduce,                                      \
           unsigned short: shmem_ushort_##OP##_reduce, unsigned int: shmem_uint_##OP##_reduce, \
           unsigned long: shmem_ulong_##OP##_reduce,                                            \
           unsigned long long: shmem_ulonglong_##OP##_reduce,                                   \
           signed char: shmem_int8_##OP##_reduce, short: shmem_int16_##OP##_reduce,             \
           int: shmem_int32_##OP##_reduce, long: shmem_int64_##OP##_reduce)
#define _SHMEM_G_TR_MINMAX(x, OP)                                                               \
  _Generic(*(x), char: shmem_char_##OP##_reduce, signed char: shmem_schar_##OP##_reduce,        \
           short: shmem_short_##OP##_reduce, int: shmem_int_##OP##_reduce,                      \
           long: shmem_long_##OP##_reduce, long long: shmem_longlong_##OP##_reduce,             \
           unsigned char: shmem_uchar_##OP##_reduce,                                            \
           unsigned short: shmem_ushort_##OP##_reduce, unsigned int: shmem_uint_##OP##_reduce, \
           unsigned long: shmem_ulong_##OP##_reduce,                                            \
           unsigned long long: shmem_ulonglong_##OP##_reduce, float: shmem_float_##OP##_reduce, \
           double: shmem_double_##OP##_reduce, long double: shmem_longdouble_##OP##_reduce)
#define _SHMEM_G_TR_ARITH(x, OP)                                                                \
  _Generic(*(x), char: shmem_char_##OP##_reduce, signed char: shmem_schar_##OP##_reduce,        \
           short: shmem_short_##OP##_reduce, int: shmem_int_##OP##_reduce,                      \
           long: shmem_long_##OP##_reduce, long long: shmem_longlong_##OP##_reduce,             \
           unsigned char: shmem_uchar_##OP##_reduce,                                            \
           unsigned short: shmem_ushort_##OP##_reduce, unsigned int: shmem_uint_##OP##_reduce, \
           unsigned long: shmem_ulong_##OP##_reduce,                                            \
           unsigned long long: shmem_ulonglong_##OP##_reduce, float: shmem_float_##OP##_reduce, \
           double: shmem_double_##OP##_reduce, long double: shmem_longdouble_##OP##_reduce,     \
           float _Complex: shmem_complexf_##OP##_reduce,                                        \
           double _Complex: shmem_complexd_##OP##_reduce)

#define shmem_and_reduce(team, dest, source, nreduce) \
  _SHMEM_G_TR_BIT(dest, and)(team, dest, source, nreduce)
#define shmem_or_reduce(team, dest, source, nreduce) \
  _SHMEM_G_TR_BIT(dest, or)(team, dest, source, nreduce)
#define shmem_xor_reduce(team, dest, source, nreduce) \
  _SHMEM_G_TR_BIT(dest, xor)(team, dest, source, nreduce)
#define shmem_min_reduce(team, dest, source, nreduce) \
  _SHMEM_G_TR_MINMAX(dest, min)(team, dest, source, nreduce)
#define shmem_max_reduce(team, dest, source, nreduce) \
  _SHMEM_G_TR_MINMAX(dest, max)(team, dest, source, nreduce)
#define shmem_sum_reduce(team, dest, source, nreduce) \
  _SHMEM_G_TR_ARITH(dest, sum)(team, dest, source, nreduce)
#define shmem_prod_reduce(team, dest, source, nreduce) \
  _SHMEM_G_TR_ARITH(dest, prod)(team, dest, source, nreduce)

/* shmem_sync(team) (1.5) or the 1.4 active-set form, told apart by the argument count;
 * (shmem_sync)(...) still names the function. */
#define shmem_sync(...) _SHMEM_G_CALL(sync, __VA_ARGS__)
#define _shmem_g_sync_1(team) shmem_team_sync(team)
#define _shmem_g_sync_4(PE_start, logPE_stride, PE_size, pSync) \
  (shmem_sync)(PE_start, logPE_stride, PE_size, pSync)

#endif /* C11 */

#endif /* SHMEM_TEAMS_H */
