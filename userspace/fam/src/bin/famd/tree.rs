//! famd's protection tree, kept across restarts. Every item's pages belong to the tree that
//! allocated them, and only that tree may free or grant them; GSAS pages outlive processes. So
//! the tree's id is written next to the store (`STATE.tree`) before the first allocation, and
//! a restarted famd joins it again (`SET_TREE`, which needs `CAP_SYS_ADMIN`). While any of the
//! tree's pages live, no node makes that id again (the live-tree map, docs/SECURITY.md), so
//! joining it joins famd's own pages and nobody else's. When the store holds no item, famd
//! starts in a fresh tree instead: an id with nothing alive may have been handed out again.

use anyhow::{bail, Context, Result};
use gsas::{Gsas, TreeSource};
use std::path::{Path, PathBuf};

/// The file that holds the tree id of the store at `state`.
pub fn file_of(state: &Path) -> PathBuf {
    let mut name = state.as_os_str().to_owned();
    name.push(".tree");
    PathBuf::from(name)
}

/// A GSAS handle in famd's tree: the saved one if the store has items, else a fresh one,
/// whose id is saved before this returns.
pub fn open(state: &Path, store_has_items: bool) -> Result<Gsas> {
    let file = file_of(state);
    let saved = read(&file)?;
    if store_has_items {
        let Some(id) = saved else {
            bail!(
                "{} holds items but {} is missing: their pages belong to a protection tree famd \
                 no longer knows, so it could neither free nor grant them (restore the file)",
                state.display(),
                file.display()
            );
        };
        let g = Gsas::open_in(TreeSource::Id(id))
            .with_context(|| format!("joining famd's protection tree {id:#x} (SET_TREE)"))?;
        log::info!(
            "famd: joined its protection tree {id:#x} (from {})",
            file.display()
        );
        return Ok(g);
    }
    let g = Gsas::open_in(TreeSource::Fresh).context("opening a GSAS handle in a fresh tree")?;
    let id = g.prot_id();
    write(&file, id)?;
    log::info!(
        "famd: protection tree {id:#x} (saved in {})",
        file.display()
    );
    Ok(g)
}

fn read(file: &Path) -> Result<Option<u32>> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let t = text.trim();
    let id = u32::from_str_radix(t.trim_start_matches("0x"), 16)
        .ok()
        .filter(|&id| id != 0 && id < 1 << 24)
        .with_context(|| format!("{}: {t:?} is not a protection tree id", file.display()))?;
    Ok(Some(id))
}

/// Writes the id to a temporary file, syncs it and renames it over `file`.
fn write(file: &Path, id: u32) -> Result<()> {
    use std::io::Write;
    let tmp = file.with_extension("tree.tmp");
    let mut f =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    writeln!(f, "{id:#08x}")
        .and_then(|_| f.sync_all())
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, file)
        .with_context(|| format!("renaming {} to {}", tmp.display(), file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_round_trips_and_junk_is_refused() {
        let dir = std::env::temp_dir().join(format!("famd-tree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("s.json.tree");
        assert_eq!(read(&f).unwrap(), None);
        write(&f, 0x02_0017).unwrap();
        assert_eq!(read(&f).unwrap(), Some(0x02_0017));
        std::fs::write(&f, "zz\n").unwrap();
        assert!(read(&f).is_err());
        std::fs::write(&f, "0x0\n").unwrap();
        assert!(read(&f).is_err());
        assert_eq!(
            file_of(Path::new("/a/b.json")),
            PathBuf::from("/a/b.json.tree")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
