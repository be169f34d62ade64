/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fam/fam.h: OpenFAM 3.x API for unimem (fabric-attached memory over unimem's memory
 * stack). Programs written for OpenFAM 3.x compile unchanged against it:
 *
 *   #include <fam/fam.h>
 *   openfam::fam *f = new openfam::fam();
 *   f->fam_initialize("default", &options);
 *   ...                                  // every call throws openfam::Fam_Exception on error
 *
 * and link with libunimem_fam. In C this header declares the data types only (as OpenFAM's
 * does); the C API is fam_c.h.
 *
 * The C++ API is inline: every method calls the C ABI of libunimem_fam (fam_c.h and
 * fam_abi.h; userspace/fam/include/ABI.md lists it) and turns a failure into a Fam_Exception
 * carrying the library's Fam_Error code and message. A fam or fam_context holds a handle of
 * the library, a descriptor a reference to a descriptor of the library; descriptors may be
 * copied (copies share the descriptor) and are deleted by the program as in OpenFAM.
 *
 * Signatures are OpenFAM 3.x's, overload for overload, so overload resolution (e.g. of
 * fam_set(desc, offset, (uint32_t)1)) picks the same function. Additions, all prefixed
 * unimem_: descriptors' unimem_handle() and handle-adopting constructors, fam's
 * unimem_handle(), so C and C++ calls can be mixed. From OpenFAM's development branch:
 * Fam_Region_Descriptor::set/get_allocationPolicy (and the types of fam_types.h).
 */
#ifndef FAM_H_
#define FAM_H_

#include <fam/fam_types.h>

#ifdef __cplusplus

#include <stddef.h>

#include <fam/fam_c.h>
#include <fam/fam_abi.h>

#ifndef UNIMEM_FAM_NO_USING_STD
#define UNIMEM_FAM_NO_USING_STD
#define UNIMEM_FAM_UNDEF_NO_USING_STD
#endif
#include <fam/fam_exception.h>
#ifdef UNIMEM_FAM_UNDEF_NO_USING_STD
#undef UNIMEM_FAM_NO_USING_STD
#undef UNIMEM_FAM_UNDEF_NO_USING_STD
#endif

namespace openfam {

/* Internals of the inline API: not part of OpenFAM's API, may change. */
namespace unimem_detail {

/* Tag of the constructors that take over a handle the C ABI returned. */
struct adopt_tag {};

inline Fam_Error to_fam_error(int code) {
    if (code <= FAM_NO_ERROR || code > FAM_ERR_NOT_PWR_TWO)
        return FAM_ERR_UNKNOWN;
    return static_cast<Fam_Error>(code);
}

/* Throw the Fam_Exception of a failure whose Fam_Error code is code. */
[[noreturn]] inline void throw_error(int code) {
    const char *msg = c_fam_error_msg();
    throw Fam_Exception(to_fam_error(code), msg ? msg : "unimem fam: unknown error");
}

/* Check an int result of the C ABI: 0, or minus a Fam_Error code. */
inline void check(int rc) {
    if (rc != 0)
        throw_error(rc < 0 ? -rc : c_fam_error());
}

/* Check a pointer result of the C ABI: NULL means failure. */
template <typename T> inline T *check_ptr(T *p) {
    if (p == NULL)
        throw_error(c_fam_error());
    return p;
}

/* What fam_context's refused methods throw (OpenFAM's code and wording). */
[[noreturn]] inline void not_in_context(const char *method) {
    std::string msg(method);
    msg += " cannot be invoked from fam_context object";
    throw Fam_Exception(FAM_ERR_NOPERM, msg.c_str());
}

/* A new descriptor of the library, or an exception. */
inline void *new_desc(int kind, const Fam_Global_Descriptor *gdesc, uint64_t size) {
    void *h = NULL;
    check(unimem_fam_desc_new(kind, gdesc, size, &h));
    return check_ptr(h);
}

} // namespace unimem_detail

/*
 * Descriptor of a data item. Programs get one from fam_allocate or fam_lookup, or build one
 * from a Fam_Global_Descriptor another process handed them; they delete it when done (after
 * fam_deallocate or fam_close if they want the item's resources back). The setters are
 * OpenFAM's internal bookkeeping, kept for source compatibility; programs rarely call them.
 */
class Fam_Descriptor {
  public:
    Fam_Descriptor(Fam_Global_Descriptor gDescriptor, uint64_t itemSize)
        : h_(unimem_detail::new_desc(UNIMEM_FAM_DESC_ITEM, &gDescriptor, itemSize)) {}
    Fam_Descriptor(Fam_Global_Descriptor gDescriptor)
        : h_(unimem_detail::new_desc(UNIMEM_FAM_DESC_ITEM, &gDescriptor, 0)) {}
    Fam_Descriptor() : h_(unimem_detail::new_desc(UNIMEM_FAM_DESC_ITEM, NULL, 0)) {}
    Fam_Descriptor(const Fam_Descriptor &other) : h_(other.h_) {
        unimem_fam_desc_retain(h_);
    }
    Fam_Descriptor &operator=(const Fam_Descriptor &other) {
        unimem_fam_desc_retain(other.h_);
        unimem_fam_desc_release(h_);
        h_ = other.h_;
        return *this;
    }
    ~Fam_Descriptor() { unimem_fam_desc_release(h_); }

    Fam_Global_Descriptor get_global_descriptor() { return unimem_fam_desc_global(h_); }

    void bind_keys(uint64_t *tempKey, uint64_t cnt) {
        unimem_fam_desc_set_array(h_, UNIMEM_FAM_ARRAY_KEYS, tempKey, cnt);
    }
    uint64_t *get_keys() { return unimem_fam_desc_array(h_, UNIMEM_FAM_ARRAY_KEYS, NULL); }
    void *get_context() { return unimem_fam_desc_context(h_); }
    void set_context(void *context) { unimem_fam_desc_set_context(h_, context); }
    void set_base_address_list(uint64_t *addressList, uint64_t cnt) {
        unimem_fam_desc_set_array(h_, UNIMEM_FAM_ARRAY_BASE_ADDRESSES, addressList, cnt);
    }
    uint64_t *get_base_address_list() {
        return unimem_fam_desc_array(h_, UNIMEM_FAM_ARRAY_BASE_ADDRESSES, NULL);
    }
    int get_desc_status() { return static_cast<int>(get_(UNIMEM_FAM_ATTR_STATUS)); }
    void set_desc_status(int update_status) {
        set_(UNIMEM_FAM_ATTR_STATUS, static_cast<uint64_t>(update_status));
    }
    void set_size(uint64_t itemSize) { set_(UNIMEM_FAM_ATTR_SIZE, itemSize); }
    void set_perm(mode_t perm) { set_(UNIMEM_FAM_ATTR_PERM, perm); }
    void set_name(char *name) { unimem_fam_desc_set_name(h_, name); }
    void set_interleave_size(uint64_t interleaveSize_) {
        set_(UNIMEM_FAM_ATTR_INTERLEAVE_SIZE, interleaveSize_);
    }
    uint64_t get_size() { return get_(UNIMEM_FAM_ATTR_SIZE); }
    mode_t get_perm() { return static_cast<mode_t>(get_(UNIMEM_FAM_ATTR_PERM)); }
    char *get_name() { return unimem_fam_desc_name(h_); }
    uint64_t get_interleave_size() { return get_(UNIMEM_FAM_ATTR_INTERLEAVE_SIZE); }
    void set_used_memsrv_cnt(uint64_t cnt) { set_(UNIMEM_FAM_ATTR_USED_MEMSRV_CNT, cnt); }
    uint64_t get_used_memsrv_cnt() { return get_(UNIMEM_FAM_ATTR_USED_MEMSRV_CNT); }
    /* ids has get_used_memsrv_cnt() entries, as in OpenFAM. */
    void set_memserver_ids(uint64_t *ids) {
        unimem_fam_desc_set_array(h_, UNIMEM_FAM_ARRAY_MEMSERVER_IDS, ids,
                                  get_used_memsrv_cnt());
    }
    uint64_t *get_memserver_ids() {
        return unimem_fam_desc_array(h_, UNIMEM_FAM_ARRAY_MEMSERVER_IDS, NULL);
    }
    uint64_t get_first_memserver_id() { return get_(UNIMEM_FAM_ATTR_FIRST_MEMSERVER_ID); }
    uint32_t get_uid() { return static_cast<uint32_t>(get_(UNIMEM_FAM_ATTR_UID)); }
    void set_uid(uint32_t uid_) { set_(UNIMEM_FAM_ATTR_UID, uid_); }
    uint32_t get_gid() { return static_cast<uint32_t>(get_(UNIMEM_FAM_ATTR_GID)); }
    void set_gid(uint32_t gid_) { set_(UNIMEM_FAM_ATTR_GID, gid_); }
    void set_permissionLevel(Fam_Permission_Level permissionLevel) {
        set_(UNIMEM_FAM_ATTR_PERMISSION_LEVEL, static_cast<uint64_t>(permissionLevel));
    }
    Fam_Permission_Level get_permissionLevel() {
        return static_cast<Fam_Permission_Level>(get_(UNIMEM_FAM_ATTR_PERMISSION_LEVEL));
    }

    /* unimem: take over handle (one reference), e.g. one c_fam_lookup returned. */
    Fam_Descriptor(unimem_detail::adopt_tag, c_fam_desc *handle) : h_(handle) {}
    /* unimem: the library's descriptor, for the C API (no reference is taken). */
    c_fam_desc *unimem_handle() const { return h_; }

  private:
    uint64_t get_(int attr) const { return unimem_fam_desc_get(h_, attr); }
    void set_(int attr, uint64_t value) { unimem_fam_desc_set(h_, attr, value); }

    c_fam_desc *h_;
};

/*
 * Descriptor of a region: from fam_create_region or fam_lookup_region, or built from a
 * Fam_Global_Descriptor. Deleted by the program, as Fam_Descriptor.
 */
class Fam_Region_Descriptor {
  public:
    Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor, uint64_t regionSize)
        : h_(unimem_detail::new_desc(UNIMEM_FAM_DESC_REGION, &gDescriptor, regionSize)) {}
    Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor)
        : h_(unimem_detail::new_desc(UNIMEM_FAM_DESC_REGION, &gDescriptor, 0)) {}
    Fam_Region_Descriptor() : h_(unimem_detail::new_desc(UNIMEM_FAM_DESC_REGION, NULL, 0)) {}
    Fam_Region_Descriptor(const Fam_Region_Descriptor &other) : h_(other.h_) {
        unimem_fam_desc_retain(h_);
    }
    Fam_Region_Descriptor &operator=(const Fam_Region_Descriptor &other) {
        unimem_fam_desc_retain(other.h_);
        unimem_fam_desc_release(h_);
        h_ = other.h_;
        return *this;
    }
    ~Fam_Region_Descriptor() { unimem_fam_desc_release(h_); }

    Fam_Global_Descriptor get_global_descriptor() { return unimem_fam_desc_global(h_); }

    void *get_context() { return unimem_fam_desc_context(h_); }
    void set_context(void *context) { unimem_fam_desc_set_context(h_, context); }
    int get_desc_status() { return static_cast<int>(get_(UNIMEM_FAM_ATTR_STATUS)); }
    void set_desc_status(int update_status) {
        set_(UNIMEM_FAM_ATTR_STATUS, static_cast<uint64_t>(update_status));
    }
    void set_size(uint64_t itemSize) { set_(UNIMEM_FAM_ATTR_SIZE, itemSize); }
    void set_perm(mode_t perm) { set_(UNIMEM_FAM_ATTR_PERM, perm); }
    void set_name(char *name) { unimem_fam_desc_set_name(h_, name); }
    void set_redundancyLevel(Fam_Redundancy_Level redundancyLevel) {
        set_(UNIMEM_FAM_ATTR_REDUNDANCY_LEVEL, static_cast<uint64_t>(redundancyLevel));
    }
    void set_memoryType(Fam_Memory_Type memoryType) {
        set_(UNIMEM_FAM_ATTR_MEMORY_TYPE, static_cast<uint64_t>(memoryType));
    }
    void set_interleaveEnable(Fam_Interleave_Enable interleaveEnable) {
        set_(UNIMEM_FAM_ATTR_INTERLEAVE_ENABLE, static_cast<uint64_t>(interleaveEnable));
    }
    void set_permissionLevel(Fam_Permission_Level permissionLevel) {
        set_(UNIMEM_FAM_ATTR_PERMISSION_LEVEL, static_cast<uint64_t>(permissionLevel));
    }
    void set_allocationPolicy(Fam_Allocation_Policy allocPolicy) {
        set_(UNIMEM_FAM_ATTR_ALLOCATION_POLICY, static_cast<uint64_t>(allocPolicy));
    }
    Fam_Redundancy_Level get_redundancyLevel() {
        return static_cast<Fam_Redundancy_Level>(get_(UNIMEM_FAM_ATTR_REDUNDANCY_LEVEL));
    }
    Fam_Memory_Type get_memoryType() {
        return static_cast<Fam_Memory_Type>(get_(UNIMEM_FAM_ATTR_MEMORY_TYPE));
    }
    Fam_Interleave_Enable get_interleaveEnable() {
        return static_cast<Fam_Interleave_Enable>(get_(UNIMEM_FAM_ATTR_INTERLEAVE_ENABLE));
    }
    Fam_Permission_Level get_permissionLevel() {
        return static_cast<Fam_Permission_Level>(get_(UNIMEM_FAM_ATTR_PERMISSION_LEVEL));
    }
    Fam_Allocation_Policy get_allocationPolicy() {
        return static_cast<Fam_Allocation_Policy>(get_(UNIMEM_FAM_ATTR_ALLOCATION_POLICY));
    }
    uint64_t get_size() { return get_(UNIMEM_FAM_ATTR_SIZE); }
    mode_t get_perm() { return static_cast<mode_t>(get_(UNIMEM_FAM_ATTR_PERM)); }
    char *get_name() { return unimem_fam_desc_name(h_); }
    uint64_t get_memserver_id() { return get_(UNIMEM_FAM_ATTR_MEMSERVER_ID); }

    /* unimem: take over handle (one reference), e.g. one c_fam_lookup_region returned. */
    Fam_Region_Descriptor(unimem_detail::adopt_tag, c_fam_region_desc *handle) : h_(handle) {}
    /* unimem: the library's descriptor, for the C API (no reference is taken). */
    c_fam_region_desc *unimem_handle() const { return h_; }

  private:
    uint64_t get_(int attr) const { return unimem_fam_desc_get(h_, attr); }
    void set_(int attr, uint64_t value) { unimem_fam_desc_set(h_, attr, value); }

    c_fam_region_desc *h_;
};

class fam_context;

/*
 * The OpenFAM library, as seen by one PE: create one, fam_initialize it, call the rest,
 * fam_finalize it, delete it. Every method throws Fam_Exception on failure.
 */
class fam {
  public:
    fam() : h_(unimem_detail::check_ptr(c_fam_create())) {}
    virtual ~fam() {
        if (h_ != NULL)
            c_fam_delete(h_);
    }

    // INITIALIZE group
    void fam_initialize(const char *groupName, Fam_Options *options) {
        ok_(c_fam_initialize(h_, groupName, options));
    }
    void fam_finalize(const char *groupName) { ok_(c_fam_finalize(h_, groupName)); }
    void fam_abort(int status) { ok_(c_fam_abort(h_, status)); }
    void fam_barrier_all() { ok_(unimem_fam_barrier_all(h_)); }
    /* One malloc() block (array and strings): the caller free()s it. */
    const char **fam_list_options(void) {
        return unimem_detail::check_ptr(c_fam_list_options(h_));
    }
    /* A malloc() copy of the value (int for PE_ID / PE_COUNT, uint64_t for LOC_BUF_SIZE,
     * else a string): the caller free()s it. */
    const void *fam_get_option(char *optionName) {
        return unimem_detail::check_ptr(c_fam_get_option(h_, optionName));
    }
    Fam_Region_Descriptor *fam_lookup_region(const char *name) {
        return region_(c_fam_lookup_region(h_, name));
    }
    Fam_Descriptor *fam_lookup(const char *itemName, const char *regionName) {
        return item_(c_fam_lookup(h_, itemName, regionName));
    }

    // ALLOCATION group
    Fam_Region_Descriptor *fam_create_region(const char *name, uint64_t size,
                                             mode_t permissions,
                                             Fam_Region_Attributes *regionAttributes) {
        return region_(c_fam_create_region(h_, name, static_cast<size_t>(size), permissions,
                                           regionAttributes));
    }
    void fam_destroy_region(Fam_Region_Descriptor *descriptor) {
        ok_(c_fam_destroy_region(h_, rh_(descriptor)));
    }
    void fam_resize_region(Fam_Region_Descriptor *descriptor, uint64_t nbytes) {
        ok_(c_fam_resize_region(h_, rh_(descriptor), nbytes));
    }
    Fam_Descriptor *fam_allocate(uint64_t nbytes, mode_t accessPermissions,
                                 Fam_Region_Descriptor *region) {
        return item_(c_fam_allocate(h_, static_cast<size_t>(nbytes), accessPermissions,
                                    rh_(region)));
    }
    Fam_Descriptor *fam_allocate(const char *name, uint64_t nbytes, mode_t accessPermissions,
                                 Fam_Region_Descriptor *region) {
        return item_(c_fam_allocate_named(h_, name, static_cast<size_t>(nbytes),
                                          accessPermissions, rh_(region)));
    }
    void fam_deallocate(Fam_Descriptor *descriptor) {
        ok_(c_fam_deallocate(h_, dh_(descriptor)));
    }
    void fam_close(Fam_Descriptor *descriptor) { ok_(c_fam_close(h_, dh_(descriptor))); }
    void fam_change_permissions(Fam_Descriptor *descriptor, mode_t accessPermissions) {
        ok_(c_fam_change_permissions_data(h_, dh_(descriptor), accessPermissions));
    }
    void fam_change_permissions(Fam_Region_Descriptor *descriptor, mode_t accessPermissions) {
        ok_(c_fam_change_permissions_region(h_, rh_(descriptor), accessPermissions));
    }
    void fam_stat(Fam_Descriptor *descriptor, Fam_Stat *famInfo) {
        ok_(c_fam_stat_data(h_, dh_(descriptor), famInfo));
    }
    void fam_stat(Fam_Region_Descriptor *descriptor, Fam_Stat *famInfo) {
        ok_(c_fam_stat_region(h_, rh_(descriptor), famInfo));
    }

    // DATA PATH: get / put
    void fam_get_blocking(void *local, Fam_Descriptor *descriptor, uint64_t offset,
                          uint64_t nbytes) {
        ok_(c_fam_get_blocking(h_, local, dh_(descriptor), offset, static_cast<size_t>(nbytes)));
    }
    void fam_get_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t offset,
                             uint64_t nbytes) {
        ok_(c_fam_get_nonblocking(h_, local, dh_(descriptor), offset,
                                  static_cast<size_t>(nbytes)));
    }
    void fam_put_blocking(void *local, Fam_Descriptor *descriptor, uint64_t offset,
                          uint64_t nbytes) {
        ok_(c_fam_put_blocking(h_, local, dh_(descriptor), offset, static_cast<size_t>(nbytes)));
    }
    void fam_put_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t offset,
                             uint64_t nbytes) {
        ok_(c_fam_put_nonblocking(h_, local, dh_(descriptor), offset,
                                  static_cast<size_t>(nbytes)));
    }

    // LOAD / STORE
    void *fam_map(Fam_Descriptor *descriptor) {
        return unimem_detail::check_ptr(c_fam_map(h_, dh_(descriptor)));
    }
    void fam_unmap(void *local, Fam_Descriptor *descriptor) {
        ok_(c_fam_unmap(h_, local, dh_(descriptor)));
    }

    // GATHER / SCATTER: strided (firstElement, stride) or indexed (elementIndex)
    void fam_gather_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                             uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
        ok_(c_fam_gather_blocking_stride(h_, local, dh_(descriptor), nElements, firstElement,
                                         stride, elementSize));
    }
    void fam_gather_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                             uint64_t *elementIndex, uint64_t elementSize) {
        ok_(c_fam_gather_blocking_index(h_, local, dh_(descriptor), nElements, elementIndex,
                                        elementSize));
    }
    void fam_gather_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
        ok_(c_fam_gather_nonblocking_stride(h_, local, dh_(descriptor), nElements,
                                            firstElement, stride, elementSize));
    }
    void fam_gather_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                uint64_t *elementIndex, uint64_t elementSize) {
        ok_(c_fam_gather_nonblocking_index(h_, local, dh_(descriptor), nElements,
                                           elementIndex, elementSize));
    }
    void fam_scatter_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                              uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
        ok_(c_fam_scatter_blocking_stride(h_, local, dh_(descriptor), nElements, firstElement,
                                          stride, elementSize));
    }
    void fam_scatter_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                              uint64_t *elementIndex, uint64_t elementSize) {
        ok_(c_fam_scatter_blocking_index(h_, local, dh_(descriptor), nElements, elementIndex,
                                         elementSize));
    }
    void fam_scatter_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                 uint64_t firstElement, uint64_t stride,
                                 uint64_t elementSize) {
        ok_(c_fam_scatter_nonblocking_stride(h_, local, dh_(descriptor), nElements,
                                             firstElement, stride, elementSize));
    }
    void fam_scatter_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                 uint64_t *elementIndex, uint64_t elementSize) {
        ok_(c_fam_scatter_nonblocking_index(h_, local, dh_(descriptor), nElements,
                                            elementIndex, elementSize));
    }

    // MEMORY-SIDE OPERATIONS (the OpenFAM paper's proposal; a unimem extension, fam_c.h):
    // queued per memory server, applied there in batches; OP_GATHER's local stays valid
    // until fam_aggregate_flush returns, which reports the queued operations' failures.
    void fam_queue_operation(FAM_QUEUE_OP op, void *local, Fam_Descriptor *descriptor,
                             uint64_t nElements, uint64_t *elementIndex,
                             uint64_t elementSize) {
        ok_(c_fam_queue_operation(h_, op, local, dh_(descriptor), nElements, elementIndex,
                                  elementSize));
    }
    void fam_aggregate_flush(Fam_Descriptor *descriptor) {
        ok_(c_fam_aggregate_flush(h_, dh_(descriptor)));
    }

    // COPY, BACKUP, RESTORE: each returns a wait object its _wait call consumes
    void *fam_copy(Fam_Descriptor *src, uint64_t srcOffset, Fam_Descriptor *dest,
                   uint64_t destOffset, uint64_t nbytes) {
        return unimem_detail::check_ptr(c_fam_copy(h_, dh_(src), srcOffset, dh_(dest),
                                                   destOffset, static_cast<size_t>(nbytes)));
    }
    void fam_copy_wait(void *waitObj) { ok_(c_fam_copy_wait(h_, waitObj)); }
    void *fam_backup(Fam_Descriptor *src, const char *BackupName,
                     Fam_Backup_Options *backupOptions) {
        return unimem_detail::check_ptr(c_fam_backup(h_, dh_(src), BackupName, backupOptions));
    }
    void *fam_restore(const char *BackupName, Fam_Descriptor *dest) {
        return unimem_detail::check_ptr(c_fam_restore(h_, BackupName, dh_(dest)));
    }
    /* Allocates data item dataitemName in destRegion, restores into it, *dest = its
     * descriptor (the program deletes it). */
    void *fam_restore(const char *BackupName, Fam_Region_Descriptor *destRegion,
                      const char *dataitemName, mode_t accessPermissions,
                      Fam_Descriptor **dest) {
        c_fam_desc *item = NULL;
        void *waitObj = c_fam_restore_region(h_, BackupName, rh_(destRegion), dataitemName,
                                             accessPermissions, &item);
        if (waitObj == NULL) {
            int code = c_fam_error();
            if (item != NULL)
                unimem_fam_desc_release(item);
            unimem_detail::throw_error(code);
        }
        if (dest != NULL)
            *dest = item_(item);
        else if (item != NULL)
            unimem_fam_desc_release(item);
        return waitObj;
    }
    void fam_backup_wait(void *waitObj) { ok_(c_fam_backup_wait(h_, waitObj)); }
    void fam_restore_wait(void *waitObj) { ok_(c_fam_restore_wait(h_, waitObj)); }
    void *fam_delete_backup(const char *BackupName) {
        return unimem_detail::check_ptr(c_fam_delete_backup(h_, BackupName));
    }
    void fam_delete_backup_wait(void *waitObj) { ok_(c_fam_delete_backup_wait(h_, waitObj)); }
    /* A malloc() string: the caller free()s it. */
    char *fam_list_backup(const char *BackupName) {
        char *listing = NULL;
        ok_(unimem_fam_list_backup(h_, BackupName, &listing));
        return listing;
    }

    // ATOMICS, non-fetching: they may complete after returning (fam_quiet waits).
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, int32_t value) {
        ok_(c_fam_set_int32(h_, dh_(descriptor), offset, value));
    }
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, int64_t value) {
        ok_(c_fam_set_int64(h_, dh_(descriptor), offset, value));
    }
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, int128_t value) {
        ok_(unimem_fam_set_int128p(h_, dh_(descriptor), offset, &value));
    }
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        ok_(c_fam_set_uint32(h_, dh_(descriptor), offset, value));
    }
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        ok_(c_fam_set_uint64(h_, dh_(descriptor), offset, value));
    }
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, float value) {
        ok_(c_fam_set_float(h_, dh_(descriptor), offset, value));
    }
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, double value) {
        ok_(c_fam_set_double(h_, dh_(descriptor), offset, value));
    }
    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, int32_t value) {
        ok_(c_fam_add_int32(h_, dh_(descriptor), offset, value));
    }
    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, int64_t value) {
        ok_(c_fam_add_int64(h_, dh_(descriptor), offset, value));
    }
    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        ok_(c_fam_add_uint32(h_, dh_(descriptor), offset, value));
    }
    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        ok_(c_fam_add_uint64(h_, dh_(descriptor), offset, value));
    }
    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, float value) {
        ok_(c_fam_add_float(h_, dh_(descriptor), offset, value));
    }
    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, double value) {
        ok_(c_fam_add_double(h_, dh_(descriptor), offset, value));
    }
    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, int32_t value) {
        ok_(c_fam_subtract_int32(h_, dh_(descriptor), offset, value));
    }
    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, int64_t value) {
        ok_(c_fam_subtract_int64(h_, dh_(descriptor), offset, value));
    }
    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        ok_(c_fam_subtract_uint32(h_, dh_(descriptor), offset, value));
    }
    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        ok_(c_fam_subtract_uint64(h_, dh_(descriptor), offset, value));
    }
    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, float value) {
        ok_(c_fam_subtract_float(h_, dh_(descriptor), offset, value));
    }
    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, double value) {
        ok_(c_fam_subtract_double(h_, dh_(descriptor), offset, value));
    }
    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, int32_t value) {
        ok_(c_fam_min_int32(h_, dh_(descriptor), offset, value));
    }
    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, int64_t value) {
        ok_(c_fam_min_int64(h_, dh_(descriptor), offset, value));
    }
    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        ok_(c_fam_min_uint32(h_, dh_(descriptor), offset, value));
    }
    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        ok_(c_fam_min_uint64(h_, dh_(descriptor), offset, value));
    }
    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, float value) {
        ok_(c_fam_min_float(h_, dh_(descriptor), offset, value));
    }
    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, double value) {
        ok_(c_fam_min_double(h_, dh_(descriptor), offset, value));
    }
    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, int32_t value) {
        ok_(c_fam_max_int32(h_, dh_(descriptor), offset, value));
    }
    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, int64_t value) {
        ok_(c_fam_max_int64(h_, dh_(descriptor), offset, value));
    }
    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        ok_(c_fam_max_uint32(h_, dh_(descriptor), offset, value));
    }
    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        ok_(c_fam_max_uint64(h_, dh_(descriptor), offset, value));
    }
    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, float value) {
        ok_(c_fam_max_float(h_, dh_(descriptor), offset, value));
    }
    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, double value) {
        ok_(c_fam_max_double(h_, dh_(descriptor), offset, value));
    }
    void fam_and(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        ok_(c_fam_and_uint32(h_, dh_(descriptor), offset, value));
    }
    void fam_and(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        ok_(c_fam_and_uint64(h_, dh_(descriptor), offset, value));
    }
    void fam_or(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        ok_(c_fam_or_uint32(h_, dh_(descriptor), offset, value));
    }
    void fam_or(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        ok_(c_fam_or_uint64(h_, dh_(descriptor), offset, value));
    }
    void fam_xor(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        ok_(c_fam_xor_uint32(h_, dh_(descriptor), offset, value));
    }
    void fam_xor(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        ok_(c_fam_xor_uint64(h_, dh_(descriptor), offset, value));
    }

    // ATOMICS, fetching: they return the value found before the operation.
    int32_t fam_fetch_int32(Fam_Descriptor *descriptor, uint64_t offset) {
        int32_t result = 0;
        ok_(c_fam_fetch_int32(h_, dh_(descriptor), offset, &result));
        return result;
    }
    int64_t fam_fetch_int64(Fam_Descriptor *descriptor, uint64_t offset) {
        int64_t result = 0;
        ok_(c_fam_fetch_int64(h_, dh_(descriptor), offset, &result));
        return result;
    }
    int128_t fam_fetch_int128(Fam_Descriptor *descriptor, uint64_t offset) {
        int128_t result = 0;
        ok_(c_fam_fetch_int128(h_, dh_(descriptor), offset, &result));
        return result;
    }
    uint32_t fam_fetch_uint32(Fam_Descriptor *descriptor, uint64_t offset) {
        uint32_t result = 0;
        ok_(c_fam_fetch_uint32(h_, dh_(descriptor), offset, &result));
        return result;
    }
    uint64_t fam_fetch_uint64(Fam_Descriptor *descriptor, uint64_t offset) {
        uint64_t result = 0;
        ok_(c_fam_fetch_uint64(h_, dh_(descriptor), offset, &result));
        return result;
    }
    float fam_fetch_float(Fam_Descriptor *descriptor, uint64_t offset) {
        float result = 0;
        ok_(c_fam_fetch_float(h_, dh_(descriptor), offset, &result));
        return result;
    }
    double fam_fetch_double(Fam_Descriptor *descriptor, uint64_t offset) {
        double result = 0;
        ok_(c_fam_fetch_double(h_, dh_(descriptor), offset, &result));
        return result;
    }
    int32_t fam_swap(Fam_Descriptor *descriptor, uint64_t offset, int32_t value) {
        int32_t result = 0;
        ok_(c_fam_swap_int32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    int64_t fam_swap(Fam_Descriptor *descriptor, uint64_t offset, int64_t value) {
        int64_t result = 0;
        ok_(c_fam_swap_int64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint32_t fam_swap(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        uint32_t result = 0;
        ok_(c_fam_swap_uint32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint64_t fam_swap(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        uint64_t result = 0;
        ok_(c_fam_swap_uint64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    float fam_swap(Fam_Descriptor *descriptor, uint64_t offset, float value) {
        float result = 0;
        ok_(c_fam_swap_float(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    double fam_swap(Fam_Descriptor *descriptor, uint64_t offset, double value) {
        double result = 0;
        ok_(c_fam_swap_double(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    int32_t fam_compare_swap(Fam_Descriptor *descriptor, uint64_t offset, int32_t oldValue,
                         int32_t newValue) {
        int32_t result = 0;
        ok_(c_fam_compare_swap_int32(h_, dh_(descriptor), offset, oldValue, newValue, &result));
        return result;
    }
    int64_t fam_compare_swap(Fam_Descriptor *descriptor, uint64_t offset, int64_t oldValue,
                         int64_t newValue) {
        int64_t result = 0;
        ok_(c_fam_compare_swap_int64(h_, dh_(descriptor), offset, oldValue, newValue, &result));
        return result;
    }
    uint32_t fam_compare_swap(Fam_Descriptor *descriptor, uint64_t offset, uint32_t oldValue,
                         uint32_t newValue) {
        uint32_t result = 0;
        ok_(c_fam_compare_swap_uint32(h_, dh_(descriptor), offset, oldValue, newValue,
                                      &result));
        return result;
    }
    uint64_t fam_compare_swap(Fam_Descriptor *descriptor, uint64_t offset, uint64_t oldValue,
                         uint64_t newValue) {
        uint64_t result = 0;
        ok_(c_fam_compare_swap_uint64(h_, dh_(descriptor), offset, oldValue, newValue,
                                      &result));
        return result;
    }
    int128_t fam_compare_swap(Fam_Descriptor *descriptor, uint64_t offset, int128_t oldValue,
                         int128_t newValue) {
        int128_t result = 0;
        ok_(unimem_fam_compare_swap_int128p(h_, dh_(descriptor), offset, &oldValue, &newValue,
                                            &result));
        return result;
    }
    int32_t fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, int32_t value) {
        int32_t result = 0;
        ok_(c_fam_fetch_add_int32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    int64_t fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, int64_t value) {
        int64_t result = 0;
        ok_(c_fam_fetch_add_int64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint32_t fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        uint32_t result = 0;
        ok_(c_fam_fetch_add_uint32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint64_t fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        uint64_t result = 0;
        ok_(c_fam_fetch_add_uint64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    float fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, float value) {
        float result = 0;
        ok_(c_fam_fetch_add_float(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    double fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, double value) {
        double result = 0;
        ok_(c_fam_fetch_add_double(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    int32_t fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, int32_t value) {
        int32_t result = 0;
        ok_(c_fam_fetch_subtract_int32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    int64_t fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, int64_t value) {
        int64_t result = 0;
        ok_(c_fam_fetch_subtract_int64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint32_t fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        uint32_t result = 0;
        ok_(c_fam_fetch_subtract_uint32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint64_t fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        uint64_t result = 0;
        ok_(c_fam_fetch_subtract_uint64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    float fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, float value) {
        float result = 0;
        ok_(c_fam_fetch_subtract_float(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    double fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, double value) {
        double result = 0;
        ok_(c_fam_fetch_subtract_double(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    int32_t fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, int32_t value) {
        int32_t result = 0;
        ok_(c_fam_fetch_min_int32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    int64_t fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, int64_t value) {
        int64_t result = 0;
        ok_(c_fam_fetch_min_int64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint32_t fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        uint32_t result = 0;
        ok_(c_fam_fetch_min_uint32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint64_t fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        uint64_t result = 0;
        ok_(c_fam_fetch_min_uint64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    float fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, float value) {
        float result = 0;
        ok_(c_fam_fetch_min_float(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    double fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, double value) {
        double result = 0;
        ok_(c_fam_fetch_min_double(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    int32_t fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, int32_t value) {
        int32_t result = 0;
        ok_(c_fam_fetch_max_int32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    int64_t fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, int64_t value) {
        int64_t result = 0;
        ok_(c_fam_fetch_max_int64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint32_t fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        uint32_t result = 0;
        ok_(c_fam_fetch_max_uint32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint64_t fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        uint64_t result = 0;
        ok_(c_fam_fetch_max_uint64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    float fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, float value) {
        float result = 0;
        ok_(c_fam_fetch_max_float(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    double fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, double value) {
        double result = 0;
        ok_(c_fam_fetch_max_double(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint32_t fam_fetch_and(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        uint32_t result = 0;
        ok_(c_fam_fetch_and_uint32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint64_t fam_fetch_and(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        uint64_t result = 0;
        ok_(c_fam_fetch_and_uint64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint32_t fam_fetch_or(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        uint32_t result = 0;
        ok_(c_fam_fetch_or_uint32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint64_t fam_fetch_or(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        uint64_t result = 0;
        ok_(c_fam_fetch_or_uint64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint32_t fam_fetch_xor(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value) {
        uint32_t result = 0;
        ok_(c_fam_fetch_xor_uint32(h_, dh_(descriptor), offset, value, &result));
        return result;
    }
    uint64_t fam_fetch_xor(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value) {
        uint64_t result = 0;
        ok_(c_fam_fetch_xor_uint64(h_, dh_(descriptor), offset, value, &result));
        return result;
    }

    // MEMORY ORDERING
    void fam_fence(void) { ok_(c_fam_fence(h_)); }
    void fam_quiet(void) { ok_(c_fam_quiet(h_)); }
    fam_context *fam_context_open();
    void fam_context_close(fam_context *);
    uint64_t fam_progress(void) {
        uint64_t pending = 0;
        ok_(c_fam_progress(h_, &pending));
        return pending;
    }

#ifdef FAM_PROFILE
    void fam_reset_profile() { ok_(unimem_fam_reset_profile(h_)); }
#endif

    /* unimem: the library's instance or context handle, for the C API. */
    c_fam *unimem_handle() const { return h_; }

  protected:
    /* Take over a handle (a context's, for fam_context). */
    fam(unimem_detail::adopt_tag, c_fam *handle) : h_(handle) {}

    c_fam *h_;

  private:
    fam(const fam &) = delete; // an instance is one PE's library: not copyable
    fam &operator=(const fam &) = delete;

    static void ok_(int rc) { unimem_detail::check(rc); }
    static c_fam_desc *dh_(Fam_Descriptor *d) { return d != NULL ? d->unimem_handle() : NULL; }
    static c_fam_region_desc *rh_(Fam_Region_Descriptor *r) {
        return r != NULL ? r->unimem_handle() : NULL;
    }
    /* The descriptor objects of handles the C ABI returned (NULL: failure). */
    static Fam_Descriptor *item_(c_fam_desc *h) {
        unimem_detail::check_ptr(h);
        try {
            return new Fam_Descriptor(unimem_detail::adopt_tag(), h);
        } catch (...) {
            unimem_fam_desc_release(h);
            throw;
        }
    }
    static Fam_Region_Descriptor *region_(c_fam_region_desc *h) {
        unimem_detail::check_ptr(h);
        try {
            return new Fam_Region_Descriptor(unimem_detail::adopt_tag(), h);
        } catch (...) {
            unimem_fam_desc_release(h);
            throw;
        }
    }
};

/*
 * A context: an independent stream of FAM operations of the PE (its own fence, quiet and
 * progress), from fam::fam_context_open. Data path, atomics and ordering work on it as on
 * the fam; the calls below are refused with FAM_ERR_NOPERM, as in OpenFAM. Close it with
 * the fam's fam_context_close; deleting it afterwards (optional, as in OpenFAM) frees it.
 */
class fam_context : public fam {
  public:
    /* Takes over a context handle of the library (c_fam_context_open). */
    fam_context(void *inp_fam_impl) : fam(unimem_detail::adopt_tag(), inp_fam_impl) {}
    ~fam_context() {}

    void fam_initialize(const char *, Fam_Options *) {
        unimem_detail::not_in_context("fam_initialize");
    }
    void fam_finalize(const char *) { unimem_detail::not_in_context("fam_finalize"); }
    void fam_abort(int) { unimem_detail::not_in_context("fam_abort"); }
    void fam_barrier_all() { unimem_detail::not_in_context("fam_barrier_all"); }
    const char **fam_list_options(void) { unimem_detail::not_in_context("fam_list_options"); }
    const void *fam_get_option(char *) { unimem_detail::not_in_context("fam_get_option"); }
    Fam_Region_Descriptor *fam_lookup_region(const char *) {
        unimem_detail::not_in_context("fam_lookup_region");
    }
    Fam_Descriptor *fam_lookup(const char *, const char *) {
        unimem_detail::not_in_context("fam_lookup");
    }
    Fam_Region_Descriptor *fam_create_region(const char *, uint64_t, mode_t,
                                             Fam_Region_Attributes *) {
        unimem_detail::not_in_context("fam_create_region");
    }
    void fam_destroy_region(Fam_Region_Descriptor *) {
        unimem_detail::not_in_context("fam_destroy_region");
    }
    void fam_resize_region(Fam_Region_Descriptor *, uint64_t) {
        unimem_detail::not_in_context("fam_resize_region");
    }
    Fam_Descriptor *fam_allocate(uint64_t, mode_t, Fam_Region_Descriptor *) {
        unimem_detail::not_in_context("fam_allocate");
    }
    Fam_Descriptor *fam_allocate(const char *, uint64_t, mode_t, Fam_Region_Descriptor *) {
        unimem_detail::not_in_context("fam_allocate");
    }
    void fam_deallocate(Fam_Descriptor *) { unimem_detail::not_in_context("fam_deallocate"); }
    void fam_close(Fam_Descriptor *) { unimem_detail::not_in_context("fam_close"); }
    void fam_change_permissions(Fam_Descriptor *, mode_t) {
        unimem_detail::not_in_context("fam_change_permissions");
    }
    fam_context *fam_context_open() { unimem_detail::not_in_context("fam_context_open"); }
    void fam_context_close(fam_context *) { unimem_detail::not_in_context("fam_context_close"); }
};

inline fam_context *fam::fam_context_open() {
    c_fam_context *ctx = unimem_detail::check_ptr(c_fam_context_open(h_));
    try {
        return new fam_context(ctx);
    } catch (...) {
        c_fam_context_close(h_, ctx);
        c_fam_delete(ctx);
        throw;
    }
}

/* Closes the context; the object stays valid (every call then fails) until deleted. */
inline void fam::fam_context_close(fam_context *ctx) {
    ok_(c_fam_context_close(h_, ctx != NULL ? ctx->unimem_handle() : NULL));
}

} // namespace openfam

#endif /* __cplusplus */

#endif /* FAM_H_ */
