//! The registry of running service levels: one file per process group, named by its pgid,
//! holding its `ServiceLevel`. A file outlives its group (the command was exec'd, nobody is
//! left to remove it), so readers treat entries of dead groups as stale and remove them.

use crate::service_level::ServiceLevel;
use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use nix::sys::signal::kill;
use nix::unistd::Pid;
use std::fs::{self, File};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

pub const DEFAULT_DIR: &str = "/run/unimem/service-levels";

/// Whether any process of group `pgid` exists. EPERM means it exists but is someone else's.
pub fn group_alive(pgid: i32) -> bool {
    pgid > 0 && !matches!(kill(Pid::from_raw(-pgid), None), Err(Errno::ESRCH))
}

pub struct Registry {
    dir: PathBuf,
}

impl Registry {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, pgid: i32) -> PathBuf {
        self.dir.join(pgid.to_string())
    }

    /// Serialises check-then-register between concurrent `run`s; released on drop, and at
    /// exec since std opens files close-on-exec.
    pub fn lock(&self) -> Result<Flock<File>> {
        fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating the registry {}", self.dir.display()))?;
        let path = self.dir.join(".lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .with_context(|| format!("locking {}", path.display()))
    }

    /// The level registered for `pgid`, if any.
    pub fn get(&self, pgid: i32) -> Result<Option<ServiceLevel>> {
        let path = self.path(pgid);
        match fs::read_to_string(&path) {
            Ok(text) => Ok(Some(
                text.parse()
                    .with_context(|| format!("parsing {}", path.display()))?,
            )),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Entries of live groups, by pgid. Entries of dead groups are removed (best effort: a
    /// reader without write access only skips them); unparsable ones are skipped with a
    /// warning.
    pub fn live(&self) -> Result<Vec<(i32, ServiceLevel)>> {
        let rd = match fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("listing {}", self.dir.display())),
        };
        let mut out = Vec::new();
        for entry in rd {
            let entry = entry.with_context(|| format!("listing {}", self.dir.display()))?;
            let Some(pgid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            if !group_alive(pgid) {
                log::info!("removing stale entry of process group {pgid}, which has exited");
                if let Err(e) = fs::remove_file(entry.path()) {
                    log::warn!("removing {}: {e}", entry.path().display());
                }
                continue;
            }
            match self.get(pgid) {
                Ok(Some(level)) => out.push((pgid, level)),
                Ok(None) => {}
                Err(e) => log::warn!("skipping: {e:#}"),
            }
        }
        out.sort_by_key(|(pgid, _)| *pgid);
        Ok(out)
    }

    /// Writes `pgid`'s entry; written aside and renamed so readers never see half a file.
    pub fn record(&self, pgid: i32, level: &ServiceLevel) -> Result<()> {
        let tmp = self.dir.join(format!(".{pgid}.tmp"));
        fs::write(&tmp, format!("{level}\n"))
            .and_then(|()| fs::rename(&tmp, self.path(pgid)))
            .with_context(|| format!("recording {}", self.path(pgid).display()))
    }

    pub fn remove(&self, pgid: i32) -> Result<()> {
        match fs::remove_file(self.path(pgid)) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing {}", self.path(pgid).display()))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service_level::Ratio;

    #[test]
    fn liveness() {
        assert!(group_alive(nix::unistd::getpgrp().as_raw()));
        // Above any pid_max (at most 2^22), so no such group.
        assert!(!group_alive(i32::MAX));
        assert!(!group_alive(0));
    }

    #[test]
    fn record_list_prune() {
        let dir = std::env::temp_dir().join(format!("unimem-registry-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let reg = Registry::new(&dir);
        assert!(
            reg.live().unwrap().is_empty(),
            "a missing registry is empty"
        );
        let _lock = reg.lock().unwrap();
        let me = nix::unistd::getpgrp().as_raw();
        let level = ServiceLevel::new(1, 0, Ratio::new(1, 3).unwrap()).unwrap();
        reg.record(me, &level).unwrap();
        reg.record(i32::MAX, &level).unwrap();
        fs::write(dir.join("notes"), "not an entry").unwrap();
        assert_eq!(reg.live().unwrap(), vec![(me, level)]);
        assert!(
            !dir.join(i32::MAX.to_string()).exists(),
            "stale entry removed"
        );
        assert_eq!(reg.get(me).unwrap(), Some(level));
        reg.remove(me).unwrap();
        reg.remove(me).unwrap();
        assert_eq!(reg.get(me).unwrap(), None);
        fs::remove_dir_all(&dir).unwrap();
    }
}
