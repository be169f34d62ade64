//! Atomics on a naturally aligned value of an item, applied by the home node's service at the
//! value's GSAS address (so they are atomic against every other node's).
//!
//! GSAS has read, write, fetch-add, compare-and-swap, swap, fetch-and/or/xor and fetch-min/max
//! (signed and unsigned) on 32- and 64-bit words, and 128-bit read, write and compare-and-swap:
//! every integer atomic is one operation of the home. The rest is built on those:
//! - subtract is the add of the negation (two's complement wraps the same way);
//! - float and double arithmetic (the kernel does no floating point) is a compare-and-swap
//!   loop on the home's CAS: read the word, compute, CAS, and again with the value the CAS
//!   found until it succeeds. Each round is atomic, so the loop is (the result is what some
//!   CAS stored on the value it replaced); it is lock-free, not wait-free.

use std::fmt::Debug;

use unimem_wire::gsas::op;

use super::data::check_range;
use super::memory::{gsas_error, Memory};
use crate::meta::Item;
use crate::{FamError, Result};

/// The operations of OpenFAM's atomics (the non-fetching ones too: they return the old
/// value as well, which the caller drops).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    /// Store the value.
    Set,
    /// Read the value (the operand is ignored).
    Fetch,
    Add,
    Subtract,
    Min,
    Max,
    And,
    Or,
    Xor,
    /// Store the value, returning the old one.
    Swap,
}

/// A type OpenFAM's atomics act on: 32- and 64-bit integers, float and double.
pub trait Value: Copy + PartialEq + Debug {
    /// Bytes (4 or 8).
    const SIZE: u64;
    const FLOAT: bool;
    /// Whether min and max compare as signed integers.
    const SIGNED: bool;
    fn to_bits(self) -> u64;
    fn from_bits(b: u64) -> Self;
    fn plus(self, o: Self) -> Self;
    fn minus(self, o: Self) -> Self;
    fn lesser(self, o: Self) -> Self;
    fn greater(self, o: Self) -> Self;
}

macro_rules! int_value {
    ($t:ty, $u:ty, $signed:expr) => {
        impl Value for $t {
            const SIZE: u64 = std::mem::size_of::<$t>() as u64;
            const FLOAT: bool = false;
            const SIGNED: bool = $signed;
            fn to_bits(self) -> u64 {
                self as $u as u64
            }
            fn from_bits(b: u64) -> Self {
                b as $u as $t
            }
            fn plus(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn minus(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn lesser(self, o: Self) -> Self {
                Ord::min(self, o)
            }
            fn greater(self, o: Self) -> Self {
                Ord::max(self, o)
            }
        }
    };
}
int_value!(i32, u32, true);
int_value!(u32, u32, false);
int_value!(i64, u64, true);
int_value!(u64, u64, false);

macro_rules! float_value {
    ($t:ty, $u:ty) => {
        impl Value for $t {
            const SIZE: u64 = std::mem::size_of::<$t>() as u64;
            const FLOAT: bool = true;
            const SIGNED: bool = true;
            fn to_bits(self) -> u64 {
                <$t>::to_bits(self) as u64
            }
            fn from_bits(b: u64) -> Self {
                <$t>::from_bits(b as $u)
            }
            fn plus(self, o: Self) -> Self {
                self + o
            }
            fn minus(self, o: Self) -> Self {
                self - o
            }
            fn lesser(self, o: Self) -> Self {
                self.min(o)
            }
            fn greater(self, o: Self) -> Self {
                self.max(o)
            }
        }
    };
}
float_value!(f32, u32);
float_value!(f64, u64);

/// The GSAS address of the `size`-byte value at `offset`: inside the item and naturally
/// aligned (`FAM_ERR_INVALID` otherwise; the service would refuse it too, but later and with
/// a less useful message).
pub fn address(item: &Item, offset: u64, size: u64) -> Result<u64> {
    check_range(item, offset, size)?;
    if offset % size != 0 {
        return Err(FamError::Invalid(format!(
            "offset {offset} is not aligned to the {size}-byte value"
        )));
    }
    match item.locate(offset) {
        Some((addr, run)) if run >= size && addr % size == 0 => Ok(addr),
        _ => Err(FamError::Metadata(format!(
            "item {} has no {size} contiguous bytes at offset {offset}",
            item.id
        ))),
    }
}

fn width<T: Value>(opcode: u8) -> u8 {
    if T::SIZE == 4 {
        opcode | op::WIDTH32
    } else {
        opcode
    }
}

fn word<T: Value>(m: &dyn Memory, opcode: u8, addr: u64, a1: u64, a2: u64) -> Result<u64> {
    m.word(width::<T>(opcode), addr, a1, a2)
        .map_err(|e| gsas_error("atomic", e))
}

/// The compare-and-swap loop: stores `f(old)` atomically, returns the old value.
fn update<T: Value>(m: &dyn Memory, addr: u64, f: impl Fn(T) -> T) -> Result<T> {
    let mut old = word::<T>(m, op::READ, addr, 0, 0)?;
    loop {
        let new = f(T::from_bits(old)).to_bits();
        // Even a min or max that changes nothing stores (the same value): an atomic needs
        // read and write, and the home checks write only on the CAS.
        let seen = word::<T>(m, op::CAS, addr, old, new)?;
        if seen == old {
            return Ok(T::from_bits(old));
        }
        old = seen;
    }
}

/// Applies `op` with operand `v` to the value at GSAS address `addr`; the old value.
pub fn apply<T: Value>(m: &dyn Memory, addr: u64, op: AtomicOp, v: T) -> Result<T> {
    let b = v.to_bits();
    let fetched = match op {
        AtomicOp::Set => return word::<T>(m, op::WRITE, addr, b, 0).map(|_| v),
        AtomicOp::Fetch => word::<T>(m, op::READ, addr, 0, 0)?,
        AtomicOp::Swap => word::<T>(m, op::SWAP, addr, b, 0)?,
        AtomicOp::Add if !T::FLOAT => word::<T>(m, op::FETCH_ADD, addr, b, 0)?,
        AtomicOp::Subtract if !T::FLOAT => word::<T>(m, op::FETCH_ADD, addr, b.wrapping_neg(), 0)?,
        AtomicOp::Min if !T::FLOAT => {
            let o = if T::SIGNED {
                op::FETCH_MIN
            } else {
                op::FETCH_UMIN
            };
            word::<T>(m, o, addr, b, 0)?
        }
        AtomicOp::Max if !T::FLOAT => {
            let o = if T::SIGNED {
                op::FETCH_MAX
            } else {
                op::FETCH_UMAX
            };
            word::<T>(m, o, addr, b, 0)?
        }
        AtomicOp::Add => return update(m, addr, |x: T| x.plus(v)),
        AtomicOp::Subtract => return update(m, addr, |x: T| x.minus(v)),
        AtomicOp::Min => return update(m, addr, |x: T| x.lesser(v)),
        AtomicOp::Max => return update(m, addr, |x: T| x.greater(v)),
        AtomicOp::And | AtomicOp::Or | AtomicOp::Xor if T::FLOAT => {
            return Err(FamError::Invalid(
                "bitwise atomics are for unsigned integers".into(),
            ))
        }
        AtomicOp::And => word::<T>(m, op::FETCH_AND, addr, b, 0)?,
        AtomicOp::Or => word::<T>(m, op::FETCH_OR, addr, b, 0)?,
        AtomicOp::Xor => word::<T>(m, op::FETCH_XOR, addr, b, 0)?,
    };
    Ok(T::from_bits(fetched))
}

/// Stores `new` if the value is `old`; returns the value found. Integers only (OpenFAM has
/// no float compare-and-swap).
pub fn compare_swap<T: Value>(m: &dyn Memory, addr: u64, old: T, new: T) -> Result<T> {
    if T::FLOAT {
        return Err(FamError::Invalid("compare-and-swap is for integers".into()));
    }
    word::<T>(m, op::CAS, addr, old.to_bits(), new.to_bits()).map(T::from_bits)
}

/// Atomic 16-byte read.
pub fn fetch128(m: &dyn Memory, addr: u64) -> Result<i128> {
    m.read128(addr)
        .map(|v| v as i128)
        .map_err(|e| gsas_error("atomic 128-bit fetch", e))
}

/// Atomic 16-byte write.
pub fn set128(m: &dyn Memory, addr: u64, v: i128) -> Result<()> {
    m.write128(addr, v as u128)
        .map_err(|e| gsas_error("atomic 128-bit set", e))
}

/// 128-bit compare-and-swap by the home (`CAS128`): the value found.
pub fn compare_swap128(m: &dyn Memory, addr: u64, old: i128, new: i128) -> Result<i128> {
    m.cas128(addr, old as u128, new as u128)
        .map(|v| v as i128)
        .map_err(|e| gsas_error("atomic 128-bit compare-and-swap", e))
}
