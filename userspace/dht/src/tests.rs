//! Unit tests over the fake cluster (`fake.rs`): the operations, collisions and full
//! containers, trees, create/destroy leaving nothing behind, malformed table contents, and the
//! concurrency checker on threads (and that it can fail).

use crate::check::{self, Op, Plan};
use crate::entry::{holder_id, state, Entry, CONTAINER_ENTRIES, ENTRY_BYTES};
use crate::fake::{Cluster, Handle, OTHER_TREE, TREE};
use crate::hash::h1;
use crate::{Config, Dht, Error, INVALID};
use std::time::Duration;

fn table(c: &Cluster, capacity: u64) -> Dht<Handle> {
    Dht::create(c.handle(1, 0, TREE), &[0, 1, 2, 3], capacity, 0).unwrap()
}

/// `n` keys that all hash to first-level entry of key `k0`, starting with `k0`.
fn colliding(t: &Dht<Handle>, k0: u64, n: usize) -> Vec<u64> {
    let l = t.layout();
    let slot = h1(l.seed1, k0, l.size());
    (k0..)
        .filter(|&k| h1(l.seed1, k, l.size()) == slot)
        .take(n)
        .collect()
}

fn slot_addr(t: &Dht<Handle>, k: u64) -> u64 {
    let l = t.layout();
    l.entry_addr(h1(l.seed1, k, l.size()))
}

fn quick(t: &mut Dht<Handle>) {
    t.set_config(Config {
        busy_tries: 50,
        busy_timeout: Duration::from_secs(2),
        stale_after: Duration::from_millis(10),
        ..Config::default()
    });
}

#[test]
fn put_get_replace_delete() {
    let c = Cluster::new(4, 64);
    let t = table(&c, 100);
    assert_eq!(t.get(5).unwrap(), None);
    t.put(5, 1 << 100 | 7).unwrap();
    assert_eq!(t.get(5).unwrap(), Some(1 << 100 | 7));
    t.put(5, 8).unwrap();
    assert_eq!(t.get(5).unwrap(), Some(8));
    assert!(matches!(t.put(5, INVALID), Err(Error::InvalidValue)));
    assert_eq!(t.get(5).unwrap(), Some(8), "a refused put changes nothing");
    assert!(t.delete(5).unwrap());
    assert!(!t.delete(5).unwrap());
    assert_eq!(t.get(5).unwrap(), None);
    for k in 0..300u64 {
        t.put(k * 7919, u128::from(k) << 64 | u128::from(k))
            .unwrap();
    }
    for k in 0..300u64 {
        assert_eq!(
            t.get(k * 7919).unwrap(),
            Some(u128::from(k) << 64 | u128::from(k))
        );
    }
    let s = t.scan().unwrap();
    assert_eq!(s.keys(), 300);
    assert_eq!((s.locked, s.malformed), (0, 0));
    assert!(
        s.indirect > 0,
        "300 keys in 512 entries make some containers"
    );
}

#[test]
fn puts_to_an_empty_or_own_entry_take_no_lock_the_others_do() {
    let c = Cluster::new(4, 64);
    let t = table(&c, 100);
    let keys = colliding(&t, 11, 2);
    t.put(keys[0], 1).unwrap();
    t.put(keys[0], 2).unwrap();
    let s = t.stats();
    assert_eq!(
        (s.unlocked_puts, s.locks, s.unlocked_misses),
        (2, 0, 0),
        "{s:?}"
    );
    let e = Entry::decode(t.gsas().read256(slot_addr(&t, keys[0])).unwrap());
    assert_eq!(
        (e.state, e.lock, e.key, e.value),
        (state::PAIR, 0, keys[0], 2)
    );
    assert_eq!(e.version, 2, "each put moved the version on");
    // Another key in the entry: a container, under the lock.
    t.put(keys[1], 3).unwrap();
    let s = t.stats();
    assert_eq!((s.unlocked_puts, s.locks, s.containers), (2, 1, 1), "{s:?}");
    assert_eq!(
        (t.get(keys[0]).unwrap(), t.get(keys[1]).unwrap()),
        (Some(2), Some(3))
    );
}

#[test]
fn the_first_level_is_spread_over_the_nodes_in_slices() {
    let c = Cluster::new(4, 64);
    let t = table(&c, 1000);
    let l = t.layout();
    assert_eq!(l.nodes(), [0, 1, 2, 3]);
    assert_eq!(l.per_node, 1024);
    assert_eq!(gsas::node_of(l.entry_addr(0)), 0);
    assert_eq!(gsas::node_of(l.entry_addr(1023)), 0);
    assert_eq!(gsas::node_of(l.entry_addr(1024)), 1);
    assert_eq!(gsas::node_of(l.entry_addr(4095)), 3);
}

#[test]
fn colliding_keys_share_a_container_on_the_entry_node_until_it_is_full() {
    let c = Cluster::new(4, 64);
    let t = table(&c, 100);
    let keys = colliding(&t, 1, 129);
    let a = slot_addr(&t, keys[0]);
    for (i, &k) in keys[..128].iter().enumerate() {
        t.put(k, i as u128).unwrap();
    }
    let e = Entry::decode(t.gsas().read256(a).unwrap());
    assert_eq!(e.state, state::INDIRECT);
    assert_eq!(
        gsas::node_of(e.key),
        gsas::node_of(a),
        "the container is on the entry's node"
    );
    for (i, &k) in keys[..128].iter().enumerate() {
        assert_eq!(t.get(k).unwrap(), Some(i as u128));
    }
    match t.put(keys[128], 1) {
        Err(Error::Full { key, .. }) => assert_eq!(key, keys[128]),
        r => panic!("129th key: {r:?}"),
    }
    assert_eq!(t.get(keys[128]).unwrap(), None);
    let e2 = Entry::decode(t.gsas().read256(a).unwrap());
    assert!(!e2.locked(), "a failed put unlocks");
    // Replacing stays possible in a full container; a delete makes room.
    t.put(keys[3], 99).unwrap();
    assert_eq!(t.get(keys[3]).unwrap(), Some(99));
    assert!(t.delete(keys[5]).unwrap());
    t.put(keys[128], 7).unwrap();
    assert_eq!(t.get(keys[128]).unwrap(), Some(7));
    assert_eq!(t.get(keys[5]).unwrap(), None);
    for (i, &k) in keys[..128].iter().enumerate() {
        let want = match i {
            3 => Some(99),
            5 => None,
            _ => Some(i as u128),
        };
        assert_eq!(t.get(k).unwrap(), want, "key {i}");
    }
}

#[test]
fn a_put_that_fails_after_locking_unlocks_and_changes_no_pair() {
    // Node 0 holds the root and its slice and nothing more: no room for a container there.
    let c = Cluster::with_pages(&[(0, 3), (1, 64)]);
    let t = Dht::create(c.handle(0, 0, TREE), &[0, 1], 10, 0).unwrap();
    let k0 = (0..)
        .find(|&k| gsas::node_of(slot_addr(&t, k)) == 0)
        .unwrap();
    let keys = colliding(&t, k0, 2);
    t.put(keys[0], 1).unwrap();
    let before = Entry::decode(t.gsas().read256(slot_addr(&t, k0)).unwrap());
    let e = t.put(keys[1], 2).unwrap_err();
    assert!(matches!(e, Error::Gsas(gsas::Error::NoMemory(_))), "{e}");
    let after = Entry::decode(t.gsas().read256(slot_addr(&t, k0)).unwrap());
    assert!(!after.locked());
    assert_eq!(
        (after.state, after.key, after.value),
        (before.state, before.key, before.value)
    );
    assert_eq!(after.version, before.version.wrapping_add(1));
    assert_eq!(t.get(keys[0]).unwrap(), Some(1));
    assert_eq!(t.get(keys[1]).unwrap(), None);
    t.destroy().unwrap();
    assert_eq!(c.allocations(), 0);
}

#[test]
fn a_dead_holders_lock_is_broken_a_live_or_stopped_ones_is_not() {
    let c = Cluster::new(4, 64);
    let mut t = table(&c, 100);
    quick(&mut t);
    t.put(1, 10).unwrap();
    // A live holder on node 2 keeps key 1 locked: others wait, then give up.
    let w = Dht::open(c.handle(2, 5, TREE), t.root()).unwrap();
    let a = w.hold(1).unwrap();
    assert!(matches!(
        t.put(1, 11),
        Err(Error::Busy {
            node: 2,
            iface: 5,
            ..
        })
    ));
    assert!(matches!(t.get(1), Err(Error::Busy { .. })));
    assert_eq!(
        t.stats().broken_locks,
        0,
        "a live holder's lock is never broken"
    );
    assert!(
        matches!(t.release(1), Err(Error::Argument(_))),
        "not this handle's lock"
    );
    // It releases: nothing was broken, the pair is as it was.
    w.release(1).unwrap();
    assert_eq!(t.get(1).unwrap(), Some(10));
    // It takes the lock again and dies: the next writer breaks the lock and goes on.
    w.hold(1).unwrap();
    drop(w);
    t.put(1, 12).unwrap();
    assert_eq!(t.get(1).unwrap(), Some(12));
    assert_eq!(t.stats().broken_locks, 1);
    // A holder whose interface another thread of the tree got since: still dead.
    let w = Dht::open(c.handle(2, 5, TREE), t.root()).unwrap();
    w.hold(1).unwrap();
    drop(w);
    let _later = c.handle(2, 5, TREE);
    assert_eq!(t.get(1).unwrap(), Some(12));
    assert_eq!(t.stats().broken_locks, 2);
    // The interface held by another tree tells this tree nothing: the holder counts as gone.
    let w = Dht::open(c.handle(3, 9, TREE), t.root()).unwrap();
    w.hold(1).unwrap();
    drop(w);
    let _other = c.handle(3, 9, OTHER_TREE);
    t.put(1, 13).unwrap();
    assert_eq!(t.stats().broken_locks, 3);
    assert_eq!(Entry::decode(t.gsas().read256(a).unwrap()).lock, 0);
}

#[test]
fn destroy_frees_containers_that_were_never_linked_and_nothing_of_another_tree() {
    let c = Cluster::new(4, 64);
    let before = c.allocations();
    let t = table(&c, 100);
    let keys = colliding(&t, 7, 2);
    t.put(keys[0], 1).unwrap();
    t.put(keys[1], 2).unwrap();
    assert_eq!(t.stats().containers, 1, "the second key split the entry");
    // Containers this tree allocated and lost: tagged with the root, linked nowhere.
    let g = c.handle(2, 8, TREE);
    let lost = [
        g.alloc_tagged(1, 1, t.root()).unwrap(),
        g.alloc_tagged(3, 2, t.root()).unwrap(),
    ];
    // Another tree's page with the same tag, and this tree's page with another tag.
    let other = c.handle(2, 9, OTHER_TREE);
    let foreign = other.alloc_tagged(1, 1, t.root()).unwrap();
    let mine = g.alloc_tagged(1, 1, t.root() + 1).unwrap();
    let d = t.destroy().unwrap();
    assert_eq!(
        (d.containers, d.unlinked, d.free_errors),
        (1, 2, 0),
        "{d:?}"
    );
    assert_eq!(
        c.allocations(),
        before + 2,
        "only the foreign and the other-tag page are left"
    );
    assert!(g.free(lost[0]).is_err(), "freed by destroy");
    other.free(foreign).unwrap();
    g.free(mine).unwrap();
    assert_eq!(c.allocations(), before);
    assert!(
        matches!(g.free_tag(1, 0), Err(gsas::Error::Invalid(_))),
        "tag 0 names nothing"
    );
}

#[test]
fn deleted_entries_keep_probes_going_and_are_reused() {
    let c = Cluster::new(4, 64);
    let t = table(&c, 100);
    let keys = colliding(&t, 1000, 40);
    for &k in &keys {
        t.put(k, u128::from(k)).unwrap();
    }
    for &k in keys.iter().step_by(2) {
        assert!(t.delete(k).unwrap());
    }
    for (i, &k) in keys.iter().enumerate() {
        let want = (i % 2 == 1).then_some(u128::from(k));
        assert_eq!(t.get(k).unwrap(), want);
    }
    let before = t.scan().unwrap();
    assert_eq!((before.in_containers, before.deleted), (20, 20));
    for &k in keys.iter().step_by(2) {
        t.put(k, 5).unwrap();
    }
    let after = t.scan().unwrap();
    assert_eq!(after.in_containers, 40);
    assert!(after.deleted < 20, "inserts reuse deleted entries");
}

#[test]
fn another_process_of_the_tree_opens_the_table_another_tree_cannot_use_it() {
    let c = Cluster::new(4, 64);
    let t = table(&c, 100);
    t.put(1, 11).unwrap();
    let u = Dht::open(c.handle(3, 5, TREE), t.root()).unwrap();
    assert_eq!(u.layout(), t.layout());
    assert_eq!(u.get(1).unwrap(), Some(11));
    u.put(2, 22).unwrap();
    assert_eq!(t.get(2).unwrap(), Some(22));
    let denied = |r: Error| matches!(r, Error::Gsas(gsas::Error::Denied(_)));
    assert!(denied(
        Dht::open(c.handle(2, 1, OTHER_TREE), t.root())
            .err()
            .unwrap()
    ));
    let x = Dht::attach(c.handle(2, 1, OTHER_TREE), t.layout().clone());
    assert!(denied(x.get(1).unwrap_err()));
    assert!(denied(x.put(1, 5).unwrap_err()));
    assert!(denied(x.delete(1).unwrap_err()));
    assert!(denied(x.destroy().unwrap_err()));
    assert_eq!(t.get(1).unwrap(), Some(11), "unchanged by the other tree");
}

#[test]
fn create_and_destroy_leave_nothing_behind() {
    // Node 2 cannot hold its slice: create fails and frees what it had made.
    let c = Cluster::with_pages(&[(0, 64), (1, 64), (2, 3), (3, 64)]);
    let e = Dht::create(c.handle(0, 0, TREE), &[0, 1, 2, 3], 1000, 0)
        .err()
        .unwrap();
    assert!(matches!(e, Error::Gsas(gsas::Error::NoMemory(_))), "{e}");
    assert_eq!(c.allocations(), 0);
    for bad in [&[][..], &[0, 0], &[1, 16]] {
        let e = Dht::create(c.handle(0, 0, TREE), bad, 10, 0).err().unwrap();
        assert!(matches!(e, Error::Argument(_)), "{bad:?}: {e}");
    }
    assert!(Dht::create(c.handle(0, 0, TREE), &[0], 0, 0).is_err());
    assert_eq!(c.allocations(), 0);

    let c = Cluster::new(4, 64);
    let t = table(&c, 100);
    for k in 0..400 {
        t.put(k, 1).unwrap();
    }
    let containers = t.scan().unwrap().indirect;
    let root = t.root();
    let u = Dht::open(c.handle(2, 0, TREE), root).unwrap();
    let d = t.destroy().unwrap();
    assert_eq!(
        (d.containers, d.malformed, d.free_errors),
        (containers, 0, 0)
    );
    assert_eq!(c.allocations(), 0);
    assert!(
        u.get(1).is_err(),
        "a table destroyed under a user fails its operations"
    );
    assert!(Dht::open(c.handle(2, 0, TREE), root).is_err());
}

#[test]
fn a_destroyed_root_is_refused_and_destroy_wins_once() {
    let c = Cluster::new(2, 16);
    let t = Dht::create(c.handle(0, 0, TREE), &[0, 1], 10, 0).unwrap();
    let u = Dht::open(c.handle(1, 0, TREE), t.root()).unwrap();
    let root = t.root();
    // Another destroyer got there first (it flipped the state).
    c.poke_word(root + 16, crate::layout::DESTROYED);
    assert!(matches!(t.destroy().unwrap_err(), Error::Corrupt(m) if m.contains("destroyed")));
    assert!(Dht::open(c.handle(1, 0, TREE), root).is_err());
    c.poke_word(root + 16, crate::layout::LIVE);
    u.destroy().unwrap();
    assert_eq!(c.allocations(), 0);
}

#[test]
fn malformed_entries_are_clear_errors_never_panics_or_endless_loops() {
    let c = Cluster::new(4, 64);
    let mut t = table(&c, 100);
    quick(&mut t);
    let keys = colliding(&t, 50, 3);
    let a = slot_addr(&t, keys[0]);
    // An unknown state in a first-level entry.
    c.poke_word(a, Entry::head(9, 0, 1));
    for r in [
        t.get(keys[0]).map(drop),
        t.put(keys[0], 1),
        t.delete(keys[0]).map(drop),
    ] {
        assert!(
            matches!(r, Err(Error::Corrupt(ref m)) if m.contains("state 9")),
            "{r:?}"
        );
    }
    // A lock whose holder lives and never releases it: every operation gives up, naming the
    // holder.
    let holder = c.handle(2, 7, TREE);
    let g = holder
        .iface_state(2, 7)
        .unwrap()
        .expect("the holder's interface is held");
    c.poke_word(a, Entry::head(state::PAIR, holder_id(2, 7, g), 1));
    match t.get(keys[0]) {
        Err(Error::Busy { node, iface, .. }) => assert_eq!((node, iface), (2, 7)),
        r => panic!("{r:?}"),
    }
    assert!(matches!(t.put(keys[0], 1), Err(Error::Busy { .. })));
    // Once the holder is gone the lock is broken: the entry as it was, one version further.
    drop(holder);
    assert!(t.get(keys[0]).is_ok());
    assert_eq!(t.stats().broken_locks, 1);
    assert_eq!(
        t.gsas().read(a).unwrap(),
        Entry::head(state::PAIR, 0, 2),
        "unlocked, version + 1"
    );
    // Indirect entries pointing elsewhere: another node, unaligned, page 0, the table's root.
    for ptr in [
        gsas::addr((gsas::node_of(a) + 1) % 4, 0x1000),
        a + 8,
        gsas::addr(gsas::node_of(a), 0),
    ] {
        c.poke(
            a,
            &[
                Entry::head(state::INDIRECT, 0, 1).to_le_bytes(),
                ptr.to_le_bytes(),
            ]
            .concat(),
        );
        for r in [
            t.get(keys[0]).map(drop),
            t.put(keys[0], 1),
            t.delete(keys[0]).map(drop),
        ] {
            assert!(
                matches!(r, Err(Error::Corrupt(_)) | Err(Error::Gsas(_))),
                "{ptr:#x}: {r:?}"
            );
        }
    }
    c.poke(a, &[0u8; 32]);
    // A real container, then garbage in it.
    for &k in &keys {
        t.put(k, 3).unwrap();
    }
    let cptr = Entry::decode(t.gsas().read256(a).unwrap()).key;
    for i in 0..CONTAINER_ENTRIES {
        c.poke_word(cptr + i * ENTRY_BYTES, Entry::head(7, 0, 0));
    }
    assert!(matches!(t.get(keys[0]), Err(Error::Corrupt(_))));
    assert!(matches!(
        t.put(99, 1).and(t.put(keys[1], 1)),
        Err(Error::Corrupt(_))
    ));
    // Every entry deleted and none empty: a probe stops after 128 entries.
    for i in 0..CONTAINER_ENTRIES {
        c.poke_word(cptr + i * ENTRY_BYTES, Entry::head(state::DELETED, 0, 0));
    }
    assert_eq!(t.get(keys[0]).unwrap(), None);
    t.put(keys[0], 4).unwrap();
    assert_eq!(t.get(keys[0]).unwrap(), Some(4));
    // Destroy follows only what it may: a pointer to the table's own slice is not freed.
    let b = slot_addr(&t, 12345);
    if b != a {
        let own = t.layout().slices[gsas::node_of(b) as usize];
        c.poke(
            b,
            &[
                Entry::head(state::INDIRECT, 0, 1).to_le_bytes(),
                own.to_le_bytes(),
            ]
            .concat(),
        );
    }
    let d = t.destroy().unwrap();
    assert_eq!(d.free_errors, 0);
    assert_eq!(c.allocations(), 0);
}

#[test]
fn a_garbage_header_is_refused() {
    let c = Cluster::new(2, 16);
    let g = c.handle(0, 0, TREE);
    let p = g.alloc_shared_page(0, 1).unwrap();
    assert!(
        matches!(Dht::open(c.handle(0, 0, TREE), p).err().unwrap(), Error::Corrupt(m) if m.contains("no table"))
    );
    assert!(matches!(
        Dht::open(c.handle(0, 0, TREE), p + 8).err().unwrap(),
        Error::Argument(_)
    ));
    assert!(matches!(
        Dht::open(c.handle(0, 0, TREE), gsas::addr(1, 0x3000))
            .err()
            .unwrap(),
        Error::Gsas(_)
    ));
}

#[test]
fn random_garbage_anywhere_in_the_table_never_panics() {
    // Room for a container per first-level entry: the seeds are random.
    let c = Cluster::new(2, 160);
    let mut t = Dht::create(c.handle(0, 0, TREE), &[0, 1], 60, 0).unwrap();
    quick(&mut t);
    for k in 0..200 {
        t.put(k, 9).unwrap();
    }
    let mut rng = gsas::measure::Rng::new(3);
    let mut targets: Vec<u64> = t.layout().slices.clone();
    for k in 0..200 {
        let e = Entry::decode(t.gsas().read256(slot_addr(&t, k)).unwrap());
        if e.state == state::INDIRECT {
            targets.push(e.key);
        }
    }
    for round in 0..300u32 {
        let base = targets[rng.below(targets.len() as u64) as usize];
        let at = base + rng.below(gsas::PAGE_SIZE / 8) * 8;
        let junk = match rng.below(4) {
            0 => rng.below(u64::MAX),
            1 => Entry::head(rng.below(5) as u16, 0, 3),
            2 => Entry::head(state::INDIRECT, 0, 3),
            _ => gsas::addr(rng.below(3) as u16, rng.below(40) * 0x1000),
        };
        c.poke_word(at, junk);
        let k = rng.below(200);
        let _ = t.get(k);
        let _ = t.put(k, u128::from(round));
        let _ = t.delete(k + 1);
        let _ = t.scan();
    }
    let _ = t.destroy();
}

fn plans(node: u16, threads: u16, ops: u64) -> Vec<Plan> {
    (0..threads)
        .map(|thread| Plan {
            node,
            thread,
            ops,
            own_keys: 8,
            shared_keys: 16,
            global_keys: 8,
            put_pct: 50,
            delete_pct: 10,
            seed: 5,
        })
        .collect()
}

#[test]
fn the_checker_passes_threads_of_two_processes_on_one_table() {
    let c = Cluster::new(4, 64);
    // A small first level: most keys end up in shared containers.
    let t = Dht::create(c.handle(0, 0, TREE), &[0, 1, 2, 3], 16, 0).unwrap();
    let layout = t.layout().clone();
    let mut reports = Vec::new();
    std::thread::scope(|s| {
        let hs: Vec<_> = [1u16, 2]
            .into_iter()
            .map(|node| {
                let (c, layout) = (c.clone(), layout.clone());
                s.spawn(move || {
                    let ps = plans(node, 4, 400);
                    let hist: Vec<Vec<Op>> = std::thread::scope(|s2| {
                        let hs: Vec<_> = ps
                            .iter()
                            .map(|p| {
                                let (c, layout) = (c.clone(), layout.clone());
                                s2.spawn(move || {
                                    let t = Dht::attach(
                                        c.handle(node, u32::from(p.thread), TREE),
                                        layout,
                                    );
                                    check::run(&t, p).unwrap()
                                })
                            })
                            .collect();
                        hs.into_iter().map(|h| h.join().unwrap()).collect()
                    });
                    (ps, hist)
                })
            })
            .collect();
        for h in hs {
            reports.push(h.join().unwrap());
        }
    });
    let mut shared = String::new();
    for (ps, hist) in &reports {
        let mut r = check::verify(ps, hist);
        let n = check::final_check(&t, ps, hist, &mut r).unwrap();
        assert!(r.ok(), "{:#?}", r.problems);
        assert!(n > 0 && r.gets_found > 0 && r.deletes > 0);
        shared += &check::format_last_writes(&check::global_last_writes(hist));
    }
    assert_eq!(t.scan().unwrap().locked, 0);
    // The keys both processes wrote: each holds the last write of one of the 8 threads.
    let writes = check::parse_last_writes(&shared).unwrap();
    let mut r = check::Report::default();
    assert_eq!(check::final_global(&t, &writes, &mut r).unwrap(), 8);
    assert!(r.ok(), "{:#?}", r.problems);
    // Can fail: a key that holds an earlier write of some thread is a lost update.
    let k = writes[0].0;
    let stale = check::value(k, check::writer_id(1, 0), 0);
    assert!(!writes.iter().any(|&(_, v)| v == Some(stale)));
    t.put(k, stale).unwrap();
    let mut r = check::Report::default();
    check::final_global(&t, &writes, &mut r).unwrap();
    assert_eq!(r.violations, 1, "{:#?}", r.problems);
}

#[test]
fn last_writes_round_trip_and_bad_lines_are_named() {
    let w = vec![(0xc000_0000_0000_0001, Some(u128::MAX)), (7, None)];
    let text = check::format_last_writes(&w);
    assert_eq!(
        text,
        "0xc000000000000001 0xffffffffffffffffffffffffffffffff\n0x7 -\n"
    );
    assert_eq!(check::parse_last_writes(&text).unwrap(), w);
    assert_eq!(check::parse_last_writes("\n  \n").unwrap(), vec![]);
    for bad in [
        "7 -",
        "0x7",
        "0x7 - x",
        "0x7 0xg",
        "0x10000000000000000 -",
        "0x7 0x1000000000000000000000000000000000",
    ] {
        let e = check::parse_last_writes(&format!("0x1 -\n{bad}\n")).unwrap_err();
        assert!(e.starts_with("line 2:"), "{bad}: {e}");
    }
}

#[test]
fn the_checker_catches_torn_foreign_unput_and_lost_values() {
    let p = plans(1, 1, 0);
    let me = check::writer_id(1, 0);
    let own = check::own_key(5, me, 0);
    let v = check::value(own, me, 1);
    let torn = v ^ 1 << 70;
    let hist = vec![vec![
        Op::Put { key: own, value: v },
        Op::Get {
            key: own,
            got: Some(torn),
        },
        Op::Get {
            key: own,
            got: Some(check::value(own + 1, me, 1)),
        },
        Op::Get {
            key: check::global_key(5, 0),
            got: Some(check::value(check::global_key(5, 0), me, 9)),
        },
        Op::Get {
            key: check::shared_key(5, 1, 0),
            got: Some(check::value(
                check::shared_key(5, 1, 0),
                check::writer_id(2, 0),
                1,
            )),
        },
        Op::Get {
            key: own,
            got: None,
        },
    ]];
    let r = check::verify(&p, &hist);
    assert_eq!(r.torn, 2);
    assert_eq!(r.violations, 7, "{:#?}", r.problems);
    // A lost update: the table does not hold the thread's last put.
    let c = Cluster::new(1, 16);
    let t = Dht::create(c.handle(0, 0, TREE), &[0], 10, 0).unwrap();
    let mut r = check::Report::default();
    let hist = vec![vec![Op::Put { key: own, value: v }]];
    check::final_check(&t, &p, &hist, &mut r).unwrap();
    assert_eq!(r.violations, 1);
    t.put(own, v).unwrap();
    let mut r = check::Report::default();
    check::final_check(&t, &p, &hist, &mut r).unwrap();
    assert!(r.ok());
}
