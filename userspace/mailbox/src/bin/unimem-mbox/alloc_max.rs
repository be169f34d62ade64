//! `alloc-max`: the 64-interface limit, lowest-free allocation, freeing on close, and the
//! identity ALLOC reports. Needs a node where no other interface is allocated.

use crate::verdict::Checks;
use anyhow::{bail, Result};
use unimem_mailbox::{fabric, Errno, Mailbox, INTERFACES};

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
        "64 allocations get interfaces 0..63, lowest free first",
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
        "initial protection id is the thread id",
        first.prot_id == first.thread_id,
        format!("prot {}", first.prot_id),
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
        println!("65th alloc: {errno:?} (errno {})", errno as i32);
    }
    c.expect_errno("65th alloc fails with EBUSY", r, Errno::EBUSY);

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
