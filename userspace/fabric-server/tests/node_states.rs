//! The fabric's liveness words in the GAS control area, and the control socket that poisons a
//! departed node's partition (scripts/cluster `kill N --poison`).

mod common;

use std::fs;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::time::{Duration, Instant};

use common::*;
use nix::sys::signal::Signal;
use nix::sys::uio::pread;
use unimem_wire::gas::{node_state, GasDescriptor, NODE_STATE_OFFSET};

use node_state::{encode, GONE, LOST, NEVER, UP};

/// Node `id`'s word as the guests see it.
fn word(shm: &OwnedFd, id: u32) -> u64 {
    let mut page = Mapping::at(shm, NODE_STATE_OFFSET);
    let at = id as usize * 8;
    u64::from_le_bytes(page.bytes()[at..at + 8].try_into().unwrap())
}

fn words(shm: &OwnedFd, nodes: u32) -> Vec<u64> {
    (0..nodes).map(|id| word(shm, id)).collect()
}

fn desc(shm: &OwnedFd) -> GasDescriptor {
    GasDescriptor::decode(Mapping::new(shm).bytes()).unwrap()
}

/// `len` bytes of the region from `offset`.
fn read_region(shm: &OwnedFd, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        let n = pread(shm.as_fd(), &mut buf[done..], (offset + done as u64) as i64).unwrap();
        assert!(n > 0, "short read at {offset:#x}");
        done += n;
    }
    buf
}

/// A byte pattern that depends on `seed` and the byte's place.
fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed ^ (i as u8) ^ (i >> 8) as u8)
        .collect()
}

/// Writes `pattern(seed)` at the first, a middle and the last page of node `id`'s partition.
fn mark_partition(shm: &OwnedFd, id: u32, seed: u8) {
    let d = desc(shm);
    let start = d.partition_offset(id).unwrap();
    for page in partition_probes(&d, start) {
        let mut map = Mapping::at(shm, page);
        map.bytes().copy_from_slice(&pattern(seed, PAGE));
    }
}

fn partition_marked(shm: &OwnedFd, id: u32, seed: u8) -> bool {
    let d = desc(shm);
    let start = d.partition_offset(id).unwrap();
    partition_probes(&d, start)
        .into_iter()
        .all(|page| read_region(shm, page, PAGE) == pattern(seed, PAGE))
}

fn partition_probes(d: &GasDescriptor, start: u64) -> [u64; 3] {
    let end = start + d.partition_size;
    [start, start + d.partition_size / 2, end - PAGE as u64]
}

fn partition(shm: &OwnedFd, id: u32) -> Vec<u8> {
    let d = desc(shm);
    read_region(
        shm,
        d.partition_offset(id).unwrap(),
        d.partition_size as usize,
    )
}

/// Three VMs 0, 1 and 2, each welcomed and told of the others.
fn three(server: &Server) -> (Client, Welcome, Client, Welcome, Client, Welcome) {
    let c0 = server.connect();
    let w0 = c0.welcome(0, &[], 1);
    let c1 = server.connect();
    let w1 = c1.welcome(1, &[0], 1);
    c0.peer_joined(1, 1);
    let c2 = server.connect();
    let w2 = c2.welcome(2, &[0, 1], 1);
    c0.peer_joined(2, 1);
    c1.peer_joined(2, 1);
    (c0, w0, c1, w1, c2, w2)
}

#[test]
fn words_follow_connections() {
    let server = Server::start(3, 1);
    assert_eq!(server.ctl("states"), "0:never:0 1:never:0 2:never:0");

    let c0 = server.connect();
    let w0 = c0.welcome(0, &[], 1);
    // No waiting: the word is up before the client can have read its welcome.
    assert_eq!(word(&w0.shm, 0), encode(UP, 1));
    assert_eq!(words(&w0.shm, 3)[1..], [encode(NEVER, 0); 2]);
    let c1 = server.connect();
    c1.welcome(1, &[0], 1);
    assert_eq!(word(&w0.shm, 1), encode(UP, 1));
    assert_eq!(server.ctl("states"), "0:up:1 1:up:1 2:never:0");

    drop(c1);
    wait_until("peer-1 to go", || !server.peer_file(1).exists());
    // Written before peer-1 went: no waiting here either.
    assert_eq!(word(&w0.shm, 1), encode(GONE, 1));
    assert_eq!(server.ctl("states"), "0:up:1 1:gone:1 2:never:0");

    let again = server.connect();
    again.welcome(1, &[0], 1);
    assert_eq!(word(&w0.shm, 1), encode(UP, 2));
    drop(again);
    wait_until("peer-1 to go", || !server.peer_file(1).exists());
    assert_eq!(word(&w0.shm, 1), encode(GONE, 2));
    assert_eq!(word(&w0.shm, 0), encode(UP, 1));
    // The state table is all the server wrote: the rest of the control area is untouched.
    let ctl = read_region(&w0.shm, 64, CTL as usize - 64);
    let table = NODE_STATE_OFFSET as usize - 64..NODE_STATE_OFFSET as usize - 64 + 3 * 8;
    assert!(ctl
        .iter()
        .enumerate()
        .all(|(i, &b)| table.contains(&i) || b == 0));
}

#[test]
fn poison_of_a_connected_node_is_refused() {
    let server = Server::start(3, 1);
    let (_c0, w0, _c1, _w1, _c2, _w2) = three(&server);
    mark_partition(&w0.shm, 1, 0x3c);
    let before = words(&w0.shm, 3);

    let reply = server.ctl("poison 1");
    assert!(reply.starts_with("error: "), "{reply}");
    assert!(reply.contains("connected"), "{reply}");
    assert_eq!(words(&w0.shm, 3), before);
    assert!(partition_marked(&w0.shm, 1, 0x3c));
    assert_eq!(server.ctl("states"), "0:up:1 1:up:1 2:up:1");
}

#[test]
fn poison_of_a_gone_node_loses_its_partition_only() {
    let server = Server::start(4, 1);
    let (c0, w0, c1, w1, c2, w2) = three(&server);
    let d = desc(&w0.shm);
    for id in 0..3 {
        mark_partition(&w0.shm, id, 0x10 + id as u8);
    }
    mark_partition(&w0.shm, 3, 0x13);
    let ctl_before = read_region(&w0.shm, 0, NODE_STATE_OFFSET as usize);

    drop((c1, w1));
    wait_until("peer-1 to go", || !server.peer_file(1).exists());
    let started = Instant::now();
    let reply = server.ctl("poison 1");
    let mib = d.partition_size >> 20;
    assert_eq!(reply, format!("ok: node 1 poisoned ({mib} MiB)"));
    eprintln!("poisoned {mib} MiB in {:?}", started.elapsed());

    assert_eq!(word(&w0.shm, 1), encode(LOST, 1));
    let p1 = partition(&w0.shm, 1);
    assert_eq!(p1.len() as u64, d.partition_size);
    assert_eq!(
        (p1[0], p1[p1.len() / 2], p1[p1.len() - 1]),
        (0xff, 0xff, 0xff)
    );
    assert!(
        p1.iter().all(|&b| b == 0xff),
        "a byte of node 1's partition escaped"
    );
    // Neighbours, the descriptor and the other words are untouched.
    for (id, seed) in [(0, 0x10), (2, 0x12), (3, 0x13)] {
        assert!(
            partition_marked(&w0.shm, id, seed),
            "partition {id} changed"
        );
    }
    let p0_end = d.partition_offset(1).unwrap() - 1;
    let p2_start = d.partition_offset(2).unwrap();
    assert_ne!(read_region(&w0.shm, p0_end, 1)[0], 0xff);
    assert_ne!(read_region(&w0.shm, p2_start, 1)[0], 0xff);
    assert_eq!(
        read_region(&w0.shm, 0, NODE_STATE_OFFSET as usize),
        ctl_before
    );
    assert_eq!(desc(&w2.shm), d);
    assert_eq!(
        words(&w0.shm, 4),
        [
            encode(UP, 1),
            encode(LOST, 1),
            encode(UP, 1),
            encode(NEVER, 0)
        ]
    );
    assert_eq!(server.ctl("states"), "0:up:1 1:lost:1 2:up:1 3:never:0");
    // Nobody was told anything over the ivshmem protocol.
    c0.assert_quiet();
    c2.assert_quiet();

    // Poisoning again is harmless; so is poisoning a node that never connected.
    assert!(server.ctl("poison 1").starts_with("ok: node 1 poisoned"));
    assert_eq!(
        server.ctl("poison 3"),
        format!("ok: node 3 poisoned ({mib} MiB)")
    );
    assert_eq!(word(&w0.shm, 3), encode(LOST, 0));
    assert!(partition(&w0.shm, 3).iter().all(|&b| b == 0xff));
    assert!(partition_marked(&w0.shm, 2, 0x12));

    // The node returns: up again, one more connection, its partition still poisoned; when it
    // leaves again its memory is simply gone, no longer lost.
    let n1 = server.connect();
    let back = n1.welcome(1, &[0, 2], 1);
    assert_eq!(word(&back.shm, 1), encode(UP, 2));
    assert!(partition(&back.shm, 1).iter().all(|&b| b == 0xff));
    drop((n1, back));
    wait_until("peer-1 to go", || !server.peer_file(1).exists());
    assert_eq!(word(&w0.shm, 1), encode(GONE, 2));
    assert_eq!(server.ctl("states"), "0:up:1 1:gone:2 2:up:1 3:lost:0");
}

#[test]
fn malformed_commands_change_nothing() {
    let server = Server::start(3, 1);
    let (_c0, w0, c1, w1, _c2, _w2) = three(&server);
    drop((c1, w1));
    wait_until("peer-1 to go", || !server.peer_file(1).exists());
    mark_partition(&w0.shm, 1, 0x5a);
    let before = words(&w0.shm, 3);
    let states = server.ctl("states");
    assert_eq!(states, "0:up:1 1:gone:1 2:up:1");

    let long = format!("poison 1{}", " ".repeat(10_000));
    let bad: Vec<&[u8]> = vec![
        b"",
        b"   ",
        b"poison",
        b"poison x",
        b"poison -1",
        b"poison 99",
        b"poison 3",
        b"poison 1 1",
        b"poison 1x",
        b"states please",
        b"frobnicate 1",
        b"POISON 1",
        b"poison \xff",
        long.as_bytes(),
    ];
    for line in &bad {
        let mut c = server.ctl_conn();
        c.send(line);
        let reply = c.reply();
        let shown = String::from_utf8_lossy(&line[..line.len().min(20)]).into_owned();
        assert!(reply.starts_with("error: "), "{shown:?} got {reply:?}");
        assert!(
            reply.len() < 300,
            "{shown:?} got a {} byte reply",
            reply.len()
        );
    }
    // All on one connection: one reply each, in order, and the connection stays usable.
    let mut c = server.ctl_conn();
    for line in &bad {
        c.send(line);
    }
    c.send(b"states");
    for line in &bad {
        let reply = c.reply();
        assert!(
            reply.starts_with("error: "),
            "{:?} got {reply:?}",
            &line[..line.len().min(20)]
        );
    }
    assert_eq!(c.reply(), states);

    assert_eq!(words(&w0.shm, 3), before);
    assert!(partition_marked(&w0.shm, 1, 0x5a));
    assert_eq!(server.ctl("states"), states);
    // The tool says the same and fails.
    let (code, out) = server.ctl_tool(&["poison", "99"]);
    assert_eq!(code, 1);
    assert!(out.starts_with("error: "), "{out}");
    assert!(partition_marked(&w0.shm, 1, 0x5a));
}

#[test]
fn silent_and_slow_clients_block_nobody() {
    let server = Server::start(3, 1);
    // One says nothing, one sends half a command, one sends a line without end.
    let _silent = server.ctl_conn();
    let mut half = server.ctl_conn();
    half.sock.write_all(b"poi").unwrap();
    let mut endless = server.ctl_conn();
    endless.sock.write_all(&[b'x'; 64 * 1024]).unwrap();

    let started = Instant::now();
    assert_eq!(server.ctl("states"), "0:never:0 1:never:0 2:never:0");
    // VMs are still admitted.
    let c0 = server.connect();
    let w0 = c0.welcome(0, &[], 1);
    assert_eq!(server.ctl("states"), "0:up:1 1:never:0 2:never:0");
    assert!(started.elapsed() < Duration::from_secs(2));
    // The half command, once finished, is answered.
    half.send(b"son 0");
    assert!(half.reply().starts_with("error: poison: node 0 (pid"));
    assert_eq!(word(&w0.shm, 0), encode(UP, 1));

    // A client that never reads its replies is dropped, not waited for.
    let mut deaf = server.ctl_conn();
    deaf.sock.set_nonblocking(true).unwrap();
    let many = b"states\n".repeat(64 * 1024);
    let mut sent = 0;
    let start = Instant::now();
    while sent < many.len() && start.elapsed() < TIMEOUT {
        match deaf.sock.write(&many[sent..]) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(_) => break, // dropped by the server
        }
    }
    assert_eq!(server.ctl("states"), "0:up:1 1:never:0 2:never:0");
    let log = fs::read_to_string(&server.log).unwrap();
    assert!(log.contains("does not read its replies"), "{log}");
    c0.assert_quiet();
}

#[test]
fn control_connections_are_limited() {
    let server = Server::start(2, 1);
    let idle: Vec<CtlConn> = (0..16).map(|_| server.ctl_conn()).collect();
    // One too many: told so and closed, without waiting for a command.
    let mut extra = server.ctl_conn();
    assert_eq!(extra.reply(), "error: too many control connections");
    let mut rest = Vec::new();
    assert_eq!(extra.sock.read_to_end(&mut rest).unwrap(), 0);
    // A slot frees up when a client leaves.
    drop(idle);
    wait_until("a control slot", || {
        let mut c = server.ctl_conn();
        c.send(b"states");
        c.reply() == "0:never:0 1:never:0"
    });
}

#[test]
fn ctl_tool() {
    let server = Server::start(2, 1);
    let c0 = server.connect();
    let _w0 = c0.welcome(0, &[], 1);
    assert_eq!(
        server.ctl_tool(&["states"]),
        (0, "0:up:1 1:never:0\n".into())
    );
    let (code, out) = server.ctl_tool(&["poison", "0"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("error: poison: node 0"), "{out}");
    let (code, out) = server.ctl_tool(&["poison", "1"]);
    assert_eq!((code, out.as_str()), (0, "ok: node 1 poisoned (31 MiB)\n"));
    assert_eq!(server.ctl_tool(&["states"]).1, "0:up:1 1:lost:0\n");

    // No server there: another exit status, and nothing on stdout.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_unimem-fabric"))
        .args(["ctl", "--control"])
        .arg(server.state.join("nothing.ctl"))
        .arg("states")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn control_socket_is_private_and_removed_on_exit() {
    let mut server = Server::start(2, 1);
    let meta = fs::symlink_metadata(&server.control).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // The VMs' socket keeps the usual mode.
    let vm = fs::symlink_metadata(&server.socket).unwrap();
    assert_ne!(vm.permissions().mode() & 0o777, 0o600);

    // A control client that is still connected does not keep the server from exiting.
    let mut c = server.ctl_conn();
    assert!(server.stop(Signal::SIGTERM).success());
    assert!(!server.control.exists());
    assert!(!server.socket.exists());
    let mut rest = Vec::new();
    assert_eq!(c.sock.read_to_end(&mut rest).unwrap(), 0);
}

/// A control area too small for the table: nothing is written where the table would be (it
/// is partition 0's memory there), and poison is refused since guests could not tell.
#[test]
fn small_control_area_has_no_states() {
    let server = Server::start_full(3, 1, "64M", "4K", |_| {});
    let c0 = server.connect();
    let w0 = c0.welcome(0, &[], 1);
    assert_eq!(desc(&w0.shm).partition_offset(0), Some(NODE_STATE_OFFSET));
    let c1 = server.connect();
    c1.welcome(1, &[0], 1);
    drop(c1);
    wait_until("peer-1 to go", || !server.peer_file(1).exists());
    assert!(read_region(&w0.shm, NODE_STATE_OFFSET, PAGE)
        .iter()
        .all(|&b| b == 0));
    // The server still knows.
    assert_eq!(server.ctl("states"), "0:up:1 1:gone:1 2:never:0");
    let reply = server.ctl("poison 1");
    assert!(
        reply.starts_with("error: poison: the control area"),
        "{reply}"
    );
    assert!(partition(&w0.shm, 1).iter().all(|&b| b == 0));
    assert_eq!(server.ctl("states"), "0:up:1 1:gone:1 2:never:0");
}

/// Poisoning a large partition takes a while: VMs and other control clients are served
/// meanwhile, the client's next command waits for the poison's reply, and a VM that returns
/// as the poisoned node is admitted only once its whole partition is poisoned.
#[test]
fn poison_in_steps() {
    let server = Server::start_full(2, 1, "1G", "2M", |_| {});
    let mut a = server.ctl_conn();
    a.send(b"poison 1\nstates");
    // Another client, while the fill is under way (or just done): node 1 is lost already.
    assert_eq!(server.ctl("states"), "0:never:0 1:lost:0");
    let c0 = server.connect();
    let w0 = c0.welcome(0, &[], 1);
    let d = desc(&w0.shm);
    let mib = d.partition_size >> 20;
    assert_eq!(a.reply(), format!("ok: node 1 poisoned ({mib} MiB)"));
    assert_eq!(a.reply(), "0:up:1 1:lost:0");

    // Again, and a VM connects as node 1 at once: by then all of it is poison.
    let mut b = server.ctl_conn();
    b.send(b"poison 1");
    wait_until("node 1 to be lost again", || {
        server.ctl("states") == "0:up:1 1:lost:0"
    });
    let c1 = server.connect();
    let w1 = c1.welcome(1, &[0], 1);
    assert_eq!(word(&w1.shm, 1), encode(UP, 1));
    assert!(partition(&w1.shm, 1).iter().all(|&b| b == 0xff));
    assert_eq!(b.reply(), format!("ok: node 1 poisoned ({mib} MiB)"));
    let log = fs::read_to_string(&server.log).unwrap();
    assert_eq!(log.matches("node 1 poisoned").count(), 2, "{log}");
}
