//! The plain C types of `fam_types.h`, with its layouts (`tests/host/fam_lib.sh` checks the
//! sizes from C too).

use std::ffi::{c_char, c_int, c_void};

/// `Fam_Global_Descriptor`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GlobalDescriptor {
    pub region_id: u64,
    pub offset: u64,
}

/// `Fam_Region_Attributes`: enums as C ints.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegionAttributes {
    pub redundancy_level: c_int,
    pub memory_type: c_int,
    pub interleave_enable: c_int,
    pub permission_level: c_int,
    pub allocation_policy: c_int,
    pub hosting_node: c_int,
}

/// `Fam_Stat`.
#[repr(C)]
pub struct FamStat {
    pub size: u64,
    pub perm: u32,
    pub name: *mut c_char,
    pub uid: u32,
    pub gid: u32,
    pub region_attributes: RegionAttributes,
    pub num_memservers: u64,
    pub interleave_size: u64,
    pub memory_servers: [u64; 256],
}

/// `Fam_Options`: NULL members are "not given".
#[repr(C)]
pub struct FamOptions {
    pub default_region_name: *mut c_char,
    pub cis_server: *mut c_char,
    pub grpc_port: *mut c_char,
    pub libfabric_provider: *mut c_char,
    pub fam_thread_model: *mut c_char,
    pub cis_interface_type: *mut c_char,
    pub openfam_model: *mut c_char,
    pub fam_context_model: *mut c_char,
    pub num_consumer: *mut c_char,
    pub runtime: *mut c_char,
    pub fam_default_memory_type: *mut c_char,
    pub if_device: *mut c_char,
    pub local_buf_addr: *mut c_void,
    pub local_buf_size: u64,
}

/// `Fam_Backup_Options`.
#[repr(C)]
pub struct BackupOptions {
    pub backup_option_reserved: u32,
}

/// `Fam_Descriptor_Status`.
pub mod status {
    pub const DESC_INVALID: u64 = 0;
    pub const DESC_INIT_DONE: u64 = 1;
    pub const DESC_INIT_DONE_BUT_KEY_NOT_VALID: u64 = 2;
    pub const DESC_UNINITIALIZED: u64 = 3;
}
