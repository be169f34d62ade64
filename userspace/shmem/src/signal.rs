//! OpenSHMEM 1.5 put-with-signal (`shmem_put_signal`, `shmem_put_signal_nbi` and their typed,
//! sized and context forms) and `shmem_signal_fetch`.
//!
//! A put-with-signal is a put, then an update of a 64-bit signal word of the target PE that
//! must not be seen before the data. Here both are GSAS operations of the target's node: the
//! data goes as a bulk write, which the home service has applied when it answers; only then is
//! the signal sent, as an atomic of the same service: WRITE for `SHMEM_SIGNAL_SET`, FETCH_ADD
//! for `SHMEM_SIGNAL_ADD`. Whoever sees the new signal (a load on the target, which is that
//! node's memory) therefore sees the data. To a PE of this node (its regions are mapped here),
//! and to another node's PE whose heap and static data are mapped here for puts (`far.rs`),
//! the data is a copy and the signal an atomic of [`amo::amo`] (this CPU's atomic instruction
//! on a one-CPU node for a PE of this node, else the service), after a fence: the copy's
//! stores are visible before the request that carries the signal is. Both return with the
//! signal delivered, so the `_nbi` forms are the blocking ones.

use crate::amo::{self, code};
use crate::pe::{die, must, with_gsas, Job};
use crate::remote::Remote;
use crate::rma;
use std::sync::atomic::{fence, Ordering};

/// `SHMEM_SIGNAL_SET` and `SHMEM_SIGNAL_ADD` (shmem/p2p15.h).
pub const SIGNAL_SET: i32 = 0;
pub const SIGNAL_ADD: i32 = 1;

/// The signal operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigOp {
    Set,
    Add,
}

impl SigOp {
    pub fn from_code(c: i32) -> Option<SigOp> {
        match c {
            SIGNAL_SET => Some(SigOp::Set),
            SIGNAL_ADD => Some(SigOp::Add),
            _ => None,
        }
    }

    /// The `unimem_shmem_amo` operation that applies it.
    fn amo_code(self) -> i32 {
        match self {
            SigOp::Set => code::SET,
            SigOp::Add => code::FADD,
        }
    }
}

/// The remote path: `data` to GSAS `data_addr`, then the signal at GSAS `sig_addr`, through
/// one handle; the signal is not sent if the data's transfer failed.
pub fn deliver<R: Remote>(
    g: &R,
    data_addr: u64,
    data: &[u8],
    sig_addr: u64,
    op: SigOp,
    signal: u64,
) -> gsas::Result<()> {
    if !data.is_empty() {
        g.bulk_write(data_addr, data)?;
    }
    match op {
        SigOp::Set => g.write(sig_addr, signal),
        SigOp::Add => g.fetch_add(sig_addr, signal).map(|_| ()),
    }
}

/// The arguments of a put-with-signal (`shmem_putmem_signal` in bytes).
pub struct PutSignal {
    pub dest: usize,
    pub src: usize,
    pub len: usize,
    pub sig_addr: usize,
    pub signal: u64,
    pub sig_op: i32,
}

/// `shmem_putmem_signal`: `len` bytes from local `src` to symmetric `dest` on `pe`, then the
/// signal. Every argument is checked before anything is written.
pub fn put_signal(j: &Job, routine: &str, a: &PutSignal, pe: i32) {
    let pe = j.check_pe(routine, pe);
    let Some(op) = SigOp::from_code(a.sig_op) else {
        die(&format!(
            "{routine}: unknown signal operator {} (SHMEM_SIGNAL_SET {SIGNAL_SET}, SHMEM_SIGNAL_ADD {SIGNAL_ADD})",
            a.sig_op
        ));
    };
    if a.sig_addr % 8 != 0 {
        die(&format!(
            "{routine}: sig_addr {:#x} is not aligned to its 8 bytes",
            a.sig_addr
        ));
    }
    let (sr, soff) = j.symmetric(routine, "sig_addr", a.sig_addr, 8);
    if a.len > 0 && a.sig_addr < a.dest + a.len && a.dest < a.sig_addr + 8 {
        die(&format!(
            "{routine}: sig_addr {:#x} overlaps dest {:#x} (+{} bytes)",
            a.sig_addr, a.dest, a.len
        ));
    }
    let data = if a.len == 0 {
        None
    } else {
        Some(j.symmetric(routine, "dest", a.dest, a.len))
    };
    // SAFETY: the caller passes a source of `len` readable bytes (the C contract).
    let src: &[u8] = if a.len == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(a.src as *const u8, a.len) }
    };
    // Both through the service when neither is mapped here; the data is a copy when it can be.
    let remote =
        j.va(pe, sr, soff).is_none() && data.is_none_or(|(r, off)| j.data_va(pe, r, off).is_none());
    if remote {
        let daddr = data.map_or(0, |(r, off)| j.addr(pe, r, off));
        let saddr = j.addr(pe, sr, soff);
        fence(Ordering::SeqCst);
        with_gsas(|g| must(routine, deliver(g, daddr, src, saddr, op, a.signal)));
        fence(Ordering::SeqCst);
    } else {
        if let Some((r, off)) = data {
            rma::put_at(j, routine, pe, r, off, src);
        }
        fence(Ordering::SeqCst);
        amo::amo(
            j,
            routine,
            a.sig_addr,
            8,
            op.amo_code(),
            (a.signal, 0),
            pe as i32,
        );
    }
}

/// `shmem_signal_fetch`: the calling PE's signal word at `sig_addr`, read atomically (the
/// same path as the atomics that update it).
pub fn signal_fetch(j: &Job, sig_addr: usize) -> u64 {
    amo::amo(
        j,
        "shmem_signal_fetch",
        sig_addr,
        8,
        code::FETCH,
        (0, 0),
        j.me as i32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// GSAS memory whose operations are logged in order.
    #[derive(Default)]
    struct Log {
        ops: RefCell<Vec<String>>,
        mem: crate::ring::tests::Fake,
    }

    impl Remote for Log {
        fn read(&self, addr: u64) -> gsas::Result<u64> {
            self.ops.borrow_mut().push(format!("read {addr:#x}"));
            self.mem.read(addr)
        }
        fn write(&self, addr: u64, v: u64) -> gsas::Result<()> {
            self.ops.borrow_mut().push(format!("write {addr:#x} {v}"));
            self.mem.write(addr, v)
        }
        fn fetch_add(&self, addr: u64, v: u64) -> gsas::Result<u64> {
            self.ops
                .borrow_mut()
                .push(format!("fetch_add {addr:#x} {v}"));
            self.mem.fetch_add(addr, v)
        }
        fn bulk_read(&self, addr: u64, buf: &mut [u8]) -> gsas::Result<()> {
            self.mem.bulk_read(addr, buf)
        }
        fn bulk_write(&self, addr: u64, data: &[u8]) -> gsas::Result<()> {
            self.ops
                .borrow_mut()
                .push(format!("bulk_write {addr:#x} {}", data.len()));
            self.mem.bulk_write(addr, data)
        }
    }

    #[test]
    fn operator_codes() {
        assert_eq!(SigOp::from_code(SIGNAL_SET), Some(SigOp::Set));
        assert_eq!(SigOp::from_code(SIGNAL_ADD), Some(SigOp::Add));
        assert_eq!(SigOp::from_code(2), None);
        assert_eq!(SigOp::from_code(-1), None);
        assert_eq!(SigOp::Set.amo_code(), code::SET);
        assert_eq!(SigOp::Add.amo_code(), code::FADD);
    }

    #[test]
    fn the_data_then_the_signal_through_the_service() {
        let g = Log::default();
        let data = [7u8; 24];
        deliver(&g, 0x1000, &data, 0x2000, SigOp::Set, 5).unwrap();
        deliver(&g, 0x1000, &data[..8], 0x2000, SigOp::Add, 3).unwrap();
        deliver(&g, 0x1000, &[], 0x2000, SigOp::Add, u64::MAX).unwrap();
        assert_eq!(
            *g.ops.borrow(),
            [
                "bulk_write 0x1000 24",
                "write 0x2000 5",
                "bulk_write 0x1000 8",
                "fetch_add 0x2000 3",
                "fetch_add 0x2000 18446744073709551615",
            ]
        );
        // SET replaced, ADD added (and wrapped: 5 + 3 - 1).
        assert_eq!(g.mem.read(0x2000).unwrap(), 7);
        let mut b = [0u8; 24];
        g.mem.bulk_read(0x1000, &mut b).unwrap();
        assert_eq!(b, data);
    }
}
