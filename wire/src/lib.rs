//! Wire formats shared by unimem's kernel modules and user-space daemons.
//!
//! This crate is `no_std` and dependency-free so that the kernel modules can include the very
//! same source files through `#[path]` (out-of-tree Rust modules cannot link ordinary crates).
//! Every format has one definition here, with round-trip and malformed-input tests.
#![no_std]

pub mod eusrvmem;
pub mod fam;
pub mod gas;
pub mod gsas;
pub mod kram;
pub mod lease_record;
pub mod mailbox;
pub mod packet;
pub mod trees;
pub mod versions;
