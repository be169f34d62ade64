//! Chaos (`unimem-gas-test scribble`): random bytes over a node's mailbox rings (and optionally
//! the rest of its partition), as a hostile or broken peer would write them. The target must
//! stay up, count what it drops and resync what it cannot trust.

use std::time::{Duration, Instant};
use unimem_wire::mailbox::{layout, service, Kmsg, INTERFACES};

/// Where `scribble` writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Only the ring area (`layout::RESERVED` bytes at the start of the partition).
    Rings,
    /// The ring area, and a window of the partition beyond it.
    AllPartition,
}

/// What one run did, for the log.
#[derive(Default, Debug)]
pub struct Tally {
    pub plausible_tails: u64,
    pub wild_indices: u64,
    pub garbage_slots: u64,
    pub forged_kmsgs: u64,
    pub random_words: u64,
    /// Tail rewrites that chase the receiver's head (always a full ring ahead of it).
    pub chased_tails: u64,
    pub doorbells: u64,
}

/// What [`scribble`] does, and until when.
#[derive(Clone, Copy)]
pub struct Plan {
    pub target: Target,
    /// Nodes in the cluster (the senders whose rings a chase picks from).
    pub nodes: u32,
    /// Length of each chase; zero: random phases only.
    pub chase: Duration,
    pub deadline: Instant,
}

/// How long a random phase lasts between chases.
const RANDOM_PHASE: Duration = Duration::from_secs(1);
/// Interface whose rings a chase picks: the one a freshly loaded driver hands out first.
const CHASED_IFACE: u32 = 0;

/// xorshift64*: deterministic from the seed, good enough for chaos.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9e37_79b9_7f4a_7c15 | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-ish in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Number of rings in the ring area: one per (interface, sender) plus one kernel-message ring
/// per sender.
const RINGS: u64 = (INTERFACES as u64 + 1) * unimem_wire::gas::MAX_NODES as u64;

/// Writes chaos into `area` (the start of the target partition, at least `layout::RESERVED`
/// bytes long) until the plan's deadline; calls `doorbell` about every millisecond so the
/// target looks. Alternates random phases ([`RANDOM_PHASE`]) with chases (none if the plan's
/// `chase` is zero): one ring (alternately a packet ring of interface 0 and a kernel-message
/// ring, fed by one of the plan's senders) whose tail is kept a full ring ahead of the head
/// however fast the receiver consumes: the peer that a receiver draining "until empty" never
/// gets away from (while this process runs at the same time as the receiver).
///
/// # Safety
///
/// `area` must be valid for writes of `len` bytes and 4-byte aligned. Other nodes write it
/// concurrently; all accesses are volatile.
pub unsafe fn scribble(
    area: *mut u8,
    len: usize,
    plan: &Plan,
    rng: &mut Rng,
    mut doorbell: impl FnMut(),
) -> Tally {
    let Plan {
        target,
        nodes,
        chase,
        deadline,
    } = *plan;
    let mut tally = Tally::default();
    let reserved = layout::RESERVED.min(len);
    let nodes = u64::from(nodes.clamp(1, unimem_wire::gas::MAX_NODES));
    let mut last_bell = Instant::now();
    let mut chased: Option<usize> = None;
    let mut chases = 0u32;
    let mut phase_end = Instant::now() + RANDOM_PHASE;
    while Instant::now() < deadline {
        if Instant::now() >= phase_end {
            chased = match chased {
                None if !chase.is_zero() => {
                    let sender = rng.below(nodes) as u32;
                    chases += 1;
                    // Alternately a packet ring and a kernel-message ring, starting with a
                    // packet ring.
                    Some(if chases % 2 == 1 {
                        log::info!(
                            "chasing the interface {CHASED_IFACE} ring fed by node {sender}"
                        );
                        layout::packet_ring(CHASED_IFACE, sender)
                    } else {
                        log::info!("chasing the kernel-message ring fed by node {sender}");
                        layout::kmsg_ring(sender)
                    })
                }
                _ => None,
            };
            phase_end = Instant::now()
                + if chased.is_some() {
                    chase
                } else {
                    RANDOM_PHASE
                };
        }
        if let Some(ring) = chased.filter(|&r| r + layout::RING_STRIDE <= reserved) {
            // SAFETY: the ring lies inside `reserved` bytes of `area`; aligned u32 accesses.
            unsafe {
                let head = area.add(ring + layout::HEAD_OFFSET).cast::<u32>();
                let tail = area.add(ring + layout::TAIL_OFFSET).cast::<u32>();
                for _ in 0..64 {
                    tail.write_volatile(head.read_volatile().wrapping_add(layout::SLOTS));
                }
            }
            tally.chased_tails += 64;
        } else {
            for _ in 0..64 {
                let ring = rng.below(RINGS) as usize * layout::RING_STRIDE;
                let sender =
                    (ring / layout::RING_STRIDE) as u64 % unimem_wire::gas::MAX_NODES as u64;
                // SAFETY (all writes below): offsets stay inside `reserved` or `len` bytes of `area`,
                // u32 writes at 4-byte aligned offsets (the caller's contract).
                unsafe {
                    let head = area.add(ring + layout::HEAD_OFFSET).cast::<u32>();
                    let tail = area.add(ring + layout::TAIL_OFFSET).cast::<u32>();
                    match rng.below(if target == Target::AllPartition { 6 } else { 5 }) {
                        0 => {
                            // Tail a plausible distance ahead of head: garbage that looks queued.
                            let h = head.read_volatile();
                            tail.write_volatile(
                                h.wrapping_add(rng.below(u64::from(layout::SLOTS) + 1) as u32),
                            );
                            tally.plausible_tails += 1;
                        }
                        1 => {
                            let which = if rng.below(2) == 0 { head } else { tail };
                            which.write_volatile(rng.next_u64() as u32);
                            tally.wild_indices += 1;
                        }
                        2 => {
                            let slot = area.add(
                                ring + layout::RING_HEADER
                                    + rng.below(u64::from(layout::SLOTS)) as usize
                                        * layout::SLOT_LEN,
                            );
                            for i in 0..layout::SLOT_LEN {
                                slot.add(i).write_volatile(rng.next_u64() as u8);
                            }
                            tally.garbage_slots += 1;
                        }
                        3 => {
                            // A well-formed kernel message with a random service and word, in a
                            // kernel-message ring, claiming the ring's own sender.
                            let kring = layout::kmsg_ring(sender as u32);
                            let slot = area.add(
                                kring
                                    + layout::RING_HEADER
                                    + rng.below(u64::from(layout::SLOTS)) as usize
                                        * layout::SLOT_LEN,
                            );
                            let msg = Kmsg {
                                service: 1 + rng.below(u64::from(service::COUNT - 1)) as u32,
                                sender: sender as u32,
                                word: rng.next_u64(),
                            };
                            for (i, b) in msg.encode().iter().enumerate() {
                                slot.add(i).write_volatile(*b);
                            }
                            tally.forged_kmsgs += 1;
                        }
                        4 => {
                            let at = rng.below((reserved / 4) as u64) as usize * 4;
                            area.add(at)
                                .cast::<u32>()
                                .write_volatile(rng.next_u64() as u32);
                            tally.random_words += 1;
                        }
                        _ => {
                            let at = rng.below((len / 4) as u64) as usize * 4;
                            area.add(at)
                                .cast::<u32>()
                                .write_volatile(rng.next_u64() as u32);
                            tally.random_words += 1;
                        }
                    }
                }
            }
        }
        if last_bell.elapsed() >= Duration::from_millis(1) {
            doorbell();
            tally.doorbells += 1;
            last_bell = Instant::now();
        }
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_inside_the_area() {
        // One spare word on each side must stay untouched.
        let words = layout::RESERVED / 4 + 2;
        let mut buf = vec![0u32; words];
        let mut rng = Rng::new(7);
        let area = buf[1..].as_mut_ptr().cast::<u8>();
        // SAFETY: `area` covers `RESERVED` bytes of `buf`, 4-byte aligned.
        let tally = unsafe {
            scribble(
                area,
                layout::RESERVED,
                &Plan {
                    target: Target::AllPartition,
                    nodes: 4,
                    chase: Duration::from_millis(20),
                    deadline: Instant::now() + Duration::from_millis(50),
                },
                &mut rng,
                || {},
            )
        };
        assert!(tally.garbage_slots > 0 && tally.wild_indices > 0);
        assert!(tally.chased_tails == 0, "the first phase is random");
        assert_eq!(buf[0], 0);
        assert_eq!(buf[words - 1], 0);
    }

    #[test]
    fn seeded() {
        let (mut a, mut b) = (Rng::new(3), Rng::new(3));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
        assert_ne!(Rng::new(3).next_u64(), Rng::new(4).next_u64());
    }
}
