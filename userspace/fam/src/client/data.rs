//! Put and get: bytes of an item moved with GSAS bulk reads and writes to the addresses of its
//! extents, split wherever the item's layout breaks contiguity ([`Item::locate`]: the end of a
//! stripe or of an extent). famd is not involved.

use super::memory::{gsas_error, Memory};
use crate::meta::Item;
use crate::{FamError, Result};

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
        let at = offset + done as u64;
        let (addr, run) = item.locate(at).ok_or_else(|| {
            FamError::Metadata(format!(
                "item {} has no memory at offset {at}: its extents do not cover it",
                item.id
            ))
        })?;
        let n = (len - done).min(usize::try_from(run).unwrap_or(usize::MAX));
        out.push((addr, done, n));
        done += n;
    }
    Ok(out)
}

/// Copies `buf.len()` bytes of the item from `offset` into `buf`.
pub fn get(m: &dyn Memory, item: &Item, offset: u64, buf: &mut [u8]) -> Result<()> {
    for (addr, at, n) in pieces(item, offset, buf.len())? {
        m.bulk_read(addr, &mut buf[at..at + n])
            .map_err(|e| gsas_error("fam_get", e))?;
    }
    Ok(())
}

/// Copies `data` into the item from `offset`.
pub fn put(m: &dyn Memory, item: &Item, offset: u64, data: &[u8]) -> Result<()> {
    for (addr, at, n) in pieces(item, offset, data.len())? {
        m.bulk_write(addr, &data[at..at + n])
            .map_err(|e| gsas_error("fam_put", e))?;
    }
    Ok(())
}

/// Copies `len` bytes from one item to another (or within one), through this process: a
/// page at a time read, then written.
pub fn copy(
    m: &dyn Memory,
    src: &Item,
    src_offset: u64,
    dst: &Item,
    dst_offset: u64,
    len: u64,
) -> Result<()> {
    check_range(src, src_offset, len)?;
    check_range(dst, dst_offset, len)?;
    const CHUNK: u64 = 64 << 10;
    let mut buf = vec![0u8; CHUNK.min(len) as usize];
    // Overlapping ranges of one item copied backwards when the destination is after the
    // source, as memmove does.
    let backwards = src.id == dst.id && dst_offset > src_offset && dst_offset < src_offset + len;
    let mut chunks: Vec<u64> = (0..len).step_by(CHUNK as usize).collect();
    if backwards {
        chunks.reverse();
    }
    for at in chunks {
        let n = CHUNK.min(len - at) as usize;
        get(m, src, src_offset + at, &mut buf[..n])?;
        put(m, dst, dst_offset + at, &buf[..n])?;
    }
    Ok(())
}
