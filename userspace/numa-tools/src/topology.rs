//! What sysfs says about NUMA nodes (`devices/system/node/node<N>/{cpulist,meminfo}`) and the
//! weighted-interleave weights (`kernel/mm/mempolicy/weighted_interleave/`). Everything is
//! relative to a root so tests can use a fake tree.
//!
//! Weights, as Linux 7.3's mm/mempolicy.c implements them: there is one `nodeN` file per node
//! with memory (added and removed on memory hotplug), holding 1..=255. The `auto` file (6.16+)
//! says whether the kernel derives the weights from memory bandwidth data (HMAT/CXL) and
//! rewrites them when that data changes, e.g. on hotplug. Writing any `nodeN` switches to
//! manual mode and keeps the other nodes' current weights; writing `false` to `auto` does the
//! same without changing a weight; writing `true` fails with ENODEV when the kernel has no
//! bandwidth data (a QEMU guest without HMAT). Weights only affect new allocations.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// A node as sysfs shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub id: u32,
    pub has_cpus: bool,
    pub mem_kib: u64,
}

/// `Node 1 MemTotal:  65536 kB` -> 65536.
pub fn meminfo_total_kib(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let mut t = line.split_whitespace();
        (t.next()? == "Node").then_some(())?;
        t.next()?;
        (t.next()? == "MemTotal:").then_some(())?;
        t.next()?.parse().ok()
    })
}

/// The first node that has memory but no CPUs: how lent memory shows up.
pub fn first_cpuless_memory_node(nodes: &[NodeInfo]) -> Option<u32> {
    nodes
        .iter()
        .filter(|n| !n.has_cpus && n.mem_kib > 0)
        .map(|n| n.id)
        .min()
}

/// The weighted-interleave state.
#[derive(Debug, PartialEq, Eq)]
pub struct Weights {
    /// `None` on kernels before 6.16, which have no `auto` file.
    pub auto: Option<bool>,
    pub nodes: BTreeMap<u32, u8>,
}

/// The kernel's kstrtobool() spellings of `auto`'s value.
fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "y" | "yes" | "on" => Some(true),
        "false" | "0" | "n" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn node_number(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("node")?;
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())?
}

pub struct Sysfs {
    root: PathBuf,
}

impl Sysfs {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn node_dir(&self) -> PathBuf {
        self.root.join("devices/system/node")
    }

    pub fn weights_dir(&self) -> PathBuf {
        self.root.join("kernel/mm/mempolicy/weighted_interleave")
    }

    /// Nodes in `devices/system/node`, by id.
    pub fn nodes(&self) -> Result<Vec<NodeInfo>> {
        let dir = self.node_dir();
        let mut nodes = Vec::new();
        for entry in fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
            let Some(id) = entry.file_name().to_str().and_then(node_number) else {
                continue;
            };
            let read = |f: &str| {
                let p = entry.path().join(f);
                fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))
            };
            let meminfo = read("meminfo")?;
            let mem_kib = meminfo_total_kib(&meminfo)
                .with_context(|| format!("no MemTotal in {}/meminfo", entry.path().display()))?;
            nodes.push(NodeInfo {
                id,
                has_cpus: !read("cpulist")?.trim().is_empty(),
                mem_kib,
            });
        }
        nodes.sort_by_key(|n| n.id);
        Ok(nodes)
    }

    /// The remote node to use when none is given.
    pub fn default_remote_node(&self) -> Result<u32> {
        let nodes = self.nodes()?;
        first_cpuless_memory_node(&nodes).with_context(|| {
            format!(
                "no node has memory but no CPUs (nodes: {}); is remote memory online? \
                 Give --remote-node",
                nodes
                    .iter()
                    .map(|n| format!("{} cpus={} mem={}KiB", n.id, n.has_cpus, n.mem_kib))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// The `auto` file. Linux 6.18 names it `__auto_type` by accident (its attribute macro
    /// stringifies `auto`, which 6.18 #defines); 7.3 spells it out.
    fn auto_path(&self) -> Option<PathBuf> {
        ["auto", "__auto_type"]
            .into_iter()
            .map(|n| self.weights_dir().join(n))
            .find(|p| p.exists())
    }

    pub fn weights(&self) -> Result<Weights> {
        let dir = self.weights_dir();
        let rd = fs::read_dir(&dir).map_err(|e| {
            if e.kind() == ErrorKind::NotFound {
                anyhow::anyhow!(
                    "{} does not exist: this kernel has no weighted interleave (Linux 6.9+)",
                    dir.display()
                )
            } else {
                anyhow::Error::new(e).context(format!("listing {}", dir.display()))
            }
        })?;
        let mut nodes = BTreeMap::new();
        for entry in rd {
            let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
            let Some(id) = entry.file_name().to_str().and_then(node_number) else {
                continue;
            };
            nodes.insert(id, read_weight(&entry.path())?);
        }
        let auto = match self.auto_path() {
            None => None,
            Some(p) => {
                let s =
                    fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
                Some(parse_bool(&s).with_context(|| format!("{}: `{}`", p.display(), s.trim()))?)
            }
        };
        Ok(Weights { auto, nodes })
    }

    /// Leaves auto mode so the kernel does not overwrite our weights on the next hotplug.
    /// Writing a weight does this too; doing it first states it and keeps the other
    /// nodes' weights as they are.
    pub fn set_manual(&self) -> Result<()> {
        let Some(p) = self.auto_path() else {
            return Ok(());
        };
        let s = fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        if parse_bool(&s) == Some(true) {
            log::info!(
                "switching weighted interleave to manual weights ({})",
                p.display()
            );
            fs::write(&p, "false\n")
                .with_context(|| format!("writing false to {}", p.display()))?;
        }
        Ok(())
    }

    pub fn set_weight(&self, node: u32, weight: u8) -> Result<()> {
        let p = self.weights_dir().join(format!("node{node}"));
        if !p.exists() {
            bail!(
                "{} does not exist: node {node} has no memory online (or this kernel has no \
                 weighted interleave)",
                p.display()
            );
        }
        fs::write(&p, format!("{weight}\n"))
            .with_context(|| format!("writing {weight} to {} (needs root)", p.display()))
    }
}

fn read_weight(p: &Path) -> Result<u8> {
    let s = fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    s.trim()
        .parse()
        .with_context(|| format!("{}: `{}` is not a weight", p.display(), s.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo() {
        let text = "Node 1 MemTotal:          65536 kB\nNode 1 MemFree:   1000 kB\n";
        assert_eq!(meminfo_total_kib(text), Some(65536));
        assert_eq!(meminfo_total_kib("Node 0 MemFree: 3 kB\n"), None);
    }

    #[test]
    fn cpuless_node() {
        let n = |id, has_cpus, mem_kib| NodeInfo {
            id,
            has_cpus,
            mem_kib,
        };
        assert_eq!(
            first_cpuless_memory_node(&[n(0, true, 100), n(1, false, 0)]),
            None
        );
        assert_eq!(
            first_cpuless_memory_node(&[n(0, true, 100), n(2, false, 5), n(1, false, 0)]),
            Some(2)
        );
    }

    #[test]
    fn node_names() {
        assert_eq!(node_number("node12"), Some(12));
        assert_eq!(node_number("node"), None);
        assert_eq!(node_number("node1x"), None);
        assert_eq!(node_number("has_cpu"), None);
    }

    #[test]
    fn bools() {
        assert_eq!(parse_bool("true\n"), Some(true));
        assert_eq!(parse_bool("N"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
    }
}
