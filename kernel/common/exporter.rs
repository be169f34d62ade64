// SPDX-License-Identifier: GPL-2.0
//! The shared layer of the fabric seam's exporter, `unimem_eusrvmem`: the wire formats and the
//! seam's declarations (`fabric_api`), whose functions the exporter's `seam.rs` defines. Not
//! the client side (`client.rs`), which only the modules calling the seam need.
//!
//! The crate root pulls it in with
//! `#[path = "../common/exporter.rs"] mod common; use common::*;`, which puts `wire`,
//! `fabric_api` and the wire formats' modules (`gas`, `mailbox`, ..., which name each other
//! `crate::gas`, ...) at the root. The includer provides nothing.

#[path = "wire.rs"]
pub(crate) mod wire;
pub(crate) use wire::*;

#[path = "unimem_fabric.rs"]
pub(crate) mod fabric_api;
