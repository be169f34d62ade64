//! `alloc-max`: the 62-interface limit of `ALLOC` (62 is well-known, taken with `ALLOC_AT`;
//! 63 is the GSAS service's), lowest-free allocation, freeing on close, fresh protection
//! trees, and the identity ALLOC reports. Needs a node where no other interface is allocated.

use crate::verdict::Checks;
use anyhow::{bail, Result};
use unimem_mailbox::{fabric, Errno, Mailbox};
use unimem_wire::gsas::prot;
use unimem_wire::mailbox::well_known::{self, FIRST as INTERFACES};

pub fn run() -> Result<()> {
    let mut c = Checks::new("alloc-max");
    let tid = nix::unistd::gettid().as_raw() as u32;

    let mut held = Vec::with_capacity(INTERFACES as usize);
    for k in 0..INTERFACES {
        let mb = Mailbox::open()?;
        match mb.alloc() {
            Ok(info) => held.push((mb, info)),
            Err(e) => bail!(
                "alloc {} of {INTERFACES} failed: {e} (are interfaces in use on this node? see `unimem-mbox stats`)",
                k + 1
            ),
        }
    }
    let ifaces: Vec<u32> = held.iter().map(|(_, i)| i.iface).collect();
    c.expect(
        "62 allocations get interfaces 0..61, lowest free first",
        ifaces == (0..INTERFACES).collect::<Vec<_>>(),
        format!("{ifaces:?}"),
    );
    let first = held[0].1;
    c.expect(
        "thread id is the caller's gettid()",
        first.thread_id == tid,
        format!("thread {} (gettid {tid})", first.thread_id),
    );
    c.expect(
        "each file gets a fresh protection tree made on this node (node << 16 | serial, serial > 0)",
        held.iter().all(|(_, i)| prot::node(i.prot_id) == i.node && i.prot_id & 0xffff != 0)
            && (1..held.len()).all(|k| held[..k].iter().all(|(_, i)| i.prot_id != held[k].1.prot_id)),
        format!("first {:#x}, last {:#x}", first.prot_id, held[held.len() - 1].1.prot_id),
    );
    match fabric::node_id() {
        Ok(node) => c.expect(
            "node id matches /sys/class/misc/eusrvmem/node_id",
            first.node == node,
            format!("ALLOC says {}, sysfs {node}", first.node),
        ),
        Err(e) => c.expect("node id readable from sysfs", false, e),
    };

    let extra = Mailbox::open()?;
    let r = extra.alloc();
    if let Some(errno) = r.as_ref().err().and_then(|e| e.errno()) {
        println!("63rd alloc: {errno:?} (errno {})", errno as i32);
    }
    c.expect_errno(
        "63rd alloc fails with EBUSY (62 is well-known, 63 the GSAS service's)",
        r,
        Errno::EBUSY,
    );

    // The well-known interface: only ALLOC_AT gives it, once; no other interface that way.
    let famd = Mailbox::open()?;
    match famd.alloc_at(well_known::FAMD) {
        Ok(info) => c.expect(
            "ALLOC_AT gives the well-known interface while ALLOC has none left",
            info.iface == well_known::FAMD,
            format!("iface {}", info.iface),
        ),
        Err(e) => c.expect("ALLOC_AT of the well-known interface", false, e),
    };
    c.expect_errno(
        "a second ALLOC_AT of a held well-known interface: EBUSY",
        Mailbox::open()?.alloc_at(well_known::FAMD),
        Errno::EBUSY,
    );
    for not_known in [17, 63, 64] {
        c.expect_errno(
            &format!("ALLOC_AT of interface {not_known}, not well-known: EINVAL"),
            Mailbox::open()?.alloc_at(not_known),
            Errno::EINVAL,
        );
    }
    drop(famd);

    // Closing interface 17 frees it; the file whose ALLOC failed can allocate again and gets
    // the lowest free interface, i.e. 17.
    held.retain(|(_, info)| info.iface != 17);
    match extra.alloc() {
        Ok(info) => c.expect(
            "after closing iface 17, a new alloc gets iface 17",
            info.iface == 17,
            format!("got iface {}", info.iface),
        ),
        Err(e) => c.expect("after closing iface 17, a new alloc succeeds", false, e),
    };
    drop(extra);

    // INHERIT: a new file joins the tree of one that has allocated (and gets iface 17 again,
    // which closing `extra` freed).
    let joined = Mailbox::open()?;
    let tree = held[0].1.prot_id;
    let inherited = joined.inherit(&held[0].0).and_then(|_| joined.alloc());
    match inherited {
        Ok(info) => c.expect(
            "INHERIT then ALLOC: the interface is in the other file's tree",
            info.prot_id == tree && info.iface == 17,
            format!(
                "iface {} prot {:#x} (tree {tree:#x})",
                info.iface, info.prot_id
            ),
        ),
        Err(e) => c.expect("INHERIT then ALLOC", false, e),
    };
    drop(joined);
    drop(held);

    // Everything closed: allocation works again, and from another thread it reports that
    // thread's id.
    let (other_tid, other) = std::thread::spawn(|| {
        let mb = Mailbox::open();
        let tid = nix::unistd::gettid().as_raw() as u32;
        (tid, mb.and_then(|mb| mb.alloc().map(|info| (mb, info))))
    })
    .join()
    .expect("thread panicked");
    match other {
        Ok((_mb, info)) => {
            c.expect(
                "after closing all, alloc succeeds again (iface 0)",
                info.iface == 0,
                format!("iface {}", info.iface),
            );
            c.expect(
                "alloc from another thread reports that thread's id",
                info.thread_id == other_tid && info.thread_id != tid,
                format!(
                    "thread {} (that thread {other_tid}, main {tid})",
                    info.thread_id
                ),
            );
        }
        Err(e) => {
            c.expect("after closing all, alloc succeeds again", false, e);
        }
    }
    c.finish()
}
