//! The C ABI over the fakes of the client's tests: descriptors, errors, options.

use std::ffi::{c_void, CStr};
use std::ptr::null_mut;

use unimem_wire::fam::{self, Reply, Request, Response};
use unimem_wire::gsas::addr;

use super::desc::*;
use super::errors::*;
use super::init::*;
use super::item::*;
use super::types::{status, FamStat, GlobalDescriptor};
use crate::client::tests::fakes::{client, item_desc_reply, FakeFamd, Gas};

const EXT: [fam::Extent; 1] = [fam::Extent {
    node: 1,
    addr: addr(1, 0x10000),
    len: 4096,
}];

/// An initialised instance over a famd that knows item 9 of region 1, "x" in "r".
unsafe fn instance() -> *mut c_void {
    let gas = Gas::new(1);
    CONNECT.with(|c| {
        *c.borrow_mut() = Some(Box::new(move |_| {
            Ok(client(
                &gas,
                FakeFamd::new(|op, req| match req {
                    Request::Lookup { item: "x", .. } | Request::StatItem { item: 9 } => {
                        Some(item_desc_reply(op, 9, 100, &EXT))
                    }
                    Request::Deallocate { item: 9 } => Some(Response::ok(op, Reply::Done)),
                    Request::StatItem { .. } | Request::Lookup { .. } => {
                        Some(Response::err(op, 8, "no such item"))
                    }
                    _ => None,
                }),
            ))
        }));
    });
    let f = c_fam_create();
    assert_eq!(unsafe { c_fam_initialize(f, c"g".as_ptr(), null_mut()) }, 0);
    f
}

#[test]
fn descriptors_count_and_invalidate() {
    unsafe {
        let f = instance();
        let d = c_fam_lookup(f, c"x".as_ptr(), c"r".as_ptr());
        assert!(!d.is_null());
        assert_eq!(unimem_fam_desc_get(d, attr::SIZE), 100);
        assert_eq!(unimem_fam_desc_get(d, attr::STATUS), status::DESC_INIT_DONE);
        assert_eq!(
            CStr::from_ptr(unimem_fam_desc_name(d)).to_str().unwrap(),
            "x"
        );
        assert_eq!(
            unimem_fam_desc_global(d),
            GlobalDescriptor {
                region_id: 1,
                offset: 9
            }
        );
        // A second reference (a C++ copy); data moves through it.
        unimem_fam_desc_retain(d);
        let mut v = [1u8, 2, 3, 4];
        assert_eq!(
            super::data::c_fam_put_blocking(f, v.as_mut_ptr().cast(), d, 8, 4),
            0
        );
        let mut back = [0u8; 4];
        assert_eq!(
            super::data::c_fam_get_blocking(f, back.as_mut_ptr().cast(), d, 8, 4),
            0
        );
        assert_eq!(back, v);
        assert_eq!(
            super::data::c_fam_get_blocking(f, back.as_mut_ptr().cast(), d, 98, 4),
            -13
        );
        assert_eq!(c_fam_error(), 13);
        assert_eq!(c_fam_deallocate(f, d), 0);
        assert_eq!(unimem_fam_desc_get(d, attr::STATUS), status::DESC_INVALID);
        assert_eq!(
            super::data::c_fam_get_blocking(f, back.as_mut_ptr().cast(), d, 0, 4),
            -8,
            "a deallocated item's descriptor names nothing: NOTFOUND"
        );
        let msg = CStr::from_ptr(c_fam_error_msg()).to_str().unwrap();
        assert!(msg.contains("deallocated"), "{msg}");
        unimem_fam_desc_release(d);
        unimem_fam_desc_release(d);
        c_fam_delete(f);
    }
}

#[test]
fn global_descriptors_validate_lazily() {
    unsafe {
        let f = instance();
        let mut d = null_mut();
        let g = GlobalDescriptor {
            region_id: 1,
            offset: 9,
        };
        assert_eq!(unimem_fam_desc_new(KIND_ITEM, &g, 0, &mut d), 0);
        assert_eq!(
            unimem_fam_desc_get(d, attr::STATUS),
            status::DESC_UNINITIALIZED
        );
        let mut st: FamStat = std::mem::zeroed();
        assert_eq!(c_fam_stat_data(f, d, &mut st), 0);
        assert_eq!((st.size, st.perm, st.num_memservers), (100, 0o640, 1));
        assert_eq!(CStr::from_ptr(st.name).to_str().unwrap(), "x");
        assert_eq!(unimem_fam_desc_get(d, attr::STATUS), status::DESC_INIT_DONE);
        // Another item: famd's error, code and message, come through.
        let mut other = null_mut();
        let g = GlobalDescriptor {
            region_id: 1,
            offset: 77,
        };
        assert_eq!(unimem_fam_desc_new(KIND_ITEM, &g, 0, &mut other), 0);
        assert_eq!(c_fam_stat_data(f, other, &mut st), -8);
        assert!(CStr::from_ptr(c_fam_error_msg())
            .to_str()
            .unwrap()
            .contains("no such item"));
        // Unbound: refused without asking famd.
        let mut unbound = null_mut();
        assert_eq!(
            unimem_fam_desc_new(KIND_ITEM, std::ptr::null(), 0, &mut unbound),
            0
        );
        assert_eq!(c_fam_stat_data(f, unbound, &mut st), -4);
        // Accessors: set, read-only, other kind's, arrays.
        unimem_fam_desc_set(unbound, attr::SIZE, 64);
        unimem_fam_desc_set(unbound, attr::KIND, 1);
        unimem_fam_desc_set(unbound, attr::MEMORY_TYPE, 1);
        assert_eq!(unimem_fam_desc_get(unbound, attr::SIZE), 64);
        assert_eq!(unimem_fam_desc_get(unbound, attr::KIND), 0);
        assert_eq!(unimem_fam_desc_get(unbound, attr::MEMORY_TYPE), 0);
        let keys = [5u64, 6];
        unimem_fam_desc_set_array(unbound, 0, keys.as_ptr(), 2);
        let mut n = 0;
        let p = unimem_fam_desc_array(unbound, 0, &mut n);
        assert_eq!(std::slice::from_raw_parts(p, n as usize), keys);
        assert_eq!(unimem_fam_desc_get(null_mut(), attr::SIZE), 0);
        for x in [d, other, unbound] {
            unimem_fam_desc_release(x);
        }
        c_fam_delete(f);
    }
}

#[test]
fn handles_options_and_errors() {
    unsafe {
        // Not initialised, NULL handles: errors, not crashes.
        let f = c_fam_create();
        assert_eq!(c_fam_quiet(f), -18);
        assert_eq!(c_fam_quiet(null_mut()), -15);
        assert!(c_fam_lookup(f, c"x".as_ptr(), c"r".as_ptr()).is_null());
        assert_eq!(c_fam_error(), 18);
        c_fam_delete(f);

        let f = instance();
        let v = c_fam_get_option(f, c"PE_COUNT".as_ptr());
        assert_eq!(*(v as *const i32), 1);
        libc::free(v);
        let v = c_fam_get_option(f, c"VERSION".as_ptr());
        assert_eq!(CStr::from_ptr(v.cast()).to_str().unwrap(), "3.2.0");
        libc::free(v);
        assert!(c_fam_get_option(f, c"NOPE".as_ptr()).is_null());
        assert_eq!(c_fam_error(), 4);
        let l = c_fam_list_options(f);
        let mut names = Vec::new();
        let mut i = 0;
        while !(*l.add(i)).is_null() {
            names.push(CStr::from_ptr(*l.add(i)).to_str().unwrap().to_string());
            i += 1;
        }
        libc::free(l.cast());
        assert_eq!(names, crate::client::options::NAMES);
        // A context serves data calls; it cannot initialise or open contexts.
        let ctx = c_fam_context_open(f);
        assert!(!ctx.is_null());
        assert_eq!(c_fam_quiet(ctx), 0);
        assert_eq!(c_fam_initialize(ctx, c"g".as_ptr(), null_mut()), -2);
        assert!(c_fam_context_open(ctx).is_null());
        assert_eq!(c_fam_context_close(f, ctx), 0);
        assert_eq!(c_fam_quiet(ctx), -18);
        let mut n = 7;
        assert_eq!(c_fam_progress(f, &mut n), 0);
        assert_eq!(n, 0);
        assert_eq!(
            super::atomic::c_fam_compare_swap_int128(f, null_mut(), 0, 1, 2, null_mut()),
            -15
        );
        c_fam_delete(ctx);
        c_fam_delete(f);
    }
}

#[test]
fn layouts_match_fam_types_h() {
    assert_eq!(std::mem::size_of::<FamStat>(), 2120);
    assert_eq!(std::mem::offset_of!(FamStat, name), 16);
    assert_eq!(std::mem::offset_of!(FamStat, memory_servers), 72);
    assert_eq!(std::mem::size_of::<super::types::FamOptions>(), 112);
}

#[test]
fn queued_operations_through_the_c_abi() {
    use super::data::{c_fam_aggregate_flush, c_fam_get_blocking, c_fam_queue_operation};
    unsafe {
        let f = instance();
        let d = c_fam_lookup(f, c"x".as_ptr(), c"r".as_ptr());
        assert!(!d.is_null());
        let mut ix = [1u64, 3, 1];
        let mut add = [5u64, 7, 2];
        let p = add.as_mut_ptr().cast();
        assert_eq!(c_fam_queue_operation(f, 0, p, d, 3, ix.as_mut_ptr(), 8), 0);
        let mut got = [0u64; 2];
        let mut gix = [1u64, 3];
        let g = got.as_mut_ptr().cast();
        assert_eq!(c_fam_queue_operation(f, 2, g, d, 2, gix.as_mut_ptr(), 8), 0);
        assert_eq!(c_fam_aggregate_flush(f, d), 0);
        assert_eq!(got, [7, 7]);
        let mut raw = [0u8; 8];
        assert_eq!(c_fam_get_blocking(f, raw.as_mut_ptr().cast(), d, 24, 8), 0);
        assert_eq!(u64::from_ne_bytes(raw), 7);
        // Bad op, bad size, index past the 100-byte item, NULL index: errors at once.
        let minus = |code: i32| -code;
        assert_eq!(
            c_fam_queue_operation(f, 3, p, d, 1, ix.as_mut_ptr(), 8),
            minus(crate::code::INVALID)
        );
        assert_eq!(
            c_fam_queue_operation(f, 1, p, d, 1, ix.as_mut_ptr(), 2),
            minus(crate::code::INVALID)
        );
        let mut far = [12u64];
        assert_eq!(
            c_fam_queue_operation(f, 1, p, d, 1, far.as_mut_ptr(), 8),
            minus(crate::code::OUTOFRANGE)
        );
        assert_eq!(
            c_fam_queue_operation(f, 1, p, d, 1, null_mut(), 8),
            minus(crate::code::NULLPTR)
        );
        assert_eq!(c_fam_aggregate_flush(f, d), 0, "nothing was queued");
        unimem_fam_desc_release(d);
        c_fam_delete(f);
    }
}
