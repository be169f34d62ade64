//! `unimem-gsas-test map-hold`: maps one GSAS page of this node or of another node (approved by
//! its home's service with a MAP request, `Gsas::map`), which may be another tree's that a
//! grant lets this user use (`op::GRANT`), prints its first word, optionally stores to it, and
//! keeps reading it: the test sees what the mapping shows and, when the grant changes or the
//! page is freed, that the mapping is gone (the process dies of SIGBUS, status 135).

use anyhow::Result;
use clap::Args;
use gsas::cli::{parse_u64, Ctx};
use gsas::PAGE_SIZE;
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct MapHold {
    /// The page's GSAS address (on any node).
    #[arg(long, value_parser = parse_u64)]
    addr: u64,
    /// Store this value into the first word through the mapping (needs a writable mapping).
    #[arg(long, value_parser = parse_u64)]
    write: Option<u64>,
    /// Map read-only (a grant without `w` allows only that).
    #[arg(long)]
    read_only: bool,
    /// Keep reading the word for this long, printing each new value.
    #[arg(long, default_value_t = 0)]
    seconds: u64,
}

/// Exit status when the mapping is refused (EACCES, ENXIO, EFAULT: printed).
const REFUSED: i32 = 3;

pub fn run(ctx: &Ctx, m: MapHold) -> Result<i32> {
    let g = ctx.open()?;
    let len = PAGE_SIZE as usize;
    let mapped = g.map(m.addr, len, !m.read_only);
    let p = match mapped {
        Ok(p) => p.as_ptr().cast::<u64>(),
        Err(e) => {
            println!("refused: {} ({e})", e.errno());
            return Ok(REFUSED);
        }
    };
    // SAFETY: `p` is the first word of a live page-sized mapping of this process (it is never
    // unmapped here; if the driver removes it, the access faults, which is what the test sees).
    let read = || unsafe { p.read_volatile() };
    let mut last = read();
    println!("mapped word={last:#x}");
    if let Some(v) = m.write {
        // SAFETY: as above; the mapping is writable (not `--read-only`).
        unsafe { p.write_volatile(v) };
        last = read();
        println!("wrote word={last:#x}");
    }
    let end = Instant::now() + Duration::from_secs(m.seconds);
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
        let v = read();
        if v != last {
            println!("word={v:#x}");
            last = v;
        }
    }
    println!("done word={last:#x}");
    Ok(0)
}
