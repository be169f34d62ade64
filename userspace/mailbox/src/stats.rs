//! The driver's debugfs statistics. The text format belongs to the kernel module and may
//! change, so it is returned as text and never parsed here.

use std::io;

/// debugfs file with one line per allocated interface (sent, received, rejected, dropped) and
/// totals.
pub const STATS_PATH: &str = "/sys/kernel/debug/unimem_mailbox/stats";

/// The statistics text (needs root and a mounted debugfs).
pub fn read() -> io::Result<String> {
    std::fs::read_to_string(STATS_PATH)
}

/// The driver's totals, one value per file (`unimem_mailbox` makes them at load).
pub const SYSFS_DIR: &str = "/sys/kernel/unimem_mailbox";

/// Every counter file of `dir` as (name, value), sorted by name.
pub fn counters_in(dir: &std::path::Path) -> io::Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(entry.path())?;
        let value = text.trim().parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a number: {text:?}", entry.path().display()),
            )
        })?;
        out.push((name, value));
    }
    out.sort();
    Ok(out)
}

/// [`counters_in`] as one JSON object, `{"name": value, ...}`.
pub fn counters_json(counters: &[(String, u64)]) -> String {
    let map: serde_json::Map<String, serde_json::Value> = counters
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::from(*v)))
        .collect();
    serde_json::Value::Object(map).to_string()
}

#[cfg(test)]
mod tests {
    use super::{counters_in, counters_json};

    #[test]
    fn counters_read_back_as_json_and_bad_files_are_errors() {
        let d = std::env::temp_dir().join(format!("unimem-mbox-stats-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("packets_sent"), "12\n").unwrap();
        std::fs::write(d.join("node"), "2\n").unwrap();
        let c = counters_in(&d).unwrap();
        let v: serde_json::Value = serde_json::from_str(&counters_json(&c)).unwrap();
        assert_eq!(v["node"], 2);
        assert_eq!(v["packets_sent"], 12);
        std::fs::write(d.join("bad"), "x\n").unwrap();
        let e = counters_in(&d).unwrap_err().to_string();
        std::fs::remove_dir_all(&d).unwrap();
        assert!(e.contains("not a number"), "{e}");
    }
}
