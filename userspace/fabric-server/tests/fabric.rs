//! Runs the real binary and talks to it the way QEMU's ivshmem-doorbell device does.

mod common;

use std::fs;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;

use common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use unimem_wire::gas::GasDescriptor;

#[test]
fn clients_get_ids_in_order_and_one_shared_region() {
    let server = Server::start(3, 4);
    let c0 = server.connect();
    let w0 = c0.welcome(0, &[], 4);
    let c1 = server.connect();
    let w1 = c1.welcome(1, &[0], 4);
    c0.peer_joined(1, 4);
    let c2 = server.connect();
    let w2 = c2.welcome(2, &[0, 1], 4);
    c0.peer_joined(2, 4);
    c1.peer_joined(2, 4);
    for c in [&c0, &c1, &c2] {
        c.assert_quiet();
    }
    assert_eq!([w0.id, w1.id, w2.id], [0, 1, 2]);

    let mut maps: Vec<Mapping> = [&w0, &w1, &w2]
        .iter()
        .map(|w| Mapping::new(&w.shm))
        .collect();
    let desc = GasDescriptor::decode(maps[0].bytes()).expect("valid descriptor");
    assert_eq!(desc.node_count, 3);
    assert_eq!(desc.vectors, 4);
    assert_eq!(desc.region_size, REGION);
    assert_eq!(desc.ctl_size, CTL);
    let size = nix::sys::stat::fstat(w0.shm.as_raw_fd()).unwrap().st_size;
    assert_eq!(size as u64, REGION);
    // Every client got the same memory, not merely equal contents.
    maps[0].bytes()[PAGE - 1] = 0xa5;
    assert_eq!(maps[2].bytes()[PAGE - 1], 0xa5);
    assert_eq!(GasDescriptor::decode(maps[1].bytes()), Ok(desc));
    // Sealed: a client cannot shrink the region under the others.
    assert!(nix::unistd::ftruncate(&w1.shm, 4096).is_err());
}

#[test]
fn doorbells_connect_peers_vector_by_vector() {
    const VECTORS: u32 = 3;
    let server = Server::start(3, VECTORS);
    let c0 = server.connect();
    let w0 = c0.welcome(0, &[], VECTORS);
    let c1 = server.connect();
    let w1 = c1.welcome(1, &[0], VECTORS);
    let to_1 = c0.peer_joined(1, VECTORS);

    assert_eq!(to_1.len(), VECTORS as usize);
    for (v, doorbell) in to_1.iter().enumerate() {
        // Node 0 rings node 1's vector v: exactly that one of node 1's doorbells fires.
        ring(doorbell);
        for (u, own) in w1.own.iter().enumerate() {
            assert_eq!(readable(own), u == v, "node 1 vector {u} after ringing {v}");
        }
        assert_eq!(take(&w1.own[v]), 1);
        // And back, through the fds node 1 received in its welcome.
        ring(&w1.peers[&0][v]);
        for (u, own) in w0.own.iter().enumerate() {
            assert_eq!(readable(own), u == v, "node 0 vector {u} after ringing {v}");
        }
        assert_eq!(take(&w0.own[v]), 1);
    }
}

/// Departures are never announced and a node's doorbells outlive its connections: QEMU's
/// ivshmem device frees a peer's eventfds on a disconnect notification but keeps using them
/// when the same id connects again.
#[test]
fn returning_node_gets_its_id_and_doorbells_back_silently() {
    const VECTORS: u32 = 2;
    let server = Server::start(3, VECTORS);
    let c0 = server.connect();
    let w0 = c0.welcome(0, &[], VECTORS);
    let c1 = server.connect();
    c1.welcome(1, &[0], VECTORS);
    let c2 = server.connect();
    let w2 = c2.welcome(2, &[0, 1], VECTORS);
    let to_1 = c0.peer_joined(1, VECTORS);
    c0.peer_joined(2, VECTORS);
    c1.peer_joined(2, VECTORS);

    drop(c1);
    wait_until("peer-1 to go", || !server.peer_file(1).exists());
    c0.assert_quiet();
    c2.assert_quiet();
    // Rung while node 1 is away: dropped, not delivered to its next incarnation.
    ring(&to_1[0]);

    // The returning VM gets id 1 back although id 2 is taken, learns of 0 and 2, and nobody
    // is told anything.
    let again = server.connect();
    let w1 = again.welcome(1, &[0, 2], VECTORS);
    c0.assert_quiet();
    c2.assert_quiet();
    assert!(!readable(&w1.own[0]), "a stale ring reached the new node 1");
    // The doorbells node 0 learned for the first node 1 ring the second one.
    ring(&to_1[1]);
    assert!(readable(&w1.own[1]));
    assert!(!readable(&w1.own[0]));
    // And the returning node rings the others through what its welcome gave it.
    ring(&w1.peers[&0][0]);
    assert_eq!(take(&w0.own[0]), 1);
    ring(&w1.peers[&2][1]);
    assert_eq!(take(&w2.own[1]), 1);
}

/// A node's crash or restart leaves the region alone: nodes that stay up keep using memory in
/// the departed node's partition, the returning node gets the same memory (not a copy, not a
/// fresh region) with everything written before, and so does a node that connects after every
/// client has left. Nothing is wiped, and the descriptor (generation included) is unchanged.
#[test]
fn region_survives_restarts_and_an_empty_cluster() {
    let server = Server::start(3, 1);
    let c0 = server.connect();
    let w0 = c0.welcome(0, &[], 1);
    let c1 = server.connect();
    let w1 = c1.welcome(1, &[0], 1);
    c0.peer_joined(1, 1);
    let c2 = server.connect();
    let w2 = c2.welcome(2, &[0, 1], 1);
    c0.peer_joined(2, 1);
    c1.peer_joined(2, 1);

    let desc = GasDescriptor::decode(Mapping::new(&w0.shm).bytes()).unwrap();
    let region = identity(&w0.shm);
    let part1 = desc.partition_offset(1).unwrap();
    let lent = part1 + PAGE as u64;
    // Node 2 uses memory in node 1's partition (a borrower); node 1 writes its own partition.
    fill(&mut Mapping::at(&w2.shm, lent), 0x5a);
    fill(&mut Mapping::at(&w1.shm, part1), 0xc3);

    // Node 1 crashes: its connection and every fd it held are gone.
    drop(w1);
    drop(c1);
    wait_until("peer-1 to go", || !server.peer_file(1).exists());
    assert!(
        holds(&mut Mapping::at(&w0.shm, lent), 0x5a),
        "the borrower's data changed while its lender was away"
    );
    fill(&mut Mapping::at(&w0.shm, lent + PAGE as u64), 0x77);

    let n1 = server.connect();
    let w1 = n1.welcome(1, &[0, 2], 1);
    assert_eq!(
        identity(&w1.shm),
        region,
        "node 1 came back to another region"
    );
    assert_eq!(
        GasDescriptor::decode(Mapping::new(&w1.shm).bytes()),
        Ok(desc)
    );
    assert!(holds(&mut Mapping::at(&w1.shm, part1), 0xc3));
    assert!(holds(&mut Mapping::at(&w1.shm, lent), 0x5a));
    assert!(holds(&mut Mapping::at(&w1.shm, lent + PAGE as u64), 0x77));
    // A wrong expectation fails: the check above can tell patterns apart.
    assert!(!holds(&mut Mapping::at(&w1.shm, lent), 0x5b));

    // Every node goes; the server keeps the region for whoever comes next.
    drop((w0, w1, w2));
    drop((c0, n1, c2));
    wait_until("every peer to go", || {
        (0..3).all(|id| !server.peer_file(id).exists())
    });
    let late = server.connect();
    let w = late.welcome(0, &[1, 2], 1);
    assert_eq!(identity(&w.shm), region, "the region was re-created");
    assert_eq!(
        GasDescriptor::decode(Mapping::new(&w.shm).bytes()),
        Ok(desc)
    );
    assert!(holds(&mut Mapping::at(&w.shm, part1), 0xc3));
    assert!(holds(&mut Mapping::at(&w.shm, lent), 0x5a));
}

/// A node that is away still has doorbells, and a newcomer learns them in its welcome, so the
/// node can be rung once it returns without anyone being told.
#[test]
fn newcomer_learns_doorbells_of_absent_nodes() {
    let server = Server::start(3, 1);
    let c0 = server.connect();
    c0.welcome(0, &[], 1);
    let c1 = server.connect();
    c1.welcome(1, &[0], 1);
    let c2 = server.connect();
    c2.welcome(2, &[0, 1], 1);
    c0.peer_joined(1, 1);
    c0.peer_joined(2, 1);
    c1.peer_joined(2, 1);

    drop(c1);
    drop(c2);
    wait_until("peer-2 to go", || !server.peer_file(2).exists());
    let n1 = server.connect();
    let w1 = n1.welcome(1, &[0, 2], 1);
    let n2 = server.connect();
    let w2 = n2.welcome(2, &[0, 1], 1);
    for c in [&c0, &n1, &n2] {
        c.assert_quiet();
    }
    ring(&w1.peers[&2][0]);
    assert_eq!(take(&w2.own[0]), 1);
    ring(&w2.peers[&1][0]);
    assert_eq!(take(&w1.own[0]), 1);
}

#[test]
fn client_beyond_node_count_is_closed() {
    let server = Server::start(2, 1);
    let c0 = server.connect();
    c0.welcome(0, &[], 1);
    let c1 = server.connect();
    c1.welcome(1, &[0], 1);
    c0.peer_joined(1, 1);

    let extra = server.connect();
    extra.assert_closed();
    c0.assert_quiet();
    c1.assert_quiet();

    // Once an id frees up, the next client is admitted again.
    drop(c0);
    wait_until("peer-0 to go", || !server.peer_file(0).exists());
    server.connect().welcome(0, &[1], 1);
    c1.assert_quiet();
}

#[test]
fn state_dir_follows_peers() {
    let server = Server::start(3, 1);
    assert_eq!(fs::read_to_string(server.state.join("ready")).unwrap(), "");
    let me = format!("{}\n", std::process::id());

    let c0 = server.connect();
    c0.welcome(0, &[], 1);
    // No waiting: the file is in place before the client can have read its welcome.
    assert!(server.peer_file(0).exists());
    let c1 = server.connect();
    c1.welcome(1, &[0], 1);
    assert!(server.peer_file(1).exists());
    assert_eq!(fs::read_to_string(server.peer_file(0)).unwrap(), me);
    assert_eq!(fs::read_to_string(server.peer_file(1)).unwrap(), me);
    assert!(!server.peer_file(2).exists());

    drop(c0);
    wait_until("peer-0 to go", || !server.peer_file(0).exists());
    assert!(server.peer_file(1).exists());
    let mut names: Vec<_> = fs::read_dir(&server.state)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["peer-1", "ready"], "no temporary files linger");
}

#[test]
fn sigterm_and_sigint_clean_up() {
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let mut server = Server::start(3, 1);
        let c0 = server.connect();
        c0.welcome(0, &[], 1);
        wait_until("peer-0", || server.peer_file(0).exists());
        // Leftovers from the orchestration's own use of the directory must survive.
        fs::write(server.state.join("vm-0.log"), "x").unwrap();

        let status = server.stop(signal);
        assert!(status.success(), "{signal} exit status {status}");
        assert!(!server.socket.exists(), "socket left behind after {signal}");
        let names: Vec<_> = fs::read_dir(&server.state)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(
            names,
            ["vm-0.log"],
            "state files left behind after {signal}"
        );
        c0.assert_closed();
    }
}

#[test]
fn live_server_is_not_displaced_but_stale_socket_is() {
    let server = Server::start(2, 1);
    let c0 = server.connect();
    c0.welcome(0, &[], 1);

    let other = TempDir::new();
    let log = other.0.join("second.log");
    let mut second = spawn(&server.socket, &other.0.join("state"), &log, 2, 1);
    let status = wait_exit(&mut second);
    assert!(!status.success(), "second server started over a live one");
    let msg = fs::read_to_string(&log).unwrap();
    assert!(msg.contains("already listening"), "log: {msg}");
    assert!(server.socket.exists());
    assert!(
        !other.0.join("state").exists(),
        "second server touched its state dir"
    );
    // The first is still in business, and the probe did not cost anyone an id.
    c0.assert_quiet();
    server.connect().welcome(1, &[0], 1);
    assert!(nix::sys::signal::kill(server.pid(), None).is_ok());

    // A foreign server (not a unimem-fabric) listening there is not displaced either.
    let dir = TempDir::new();
    let foreign = dir.0.join("foreign.sock");
    let listener = UnixListener::bind(&foreign).unwrap();
    let log = dir.0.join("fourth.log");
    let mut fourth = spawn(&foreign, &dir.0.join("state"), &log, 2, 1);
    assert!(!wait_exit(&mut fourth).success());
    let msg = fs::read_to_string(&log).unwrap();
    assert!(msg.contains("already listening"), "log: {msg}");
    assert!(foreign.exists());
    drop(listener);

    // A socket file nobody listens on is taken over.
    let dir = TempDir::new();
    let stale = dir.0.join("stale.sock");
    drop(UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let log = dir.0.join("third.log");
    let mut third = spawn(&stale, &dir.0.join("state"), &log, 2, 1);
    wait_until("the third server's ready file", || {
        dir.0.join("state/ready").exists()
    });
    Client::connect(&stale).welcome(0, &[], 1);
    kill(Pid::from_raw(third.id() as i32), Signal::SIGTERM).unwrap();
    assert!(wait_exit(&mut third).success());
    assert!(!stale.exists());
}

#[test]
fn refuses_to_replace_a_non_socket() {
    let dir = TempDir::new();
    let path = dir.0.join("not-a-socket");
    fs::write(&path, "precious").unwrap();
    let log = dir.0.join("log");
    let mut child = spawn(&path, &dir.0.join("state"), &log, 2, 1);
    assert!(!wait_exit(&mut child).success());
    assert_eq!(fs::read_to_string(&path).unwrap(), "precious");
}

#[test]
fn client_chatter_is_ignored() {
    use std::io::Write;
    let server = Server::start(2, 1);
    let mut c0 = server.connect();
    c0.welcome(0, &[], 1);
    // Far more than one turn's worth of reading (and than a socket buffer holds).
    c0.sock.set_write_timeout(Some(TIMEOUT)).unwrap();
    for _ in 0..64 {
        c0.sock.write_all(&[0xff; 64 * 1024]).unwrap();
    }
    let c1 = server.connect();
    c1.welcome(1, &[0], 1);
    c0.peer_joined(1, 1);
    // Half-closing is a departure: EOF means the client is gone.
    c0.sock.shutdown(std::net::Shutdown::Write).unwrap();
    wait_until("peer-0 to go", || !server.peer_file(0).exists());
    let mut rest = Vec::new();
    c0.sock.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

/// The largest cluster, with clients that read nothing until everyone has joined: more messages
/// than a socket buffer holds wait in the server, and the server needs more fds than the usual
/// soft limit of 1024, which it is started with here.
#[test]
fn full_cluster_with_slow_readers() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    use std::os::unix::process::CommandExt;
    const NODES: u32 = 16;
    const VECTORS: u32 = 64;
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let server = Server::start_with(NODES, VECTORS, |cmd| {
        // SAFETY: only calls setrlimit, which is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                setrlimit(Resource::RLIMIT_NOFILE, 1024.min(hard), hard).map_err(Into::into)
            });
        }
    });
    let clients: Vec<Client> = (0..NODES).map(|_| server.connect()).collect();
    wait_until("every peer file", || {
        (0..NODES).all(|id| server.peer_file(id).exists())
    });
    // fds are dropped as soon as they are checked: keeping 16 x 1000 of them would exhaust the
    // test's own limit.
    for (i, c) in clients.iter().enumerate() {
        let i = i as i64;
        c.expect(0, false);
        c.expect(i, false);
        c.expect(-1, true);
        for peer in 0..i {
            for _ in 0..VECTORS {
                c.expect(peer, true);
            }
        }
        for _ in 0..VECTORS {
            c.expect(i, true);
        }
        for later in i + 1..i64::from(NODES) {
            for _ in 0..VECTORS {
                c.expect(later, true);
            }
        }
        c.assert_quiet();
    }
    // A latecomer is still refused, and the server is alive to say so.
    server.connect().assert_closed();
}

/// A client that floods the server and hangs up at once: the hangup is found only after several
/// turns of reading, and must still count as a departure.
#[test]
fn flood_then_hang_up() {
    use std::io::Write;
    let server = Server::start(2, 1);
    let mut c0 = server.connect();
    c0.welcome(0, &[], 1);
    let c1 = server.connect();
    c1.welcome(1, &[0], 1);
    c0.peer_joined(1, 1);
    c0.sock.set_nonblocking(true).unwrap();
    let sent = c0.sock.write(&vec![0u8; 4 << 20]).unwrap();
    assert!(sent > 64 * 1024, "only {sent} bytes fit");
    drop(c0);
    wait_until("peer-0 to go", || !server.peer_file(0).exists());
    c1.assert_quiet();
}
