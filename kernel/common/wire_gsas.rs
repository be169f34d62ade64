// SPDX-License-Identifier: GPL-2.0
//! The GSAS wire formats (`unimem-wire` `gsas`, `trees` and `versions`, and `lease_record`, whose offset bounds the GSAS
//! interface areas) for the modules that need them: the mailbox and the GSAS service.
//!
//! Kept apart from `wire.rs` because `gsas.rs` names `crate::lease_record`, which names
//! `crate::kram` (`unimem_kram` has a `kram` module of its own): a module that needs them pulls
//! it in next to its role file with
//! `#[path = "../common/wire_gsas.rs"] mod wire_gsas; use wire_gsas::*;`, which brings `gsas`,
//! `lease_record` and `trees` to the crate root, where the role file has put `kram`.
//!
//! Every module uses only part of the formats, and their items are `pub` for user space.
#![allow(dead_code, unreachable_pub)]

#[path = "../../wire/src/gsas.rs"]
pub(crate) mod gsas;
#[path = "../../wire/src/lease_record.rs"]
pub(crate) mod lease_record;
#[path = "../../wire/src/trees.rs"]
pub(crate) mod trees;
#[path = "../../wire/src/versions.rs"]
pub(crate) mod versions;
