//! Gather and scatter: elements of an item at strided or listed indices, to or from a
//! contiguous local buffer. Each element is a put or get; runs of adjacent elements (stride 1,
//! or consecutive indices) are merged into one.

use super::data::{check_range, get, put};
use super::memory::Memory;
use crate::meta::Item;
use crate::{FamError, Result};

/// Byte offsets of the elements: index `i` of `indices` at `i * element_size`.
fn offsets(
    item: &Item,
    indices: impl Iterator<Item = Option<u64>>,
    element_size: u64,
) -> Result<Vec<(u64, usize, usize)>> {
    if element_size == 0 {
        return Err(FamError::Invalid("element size 0".into()));
    }
    let es = usize::try_from(element_size)
        .map_err(|_| FamError::Invalid(format!("element size {element_size}")))?;
    // (item offset, buffer position, length), adjacent elements merged.
    let mut runs: Vec<(u64, usize, usize)> = Vec::new();
    for (i, idx) in indices.enumerate() {
        let off = idx
            .and_then(|x| x.checked_mul(element_size))
            .ok_or_else(|| FamError::OutOfRange(format!("element {i}'s offset overflows")))?;
        check_range(item, off, element_size)?;
        let pos = i * es;
        match runs.last_mut() {
            Some((o, p, n)) if *o + *n as u64 == off && *p + *n == pos => *n += es,
            _ => runs.push((off, pos, es)),
        }
    }
    Ok(runs)
}

fn strided(n: u64, first: u64, stride: u64) -> impl Iterator<Item = Option<u64>> {
    (0..n).map(move |i| i.checked_mul(stride).and_then(|s| s.checked_add(first)))
}

fn buffer_len(n: u64, element_size: u64, buf: usize) -> Result<()> {
    match n.checked_mul(element_size) {
        Some(b) if b <= buf as u64 => Ok(()),
        _ => Err(FamError::OutOfRange(format!(
            "{n} elements of {element_size} bytes do not fit a {buf}-byte buffer"
        ))),
    }
}

/// Which elements: `n` from `first` every `stride`, or listed.
#[derive(Debug, Clone, Copy)]
pub enum Elements<'a> {
    Stride { n: u64, first: u64, stride: u64 },
    Index(&'a [u64]),
}

impl Elements<'_> {
    /// How many elements.
    pub fn count(&self) -> u64 {
        match self {
            Elements::Stride { n, .. } => *n,
            Elements::Index(ix) => ix.len() as u64,
        }
    }

    fn runs(&self, item: &Item, element_size: u64) -> Result<Vec<(u64, usize, usize)>> {
        // OpenFAM refuses an empty gather or scatter rather than doing nothing.
        if self.count() == 0 {
            return Err(FamError::Invalid("no elements".into()));
        }
        match *self {
            Elements::Stride { n, first, stride } => {
                offsets(item, strided(n, first, stride), element_size)
            }
            Elements::Index(ix) => offsets(item, ix.iter().map(|&x| Some(x)), element_size),
        }
    }
}

/// Reads the elements into `buf`, back to back. Every offset is checked before anything moves.
pub fn gather(
    m: &dyn Memory,
    item: &Item,
    which: Elements<'_>,
    element_size: u64,
    buf: &mut [u8],
) -> Result<()> {
    buffer_len(which.count(), element_size, buf.len())?;
    for (off, pos, n) in which.runs(item, element_size)? {
        get(m, item, off, &mut buf[pos..pos + n])?;
    }
    Ok(())
}

/// Writes `buf`'s elements, back to back, to the item's elements.
pub fn scatter(
    m: &dyn Memory,
    item: &Item,
    which: Elements<'_>,
    element_size: u64,
    buf: &[u8],
) -> Result<()> {
    buffer_len(which.count(), element_size, buf.len())?;
    for (off, pos, n) in which.runs(item, element_size)? {
        put(m, item, off, &buf[pos..pos + n])?;
    }
    Ok(())
}
