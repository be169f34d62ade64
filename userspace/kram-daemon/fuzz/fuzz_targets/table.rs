//! Arbitrary (sender, word, elapsed time) sequences against the chunk table: after every
//! message the table's invariants hold (no chunk both free and lent, every grant contiguous
//! and consistent, one grant per (node, instance), totals and counters add up), dropped
//! messages change nothing, and every OFFER names a range reserved for its addressee.
//! Input layout: see `kram_daemon::sim::run_bytes`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = kram_daemon::sim::run_bytes(data) {
        panic!("{e}");
    }
});
