// SPDX-License-Identifier: GPL-2.0
//! The `unimem-wire` formats for kernel modules: one definition shared with user space.
//!
//! A module includes this file at its crate root (`#[path = "../include/wire.rs"] mod wire;`)
//! and brings `gas`, `mailbox` and `packet` to its root with `use wire::{...}`, because the
//! wire files name each other `crate::gas`, `crate::packet`, `crate::mailbox`.

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
