//! The job descriptor: GSAS pages on `oshrun`'s node that the launcher and every PE share
//! (seed 001's `shm_args`). `oshrun` allocates it and passes its address to each PE
//! (`SHMEM_JOB`); each PE publishes its symmetric regions in its slot, and reads its peers'.
//!
//! Everything in it is written by other processes, possibly on other nodes: readers check
//! every value they use ([`Slot::check`], [`Header::check`]).

use crate::remote::Remote;
use gsas::PAGE_SIZE;

/// "SHMEMJOB".
pub const MAGIC: u64 = 0x5348_4d45_4d4a_4f42;
/// Most PEs a job may have.
pub const MAX_PES: usize = 256;
/// Bytes of a PE's output ring (its data follows its slot's control words).
pub const RING_BYTES: u64 = 2 * PAGE_SIZE;

/// Header words (byte offsets).
pub mod hdr {
    pub const MAGIC: u64 = 0;
    pub const NPES: u64 = 8;
    /// Non-zero: the job is being torn down (a PE failed, or oshrun was interrupted).
    pub const ABORT: u64 = 16;
    /// Counted up by oshrun while it runs: agents stop their PE when it stalls.
    pub const HEARTBEAT: u64 = 24;
    /// PEs that have published their slot.
    pub const READY: u64 = 32;
    /// Agents done (their PE exited and its leftovers are freed): the last one frees the
    /// descriptor if oshrun is gone.
    pub const DONE: u64 = 40;
    /// The barrier of libraries that join a job without `shmem_init` (libunimem_fam's
    /// `fam_barrier_all`, [`Layout::aux_barrier`]): PEs arrived, and barriers completed.
    /// Zero in a fresh descriptor, and only that barrier uses them.
    pub const AUX_ARRIVE: u64 = 48;
    pub const AUX_GENERATION: u64 = 56;
}

/// Bytes of the header; slots follow.
pub const HEADER_BYTES: u64 = 64;
/// Bytes of a slot.
pub const SLOT_BYTES: u64 = 128;

/// Slot words (byte offsets inside a slot).
pub mod slot {
    /// The PE's node + 1 (0: not published yet).
    pub const NODE: u64 = 0;
    pub const STATIC_ADDR: u64 = 8;
    pub const STATIC_LEN: u64 = 16;
    pub const HEAP_ADDR: u64 = 24;
    pub const HEAP_LEN: u64 = 32;
    pub const SYNC_ADDR: u64 = 40;
    /// Output ring: bytes written by the agent, bytes consumed by oshrun, 1 when closed.
    pub const OUT_HEAD: u64 = 48;
    pub const OUT_TAIL: u64 = 56;
    pub const OUT_CLOSED: u64 = 64;
    /// 1 once the PE called shmem_finalize.
    pub const FINALIZED: u64 = 72;
    /// The PE's build ([`program_word`]), written before the node word publishes the slot.
    pub const PROGRAM: u64 = 80;
    /// [`GLOBAL_EXIT`] | status once the PE called `shmem_global_exit(status)` (0 otherwise):
    /// written before the abort flag, so whoever sees the job aborted finds it.
    pub const EXIT: u64 = 88;
}

/// Marks a slot's `EXIT` word as set ("GE" in the top bytes); the status is the low 8 bits.
pub const GLOBAL_EXIT: u64 = 0x4745 << 48;

/// Architectures a program word names (its top byte; 0: another one).
const ARCHES: [&str; 2] = ["x86_64", "aarch64"];

/// What every PE of a job must share for its symmetric variables to line up: the
/// architecture (top byte) and where the writable data segment is in the executable and how
/// long it is (a hash of both, low 56 bits). Different builds of a program, and builds for
/// different architectures above all, put the same variable at different offsets.
pub fn program_word(arch: &str, segment_offset: u64, static_len: u64) -> u64 {
    let code = ARCHES.iter().position(|&a| a == arch).map_or(0, |i| i + 1) as u64;
    // FNV-1a: stable across builds and architectures, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in segment_offset
        .to_le_bytes()
        .into_iter()
        .chain(static_len.to_le_bytes())
    {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    code << 56 | h & ((1 << 56) - 1)
}

/// Why PE `pe`'s program word `theirs` differs from this PE's `mine`, or `None` if it does not.
pub fn program_mismatch(pe: usize, theirs: u64, mine: u64) -> Option<String> {
    if theirs == mine {
        return None;
    }
    let arch = |w: u64| {
        usize::try_from(w >> 56)
            .ok()
            .and_then(|c| c.checked_sub(1))
            .and_then(|i| ARCHES.get(i))
            .copied()
            .unwrap_or("another architecture")
    };
    Some(if theirs >> 56 != mine >> 56 {
        format!(
            "PE {pe} runs a build for {} and this PE one for {}: symmetric variables are at different places in different builds, so every PE must run the same executable (a job cannot mix architectures)",
            arch(theirs),
            arch(mine)
        )
    } else {
        format!(
            "PE {pe} runs another build of the program (its data segment is elsewhere or of another size): every PE must run the same executable"
        )
    })
}

/// Pages of the descriptor of a job of `npes` PEs: header and slots, then one ring per PE.
pub fn pages(npes: usize) -> u64 {
    table_pages(npes) + npes as u64 * RING_BYTES / PAGE_SIZE
}

fn table_pages(npes: usize) -> u64 {
    (HEADER_BYTES + npes as u64 * SLOT_BYTES).div_ceil(PAGE_SIZE)
}

/// Where things are in the descriptor at `base` of a job of `npes` PEs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub base: u64,
    pub npes: usize,
}

impl Layout {
    pub fn word(&self, off: u64) -> u64 {
        self.base + off
    }

    pub fn slot(&self, pe: usize, off: u64) -> u64 {
        self.base + HEADER_BYTES + pe as u64 * SLOT_BYTES + off
    }

    pub fn ring(&self, pe: usize) -> u64 {
        self.base + table_pages(self.npes) * PAGE_SIZE + pe as u64 * RING_BYTES
    }

    /// Writes a fresh header (the pages are zeroed by the service at allocation).
    pub fn init(&self, g: &impl Remote) -> gsas::Result<()> {
        g.write(self.word(hdr::NPES), self.npes as u64)?;
        g.write(self.word(hdr::MAGIC), MAGIC)
    }

    /// Reads and checks the header of the descriptor at `base`.
    pub fn open(g: &impl Remote, base: u64) -> Result<Self, String> {
        let e = |e: gsas::Error| format!("reading the job descriptor at {base:#x}: {e}");
        let magic = g.read(base + hdr::MAGIC).map_err(e)?;
        if magic != MAGIC {
            return Err(format!(
                "{base:#x} is not a job descriptor (magic {magic:#x}): was this started by oshrun?"
            ));
        }
        let npes = g.read(base + hdr::NPES).map_err(e)?;
        if npes == 0 || npes > MAX_PES as u64 {
            return Err(format!("job descriptor at {base:#x}: bad PE count {npes}"));
        }
        Ok(Layout {
            base,
            npes: npes as usize,
        })
    }

    pub fn aborted(&self, g: &impl Remote) -> bool {
        g.read(self.word(hdr::ABORT))
            .map(|v| v != 0)
            .unwrap_or(true)
    }

    pub fn abort(&self, g: &impl Remote) {
        let _ = g.write(self.word(hdr::ABORT), 1);
    }

    /// PE `pe` called `shmem_global_exit(status)`: records the status (as a process exit
    /// status: its low 8 bits, as `exit(3)` keeps them) in its slot, then aborts the job.
    pub fn global_exit(&self, g: &impl Remote, pe: usize, status: i32) {
        let _ = g.write(
            self.slot(pe, slot::EXIT),
            GLOBAL_EXIT | u64::from(status as u8),
        );
        self.abort(g);
    }

    /// The first PE (by number) that called `shmem_global_exit`, and its status (0-255).
    pub fn global_exit_status(&self, g: &impl Remote) -> Option<(usize, i32)> {
        (0..self.npes).find_map(|pe| {
            let w = g.read(self.slot(pe, slot::EXIT)).ok()?;
            (w & !0xff == GLOBAL_EXIT).then_some((pe, (w & 0xff) as i32))
        })
    }

    /// A barrier of every PE of the job on the header's `AUX_*` words, for a library that
    /// joins the job without `shmem_init` (no symmetric regions, so no sync page to wait on):
    /// each PE notes the generation, counts itself in; the last one resets the count and
    /// moves the generation on, which releases the others. A PE reads the generation before
    /// it arrives, and the generation cannot move before every PE arrived, so no PE misses a
    /// release; the count is reset before the release, so no PE of the next barrier counts
    /// into this one. Waiting reads the word on the descriptor's node, backing off to one read
    /// per `max_pause`; it gives up when the job is aborted.
    pub fn aux_barrier(
        &self,
        g: &impl Remote,
        max_pause: std::time::Duration,
    ) -> Result<(), String> {
        let e = |e: gsas::Error| format!("barrier on the job descriptor at {:#x}: {e}", self.base);
        let generation = g.read(self.word(hdr::AUX_GENERATION)).map_err(e)?;
        let arrived = g.fetch_add(self.word(hdr::AUX_ARRIVE), 1).map_err(e)? + 1;
        if arrived >= self.npes as u64 {
            g.write(self.word(hdr::AUX_ARRIVE), 0).map_err(e)?;
            g.fetch_add(self.word(hdr::AUX_GENERATION), 1).map_err(e)?;
            return Ok(());
        }
        let mut pause = std::time::Duration::from_micros(20);
        loop {
            if g.read(self.word(hdr::AUX_GENERATION)).map_err(e)? != generation {
                return Ok(());
            }
            if self.aborted(g) {
                return Err("the job was aborted while waiting at a barrier".into());
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(max_pause);
        }
    }

    /// Reads and checks PE `pe`'s published slot; `None` while it is not published.
    pub fn read_slot(&self, g: &impl Remote, pe: usize) -> Result<Option<Slot>, String> {
        let mut b = [0u8; 48];
        g.bulk_read(self.slot(pe, 0), &mut b)
            .map_err(|e| format!("reading PE {pe}'s slot: {e}"))?;
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        if w(0) == 0 {
            return Ok(None);
        }
        let s = Slot {
            node: (w(0) - 1) as u16,
            static_addr: w(1),
            static_len: w(2),
            heap_addr: w(3),
            heap_len: w(4),
            sync_addr: w(5),
        };
        s.check(w(0) - 1)
            .map_err(|m| format!("PE {pe}'s slot: {m}"))?;
        Ok(Some(s))
    }

    /// The allocations PE `pe` recorded in its slot and has not freed (oshrun frees them
    /// when the PE died without shmem_finalize).
    pub fn recorded(&self, g: &impl Remote, pe: usize) -> Vec<u64> {
        [slot::STATIC_ADDR, slot::HEAP_ADDR, slot::SYNC_ADDR]
            .iter()
            .filter_map(|&w| g.read(self.slot(pe, w)).ok())
            .filter(|&a| a != 0 && a % PAGE_SIZE == 0)
            .collect()
    }

    /// Clears PE `pe`'s record of allocations (they were freed).
    pub fn forget(&self, g: &impl Remote, pe: usize) {
        for w in [slot::STATIC_ADDR, slot::HEAP_ADDR, slot::SYNC_ADDR] {
            let _ = g.write(self.slot(pe, w), 0);
        }
    }

    /// Whether PE `pe` called shmem_init (published its slot) and not shmem_finalize.
    pub fn unfinalized(&self, g: &impl Remote, pe: usize) -> bool {
        let read = |w| g.read(self.slot(pe, w)).unwrap_or(0);
        read(slot::NODE) != 0 && read(slot::FINALIZED) == 0
    }

    /// Records `s`'s regions in PE `pe`'s slot without publishing it (its node word): what
    /// it allocated, so that it is freed if the PE dies.
    pub fn record(&self, g: &impl Remote, pe: usize, s: &Slot) -> gsas::Result<()> {
        let words = [
            s.static_addr,
            s.static_len,
            s.heap_addr,
            s.heap_len,
            s.sync_addr,
        ];
        let mut b = [0u8; 40];
        for (i, w) in words.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        g.bulk_write(self.slot(pe, slot::STATIC_ADDR), &b)
    }

    /// Publishes `s` as PE `pe`'s slot, run by `program` ([`program_word`]); the node word
    /// last: it marks the slot complete.
    pub fn publish(&self, g: &impl Remote, pe: usize, s: &Slot, program: u64) -> gsas::Result<()> {
        self.record(g, pe, s)?;
        g.write(self.slot(pe, slot::PROGRAM), program)?;
        g.write(self.slot(pe, slot::NODE), u64::from(s.node) + 1)
    }

    /// The program word PE `pe` published.
    pub fn program(&self, g: &impl Remote, pe: usize) -> Result<u64, String> {
        g.read(self.slot(pe, slot::PROGRAM))
            .map_err(|e| format!("reading PE {pe}'s program: {e}"))
    }
}

/// A PE's symmetric regions, as published in its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slot {
    pub node: u16,
    pub static_addr: u64,
    pub static_len: u64,
    pub heap_addr: u64,
    pub heap_len: u64,
    pub sync_addr: u64,
}

impl Slot {
    /// Every address must be on the slot's node, page-aligned, and its range must stay there.
    fn check(&self, raw_node: u64) -> Result<(), String> {
        if raw_node >= u64::from(unimem_wire::gas::MAX_NODES) {
            return Err(format!("node {raw_node} out of range"));
        }
        for (name, a, len) in [
            ("static data", self.static_addr, self.static_len),
            ("heap", self.heap_addr, self.heap_len),
            ("sync page", self.sync_addr, PAGE_SIZE),
        ] {
            if a == 0 {
                continue;
            }
            let ok = gsas::node_of(a) == self.node
                && a % PAGE_SIZE == 0
                && gsas::offset_of(a)
                    .checked_add(len)
                    .is_some_and(|e| e <= gsas::OFFSET_MASK);
            if !ok {
                return Err(format!(
                    "{name} at {a:#x}+{len:#x} is not a range of node {}",
                    self.node
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::tests::Fake;

    #[test]
    fn publish_and_read_back() {
        let g = Fake::default();
        let base = gsas::addr(0, 0x20000);
        let l = Layout { base, npes: 3 };
        l.init(&g).unwrap();
        assert_eq!(Layout::open(&g, base).unwrap(), l);
        assert_eq!(l.read_slot(&g, 1).unwrap(), None);
        let s = Slot {
            node: 2,
            static_addr: gsas::addr(2, 0x1000),
            static_len: 0x2000,
            heap_addr: gsas::addr(2, 0x10000),
            heap_len: 0x100000,
            sync_addr: gsas::addr(2, 0x5000),
        };
        l.publish(&g, 1, &s, 42).unwrap();
        assert_eq!(l.read_slot(&g, 1).unwrap(), Some(s));
        assert_eq!(l.program(&g, 1).unwrap(), 42);
        assert_eq!(l.recorded(&g, 1).len(), 3);
        assert!(l.unfinalized(&g, 1));
        l.forget(&g, 1);
        assert!(l.recorded(&g, 1).is_empty());
        assert!(!l.aborted(&g));
        l.abort(&g);
        assert!(l.aborted(&g));
        assert!(l.ring(2) + RING_BYTES <= base + pages(3) * PAGE_SIZE);
        assert_eq!(l.global_exit_status(&g), None);
        l.global_exit(&g, 2, 7);
        l.global_exit(&g, 1, 256 + 9);
        assert_eq!(l.global_exit_status(&g), Some((1, 9)));
        l.global_exit(&g, 0, -1);
        assert_eq!(l.global_exit_status(&g), Some((0, 255)));
        // Not a recorded exit: a word without the mark.
        g.write(l.slot(0, slot::EXIT), 3).unwrap();
        assert_eq!(l.global_exit_status(&g), Some((1, 9)));
        const { assert!(slot::EXIT + 8 <= SLOT_BYTES) };
        assert!(l.slot(2, SLOT_BYTES) <= l.ring(0));
    }

    #[test]
    fn aux_barrier_releases_on_the_last_arrival() {
        let g = Fake::default();
        let l = Layout {
            base: gsas::addr(0, 0x20000),
            npes: 3,
        };
        l.init(&g).unwrap();
        let pause = std::time::Duration::from_millis(1);
        // Two PEs already there: this one is the last, resets the count, releases them.
        g.write(l.word(hdr::AUX_ARRIVE), 2).unwrap();
        l.aux_barrier(&g, pause).unwrap();
        assert_eq!(g.read(l.word(hdr::AUX_ARRIVE)).unwrap(), 0);
        assert_eq!(g.read(l.word(hdr::AUX_GENERATION)).unwrap(), 1);
        // A PE that waits leaves when the job is aborted, after counting itself in.
        l.abort(&g);
        assert!(l.aux_barrier(&g, pause).unwrap_err().contains("aborted"));
        assert_eq!(g.read(l.word(hdr::AUX_ARRIVE)).unwrap(), 1);
        // A one-PE job never waits.
        let one = Layout {
            base: gsas::addr(0, 0x40000),
            npes: 1,
        };
        one.aux_barrier(&g, pause).unwrap();
        assert_eq!(g.read(one.word(hdr::AUX_GENERATION)).unwrap(), 1);
    }

    #[test]
    fn untrusted_values_are_refused() {
        let g = Fake::default();
        let base = gsas::addr(0, 0x20000);
        assert!(Layout::open(&g, base)
            .unwrap_err()
            .contains("not a job descriptor"));
        g.write(base + hdr::MAGIC, MAGIC).unwrap();
        g.write(base + hdr::NPES, MAX_PES as u64 + 1).unwrap();
        assert!(Layout::open(&g, base).unwrap_err().contains("bad PE count"));
        let l = Layout { base, npes: 2 };
        let bad = [
            // heap on another node than the slot says
            Slot {
                node: 1,
                heap_addr: gsas::addr(2, 0),
                heap_len: 4096,
                ..Slot::default()
            },
            // unaligned sync page
            Slot {
                node: 1,
                sync_addr: gsas::addr(1, 8),
                ..Slot::default()
            },
            // a range past the end of the node's addresses
            Slot {
                node: 1,
                heap_addr: gsas::addr(1, 0),
                heap_len: u64::MAX,
                ..Slot::default()
            },
        ];
        for s in bad {
            l.publish(&g, 0, &s, 0).unwrap();
            assert!(l.read_slot(&g, 0).is_err(), "{s:?}");
        }
        g.write(l.slot(0, slot::NODE), 99).unwrap();
        assert!(l.read_slot(&g, 0).unwrap_err().contains("out of range"));
    }

    #[test]
    fn a_job_cannot_mix_builds_or_architectures() {
        let x86 = program_word("x86_64", 0x3000, 0x2000);
        assert_eq!(program_word("x86_64", 0x3000, 0x2000), x86);
        assert_eq!(program_mismatch(3, x86, x86), None);
        let arm = program_word("aarch64", 0x3000, 0x2000);
        let e = program_mismatch(4, arm, x86).unwrap();
        assert!(
            e.contains("PE 4 runs a build for aarch64 and this PE one for x86_64"),
            "{e}"
        );
        for other in [
            program_word("x86_64", 0x4000, 0x2000),
            program_word("x86_64", 0x3000, 0x3000),
        ] {
            let e = program_mismatch(1, other, x86).unwrap();
            assert!(e.contains("PE 1 runs another build"), "{e}");
        }
        // A word from a peer is untrusted: any value gets a message, none panics.
        let e = program_mismatch(2, u64::MAX, x86).unwrap();
        assert!(e.contains("another architecture"), "{e}");
    }
}
