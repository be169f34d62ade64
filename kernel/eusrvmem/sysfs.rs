// SPDX-License-Identifier: GPL-2.0
//! Read-only attributes in `/sys/class/misc/eusrvmem/`: node id, node count, layout, counters.
//!
//! The 7.3 Rust crate has no sysfs attribute abstraction, so this attaches a plain
//! `attribute_group` to the misc device's kobject. Values come from the published fabric.

use crate::fabric::{self, Fabric};
use core::fmt::Write;
use kernel::{bindings, ffi::c_char, prelude::*, str::Formatter};

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

struct Table {
    attrs: [bindings::device_attribute; NAMES.len()],
    ptrs: [*mut bindings::attribute; NAMES.len() + 1],
    group: bindings::attribute_group,
}

/// The attribute group while it is attached to the misc device.
///
/// # Invariants
///
/// `table.group` is registered on `kobj` until `Drop`.
pub(crate) struct Attributes {
    kobj: *mut bindings::kobject,
    table: KBox<Table>,
}

// SAFETY: the pointers refer to the misc device (outlives us, see the driver's field order) and
// to our own heap table; sysfs calls are allowed from any thread.
unsafe impl Send for Attributes {}

impl Attributes {
    /// Attaches the attributes to `misc`'s device.
    pub(crate) fn attach(misc: *mut bindings::miscdevice) -> Result<Self> {
        // SAFETY: all-zero is a valid value for these plain C structs.
        let mut table = KBox::new(unsafe { core::mem::zeroed::<Table>() }, GFP_KERNEL)?;
        for (i, name) in NAMES.iter().enumerate() {
            table.attrs[i].attr.name = name.as_char_ptr();
            table.attrs[i].attr.mode = 0o444;
            table.attrs[i].__bindgen_anon_1.show = Some(show);
            table.ptrs[i] = &raw mut table.attrs[i].attr;
        }
        table.group.__bindgen_anon_2.attrs = table.ptrs.as_mut_ptr();
        // SAFETY: `misc` is a registered misc device, so `this_device` is a live device.
        let kobj = unsafe { &raw mut (*(*misc).this_device).kobj };
        // SAFETY: `kobj` is live; the group and its attributes live in `table` until `Drop`.
        kernel::error::to_result(unsafe { bindings::sysfs_create_group(kobj, &table.group) })?;
        Ok(Self { kobj, table })
    }
}

impl Drop for Attributes {
    fn drop(&mut self) {
        // SAFETY: registered in `attach` on this kobject (type invariant).
        unsafe { bindings::sysfs_remove_group(self.kobj, &self.table.group) };
    }
}
