// SPDX-License-Identifier: GPL-2.0
//! Fixed-capacity lists: how decoded messages hold lenders and extents without allocating.

use core::ops::Deref;

use super::{Extent, MAX_EXTENTS, MAX_LENDERS};

/// At most `N` values in place: a list without allocation. Reads as a slice.
#[derive(Clone, Copy)]
pub struct Bounded<T: Copy + Default, const N: usize> {
    len: usize,
    items: [T; N],
}

/// A region's lenders.
pub type Lenders = Bounded<u16, MAX_LENDERS>;
/// Extents of one reply.
pub type Extents = Bounded<Extent, MAX_EXTENTS>;

impl<T: Copy + Default, const N: usize> Bounded<T, N> {
    /// Empty.
    pub fn new() -> Self {
        Bounded {
            len: 0,
            items: [T::default(); N],
        }
    }

    /// All of `values`, or `None` if there are more than `N`.
    pub fn from_slice(values: &[T]) -> Option<Self> {
        (values.len() <= N).then(|| Self::prefix(values))
    }

    /// The first (at most) `N` of `values`: an item description's first extents.
    pub fn prefix(values: &[T]) -> Self {
        let mut b = Self::new();
        let n = values.len().min(N);
        b.items[..n].copy_from_slice(&values[..n]);
        b.len = n;
        b
    }

    /// Appends `v`; `false` (and nothing changes) when full.
    pub fn push(&mut self, v: T) -> bool {
        let Some(slot) = self.items.get_mut(self.len) else {
            return false;
        };
        *slot = v;
        self.len += 1;
        true
    }

    pub fn as_slice(&self) -> &[T] {
        &self.items[..self.len]
    }
}

impl<T: Copy + Default, const N: usize> Default for Bounded<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default, const N: usize> Deref for Bounded<T, N> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

// Equal when the lists are: what lies past `len` is not part of the value.
impl<T: Copy + Default + PartialEq, const N: usize> PartialEq for Bounded<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Default + Eq, const N: usize> Eq for Bounded<T, N> {}

impl<T: Copy + Default + core::fmt::Debug, const N: usize> core::fmt::Debug for Bounded<T, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.as_slice().fmt(f)
    }
}
