// SPDX-License-Identifier: GPL-2.0
//! The shared layer of a module on top of the fabric: the wire formats, the fabric seam's
//! declarations (`fabric_api`) with the client's safe view of the window (`fabric_client`),
//! and the mailbox seam's declarations (`kmsg_api`). `unimem_mailbox` includes it (it calls
//! the fabric seam and exports the mailbox seam, whose functions its `seam.rs` defines), and
//! `borrower.rs` builds on it for the modules that borrow memory.
//!
//! The crate root pulls it in with
//! `#[path = "../common/client.rs"] mod common; use common::*;`, which puts the modules below
//! and the wire formats' modules (`gas`, `mailbox`, ..., which name each other `crate::gas`,
//! ...) at the root, where `fabric_client` finds `crate::fabric_api` and `crate::wire`. The
//! includer provides nothing.

#[path = "wire.rs"]
pub(crate) mod wire;
pub(crate) use wire::*;

#[path = "unimem_fabric.rs"]
pub(crate) mod fabric_api;
#[path = "fabric_client.rs"]
pub(crate) mod fabric_client;
#[path = "unimem_mailbox.rs"]
pub(crate) mod kmsg_api;
