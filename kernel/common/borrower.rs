// SPDX-License-Identifier: GPL-2.0
//! The shared layer of a borrower of lent memory (`unimem_kram`, `unimem_numa`, `unimem_gsas`):
//! everything of `client.rs`, the KRAM lease protocol of a borrower (`kram_client`) and the
//! lease engine's ticker (`lease_ticker`). A borrower that holds one contiguous range per
//! lender adds `kram_borrow.rs` at its crate root.
//!
//! The crate root pulls it in with
//! `#[path = "../common/borrower.rs"] mod common; use common::*;`, which puts the modules below
//! and those of `client.rs` at the root. The includer provides nothing.

#[path = "client.rs"]
mod client;
pub(crate) use client::*;

#[path = "kram_client.rs"]
pub(crate) mod kram_client;
#[path = "lease_ticker.rs"]
pub(crate) mod lease_ticker;
