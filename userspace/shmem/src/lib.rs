//! OpenSHMEM 1.4 over GSAS: seed 001's Gmem for unimem. See `docs/SHMEM.md`.
//!
//! A PE is a process started by `oshrun` (through remoteFork, in the launcher's protection
//! tree). `shmem_init` finds the job descriptor `oshrun` made ([`job`]), maps GSAS pages of
//! its own node over the program's `.data`/`.bss` and for its symmetric heap ([`window`]),
//! publishes their GSAS addresses and reads every other PE's. Puts and gets to other nodes
//! go through the atomic service of the target's node; to PEs of the same node they are
//! plain copies between mappings; atomics always go through the service ([`amo`]).
//!
//! The C library is [`capi`] with `include/shmem.h`, whose typed families are C macros over
//! a few `unimem_shmem_*` entry points.

pub mod amo;
pub mod capi;
pub mod capi_p2p;
pub mod capi_team;
pub mod coll;
pub mod far;
pub mod heap;
pub mod job;
pub mod pe;
pub mod reduce;
pub mod remote;
pub mod ring;
pub mod rma;
pub mod signal;
#[cfg(test)]
mod solo;
pub mod team;
pub mod team_coll;
pub mod team_ctx;
pub mod wait;
pub mod window;
