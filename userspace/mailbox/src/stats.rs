//! The driver's debugfs statistics. The text format belongs to the kernel module and may
//! change, so it is returned as text and never parsed here.

use std::io;

/// debugfs file with one line per allocated interface (sent, received, rejected, dropped) and
/// totals.
pub const STATS_PATH: &str = "/sys/kernel/debug/unimem_mailbox/stats";

/// The statistics text (needs root and a mounted debugfs).
pub fn read() -> io::Result<String> {
    std::fs::read_to_string(STATS_PATH)
}
