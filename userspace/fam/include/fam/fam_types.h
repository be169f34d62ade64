/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fam/fam_types.h: the plain data types of unimem's OpenFAM 3.x interface, shared by the
 * C API (fam_c.h), the C ABI of libunimem_fam (fam_abi.h) and the C++ API (fam.h).
 *
 * Applications include <fam/fam.h> (C++, or C for these types only) or <fam/fam_c.h> (C);
 * this header is included by both and need not be named.
 *
 * Names, members, member order and enumerator values are those of OpenFAM 3.x, so that
 * programs written for OpenFAM compile unchanged. As in OpenFAM, in C++ the types live in
 * namespace openfam and the structures (not the enumerators) are also named at global
 * scope; in C everything is global. The layouts are unimem's own ABI (libunimem_fam is
 * built against this header), not OpenFAM's binary ABI.
 *
 * Additions over OpenFAM 3.2.0, all source compatible: Fam_Allocation_Policy and the
 * allocationPolicy / hostingNode members of Fam_Region_Attributes (from OpenFAM's
 * development branch); a zero-initialised Fam_Region_Attributes still means "defaults".
 */
#ifndef UNIMEM_FAM_TYPES_H
#define UNIMEM_FAM_TYPES_H

#include <stdint.h>    /* uint64_t, ... */
#include <sys/types.h> /* mode_t, even in strict ISO C modes (-std=c99) */
#include <sys/stat.h>  /* as OpenFAM's fam.h: programs may rely on it for S_IRUSR etc. */

/*
 * 128-bit integers for fam_set / fam_fetch_int128 / fam_compare_swap. OpenFAM falls back
 * to long long without compiler support; unimem's ABI passes 16-byte values, so it needs
 * the real type (gcc and clang have it on every 64-bit target unimem runs on).
 */
#ifndef __SIZEOF_INT128__
#error "unimem's OpenFAM interface needs a compiler with __int128 (64-bit gcc or clang)"
#endif
__extension__ typedef __int128 int128_t;

#ifndef FAM_SUCCESS
#define FAM_SUCCESS 0
#endif

#ifdef __cplusplus
namespace openfam {
using ::int128_t;
extern "C" {
#endif

/* Interleaving of a region's data items over memory servers. */
typedef enum { INTERLEAVE_DEFAULT = 0, ENABLE, DISABLE } Fam_Interleave_Enable;

/* Memory type of a region. */
typedef enum { MEMORY_TYPE_DEFAULT = 0, VOLATILE, PERSISTENT } Fam_Memory_Type;

/* Redundancy of a region. */
typedef enum {
    REDUNDANCY_LEVEL_DEFAULT = 0,
    NONE,
    RAID1,
    RAID5
} Fam_Redundancy_Level;

/* Where access permissions are kept: on the region only, or on each data item. */
typedef enum {
    PERMISSION_LEVEL_DEFAULT = 0,
    REGION,
    DATAITEM
} Fam_Permission_Level;

/* Placement of a region (OpenFAM development branch). */
typedef enum {
    ALLOCATION_POLICY_DEFAULT = 0,
    SINGLE_NODE_SINGLE_ALLOC,
    MULTI_NODE_MULTI_ALLOC
} Fam_Allocation_Policy;

/*
 * Memory-side operations of fam_queue_operation (the OpenFAM paper's proposal, seed 003;
 * not in OpenFAM 3.x: a unimem extension): add to, store or read the indexed elements, done
 * by the data item's memory servers in batches.
 */
typedef enum { OP_ADD_INDEXED = 0, OP_SCATTER = 1, OP_GATHER = 2 } FAM_QUEUE_OP;

/* Attributes given to fam_create_region; all zero means the system defaults. */
typedef struct {
    Fam_Redundancy_Level redundancyLevel;
    Fam_Memory_Type memoryType;
    Fam_Interleave_Enable interleaveEnable;
    Fam_Permission_Level permissionLevel;
    Fam_Allocation_Policy allocationPolicy; /* unimem/OpenFAM-devel addition */
    int hostingNode;                        /* unimem/OpenFAM-devel addition */
} Fam_Region_Attributes;

/* State of a descriptor (Fam_Descriptor::get_desc_status and the C ABI). */
typedef enum {
    DESC_INVALID,
    DESC_INIT_DONE,
    DESC_INIT_DONE_BUT_KEY_NOT_VALID,
    DESC_UNINITIALIZED
} Fam_Descriptor_Status;

/*
 * Process-independent name of a region or data item: a program may pass it to another
 * process, which rebuilds a descriptor from it (Fam_Descriptor(Fam_Global_Descriptor)).
 * For a region, offset holds the implementation's region marker.
 */
typedef struct {
    uint64_t regionId;
    uint64_t offset;
} Fam_Global_Descriptor;

/* What fam_stat reports about a region or a data item. */
typedef struct {
    uint64_t size;
    mode_t perm;
    char *name; /* owned by the descriptor that was queried; valid while it lives */
    uint32_t uid;
    uint32_t gid;
    Fam_Region_Attributes region_attributes;
    uint64_t num_memservers;
    uint64_t interleaveSize;
    uint64_t memory_servers[256];
} Fam_Stat;

/* Options of fam_backup (none are defined yet). */
typedef struct {
    uint32_t backup_option_reserved;
} Fam_Backup_Options;

/*
 * Options of fam_initialize. A NULL member means "not given": the library then takes the
 * value from its configuration file or its default.
 */
typedef struct {
    char *defaultRegionName;
    char *cisServer;
    char *grpcPort;
    char *libfabricProvider;
    char *famThreadModel;   /* "FAM_THREAD_SERIALIZE" or "FAM_THREAD_MULTIPLE" */
    char *cisInterfaceType;
    char *openFamModel;     /* "memory_server" or "shared_memory" */
    char *famContextModel;  /* "FAM_CONTEXT_DEFAULT" or "FAM_CONTEXT_REGION" */
    char *numConsumer;
    char *runtime;          /* "PMIX", "PMI2" or "NONE" */
    char *fam_default_memory_type;
    char *if_device;
    void *local_buf_addr;   /* local buffer to register with the fabric up front */
    uint64_t local_buf_size;
} Fam_Options;

#ifdef __cplusplus
} /* extern "C" */
} /* namespace openfam */

/* OpenFAM names these structures and enumerations at global scope too. */
using Fam_Global_Descriptor = openfam::Fam_Global_Descriptor;
using Fam_Options = openfam::Fam_Options;
using Fam_Interleave_Enable = openfam::Fam_Interleave_Enable;
using Fam_Memory_Type = openfam::Fam_Memory_Type;
using Fam_Redundancy_Level = openfam::Fam_Redundancy_Level;
using Fam_Permission_Level = openfam::Fam_Permission_Level;
using Fam_Region_Attributes = openfam::Fam_Region_Attributes;
using Fam_Stat = openfam::Fam_Stat;
using Fam_Backup_Options = openfam::Fam_Backup_Options;
using FAM_QUEUE_OP = openfam::FAM_QUEUE_OP;
#endif

#endif /* UNIMEM_FAM_TYPES_H */
