//! `bench-baseline`: the same ping-pong between two threads of one process over a pipe and
//! over a pair of eventfds: what the kernel's ordinary wake-up path costs in this VM, to put
//! the mailbox figures in proportion (TCG makes absolute numbers meaningless).

use anyhow::{bail, Context, Result};
use nix::sys::eventfd::{EfdFlags, EventFd};
use std::fs::File;
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use unimem_mailbox::cli::latency::Summary;

#[derive(clap::Args)]
pub struct BaselineArgs {
    /// Timed round trips per transport.
    #[arg(long, default_value_t = 1000)]
    count: u64,
    /// Bytes per pipe message (eventfd always carries 8).
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u16).range(1..=4096))]
    size: u16,
    /// Untimed round trips first.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
}

pub fn run(a: &BaselineArgs) -> Result<()> {
    let size = usize::from(a.size);
    let (rtts, elapsed) = pipe_pingpong(a.warmup, a.count, size)?;
    report("pipe", size, &rtts, elapsed);
    let (rtts, elapsed) = eventfd_pingpong(a.warmup, a.count)?;
    report("eventfd", 8, &rtts, elapsed);
    Ok(())
}

fn report(mode: &str, size: usize, rtts: &[Duration], elapsed: Duration) {
    let s = Summary::from_round_trips(rtts, elapsed);
    println!("baseline {mode}: {}", s.human());
    println!("{}", s.result_line("baseline", mode, size));
}

/// Runs `warmup + count` exchanges with `one(seq)` and times the last `count`.
fn timed(
    warmup: u64,
    count: u64,
    mut one: impl FnMut(u64) -> Result<()>,
) -> Result<(Vec<Duration>, Duration)> {
    let mut rtts = Vec::with_capacity(count as usize);
    let mut start = None;
    for seq in 0..warmup + count {
        let t = Instant::now();
        one(seq)?;
        if seq >= warmup {
            start.get_or_insert(t);
            rtts.push(t.elapsed());
        }
    }
    Ok((rtts, start.map_or(Duration::ZERO, |t| t.elapsed())))
}

fn pipe_pingpong(warmup: u64, count: u64, size: usize) -> Result<(Vec<Duration>, Duration)> {
    let (to_peer_r, to_peer_w) = nix::unistd::pipe()?;
    let (to_main_r, to_main_w) = nix::unistd::pipe()?;
    let total = warmup + count;
    let peer = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut r, mut w) = (File::from(to_peer_r), File::from(to_main_w));
        let mut buf = vec![0u8; size];
        for _ in 0..total {
            r.read_exact(&mut buf)?;
            w.write_all(&buf)?;
        }
        Ok(())
    });
    let (mut w, mut r) = (File::from(to_peer_w), File::from(to_main_r));
    let mut out = vec![0u8; size];
    let mut back = vec![0u8; size];
    let result = timed(warmup, count, |seq| {
        for (i, b) in out.iter_mut().enumerate() {
            *b = (seq as usize).wrapping_add(i) as u8;
        }
        w.write_all(&out)?;
        r.read_exact(&mut back)?;
        if back != out {
            bail!("pipe echo {seq} differs");
        }
        Ok(())
    });
    drop(w);
    peer.join()
        .map_err(|_| anyhow::anyhow!("pipe peer panicked"))?
        .context("pipe peer")?;
    result
}

fn eventfd_pingpong(warmup: u64, count: u64) -> Result<(Vec<Duration>, Duration)> {
    let to_peer = EventFd::from_flags(EfdFlags::EFD_CLOEXEC)?;
    let to_main = EventFd::from_flags(EfdFlags::EFD_CLOEXEC)?;
    let total = warmup + count;
    std::thread::scope(|s| {
        let peer = s.spawn(|| -> nix::Result<()> {
            for _ in 0..total {
                let v = to_peer.read()?;
                to_main.write(v)?;
            }
            Ok(())
        });
        let result = timed(warmup, count, |seq| {
            to_peer.write(seq + 1)?;
            let v = to_main.read()?;
            if v != seq + 1 {
                bail!("eventfd echo {seq}: got {v}");
            }
            Ok(())
        });
        peer.join()
            .map_err(|_| anyhow::anyhow!("eventfd peer panicked"))?
            .context("eventfd peer")?;
        result
    })
}
