//! `unimem-gas info`: this node's GAS view from `unimem_eusrvmem`'s sysfs attributes, as text
//! or one JSON object (`--json`, for scripts).

use crate::sysfs::read_attr_in;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::Path;

/// What `/sys/class/misc/eusrvmem/` says.
#[derive(Debug, PartialEq)]
pub struct Info {
    pub node_id: u64,
    pub node_count: u64,
    pub vectors: u64,
    /// `None` when not readable: the file is root's only (a physical address).
    pub gas_phys: Option<u64>,
    pub gas_size: u64,
    pub ctl_size: u64,
    pub partition_size: u64,
    pub doorbell_counts: Vec<u64>,
    /// (node, byte offset in the window, size).
    pub partitions: Vec<(u64, u64, u64)>,
}

fn number(s: &str) -> Result<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .with_context(|| format!("not a number: {s:?}"))
}

impl Info {
    /// Reads the attributes of the sysfs directory `dir`.
    pub fn load_in(dir: &Path) -> Result<Info> {
        let n = |name: &str| -> Result<u64> {
            number(&read_attr_in(dir, name)?).with_context(|| format!("sysfs attribute {name}"))
        };
        let gas_phys = match std::fs::read_to_string(dir.join("gas_phys")) {
            Ok(s) => Some(number(s.trim_end())?),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => None,
            Err(e) => return Err(e).context("reading gas_phys"),
        };
        let words = |s: &str| {
            s.split_whitespace()
                .map(number)
                .collect::<Result<Vec<u64>>>()
        };
        let partitions = read_attr_in(dir, "partitions")?
            .lines()
            .map(|l| match words(l)?[..] {
                [node, off, size] => Ok((node, off, size)),
                _ => anyhow::bail!("partitions line {l:?} is not 'node offset size'"),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Info {
            node_id: n("node_id")?,
            node_count: n("node_count")?,
            vectors: n("vectors")?,
            gas_phys,
            gas_size: n("gas_size")?,
            ctl_size: n("ctl_size")?,
            partition_size: n("partition_size")?,
            doorbell_counts: words(&read_attr_in(dir, "doorbell_counts")?)?,
            partitions,
        })
    }

    /// The `--json` object: the fields above, sizes and offsets in bytes, `gas_phys` a hex
    /// string or null, partitions as `{"node", "offset", "size"}` objects.
    pub fn json(&self) -> Value {
        json!({
            "node_id": self.node_id,
            "node_count": self.node_count,
            "vectors": self.vectors,
            "gas_phys": self.gas_phys.map(|p| format!("{p:#x}")),
            "gas_size": self.gas_size,
            "ctl_size": self.ctl_size,
            "partition_size": self.partition_size,
            "doorbell_counts": self.doorbell_counts,
            "partitions": self.partitions.iter().map(|&(node, offset, size)| {
                json!({"node": node, "offset": offset, "size": size})
            }).collect::<Vec<_>>(),
        })
    }

    /// The text form: `name: value` lines, then the partitions.
    pub fn text(&self) -> String {
        let phys = self
            .gas_phys
            .map_or("(root only)".to_string(), |p| format!("{p:#x}"));
        let counts: Vec<String> = self.doorbell_counts.iter().map(u64::to_string).collect();
        let mut s = format!(
            "node_id: {}\nnode_count: {}\nvectors: {}\ngas_phys: {phys}\ngas_size: {}\nctl_size: {}\npartition_size: {}\ndoorbell_counts: {}\npartitions (node offset size):\n",
            self.node_id, self.node_count, self.vectors, self.gas_size, self.ctl_size,
            self.partition_size, counts.join(" ")
        );
        for (node, off, size) in &self.partitions {
            s += &format!("{node} {off:#x} {size}\n");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::Info;

    fn fixture() -> tempdir::Dir {
        let d = tempdir::Dir::new();
        for (k, v) in [
            ("node_id", "1"),
            ("node_count", "2"),
            ("vectors", "4"),
            ("gas_size", "8192"),
            ("ctl_size", "4096"),
            ("partition_size", "2048"),
            ("doorbell_counts", "5 0 0 7"),
            ("partitions", "0 0x1000 2048\n1 0x1800 2048"),
        ] {
            std::fs::write(d.path().join(k), format!("{v}\n")).unwrap();
        }
        std::fs::write(d.path().join("gas_phys"), "0xfe000000\n").unwrap();
        d
    }

    #[test]
    fn json_has_every_documented_key_and_parses_back() {
        let d = fixture();
        let info = Info::load_in(d.path()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&info.json().to_string()).unwrap();
        assert_eq!(v["node_id"], 1);
        assert_eq!(v["gas_phys"], "0xfe000000");
        assert_eq!(v["doorbell_counts"], serde_json::json!([5, 0, 0, 7]));
        assert_eq!(v["partitions"][1]["offset"], 0x1800);
        assert_eq!(v["partitions"][1]["size"], 2048);
        assert!(info.text().contains("gas_phys: 0xfe000000\n"));
        assert!(info.text().ends_with("1 0x1800 2048\n"));
    }

    #[test]
    fn a_missing_attribute_is_an_error_naming_it() {
        let d = fixture();
        std::fs::remove_file(d.path().join("vectors")).unwrap();
        let e = format!("{:#}", Info::load_in(d.path()).unwrap_err());
        assert!(e.contains("vectors"), "{e}");
    }

    /// A temporary directory removed on drop (no crate needed for one test helper).
    mod tempdir {
        pub struct Dir(std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                let p = std::env::temp_dir().join(format!(
                    "unimem-gas-info-{}-{:?}",
                    std::process::id(),
                    std::thread::current().id()
                ));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
            pub fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }
}
