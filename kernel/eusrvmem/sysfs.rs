// SPDX-License-Identifier: GPL-2.0
//! Read-only attributes in `/sys/class/misc/eusrvmem/`: node id, node count, layout, counters.
//!
//! The attributes are a C `attribute_group` in `static`s (`kernel/common/sysfs_group.rs`),
//! which the misc device is created with (`MiscDeviceRegistration::register_with_groups`, kernel
//! patch 0009): the driver core adds them before the device is announced and removes them with it.
//! Values come from the published fabric.

use crate::{
    fabric::{self, Fabric},
    sysfs_group::{static_attribute_group, CStatic},
};
use core::{cell::UnsafeCell, fmt::Write};
use kernel::{bindings, ffi::c_char, miscdevice::AttributeGroups, prelude::*, str::Formatter};

const NAMES: [&CStr; 10] = [
    c"node_id",
    c"node_count",
    c"vectors",
    c"gas_phys",
    c"gas_size",
    c"ctl_size",
    c"partition_size",
    c"generation",
    c"partitions",
    c"doorbell_counts",
];

fn show_value(name: &[u8], f: &Fabric, out: &mut Formatter<'_>) -> core::fmt::Result {
    let d = &f.desc;
    match name {
        b"node_id" => writeln!(out, "{}", f.node_id),
        b"node_count" => writeln!(out, "{}", d.node_count),
        b"vectors" => writeln!(out, "{}", f.doorbells.len()),
        b"gas_phys" => writeln!(out, "{:#x}", f.window.phys()),
        b"gas_size" => writeln!(out, "{}", f.window.size()),
        b"ctl_size" => writeln!(out, "{}", d.ctl_size),
        b"partition_size" => writeln!(out, "{}", d.partition_size),
        b"generation" => writeln!(out, "{:#x}", d.generation),
        b"partitions" => {
            // One line per node: id, byte offset in the window, size.
            for node in 0..d.node_count {
                let off = d.partition_offset(node).unwrap_or(0);
                writeln!(out, "{} {:#x} {}", node, off, d.partition_size)?;
            }
            Ok(())
        }
        b"doorbell_counts" => {
            for (i, db) in f.doorbells.iter().enumerate() {
                write!(out, "{}{}", if i == 0 { "" } else { " " }, db.count())?;
            }
            writeln!(out)
        }
        _ => Ok(()),
    }
}

/// # Safety
///
/// Called by sysfs with one of our attributes and a PAGE_SIZE buffer.
unsafe extern "C" fn show(
    _dev: *mut bindings::device,
    attr: *mut bindings::device_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: sysfs passes one of our attributes, whose name is a static C string.
    let name = unsafe { CStr::from_char_ptr((*attr).attr.name) }.to_bytes();
    // SAFETY: sysfs hands `show` a zeroed buffer of PAGE_SIZE bytes.
    let buf = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), bindings::PAGE_SIZE) };
    let mut out = Formatter::new(buf);
    match fabric::with_current(|f| show_value(name, f, &mut out)) {
        Some(_) => out.bytes_written() as isize,
        None => ENODEV.to_errno() as isize,
    }
}

/// Every file's mode: `gas_phys` is a physical address, for root only (as `/proc/iomem`).
const FILE_MODES: [u16; NAMES.len()] = {
    let mut modes = [0o444; NAMES.len()];
    modes[3] = 0o400;
    modes
};
const _: () = assert!(NAMES[3].to_bytes().len() == 8, "FILE_MODES[3] is gas_phys");

static_attribute_group! {
    /// One file per name, read by `show`.
    static GROUP: bindings::device_attribute = (NAMES, show, FILE_MODES);
}

static GROUPS: CStatic<[*const bindings::attribute_group; 2]> = CStatic(UnsafeCell::new([
    GROUP.0.get().cast_const(),
    core::ptr::null(),
]));

/// The attribute groups of `/dev/eusrvmem`'s device.
pub(crate) fn groups() -> AttributeGroups {
    // SAFETY: `GROUPS` is a NULL-terminated array holding one group whose attributes, names and
    // `show` are statics of this module, never written after their initializers; the misc
    // device registered with them is deregistered before the module's memory goes away.
    unsafe { AttributeGroups::from_raw(GROUPS.0.get().cast_const().cast()) }
}
