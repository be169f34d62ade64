// SPDX-License-Identifier: GPL-2.0
//! The shared layer of a module that only sends and takes kernel messages through the mailbox
//! seam (`unimem_mbox_echo`): the wire formats and the mailbox seam's declarations
//! (`kmsg_api`), without the fabric seam.
//!
//! The crate root pulls it in with
//! `#[path = "../common/kmsg_client.rs"] mod common; use common::*;`, which puts `wire`,
//! `kmsg_api` and the wire formats' modules (`gas`, `mailbox`, ..., which name each other
//! `crate::gas`, ...) at the root. The includer provides nothing.

#[path = "wire.rs"]
pub(crate) mod wire;
pub(crate) use wire::*;

#[path = "unimem_mailbox.rs"]
pub(crate) mod kmsg_api;
