//! `bad-args`: every invalid request the ABI defines must fail with its errno, and the
//! privileged ioctls must fail with EPERM once CAP_SYS_ADMIN is gone. Valid controls next to
//! the invalid ones show that the errno comes from the bad argument, not from the setup.
//! Assumes an idle node: interface 62 unallocated and service 15 unbound.

use crate::verdict::Checks;
use anyhow::{Context, Result};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, setuid, ForkResult, Uid};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};
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
    c.expect_errno(
        "SET_PROT of iface 63 (the GSAS service's)",
        a.set_prot(63, 1),
        Errno::EINVAL,
    );
    c.expect_errno("SET_PROT prot 0", a.set_prot(me.iface, 0), Errno::EINVAL);
    let spare = if me.iface == 62 { 61 } else { 62 };
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

    // --- protection trees: INHERIT and SET_TREE (root), before ALLOC only
    trees(&mut c, &a)?;
    // --- the GSAS area mapping
    mapping(&mut c, &a)?;

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

/// INHERIT and SET_TREE: errors and controls. `a` has allocated.
fn trees(c: &mut Checks, a: &Mailbox) -> Result<()> {
    let f = Mailbox::open_nonblocking()?;
    let unallocated = Mailbox::open_nonblocking()?;
    let null = std::fs::File::open("/dev/null")?;
    c.expect_errno(
        "INHERIT of a file that is not a mailbox (/dev/null)",
        f.inherit(&null),
        Errno::EINVAL,
    );
    c.expect_errno(
        "INHERIT of a mailbox file without ALLOC",
        f.inherit(&unallocated),
        Errno::EINVAL,
    );
    c.expect_errno("INHERIT of itself", f.inherit(&f), Errno::EINVAL);
    c.expect_errno(
        "INHERIT on a file that has allocated",
        a.inherit(&f),
        Errno::EINVAL,
    );
    for id in [0, MAX_24 + 1] {
        c.expect_errno(&format!("SET_TREE {id:#x}"), f.set_tree(id), Errno::EINVAL);
    }
    c.expect_errno(
        "SET_TREE on a file that has allocated",
        a.set_tree(0x0a_0001),
        Errno::EINVAL,
    );
    let bad = nix::libc::c_int::MAX;
    // SAFETY: the ioctl only reads the u32 argument.
    let r = unsafe { unimem_mailbox::ioctl::inherit(f.as_raw_fd(), &(bad as u32)) };
    c.expect(
        "INHERIT of a closed fd: EBADF",
        r == Err(Errno::EBADF),
        format!("{r:?}"),
    );
    c.expect(
        "control: SET_TREE 0x0a0001, then ALLOC gets that tree",
        f.set_tree(0x0a_0001).is_ok() && f.alloc().is_ok_and(|i| i.prot_id == 0x0a_0001),
        "tree 0x0a0001",
    );
    Ok(())
}

/// mmap of the interface's GSAS area: only after ALLOC, responses read-only, inside the area.
fn mapping(c: &mut Checks, a: &Mailbox) -> Result<()> {
    use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
    use std::num::NonZeroUsize;
    let page = unimem_wire::gsas::PAGE_SIZE as usize;
    let map_with = |mb: &Mailbox,
                    len: usize,
                    prot: ProtFlags,
                    flags: MapFlags,
                    off: u64|
     -> unimem_mailbox::Result<()> {
        // SAFETY: a new mapping at an address the kernel chooses, unmapped at once.
        let p = unsafe {
            mmap(
                None,
                NonZeroUsize::new(len).expect("nonzero"),
                prot,
                flags,
                mb.as_fd(),
                off as nix::libc::off_t,
            )
        }
        .map_err(|e| unimem_mailbox::Error::sys(unimem_mailbox::Op::Mmap, e))?;
        // SAFETY: mapped just above with this length.
        let _ = unsafe { munmap(p, len) };
        Ok(())
    };
    let try_map = |mb: &Mailbox, len: usize, prot: ProtFlags, off: u64| {
        map_with(mb, len, prot, MapFlags::MAP_SHARED, off)
    };
    let try_map_private = |mb: &Mailbox, len: usize, off: u64| {
        let rw = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        map_with(mb, len, rw, MapFlags::MAP_PRIVATE, off)
    };
    let unallocated = Mailbox::open_nonblocking()?;
    c.expect_errno(
        "mmap before ALLOC",
        try_map(&unallocated, page, ProtFlags::PROT_READ, 0),
        Errno::EINVAL,
    );
    c.expect_errno(
        "mmap of the responses writable",
        try_map(a, 2 * page, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE, 0),
        Errno::EACCES,
    );
    let pages = unimem_wire::gsas::AREA_PAGES as usize;
    c.expect_errno(
        &format!("mmap of {} pages (the area has {pages})", pages + 1),
        try_map(a, (pages + 1) * page, ProtFlags::PROT_READ, 0),
        Errno::EINVAL,
    );
    c.expect_errno(
        &format!("mmap at page {pages}"),
        try_map(a, page, ProtFlags::PROT_READ, (pages * page) as u64),
        Errno::EINVAL,
    );
    c.expect(
        "control: responses read-only, bulk-out and the submission slots read-write map",
        try_map(a, 2 * page, ProtFlags::PROT_READ, 0).is_ok()
            && try_map(
                a,
                2 * page,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                2 * page as u64,
            )
            .is_ok(),
        "mapped",
    );
    c.expect_errno(
        "mmap of the submission slots private and writable",
        try_map_private(a, page, 3 * page as u64),
        Errno::EINVAL,
    );
    match a.map_area() {
        Ok(area) => {
            // SAFETY: a read-only page of the mapping; mprotect must refuse to make it writable.
            let r = unsafe {
                nix::sys::mman::mprotect(
                    std::ptr::NonNull::new(area.responses_ptr() as *mut std::ffi::c_void)
                        .expect("mapped"),
                    page,
                    ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                )
            };
            c.expect(
                "mprotect cannot make the responses writable",
                r == Err(Errno::EACCES),
                format!("{r:?}"),
            );
        }
        Err(e) => {
            c.expect("Mailbox::map_area", false, e);
        }
    }
    Ok(())
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
        "SET_TREE without CAP_SYS_ADMIN",
        fresh.set_tree(0x0a_0001),
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
    c.expect_errno(
        "ALLOC_AT of the well-known interface without CAP_SYS_ADMIN",
        fresh.alloc_at(unimem_wire::mailbox::well_known::FAMD),
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
