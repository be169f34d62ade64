//! `unimem-isolation`: plays the users of tests/cluster/isolation.sh, each of which tries to
//! get at another protection tree's data through what an interface keeps across owners. Each
//! subcommand that checks something (and `map-private`, an attack on /dev/eusrvmem) exits 1 when the attack worked, 0 when it did not, 2 when
//! the setup did not come about (inconclusive: the test fails too).

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use gsas::{Gsas, TreeSource};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use unimem_mailbox::Mailbox;
use unimem_wire::gsas::{self as wire, op, PAGE_SIZE, SERVICE_IFACE};

/// Test rig: a user trying to read or take another protection tree's memory.
#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Allocates a page on HOME in a fresh tree, bulk-writes SECRET there and bulk-reads it
    /// back (so the interface's bulk-out and bulk-in both held it), prints `tree=… addr=…
    /// iface=…` and exits without freeing the page.
    LeaveSecret {
        #[arg(long)]
        home: u16,
        #[arg(long)]
        secret: String,
    },
    /// Allocates an interface (a fresh tree), maps its whole area and looks for SECRET in it.
    /// Exit 1 if found.
    ScanArea {
        #[arg(long)]
        secret: String,
        /// Exit 2 unless the interface allocated is this one.
        #[arg(long)]
        expect_iface: Option<u32>,
    },
    /// Maps the first page of /dev/eusrvmem privately (copy-on-write): exit 1 if the driver
    /// allows it (a revocation or reservation could not zap such a mapping), 0 if refused.
    MapPrivate,
    /// Opens, allocates (a fresh tree) and closes the mailbox TRIES times; exit 1 as soon as
    /// the tree AVOID is handed out.
    Recycle {
        #[arg(long, value_parser = parse_num)]
        avoid: u32,
        #[arg(long, default_value_t = 70_000)]
        tries: u64,
    },
    /// The previous owner: allocates a page on HOME, waits for PAUSED to exist (the home is
    /// stopped), queues a BULK_WRITE of 256 bytes to that page from a second interface of its
    /// tree and closes that interface, creates QUEUED, waits for CHECK, then reads the page:
    /// exit 1 if it holds SECRET (the next owner's bulk-out was applied for this tree).
    QueuedWrite {
        #[arg(long)]
        home: u16,
        #[arg(long)]
        secret: String,
        #[arg(long)]
        paused: PathBuf,
        #[arg(long)]
        queued: PathBuf,
        #[arg(long)]
        check: PathBuf,
    },
    /// A user filling its quota: allocates PAGES pages on HOME in a fresh tree (prints `tree=…
    /// addr=…`), then asks for one more page: exit 1 if that is granted, 0 if refused as over
    /// quota. The pages are left allocated.
    Hog {
        #[arg(long)]
        home: u16,
        #[arg(long)]
        pages: u64,
    },
    /// The next owner: allocates an interface (exit 2 unless it is EXPECT_IFACE) and writes
    /// SECRET over its bulk-out page, as a thread does before a bulk write.
    Victim {
        #[arg(long)]
        secret: String,
        #[arg(long)]
        expect_iface: u32,
    },
}

fn parse_num(s: &str) -> Result<u32, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("{s}: {e}"))
}

/// SECRET repeated over `len` bytes.
fn pattern(secret: &str, len: usize) -> Vec<u8> {
    secret.bytes().cycle().take(len).collect()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

fn wait_for(path: &Path, what: &str) -> Result<()> {
    let start = Instant::now();
    while !path.exists() {
        if start.elapsed() > Duration::from_secs(300) {
            bail!("{} did not appear ({what})", path.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn leave_secret(home: u16, secret: &str) -> Result<u8> {
    let g = Gsas::open_in(TreeSource::Fresh).context("opening a GSAS handle")?;
    let addr = g.alloc_shared_page(home, 1).context("ALLOC")?;
    let data = pattern(secret, 256);
    g.bulk_write(addr, &data).context("BULK_WRITE")?;
    let mut back = vec![0u8; data.len()];
    g.bulk_read(addr, &mut back).context("BULK_READ")?;
    if back != data {
        bail!("the page did not read back what was written");
    }
    println!("tree={:#x} addr={addr:#x} iface={}", g.prot_id(), g.iface());
    Ok(0)
}

fn scan_area(secret: &str, expect: Option<u32>) -> Result<u8> {
    let mb = Mailbox::open().context("opening the mailbox")?;
    let info = mb.alloc().context("ALLOC")?;
    let area = mb.map_area().context("mapping the area")?;
    let page = PAGE_SIZE as usize;
    let mut bytes = vec![0u8; 4 * page];
    for (i, b) in bytes.iter_mut().enumerate() {
        let p = if i < 2 * page {
            // SAFETY: the two read-only pages are mapped for the life of `area`.
            unsafe { area.responses_ptr().add(i) }
        } else {
            // SAFETY: the two read-write pages are mapped for the life of `area`.
            unsafe { area.bulk_out_ptr().add(i - 2 * page) }
        };
        // SAFETY: see above; other nodes may write these bytes, hence volatile.
        *b = unsafe { p.read_volatile() };
    }
    let found = contains(&bytes, secret.as_bytes());
    let nonzero = bytes.iter().filter(|&&b| b != 0).count();
    println!(
        "iface={} tree={:#x} found={} nonzero_bytes={nonzero}",
        info.iface,
        info.prot_id,
        if found { "yes" } else { "no" }
    );
    if expect.is_some_and(|e| e != info.iface) {
        eprintln!("inconclusive: got interface {}, not {expect:?}", info.iface);
        return Ok(2);
    }
    Ok(u8::from(found))
}

fn recycle(avoid: u32, tries: u64) -> Result<u8> {
    let start = Instant::now();
    let mut again = 0u64;
    for i in 1..=tries {
        let mb = Mailbox::open().context("opening the mailbox")?;
        let info = match mb.alloc() {
            Ok(info) => info,
            Err(e) if e.errno() == Some(nix::errno::Errno::EAGAIN) => {
                again += 1;
                continue;
            }
            Err(e) => return Err(e).context("ALLOC"),
        };
        if info.prot_id == avoid {
            println!(
                "tree {avoid:#x} handed out again after {i} tries ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
            return Ok(1);
        }
        if i % 10_000 == 0 {
            eprintln!("{i} tries, last tree {:#x}", info.prot_id);
        }
    }
    println!(
        "{tries} fresh trees ({again} EAGAIN) in {:.1} s, never {avoid:#x}",
        start.elapsed().as_secs_f64()
    );
    Ok(0)
}

fn queued_write(home: u16, secret: &str, paused: &Path, queued: &Path, check: &Path) -> Result<u8> {
    let g = Gsas::open_in(TreeSource::Fresh).context("opening a GSAS handle")?;
    let addr = g.alloc_shared_page(home, 1).context("ALLOC")?;
    println!("tree={:#x} addr={addr:#x} iface={}", g.prot_id(), g.iface());
    wait_for(paused, "the home paused")?;
    let second = Mailbox::open().context("opening a second mailbox file")?;
    second
        .inherit(&g.transport().interface().mailbox)
        .context("INHERIT")?;
    let info = second.alloc().context("ALLOC of the second interface")?;
    let req = wire::request(op::BULK_WRITE, addr, 256, 0);
    second
        .send(u32::from(home), SERVICE_IFACE, &req)
        .context("SEND of the BULK_WRITE")?;
    drop(second);
    println!("queued iface={}", info.iface);
    std::fs::write(queued, format!("{}\n", info.iface))
        .with_context(|| format!("writing {}", queued.display()))?;
    wait_for(check, "the check")?;
    let mut page = vec![0u8; 256];
    g.bulk_read(addr, &mut page).context("BULK_READ")?;
    let leaked = contains(&page, secret.as_bytes());
    println!(
        "page {addr:#x} {}",
        if leaked {
            "holds the next owner's secret"
        } else {
            "does not hold the next owner's secret"
        }
    );
    g.free(addr).context("FREE")?;
    Ok(u8::from(leaked))
}

fn hog(home: u16, pages: u64) -> Result<u8> {
    let g = Gsas::open_in(TreeSource::Fresh).context("opening a GSAS handle")?;
    let addr = g
        .alloc_shared_page(home, pages)
        .context("ALLOC of the quota")?;
    println!("tree={:#x} addr={addr:#x}", g.prot_id());
    match g.alloc_shared_page(home, 1) {
        Ok(extra) => {
            println!("one page more than the quota was granted: {extra:#x}");
            g.free(extra).context("FREE")?;
            Ok(1)
        }
        Err(gsas::Error::Quota(_)) => {
            println!("one page more: refused, over quota");
            Ok(0)
        }
        Err(e) => Err(e).context("ALLOC past the quota"),
    }
}

fn victim(secret: &str, expect: u32) -> Result<u8> {
    let mb = Mailbox::open().context("opening the mailbox")?;
    let info = mb.alloc().context("ALLOC")?;
    println!("iface={} tree={:#x}", info.iface, info.prot_id);
    if info.iface != expect {
        eprintln!("inconclusive: got interface {}, not {expect}", info.iface);
        return Ok(2);
    }
    let area = mb.map_area().context("mapping the area")?;
    area.write_bulk_out(&pattern(secret, PAGE_SIZE as usize));
    Ok(0)
}

fn map_private() -> Result<u8> {
    use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
    use std::num::NonZeroUsize;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/eusrvmem")
        .context("opening /dev/eusrvmem")?;
    let len = NonZeroUsize::new(PAGE_SIZE as usize).context("page size")?;
    let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
    // SAFETY: a fresh mapping of a device file, unmapped below and never dereferenced.
    match unsafe { mmap(None, len, prot, MapFlags::MAP_PRIVATE, &f, 0) } {
        Ok(p) => {
            // SAFETY: `p` is the mapping of `len` bytes made just above.
            unsafe { munmap(p, len.get()) }.context("munmap")?;
            eprintln!("a MAP_PRIVATE mapping of /dev/eusrvmem was allowed");
            Ok(1)
        }
        Err(nix::errno::Errno::EINVAL) => Ok(0),
        Err(e) => bail!("MAP_PRIVATE failed with {e}, not EINVAL"),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match &cli.cmd {
        Cmd::LeaveSecret { home, secret } => leave_secret(*home, secret),
        Cmd::ScanArea {
            secret,
            expect_iface,
        } => scan_area(secret, *expect_iface),
        Cmd::MapPrivate => map_private(),
        Cmd::Recycle { avoid, tries } => recycle(*avoid, *tries),
        Cmd::QueuedWrite {
            home,
            secret,
            paused,
            queued,
            check,
        } => queued_write(*home, secret, paused, queued, check),
        Cmd::Hog { home, pages } => hog(*home, *pages),
        Cmd::Victim {
            secret,
            expect_iface,
        } => victim(secret, *expect_iface),
    };
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("unimem-isolation: {e:#}");
            ExitCode::from(2)
        }
    }
}
