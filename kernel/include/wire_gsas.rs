// SPDX-License-Identifier: GPL-2.0
//! The GSAS wire formats (`unimem-wire` `gsas` and `trees`, and `lease_record`, whose offset bounds the GSAS
//! interface areas) for the modules that need them: the mailbox and the GSAS service.
//!
//! Kept apart from `wire.rs` because `gsas.rs` names `crate::lease_record`, which names
//! `crate::kram`: a module includes this file next to `wire.rs` and brings `gsas`,
//! `lease_record` and `wire::kram` to its root.

#[path = "../../wire/src/gsas.rs"]
pub(crate) mod gsas;
#[path = "../../wire/src/lease_record.rs"]
pub(crate) mod lease_record;
#[path = "../../wire/src/trees.rs"]
pub(crate) mod trees;
