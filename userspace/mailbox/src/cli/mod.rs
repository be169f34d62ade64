//! Pieces of the command-line programs over the mailbox: the product tool `unimem-mbox`
//! (serve, ping, info, stats, set-prot) and the test rig `unimem-mbox-test` (tests/rigs: the
//! forging, flooding and bad-argument checks and the benchmarks). They live here, in the
//! library, so that both programs wait, time out, measure and print alike without a copy.

pub mod deadline;
pub mod latency;
pub mod wait;

use crate::{AllocInfo, Packet, HEADER_LEN, PACKET_LEN, PAYLOAD_LEN};
use anyhow::Result;
use std::io::Write;

/// What `--help` says below the commands of a program that prints `RESULT` lines.
pub const RESULT_HELP: &str = "Timed results are printed on one line starting with RESULT \
    (key=value pairs).\nLatencies are half round trips in microseconds; msgs/s counts packets \
    delivered in both directions.";

/// A program's `main`: logging at `info`, the command line parsed, then `run`; an error ends
/// the program with `FAIL: ...` on stderr and exit status 1, which the tests look for.
pub fn main_with<C: clap::Parser>(run: impl FnOnce(C) -> Result<()>) {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    if let Err(e) = run(C::parse()) {
        eprintln!("FAIL: {e:#}");
        std::process::exit(1);
    }
}

/// The first line of every command that allocates: tests read the interface id from it while
/// the command keeps running, so it is flushed at once.
pub fn print_identity(info: &AllocInfo) {
    println!(
        "iface {} node {} thread {} prot {}",
        info.iface, info.node, info.thread_id, info.prot_id
    );
    let _ = std::io::stdout().flush();
}

pub fn decode(raw: &[u8; PACKET_LEN]) -> Result<Packet> {
    Packet::decode(raw).map_err(|e| anyhow::anyhow!("malformed packet {}: {e:?}", hex(raw)))
}

pub fn payload_of(raw: &[u8; PACKET_LEN]) -> [u8; PAYLOAD_LEN] {
    raw[HEADER_LEN..].try_into().expect("25 payload bytes")
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A value that differs between runs, so an echo left over from an earlier run (a stale ring)
/// is detected instead of being counted.
pub fn run_tag() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    t.as_nanos() as u64 ^ (u64::from(std::process::id()) << 32)
}
