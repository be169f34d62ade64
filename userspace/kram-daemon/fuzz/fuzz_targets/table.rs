//! Arbitrary (sender, word, elapsed time) sequences against the chunk table (v1 and v2 words,
//! RENEWs, leases expiring, grace periods, v1-only daemons): after every message the table's
//! invariants hold (ranges disjoint and inside the table, one grant per (node, instance),
//! totals and counters add up), REVOKEd and dropped messages change nothing, every reply goes
//! to the sender in the layout of the message it answers, every OFFER names a range reserved
//! for its addressee and every ACK a range lent to it.
//! Input layout: see `kram_daemon::sim::run_bytes`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = kram_daemon::sim::run_bytes(data) {
        panic!("{e}");
    }
});
