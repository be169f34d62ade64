//! The arithmetic of the `*_to_all` reductions: element types and operations by the codes
//! `shmem.h` passes (`_SHMEM_T_*`, `_SHMEM_OP_*`), combined over little-endian byte buffers.

/// Element types of the reductions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    I16,
    I32,
    I64,
    F32,
    F64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    And,
    Or,
    Xor,
    Min,
    Max,
    Sum,
    Prod,
}

impl Ty {
    pub fn from_code(c: i32) -> Option<Ty> {
        Some(match c {
            0 => Ty::I16,
            1 => Ty::I32,
            2 => Ty::I64,
            3 => Ty::F32,
            4 => Ty::F64,
            _ => return None,
        })
    }

    pub fn size(self) -> usize {
        match self {
            Ty::I16 => 2,
            Ty::I32 | Ty::F32 => 4,
            Ty::I64 | Ty::F64 => 8,
        }
    }
}

impl Op {
    pub fn from_code(c: i32) -> Option<Op> {
        Some(match c {
            0 => Op::And,
            1 => Op::Or,
            2 => Op::Xor,
            3 => Op::Min,
            4 => Op::Max,
            5 => Op::Sum,
            6 => Op::Prod,
            _ => return None,
        })
    }

    fn bitwise(self) -> bool {
        matches!(self, Op::And | Op::Or | Op::Xor)
    }
}

/// An element type: its bytes and the operations on it.
trait Elem: Copy {
    const N: usize;
    fn load(b: &[u8]) -> Self;
    fn store(self, b: &mut [u8]);
    fn apply(op: Op, a: Self, b: Self) -> Self;
}

macro_rules! elem {
    ($t:ty, |$op:ident, $a:ident, $b:ident| $apply:expr) => {
        impl Elem for $t {
            const N: usize = std::mem::size_of::<$t>();
            fn load(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("element bytes"))
            }
            fn store(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_le_bytes());
            }
            fn apply($op: Op, $a: Self, $b: Self) -> Self {
                $apply
            }
        }
    };
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        elem!($t, |op, a, b| match op {
            Op::And => a & b,
            Op::Or => a | b,
            Op::Xor => a ^ b,
            Op::Min => a.min(b),
            Op::Max => a.max(b),
            Op::Sum => a.wrapping_add(b),
            Op::Prod => a.wrapping_mul(b),
        });
    )*};
}

// Bitwise operations on floats are refused before (`valid`): a is kept.
macro_rules! float_elem {
    ($($t:ty),*) => {$(
        elem!($t, |op, a, b| match op {
            Op::Min => a.min(b),
            Op::Max => a.max(b),
            Op::Sum => a + b,
            Op::Prod => a * b,
            Op::And | Op::Or | Op::Xor => a,
        });
    )*};
}

int_elem!(i16, i32, i64);
float_elem!(f32, f64);

fn each<T: Elem>(op: Op, acc: &mut [u8], x: &[u8]) {
    for (a, b) in acc.chunks_exact_mut(T::N).zip(x.chunks_exact(T::N)) {
        T::apply(op, T::load(a), T::load(b)).store(a);
    }
}

/// Whether `op` applies to `ty` (bitwise operations only to integers).
pub fn valid(ty: Ty, op: Op) -> bool {
    !(op.bitwise() && matches!(ty, Ty::F32 | Ty::F64))
}

/// `acc[i] = acc[i] op x[i]` element by element (`acc` and `x` are the same length, a
/// multiple of the element size).
pub fn combine(ty: Ty, op: Op, acc: &mut [u8], x: &[u8]) {
    debug_assert_eq!(acc.len(), x.len());
    match ty {
        Ty::I16 => each::<i16>(op, acc, x),
        Ty::I32 => each::<i32>(op, acc, x),
        Ty::I64 => each::<i64>(op, acc, x),
        Ty::F32 => each::<f32>(op, acc, x),
        Ty::F64 => each::<f64>(op, acc, x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_i32(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn int_ops() {
        let mut acc = bytes_i32(&[1, -5, 12, i32::MAX]);
        combine(Ty::I32, Op::Sum, &mut acc, &bytes_i32(&[2, 5, -2, 1]));
        assert_eq!(acc, bytes_i32(&[3, 0, 10, i32::MIN]));
        combine(Ty::I32, Op::Min, &mut acc, &bytes_i32(&[4, -1, 10, 0]));
        assert_eq!(acc, bytes_i32(&[3, -1, 10, i32::MIN]));
        combine(Ty::I32, Op::Xor, &mut acc, &bytes_i32(&[3, -1, 0, 0]));
        assert_eq!(acc, bytes_i32(&[0, 0, 10, i32::MIN]));
        let mut s: Vec<u8> = [3i16, -2].iter().flat_map(|x| x.to_le_bytes()).collect();
        let x: Vec<u8> = [-4i16, 7].iter().flat_map(|x| x.to_le_bytes()).collect();
        combine(Ty::I16, Op::Prod, &mut s, &x);
        assert_eq!(
            s,
            [-12i16, -14]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn float_ops_and_validity() {
        let mut acc: Vec<u8> = [1.5f64, -2.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let x: Vec<u8> = [2.0f64, 8.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        combine(Ty::F64, Op::Max, &mut acc, &x);
        assert_eq!(acc, x);
        combine(Ty::F64, Op::Prod, &mut acc, &x);
        let want: Vec<u8> = [4.0f64, 64.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(acc, want);
        assert!(!valid(Ty::F32, Op::And));
        assert!(valid(Ty::I64, Op::Xor));
        assert_eq!(Ty::from_code(9), None);
        assert_eq!(Op::from_code(6), Some(Op::Prod));
    }
}
