// SPDX-License-Identifier: GPL-2.0
//! The `unimem-wire` formats for kernel modules: one definition shared with user space
//! (`wire/src`).
//!
//! Declared by the role files (`exporter.rs`, `kmsg_client.rs`, `client.rs`), which also bring
//! `gas`, `kram`, `mailbox` and `packet` to the crate root, because the wire files name each
//! other `crate::gas`, `crate::packet`, `crate::mailbox`.
//!
//! Every module uses only part of the formats, and their items are `pub` for user space.
#![allow(dead_code, unreachable_pub)]

#[path = "../../wire/src/eusrvmem.rs"]
pub(crate) mod eusrvmem;
#[path = "../../wire/src/gas.rs"]
pub(crate) mod gas;
#[path = "../../wire/src/kram.rs"]
pub(crate) mod kram;
#[path = "../../wire/src/mailbox.rs"]
pub(crate) mod mailbox;
#[path = "../../wire/src/packet.rs"]
pub(crate) mod packet;
