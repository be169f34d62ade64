//! What the command-line tools over GSAS share (`unimem-gsas`, `unimem-dht` and their test rigs
//! `unimem-gsas-test`, `unimem-dht-test`): numbers as they take them, and the options that say
//! how their handles open (`--tree`, `--timeout-ms`).

use crate::{Gsas, TreeSource};
use anyhow::Context;
use std::time::Duration;

/// Parses a number as the tools take it: decimal, or hex with `0x`; `_` separators allowed.
pub fn parse_u64(s: &str) -> std::result::Result<u64, String> {
    let s = s.trim().replace('_', "");
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("`{s}`: {e} (a number, hex with 0x)"))
}

pub fn parse_u32(s: &str) -> std::result::Result<u32, String> {
    let v = parse_u64(s)?;
    u32::try_from(v).map_err(|_| format!("{v} does not fit 32 bits"))
}

/// A grant's mode as chmod takes it: octal digits (`640`, `0640`), at most `0777`.
pub fn parse_mode(s: &str) -> std::result::Result<u32, String> {
    let t = s.trim();
    let digits = t.strip_prefix("0o").unwrap_or(t);
    match u32::from_str_radix(digits, 8) {
        Ok(m) if m <= unimem_wire::gsas::grant::MODE_MASK => Ok(m),
        Ok(m) => Err(format!(
            "`{s}`: {m:#o} has bits beyond 0777 (rwx for user, group, others)"
        )),
        Err(e) => Err(format!("`{s}`: {e} (an octal mode such as 0640)")),
    }
}

/// What `--help` says below the commands of `unimem-gsas` and its test rig `unimem-gsas-test`.
pub const ADDRESS_HELP: &str = "Addresses are 64-bit: node in bits 48-63, offset in bits 0-47 \
    (hex with 0x, or decimal). Every process has its own protection tree unless --tree joins \
    another one (needs CAP_SYS_ADMIN) or it runs under `unimem-gsas exec`.";

/// The pattern byte `i` of `unimem-gsas bulk-write --seed` (and of what `bulk-read --seed`
/// verifies); the test rig's `check ops` writes and reads it back too.
pub fn pattern(seed: u64, i: usize) -> u8 {
    let x = (i as u64)
        .wrapping_add(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (x >> 56) as u8
}

/// The global options of a tool: which tree its handles join, their timeout.
#[derive(Debug, Clone, clap::Args)]
pub struct HandleArgs {
    /// Join protection tree ID (as printed by `info`/`alloc`; SET_TREE, needs CAP_SYS_ADMIN)
    /// instead of a tree of this process's own.
    #[arg(long, global = true, value_parser = parse_u32)]
    pub tree: Option<u32>,
    /// Join the tree that `unimem-gsas share-tree` serves at PATH (a process of the same user).
    #[arg(long, global = true, value_name = "PATH", conflicts_with = "tree")]
    pub tree_socket: Option<std::path::PathBuf>,
    /// Timeout per operation in milliseconds (default 5000, or GSAS_TIMEOUT_MS).
    #[arg(long, global = true)]
    pub timeout_ms: Option<u64>,
}

impl HandleArgs {
    /// How the tool's handles open. With `--tree-socket`, the tree's file is fetched here and
    /// kept open for the life of the process.
    pub fn ctx(&self) -> anyhow::Result<Ctx> {
        let tree = match (&self.tree_socket, self.tree) {
            (Some(path), _) => {
                let fd = crate::tree_socket::receive(path)?;
                TreeSource::Fd(std::os::fd::IntoRawFd::into_raw_fd(fd))
            }
            (None, Some(id)) => TreeSource::Id(id),
            (None, None) => TreeSource::Process,
        };
        Ok(Ctx {
            tree,
            timeout: self.timeout_ms.map(Duration::from_millis),
            mapped_reads: true,
        })
    }
}

/// How every handle of a tool opens: the tree, the timeout, and whether reads may go through
/// mappings (a tool that reads a page once, `unimem-gsas`, gains nothing from mapping it).
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    pub tree: TreeSource,
    pub timeout: Option<Duration>,
    pub mapped_reads: bool,
}

impl Ctx {
    pub fn open(&self) -> anyhow::Result<Gsas> {
        self.open_in(self.tree)
    }

    pub fn open_in(&self, tree: TreeSource) -> anyhow::Result<Gsas> {
        let g = Gsas::open_in(tree).context("opening a GSAS handle")?;
        if let Some(t) = self.timeout {
            g.set_timeout(t);
        }
        if !self.mapped_reads {
            g.set_mapped_reads(false);
        }
        Ok(g)
    }
}

/// A tool's `main`: logging from `RUST_LOG` (warnings by default), then `run`; exits with the
/// code it returns, or prints its error chain as `NAME: …` and exits 1.
pub fn main_with(name: &str, run: impl FnOnce() -> anyhow::Result<i32>) -> ! {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run() {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("{name}: {e:#}");
            std::process::exit(1);
        }
    }
}
