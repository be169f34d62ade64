//! Backups of data items (OpenFAM's `fam_backup` / `fam_restore`): files in famd's backup
//! directory, on the node famd runs on. A backup is two files, `NAME.data` (the item's bytes)
//! and `NAME.json` (what it was: item and region names, size, owner, group, mode, who made it,
//! when), each written to a temporary file, synced and renamed, the description last: a backup
//! whose description exists is whole. famd reads and writes the bytes through its own GSAS
//! handle (its tree owns every item's pages), after checking the caller's rights: read on the
//! item to back it up, read on the backup and write on the item to restore.

use crate::serve::Pages;
use fam::meta::perm::{self, Access};
use fam::meta::{Creds, Item};
use fam::FamError;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Bytes moved per GSAS transfer loop step.
const CHUNK: usize = 64 << 10;

/// What a backup holds, written beside its bytes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Meta {
    pub name: String,
    pub item: String,
    pub region: String,
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
    /// The uid that made it (may delete it, as may the item's owner and administrators).
    pub by: u32,
    /// Seconds since the epoch.
    pub created: u64,
}

/// The backup directory.
pub struct Backups {
    dir: PathBuf,
}

impl Backups {
    pub fn new(dir: PathBuf) -> Backups {
        Backups { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn paths(&self, name: &str) -> fam::Result<(PathBuf, PathBuf)> {
        check_name(name)?;
        Ok((
            self.dir.join(format!("{name}.data")),
            self.dir.join(format!("{name}.json")),
        ))
    }

    /// Backs `item` (of region `region`) up as `name`. The caller needs read on the item.
    pub fn create(
        &self,
        pages: &mut dyn Pages,
        creds: &Creds,
        item: &Item,
        region: &str,
        name: &str,
    ) -> fam::Result<()> {
        if !perm::allowed(creds, item.uid, item.gid, item.mode, Access::Read) {
            return Err(FamError::NoPerm(format!(
                "reading item {} to back it up",
                item.id
            )));
        }
        let (data, desc) = self.paths(name)?;
        if desc.exists() {
            return Err(FamError::BackupNotCreated(format!(
                "backup {name:?} exists"
            )));
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| not_created(&self.dir, e))?;
        let tmp = tmp_of(&data);
        let written = (|| {
            let mut f = File::create(&tmp).map_err(|e| not_created(&tmp, e))?;
            let mut buf = vec![0u8; CHUNK];
            let mut off = 0;
            while off < item.size {
                let (addr, n) = piece(item, off)?;
                let b = &mut buf[..n];
                pages.read(addr, b)?;
                f.write_all(b).map_err(|e| not_created(&tmp, e))?;
                off += n as u64;
            }
            f.sync_all().map_err(|e| not_created(&tmp, e))?;
            std::fs::rename(&tmp, &data).map_err(|e| not_created(&data, e))
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        let meta = Meta {
            name: name.to_string(),
            item: item.name.clone(),
            region: region.to_string(),
            size: item.size,
            uid: item.uid,
            gid: item.gid,
            mode: item.mode,
            by: creds.uid,
            created: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        let text = serde_json::to_vec_pretty(&meta)
            .map_err(|e| FamError::BackupNotCreated(format!("describing {name:?}: {e}")))?;
        write_atomically(&desc, &text).inspect_err(|_| {
            let _ = std::fs::remove_file(&data);
        })?;
        log::info!(
            "famd: backed up item {} ({} bytes) as {name:?} for uid {}",
            item.id,
            item.size,
            creds.uid
        );
        Ok(())
    }

    /// The description of backup `name`, if the caller may read it.
    pub fn meta(&self, creds: &Creds, name: &str) -> fam::Result<Meta> {
        let (_, desc) = self.paths(name)?;
        let text = match std::fs::read(&desc) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(FamError::BackupNotFound(format!("backup {name:?}")))
            }
            Err(e) => return Err(FamError::Metadata(format!("{}: {e}", desc.display()))),
        };
        let meta: Meta = serde_json::from_slice(&text)
            .map_err(|e| FamError::Metadata(format!("{}: {e}", desc.display())))?;
        if !perm::allowed(creds, meta.uid, meta.gid, meta.mode, Access::Read) {
            return Err(FamError::NoPerm(format!("reading backup {name:?}")));
        }
        Ok(meta)
    }

    /// Writes backup `name` into `item` from its start. The caller needs read on the backup
    /// and write on the item, which must be at least as large.
    pub fn restore(
        &self,
        pages: &mut dyn Pages,
        creds: &Creds,
        name: &str,
        item: &Item,
    ) -> fam::Result<()> {
        let meta = self.meta(creds, name)?;
        if !perm::allowed(creds, item.uid, item.gid, item.mode, Access::Write) {
            return Err(FamError::NoPerm(format!(
                "writing item {} to restore {name:?}",
                item.id
            )));
        }
        if meta.size > item.size {
            return Err(FamError::OutOfRange(format!(
                "backup {name:?} holds {} bytes, item {} only {}",
                meta.size, item.id, item.size
            )));
        }
        let (data, _) = self.paths(name)?;
        let mut f = File::open(&data)
            .map_err(|e| FamError::Metadata(format!("{}: {e}", data.display())))?;
        let mut buf = vec![0u8; CHUNK];
        let mut off = 0;
        while off < meta.size {
            let (addr, n) = piece(item, off)?;
            let n = n.min((meta.size - off) as usize);
            let b = &mut buf[..n];
            f.read_exact(b)
                .map_err(|e| FamError::Metadata(format!("{}: {e}", data.display())))?;
            pages.write(addr, b)?;
            off += n as u64;
        }
        log::info!(
            "famd: restored {name:?} into item {} for uid {}",
            item.id,
            creds.uid
        );
        Ok(())
    }

    /// Deletes backup `name`: its maker, the owner of the item it was, or an administrator.
    pub fn delete(&self, creds: &Creds, name: &str) -> fam::Result<()> {
        let meta = self.meta(&Creds::admin(creds.uid, creds.gid), name)?;
        if !(creds.admin || creds.uid == meta.by || creds.uid == meta.uid) {
            return Err(FamError::NoPerm(format!("deleting backup {name:?}")));
        }
        let (data, desc) = self.paths(name)?;
        // The description first: without it the backup no longer exists.
        std::fs::remove_file(&desc)
            .map_err(|e| FamError::Metadata(format!("{}: {e}", desc.display())))?;
        let _ = std::fs::remove_file(&data);
        Ok(())
    }

    /// One line per backup the caller may read: `name` empty or a pattern (`*` any run of
    /// characters, `?` one, as OpenFAM's `fam_list_backup("*")` asks), every match; else that
    /// backup, `FAM_BACKUP_NOTFOUND` if missing. Cut to `max` bytes.
    pub fn list(&self, creds: &Creds, name: &str, max: usize) -> fam::Result<String> {
        let mut metas = Vec::new();
        if name.is_empty() || name.contains(['*', '?']) {
            let entries = match std::fs::read_dir(&self.dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
                Err(e) => return Err(FamError::Metadata(format!("{}: {e}", self.dir.display()))),
            };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
                .filter(|n| name.is_empty() || glob(name.as_bytes(), n.as_bytes()))
                .collect();
            names.sort();
            for n in names {
                if let Ok(m) = self.meta(creds, &n) {
                    metas.push(m);
                }
            }
        } else {
            metas.push(self.meta(creds, name)?);
        }
        let mut out = String::new();
        for m in metas {
            let line = format!(
                "{} size={} item={} region={} uid={} gid={} mode={:04o} created={}\n",
                m.name, m.size, m.item, m.region, m.uid, m.gid, m.mode, m.created
            );
            if out.len() + line.len() > max {
                break;
            }
            out.push_str(&line);
        }
        Ok(out)
    }
}

/// Whether `name` matches `pattern` (`*`: any run of bytes, `?`: one byte).
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob(&pattern[1..], name) || (!name.is_empty() && glob(pattern, &name[1..]))
        }
        (Some(b'?'), Some(_)) => glob(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) if p == n => glob(&pattern[1..], &name[1..]),
        _ => false,
    }
}

/// A backup name is one file name: not empty, no `/`, NUL or leading `.`.
fn check_name(name: &str) -> fam::Result<()> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\0', '*', '?']) {
        return Err(FamError::Invalid(format!(
            "backup name {name:?}: a file name, not empty, without '/', '*', '?' or a leading '.'"
        )));
    }
    // Its files add ".data" or ".json" to it, and file names stop at NAME_MAX bytes.
    if name.len() + ".data".len() > fam::meta::NAME_MAX {
        return Err(FamError::NameTooLong(format!(
            "backup name of {} bytes (at most {})",
            name.len(),
            fam::meta::NAME_MAX - ".data".len()
        )));
    }
    Ok(())
}

/// Where byte `off` of `item` is and how many bytes of at most [`CHUNK`] follow it there.
fn piece(item: &Item, off: u64) -> fam::Result<(u64, usize)> {
    let (addr, run) = item
        .locate(off)
        .ok_or_else(|| FamError::Metadata(format!("item {} has no byte {off}", item.id)))?;
    Ok((addr, run.min(CHUNK as u64) as usize))
}

fn tmp_of(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

fn not_created(p: &Path, e: std::io::Error) -> FamError {
    FamError::BackupNotCreated(format!("{}: {e}", p.display()))
}

fn write_atomically(p: &Path, bytes: &[u8]) -> fam::Result<()> {
    let tmp = tmp_of(p);
    let r = File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, p));
    r.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        not_created(p, e)
    })
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn patterns() {
        assert!(glob(b"*", b"anything"));
        assert!(glob(b"*", b""));
        assert!(glob(b"b*_1", b"backup_1"));
        assert!(!glob(b"b*_1", b"backup_2"));
        assert!(glob(b"?a*", b"xab"));
        assert!(!glob(b"?", b""));
        assert!(glob(b"exact", b"exact"));
        assert!(!glob(b"exact", b"exactly"));
    }
}
