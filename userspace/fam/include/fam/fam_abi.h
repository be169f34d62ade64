/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fam/fam_abi.h: the part of libunimem_fam's C ABI that OpenFAM's C API (fam_c.h) has no
 * name for. The C++ API (fam.h) is inline code over fam_c.h and these unimem_fam_*
 * functions; C programs may call them too, but they are unimem's, not OpenFAM's.
 *
 * Same conventions as fam_c.h: int results are 0 or minus a Fam_Error code, and a failure
 * sets the calling thread's c_fam_error() / c_fam_error_msg(). Descriptor accessors
 * cannot fail: given NULL, getters return 0 / NULL and setters do nothing.
 *
 * Every type here is a plain C type: 128-bit values pass by pointer, so a Rust
 * implementation needs no i128 in its extern "C" signatures for these.
 */
/* Before the guard: fam_c.h includes fam.h, whose C++ part needs this header complete. */
#include <fam/fam_c.h>

#ifndef UNIMEM_FAM_ABI_H
#define UNIMEM_FAM_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---- operations OpenFAM's C API lacks ------------------------------------------------- */

/* Wait until every PE of the group has called it (fam::fam_barrier_all). */
int unimem_fam_barrier_all(c_fam *fam_obj);
/* Listing of the backups matching backup_name in *out, a malloc() string the caller frees
 * (fam::fam_list_backup). */
int unimem_fam_list_backup(c_fam *fam_obj, const char *backup_name, char **out);
/* fam::fam_set(int128_t) with the value passed by pointer. */
int unimem_fam_set_int128p(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                           const int128_t *value);
/* fam::fam_compare_swap(int128_t) with the values passed by pointer. */
int unimem_fam_compare_swap_int128p(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                                    const int128_t *old_val, const int128_t *new_val,
                                    int128_t *ret_val);
/* Clear the library's profiling counters (fam::fam_reset_profile, FAM_PROFILE builds). */
int unimem_fam_reset_profile(c_fam *fam_obj);

/* ---- descriptors ---------------------------------------------------------------------- */
/*
 * A descriptor handle (c_fam_region_desc * or c_fam_desc *) is a reference-counted object
 * of the library. The handles the c_fam_* functions return carry one reference, owned by
 * the caller; unimem_fam_desc_release drops it. A descriptor keeps the metadata the
 * library caches about its region or data item (size, permissions, name, keys, servers...);
 * the library fills it in when it validates the descriptor.
 */

#define UNIMEM_FAM_DESC_ITEM 0   /* data item: Fam_Descriptor, c_fam_desc */
#define UNIMEM_FAM_DESC_REGION 1 /* region: Fam_Region_Descriptor, c_fam_region_desc */

/*
 * New descriptor of kind UNIMEM_FAM_DESC_* in *out, with one reference. gdesc NULL: an
 * unbound descriptor (OpenFAM's default constructor). size 0: not known yet. Status
 * DESC_UNINITIALIZED; the library validates it on first use.
 */
int unimem_fam_desc_new(int kind, const Fam_Global_Descriptor *gdesc, uint64_t size,
                        void **out);
/* Take / drop a reference; the last release frees the descriptor. */
void unimem_fam_desc_retain(void *desc);
void unimem_fam_desc_release(void *desc);
/* Global (process-independent) descriptor; {0, 0} for NULL or an unbound descriptor. */
Fam_Global_Descriptor unimem_fam_desc_global(const void *desc);

/* Scalar attributes, read and written as uint64_t (enums and mode_t widened). */
#define UNIMEM_FAM_ATTR_KIND 0               /* UNIMEM_FAM_DESC_*; read-only */
#define UNIMEM_FAM_ATTR_STATUS 1             /* Fam_Descriptor_Status */
#define UNIMEM_FAM_ATTR_SIZE 2               /* bytes */
#define UNIMEM_FAM_ATTR_PERM 3               /* mode_t */
#define UNIMEM_FAM_ATTR_UID 4                /* owner */
#define UNIMEM_FAM_ATTR_GID 5                /* group */
#define UNIMEM_FAM_ATTR_PERMISSION_LEVEL 6   /* Fam_Permission_Level */
#define UNIMEM_FAM_ATTR_INTERLEAVE_SIZE 7    /* item: bytes per server stripe */
#define UNIMEM_FAM_ATTR_USED_MEMSRV_CNT 8    /* item: servers the item spans */
#define UNIMEM_FAM_ATTR_FIRST_MEMSERVER_ID 9 /* item: first server; read-only */
#define UNIMEM_FAM_ATTR_REDUNDANCY_LEVEL 10  /* region: Fam_Redundancy_Level */
#define UNIMEM_FAM_ATTR_MEMORY_TYPE 11       /* region: Fam_Memory_Type */
#define UNIMEM_FAM_ATTR_INTERLEAVE_ENABLE 12 /* region: Fam_Interleave_Enable */
#define UNIMEM_FAM_ATTR_ALLOCATION_POLICY 13 /* region: Fam_Allocation_Policy */
#define UNIMEM_FAM_ATTR_MEMSERVER_ID 14      /* region: its (first) server; read-only */

/* Value of attribute attr (0 if the descriptor's kind has no such attribute). */
uint64_t unimem_fam_desc_get(const void *desc, int attr);
/* Set attribute attr (ignored for read-only ones and other kinds' ones). */
void unimem_fam_desc_set(void *desc, int attr, uint64_t value);

/* Name (owned by the descriptor, valid until it is freed or renamed), or NULL. */
char *unimem_fam_desc_name(const void *desc);
/* Set the name to a copy of name (NULL clears it). */
void unimem_fam_desc_set_name(void *desc, const char *name);

/* Opaque pointer the program may attach to a descriptor (get_context / set_context). */
void *unimem_fam_desc_context(const void *desc);
void unimem_fam_desc_set_context(void *desc, void *context);

/* Arrays of uint64_t a data item descriptor keeps, one entry per memory server it spans. */
#define UNIMEM_FAM_ARRAY_KEYS 0          /* access keys */
#define UNIMEM_FAM_ARRAY_BASE_ADDRESSES 1 /* base address on each server */
#define UNIMEM_FAM_ARRAY_MEMSERVER_IDS 2  /* server ids */

/* The array (owned by the descriptor, valid until it is freed or the array set), or NULL
 * if unset; its length in *count if count is not NULL. */
uint64_t *unimem_fam_desc_array(const void *desc, int which, uint64_t *count);
/* Replace the array with a copy of values[0 .. count-1] (count 0: unset it). */
void unimem_fam_desc_set_array(void *desc, int which, const uint64_t *values,
                               uint64_t count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UNIMEM_FAM_ABI_H */
