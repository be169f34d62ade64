//! `kram-daemon`: the lender side of KRAM remote swap (seed 000 §2.5.5-2.5.8, §3).
//!
//! The protocol logic is in [`table`] (pure, no I/O, unit-tested and fuzzed through [`sim`]);
//! [`status`] renders what `kram-daemon --status` prints, [`state`] the file that survives
//! a daemon restart, [`lease`] the lease record in this node's partition, which survives
//! a reboot of the node, and [`heartbeat`] which borrowers are frozen (the lease rule). The
//! binary is `kram-daemon` (mailbox event loop); `kram-probe`, which plays the `unimem_kram`
//! driver from user space for the tests, is a test rig in tests/rigs.

pub mod heartbeat;
pub mod lease;
pub mod sim;
pub mod state;
pub mod status;
pub mod table;

#[cfg(test)]
mod tests;
