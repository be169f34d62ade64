//! `unimem-sl`'s subcommands: `run` a command at a service level, `show` where registered
//! groups' pages are, print the `weights`.

use crate::mempolicy;
use crate::procfs;
use crate::registry::Registry;
use crate::service_level::{find_conflict, Ratio, ServiceLevel};
use crate::topology::Sysfs;
use anyhow::{bail, ensure, Context, Result};
use nix::unistd::{getpgrp, getpid, setpgid, Pid};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// Where the tool looks; tests point these at temporary trees.
pub struct Paths {
    pub sysfs: PathBuf,
    pub registry: PathBuf,
    pub proc: PathBuf,
}

/// `unimem-sl run`: the level and the command.
#[derive(clap::Args)]
pub struct RunOptions {
    /// Remote part of the ratio (reduced by the gcd with --local; then 1..=255).
    #[arg(long)]
    pub remote: u64,
    /// Local part of the ratio.
    #[arg(long)]
    pub local: u64,
    /// The remote node [default: the first node with memory and no CPUs].
    #[arg(long)]
    pub remote_node: Option<u32>,
    /// The local node.
    #[arg(long, default_value_t = 0)]
    pub local_node: u32,
    /// Set the weights even if another running group needs other weights on these nodes
    /// (changes that group's ratio for its future allocations).
    #[arg(long)]
    pub force: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Puts this process at the head of its own process group, so the level covers exactly the
/// command and its descendants. A job-control shell already made us the leader of the job's
/// group (a session leader cannot move either): then that group is the one registered, which
/// keeps Ctrl-C and the terminal working for the job.
fn lead_process_group() -> Result<i32> {
    let pid = getpid();
    if getpgrp() != pid {
        setpgid(Pid::from_raw(0), Pid::from_raw(0)).context("setpgid(0, 0)")?;
    }
    Ok(pid.as_raw())
}

/// Registers the level, sets the weights and the policy, and execs the command: only returns
/// on failure.
pub fn run(paths: &Paths, o: &RunOptions) -> Result<()> {
    ensure!(!o.command.is_empty(), "no command given (after --)");
    let sysfs = Sysfs::new(&paths.sysfs);
    let ratio = Ratio::new(o.remote, o.local)?;
    let remote_node = match o.remote_node {
        Some(n) => n,
        None => sysfs.default_remote_node()?,
    };
    let level = ServiceLevel::new(remote_node, o.local_node, ratio)?;
    // Check both weights can be set before changing anything.
    let current = sysfs.weights()?;
    for (node, _) in level.weights() {
        ensure!(
            current.nodes.contains_key(&node),
            "{}/node{node} does not exist: node {node} has no memory online",
            sysfs.weights_dir().display()
        );
    }
    let registry = Registry::new(&paths.registry);
    let lock = registry.lock()?;

    let me = getpid().as_raw();
    let others: Vec<_> = registry
        .live()?
        .into_iter()
        .filter(|(p, _)| *p != me)
        .collect();
    if let Some((pgid, other)) = find_conflict(&level, &others) {
        let what = format!(
            "process group {pgid} runs at remote:local {} (remote node {}, local node {}), which \
             needs other node weights than {} (remote node {}, local node {}); weights are \
             system-wide",
            other.ratio,
            other.remote_node,
            other.local_node,
            level.ratio,
            level.remote_node,
            level.local_node
        );
        if !o.force {
            bail!("{what}: wait for it to exit or use --force (which changes its ratio too)");
        }
        log::warn!("{what}; --force: overriding");
    }

    let pgid = lead_process_group()?;
    sysfs.set_manual()?;
    for (node, weight) in level.weights() {
        sysfs.set_weight(node, weight)?;
    }
    mempolicy::set_weighted_interleave(&[level.local_node, level.remote_node])?;
    registry.record(pgid, &level)?;
    drop(lock);
    log::info!("process group {pgid}: {level}");

    let err = Command::new(&o.command[0]).args(&o.command[1..]).exec();
    if let Err(e) = registry.remove(pgid) {
        log::warn!("{e:#}");
    }
    Err(err).with_context(|| format!("executing {:?}", o.command[0]))
}

fn pages(bytes: u64, page: u64) -> u64 {
    bytes / page
}

/// One line per group, `key=value` tokens (with `json`, a JSON array of objects).
pub fn show(paths: &Paths, pgid: Option<i32>, json: bool) -> Result<()> {
    let registry = Registry::new(&paths.registry);
    let mut groups: Vec<(i32, Option<ServiceLevel>)> = registry
        .live()?
        .into_iter()
        .map(|(p, l)| (p, Some(l)))
        .collect();
    if let Some(p) = pgid {
        groups.retain(|(g, _)| *g == p);
        if groups.is_empty() {
            ensure!(
                crate::registry::group_alive(p),
                "process group {p} does not exist"
            );
            log::warn!("process group {p} has no registered service level");
            groups.push((p, None));
        }
    } else if groups.is_empty() {
        log::warn!(
            "no service-level groups registered in {}",
            registry.dir().display()
        );
    }

    let page = crate::page_size() as u64;
    let mut objects = Vec::new();
    for (pgid, level) in groups {
        let usage = procfs::group_usage(&paths.proc, pgid, page)
            .with_context(|| format!("scanning {}", paths.proc.display()))?;
        let mut line = format!("pgid={pgid}");
        match level {
            Some(l) => {
                let on = |n| usage.bytes_per_node.get(&n).copied().unwrap_or(0);
                let (remote, local) = (on(l.remote_node), on(l.local_node));
                let other: u64 = usage.bytes_per_node.values().sum::<u64>() - remote - local;
                let share = if remote + local == 0 {
                    0.0
                } else {
                    100.0 * remote as f64 / (remote + local) as f64
                };
                line += &format!(
                    " ratio={} remote_node={} local_node={} procs={} remote_pages={} \
                     local_pages={} other_pages={} remote_pct={share:.1} target_pct={:.1}",
                    l.ratio,
                    l.remote_node,
                    l.local_node,
                    usage.procs,
                    pages(remote, page),
                    pages(local, page),
                    pages(other, page),
                    l.ratio.remote_pct()
                );
            }
            None => {
                line += &format!(" ratio=none procs={}", usage.procs);
                for (node, bytes) in &usage.bytes_per_node {
                    line += &format!(" node{node}_pages={}", pages(*bytes, page));
                }
            }
        }
        if usage.unreadable > 0 {
            log::warn!(
                "group {pgid}: {} of {} processes' numa_maps unreadable (not counted)",
                usage.unreadable,
                usage.procs
            );
            line += &format!(" unreadable={}", usage.unreadable);
        }
        if json {
            objects.push(unimem_clidoc::json::key_values(line.split(' ')));
        } else {
            println!("{line}");
        }
    }
    if json {
        println!("{}", serde_json::Value::Array(objects));
    }
    Ok(())
}

/// `auto=<bool>` (when the kernel has it) then `node<N>=<weight>` per node.
pub fn weights(paths: &Paths, json: bool) -> Result<()> {
    let w = Sysfs::new(&paths.sysfs).weights()?;
    let lines: Vec<String> = w
        .auto
        .map(|auto| format!("auto={auto}"))
        .into_iter()
        .chain(
            w.nodes
                .iter()
                .map(|(node, weight)| format!("node{node}={weight}")),
        )
        .collect();
    if json {
        println!(
            "{}",
            unimem_clidoc::json::key_values(lines.iter().map(String::as_str))
        );
    } else {
        for l in lines {
            println!("{l}");
        }
    }
    Ok(())
}
