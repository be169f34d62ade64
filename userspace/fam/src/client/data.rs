//! Put and get: bytes of an item moved with GSAS bulk reads and writes to the addresses of its
//! extents, split wherever the item's layout breaks contiguity ([`Item::locate`]: the end of a
//! stripe or of an extent). famd is not involved.

use super::memory::{gsas_error, Memory};
use crate::meta::Item;
use crate::{FamError, Result};
use unimem_wire::gsas;

/// Checks that bytes `offset .. offset + len` are inside the item.
pub fn check_range(item: &Item, offset: u64, len: u64) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= item.size => Ok(()),
        _ => Err(FamError::OutOfRange(format!(
            "{len} bytes at offset {offset} of a {}-byte item",
            item.size
        ))),
    }
}

/// The pieces of bytes `offset .. offset + len`: (GSAS address, position in the buffer,
/// length), in order. The range must be inside the item.
pub fn pieces(item: &Item, offset: u64, len: usize) -> Result<Vec<(u64, usize, usize)>> {
    check_range(item, offset, len as u64)?;
    let mut out = Vec::new();
    let mut done = 0usize;
    while done < len {
        let (addr, run) = locate(item, offset + done as u64)?;
        let n = (len - done).min(usize::try_from(run).unwrap_or(usize::MAX));
        out.push((addr, done, n));
        done += n;
    }
    Ok(out)
}

/// Where byte `at` of the item is, and how many bytes follow it there ([`Item::locate`]).
fn locate(item: &Item, at: u64) -> Result<(u64, u64)> {
    item.locate(at).ok_or_else(|| {
        FamError::Metadata(format!(
            "item {} has no memory at offset {at}: its extents do not cover it",
            item.id
        ))
    })
}

/// A transfer of no bytes is a mistake of the caller's: OpenFAM refuses it.
fn not_empty(len: u64, what: &str) -> Result<()> {
    if len == 0 {
        return Err(FamError::Invalid(format!("{what} of 0 bytes")));
    }
    Ok(())
}

/// Copies `buf.len()` bytes of the item from `offset` into `buf`.
pub fn get(m: &dyn Memory, item: &Item, offset: u64, buf: &mut [u8]) -> Result<()> {
    not_empty(buf.len() as u64, "fam_get")?;
    for (addr, at, n) in pieces(item, offset, buf.len())? {
        m.bulk_read(addr, &mut buf[at..at + n])
            .map_err(|e| gsas_error("fam_get", e))?;
    }
    Ok(())
}

/// Copies `data` into the item from `offset`.
pub fn put(m: &dyn Memory, item: &Item, offset: u64, data: &[u8]) -> Result<()> {
    not_empty(data.len() as u64, "fam_put")?;
    for (addr, at, n) in pieces(item, offset, data.len())? {
        m.bulk_write(addr, &data[at..at + n])
            .map_err(|e| gsas_error("fam_put", e))?;
    }
    Ok(())
}

/// Copies `len` bytes from one item to another (or within one). Each run whose source and
/// destination bytes are on one node is copied by that node's service (GSAS `COPY`: the bytes
/// do not come here, OpenFAM's memory-side copy); a run between two nodes is read here and
/// written there.
pub fn copy(
    m: &dyn Memory,
    src: &Item,
    src_offset: u64,
    dst: &Item,
    dst_offset: u64,
    len: u64,
) -> Result<()> {
    not_empty(len, "fam_copy")?;
    check_range(src, src_offset, len)?;
    check_range(dst, dst_offset, len)?;
    // Overlapping ranges of one item go backwards when the destination is after the source,
    // as memmove does.
    let backwards = src.id == dst.id && dst_offset > src_offset && dst_offset < src_offset + len;
    let runs = copy_runs(src, src_offset, dst, dst_offset, len)?;
    let mut buf = Vec::new();
    let mut each = |(n, s, d): (u64, u64, u64)| -> Result<()> {
        if gsas::node_of(s) == gsas::node_of(d) {
            return m.copy(d, s, n).map_err(|e| gsas_error("fam_copy", e));
        }
        buf.resize(n as usize, 0);
        m.bulk_read(s, &mut buf)
            .and_then(|_| m.bulk_write(d, &buf))
            .map_err(|e| gsas_error("fam_copy", e))
    };
    if backwards {
        runs.into_iter().rev().try_for_each(&mut each)
    } else {
        runs.into_iter().try_for_each(&mut each)
    }
}

/// The copy cut where either side changes stripe or extent (and at 64 KiB): (length, source
/// GSAS address, destination GSAS address) per run.
fn copy_runs(
    src: &Item,
    src_offset: u64,
    dst: &Item,
    dst_offset: u64,
    len: u64,
) -> Result<Vec<(u64, u64, u64)>> {
    const CHUNK: u64 = 64 << 10;
    let mut runs = Vec::new();
    let mut at = 0;
    while at < len {
        let (s, s_run) = locate(src, src_offset + at)?;
        let (d, d_run) = locate(dst, dst_offset + at)?;
        let n = s_run.min(d_run).min(len - at).min(CHUNK);
        runs.push((n, s, d));
        at += n;
    }
    Ok(runs)
}
