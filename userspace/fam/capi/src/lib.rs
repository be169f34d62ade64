//! libunimem_fam.so: the C ABI of `include/ABI.md`, defined in the `fam` crate's `capi`
//! module. Linking that crate is what exports its `#[no_mangle]` functions; the re-export
//! keeps the dependency used.

pub use fam::capi;
