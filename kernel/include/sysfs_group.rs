// SPDX-License-Identifier: GPL-2.0
//! A sysfs `attribute_group` of read-only attributes, built by the compiler in `static`s, for
//! the modules whose sysfs files are a fixed list (`unimem_eusrvmem`'s device attributes,
//! `unimem_gsas`'s counters): the 7.3 Rust crate has no sysfs attribute abstraction. Static
//! attributes also have static lockdep keys, so no `sysfs_attr_init` is needed.
//!
//! Included with `#[path]` as `sysfs_group` at the crate root: the macro names
//! `crate::sysfs_group`.

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
