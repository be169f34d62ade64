//! The calling thread's last failure (`c_fam_error`, `c_fam_error_msg`) and the guards that
//! run every C function: a `Result` becomes 0 or minus its `Fam_Error` code (or NULL for
//! pointer results), the failure is recorded, and a panic is caught and becomes
//! `FAM_ERR_UNKNOWN` (unwinding into C is undefined behaviour).

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::{code, FamError, Result};

thread_local! {
    static LAST: RefCell<(c_int, CString)> = RefCell::new((0, CString::default()));
}

/// Records `e` as this thread's last failure of function `what`; minus its code.
pub fn record(what: &str, e: &FamError) -> c_int {
    let mut c = e.code();
    if !(1..=31).contains(&c) {
        c = code::UNKNOWN;
    }
    let msg = format!("{what}: {e}").replace('\0', " ");
    log::debug!("fam: {msg}");
    let msg = CString::new(msg).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = (c, msg));
    -c
}

fn panicked(what: &str) -> FamError {
    FamError::Unknown(format!("{what}: internal error (a panic in libunimem_fam)"))
}

/// Runs `f` for an `int`-returning function.
pub fn call(what: &str, f: impl FnOnce() -> Result<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => record(what, &e),
        Err(_) => record(what, &panicked(what)),
    }
}

/// Runs `f` for a pointer-returning function: NULL on failure, and only then.
pub fn call_ptr<T>(what: &str, f: impl FnOnce() -> Result<*mut T>) -> *mut T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(p)) if !p.is_null() => p,
        Ok(Ok(_)) => {
            record(what, &FamError::Unknown(format!("{what}: no result")));
            std::ptr::null_mut()
        }
        Ok(Err(e)) => {
            record(what, &e);
            std::ptr::null_mut()
        }
        Err(_) => {
            record(what, &panicked(what));
            std::ptr::null_mut()
        }
    }
}

/// Runs `f` for a function that cannot fail (descriptor accessors): `default` on a panic.
pub fn quiet<T>(default: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(default)
}

/// `Fam_Error` code of the calling thread's last failed call; 0 if none.
#[no_mangle]
pub extern "C" fn c_fam_error() -> c_int {
    quiet(code::UNKNOWN, || LAST.with(|l| l.borrow().0))
}

/// Its message; never NULL, valid until this thread's next failure.
#[no_mangle]
pub extern "C" fn c_fam_error_msg() -> *const c_char {
    static EMPTY: &[u8] = b"\0";
    quiet(EMPTY.as_ptr().cast(), || {
        LAST.with(|l| l.borrow().1.as_ptr())
    })
}
