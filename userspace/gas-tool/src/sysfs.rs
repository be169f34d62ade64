//! This node's fabric view, as `unimem_eusrvmem` shows it in sysfs.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use unimem_wire::eusrvmem::DEVICE_NAME;

/// The values of `/sys/class/misc/eusrvmem/`.
#[derive(Debug, Clone)]
pub struct FabricView {
    pub node_count: u32,
    pub ctl_size: u64,
    pub partition_size: u64,
}

pub fn sysfs_dir() -> PathBuf {
    Path::new("/sys/class/misc").join(DEVICE_NAME)
}

pub fn read_attr(name: &str) -> Result<String> {
    read_attr_in(&sysfs_dir(), name)
}

/// Reads attribute `name` of the sysfs directory `dir` (another directory than
/// [`sysfs_dir`] in tests, or for a daemon told where to look).
pub fn read_attr_in(dir: &Path, name: &str) -> Result<String> {
    let path = dir.join(name);
    let s = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {} (is unimem_eusrvmem loaded?)", path.display()))?;
    Ok(s.trim_end().to_string())
}

fn read_u64(dir: &Path, name: &str) -> Result<u64> {
    let s = read_attr_in(dir, name)?;
    s.parse()
        .with_context(|| format!("sysfs attribute {name} is not a number: {s:?}"))
}

impl FabricView {
    pub fn load() -> Result<Self> {
        Self::load_from(&sysfs_dir())
    }

    /// The view from the sysfs directory `dir`.
    pub fn load_from(dir: &Path) -> Result<Self> {
        Ok(Self {
            node_count: read_u64(dir, "node_count")? as u32,
            ctl_size: read_u64(dir, "ctl_size")?,
            partition_size: read_u64(dir, "partition_size")?,
        })
    }

    /// Byte offset in the GAS window of `offset` inside `node`'s partition, checking `len` fits.
    pub fn locate(&self, node: u32, offset: u64, len: u64) -> Result<u64> {
        if node >= self.node_count {
            bail!(
                "node {node} does not exist (cluster has {} nodes)",
                self.node_count
            );
        }
        match offset.checked_add(len) {
            Some(end) if end <= self.partition_size => {}
            _ => bail!(
                "range {offset:#x}+{len:#x} exceeds node {node}'s partition ({:#x} bytes)",
                self.partition_size
            ),
        }
        Ok(self.ctl_size + u64::from(node) * self.partition_size + offset)
    }
}

/// Doorbell interrupt counts of this node, per vector.
pub fn doorbell_counts() -> Result<Vec<u64>> {
    read_attr("doorbell_counts")?
        .split_whitespace()
        .map(|c| c.parse().context("bad doorbell_counts"))
        .collect()
}
