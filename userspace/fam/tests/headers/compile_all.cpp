// SPDX-License-Identifier: GPL-2.0
//
// compile_all.cpp: header-only check of unimem's OpenFAM C++ API (check.sh compiles it,
// never links or runs it). Every method and overload of fam, fam_context, Fam_Descriptor,
// Fam_Region_Descriptor and Fam_Exception is called once, with arguments of the types
// OpenFAM programs pass, and every type, member and enumerator is named, so a missing or
// changed declaration fails the build.

#include <fam/fam.h>
#include <fam/fam_c.h>
#include <fam/fam_exception.h>

#include <stdlib.h>
#include <string.h>

using namespace openfam;

// Error codes: OpenFAM 3.x's values (the C ABI returns their negatives).
static_assert(FAM_NO_ERROR == 0 && FAM_ERR_UNKNOWN == 1 && FAM_ERR_NOPERM == 2, "Fam_Error");
static_assert(FAM_ERR_TIMEOUT == 3 && FAM_ERR_INVALID == 4 && FAM_ERR_LIBFABRIC == 5, "");
static_assert(FAM_ERR_SHM == 6 && FAM_ERR_NOT_CREATED == 7 && FAM_ERR_NOTFOUND == 8, "");
static_assert(FAM_ERR_ALREADYEXIST == 9 && FAM_ERR_ALLOCATOR == 10 && FAM_ERR_RPC == 11, "");
static_assert(FAM_ERR_PMI == 12 && FAM_ERR_OUTOFRANGE == 13 && FAM_ERR_NO_SPACE == 14, "");
static_assert(FAM_ERR_NULLPTR == 15 && FAM_ERR_UNIMPL == 16 && FAM_ERR_RESOURCE == 17, "");
static_assert(FAM_ERR_INVALIDOP == 18 && FAM_ERR_RPC_CLIENT_NOTFOUND == 19, "");
static_assert(FAM_ERR_MEMSERV_LIST_EMPTY == 20 && FAM_ERR_METADATA == 21, "");
static_assert(FAM_ERR_MEMORY == 22 && FAM_ERR_NAME_TOO_LONG == 23, "");
static_assert(FAM_ERR_ATL_QUEUE_FULL == 24 && FAM_ERR_ATL_QUEUE_INSERT == 25, "");
static_assert(FAM_ERR_ATL_NOT_ENABLED == 26 && FAM_ERR_ATL == 27, "");
static_assert(FAM_BACKUP_NOT_CREATED == 28 && FAM_BACKUP_NOTFOUND == 29, "");
static_assert(FAM_BACKUP_INFO_NOTFOUND == 30 && FAM_ERR_NOT_PWR_TWO == 31, "");

// Enumerators and their values.
static_assert(INTERLEAVE_DEFAULT == 0 && ENABLE == 1 && DISABLE == 2, "");
static_assert(MEMORY_TYPE_DEFAULT == 0 && VOLATILE == 1 && PERSISTENT == 2, "");
static_assert(REDUNDANCY_LEVEL_DEFAULT == 0 && NONE == 1 && RAID1 == 2 && RAID5 == 3, "");
static_assert(PERMISSION_LEVEL_DEFAULT == 0 && REGION == 1 && DATAITEM == 2, "");
static_assert(ALLOCATION_POLICY_DEFAULT == 0 && SINGLE_NODE_SINGLE_ALLOC == 1, "");
static_assert(MULTI_NODE_MULTI_ALLOC == 2, "");
static_assert(DESC_INVALID == 0 && DESC_INIT_DONE == 1, "");
static_assert(DESC_INIT_DONE_BUT_KEY_NOT_VALID == 2 && DESC_UNINITIALIZED == 3, "");
static_assert(FAM_SUCCESS == 0, "");
static_assert(sizeof(int128_t) == 16 && sizeof(::int128_t) == 16, "int128_t");
static_assert(sizeof(openfam::int128_t) == 16, "openfam::int128_t");

// The structures OpenFAM also names at global scope.
static_assert(sizeof(::Fam_Global_Descriptor) == 16, "");
static_assert(sizeof(::Fam_Options) && sizeof(::Fam_Stat) && sizeof(::Fam_Backup_Options), "");
static_assert(sizeof(::Fam_Region_Attributes) && sizeof(::Fam_Interleave_Enable), "");
static_assert(sizeof(::Fam_Memory_Type) && sizeof(::Fam_Redundancy_Level), "");
static_assert(sizeof(::Fam_Permission_Level), "");
static_assert(sizeof(Fam_Descriptor_Status) && sizeof(Fam_Allocation_Policy), "");

// Every member of the data types, as programs fill and read them.
void unimem_fam_check_types(Fam_Options *o, Fam_Stat *s, Fam_Region_Attributes *a,
                            Fam_Global_Descriptor *g, Fam_Backup_Options *b) {
    memset(o, 0, sizeof(*o));
    o->defaultRegionName = strdup("Default");
    o->cisServer = strdup("127.0.0.1");
    o->grpcPort = strdup("8787");
    o->libfabricProvider = strdup("sockets");
    o->famThreadModel = strdup("FAM_THREAD_MULTIPLE");
    o->cisInterfaceType = strdup("rpc");
    o->openFamModel = strdup("memory_server");
    o->famContextModel = strdup("FAM_CONTEXT_DEFAULT");
    o->numConsumer = strdup("1");
    o->runtime = strdup("NONE");
    o->fam_default_memory_type = strdup("volatile");
    o->if_device = strdup("");
    o->local_buf_addr = malloc(64);
    o->local_buf_size = 64;

    uint64_t sum = s->size + s->perm + s->uid + s->gid + s->num_memservers +
                   s->interleaveSize + s->memory_servers[255] + (s->name != NULL);
    sum += static_cast<uint64_t>(s->region_attributes.redundancyLevel) +
           static_cast<uint64_t>(s->region_attributes.memoryType);

    a->redundancyLevel = RAID5;
    a->memoryType = PERSISTENT;
    a->interleaveEnable = ENABLE;
    a->permissionLevel = DATAITEM;
    a->allocationPolicy = MULTI_NODE_MULTI_ALLOC;
    a->hostingNode = 0;

    g->regionId = sum;
    g->offset = 0;
    b->backup_option_reserved = 0;

    Fam_Region_Attributes *defaults = new Fam_Region_Attributes();
    delete defaults;
}

// Fam_Exception, as programs catch and build it.
void unimem_fam_check_exception(fam *f) {
    try {
        f->fam_quiet();
    } catch (Fam_Exception &e) {
        int code = e.fam_error();
        const char *msg = e.fam_error_msg();
        const char *what = e.what();
        (void)code, (void)msg, (void)what;
    }
    try {
        f->fam_fence();
    } catch (const Fam_Exception &e) {
        int code = e.fam_error();
        const char *msg = e.fam_error_msg();
        (void)code, (void)msg;
    } catch (std::exception &e) {
        const char *what = e.what();
        (void)what;
    }
    Fam_Exception plain;
    Fam_Exception with_msg("message");
    Fam_Exception with_code(FAM_ERR_NOTFOUND, "not found");
    Fam_Exception copy(with_code);
    plain = copy;
    (void)with_msg;
    throw plain;
}

// Descriptors: constructors, copies, every getter and setter.
void unimem_fam_check_descriptors(Fam_Descriptor *item, Fam_Region_Descriptor *region) {
    Fam_Global_Descriptor g = item->get_global_descriptor();
    Fam_Descriptor *fromGlobal = new Fam_Descriptor(g);
    Fam_Descriptor *withSize = new Fam_Descriptor(g, 4096);
    Fam_Descriptor *unbound = new Fam_Descriptor();
    Fam_Descriptor byValue = *item;
    byValue = *withSize;
    Fam_Descriptor adopted(unimem_detail::adopt_tag(), item->unimem_handle());

    uint64_t ids[2] = {0, 1};
    item->bind_keys(ids, 2);
    uint64_t *p = item->get_keys();
    item->set_context(p);
    void *ctx = item->get_context();
    item->set_base_address_list(ids, 2);
    p = item->get_base_address_list();
    item->set_desc_status(DESC_INIT_DONE);
    int status = item->get_desc_status();
    item->set_size(4096);
    item->set_perm(0600);
    char name[] = "item";
    item->set_name(name);
    item->set_interleave_size(4096);
    uint64_t sum = item->get_size() + item->get_perm() + item->get_interleave_size();
    char *n = item->get_name();
    item->set_used_memsrv_cnt(2);
    sum += item->get_used_memsrv_cnt();
    item->set_memserver_ids(ids);
    p = item->get_memserver_ids();
    sum += item->get_first_memserver_id();
    item->set_uid(0);
    item->set_gid(0);
    sum += item->get_uid() + item->get_gid();
    item->set_permissionLevel(DATAITEM);
    Fam_Permission_Level level = item->get_permissionLevel();

    Fam_Global_Descriptor rg = region->get_global_descriptor();
    Fam_Region_Descriptor *rFromGlobal = new Fam_Region_Descriptor(rg);
    Fam_Region_Descriptor *rWithSize = new Fam_Region_Descriptor(rg, 1 << 20);
    Fam_Region_Descriptor *rUnbound = new Fam_Region_Descriptor();
    Fam_Region_Descriptor rByValue = *region;
    rByValue = *rWithSize;
    Fam_Region_Descriptor rAdopted(unimem_detail::adopt_tag(), region->unimem_handle());

    region->set_context(ctx);
    ctx = region->get_context();
    region->set_desc_status(DESC_INIT_DONE);
    status += region->get_desc_status();
    region->set_size(1 << 20);
    region->set_perm(0777);
    region->set_name(name);
    region->set_redundancyLevel(NONE);
    region->set_memoryType(VOLATILE);
    region->set_interleaveEnable(DISABLE);
    region->set_permissionLevel(REGION);
    region->set_allocationPolicy(ALLOCATION_POLICY_DEFAULT);
    Fam_Redundancy_Level redundancy = region->get_redundancyLevel();
    Fam_Memory_Type type = region->get_memoryType();
    Fam_Interleave_Enable interleave = region->get_interleaveEnable();
    level = region->get_permissionLevel();
    Fam_Allocation_Policy policy = region->get_allocationPolicy();
    sum += region->get_size() + region->get_perm() + region->get_memserver_id();
    n = region->get_name();

    (void)p, (void)ctx, (void)status, (void)sum, (void)n, (void)level, (void)redundancy;
    (void)type, (void)interleave, (void)policy, (void)adopted, (void)rAdopted;
    delete fromGlobal;
    delete withSize;
    delete unbound;
    delete rFromGlobal;
    delete rWithSize;
    delete rUnbound;
}

// Every method of fam, with OpenFAM's argument types.
void unimem_fam_check_fam(Fam_Options *options) {
    fam *f = new fam();
    f->fam_initialize("default", options);
    const char **list = f->fam_list_options();
    free(list);
    char optName[] = "PE_ID";
    int *pe = (int *)f->fam_get_option(optName);
    free(pe);
    c_fam *handle = f->unimem_handle();
    (void)handle;

    Fam_Region_Attributes *attrs = new Fam_Region_Attributes();
    attrs->permissionLevel = REGION;
    Fam_Region_Descriptor *region = f->fam_create_region("region", 1 << 20, 0777, attrs);
    delete attrs;
    Fam_Region_Descriptor *found = f->fam_lookup_region("region");
    f->fam_resize_region(region, 2 << 20);
    f->fam_change_permissions(region, 0777);
    Fam_Stat info;
    f->fam_stat(region, &info);

    Fam_Descriptor *item = f->fam_allocate("item", 4096, 0777, region);
    Fam_Descriptor *unnamed = f->fam_allocate(4096, 0600, region);
    Fam_Descriptor *lookedUp = f->fam_lookup("item", "region");
    f->fam_change_permissions(item, 0600);
    f->fam_stat(item, &info);

    char local[4096];
    f->fam_put_blocking(local, item, 0, sizeof(local));
    f->fam_get_blocking(local, item, 0, sizeof(local));
    f->fam_put_nonblocking(local, item, 0, sizeof(local));
    f->fam_get_nonblocking(local, item, 0, sizeof(local));

    void *mapped = f->fam_map(item);
    f->fam_unmap(mapped, item);

    uint64_t indexes[4] = {0, 2, 4, 6};
    f->fam_gather_blocking(local, item, 4, 0, 2, sizeof(int));
    f->fam_gather_blocking(local, item, 4, indexes, sizeof(int));
    f->fam_gather_nonblocking(local, item, 4, 0, 2, sizeof(int));
    f->fam_gather_nonblocking(local, item, 4, indexes, sizeof(int));
    f->fam_scatter_blocking(local, item, 4, 0, 2, sizeof(int));
    f->fam_scatter_blocking(local, item, 4, indexes, sizeof(int));
    f->fam_scatter_nonblocking(local, item, 4, 0, 2, sizeof(int));
    f->fam_scatter_nonblocking(local, item, 4, indexes, sizeof(int));
    f->fam_queue_operation(OP_SCATTER, local, item, 4, indexes, sizeof(int));
    f->fam_queue_operation(openfam::OP_GATHER, local, item, 4, indexes, sizeof(int));
    f->fam_aggregate_flush(item);

    void *waitObj = f->fam_copy(item, 0, unnamed, 0, 1024);
    f->fam_copy_wait(waitObj);
    Fam_Backup_Options backupOptions = {0};
    waitObj = f->fam_backup(item, "backup", &backupOptions);
    f->fam_backup_wait(waitObj);
    waitObj = f->fam_restore("backup", item);
    f->fam_restore_wait(waitObj);
    Fam_Descriptor *restored = NULL;
    waitObj = f->fam_restore("backup", region, "restored", 0600, &restored);
    f->fam_restore_wait(waitObj);
    char *backups = f->fam_list_backup("backup");
    free(backups);
    waitObj = f->fam_delete_backup("backup");
    f->fam_delete_backup_wait(waitObj);

    int32_t i32 = -1;
    int64_t i64 = -1;
    int128_t i128 = -1;
    uint32_t u32 = 1;
    uint64_t u64 = 1;
    float f32 = 1.0f;
    double f64 = 1.0;

    // Non-fetching atomics: every type OpenFAM has for each.
    f->fam_set(item, 0, i32);
    f->fam_set(item, 0, i64);
    f->fam_set(item, 0, i128);
    f->fam_set(item, 0, u32);
    f->fam_set(item, 0, u64);
    f->fam_set(item, 0, f32);
    f->fam_set(item, 0, f64);
    f->fam_add(item, 0, i32); f->fam_add(item, 0, i64); f->fam_add(item, 0, u32);
    f->fam_add(item, 0, u64); f->fam_add(item, 0, f32); f->fam_add(item, 0, f64);
    f->fam_subtract(item, 0, i32); f->fam_subtract(item, 0, i64); f->fam_subtract(item, 0, u32);
    f->fam_subtract(item, 0, u64); f->fam_subtract(item, 0, f32); f->fam_subtract(item, 0, f64);
    f->fam_min(item, 0, i32); f->fam_min(item, 0, i64); f->fam_min(item, 0, u32);
    f->fam_min(item, 0, u64); f->fam_min(item, 0, f32); f->fam_min(item, 0, f64);
    f->fam_max(item, 0, i32); f->fam_max(item, 0, i64); f->fam_max(item, 0, u32);
    f->fam_max(item, 0, u64); f->fam_max(item, 0, f32); f->fam_max(item, 0, f64);
    f->fam_and(item, 0, u32); f->fam_and(item, 0, u64);
    f->fam_or(item, 0, u32); f->fam_or(item, 0, u64);
    f->fam_xor(item, 0, u32); f->fam_xor(item, 0, u64);

    // Fetching atomics.
    i32 = f->fam_fetch_int32(item, 0);
    i64 = f->fam_fetch_int64(item, 0);
    i128 = f->fam_fetch_int128(item, 0);
    u32 = f->fam_fetch_uint32(item, 0);
    u64 = f->fam_fetch_uint64(item, 0);
    f32 = f->fam_fetch_float(item, 0);
    f64 = f->fam_fetch_double(item, 0);
    i32 = f->fam_swap(item, 0, i32);
    i64 = f->fam_swap(item, 0, i64);
    u32 = f->fam_swap(item, 0, u32);
    u64 = f->fam_swap(item, 0, u64);
    f32 = f->fam_swap(item, 0, f32);
    f64 = f->fam_swap(item, 0, f64);
    i32 = f->fam_compare_swap(item, 0, i32, i32);
    i64 = f->fam_compare_swap(item, 0, i64, i64);
    u32 = f->fam_compare_swap(item, 0, u32, u32);
    u64 = f->fam_compare_swap(item, 0, u64, u64);
    i128 = f->fam_compare_swap(item, 0, i128, i128);
    i32 = f->fam_fetch_add(item, 0, i32);
    i64 = f->fam_fetch_add(item, 0, i64);
    u32 = f->fam_fetch_add(item, 0, u32);
    u64 = f->fam_fetch_add(item, 0, u64);
    f32 = f->fam_fetch_add(item, 0, f32);
    f64 = f->fam_fetch_add(item, 0, f64);
    i32 = f->fam_fetch_subtract(item, 0, i32);
    i64 = f->fam_fetch_subtract(item, 0, i64);
    u32 = f->fam_fetch_subtract(item, 0, u32);
    u64 = f->fam_fetch_subtract(item, 0, u64);
    f32 = f->fam_fetch_subtract(item, 0, f32);
    f64 = f->fam_fetch_subtract(item, 0, f64);
    i32 = f->fam_fetch_min(item, 0, i32);
    i64 = f->fam_fetch_min(item, 0, i64);
    u32 = f->fam_fetch_min(item, 0, u32);
    u64 = f->fam_fetch_min(item, 0, u64);
    f32 = f->fam_fetch_min(item, 0, f32);
    f64 = f->fam_fetch_min(item, 0, f64);
    i32 = f->fam_fetch_max(item, 0, i32);
    i64 = f->fam_fetch_max(item, 0, i64);
    u32 = f->fam_fetch_max(item, 0, u32);
    u64 = f->fam_fetch_max(item, 0, u64);
    f32 = f->fam_fetch_max(item, 0, f32);
    f64 = f->fam_fetch_max(item, 0, f64);
    u32 = f->fam_fetch_and(item, 0, u32);
    u64 = f->fam_fetch_and(item, 0, u64);
    u32 = f->fam_fetch_or(item, 0, u32);
    u64 = f->fam_fetch_or(item, 0, u64);
    u32 = f->fam_fetch_xor(item, 0, u32);
    u64 = f->fam_fetch_xor(item, 0, u64);

    f->fam_fence();
    f->fam_quiet();
    uint64_t pending = f->fam_progress();
    (void)pending;
#ifdef FAM_PROFILE
    f->fam_reset_profile();
#endif

    // A context: inherited calls work, OpenFAM's refused ones are declared.
    fam_context *ctx = f->fam_context_open();
    ctx->fam_put_blocking(local, item, 0, 8);
    ctx->fam_set(item, 0, u64);
    u64 = ctx->fam_fetch_uint64(item, 0);
    ctx->fam_quiet();
    pending = ctx->fam_progress();
    fam *asFam = ctx; // a context is a fam (OpenFAM tests pass it as one)
    asFam->fam_fence();
    f->fam_context_close(ctx);
    delete ctx;

    fam_context *refused = new fam_context(NULL);
    refused->fam_initialize("default", options);
    refused->fam_finalize("default");
    refused->fam_abort(0);
    refused->fam_barrier_all();
    list = refused->fam_list_options();
    pe = (int *)refused->fam_get_option(optName);
    found = refused->fam_lookup_region("region");
    lookedUp = refused->fam_lookup("item", "region");
    found = refused->fam_create_region("region", 1 << 20, 0777, NULL);
    refused->fam_destroy_region(found);
    refused->fam_resize_region(found, 1 << 20);
    lookedUp = refused->fam_allocate(4096, 0600, region);
    lookedUp = refused->fam_allocate("item", 4096, 0600, region);
    refused->fam_deallocate(item);
    refused->fam_close(item);
    refused->fam_change_permissions(item, 0600);
    fam_context *nested = refused->fam_context_open();
    refused->fam_context_close(nested);
    delete refused;

    f->fam_close(lookedUp);
    f->fam_deallocate(item);
    f->fam_deallocate(unnamed);
    f->fam_destroy_region(region);
    delete restored;
    delete lookedUp;
    delete unnamed;
    delete item;
    delete found;
    delete region;
    f->fam_barrier_all();
    f->fam_finalize("default");
    f->fam_abort(0);
    delete f;
}
