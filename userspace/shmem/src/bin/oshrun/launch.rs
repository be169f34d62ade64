//! The launcher: job descriptor, placement, remoteFork of one agent per PE, output, exit
//! statuses, and the teardown after a failure or a signal.

use anyhow::{bail, Context, Result};
use gsas::{ChildId, Gsas};
use shmem::job::{self, Layout};
use shmem::ring::{Lines, Ring};
use std::io::Write;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: i32) {
    SIGNAL.store(sig, Ordering::SeqCst);
}

/// How long the PEs get to stop after the job was aborted, before oshrun gives up on them.
const STOP_GRACE: Duration = Duration::from_secs(60);
/// How long the other PEs may go on after a PE exited without shmem_finalize (they may be
/// waiting for it in a barrier forever) before oshrun stops them.
const EXIT_GRACE: Duration = Duration::from_secs(10);

/// Parses `0,2-3` into node ids (each below `count`, no repeats).
pub fn parse_nodes(s: &str, count: u32) -> Result<Vec<u16>> {
    let mut out: Vec<u16> = Vec::new();
    for part in s.split(',').map(str::trim) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (u32, u32) = (
            a.trim()
                .parse()
                .with_context(|| format!("bad node {a:?} in --nodes {s:?}"))?,
            b.trim()
                .parse()
                .with_context(|| format!("bad node {b:?} in --nodes {s:?}"))?,
        );
        if a > b || b >= count {
            bail!(
                "--nodes {s:?}: {part} is not a range of nodes 0..{}",
                count - 1
            );
        }
        for n in a..=b {
            if out.contains(&(n as u16)) {
                bail!("--nodes {s:?}: node {n} given twice");
            }
            out.push(n as u16);
        }
    }
    Ok(out)
}

/// The node of each PE: blocks of consecutive PEs, the first `np % nodes` nodes one more.
pub fn place(np: usize, nodes: &[u16]) -> Vec<u16> {
    let (per, extra) = (np / nodes.len(), np % nodes.len());
    nodes
        .iter()
        .enumerate()
        .flat_map(|(i, &n)| std::iter::repeat_n(n, per + usize::from(i < extra)))
        .collect()
}

/// oshrun's SHMEM_* variables (but the job's own), as NAME=VALUE for the agents:
/// remoteFork carries no environment. SHMEM_SYMMETRIC_SIZE is checked here; without it, the
/// PEs get [`shmem::pe::default_heap`] for `pes_per_node` PEs on a node (at most).
fn shmem_env(np: usize, pes_per_node: usize) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut heap_given = false;
    for (k, v) in std::env::vars() {
        if !k.starts_with("SHMEM_") || k == shmem::pe::JOB_ENV || k == shmem::pe::PE_ENV {
            continue;
        }
        if k == shmem::pe::HEAP_ENV {
            if shmem::pe::parse_size(&v).is_none_or(|n| n == 0) {
                bail!("{k}={v:?} is not a size (bytes, or with K, M or G)");
            }
            heap_given = true;
        }
        out.push(format!("{k}={v}"));
    }
    if !heap_given {
        let heap = match shmem::pe::local_pool() {
            Some(pool) => {
                // SAFETY: geteuid has no preconditions.
                let admin = unsafe { libc::geteuid() } == 0;
                let pct = (!admin).then(user_pages_pct);
                shmem::pe::default_heap(
                    pool.max,
                    pct,
                    pes_per_node as u64,
                    job::pages(np) * gsas::PAGE_SIZE,
                )
            }
            None => shmem::pe::DEFAULT_HEAP,
        };
        log::info!("symmetric heap per PE: {heap} bytes ({pes_per_node} PEs per node at most)");
        out.push(format!("{}={heap}", shmem::pe::HEAP_ENV));
    }
    Ok(out)
}

/// The share of a node's GSAS pool a user may hold (`unimem_gsas user_pages_pct`, 50 unless
/// the module shows another value).
fn user_pages_pct() -> u64 {
    std::fs::read_to_string("/sys/module/unimem_gsas/parameters/user_pages_pct")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|p| (1..=100).contains(p))
        .unwrap_or(50)
}

struct Pe {
    node: u16,
    child: Option<ChildId>,
    status: Option<gsas::ExitStatus>,
    ring: Ring,
    tail: u64,
    lines: Lines,
}

pub fn run(np: usize, nodes: Option<&str>, command: &[String]) -> Result<i32> {
    if np == 0 || np > job::MAX_PES {
        bail!("-np {np}: between 1 and {} PEs", job::MAX_PES);
    }
    let view = unimem_gas::sysfs::FabricView::load()?;
    let nodes = match nodes {
        Some(s) => parse_nodes(s, view.node_count)?,
        None => (0..view.node_count as u16).collect(),
    };
    let prog =
        std::path::absolute(&command[0]).with_context(|| format!("program {:?}", command[0]))?;
    if !prog.is_file() {
        bail!(
            "{}: no such program here (its path must be the same on every node)",
            prog.display()
        );
    }
    let prog = prog.to_string_lossy().into_owned();
    let placement = place(np, &nodes);
    let per_node = nodes
        .iter()
        .map(|n| placement.iter().filter(|&p| p == n).count())
        .max()
        .unwrap_or(1);
    let env = shmem_env(np, per_node)?;
    let me = std::env::current_exe().context("oshrun's own path")?;
    let me = me.to_string_lossy().into_owned();
    let g = Gsas::open().context("opening GSAS (are unimem_mailbox and unimem_gsas loaded?)")?;
    let base = g
        .alloc_shared_page(g.node(), job::pages(np))
        .context("allocating the job descriptor")?;
    let layout = Layout { base, npes: np };
    let r = (|| -> Result<i32> {
        layout.init(&g)?;
        for sig in [nix::sys::signal::SIGINT, nix::sys::signal::SIGTERM] {
            // SAFETY: the handler only stores into an atomic.
            unsafe {
                nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::Handler(on_signal))
            }?;
        }
        let mut pes: Vec<Pe> = place(np, &nodes)
            .into_iter()
            .enumerate()
            .map(|(pe, node)| Pe {
                node,
                child: None,
                status: None,
                ring: Ring::of(&layout, pe),
                tail: 0,
                lines: Lines::default(),
            })
            .collect();
        let mut started = Ok(());
        for (i, p) in pes.iter_mut().enumerate() {
            let mut args = vec![
                "--pe-agent".to_string(),
                "--job".into(),
                format!("{base:x}"),
                "--pe".into(),
                i.to_string(),
            ];
            for e in &env {
                args.extend(["--env".to_string(), e.clone()]);
            }
            args.extend(["--".to_string(), prog.clone()]);
            args.extend(command[1..].iter().cloned());
            match g.remote_fork(p.node, &me, &args) {
                Ok(c) => p.child = Some(c),
                Err(e) => {
                    started = Err(anyhow::anyhow!("starting PE {i} on node {}: {e}", p.node));
                    break;
                }
            }
            if SIGNAL.load(Ordering::SeqCst) != 0 {
                break;
            }
        }
        if let Err(e) = &started {
            eprintln!("oshrun: {e:#}");
            layout.abort(&g);
        }
        let (first_failure, global_exit) = supervise(&g, &layout, &mut pes)?;
        free_leftovers(&g, &layout, &pes);
        started?;
        let sig = SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            return Ok(128 + sig);
        }
        // shmem_global_exit(status) ends the job with that status, whatever the stopped PEs
        // exited with.
        if let Some(status) = global_exit {
            return Ok(status);
        }
        // The PE whose failure stopped the job tells what went wrong; the others were
        // stopped by oshrun (SIGTERM) and would all say 143.
        if let Some(first) = first_failure {
            return Ok(first);
        }
        Ok(pes
            .iter()
            .map(|p| p.status.map_or(1, |s| s.shell()))
            .max()
            .unwrap_or(0))
    })();
    if let Err(e) = g.free(base) {
        eprintln!("oshrun: freeing the job descriptor {base:#x}: {e}");
    }
    r
}

/// Prints output, counts the heartbeat, collects exit statuses; aborts the job when a PE
/// fails or a signal came. Returns when every started PE has exited (or the grace is over),
/// with the status of the PE whose failure stopped the job: the first that failed other
/// than by the SIGTERM its agent sends when the job is stopped; and the status a PE gave
/// `shmem_global_exit`, if one did.
fn supervise(g: &Gsas, layout: &Layout, pes: &mut [Pe]) -> Result<(Option<i32>, Option<i32>)> {
    let mut aborted_at: Option<Instant> = None;
    let mut global_exit: Option<i32> = None;
    // A PE called shmem_global_exit (it records its status before it aborts the job): the job
    // ends with that status, and the other PEs' statuses are the teardown's.
    let look_for_global_exit = |global_exit: &mut Option<i32>| {
        if global_exit.is_none() {
            if let Some((pe, status)) = layout.global_exit_status(g) {
                eprintln!("oshrun: PE {pe} called shmem_global_exit({status}): stopping every PE");
                *global_exit = Some(status);
            }
        }
    };
    let mut failures: Vec<i32> = Vec::new();
    let mut unfinalized: Option<(usize, Instant)> = None;
    let mut beat = 0u64;
    let mut last_beat = Instant::now() - Duration::from_secs(1);
    let mut last_wait = Instant::now();
    loop {
        let mut got = false;
        for (i, p) in pes.iter_mut().enumerate() {
            got |= drain(g, i, p);
        }
        if last_beat.elapsed() >= Duration::from_millis(500) {
            beat += 1;
            let _ = g.write(layout.word(job::hdr::HEARTBEAT), beat);
            last_beat = Instant::now();
        }
        if aborted_at.is_none() {
            if g.read(layout.word(job::hdr::ABORT)).unwrap_or(0) != 0 {
                aborted_at = Some(Instant::now());
                look_for_global_exit(&mut global_exit);
            }
            let sig = SIGNAL.load(Ordering::SeqCst);
            if sig != 0 {
                eprintln!("oshrun: signal {sig}: stopping every PE");
                layout.abort(g);
                aborted_at = Some(Instant::now());
            }
        }
        if last_wait.elapsed() >= Duration::from_millis(200) {
            last_wait = Instant::now();
            for (i, p) in pes.iter_mut().enumerate() {
                let (Some(c), None) = (p.child, p.status) else {
                    continue;
                };
                match g.try_wait(c) {
                    Ok(Some(s)) => {
                        drain(g, i, p);
                        p.status = Some(s);
                        if s.0 == 0 && unfinalized.is_none() && layout.unfinalized(g, i) {
                            unfinalized = Some((i, Instant::now()));
                        }
                        if s.0 != 0 {
                            look_for_global_exit(&mut global_exit);
                            if global_exit.is_none() {
                                eprintln!("oshrun: PE {i} (node {}): {s}", p.node);
                            }
                            failures.push(s.shell());
                            if aborted_at.is_none() {
                                eprintln!("oshrun: stopping the other PEs");
                                layout.abort(g);
                                aborted_at = Some(Instant::now());
                            }
                        }
                    }
                    Ok(None) => {}
                    Err(e) => {
                        eprintln!("oshrun: PE {i} (node {}): {e}", p.node);
                        p.status = Some(gsas::ExitStatus(255 << 8));
                        layout.abort(g);
                        aborted_at.get_or_insert_with(Instant::now);
                    }
                }
            }
        }
        if pes.iter().all(|p| p.child.is_none() || p.status.is_some()) {
            break;
        }
        if let Some((pe, t)) = unfinalized.filter(|_| aborted_at.is_none()) {
            if t.elapsed() > EXIT_GRACE {
                eprintln!(
                    "oshrun: PE {pe} exited without shmem_finalize {} s ago and other PEs still run (waiting for it?): stopping them",
                    EXIT_GRACE.as_secs()
                );
                failures.push(1);
                layout.abort(g);
                aborted_at = Some(Instant::now());
            }
        }
        if aborted_at.is_some_and(|t| t.elapsed() > STOP_GRACE) {
            bail!(
                "PEs still running {} s after the job was stopped",
                STOP_GRACE.as_secs()
            );
        }
        if !got {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    for (i, p) in pes.iter_mut().enumerate() {
        drain(g, i, p);
        let rest = p.lines.finish(&format!("PE {i}: "));
        print!("{rest}");
    }
    let _ = std::io::stdout().flush();
    let stopped = 128 + nix::sys::signal::SIGTERM as i32;
    let first = failures
        .iter()
        .find(|&&f| f != stopped)
        .or(failures.first())
        .copied();
    Ok((first, global_exit))
}

/// Prints what PE `i` wrote since the last look; whether there was anything.
fn drain(g: &Gsas, i: usize, p: &mut Pe) -> bool {
    match p.ring.pull(g, &mut p.tail) {
        Ok(b) if !b.is_empty() => {
            let s = p.lines.feed(&format!("PE {i}: "), &b);
            print!("{s}");
            let _ = std::io::stdout().flush();
            true
        }
        Ok(_) => false,
        Err(e) => {
            log::warn!("PE {i}: {e}");
            false
        }
    }
}

/// Frees what PEs that died without shmem_finalize left allocated (they recorded it).
fn free_leftovers(g: &Gsas, layout: &Layout, pes: &[Pe]) {
    for (i, p) in pes.iter().enumerate() {
        if p.child.is_none() {
            continue;
        }
        for a in layout.recorded(g, i) {
            match g.free(a) {
                Ok(()) => log::info!("freed {a:#x} left by PE {i}"),
                Err(e) => eprintln!("oshrun: freeing {a:#x} left by PE {i}: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_of_consecutive_pes() {
        assert_eq!(place(6, &[0, 1, 2]), [0, 0, 1, 1, 2, 2]);
        assert_eq!(place(5, &[0, 1]), [0, 0, 0, 1, 1]);
        assert_eq!(place(2, &[3, 1, 2]), [3, 1]);
    }

    #[test]
    fn node_lists() {
        assert_eq!(parse_nodes("0,2-3", 4).unwrap(), [0, 2, 3]);
        assert!(parse_nodes("0,4", 4).is_err());
        assert!(parse_nodes("1,1", 4).is_err());
        assert!(parse_nodes("3-1", 4).is_err());
        assert!(parse_nodes("x", 4).is_err());
    }
}
