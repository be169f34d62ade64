/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compile_c.c: header-only check of unimem's OpenFAM C API and C ABI (check.sh compiles it
 * as C99, never links or runs it). Every function of fam_c.h and fam_abi.h is called once
 * with arguments of its declared types; check.sh also verifies with nm that none is missed.
 */
#include <fam/fam_c.h>
#include <fam/fam_abi.h>

#include <stdlib.h>

int unimem_fam_compile_c(c_fam_options *options);

int unimem_fam_compile_c(c_fam_options *options)
{
    int rc = 0;
    c_fam *fam = c_fam_create();
    rc |= c_fam_initialize(fam, "default", options);
    const char **list = c_fam_list_options(fam);
    free((void *)list);
    int *pe = (int *)c_fam_get_option(fam, "PE_ID");
    free(pe);

    /* regions */
    c_fam_Region_Attributes attrs = {NONE, VOLATILE, INTERLEAVE_DEFAULT, REGION,
                                     ALLOCATION_POLICY_DEFAULT, 0};
    c_fam_region_desc *region = c_fam_create_region(fam, "region", 1 << 20, 0777, &attrs);
    c_fam_region_desc *found = c_fam_lookup_region(fam, "region");
    rc |= c_fam_resize_region(fam, region, 2 << 20);
    c_fam_stat stat;
    rc |= c_fam_stat_region(fam, region, &stat);
    rc |= c_fam_change_permissions_region(fam, region, 0777);

    /* data items */
    c_fam_desc *item = c_fam_allocate_named(fam, "item", 4096, 0600, region);
    c_fam_desc *unnamed = c_fam_allocate(fam, 4096, 0600, region);
    c_fam_desc *lookedUp = c_fam_lookup(fam, "item", "region");
    rc |= c_fam_stat_data(fam, item, &stat);
    rc |= c_fam_change_permissions_data(fam, item, 0600);

    /* get / put */
    char local[4096];
    rc |= c_fam_put_blocking(fam, local, item, 0, sizeof(local));
    rc |= c_fam_get_blocking(fam, local, item, 0, sizeof(local));
    rc |= c_fam_put_nonblocking(fam, local, item, 0, sizeof(local));
    rc |= c_fam_get_nonblocking(fam, local, item, 0, sizeof(local));

    /* gather / scatter */
    uint64_t indexes[4] = {0, 2, 4, 6};
    rc |= c_fam_gather_blocking_stride(fam, local, item, 4, 0, 2, sizeof(int));
    rc |= c_fam_gather_nonblocking_stride(fam, local, item, 4, 0, 2, sizeof(int));
    rc |= c_fam_gather_blocking_index(fam, local, item, 4, indexes, sizeof(int));
    rc |= c_fam_gather_nonblocking_index(fam, local, item, 4, indexes, sizeof(int));
    rc |= c_fam_scatter_blocking_stride(fam, local, item, 4, 0, 2, sizeof(int));
    rc |= c_fam_scatter_nonblocking_stride(fam, local, item, 4, 0, 2, sizeof(int));
    rc |= c_fam_scatter_blocking_index(fam, local, item, 4, indexes, sizeof(int));
    rc |= c_fam_scatter_nonblocking_index(fam, local, item, 4, indexes, sizeof(int));
    rc |= c_fam_queue_operation(fam, OP_ADD_INDEXED, local, item, 4, indexes, sizeof(int));
    rc |= c_fam_queue_operation(fam, OP_GATHER, local, item, 4, indexes, sizeof(int));
    rc |= c_fam_aggregate_flush(fam, item);

    /* copy, backup, restore */
    void *wait = c_fam_copy(fam, item, 0, unnamed, 0, 1024);
    rc |= c_fam_copy_wait(fam, wait);
    c_fam_backup_options backupOptions = {0};
    wait = c_fam_backup(fam, item, "backup", &backupOptions);
    rc |= c_fam_backup_wait(fam, wait);
    wait = c_fam_restore(fam, "backup", item);
    rc |= c_fam_restore_wait(fam, wait);
    c_fam_desc *restored = NULL;
    wait = c_fam_restore_region(fam, "backup", region, "restored", 0600, &restored);
    rc |= c_fam_restore_wait(fam, wait);
    char *backups = NULL;
    rc |= unimem_fam_list_backup(fam, "backup", &backups);
    free(backups);
    wait = c_fam_delete_backup(fam, "backup");
    rc |= c_fam_delete_backup_wait(fam, wait);

    /* load / store */
    void *mapped = c_fam_map(fam, item);
    rc |= c_fam_unmap(fam, mapped, item);

    int32_t i32 = -1;
    int64_t i64 = -1;
    int128_t i128 = -1;
    uint32_t u32 = 1;
    uint64_t u64 = 1;
    float f32 = 1.0f;
    double f64 = 1.0;
    /* atomics */
    rc |= c_fam_set_int32(fam, item, 0, i32);
    rc |= c_fam_set_int64(fam, item, 0, i64);
    rc |= c_fam_set_uint32(fam, item, 0, u32);
    rc |= c_fam_set_uint64(fam, item, 0, u64);
    rc |= c_fam_set_float(fam, item, 0, f32);
    rc |= c_fam_set_double(fam, item, 0, f64);
    rc |= c_fam_set_int128(fam, item, 0, i128);
    rc |= c_fam_fetch_int32(fam, item, 0, &i32);
    rc |= c_fam_fetch_int64(fam, item, 0, &i64);
    rc |= c_fam_fetch_uint32(fam, item, 0, &u32);
    rc |= c_fam_fetch_uint64(fam, item, 0, &u64);
    rc |= c_fam_fetch_float(fam, item, 0, &f32);
    rc |= c_fam_fetch_double(fam, item, 0, &f64);
    rc |= c_fam_fetch_int128(fam, item, 0, &i128);
    rc |= c_fam_add_int32(fam, item, 0, i32);
    rc |= c_fam_add_int64(fam, item, 0, i64);
    rc |= c_fam_add_uint32(fam, item, 0, u32);
    rc |= c_fam_add_uint64(fam, item, 0, u64);
    rc |= c_fam_add_float(fam, item, 0, f32);
    rc |= c_fam_add_double(fam, item, 0, f64);
    rc |= c_fam_subtract_int32(fam, item, 0, i32);
    rc |= c_fam_subtract_int64(fam, item, 0, i64);
    rc |= c_fam_subtract_uint32(fam, item, 0, u32);
    rc |= c_fam_subtract_uint64(fam, item, 0, u64);
    rc |= c_fam_subtract_float(fam, item, 0, f32);
    rc |= c_fam_subtract_double(fam, item, 0, f64);
    rc |= c_fam_min_int32(fam, item, 0, i32);
    rc |= c_fam_min_int64(fam, item, 0, i64);
    rc |= c_fam_min_uint32(fam, item, 0, u32);
    rc |= c_fam_min_uint64(fam, item, 0, u64);
    rc |= c_fam_min_float(fam, item, 0, f32);
    rc |= c_fam_min_double(fam, item, 0, f64);
    rc |= c_fam_max_int32(fam, item, 0, i32);
    rc |= c_fam_max_int64(fam, item, 0, i64);
    rc |= c_fam_max_uint32(fam, item, 0, u32);
    rc |= c_fam_max_uint64(fam, item, 0, u64);
    rc |= c_fam_max_float(fam, item, 0, f32);
    rc |= c_fam_max_double(fam, item, 0, f64);
    rc |= c_fam_and_uint32(fam, item, 0, u32);
    rc |= c_fam_and_uint64(fam, item, 0, u64);
    rc |= c_fam_or_uint32(fam, item, 0, u32);
    rc |= c_fam_or_uint64(fam, item, 0, u64);
    rc |= c_fam_xor_uint32(fam, item, 0, u32);
    rc |= c_fam_xor_uint64(fam, item, 0, u64);
    rc |= c_fam_swap_int32(fam, item, 0, i32, &i32);
    rc |= c_fam_swap_int64(fam, item, 0, i64, &i64);
    rc |= c_fam_swap_uint32(fam, item, 0, u32, &u32);
    rc |= c_fam_swap_uint64(fam, item, 0, u64, &u64);
    rc |= c_fam_swap_float(fam, item, 0, f32, &f32);
    rc |= c_fam_swap_double(fam, item, 0, f64, &f64);
    rc |= c_fam_compare_swap_int32(fam, item, 0, i32, i32, &i32);
    rc |= c_fam_compare_swap_int64(fam, item, 0, i64, i64, &i64);
    rc |= c_fam_compare_swap_uint32(fam, item, 0, u32, u32, &u32);
    rc |= c_fam_compare_swap_uint64(fam, item, 0, u64, u64, &u64);
    rc |= c_fam_compare_swap_int128(fam, item, 0, i128, i128, &i128);
    rc |= c_fam_fetch_add_int32(fam, item, 0, i32, &i32);
    rc |= c_fam_fetch_add_int64(fam, item, 0, i64, &i64);
    rc |= c_fam_fetch_add_uint32(fam, item, 0, u32, &u32);
    rc |= c_fam_fetch_add_uint64(fam, item, 0, u64, &u64);
    rc |= c_fam_fetch_add_float(fam, item, 0, f32, &f32);
    rc |= c_fam_fetch_add_double(fam, item, 0, f64, &f64);
    rc |= c_fam_fetch_subtract_int32(fam, item, 0, i32, &i32);
    rc |= c_fam_fetch_subtract_int64(fam, item, 0, i64, &i64);
    rc |= c_fam_fetch_subtract_uint32(fam, item, 0, u32, &u32);
    rc |= c_fam_fetch_subtract_uint64(fam, item, 0, u64, &u64);
    rc |= c_fam_fetch_subtract_float(fam, item, 0, f32, &f32);
    rc |= c_fam_fetch_subtract_double(fam, item, 0, f64, &f64);
    rc |= c_fam_fetch_min_int32(fam, item, 0, i32, &i32);
    rc |= c_fam_fetch_min_int64(fam, item, 0, i64, &i64);
    rc |= c_fam_fetch_min_uint32(fam, item, 0, u32, &u32);
    rc |= c_fam_fetch_min_uint64(fam, item, 0, u64, &u64);
    rc |= c_fam_fetch_min_float(fam, item, 0, f32, &f32);
    rc |= c_fam_fetch_min_double(fam, item, 0, f64, &f64);
    rc |= c_fam_fetch_max_int32(fam, item, 0, i32, &i32);
    rc |= c_fam_fetch_max_int64(fam, item, 0, i64, &i64);
    rc |= c_fam_fetch_max_uint32(fam, item, 0, u32, &u32);
    rc |= c_fam_fetch_max_uint64(fam, item, 0, u64, &u64);
    rc |= c_fam_fetch_max_float(fam, item, 0, f32, &f32);
    rc |= c_fam_fetch_max_double(fam, item, 0, f64, &f64);
    rc |= c_fam_fetch_and_uint32(fam, item, 0, u32, &u32);
    rc |= c_fam_fetch_and_uint64(fam, item, 0, u64, &u64);
    rc |= c_fam_fetch_or_uint32(fam, item, 0, u32, &u32);
    rc |= c_fam_fetch_or_uint64(fam, item, 0, u64, &u64);
    rc |= c_fam_fetch_xor_uint32(fam, item, 0, u32, &u32);
    rc |= c_fam_fetch_xor_uint64(fam, item, 0, u64, &u64);
    rc |= unimem_fam_set_int128p(fam, item, 0, &i128);
    rc |= unimem_fam_compare_swap_int128p(fam, item, 0, &i128, &i128, &i128);

    /* ordering and contexts */
    rc |= c_fam_fence(fam);
    rc |= c_fam_quiet(fam);
    rc |= c_fam_progress(fam, &u64);
    rc |= unimem_fam_barrier_all(fam);
    rc |= unimem_fam_reset_profile(fam);
    c_fam_context *ctx = c_fam_context_open(fam);
    rc |= c_fam_put_blocking(ctx, local, item, 0, 8); /* a context is a c_fam */
    rc |= c_fam_quiet(ctx);
    rc |= c_fam_context_close(fam, ctx);
    c_fam_delete(ctx);

    /* descriptors */
    Fam_Global_Descriptor global = unimem_fam_desc_global(item);
    void *copy = NULL;
    rc |= unimem_fam_desc_new(UNIMEM_FAM_DESC_ITEM, &global, 4096, &copy);
    unimem_fam_desc_retain(copy);
    unimem_fam_desc_set(copy, UNIMEM_FAM_ATTR_STATUS, DESC_UNINITIALIZED);
    u64 = unimem_fam_desc_get(copy, UNIMEM_FAM_ATTR_SIZE);
    unimem_fam_desc_set_name(copy, "item");
    char *name = unimem_fam_desc_name(copy);
    unimem_fam_desc_set_context(copy, name);
    void *context = unimem_fam_desc_context(copy);
    unimem_fam_desc_set_array(copy, UNIMEM_FAM_ARRAY_KEYS, indexes, 4);
    uint64_t *keys = unimem_fam_desc_array(copy, UNIMEM_FAM_ARRAY_KEYS, &u64);
    unimem_fam_desc_release(copy);
    unimem_fam_desc_release(copy);
    (void)context, (void)keys;

    /* teardown */
    rc |= c_fam_close(fam, lookedUp);
    rc |= c_fam_deallocate(fam, item);
    rc |= c_fam_deallocate(fam, unnamed);
    rc |= c_fam_destroy_region(fam, region);
    unimem_fam_desc_release(restored);
    unimem_fam_desc_release(lookedUp);
    unimem_fam_desc_release(unnamed);
    unimem_fam_desc_release(item);
    unimem_fam_desc_release(found);
    unimem_fam_desc_release(region);
    if (rc != 0 && c_fam_error() != 0 && c_fam_error_msg() != NULL)
        rc = c_fam_abort(fam, 1);
    rc |= c_fam_finalize(fam, "default");
    c_fam_delete(fam);
    return rc + (int)i32 + (int)i64 + (int)i128 + (int)u32 + (int)u64 + (int)f32 + (int)f64;
}
