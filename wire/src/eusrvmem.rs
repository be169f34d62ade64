// SPDX-License-Identifier: GPL-2.0
//! User-space ABI of `/dev/eusrvmem` (shared by the kernel module and the `unimem-gas` tool).
//!
//! `mmap(2)` offsets are byte offsets into the GAS region (page-aligned); node `i`'s partition is
//! at `ctl_size + i * partition_size` (see [`crate::gas`] and `/sys/class/misc/eusrvmem/`).
//!
//! This file is included by the kernel module with `#[path]`; it must only use `core`.

/// ioctl "magic" type byte of `/dev/eusrvmem`.
pub const IOCTL_TYPE: u32 = b'U' as u32;
/// ioctl number of [`RingRequest`] (`_IOW(IOCTL_TYPE, IOCTL_NR_RING, RingRequest)`).
pub const IOCTL_NR_RING: u32 = 1;

/// Argument of the ring ioctl: raise doorbell `vector` on node `node`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingRequest {
    /// Destination node id.
    pub node: u32,
    /// Doorbell vector on that node.
    pub vector: u32,
}

// No padding: the kernel reads it from user memory as plain bytes (`FromBytes`).
const _: () = assert!(core::mem::size_of::<RingRequest>() == 4 + 4);

/// Name of the misc device and of its sysfs directory under `/sys/class/misc/`.
pub const DEVICE_NAME: &str = "eusrvmem";
