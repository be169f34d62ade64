//! `bad-args`: every invalid request the ABI defines must fail with its errno, and the
//! privileged ioctls must fail with EPERM once CAP_SYS_ADMIN is gone. Valid controls next to
//! the invalid ones show that the errno comes from the bad argument, not from the setup.
//! Assumes an idle node: interface 63 unallocated and service 15 unbound.

use crate::verdict::Checks;
use anyhow::{Context, Result};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, setuid, ForkResult, Uid};
use std::io::Write;
use std::time::Duration;
use unimem_mailbox::{fabric, service, Errno, Mailbox, SendArgs, MAX_24, PAYLOAD_LEN};

/// The user the EPERM checks run as (nobody): setuid from root to it clears all capabilities.
const NOBODY: u32 = 65534;

pub fn run() -> Result<()> {
    let mut c = Checks::new("bad-args");
    let count = fabric::node_count().context("node count")?;
    let payload = [0x5au8; PAYLOAD_LEN];

    // --- no ALLOC yet
    let a = Mailbox::open_nonblocking()?;
    c.expect_errno(
        "SEND without ALLOC",
        a.send_bytes(0, 0, &payload),
        Errno::EINVAL,
    );
    c.expect_errno(
        "RECV without ALLOC (nonblocking)",
        a.try_recv(),
        Errno::EINVAL,
    );

    // --- one interface; a second ALLOC on the same file is refused
    let me = a.alloc().context("ALLOC")?;
    c.expect_errno("second ALLOC on the same file", a.alloc(), Errno::EINVAL);
    c.expect(
        "RECV on an empty nonblocking file gives nothing (EAGAIN)",
        matches!(a.try_recv_raw(), Ok(None)),
        "empty",
    );

    // --- destinations
    for node in [count, 255, u32::MAX] {
        c.expect_errno(
            &format!("SEND to node {node} (node count {count})"),
            a.send_bytes(node, 0, &payload),
            Errno::EINVAL,
        );
    }
    for iface in [64, 1000, u32::MAX] {
        c.expect_errno(
            &format!("SEND to iface {iface}"),
            a.send_bytes(me.node, iface, &payload),
            Errno::EINVAL,
        );
    }
    let mut args = SendArgs {
        node: me.node,
        iface: me.iface,
        payload,
        reserved: [0; 7],
    };
    for reserved in [[0, 0, 0, 1, 0, 0, 0], [0xff; 7]] {
        args.reserved = reserved;
        c.expect_errno(
            &format!("SEND with reserved bytes {reserved:02x?}"),
            a.send_args(&args),
            Errno::EINVAL,
        );
    }
    args.reserved = [0; 7];
    c.expect(
        "control: the same SEND with zero reserved bytes (to itself) is accepted",
        a.send_args(&args).is_ok(),
        "accepted",
    );
    match recv_within(&a) {
        Ok(Some(p)) => c.expect(
            "control: the packet arrives with this interface's header",
            (
                u32::from(p.header.node),
                u32::from(p.header.iface),
                p.header.prot_id,
            ) == (me.node, me.iface, me.prot_id),
            format!("{:?}", p.header),
        ),
        other => c.expect("control: the packet arrives", false, format!("{other:?}")),
    };

    // --- SET_PROT (root)
    c.expect_errno("SET_PROT iface 64", a.set_prot(64, 1), Errno::EINVAL);
    c.expect_errno(
        "SET_PROT prot 2^24",
        a.set_prot(me.iface, MAX_24 + 1),
        Errno::EINVAL,
    );
    let spare = if me.iface == 63 { 62 } else { 63 };
    c.expect_errno(
        &format!("SET_PROT of unallocated iface {spare}"),
        a.set_prot(spare, 1),
        Errno::ENOENT,
    );
    c.expect(
        "control: SET_PROT of own iface to 2^24-1 is accepted",
        a.set_prot(me.iface, MAX_24).is_ok(),
        "accepted",
    );
    let _ = a.send_bytes(me.node, me.iface, &payload);
    match recv_within(&a) {
        Ok(Some(p)) => c.expect(
            "control: the next packet carries prot 2^24-1",
            p.header.prot_id == MAX_24,
            format!("prot {}", p.header.prot_id),
        ),
        other => c.expect(
            "control: the next packet arrives",
            false,
            format!("{other:?}"),
        ),
    };
    a.set_prot(me.iface, me.prot_id)
        .context("restoring the protection id")?;

    // --- kernel messages (root)
    let k1 = Mailbox::open_nonblocking()?;
    let k2 = Mailbox::open_nonblocking()?;
    c.expect_errno("KRECV on an unbound file", k1.try_krecv(), Errno::EINVAL);
    for s in [0, service::COUNT, u32::MAX] {
        c.expect_errno(&format!("KBIND service {s}"), k1.kbind(s), Errno::EINVAL);
    }
    c.expect(
        "control: KBIND service 15 on a free node",
        k1.kbind(service::TEST).is_ok(),
        "bound",
    );
    c.expect_errno(
        "KBIND service 15 on a second file",
        k2.kbind(service::TEST),
        Errno::EBUSY,
    );
    drop(k1);
    c.expect(
        "KBIND service 15 succeeds once the first file is closed",
        k2.kbind(service::TEST).is_ok(),
        "bound",
    );
    c.expect(
        "KRECV on an empty nonblocking bound file gives nothing (EAGAIN)",
        matches!(k2.try_krecv(), Ok(None)),
        "empty",
    );
    c.expect_errno(
        &format!("KSEND to node {count}"),
        k2.ksend(count, service::TEST, 1),
        Errno::EINVAL,
    );
    for s in [0, service::COUNT] {
        c.expect_errno(
            &format!("KSEND to service {s}"),
            k2.ksend(me.node, s, 1),
            Errno::EINVAL,
        );
    }

    // --- without CAP_SYS_ADMIN (a child that became nobody after the files were opened)
    let fresh = Mailbox::open_nonblocking()?;
    let unbound = Mailbox::open_nonblocking()?;
    std::io::stdout().flush()?;
    // SAFETY: the only other thread is the deadline watchdog, which only sleeps and signals
    // (it holds no lock the child could need), so the child may run ordinary Rust.
    match unsafe { fork() }.context("fork")? {
        ForkResult::Child => {
            let status = unprivileged(&a, me.iface, &k2, &unbound, &fresh, me.node);
            let _ = std::io::stdout().flush();
            std::process::exit(status);
        }
        ForkResult::Parent { child } => {
            let status = waitpid(child, None).context("waitpid")?;
            c.expect(
                "checks as uid 65534 (see lines above)",
                matches!(status, WaitStatus::Exited(_, 0)),
                format!("{status:?}"),
            );
        }
    }
    drop(fresh);
    drop(unbound);

    // --- last, because it may sleep until the --timeout alarm if the driver is wrong
    let b = Mailbox::open()?;
    c.expect_errno(
        "RECV without ALLOC (blocking file)",
        b.recv_raw(),
        Errno::EINVAL,
    );
    c.finish()
}

/// A packet that should already be on its way (a same-node send may still be delivered
/// asynchronously by the driver, so allow it a moment).
fn recv_within(mb: &Mailbox) -> unimem_mailbox::Result<Option<unimem_mailbox::Packet>> {
    mb.wait_readable(Some(Duration::from_secs(2)))?;
    mb.try_recv()
}

/// Runs in the child: drops root, then checks EPERM for the privileged ioctls and that the
/// unprivileged ones still work. Returns the exit status (0: all passed).
fn unprivileged(
    allocated: &Mailbox,
    own_iface: u32,
    bound: &Mailbox,
    unbound: &Mailbox,
    fresh: &Mailbox,
    node: u32,
) -> i32 {
    let mut c = Checks::new("bad-args (uid 65534)");
    if let Err(e) = setuid(Uid::from_raw(NOBODY)) {
        c.expect("setuid(65534)", false, e);
        return 1;
    }
    c.expect_errno(
        "SET_PROT without CAP_SYS_ADMIN",
        allocated.set_prot(own_iface, 5),
        Errno::EPERM,
    );
    c.expect_errno(
        "KBIND without CAP_SYS_ADMIN",
        unbound.kbind(14),
        Errno::EPERM,
    );
    c.expect_errno(
        "KSEND without CAP_SYS_ADMIN",
        bound.ksend(node, service::TEST, 1),
        Errno::EPERM,
    );
    c.expect_errno(
        "KRECV without CAP_SYS_ADMIN (on a bound file)",
        bound.try_krecv(),
        Errno::EPERM,
    );
    // The mailbox itself is for unprivileged threads.
    match fresh.alloc() {
        Ok(info) => {
            c.expect("unprivileged ALLOC", true, format!("iface {}", info.iface));
            c.expect(
                "unprivileged SEND to itself",
                fresh
                    .send_bytes(info.node, info.iface, &[1; PAYLOAD_LEN])
                    .is_ok(),
                "accepted",
            );
            c.expect(
                "unprivileged RECV",
                matches!(recv_within(fresh), Ok(Some(_))),
                "received",
            );
        }
        Err(e) => {
            c.expect("unprivileged ALLOC", false, e);
        }
    }
    match c.finish() {
        Ok(()) => 0,
        Err(_) => 1,
    }
}
