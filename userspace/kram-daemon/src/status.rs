//! The text `kram-daemon --status` prints (the daemon renders it for each client of its
//! status socket), and the same as one JSON object (`--status --json`):
//!
//! ```text
//! kram-daemon node 1 pid 212 up 42s: 64 chunks of 1 MiB from partition offset 0x300000, offers expire after 10s, leases after 20s, protocol v1+v2
//! free 16, offered 16, lent 32
//! start: record generation 3 (1 lent ranges); lease record generation 5
//! chunks 0-31 lent to node 0 instance 0 (lease expires in 19.2s)
//! chunks 32-47 offered to node 2 instance 1 (expires in 8.5s)
//! chunks 48-63 free
//! counters: received 5, requests 2, offers 2, ...
//! ```
//! Line 2 always starts with `free N, offered N, lent N` (`, wiping N` follows while chunks
//! are being wiped); line 3 says how the daemon started; during the grace period a `grace:`
//! line follows; then one line per run of chunks (free chunks merged, one run per grant),
//! then the counters as `name value` pairs.
//!
//! The socket sends the text, then one line `json: {...}`; `--status` prints the text,
//! `--status --json` the object.

use crate::lease::StartMode;
use crate::table::{role, RunState, Table};
use std::fmt::Write;
use std::time::{Duration, Instant};
use unimem_wire::kram::{LENDABLE_OFFSET, V1};

/// The prefix of the JSON line on the status socket.
pub const JSON_PREFIX: &str = "json: ";

/// What the daemon knows besides the table.
#[derive(Debug, Clone)]
pub struct Info<'a> {
    pub pid: u32,
    pub uptime: Duration,
    pub start: &'a StartMode,
    /// The generation of the lease record last written (or found), if any.
    pub generation: Option<u64>,
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// Renders the status of `table` at `now`.
pub fn render(table: &Table, now: Instant, info: &Info) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "kram-daemon node {} pid {} up {}s: {} chunks of 1 MiB from partition offset {LENDABLE_OFFSET:#x}, offers expire after {}s, leases after {}s, protocol {}",
        table.node(),
        info.pid,
        info.uptime.as_secs(),
        table.len(),
        table.offer_timeout().as_secs_f64(),
        table.lease().as_secs_f64(),
        if table.max_version() == V1 { "v1 only" } else { "v1+v2" }
    );
    let t = table.totals();
    let _ = write!(s, "free {}, offered {}, lent {}", t.free, t.offered, t.lent);
    if t.wiping > 0 {
        let _ = write!(s, ", wiping {}", t.wiping);
    }
    s.push('\n');
    let _ = write!(s, "start: {}", info.start);
    match info.generation {
        Some(g) => {
            let _ = writeln!(s, "; lease record generation {g}");
        }
        None => s.push_str("; no lease record written yet\n"),
    }
    if let Some(until) = table.grace_until() {
        let _ = writeln!(
            s,
            "grace: {:.1}s left (REQUESTs deferred; RENEW or CONFIRM of free chunks claims them)",
            until.saturating_duration_since(now).as_secs_f64()
        );
    }
    for r in table.runs() {
        let _ = write!(s, "chunks {}-{} ", r.first, r.last);
        let _ = match r.state {
            RunState::Free => writeln!(s, "free"),
            RunState::Wiping => writeln!(s, "wiping"),
            RunState::Offered { grant, deadline } => writeln!(
                s,
                "offered to node {} instance {}{} (expires in {:.1}s)",
                grant.node,
                grant.instance,
                role(grant.instance),
                deadline.saturating_duration_since(now).as_secs_f64()
            ),
            RunState::Lent { grant, expiry } => writeln!(
                s,
                "lent to node {} instance {}{} (lease expires in {:.1}s)",
                grant.node,
                grant.instance,
                role(grant.instance),
                expiry.saturating_duration_since(now).as_secs_f64()
            ),
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

/// A JSON string literal.
fn quote(text: &str) -> String {
    let mut q = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(q, "\\u{:04x}", c as u32);
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// The status as one JSON object (one line).
pub fn render_json(table: &Table, now: Instant, info: &Info) -> String {
    let t = table.totals();
    let runs: Vec<String> = table
        .runs()
        .iter()
        .map(|r| {
            let head = format!("\"first\":{},\"last\":{}", r.first, r.last);
            match r.state {
                RunState::Free => format!("{{{head},\"state\":\"free\"}}"),
                RunState::Wiping => format!("{{{head},\"state\":\"wiping\"}}"),
                RunState::Offered { grant, deadline } => format!(
                    "{{{head},\"state\":\"offered\",\"node\":{},\"instance\":{},\"expires_in_s\":{}}}",
                    grant.node,
                    grant.instance,
                    secs(deadline.saturating_duration_since(now))
                ),
                RunState::Lent { grant, expiry } => format!(
                    "{{{head},\"state\":\"lent\",\"node\":{},\"instance\":{},\"lease_expires_in_s\":{}}}",
                    grant.node,
                    grant.instance,
                    secs(expiry.saturating_duration_since(now))
                ),
            }
        })
        .collect();
    let counters: Vec<String> = table
        .counters()
        .pairs()
        .iter()
        .map(|(k, v)| format!("\"{k}\":{v}"))
        .collect();
    let grace = table.grace_until().map_or("null".to_string(), |u| {
        secs(u.saturating_duration_since(now)).to_string()
    });
    format!(
        "{{\"node\":{},\"pid\":{},\"uptime_s\":{},\"chunks\":{},\"offer_timeout_s\":{},\"lease_s\":{},\"max_version\":{},\
         \"start\":{{\"mode\":\"{}\",\"detail\":{}}},\"record_generation\":{},\"grace_remaining_s\":{grace},\
         \"totals\":{{\"free\":{},\"offered\":{},\"lent\":{},\"wiping\":{}}},\"runs\":[{}],\"counters\":{{{}}}}}",
        table.node(),
        info.pid,
        info.uptime.as_secs(),
        table.len(),
        table.offer_timeout().as_secs_f64(),
        table.lease().as_secs_f64(),
        table.max_version(),
        info.start.name(),
        quote(&info.start.to_string()),
        info.generation.map_or("null".to_string(), |g| g.to_string()),
        t.free,
        t.offered,
        t.lent,
        t.wiping,
        runs.join(","),
        counters.join(",")
    )
}

/// What the daemon writes to a status client: the text, then the JSON line.
pub fn socket_text(table: &Table, now: Instant, info: &Info) -> String {
    let mut s = render(table, now, info);
    s.push_str(JSON_PREFIX);
    s.push_str(&render_json(table, now, info));
    s.push('\n');
    s
}

/// Splits what the socket sent into (text, JSON) for `--status` / `--status --json`.
pub fn split(received: &str) -> (String, Option<String>) {
    let mut text = String::new();
    let mut json = None;
    for line in received.lines() {
        match line.strip_prefix(JSON_PREFIX) {
            Some(j) => json = Some(j.to_string()),
            None => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    (text, json)
}
