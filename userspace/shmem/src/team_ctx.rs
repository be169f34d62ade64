//! Team contexts (`shmem_team_create_ctx`): how many a team may have open at once, and the
//! team PE numbers their RMA and atomics take.
//!
//! A team split with `SHMEM_TEAM_NUM_CONTEXTS` in its configuration mask may have at most
//! `num_contexts` contexts open at once: one more fails (non-zero, `SHMEM_CTX_INVALID`) until
//! one is destroyed. Without the mask there is no limit (the spec's default would allow none,
//! which programs that never configure a team do not expect). Each context holds a [`Seat`],
//! which keeps its team alive and gives its place back when the context is destroyed, even
//! after the team itself was destroyed and its slot reused by another.

use crate::team::Team;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A team's context count and limit.
#[derive(Debug, Default)]
pub struct Contexts {
    /// `num_contexts`, when the split's mask had `SHMEM_TEAM_NUM_CONTEXTS`.
    limit: Option<usize>,
    open: AtomicUsize,
}

impl Contexts {
    pub fn new(limit: Option<usize>) -> Contexts {
        Contexts {
            limit,
            open: AtomicUsize::new(0),
        }
    }

    /// `num_contexts` as `shmem_team_get_config` reports it: as configured, else 0.
    pub fn configured(&self) -> i32 {
        self.limit
            .map_or(0, |l| i32::try_from(l).unwrap_or(i32::MAX))
    }

    /// Takes a place for one more context, if the limit leaves one (threads may race here).
    fn take(&self) -> bool {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                self.limit.is_none_or(|l| n < l).then_some(n + 1)
            })
            .is_ok()
    }

    fn give_back(&self) {
        let _ = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }
}

/// A context's place in its team's count, given back when dropped (`shmem_ctx_destroy`).
#[derive(Debug)]
pub struct Seat {
    team: Arc<Team>,
}

impl Seat {
    /// A place in `team`'s contexts, or `None` if its `num_contexts` are all open.
    pub fn take(team: Arc<Team>) -> Option<Seat> {
        // Not `then_some`: a Seat made and dropped for a refusal would give back a place.
        if team.contexts.take() {
            Some(Seat { team })
        } else {
            None
        }
    }

    pub fn team(&self) -> &Arc<Team> {
        &self.team
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.team.contexts.give_back();
    }
}

/// The world PE of a context's team PE `pe`; why not, if `pe` is not one of the team.
pub fn world_pe(team: &Team, pe: i32) -> Result<usize, String> {
    team.world(pe).ok_or_else(|| {
        format!(
            "PE {pe} is not a PE of the context's team (size {})",
            team.pes.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(pes: &[usize], limit: Option<usize>) -> Arc<Team> {
        Arc::new(Team {
            pes: pes.to_vec(),
            me: 0,
            slot: 7,
            contexts: Contexts::new(limit),
        })
    }

    #[test]
    fn the_limit_holds_and_frees() {
        let t = team(&[0, 2, 4], Some(2));
        assert_eq!(t.contexts.configured(), 2);
        let a = Seat::take(t.clone()).expect("first");
        let b = Seat::take(t.clone()).expect("second");
        assert!(Seat::take(t.clone()).is_none(), "a third of 2");
        assert_eq!(t.contexts.open(), 2);
        drop(a);
        let c = Seat::take(t.clone()).expect("a freed place");
        assert!(Seat::take(t.clone()).is_none());
        drop((b, c));
        assert_eq!(t.contexts.open(), 0);
        // num_contexts 0 with the mask: no context at all.
        let none = team(&[1], Some(0));
        assert!(Seat::take(none.clone()).is_none());
        assert_eq!(none.contexts.configured(), 0);
    }

    #[test]
    fn no_mask_no_limit() {
        let t = team(&[0, 1], None);
        let seats: Vec<Seat> = (0..100).filter_map(|_| Seat::take(t.clone())).collect();
        assert_eq!(seats.len(), 100);
        assert_eq!(t.contexts.configured(), 0);
        drop(seats);
        assert_eq!(t.contexts.open(), 0);
    }

    #[test]
    fn a_seat_outlives_its_team_slot() {
        // The team leaves the table (destroyed); the context's seat still counts on it.
        let t = team(&[3, 5], Some(1));
        let s = Seat::take(t.clone()).expect("one");
        drop(t);
        assert_eq!(s.team().contexts.open(), 1);
        assert_eq!(s.team().pes, [3, 5]);
    }

    #[test]
    fn team_pes_to_world() {
        // Stride 2 from 0: team PE 1 is world PE 2.
        let even = team(&[0, 2, 4], None);
        assert_eq!(world_pe(&even, 1), Ok(2));
        assert_eq!(world_pe(&even, 0), Ok(0));
        assert!(world_pe(&even, 3).unwrap_err().contains("size 3"));
        assert!(world_pe(&even, -1).is_err());
    }
}
