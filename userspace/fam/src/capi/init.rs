//! Instances, contexts, options, ordering and the barrier.

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use super::errors::{call, call_ptr};
use super::handles::{handle, Handle};
use super::types::FamOptions;
use super::{malloc_copy, opt_str, out, str_arg};
use crate::client::options::NAMES;
use crate::client::{Client, OptionValue, Options};
use crate::{FamError, Result};

/// Makes a client from options (tests: over a fake famd and GSAS).
#[cfg(test)]
pub type Connector = Box<dyn Fn(Options) -> Result<Client>>;

#[cfg(test)]
thread_local! {
    /// Tests: how c_fam_initialize makes its client on this thread.
    pub static CONNECT: std::cell::RefCell<Option<Connector>> = std::cell::RefCell::new(None);
}

fn connect(o: Options) -> Result<Client> {
    #[cfg(test)]
    if let Some(r) = CONNECT.with(|c| c.borrow().as_ref().map(|f| f(o.clone()))) {
        return r;
    }
    Client::connect(o)
}

unsafe fn options(p: *const FamOptions) -> Options {
    // SAFETY: NULL or a Fam_Options (contract).
    let Some(o) = (unsafe { p.as_ref() }) else {
        return Options::default();
    };
    // SAFETY: each member NULL or a string (contract).
    unsafe {
        Options {
            default_region_name: opt_str(o.default_region_name),
            cis_server: opt_str(o.cis_server),
            grpc_port: opt_str(o.grpc_port),
            libfabric_provider: opt_str(o.libfabric_provider),
            fam_thread_model: opt_str(o.fam_thread_model),
            cis_interface_type: opt_str(o.cis_interface_type),
            openfam_model: opt_str(o.openfam_model),
            fam_context_model: opt_str(o.fam_context_model),
            num_consumer: opt_str(o.num_consumer),
            runtime: opt_str(o.runtime),
            fam_default_memory_type: opt_str(o.fam_default_memory_type),
            if_device: opt_str(o.if_device),
            local_buf_addr: o.local_buf_addr as usize,
            local_buf_size: o.local_buf_size,
        }
    }
}

#[no_mangle]
pub extern "C" fn c_fam_create() -> *mut c_void {
    call_ptr("fam_create", || {
        Ok(Box::into_raw(Box::new(Handle::instance())) as *mut c_void)
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_delete(fam_obj: *mut c_void) {
    if fam_obj.is_null() {
        return;
    }
    call("fam_delete", || {
        // SAFETY: a handle (contract).
        let h = unsafe { handle(fam_obj) }?;
        if h.is_context() {
            h.close();
        } else {
            h.shared
                .client
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .take();
        }
        h.forget();
        // SAFETY: the Box c_fam_create / c_fam_context_open made; not used after this.
        drop(unsafe { Box::from_raw(fam_obj as *mut Handle) });
        Ok(())
    });
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_initialize(
    fam_obj: *mut c_void,
    group_name: *const c_char,
    fam_opts: *mut FamOptions,
) -> c_int {
    call("fam_initialize", || {
        // SAFETY: contract.
        let h = unsafe { handle(fam_obj) }?;
        h.instance_only("fam_initialize")?;
        // The group is the oshrun job (or this process alone): the name only has to be given.
        // SAFETY: contract.
        unsafe { str_arg(group_name, "group name") }?;
        // SAFETY: contract.
        let o = unsafe { options(fam_opts) };
        let mut slot = h.shared.client.write().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            return Err(FamError::InvalidOp("already initialised".into()));
        }
        *slot = Some(Arc::new(connect(o)?));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_finalize(fam_obj: *mut c_void, _group_name: *const c_char) -> c_int {
    call("fam_finalize", || {
        // SAFETY: contract.
        let h = unsafe { handle(fam_obj) }?;
        h.instance_only("fam_finalize")?;
        let mut maps = h.shared.maps.lock().unwrap_or_else(|p| p.into_inner());
        for (_, m) in maps.drain() {
            let _ = crate::client::map::unmap(&m);
        }
        // Finalising an instance that is not initialised (after a failed fam_initialize, or
        // twice) does nothing: OpenFAM's fam_initialize_reg_test calls fam_finalize after an
        // initialize that must fail, and expects no exception.
        h.shared
            .client
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_abort(fam_obj: *mut c_void, status: c_int) -> c_int {
    call("fam_abort", || {
        // SAFETY: contract.
        let c = unsafe { handle(fam_obj) }?.client()?;
        // Under oshrun the job ends on every PE, and oshrun exits with `status`.
        let pe = *c.pe();
        let _ = c.with_memory(|m| {
            crate::client::pe::abort(m, &pe, status);
            Ok(())
        });
        std::process::exit(status)
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_list_options(fam_obj: *mut c_void) -> *mut *const c_char {
    call_ptr("fam_list_options", || {
        // SAFETY: contract.
        unsafe { handle(fam_obj) }?;
        // One block: the NULL-terminated pointer array, then the strings.
        let ptrs = (NAMES.len() + 1) * std::mem::size_of::<*const c_char>();
        let mut block = vec![0u8; ptrs];
        let mut offsets = Vec::new();
        for n in NAMES {
            offsets.push(block.len());
            block.extend_from_slice(n.as_bytes());
            block.push(0);
        }
        let p = malloc_copy(&block)? as *mut u8;
        let arr = p as *mut *const c_char;
        for (i, off) in offsets.iter().enumerate() {
            // SAFETY: inside the block: the array has NAMES.len() + 1 slots, the strings follow.
            unsafe { arr.add(i).write_unaligned(p.add(*off) as *const c_char) };
        }
        // SAFETY: the last slot of the array.
        unsafe { arr.add(NAMES.len()).write_unaligned(std::ptr::null()) };
        Ok(arr)
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_get_option(
    fam_obj: *mut c_void,
    option_name: *const c_char,
) -> *mut c_void {
    call_ptr("fam_get_option", || {
        // SAFETY: contract.
        let c = unsafe { handle(fam_obj) }?.client()?;
        // SAFETY: contract.
        let name = unsafe { str_arg(option_name, "option name") }?;
        match c.option(name)? {
            OptionValue::Int(v) => malloc_copy(&v.to_ne_bytes()),
            OptionValue::U64(v) => malloc_copy(&v.to_ne_bytes()),
            OptionValue::Str(s) => {
                let mut b = s.into_bytes();
                b.push(0);
                malloc_copy(&b)
            }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_reset_profile(fam_obj: *mut c_void) -> c_int {
    call("fam_reset_profile", || {
        // SAFETY: contract.
        unsafe { handle(fam_obj) }.map(drop)
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_context_open(fam_obj: *mut c_void) -> *mut c_void {
    call_ptr("fam_context_open", || {
        // SAFETY: contract.
        let h = unsafe { handle(fam_obj) }?;
        h.instance_only("fam_context_open")?;
        h.client()?;
        Ok(Box::into_raw(Box::new(Handle::context(h.shared.clone()))) as *mut c_void)
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_context_close(fam_obj: *mut c_void, ctx: *mut c_void) -> c_int {
    call("fam_context_close", || {
        // SAFETY: contract.
        let h = unsafe { handle(fam_obj) }?;
        h.instance_only("fam_context_close")?;
        // SAFETY: contract.
        let c = unsafe { handle(ctx) }?;
        if !c.is_context() || !Arc::ptr_eq(&c.shared, &h.shared) {
            return Err(FamError::Invalid("not a context of this instance".into()));
        }
        // Its operations are all complete (see the module's documentation): quiet is done.
        c.close();
        Ok(())
    })
}

/// The handle's client, for calls that only need it to be usable.
unsafe fn usable(fam_obj: *mut c_void) -> Result<Arc<Client>> {
    // SAFETY: contract.
    unsafe { handle(fam_obj) }?.client()
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_fence(fam_obj: *mut c_void) -> c_int {
    // SAFETY: contract.
    call("fam_fence", || unsafe { usable(fam_obj) }.map(drop))
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_quiet(fam_obj: *mut c_void) -> c_int {
    call("fam_quiet", || {
        // SAFETY: contract.
        let h = unsafe { handle(fam_obj) }?;
        h.client()?;
        // Every operation completed in its call; what is left is a failure to report.
        match h.take_deferred() {
            Some((what, e)) => {
                log::debug!("fam: fam_quiet reports {what}'s failure: {e}");
                Err(e)
            }
            None => Ok(()),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_progress(fam_obj: *mut c_void, value: *mut u64) -> c_int {
    call("fam_progress", || {
        // SAFETY: contract.
        unsafe { usable(fam_obj) }?;
        // SAFETY: contract.
        *unsafe { out(value, "value") }? = 0;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_barrier_all(fam_obj: *mut c_void) -> c_int {
    call("fam_barrier_all", || {
        // SAFETY: contract.
        unsafe { usable(fam_obj) }?.barrier_all()
    })
}
