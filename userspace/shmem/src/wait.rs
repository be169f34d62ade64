//! OpenSHMEM 1.5 point-to-point synchronization on several variables: the
//! `shmem_TYPENAME_wait_until_{all,any,some}[_vector]` and `shmem_TYPENAME_test_{all,any,some}
//! [_vector]` families, and `shmem_signal_wait_until`. As the 1.4 `shmem_wait_until` of
//! shmem.h, they look at the calling PE's own symmetric variables with plain (volatile) loads:
//! every put and atomic another PE makes lands in the memory mapped here (the node's GSAS
//! pages, written by its service or by this node's CPU), so there is nothing to fetch. A wait
//! looks again after each yield of the CPU ([`crate::coll::spin_until`], which also leaves a
//! job that was aborted).
//!
//! The test set is `ivars[0..nelems]` less the entries whose `status` is nonzero (`status` may
//! be NULL: every entry is in). An empty set is immediately "all satisfied" (wait_until_all
//! returns, test_all returns 1), "none found" for any (`SIZE_MAX`) and some (0).

use std::ffi::c_int;
use std::sync::atomic::{fence, Ordering};

/// The comparison operators (`SHMEM_CMP_*` in shmem.h).
pub mod cmp {
    pub const EQ: i32 = 0;
    pub const NE: i32 = 1;
    pub const GT: i32 = 2;
    pub const LE: i32 = 3;
    pub const LT: i32 = 4;
    pub const GE: i32 = 5;
}

/// Which routine of a family (`kind` of `unimem_shmem_wait15`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    All,
    Any,
    Some,
}

impl Kind {
    pub fn from_code(c: c_int) -> Option<Kind> {
        match c {
            0 => Some(Kind::All),
            1 => Some(Kind::Any),
            2 => Some(Kind::Some),
            _ => None,
        }
    }
}

/// The element type of `ivars`: its size (2, 4 or 8 bytes) and whether it is signed. shmem.h
/// passes `sizeof(T) | 0x100` for signed types (`_SHMEM_WAIT_TY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ty {
    pub size: usize,
    pub signed: bool,
}

impl Ty {
    pub fn from_code(c: c_int) -> Option<Ty> {
        let size = (c & 0xff) as usize;
        let signed = c & 0x100 != 0;
        (c & !0x1ff == 0 && matches!(size, 2 | 4 | 8)).then_some(Ty { size, signed })
    }

    /// The element at `addr` (aligned, readable), widened so that every type compares right.
    ///
    /// # Safety
    /// `addr` points to a readable, aligned element of this type.
    pub unsafe fn load(self, addr: usize) -> i128 {
        // SAFETY: the caller's contract; volatile, as another PE or thread changes it.
        unsafe {
            match (self.size, self.signed) {
                (2, true) => i128::from((addr as *const i16).read_volatile()),
                (2, false) => i128::from((addr as *const u16).read_volatile()),
                (4, true) => i128::from((addr as *const i32).read_volatile()),
                (4, false) => i128::from((addr as *const u32).read_volatile()),
                (8, true) => i128::from((addr as *const i64).read_volatile()),
                _ => i128::from((addr as *const u64).read_volatile()),
            }
        }
    }
}

/// `a cmp b`; `None` for an unknown operator.
pub fn compare(a: i128, op: i32, b: i128) -> Option<bool> {
    Some(match op {
        cmp::EQ => a == b,
        cmp::NE => a != b,
        cmp::GT => a > b,
        cmp::LE => a <= b,
        cmp::LT => a < b,
        cmp::GE => a >= b,
        _ => return None,
    })
}

/// What to compare each element with.
#[derive(Debug, Clone, Copy)]
pub enum Values {
    /// One value for every element (`cmp_value`), at this address.
    One(usize),
    /// `cmp_values[i]` for `ivars[i]` (the `_vector` forms): the array's address.
    Each(usize),
}

/// One call's arguments, checked: addresses of the caller's arrays.
#[derive(Debug, Clone, Copy)]
pub struct Set {
    pub ty: Ty,
    pub ivars: usize,
    pub nelems: usize,
    /// NULL (0): every element is in the test set.
    pub status: usize,
    pub cmp: i32,
    pub values: Values,
}

thread_local! {
    /// Where the next `any` scan starts: after the index the last one returned, so that a
    /// series of calls reaches every satisfied entry (the spec's "eventually return i") even
    /// when an earlier one stays satisfied and the caller does not exclude it.
    static NEXT_ANY: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Set {
    /// Checks what can be checked: the operator, the alignment of the arrays.
    pub fn check(&self) -> Result<(), String> {
        if compare(0, self.cmp, 0).is_none() {
            return Err(format!("unknown comparison operator {}", self.cmp));
        }
        if self.nelems > 0 {
            if self.ivars == 0 {
                return Err("ivars is NULL".into());
            }
            if self.ivars % self.ty.size != 0 {
                return Err(format!(
                    "ivars {:#x} is not aligned to its {} bytes",
                    self.ivars, self.ty.size
                ));
            }
            if let Values::Each(0) = self.values {
                return Err("cmp_values is NULL".into());
            }
        }
        Ok(())
    }

    fn included(&self, i: usize) -> bool {
        // SAFETY: status, when not NULL, holds nelems ints (the caller's contract).
        self.status == 0 || unsafe { *(self.status as *const c_int).add(i) } == 0
    }

    /// Whether the test set is empty (no element, or all excluded by status).
    pub fn is_empty(&self) -> bool {
        !(0..self.nelems).any(|i| self.included(i))
    }

    /// Whether element `i` satisfies its condition now.
    fn satisfied(&self, i: usize) -> bool {
        let sz = self.ty.size;
        // SAFETY: ivars holds nelems elements, cmp_value(s) one or nelems (the caller's
        // contract; checked aligned for ivars).
        let (v, want) = unsafe {
            let want = match self.values {
                Values::One(p) => self.ty.load_unaligned(p),
                Values::Each(p) => self.ty.load_unaligned(p + i * sz),
            };
            (self.ty.load(self.ivars + i * sz), want)
        };
        compare(v, self.cmp, want).unwrap_or(false)
    }

    /// One look, as the `test` routines: all: 1 if every element of the set is satisfied (an
    /// empty set included), else 0; any: the index of a satisfied element, else `usize::MAX`
    /// (SIZE_MAX); some: how many are satisfied, their indices written to `indices`.
    ///
    /// # Safety
    /// The arrays are as [`Set`] describes them; `indices` holds `nelems` (for some).
    pub unsafe fn test(&self, kind: Kind, indices: *mut usize) -> usize {
        let r = match kind {
            Kind::All => {
                usize::from((0..self.nelems).all(|i| !self.included(i) || self.satisfied(i)))
            }
            Kind::Any => {
                let n = self.nelems;
                let start = NEXT_ANY.with(|c| c.get()) % n.max(1);
                let found = (0..n)
                    .map(|k| (start + k) % n)
                    .find(|&i| self.included(i) && self.satisfied(i));
                if let Some(i) = found {
                    NEXT_ANY.with(|c| c.set(i + 1));
                }
                found.unwrap_or(usize::MAX)
            }
            Kind::Some => {
                let mut count = 0;
                for i in 0..self.nelems {
                    if self.included(i) && self.satisfied(i) {
                        // SAFETY: indices holds nelems entries (the caller's contract).
                        unsafe { *indices.add(count) = i };
                        count += 1;
                    }
                }
                count
            }
        };
        if found(kind, r) {
            // What the satisfied variables guard is read after them.
            fence(Ordering::SeqCst);
        }
        r
    }

    /// The `wait_until` routines: looks until [`test`](Self::test) finds what `kind` waits for,
    /// calling `poll` between looks; returns at once on an empty set (all: 1, any: SIZE_MAX,
    /// some: 0). The result is `test`'s.
    ///
    /// # Safety
    /// As [`test`](Self::test).
    pub unsafe fn wait(&self, kind: Kind, indices: *mut usize, mut poll: impl FnMut()) -> usize {
        if self.is_empty() {
            // SAFETY: forwarded.
            return unsafe { self.test(kind, indices) };
        }
        loop {
            // SAFETY: forwarded.
            let r = unsafe { self.test(kind, indices) };
            if found(kind, r) {
                return r;
            }
            poll();
        }
    }
}

/// Whether a result of `test` is a success.
fn found(kind: Kind, r: usize) -> bool {
    match kind {
        Kind::All => r == 1,
        Kind::Any => r != usize::MAX,
        Kind::Some => r > 0,
    }
}

impl Ty {
    /// As [`load`](Self::load) for a value that may be unaligned (a `cmp_values` array is, in
    /// C, aligned anyway; a `cmp_value` is the header's local copy).
    ///
    /// # Safety
    /// `addr` points to `size` readable bytes.
    unsafe fn load_unaligned(self, addr: usize) -> i128 {
        let mut b = [0u8; 8];
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, b.as_mut_ptr(), self.size) };
        let u = u64::from_le_bytes(b);
        let bits = self.size as u32 * 8;
        if self.signed && bits < 64 {
            let shift = 64 - bits;
            i128::from(((u << shift) as i64) >> shift)
        } else if self.signed {
            i128::from(u as i64)
        } else {
            i128::from(u)
        }
    }
}

/// `shmem_signal_wait_until`: waits until the 64-bit word at `addr` satisfies `op value`
/// (unsigned), calling `poll` between looks; the value that did.
///
/// # Safety
/// `addr` is an aligned, readable `uint64_t`.
pub unsafe fn signal_wait_until(addr: usize, op: i32, value: u64, mut poll: impl FnMut()) -> u64 {
    let ty = Ty {
        size: 8,
        signed: false,
    };
    loop {
        // SAFETY: the caller's contract.
        let v = unsafe { ty.load(addr) };
        if compare(v, op, i128::from(value)).unwrap_or(false) {
            fence(Ordering::SeqCst);
            return v as u64;
        }
        poll();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::null_mut;

    fn set<T>(ivars: &[T], status: Option<&[c_int]>, op: i32, values: Values, ty: Ty) -> Set {
        Set {
            ty,
            ivars: ivars.as_ptr() as usize,
            nelems: ivars.len(),
            status: status.map_or(0, |s| s.as_ptr() as usize),
            cmp: op,
            values,
        }
    }

    const I32: Ty = Ty {
        size: 4,
        signed: true,
    };

    #[test]
    fn type_codes() {
        assert_eq!(Ty::from_code(0x104), Some(I32));
        assert_eq!(
            Ty::from_code(2),
            Some(Ty {
                size: 2,
                signed: false
            })
        );
        assert_eq!(Ty::from_code(3), None);
        assert_eq!(Ty::from_code(0x208), None);
        assert_eq!(Kind::from_code(3), None);
    }

    #[test]
    fn all_any_some_with_status() {
        let v: [i32; 5] = [1, 0, 1, 0, 1];
        let one = 1i32;
        let ones = Values::One(&one as *const i32 as usize);
        let s = set(&v, None, cmp::EQ, ones, I32);
        let mut idx = [99usize; 5];
        unsafe {
            assert_eq!(s.test(Kind::All, null_mut()), 0);
            assert_eq!(s.test(Kind::Some, idx.as_mut_ptr()), 3);
            assert_eq!(&idx[..3], &[0, 2, 4]);
            assert!(v[s.test(Kind::Any, null_mut())] == 1);
        }
        // Excluding the zeros: all satisfied.
        let st: [c_int; 5] = [0, 1, 0, 1, 0];
        let s = set(&v, Some(&st), cmp::EQ, ones, I32);
        unsafe {
            assert_eq!(s.test(Kind::All, null_mut()), 1);
            assert_eq!(
                s.wait(Kind::All, null_mut(), || panic!("no poll needed")),
                1
            );
        }
        // Only the zeros in the set, waiting for 1: none.
        let st: [c_int; 5] = [1, 0, 1, 0, 1];
        let s = set(&v, Some(&st), cmp::EQ, ones, I32);
        unsafe {
            assert_eq!(s.test(Kind::Any, null_mut()), usize::MAX);
            assert_eq!(s.test(Kind::Some, idx.as_mut_ptr()), 0);
            assert_eq!(s.test(Kind::All, null_mut()), 0);
        }
    }

    #[test]
    fn an_empty_set_returns_at_once() {
        let v: [i32; 3] = [0, 0, 0];
        let one = 1i32;
        let ones = Values::One(&one as *const i32 as usize);
        let st: [c_int; 3] = [1, 2, -1];
        for s in [
            set(&v, Some(&st), cmp::EQ, ones, I32),
            set(&v[..0], None, cmp::EQ, ones, I32),
        ] {
            assert!(s.is_empty());
            let never = || panic!("an empty set does not wait");
            unsafe {
                assert_eq!(s.wait(Kind::All, null_mut(), never), 1);
                assert_eq!(s.wait(Kind::Any, null_mut(), never), usize::MAX);
                assert_eq!(s.wait(Kind::Some, null_mut(), never), 0);
                assert_eq!(s.test(Kind::All, null_mut()), 1);
                assert_eq!(s.test(Kind::Any, null_mut()), usize::MAX);
            }
        }
    }

    #[test]
    fn vector_values_and_signedness() {
        let v: [i64; 3] = [-5, 7, 100];
        let want: [i64; 3] = [-6, 7, 99];
        let s = set(
            &v,
            None,
            cmp::GE,
            Values::Each(want.as_ptr() as usize),
            Ty::from_code(0x108).unwrap(),
        );
        unsafe { assert_eq!(s.test(Kind::All, null_mut()), 1) };
        // The same bits unsigned: -5 is huge, 0 is not less than anything.
        let u: [u32; 2] = [u32::MAX, 0];
        let zero = 0u32;
        let s = set(
            &u,
            None,
            cmp::GT,
            Values::One(&zero as *const u32 as usize),
            Ty::from_code(4).unwrap(),
        );
        let mut idx = [0usize; 2];
        unsafe { assert_eq!(s.test(Kind::Some, idx.as_mut_ptr()), 1) };
        assert_eq!(idx[0], 0);
        let s = set(
            &u,
            None,
            cmp::LT,
            Values::One(&zero as *const u32 as usize),
            I32,
        );
        unsafe { assert_eq!(s.test(Kind::Any, null_mut()), 0, "signed: -1 < 0") };
        let h: [i16; 2] = [-1, 2];
        let m = -1i16;
        let s = set(
            &h,
            None,
            cmp::NE,
            Values::One(&m as *const i16 as usize),
            Ty::from_code(0x102).unwrap(),
        );
        unsafe { assert_eq!(s.test(Kind::Any, null_mut()), 1) };
    }

    #[test]
    fn any_reaches_every_satisfied_entry() {
        let v: [u64; 4] = [1, 0, 1, 1];
        let one = 1u64;
        let s = set(
            &v,
            None,
            cmp::EQ,
            Values::One(&one as *const u64 as usize),
            Ty::from_code(8).unwrap(),
        );
        let mut seen = [false; 4];
        for _ in 0..6 {
            seen[unsafe { s.test(Kind::Any, null_mut()) }] = true;
        }
        assert_eq!(seen, [true, false, true, true]);
    }

    #[test]
    fn waits_until_another_thread_stores() {
        let mut v: [i32; 3] = [0, 0, 0];
        let one = 1i32;
        let s = set(
            &v,
            None,
            cmp::EQ,
            Values::One(&one as *const i32 as usize),
            I32,
        );
        let p = v.as_mut_ptr();
        let mut polls = 0;
        // The "remote" update happens between looks: element 2, then the others.
        let r = unsafe {
            s.wait(Kind::Any, null_mut(), || {
                polls += 1;
                if polls == 3 {
                    p.add(2).write_volatile(1);
                }
            })
        };
        assert_eq!((r, polls), (2, 3));
        let mut polls = 0;
        unsafe {
            s.wait(Kind::All, null_mut(), || {
                polls += 1;
                p.add(polls - 1).write_volatile(1);
            })
        };
        assert_eq!(polls, 2);
        let mut sig = 0u64;
        let sp = &raw mut sig;
        let mut n = 0;
        let got = unsafe {
            signal_wait_until(sp as usize, cmp::GE, 3, || {
                n += 1;
                sp.write_volatile(sp.read_volatile() + 2);
            })
        };
        assert_eq!((got, n), (4, 2));
    }

    #[test]
    fn bad_arguments() {
        let v = [0i32; 2];
        let z = 0i32;
        let mut s = set(&v, None, 6, Values::One(&z as *const i32 as usize), I32);
        assert!(s.check().unwrap_err().contains("comparison operator 6"));
        s.cmp = cmp::EQ;
        s.check().unwrap();
        s.ivars += 1;
        assert!(s.check().unwrap_err().contains("not aligned"));
        s.ivars -= 1;
        s.values = Values::Each(0);
        assert!(s.check().unwrap_err().contains("NULL"));
        s.nelems = 0;
        s.check().unwrap();
    }
}
