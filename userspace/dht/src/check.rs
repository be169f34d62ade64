//! The concurrency checker (`unimem-dht-test check`, and the unit tests over the fake cluster):
//! threads run puts, gets and deletes on keys they own alone, keys the threads of this process
//! share and keys every process shares; each records its history. Then [`verify`] checks that
//! * every value a get returned is whole: its high half is a hash of its low half and the key,
//!   so a torn 128-bit value, or one put for another key, shows;
//! * it was put for that key: by a writer allowed to write that key, and, for writers of this
//!   process, by a put that was issued;
//! * a thread reads its own keys as it last wrote them (no writer but it exists);
//!
//! and [`final_check`] that, when everyone is done, no update is lost: an owned key holds its
//! owner's last put (or nothing after a delete), a key of this process the last put of one of
//! its threads. Keys every process shares need every process's history: each process hands
//! its threads' last writes of them on ([`global_last_writes`], [`format_last_writes`]), and
//! [`final_global`] checks the table against all of them once every process is done.

use crate::hash::mix;
use crate::{Dht, Result};
use gsas::measure::Rng;
use gsas::Transport;
use std::collections::{BTreeMap, BTreeSet};

/// What one thread does.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Node of the process (key spaces and writer ids are per node).
    pub node: u16,
    /// Thread index in the process (0..64).
    pub thread: u16,
    pub ops: u64,
    pub own_keys: u64,
    pub shared_keys: u64,
    pub global_keys: u64,
    /// Percent of puts and of deletes (the rest are gets).
    pub put_pct: u64,
    pub delete_pct: u64,
    /// Seeds the choices; its low 20 bits also name the run in the keys.
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Put { key: u64, value: u128 },
    Get { key: u64, got: Option<u128> },
    Delete { key: u64, found: bool },
}

/// Who may write a key: its class and the writer or node it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Own(u64),
    Shared(u16),
    Global,
}

pub fn writer_id(node: u16, thread: u16) -> u64 {
    u64::from(node) << 6 | u64::from(thread & 63)
}

// Keys: class in bits 62-63, the run (so that runs on one table do not mix) in bits 42-61, the
// writer (own) or node (shared) in bits 32-41, the index below.
fn key(class: u64, run: u64, who: u64, i: u64) -> u64 {
    class << 62 | (run & 0xf_ffff) << 42 | (who & 0x3ff) << 32 | i & 0xffff_ffff
}

pub fn own_key(run: u64, writer: u64, i: u64) -> u64 {
    key(1, run, writer, i)
}

pub fn shared_key(run: u64, node: u16, i: u64) -> u64 {
    key(2, run, u64::from(node), i)
}

pub fn global_key(run: u64, i: u64) -> u64 {
    key(3, run, 0, i)
}

pub fn class(key: u64) -> Class {
    let who = key >> 32 & 0x3ff;
    match key >> 62 {
        1 => Class::Own(who),
        2 => Class::Shared(who as u16),
        _ => Class::Global,
    }
}

/// The value a writer's `seq`-th put to `key` stores: low half writer and seq, high half a hash
/// of the low half and the key.
pub fn value(key: u64, writer: u64, seq: u64) -> u128 {
    let lo = writer << 40 | seq & ((1 << 40) - 1);
    u128::from(mix(lo ^ mix(key))) << 64 | u128::from(lo)
}

/// The writer of a value read for `key`, or `None` if the value is torn or not one of `key`'s.
pub fn writer_of(key: u64, v: u128) -> Option<u64> {
    let lo = v as u64;
    (((v >> 64) as u64) == mix(lo ^ mix(key))).then_some(lo >> 40)
}

/// Runs a plan on a table: the history, or the first error.
pub fn run<T: Transport>(t: &Dht<T>, p: &Plan) -> Result<Vec<Op>> {
    let me = writer_id(p.node, p.thread);
    let mut rng = Rng::new(p.seed ^ me << 20);
    let mut h = Vec::with_capacity(p.ops as usize);
    for seq in 0..p.ops {
        let key = match rng.below(p.own_keys + p.shared_keys + p.global_keys) {
            i if i < p.own_keys => own_key(p.seed, me, i),
            i if i < p.own_keys + p.shared_keys => shared_key(p.seed, p.node, i - p.own_keys),
            i => global_key(p.seed, i - p.own_keys - p.shared_keys),
        };
        let dice = rng.below(100);
        h.push(if dice < p.put_pct {
            let v = value(key, me, seq);
            t.put(key, v)?;
            Op::Put { key, value: v }
        } else if dice < p.put_pct + p.delete_pct {
            Op::Delete {
                key,
                found: t.delete(key)?,
            }
        } else {
            Op::Get {
                key,
                got: t.get(key)?,
            }
        });
    }
    Ok(h)
}

/// What verification found.
#[derive(Debug, Default, Clone)]
pub struct Report {
    pub puts: u64,
    pub gets: u64,
    pub deletes: u64,
    pub gets_found: u64,
    /// Values from other processes' writers (checked by their hash and writer only).
    pub foreign: u64,
    pub torn: u64,
    /// Every violation, described (the first ones; `violations` counts them all).
    pub problems: Vec<String>,
    pub violations: u64,
}

impl Report {
    fn bad(&mut self, what: String) {
        self.violations += 1;
        if self.problems.len() < 20 {
            self.problems.push(what);
        }
    }

    pub fn ok(&self) -> bool {
        self.violations == 0
    }
}

/// Whether `writer` may have put `key`.
fn allowed(key: u64, writer: u64) -> bool {
    match class(key) {
        Class::Own(w) => w == writer,
        Class::Shared(n) => writer >> 6 == u64::from(n),
        Class::Global => true,
    }
}

/// Checks the histories of this process's threads (`plans[i]` made `histories[i]`).
pub fn verify(plans: &[Plan], histories: &[Vec<Op>]) -> Report {
    let mut r = Report::default();
    let mine: BTreeSet<u64> = plans.iter().map(|p| writer_id(p.node, p.thread)).collect();
    let issued: BTreeSet<(u64, u128)> = histories
        .iter()
        .flatten()
        .filter_map(|o| match *o {
            Op::Put { key, value } => Some((key, value)),
            _ => None,
        })
        .collect();
    for (p, h) in plans.iter().zip(histories) {
        let me = writer_id(p.node, p.thread);
        // This thread's own keys as it last left them.
        let mut own: BTreeMap<u64, Option<u128>> = BTreeMap::new();
        for (i, o) in h.iter().enumerate() {
            match *o {
                Op::Put { key, value } => {
                    r.puts += 1;
                    if class(key) == Class::Own(me) {
                        own.insert(key, Some(value));
                    }
                }
                Op::Delete { key, .. } => {
                    r.deletes += 1;
                    if class(key) == Class::Own(me) {
                        own.insert(key, None);
                    }
                }
                Op::Get { key, got } => {
                    r.gets += 1;
                    if class(key) == Class::Own(me) {
                        let want = own.get(&key).copied().flatten();
                        if got != want {
                            r.bad(format!("thread {me:#x} op {i}: get of its own key {key:#x} returned {got:x?}, it last wrote {want:x?}"));
                        }
                    }
                    let Some(v) = got else { continue };
                    r.gets_found += 1;
                    match writer_of(key, v) {
                        None => {
                            r.torn += 1;
                            r.bad(format!("thread {me:#x} op {i}: get {key:#x} returned {v:#x}: torn, or a value of another key"));
                        }
                        Some(w) if !allowed(key, w) => r.bad(format!(
                            "thread {me:#x} op {i}: get {key:#x} returned a value of writer {w:#x}, which never writes that key"
                        )),
                        Some(w) if mine.contains(&w) => {
                            if !issued.contains(&(key, v)) {
                                r.bad(format!("thread {me:#x} op {i}: get {key:#x} returned {v:#x}, never put"));
                            }
                        }
                        Some(_) => r.foreign += 1,
                    }
                }
            }
        }
    }
    r
}

/// After every writer has finished: reads every key this process's threads own or share and
/// checks that no update was lost (see the module documentation). Adds to `r`.
pub fn final_check<T: Transport>(
    t: &Dht<T>,
    plans: &[Plan],
    histories: &[Vec<Op>],
    r: &mut Report,
) -> Result<u64> {
    // Per key of this process: each thread's last operation on it (None: a delete).
    let mut last: BTreeMap<u64, Vec<Option<u128>>> = BTreeMap::new();
    for h in histories {
        for (k, v) in last_writes(h) {
            if class(k) != Class::Global {
                last.entry(k).or_default().push(v);
            }
        }
    }
    for p in plans {
        let me = writer_id(p.node, p.thread);
        for i in 0..p.own_keys {
            let k = own_key(p.seed, me, i);
            last.entry(k).or_insert_with(|| vec![None]);
        }
    }
    check_last(t, &last, r)
}

/// A thread's last write of each key it wrote (None: a delete).
fn last_writes(h: &[Op]) -> BTreeMap<u64, Option<u128>> {
    let mut mine = BTreeMap::new();
    for o in h {
        match *o {
            Op::Put { key, value } => {
                mine.insert(key, Some(value));
            }
            Op::Delete { key, .. } => {
                mine.insert(key, None);
            }
            Op::Get { .. } => {}
        }
    }
    mine
}

/// Each thread's last write of every key all processes share: (key, value or None).
pub fn global_last_writes(histories: &[Vec<Op>]) -> Vec<(u64, Option<u128>)> {
    histories
        .iter()
        .flat_map(|h| last_writes(h).into_iter())
        .filter(|(k, _)| class(*k) == Class::Global)
        .collect()
}

/// One `key value` line per last write (hex; `-` for a delete).
pub fn format_last_writes(writes: &[(u64, Option<u128>)]) -> String {
    writes
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("{k:#x} {v:#x}\n"),
            None => format!("{k:#x} -\n"),
        })
        .collect()
}

/// Reads what [`format_last_writes`] wrote; an error names the first bad line.
pub fn parse_last_writes(text: &str) -> std::result::Result<Vec<(u64, Option<u128>)>, String> {
    let hex = |w: &str| w.strip_prefix("0x").map(|d| u128::from_str_radix(d, 16));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let bad = || {
                format!(
                    "line {}: {l:?} is not `KEY VALUE` (hex, VALUE `-` for a delete)",
                    i + 1
                )
            };
            let mut w = l.split_whitespace();
            let (Some(k), Some(v), None) = (w.next(), w.next(), w.next()) else {
                return Err(bad());
            };
            let k = hex(k)
                .and_then(|k| k.ok())
                .and_then(|k| u64::try_from(k).ok())
                .ok_or_else(bad)?;
            let v = match v {
                "-" => None,
                v => Some(hex(v).and_then(|v| v.ok()).ok_or_else(bad)?),
            };
            Ok((k, v))
        })
        .collect()
}

/// After every process has finished: each key all of them share holds the last write of one
/// of the threads in `writes` (every process's [`global_last_writes`]). Adds to `r`.
pub fn final_global<T: Transport>(
    t: &Dht<T>,
    writes: &[(u64, Option<u128>)],
    r: &mut Report,
) -> Result<u64> {
    let mut last: BTreeMap<u64, Vec<Option<u128>>> = BTreeMap::new();
    for &(k, v) in writes {
        last.entry(k).or_default().push(v);
    }
    check_last(t, &last, r)
}

/// Reads every key of `last` and reports those that hold none of their candidates.
fn check_last<T: Transport>(
    t: &Dht<T>,
    last: &BTreeMap<u64, Vec<Option<u128>>>,
    r: &mut Report,
) -> Result<u64> {
    let mut checked = 0;
    for (k, candidates) in last {
        let got = t.get(*k)?;
        checked += 1;
        if !candidates.contains(&got) {
            r.bad(format!(
                "final value of {k:#x} is {got:x?}, not the last write of any thread ({candidates:x?}): an update was lost"
            ));
        }
    }
    Ok(checked)
}
