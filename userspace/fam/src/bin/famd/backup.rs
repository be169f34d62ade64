//! Backups of data items (OpenFAM's `fam_backup` / `fam_restore`): files in famd's backup
//! directory, on the node famd runs on. A backup is two files, `NAME.STAMP.data` (the item's
//! bytes) and `NAME.json` (what it was: item and region names, size, owner, group, mode, who
//! made it, when, and which data file holds it), each written to a temporary file, synced and
//! renamed, the description last: a backup whose description exists is whole. A new backup of
//! an existing name (OpenFAM's programs back up to the same name again) writes new data beside
//! the old, then its description replaces the old one in one rename: the old backup stays whole
//! until the new one is. famd reads and writes the bytes through its own GSAS
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

/// The longest ".STAMP.data" a data file's name adds to the backup's.
const DATA_SUFFIX_MAX: usize = ".18446744073709551616.data".len();

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
    /// The file (in the backup directory) that holds the bytes; empty in backups made before
    /// names were replaceable, whose bytes are in `NAME.data`.
    #[serde(default)]
    pub data: String,
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

    /// Where the bytes of backup `meta` are.
    fn data_path(&self, meta: &Meta) -> fam::Result<PathBuf> {
        if meta.data.is_empty() {
            return Ok(self.paths(&meta.name)?.0);
        }
        // Only famd writes descriptions, but a file name is all it may be.
        if meta.data.starts_with('.') || meta.data.contains(['/', '\0']) {
            return Err(FamError::Metadata(format!(
                "backup {:?}: data file {:?} is not a file name",
                meta.name, meta.data
            )));
        }
        Ok(self.dir.join(&meta.data))
    }

    /// Backs `item` (of region `region`) up as `name`. The caller needs read on the item, and
    /// to replace an existing backup of that name the right to delete it.
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
        let (_, desc) = self.paths(name)?;
        let old = if desc.exists() {
            Some(self.deletable(creds, name, "replacing")?)
        } else {
            None
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        // A stamp no earlier backup of this name has: the old data stays until the new
        // description is in place.
        let mut stamp = now.as_nanos() as u64;
        let data_name = loop {
            let n = format!("{name}.{stamp}.data");
            if !self.dir.join(&n).exists() {
                break n;
            }
            stamp += 1;
        };
        let data = self.dir.join(&data_name);
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
            created: now.as_secs(),
            data: data_name,
        };
        let text = serde_json::to_vec_pretty(&meta)
            .map_err(|e| FamError::BackupNotCreated(format!("describing {name:?}: {e}")))?;
        write_atomically(&desc, &text).inspect_err(|_| {
            let _ = std::fs::remove_file(&data);
        })?;
        if let Some(old) = &old {
            if let Ok(p) = self.data_path(old) {
                let _ = std::fs::remove_file(p);
            }
        }
        log::info!(
            "famd: backed up item {} ({} bytes) as {name:?} for uid {}{}",
            item.id,
            item.size,
            creds.uid,
            if old.is_some() {
                ", replacing the old"
            } else {
                ""
            }
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
        let data = self.data_path(&meta)?;
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

    /// The description of backup `name` if the caller may delete or replace it (`what`): its
    /// maker, the owner of the item it was, or an administrator.
    fn deletable(&self, creds: &Creds, name: &str, what: &str) -> fam::Result<Meta> {
        let meta = self.meta(&Creds::admin(creds.uid, creds.gid), name)?;
        if !(creds.admin || creds.uid == meta.by || creds.uid == meta.uid) {
            return Err(FamError::NoPerm(format!("{what} backup {name:?}")));
        }
        Ok(meta)
    }

    /// Deletes backup `name` (see [`Self::deletable`] for who may).
    pub fn delete(&self, creds: &Creds, name: &str) -> fam::Result<()> {
        let meta = self.deletable(creds, name, "deleting")?;
        let (_, desc) = self.paths(name)?;
        // The description first: without it the backup no longer exists.
        std::fs::remove_file(&desc)
            .map_err(|e| FamError::Metadata(format!("{}: {e}", desc.display())))?;
        if let Ok(data) = self.data_path(&meta) {
            let _ = std::fs::remove_file(data);
        }
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

/// Whether `name` matches `pattern` (`*`: any run of bytes, `?`: one byte). Backtracks only to
/// the last `*`, so it takes at most len(pattern) × len(name) steps: a pattern of many stars
/// from a user cannot keep famd (which serves one request at a time) busy for ever.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    // After the last `*` seen: the pattern index past it and the name index it matched to.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p + 1, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                // Let that `*` take one more byte.
                Some((sp, sn)) => {
                    star = Some((sp, sn + 1));
                    p = sp;
                    n = sn + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// A backup name is one file name: not empty, no `/`, NUL or leading `.`.
fn check_name(name: &str) -> fam::Result<()> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\0', '*', '?']) {
        return Err(FamError::Invalid(format!(
            "backup name {name:?}: a file name, not empty, without '/', '*', '?' or a leading '.'"
        )));
    }
    // Its files add ".STAMP.data" (a stamp of at most 20 digits) or ".json" to it, and file
    // names stop at NAME_MAX bytes.
    if name.len() + DATA_SUFFIX_MAX > fam::meta::NAME_MAX {
        return Err(FamError::NameTooLong(format!(
            "backup name of {} bytes (at most {})",
            name.len(),
            fam::meta::NAME_MAX - DATA_SUFFIX_MAX
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
        assert!(glob(b"a*b*c", b"aXbYbZc"));
        assert!(!glob(b"a*b*c", b"aXbYbZ"));
        assert!(glob(b"**", b"x"));
        assert!(glob(b"*?", b"x"));
        assert!(!glob(b"*?", b""));
    }

    /// A hostile pattern: exponential for a naive backtracking matcher (this one took minutes
    /// before), a moment now.
    #[test]
    fn many_stars_are_cheap() {
        let pattern = [b"*a".repeat(40), b"b".to_vec()].concat();
        let name = b"a".repeat(250);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(glob(&pattern, &name)));
        let matched = rx.recv_timeout(std::time::Duration::from_secs(30));
        assert_eq!(matched, Ok(false), "still matching after 30 s");
    }
}
