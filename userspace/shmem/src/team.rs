//! OpenSHMEM 1.5 teams (see `docs/SHMEM.md`, "Teams").
//!
//! A team is an ordered list of world PEs and this PE's index in it; the C handle
//! (`shmem_team_t`) is the team's *slot* + 1, so `SHMEM_TEAM_INVALID` is 0,
//! `SHMEM_TEAM_WORLD` 1 and `SHMEM_TEAM_SHARED` 2. A slot also names the team's sync words:
//! [`SLOT_BYTES`] of every PE's sync page at [`WORDS`] + slot × [`SLOT_BYTES`], laid out as a
//! pSync (arrival, release, collect length) plus one agreement word, so the team collectives
//! are the active-set ones of [`crate::coll`] with those words as their pSync.
//!
//! Every member of a team must use the same slot for it. A split is collective over the
//! parent team: each parent member publishes the mask of the slots it uses in its agreement
//! word of the parent's slot, all read all of them, and take the lowest slots free in the
//! union. Every member of a new team is a parent member, so the slot is free on each of them.
//! Disjoint teams (the rows of a 2D split, the SHARED teams of different nodes) may share a
//! slot. There are [`MAX_TEAMS`] slots per PE, WORLD and SHARED included; a split that finds
//! none free fails on every parent member alike (non-zero, `SHMEM_TEAM_INVALID`).

use crate::coll::{self, Set};
use crate::pe::{job, Job, Region};
use crate::rma::get_at;
use crate::team_ctx::Contexts;
use std::sync::{Arc, Mutex, MutexGuard};

/// Slots per PE (bits of the agreement mask).
pub const MAX_TEAMS: usize = 64;
pub const WORLD: usize = 0;
pub const SHARED: usize = 1;
/// Offset of the team words in the sync page (below: `barrier_all`'s words).
pub const WORDS: u64 = 2048;
/// Bytes of a slot's words: arrival, release, collect length (a pSync), agreement.
pub const SLOT_BYTES: u64 = 32;
const AGREE: u64 = 24;
const _: () = assert!(WORDS + MAX_TEAMS as u64 * SLOT_BYTES <= gsas::PAGE_SIZE);
const _: () = assert!(coll::PSYNC_LONGS as u64 * 8 <= AGREE);

/// `SHMEM_TEAM_NUM_CONTEXTS`: the only configuration field.
pub const NUM_CONTEXTS: i64 = 1;

#[derive(Debug)]
pub struct Team {
    /// World PE numbers, in team order.
    pub pes: Vec<usize>,
    /// This PE's index in `pes`.
    pub me: usize,
    pub slot: usize,
    /// The contexts open on the team, and `num_contexts` if the split configured it.
    pub contexts: Contexts,
}

impl Team {
    pub fn set(&self) -> Set {
        Set {
            pes: self.pes.clone(),
            me: self.me,
        }
    }

    /// The address (in this process) of the slot's words in this PE's sync page: the pSync
    /// of the team's collectives.
    pub fn words(&self, j: &Job) -> usize {
        j.sync_va + (WORDS + self.slot as u64 * SLOT_BYTES) as usize
    }

    /// Team PE `pe`'s world number, if `pe` is one.
    pub fn world(&self, pe: i32) -> Option<usize> {
        usize::try_from(pe)
            .ok()
            .and_then(|p| self.pes.get(p).copied())
    }

    /// World PE `w`'s number in this team, if it is a member.
    pub fn index_of(&self, w: usize) -> Option<usize> {
        self.pes.iter().position(|&p| p == w)
    }
}

type Table = Vec<Option<Arc<Team>>>;
static TEAMS: Mutex<Option<Table>> = Mutex::new(None);

/// The team table, with WORLD and SHARED made from the job on first use.
fn table() -> MutexGuard<'static, Option<Table>> {
    let mut t = TEAMS.lock().unwrap_or_else(|p| p.into_inner());
    if t.is_none() {
        let j = job();
        let mut v: Table = vec![None; MAX_TEAMS];
        v[WORLD] = Some(Arc::new(Team {
            pes: (0..j.npes).collect(),
            me: j.me,
            slot: WORLD,
            contexts: Contexts::default(),
        }));
        let nodes: Vec<u16> = j.peers.iter().map(|p| p.slot.node).collect();
        let pes = shared(&nodes, j.node);
        let me = pes.iter().position(|&p| p == j.me).expect("own node");
        v[SHARED] = Some(Arc::new(Team {
            pes,
            me,
            slot: SHARED,
            contexts: Contexts::default(),
        }));
        *t = Some(v);
    }
    t
}

/// `shmem_finalize`: the teams end with the job.
pub fn reset() {
    *TEAMS.lock().unwrap_or_else(|p| p.into_inner()) = None;
}

/// The team of handle `h` (slot + 1), if it is a live team of this PE.
pub fn get(h: usize) -> Option<Arc<Team>> {
    let slot = h.checked_sub(1)?;
    table().as_ref()?.get(slot)?.clone()
}

/// The PEs of the job on `node` (`nodes`: each world PE's node), in world order.
pub fn shared(nodes: &[u16], node: u16) -> Vec<usize> {
    (0..nodes.len()).filter(|&p| nodes[p] == node).collect()
}

/// The parent indices of a strided split: `start + i * stride` for `i < size`, all in
/// `0..n`; why not, if the triplet is not valid.
pub fn strided(n: usize, start: i32, stride: i32, size: i32) -> Result<Vec<usize>, String> {
    if size < 1 {
        return Err(format!("size {size} must be at least 1"));
    }
    if stride == 0 && size > 1 {
        return Err("stride 0 names one PE several times".into());
    }
    (0..i64::from(size))
        .map(|i| {
            let p = i64::from(start) + i * i64::from(stride);
            if p < 0 || p >= n as i64 {
                Err(format!(
                    "start {start}, stride {stride}, size {size} reaches PE {p} of a team of {n}"
                ))
            } else {
                Ok(p as usize)
            }
        })
        .collect()
}

/// The parent indices of `me`'s x-axis team (its row: `xrange` consecutive indices) and
/// y-axis team (its column) in a 2D split of a team of `n`.
pub fn grid(n: usize, me: usize, xrange: usize) -> (Vec<usize>, Vec<usize>) {
    let x = xrange.min(n).max(1);
    let row = me / x * x;
    let xs = (row..(row + x).min(n)).collect();
    let ys = (me % x..n).step_by(x).collect();
    (xs, ys)
}

/// The lowest `k` slots not in `used`, if there are that many.
pub fn free_slots(used: u64, k: usize) -> Option<Vec<usize>> {
    let v: Vec<usize> = (0..MAX_TEAMS)
        .filter(|&s| used & 1 << s == 0)
        .take(k)
        .collect();
    (v.len() == k).then_some(v)
}

/// Team PE `pe` of `from` as a PE of `to` (-1 if it is not one).
pub fn translate(from: &Team, pe: i32, to: &Team) -> i32 {
    from.world(pe)
        .and_then(|w| to.index_of(w))
        .map_or(-1, |i| i as i32)
}

/// The slots this PE uses.
fn used_mask(t: &Table) -> u64 {
    t.iter()
        .enumerate()
        .filter(|(_, s)| s.is_some())
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// The union of the used-slot masks of `parent`'s members (collective over `parent`).
fn agree(j: &Job, routine: &str, parent: &Team, mine: u64) -> u64 {
    let set = parent.set();
    let words = parent.words(j);
    // SAFETY: a word of this PE's sync page, mapped for the job's life; only this PE writes it.
    unsafe { ((words + AGREE as usize) as *mut u64).write_volatile(mine) };
    coll::barrier(j, routine, &set, words);
    let off = WORDS + parent.slot as u64 * SLOT_BYTES + AGREE;
    let mut all = 0;
    for &pe in &parent.pes {
        let mut b = [0u8; 8];
        get_at(j, routine, pe, Region::Sync, off, &mut b);
        all |= u64::from_le_bytes(b);
    }
    coll::barrier(j, routine, &set, words);
    all
}

/// A new team per axis, from `parent` (collective over it): `axes[i]` holds the parent
/// indices of this PE's team on axis `i` and its `num_contexts` (`None`: not configured). Returns each axis' handle
/// (0 where this PE is not a member), or `None` when the parent's members have no slots
/// free in common.
pub fn create(
    routine: &str,
    parent: &Team,
    axes: &[(Vec<usize>, Option<usize>)],
) -> Option<Vec<usize>> {
    let j = job();
    let mine = used_mask(table().as_ref().expect("made by table"));
    let all = agree(&j, routine, parent, mine);
    let slots = free_slots(all, axes.len())?;
    let mut g = table();
    let t = g.as_mut().expect("made by table");
    let handles = axes
        .iter()
        .zip(slots)
        .map(|((idx, contexts), slot)| {
            let pes: Vec<usize> = idx.iter().map(|&i| parent.pes[i]).collect();
            let Some(me) = pes.iter().position(|&p| p == j.me) else {
                return 0;
            };
            t[slot] = Some(Arc::new(Team {
                pes,
                me,
                slot,
                contexts: Contexts::new(*contexts),
            }));
            slot + 1
        })
        .collect();
    Some(handles)
}

/// Frees team `h`'s slot (after the caller synchronized its members).
pub fn remove(h: usize) {
    if let (Some(slot), Some(t)) = (h.checked_sub(1), table().as_mut()) {
        if let Some(s) = t.get_mut(slot) {
            *s = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(pes: &[usize], me: usize) -> Team {
        Team {
            pes: pes.to_vec(),
            me,
            slot: 5,
            contexts: Contexts::default(),
        }
    }

    #[test]
    fn strided_splits() {
        assert_eq!(strided(6, 0, 2, 3).unwrap(), [0, 2, 4]);
        assert_eq!(strided(6, 5, -2, 3).unwrap(), [5, 3, 1]);
        assert_eq!(strided(6, 4, 0, 1).unwrap(), [4]);
        assert!(strided(6, 0, 2, 4).unwrap_err().contains("reaches PE 6"));
        assert!(strided(6, 1, -1, 3).unwrap_err().contains("reaches PE -1"));
        assert!(strided(6, 0, 0, 2).is_err());
        assert!(strided(6, 0, 1, 0).is_err());
        assert!(strided(6, -1, 1, 1).is_err());
        assert!(strided(4, 0, i32::MAX, 2).is_err());
    }

    #[test]
    fn grids() {
        // 7 PEs, rows of 3: 0 1 2 / 3 4 5 / 6.
        assert_eq!(grid(7, 4, 3), (vec![3, 4, 5], vec![1, 4]));
        assert_eq!(grid(7, 6, 3), (vec![6], vec![0, 3, 6]));
        assert_eq!(grid(7, 2, 3), (vec![0, 1, 2], vec![2, 5]));
        // One column; one row when xrange is the size or more.
        assert_eq!(grid(3, 1, 1), (vec![1], vec![0, 1, 2]));
        assert_eq!(grid(3, 1, 8), (vec![0, 1, 2], vec![1]));
    }

    #[test]
    fn slots_and_translation() {
        assert_eq!(free_slots(0b11, 2).unwrap(), [2, 3]);
        assert_eq!(free_slots(0b1011, 1).unwrap(), [2]);
        assert_eq!(free_slots(u64::MAX, 1), None);
        assert_eq!(free_slots(u64::MAX >> 1, 1).unwrap(), [63]);
        assert_eq!(free_slots(u64::MAX >> 1, 2), None);
        let world = team(&[0, 1, 2, 3, 4, 5], 3);
        let odd = team(&[1, 3, 5], 1);
        assert_eq!(translate(&odd, 2, &world), 5);
        assert_eq!(translate(&world, 3, &odd), 1);
        assert_eq!(translate(&world, 2, &odd), -1);
        assert_eq!(translate(&odd, 3, &world), -1);
        assert_eq!(translate(&odd, -1, &world), -1);
        assert_eq!(shared(&[1, 1, 2, 2, 3, 1], 1), [0, 1, 5]);
        assert_eq!(odd.world(0), Some(1));
        assert_eq!(odd.index_of(4), None);
    }
}
