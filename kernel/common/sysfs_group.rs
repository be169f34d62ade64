// SPDX-License-Identifier: GPL-2.0
//! A sysfs `attribute_group` of read-only attributes, built by the compiler in `static`s, for
//! the modules whose sysfs files are a fixed list (`unimem_eusrvmem`'s device attributes,
//! `unimem_gsas`'s counters): the 7.3 Rust crate has no sysfs attribute abstraction. Static
//! attributes also have static lockdep keys, so no `sysfs_attr_init` is needed.
//!
//! Included at the crate root (`#[path = "../common/sysfs_group.rs"] mod sysfs_group;`) by
//! `unimem_eusrvmem`, `unimem_mailbox`, `unimem_kram` and `unimem_gsas`: the macros name
//! `crate::sysfs_group`, so it must sit at the root under that name.

use core::cell::UnsafeCell;

/// A C object in a `static`, handed to C code as a pointer.
#[repr(transparent)]
pub(crate) struct CStatic<T>(pub(crate) UnsafeCell<T>);

// SAFETY: Rust code reaches the contents only through the raw pointer `UnsafeCell::get` gives,
// and dereferencing that is `unsafe`; the tables are written only by their constant
// initializers, and the C code they are handed to (sysfs, the driver core) takes attribute
// groups as `const` and only reads them. The pointers inside are addresses of other statics,
// valid on every thread.
unsafe impl<T> Sync for CStatic<T> {}

/// Declares `static $group: CStatic<bindings::attribute_group>` with one read-only (0444)
/// attribute per name of `$names` (a constant array of `&'static CStr`), of the C type `$attr`
/// (`device_attribute`, `kobj_attribute`: any attribute type with an `attr` and a `show`), all
/// shown by `$show`, which tells them apart by `attr.name`. The attributes and the
/// NULL-terminated list of their `struct attribute *` are statics of the calling module, so they
/// live as long as it. A third element, an array of modes parallel to `$names`, sets each
/// file's mode (e.g. 0o400 for one that shows a physical address); the default is 0o444.
macro_rules! static_attribute_group {
    ($(#[$meta:meta])* $vis:vis static $group:ident: $attr:ty = ($names:expr, $show:expr);) => {
        $crate::sysfs_group::static_attribute_group! {
            $(#[$meta])* $vis static $group: $attr = ($names, $show, [0o444u16; $names.len()]);
        }
    };
    ($(#[$meta:meta])* $vis:vis static $group:ident: $attr:ty = ($names:expr, $show:expr, $modes:expr);) => {
        $(#[$meta])*
        $vis static $group: $crate::sysfs_group::CStatic<::kernel::bindings::attribute_group> = {
            use ::core::cell::UnsafeCell;
            use ::kernel::{bindings, str::as_char_ptr_in_const_context};
            use $crate::sysfs_group::CStatic;

            const N: usize = $names.len();
            const MODES: [u16; N] = $modes;

            static ATTRS: CStatic<[$attr; N]> = CStatic(UnsafeCell::new({
                // SAFETY: all-zero is a valid attribute of these types (integers, pointers and
                // optional functions): no `store`, no lockdep `key` (sysfs then uses the `skey`
                // inside the attribute, which is static here). Name, mode and `show` are set
                // below for every element.
                let mut attrs: [$attr; N] = unsafe { ::core::mem::zeroed() };
                let mut i = 0;
                while i < N {
                    attrs[i].attr.name = as_char_ptr_in_const_context($names[i]);
                    attrs[i].attr.mode = MODES[i];
                    attrs[i].__bindgen_anon_1.show = Some($show);
                    i += 1;
                }
                attrs
            }));

            /// `ATTRS` as the NULL-terminated list of `struct attribute *` a group takes.
            static ATTR_PTRS: CStatic<[*mut bindings::attribute; N + 1]> = CStatic(UnsafeCell::new({
                let mut ptrs = [::core::ptr::null_mut(); N + 1];
                let mut i = 0;
                while i < N {
                    // SAFETY: `i < N`, so this is the address of the `attr` of an element of
                    // `ATTRS`; no reference is created.
                    ptrs[i] = unsafe { &raw mut (*ATTRS.0.get())[i].attr };
                    i += 1;
                }
                ptrs
            }));

            CStatic(UnsafeCell::new({
                // SAFETY: all-zero is a valid `attribute_group`: no name (the files go in the
                // directory of the kobject or device itself), no visibility or binary-attribute
                // callbacks.
                let mut group: bindings::attribute_group = unsafe { ::core::mem::zeroed() };
                group.__bindgen_anon_2.attrs = ATTR_PTRS.0.get().cast();
                group
            }))
        };
    };
}
pub(crate) use static_attribute_group;

/// `/sys/kernel/<name>/` with one static group of `kobj_attribute`s on it, while alive: a
/// module's counters, one value per file. The group's `show` (see [`show_counter`]) finds what
/// it shows through `shown`, a static of the module that points to the `T` this holds while the
/// files exist.
///
/// # Invariants
///
/// `kobj` is a kobject of `kobject_create_and_add` with `group` on it, and `shown` points to
/// `_value`, until `Drop`.
#[allow(dead_code)] // Not `unimem_eusrvmem`'s, whose files are device attributes.
pub(crate) struct KernelDir<T: 'static> {
    kobj: *mut kernel::bindings::kobject,
    group: &'static CStatic<kernel::bindings::attribute_group>,
    shown: &'static core::sync::atomic::AtomicPtr<T>,
    _value: kernel::sync::Arc<T>,
}

// SAFETY: the kobject may be released from any thread; `T` is only read through `Arc`.
unsafe impl<T: Send + Sync> Send for KernelDir<T> {}
// SAFETY: no `&self` method.
unsafe impl<T: Send + Sync> Sync for KernelDir<T> {}

#[allow(dead_code)] // Not `unimem_eusrvmem`'s.
impl<T: 'static> KernelDir<T> {
    /// Makes `/sys/kernel/<name>/` with `group`'s files, which show `value` through `shown`.
    pub(crate) fn new(
        name: &'static kernel::str::CStr,
        group: &'static CStatic<kernel::bindings::attribute_group>,
        shown: &'static core::sync::atomic::AtomicPtr<T>,
        value: kernel::sync::Arc<T>,
    ) -> kernel::error::Result<Self> {
        use core::sync::atomic::Ordering;
        use kernel::{bindings, prelude::*};
        // SAFETY: `kernel_kobj` is the live `/sys/kernel` kobject; the name is a C string.
        let kobj =
            unsafe { bindings::kobject_create_and_add(name.as_char_ptr(), bindings::kernel_kobj) };
        if kobj.is_null() {
            pr_err!(
                "cannot create /sys/kernel/{} (is the module loaded twice?)\n",
                name
            );
            return Err(ENOMEM);
        }
        shown.store(
            kernel::sync::Arc::as_ptr(&value).cast_mut(),
            Ordering::Release,
        );
        // SAFETY: `kobj` is live; the group and its attributes are statics of this module, which
        // outlive the files (removed in `Drop`, before the module's memory goes).
        let ret = unsafe { bindings::sysfs_create_group(kobj, group.0.get()) };
        if ret != 0 {
            shown.store(core::ptr::null_mut(), Ordering::Release);
            // SAFETY: ours, from `kobject_create_and_add`.
            unsafe { bindings::kobject_put(kobj) };
            return Err(Error::from_errno(ret));
        }
        Ok(Self {
            kobj,
            group,
            shown,
            _value: value,
        })
    }
}

impl<T: 'static> Drop for KernelDir<T> {
    fn drop(&mut self) {
        // SAFETY: created in `new` (type invariant); removal waits for running `show` calls.
        unsafe {
            kernel::bindings::sysfs_remove_group(self.kobj, self.group.0.get());
            kernel::bindings::kobject_put(self.kobj);
        }
        self.shown
            .store(core::ptr::null_mut(), core::sync::atomic::Ordering::Release);
    }
}

/// The body of a `kobj_attribute` `show` callback of a [`KernelDir`]: writes `value(shown,
/// attribute name)` and a newline into `buf`; `EIO` for a name `value` does not know.
///
/// # Safety
///
/// `attr` and `buf` are what sysfs passed to `show` for an attribute of the group of the
/// `KernelDir` that set `shown` (so `shown`, when not null, points to its live `T`).
#[allow(dead_code)] // Not `unimem_eusrvmem`'s.
pub(crate) unsafe fn show_counter<T>(
    shown: &core::sync::atomic::AtomicPtr<T>,
    attr: *mut kernel::bindings::kobj_attribute,
    buf: *mut kernel::ffi::c_char,
    value: impl FnOnce(&T, &[u8]) -> Option<u64>,
) -> isize {
    use core::fmt::Write;
    use kernel::prelude::*;
    // SAFETY: sysfs passes one of our attributes, whose name is a static C string.
    let name = unsafe { CStr::from_char_ptr((*attr).attr.name) }.to_bytes();
    // SAFETY: sysfs hands `show` a zeroed buffer of PAGE_SIZE bytes.
    let buf =
        unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), kernel::bindings::PAGE_SIZE) };
    let p = shown.load(core::sync::atomic::Ordering::Acquire);
    if p.is_null() {
        return ENODEV.to_errno() as isize;
    }
    // SAFETY: `shown` points to the `T` whose `Arc` the `KernelDir` holds; it removes the files
    // (waiting for running `show` calls) before it clears `shown` and drops that `Arc`.
    let shown = unsafe { &*p };
    let mut out = kernel::str::Formatter::new(buf);
    match value(shown, name) {
        Some(v) if writeln!(out, "{}", v).is_ok() => out.bytes_written() as isize,
        _ => EIO.to_errno() as isize,
    }
}

/// `/sys/kernel/<dir>/`, one file per name of `names` showing `T::value(name)`: defines the
/// module's `SHOWN`, its `show` callback, its `GROUP` and `fn $create(Arc<T>) ->
/// Result<KernelDir<T>>`. `value` is a method `fn(&T, &[u8]) -> Option<u64>` (`None`: EIO).
// Not every module that includes this file has counters of its own (eusrvmem).
#[allow(unused_macros)]
macro_rules! kernel_dir_counters {
    ($vis:vis fn $create:ident($ty:ty) = ($dir:expr, $names:expr, $value:path)) => {
        /// The state the files show, set while they exist.
        static SHOWN: core::sync::atomic::AtomicPtr<$ty> =
            core::sync::atomic::AtomicPtr::new(core::ptr::null_mut());

        /// # Safety
        ///
        /// Called by sysfs with one of our attributes and a PAGE_SIZE buffer.
        unsafe extern "C" fn show(
            _kobj: *mut kernel::bindings::kobject,
            attr: *mut kernel::bindings::kobj_attribute,
            buf: *mut kernel::ffi::c_char,
        ) -> isize {
            // SAFETY: as this function's contract; `SHOWN` is set by the `KernelDir` of `GROUP`.
            unsafe { $crate::sysfs_group::show_counter(&SHOWN, attr, buf, |s: &$ty, name| $value(s, name)) }
        }

        $crate::sysfs_group::static_attribute_group! {
            /// One file per name, read by `show`.
            static GROUP: kernel::bindings::kobj_attribute = ($names, show);
        }

        /// The directory while the returned value lives.
        $vis fn $create(
            value: kernel::sync::Arc<$ty>,
        ) -> kernel::error::Result<$crate::sysfs_group::KernelDir<$ty>> {
            $crate::sysfs_group::KernelDir::new($dir, &GROUP, &SHOWN, value)
        }
    };
}
#[allow(unused_imports)]
pub(crate) use kernel_dir_counters;
