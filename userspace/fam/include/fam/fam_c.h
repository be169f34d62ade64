/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fam/fam_c.h: OpenFAM 3.x C API for unimem. Every function here is exported by
 * libunimem_fam (the Rust library), under these very names: this header is also the
 * main part of the library's C ABI (the rest is fam_abi.h; ABI.md lists both).
 *
 * Handles. c_fam is an instance of the library (c_fam_create) or a context opened on one
 * (c_fam_context_open): every function taking a c_fam * accepts either. c_fam_region_desc
 * and c_fam_desc are descriptors of a region and of a data item. All are opaque and owned
 * by the library; c_fam_delete frees an instance or a context, unimem_fam_desc_release
 * (fam_abi.h) a descriptor.
 *
 * Errors. A function returning int returns 0 on success and a negative value on failure:
 * minus the Fam_Error code (fam_exception.h), e.g. -FAM_ERR_NOPERM. OpenFAM returns -1 for
 * every failure, so code written for it that tests "!= 0" or "< 0" works unchanged, code
 * that tests "== -1" only sees FAM_ERR_UNKNOWN. A function returning a pointer returns NULL
 * on failure and only then. In both cases c_fam_error() and c_fam_error_msg() then give the
 * Fam_Error code (positive, as OpenFAM) and a message of the calling thread's last failure.
 *
 * Sizes are size_t as in OpenFAM; unimem runs on 64-bit targets, where size_t is uint64_t.
 */
#ifndef FAM_C_H_
#define FAM_C_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <fam/fam_types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void c_fam;             /* instance (c_fam_create) or context (c_fam_context_open) */
typedef void c_fam_region_desc; /* region descriptor */
typedef void c_fam_desc;        /* data item descriptor */
typedef void c_fam_context;     /* context; may be passed wherever a c_fam * is taken */

typedef Fam_Options c_fam_options;
typedef Fam_Interleave_Enable c_fam_Interleave_Enable;
typedef Fam_Memory_Type c_fam_Memory_Type;
typedef Fam_Redundancy_Level c_fam_Redundancy_Level;
typedef Fam_Region_Attributes c_fam_Region_Attributes;
typedef Fam_Stat c_fam_stat;
typedef Fam_Backup_Options c_fam_backup_options;

/* ---- instance, initialisation, options ---------------------------------------------- */

/* New, uninitialised instance; NULL if out of memory. */
c_fam *c_fam_create(void);
/* Free an instance (finalizing it first if needed) or a context (closing it if open). */
void c_fam_delete(c_fam *fam_obj);
/* Join the group group_name of cooperating PEs; fam_opts may be NULL (all defaults). */
int c_fam_initialize(c_fam *fam_obj, const char *group_name, c_fam_options *fam_opts);
/* Leave the group; the instance may be initialised again. */
int c_fam_finalize(c_fam *fam_obj, const char *group_name);
/* Terminate every PE of the group with status. */
int c_fam_abort(c_fam *fam_obj, int status);
/*
 * Names of the options fam_get_option knows, NULL-terminated. The array and its strings are
 * one malloc() block: the caller frees it with a single free().
 */
const char **c_fam_list_options(c_fam *fam_obj);
/*
 * Value of an option, in a malloc() block the caller frees: an int for PE_ID and PE_COUNT,
 * a uint64_t for LOC_BUF_SIZE, a NUL-terminated string for the others.
 */
const void *c_fam_get_option(c_fam *fam_obj, const char *option_name);

/* ---- regions ------------------------------------------------------------------------ */

/* Create a named region of size bytes; reg_att may be NULL (defaults). */
c_fam_region_desc *c_fam_create_region(c_fam *fam_obj, const char *region_name, size_t size,
                                       mode_t perm, c_fam_Region_Attributes *reg_att);
/* Descriptor of an existing region (NULL and FAM_ERR_NOTFOUND if there is none). */
c_fam_region_desc *c_fam_lookup_region(c_fam *fam_obj, const char *name);
/* Destroy a region and every data item in it; the descriptor stays to be released. */
int c_fam_destroy_region(c_fam *fam_obj, c_fam_region_desc *region_desc);
/* Grow or shrink a region to size bytes. */
int c_fam_resize_region(c_fam *fam_obj, c_fam_region_desc *region_desc, uint64_t size);
/* Size, permissions, name, owner, attributes and servers of a region. */
int c_fam_stat_region(c_fam *fam_obj, c_fam_region_desc *region_desc, c_fam_stat *stat);
/* Change the access permissions of a region. */
int c_fam_change_permissions_region(c_fam *fam_obj, c_fam_region_desc *region_desc,
                                    mode_t perm);

/* ---- data items --------------------------------------------------------------------- */

/* Allocate an unnamed data item in a region (NULL region: the default region). */
c_fam_desc *c_fam_allocate(c_fam *fam_obj, size_t size, mode_t perm,
                           c_fam_region_desc *region_desc);
/* Allocate a named data item in a region (NULL region: the default region). */
c_fam_desc *c_fam_allocate_named(c_fam *fam_obj, const char *name, size_t size, mode_t perm,
                                 c_fam_region_desc *region_desc);
/* Descriptor of an existing data item of a region (NULL and FAM_ERR_NOTFOUND if none). */
c_fam_desc *c_fam_lookup(c_fam *fam_obj, const char *name, const char *region_name);
/* Free a data item's memory; the descriptor stays to be released. */
int c_fam_deallocate(c_fam *fam_obj, c_fam_desc *desc);
/* Give up the resources this PE holds for a data item (keys, mappings); it stays. */
int c_fam_close(c_fam *fam_obj, c_fam_desc *desc);
/* Size, permissions, name, owner and servers of a data item. */
int c_fam_stat_data(c_fam *fam_obj, c_fam_desc *desc, c_fam_stat *stat);
/* Change the access permissions of a data item. */
int c_fam_change_permissions_data(c_fam *fam_obj, c_fam_desc *desc, mode_t perm);

/* ---- data path: get / put ----------------------------------------------------------- */

int c_fam_put_blocking(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t offset,
                       size_t size);
int c_fam_get_blocking(c_fam *fam_obj, void *local_addr, c_fam_desc *desc, uint64_t offset,
                       size_t size);
/* Start a put / get; it completes by c_fam_quiet (local_addr must stay valid till then). */
int c_fam_put_nonblocking(c_fam *fam_obj, void *local_addr, c_fam_desc *desc,
                          uint64_t offset, size_t size);
int c_fam_get_nonblocking(c_fam *fam_obj, void *local_addr, c_fam_desc *desc,
                          uint64_t offset, size_t size);

/* ---- gather / scatter --------------------------------------------------------------- */
/*
 * Strided: elements first_element, first_element + stride, ... (n_elements of them, each
 * element_size bytes; indices count elements) of the data item, to or from the contiguous
 * local_addr. Indexed: the elements element_index[0 .. n_elements-1].
 */
int c_fam_gather_blocking_stride(c_fam *fam_obj, void *local_addr, c_fam_desc *desc,
                                 uint64_t n_elements, uint64_t first_element, uint64_t stride,
                                 uint64_t element_size);
int c_fam_gather_nonblocking_stride(c_fam *fam_obj, void *local_addr, c_fam_desc *desc,
                                    uint64_t n_elements, uint64_t first_element,
                                    uint64_t stride, uint64_t element_size);
int c_fam_gather_blocking_index(c_fam *fam_obj, void *local_addr, c_fam_desc *desc,
                                uint64_t n_elements, uint64_t *element_index,
                                uint64_t element_size);
int c_fam_gather_nonblocking_index(c_fam *fam_obj, void *local_addr, c_fam_desc *desc,
                                   uint64_t n_elements, uint64_t *element_index,
                                   uint64_t element_size);
int c_fam_scatter_blocking_stride(c_fam *fam_obj, void *local_addr, c_fam_desc *desc,
                                  uint64_t n_elements, uint64_t first_element,
                                  uint64_t stride, uint64_t element_size);
int c_fam_scatter_nonblocking_stride(c_fam *fam_obj, void *local_addr, c_fam_desc *desc,
                                     uint64_t n_elements, uint64_t first_element,
                                     uint64_t stride, uint64_t element_size);
int c_fam_scatter_blocking_index(c_fam *fam_obj, void *local_addr, c_fam_desc *desc,
                                 uint64_t n_elements, uint64_t *element_index,
                                 uint64_t element_size);
int c_fam_scatter_nonblocking_index(c_fam *fam_obj, void *local_addr, c_fam_desc *desc,
                                    uint64_t n_elements, uint64_t *element_index,
                                    uint64_t element_size);

/* ---- memory-side operations (the OpenFAM paper's proposal; a unimem extension) ------ */
/*
 * Queue op on the elements element_index[0 .. n_elements-1] (element i at byte offset
 * i * element_size; element_size 4 or 8) of the data item: OP_ADD_INDEXED adds local's
 * n_elements integers to them (wrapping), OP_SCATTER stores them, OP_GATHER reads the
 * elements into local. Each memory server of the item gets its elements in batches, applied
 * there; a batch goes when full, the rest at c_fam_aggregate_flush. Values to add or store
 * are read from local during the call; for OP_GATHER local must stay valid until
 * c_fam_aggregate_flush returns. An index past the item's end fails the call
 * (FAM_ERR_OUTOFRANGE) and queues nothing.
 */
int c_fam_queue_operation(c_fam *fam_obj, FAM_QUEUE_OP op, void *local, c_fam_desc *desc,
                          uint64_t n_elements, uint64_t *element_index,
                          uint64_t element_size);
/* Send everything queued on the data item and wait for it; reports the first failure of
 * its queued operations since its last flush. */
int c_fam_aggregate_flush(c_fam *fam_obj, c_fam_desc *desc);

/* ---- copy, backup, restore ---------------------------------------------------------- */
/* Each starts an operation and returns its wait object, which the matching _wait frees. */

void *c_fam_copy(c_fam *fam_obj, c_fam_desc *src_desc, uint64_t src_offset,
                 c_fam_desc *dest_desc, uint64_t dest_offset, size_t size);
int c_fam_copy_wait(c_fam *fam_obj, void *wait_obj);
void *c_fam_backup(c_fam *fam_obj, c_fam_desc *src_desc, const char *backup_name,
                   c_fam_backup_options *backup_options);
int c_fam_backup_wait(c_fam *fam_obj, void *wait_obj);
/* Restore a backup into an existing data item. */
void *c_fam_restore(c_fam *fam_obj, const char *backup_name, c_fam_desc *dest_desc);
/* Allocate data item dataitem_name in a region, restore into it, return it in *dest_desc. */
void *c_fam_restore_region(c_fam *fam_obj, const char *backup_name,
                           c_fam_region_desc *dest_reg_desc, const char *dataitem_name,
                           mode_t perm, c_fam_desc **dest_desc);
int c_fam_restore_wait(c_fam *fam_obj, void *wait_obj);
void *c_fam_delete_backup(c_fam *fam_obj, const char *backup_name);
int c_fam_delete_backup_wait(c_fam *fam_obj, void *wait_obj);

/* ---- load / store ------------------------------------------------------------------- */

/* Map a data item into this process; NULL on failure. */
void *c_fam_map(c_fam *fam_obj, c_fam_desc *desc);
int c_fam_unmap(c_fam *fam_obj, void *local_ptr, c_fam_desc *desc);

/* ---- ordering ----------------------------------------------------------------------- */

/* Order this PE's (or context's) earlier FAM operations before its later ones. */
int c_fam_fence(c_fam *fam_obj);
/* Wait until this PE's (or context's) outstanding FAM operations have completed. */
int c_fam_quiet(c_fam *fam_obj);
/* Number of this PE's (or context's) outstanding FAM operations, in *value. */
int c_fam_progress(c_fam *fam_obj, uint64_t *value);

/* ---- contexts ----------------------------------------------------------------------- */

/* Open an independent context (its own ordering and completion) on an instance. */
c_fam_context *c_fam_context_open(c_fam *fam_obj);
/* Close a context: quiet it and stop its use. c_fam_delete(fam_cntxt) frees the handle. */
int c_fam_context_close(c_fam *fam_obj, c_fam_context *fam_cntxt);

/* ---- errors ------------------------------------------------------------------------- */

/* Fam_Error code of the calling thread's last failed call (0 if none yet). */
int c_fam_error(void);
/* Its message; valid until the thread's next failing call. Never NULL. */
const char *c_fam_error_msg(void);

/* ---- atomics -------------------------------------------------------------------------- */
/* At byte offset offset of a data item, naturally aligned. Non-fetching ones may complete
 * after they return (c_fam_quiet); fetching ones return the old value in *value or
 * *ret_val. */

int c_fam_set_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value);
int c_fam_set_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value);
int c_fam_set_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_set_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_set_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value);
int c_fam_set_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value);
int c_fam_set_int128(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int128_t value);

int c_fam_fetch_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t *value);
int c_fam_fetch_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t *value);
int c_fam_fetch_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t *value);
int c_fam_fetch_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t *value);
int c_fam_fetch_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float *value);
int c_fam_fetch_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double *value);
int c_fam_fetch_int128(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int128_t *value);

int c_fam_add_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value);
int c_fam_add_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value);
int c_fam_add_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_add_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_add_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value);
int c_fam_add_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value);

int c_fam_subtract_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value);
int c_fam_subtract_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value);
int c_fam_subtract_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_subtract_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_subtract_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value);
int c_fam_subtract_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value);

int c_fam_min_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value);
int c_fam_min_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value);
int c_fam_min_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_min_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_min_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value);
int c_fam_min_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value);

int c_fam_max_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value);
int c_fam_max_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value);
int c_fam_max_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_max_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_max_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value);
int c_fam_max_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value);

int c_fam_and_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_and_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_or_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_or_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);
int c_fam_xor_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value);
int c_fam_xor_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value);

int c_fam_swap_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value,
                     int32_t *ret_val);
int c_fam_swap_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value,
                     int64_t *ret_val);
int c_fam_swap_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value,
                      uint32_t *ret_val);
int c_fam_swap_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value,
                      uint64_t *ret_val);
int c_fam_swap_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value,
                     float *ret_val);
int c_fam_swap_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value,
                      double *ret_val);

/* Store new_val if the value is old_val; *ret_val is the value found either way. */
int c_fam_compare_swap_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                             int32_t old_val, int32_t new_val, int32_t *ret_val);
int c_fam_compare_swap_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                             int64_t old_val, int64_t new_val, int64_t *ret_val);
int c_fam_compare_swap_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                              uint32_t old_val, uint32_t new_val, uint32_t *ret_val);
int c_fam_compare_swap_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                              uint64_t old_val, uint64_t new_val, uint64_t *ret_val);
int c_fam_compare_swap_int128(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                              int128_t old_val, int128_t new_val, int128_t *ret_val);

int c_fam_fetch_add_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value,
                          int32_t *ret_val);
int c_fam_fetch_add_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value,
                          int64_t *ret_val);
int c_fam_fetch_add_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value,
                           uint32_t *ret_val);
int c_fam_fetch_add_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value,
                           uint64_t *ret_val);
int c_fam_fetch_add_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value,
                          float *ret_val);
int c_fam_fetch_add_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value,
                           double *ret_val);

int c_fam_fetch_subtract_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                               int32_t value, int32_t *ret_val);
int c_fam_fetch_subtract_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                               int64_t value, int64_t *ret_val);
int c_fam_fetch_subtract_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                                uint32_t value, uint32_t *ret_val);
int c_fam_fetch_subtract_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                                uint64_t value, uint64_t *ret_val);
int c_fam_fetch_subtract_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                               float value, float *ret_val);
int c_fam_fetch_subtract_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset,
                                double value, double *ret_val);

int c_fam_fetch_min_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value,
                          int32_t *ret_val);
int c_fam_fetch_min_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value,
                          int64_t *ret_val);
int c_fam_fetch_min_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value,
                           uint32_t *ret_val);
int c_fam_fetch_min_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value,
                           uint64_t *ret_val);
int c_fam_fetch_min_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value,
                          float *ret_val);
int c_fam_fetch_min_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value,
                           double *ret_val);

int c_fam_fetch_max_int32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int32_t value,
                          int32_t *ret_val);
int c_fam_fetch_max_int64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, int64_t value,
                          int64_t *ret_val);
int c_fam_fetch_max_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value,
                           uint32_t *ret_val);
int c_fam_fetch_max_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value,
                           uint64_t *ret_val);
int c_fam_fetch_max_float(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, float value,
                          float *ret_val);
int c_fam_fetch_max_double(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, double value,
                           double *ret_val);

int c_fam_fetch_and_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value,
                           uint32_t *ret_val);
int c_fam_fetch_and_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value,
                           uint64_t *ret_val);
int c_fam_fetch_or_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value,
                          uint32_t *ret_val);
int c_fam_fetch_or_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value,
                          uint64_t *ret_val);
int c_fam_fetch_xor_uint32(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint32_t value,
                           uint32_t *ret_val);
int c_fam_fetch_xor_uint64(c_fam *fam_obj, c_fam_desc *desc, uint64_t offset, uint64_t value,
                           uint64_t *ret_val);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* As in OpenFAM, including the C API also declares the C++ one when compiling C++. */
#include <fam/fam.h>

#endif /* FAM_C_H_ */
