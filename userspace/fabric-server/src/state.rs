//! `--state-dir`: files that let scripts follow the fabric without speaking its protocol.
//!
//! * `ready` exists once the server accepts connections.
//! * `peer-<id>` exists while node `<id>` is connected and holds the client's pid and a
//!   newline (just the newline if the kernel could not tell the pid).
//!
//! Files are written under a dot-name and renamed into place, so a reader never sees a
//! half-written one. All of them are removed when the server exits.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

const READY: &str = "ready";
const PEER_PREFIX: &str = "peer-";
const TEMP_PREFIX: &str = ".tmp-";

pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    /// Creates the directory if needed and clears what a previous server that died without
    /// cleaning up left behind: a stale `peer-<id>` would claim a VM is connected.
    pub fn open(dir: &Path) -> Result<Self> {
        fs::create_dir_all(dir)
            .with_context(|| format!("creating state directory {}", dir.display()))?;
        let state = Self {
            dir: dir.to_path_buf(),
        };
        state
            .clear()
            .with_context(|| format!("clearing state directory {}", dir.display()))?;
        Ok(state)
    }

    pub fn mark_ready(&self) -> Result<()> {
        self.publish(READY, "")
            .with_context(|| format!("writing {}", self.dir.join(READY).display()))
    }

    pub fn peer_connected(&self, id: u32, pid: Option<i32>) -> io::Result<()> {
        let pid = pid.map(|p| p.to_string()).unwrap_or_default();
        self.publish(&format!("{PEER_PREFIX}{id}"), &format!("{pid}\n"))
    }

    pub fn peer_gone(&self, id: u32) -> io::Result<()> {
        remove_if_present(&self.dir.join(format!("{PEER_PREFIX}{id}")))
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn publish(&self, name: &str, contents: &str) -> io::Result<()> {
        let temp = self.dir.join(format!("{TEMP_PREFIX}{name}"));
        let mut file = fs::File::create(&temp)?;
        // No fsync: the files describe this server's lifetime and are cleared at the next
        // start, so surviving a host crash is of no use.
        file.write_all(contents.as_bytes())?;
        fs::rename(&temp, self.dir.join(name))
    }

    /// Removes only the names this server writes: the directory may be shared with the
    /// orchestration's own files.
    fn clear(&self) -> io::Result<()> {
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name == READY || is_peer_file(name) || name.starts_with(TEMP_PREFIX) {
                remove_if_present(&entry.path())?;
            }
        }
        Ok(())
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        if let Err(e) = self.clear() {
            log::warn!("cleaning state directory {}: {e}", self.dir.display());
        }
    }
}

fn is_peer_file(name: &str) -> bool {
    name.strip_prefix(PEER_PREFIX)
        .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_file_names() {
        assert!(is_peer_file("peer-0"));
        assert!(is_peer_file("peer-15"));
        assert!(!is_peer_file("peer-"));
        assert!(!is_peer_file("peer-1.log"));
        assert!(!is_peer_file("peers"));
    }
}
