//! `unimem-gsas-test check map`: a process maps its tree's GSAS pages of its own node
//! (`Gsas::map_local`, the mailbox file's `MMAP_GSAS` range), and nothing else.

use crate::checks::Checks;
use anyhow::Result;
use gsas::cli::Ctx;
use gsas::{addr, node_of, offset_of, Gsas, TreeSource, PAGE_SIZE};
use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

const LEN: usize = 2 * PAGE_SIZE as usize;

/// The errno a failed mapping reports (`None`: it succeeded, or failed otherwise).
fn refused<T>(r: &gsas::Result<T>) -> Option<Errno> {
    r.as_ref().err().map(|e| e.errno())
}

fn describe<T>(r: &gsas::Result<T>) -> String {
    match r {
        Ok(_) => "mapped".into(),
        Err(e) => e.to_string(),
    }
}

/// Whether reading `p` kills a child process with SIGBUS (the mapping was removed).
fn read_faults(p: *const u64) -> Result<bool> {
    // SAFETY: the child only reads one word and exits; this process has one thread.
    match unsafe { fork() }? {
        ForkResult::Child => {
            // SAFETY: `p` was a mapping of this process; if it is gone the read faults, which
            // is what is checked.
            let v = unsafe { p.read_volatile() };
            std::process::exit(i32::from(v == u64::MAX));
        }
        ForkResult::Parent { child } => Ok(matches!(
            waitpid(child, None)?,
            WaitStatus::Signaled(_, Signal::SIGBUS, _)
        )),
    }
}

/// Maps `a` (whose mapping `g` must be refused) over a reservation of [`LEN`] bytes: the
/// answer, and whether every page of the reservation is still mapped (`mprotect` fails with
/// `ENOMEM` over a hole).
fn refused_over_reservation(
    g: &Gsas,
    a: u64,
) -> Result<(gsas::Result<std::ptr::NonNull<std::ffi::c_void>>, bool)> {
    use nix::sys::mman::{mmap_anonymous, mprotect, munmap, MapFlags, ProtFlags};
    let len = std::num::NonZeroUsize::new(LEN).expect("LEN > 0");
    // SAFETY: a new private anonymous mapping the kernel places: it replaces nothing.
    let res = unsafe {
        mmap_anonymous(
            None,
            len,
            ProtFlags::PROT_NONE,
            MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
        )
    }?;
    let at = std::num::NonZeroUsize::new(res.as_ptr() as usize);
    let r = g.map_local(a, LEN, at);
    // SAFETY: the reservation made above (or what replaced it), used by nothing else.
    let whole = unsafe { mprotect(res, LEN, ProtFlags::PROT_NONE) }.is_ok();
    // SAFETY: as above.
    let _ = unsafe { munmap(res, LEN) };
    Ok((r, whole))
}

pub fn check(ctx: &Ctx, other_is_mine: bool, json: bool) -> Result<i32> {
    let g = ctx.open()?;
    let me = g.node();
    let mut c = Checks::new(json);
    let a = g.alloc_shared_page(me, 2)?;
    let m = g.map_local(a, LEN, None);
    c.expect("own tree maps its pages", m.is_ok(), describe(&m));
    let Ok(p) = m else {
        g.free(a)?;
        return Ok(c.finish("map"));
    };
    let words = p.as_ptr().cast::<u64>();
    // SAFETY: `words` is the start of a LEN-byte mapping of this process; the second page's
    // first word is inside it.
    let second = unsafe { words.add(PAGE_SIZE as usize / 8) };
    // SAFETY: as above: words of the live mapping.
    unsafe {
        words.write_volatile(0x5eed_0001);
        second.write_volatile(0x5eed_0002);
    }
    let got = (g.read(a), g.read(a + PAGE_SIZE));
    c.expect(
        "stores through the mapping are what the service reads",
        matches!(got, (Ok(0x5eed_0001), Ok(0x5eed_0002))),
        format!("{got:?}"),
    );
    g.fetch_add(a, 0x100)?;
    // SAFETY: a word of the live mapping.
    let seen = unsafe { words.read_volatile() };
    c.expect(
        "the service's Fetch&Add is seen through the mapping",
        seen == 0x5eed_0101,
        format!("{seen:#x}"),
    );

    let other: Gsas = if other_is_mine {
        ctx.open()?
    } else {
        ctx.open_in(TreeSource::Fresh)?
    };
    let r = other.map_local(a, LEN, None);
    c.expect(
        "another tree's mapping is refused with EACCES",
        refused(&r) == Some(Errno::EACCES),
        describe(&r),
    );
    let r = other.map_local(a + PAGE_SIZE, PAGE_SIZE as usize, None);
    c.expect(
        "another tree's mapping of one page is refused with EACCES",
        refused(&r) == Some(Errno::EACCES),
        describe(&r),
    );
    // A refused mapping over a reservation must leave the reservation whole: a hole there
    // would take another thread's next mmap, which the owner of the reservation then
    // overwrites (the reads' arena did, docs/GSAS.md "Reads through mappings").
    let (r, whole) = refused_over_reservation(&other, a)?;
    c.expect(
        "another tree's mapping at a fixed address is refused and leaves what was mapped there",
        refused(&r) == Some(Errno::EACCES) && whole,
        format!(
            "{}; the reservation {}",
            describe(&r),
            if whole { "is whole" } else { "has a hole" }
        ),
    );
    let r = g.map_local(a, LEN + PAGE_SIZE as usize, None);
    c.expect(
        "a mapping past the allocation is refused",
        refused(&r).is_some(),
        describe(&r),
    );
    let elsewhere = addr(me.wrapping_add(1), offset_of(a));
    let r = g.map_local(elsewhere, PAGE_SIZE as usize, None);
    c.expect(
        "another node's page is refused",
        r.is_err() && node_of(elsewhere) != me,
        describe(&r),
    );

    g.free(a)?;
    let gone = read_faults(words)?;
    c.expect(
        "a free removes the mapping (SIGBUS at the next access)",
        gone,
        format!(
            "child {}",
            if gone { "got SIGBUS" } else { "read the page" }
        ),
    );
    let r = g.map_local(a, LEN, None);
    c.expect(
        "freed pages are refused with ENXIO",
        refused(&r) == Some(Errno::ENXIO),
        describe(&r),
    );
    // SAFETY: the mapping made above, no longer used (its pages are gone).
    let _ = unsafe { nix::sys::mman::munmap(p, LEN) };
    println!("map: tree {:#x} of node {me}", g.prot_id());
    Ok(c.finish("map"))
}
