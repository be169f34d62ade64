//! The `unimem-gas` library: this node's fabric view from `unimem_eusrvmem`'s sysfs
//! ([`sysfs`]), mappings of the GAS window and the doorbell ioctl of `/dev/eusrvmem`
//! ([`device`]), and the seeded test patterns ([`pattern`]). Used by the `unimem-gas` tool and
//! by `kram-daemon` (which writes its lease record and wipes chunks through its own mapping).

pub mod device;
pub mod info;
pub mod pattern;
pub mod sysfs;
