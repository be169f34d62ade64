//! The text `kram-daemon --status` prints (the daemon renders it for each client of its
//! status socket):
//!
//! ```text
//! kram-daemon node 1 pid 212 up 42s: 64 chunks of 1 MiB from partition offset 0x300000, offers expire after 10s
//! free 16, offered 16, lent 32
//! chunks 0-31 lent to node 0 instance 0
//! chunks 32-47 offered to node 2 instance 1 (expires in 8.5s)
//! chunks 48-63 free
//! counters: received 5, requests 2, offers 2, ...
//! ```
//! Line 2 always starts with `free N, offered N, lent N`; one line per run of chunks follows
//! (free chunks merged, one run per grant), then the counters as `name value` pairs.

use crate::table::{role, RunState, Table};
use std::fmt::Write;
use std::time::{Duration, Instant};
use unimem_wire::kram::LENDABLE_OFFSET;

/// Renders the status of `table` at `now`.
pub fn render(table: &Table, now: Instant, pid: u32, uptime: Duration) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "kram-daemon node {} pid {pid} up {}s: {} chunks of 1 MiB from partition offset {LENDABLE_OFFSET:#x}, offers expire after {}s",
        table.node(),
        uptime.as_secs(),
        table.len(),
        table.offer_timeout().as_secs_f64()
    );
    let t = table.totals();
    let _ = writeln!(s, "free {}, offered {}, lent {}", t.free, t.offered, t.lent);
    for r in table.runs() {
        let _ = write!(s, "chunks {}-{} ", r.first, r.last);
        let _ = match r.state {
            RunState::Free => writeln!(s, "free"),
            RunState::Offered { grant, deadline } => writeln!(
                s,
                "offered to node {} instance {}{} (expires in {:.1}s)",
                grant.node,
                grant.instance,
                role(grant.instance),
                deadline.saturating_duration_since(now).as_secs_f64()
            ),
            RunState::Lent { grant } => {
                writeln!(
                    s,
                    "lent to node {} instance {}{}",
                    grant.node,
                    grant.instance,
                    role(grant.instance)
                )
            }
        };
    }
    let counters: Vec<String> = table
        .counters()
        .pairs()
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let _ = writeln!(s, "counters: {}", counters.join(", "));
    s
}
