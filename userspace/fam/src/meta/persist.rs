//! The store's file: its whole state as JSON, replaced atomically after every change, so a
//! crash leaves either the old state or the new one, never half of either.
//!
//! Writing: a temporary file beside it (`.NAME.tmp`, same directory so the rename stays in
//! one file system), written and fsynced, renamed over the file, then the directory fsynced
//! so the rename itself survives a crash. Each change rewrites the whole file: fine for the
//! thousands of regions and items a metadata service holds, and it keeps the format one
//! readable document.
//!
//! Reading: a file that is not the store's JSON, or whose contents break the store's rules
//! (`Tables::from_parts`), is a [`FamError::Metadata`] naming the file and the problem.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::model::{Item, Region};
use super::tables::Tables;
use crate::error::{FamError, Result};

/// The format's version: a file of another version is refused, not guessed at.
const VERSION: u32 = 1;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Image {
    version: u32,
    next_region: u64,
    next_item: u64,
    regions: Vec<Region>,
    items: Vec<Item>,
}

/// [`Image`] borrowing the tables, so saving copies nothing.
#[derive(Serialize)]
struct ImageRef<'a> {
    version: u32,
    next_region: u64,
    next_item: u64,
    regions: Vec<&'a Region>,
    items: Vec<&'a Item>,
}

fn meta_err(path: &Path, what: impl std::fmt::Display) -> FamError {
    FamError::Metadata(format!("{}: {what}", path.display()))
}

/// The tables saved at `path`, or `None` if there is no such file.
pub(crate) fn load(path: &Path) -> Result<Option<Tables>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(meta_err(path, format_args!("cannot read: {e}"))),
    };
    let image: Image =
        serde_json::from_slice(&bytes).map_err(|e| meta_err(path, format_args!("corrupt: {e}")))?;
    if image.version != VERSION {
        return Err(meta_err(
            path,
            format_args!(
                "format version {} (this build reads {VERSION})",
                image.version
            ),
        ));
    }
    Tables::from_parts(
        image.next_region,
        image.next_item,
        image.regions,
        image.items,
    )
    .map(Some)
    .map_err(|e| meta_err(path, format_args!("inconsistent: {e}")))
}

/// Saves `tables` at `path`, atomically.
pub(crate) fn save(path: &Path, tables: &Tables) -> Result<()> {
    let image = ImageRef {
        version: VERSION,
        next_region: tables.next_region,
        next_item: tables.next_item,
        regions: tables.regions.values().collect(),
        items: tables.items.values().collect(),
    };
    let mut bytes = serde_json::to_vec_pretty(&image)
        .map_err(|e| meta_err(path, format_args!("cannot encode: {e}")))?;
    bytes.push(b'\n');
    write_atomically(path, &bytes).map_err(|e| meta_err(path, format_args!("cannot save: {e}")))
}

/// The temporary file `path` is written through.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_path(path);
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        // Best effort: a stale temporary file is harmless (the next save truncates it).
        let _ = fs::remove_file(&tmp);
        return written;
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}
