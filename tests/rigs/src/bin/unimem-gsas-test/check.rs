//! `unimem-gsas-test check ...`: the checks the cluster acceptance test runs. Each prints a line
//! per finding, a summary (or one JSON object with --json) and exits 1 if a check failed.

use crate::checks::Checks;
use anyhow::Result;
use clap::{Args, Subcommand};
use gsas::cli::{parse_u64, Ctx};
use gsas::json::Obj;
use gsas::{addr, node_of, offset_of, op, Error, Gsas, TreeSource, BULK_MAX, MAX_ALLOC_PAGES};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Subcommand)]
pub enum Check {
    /// THREADS threads each Fetch&Add 1 to the word at ADDR COUNT times. Checks each thread
    /// saw strictly increasing old values; prints the sum of the old values seen (a test
    /// running this on several nodes adds them up: with N increments from 0 in all, they must
    /// be 0 + 1 + ... + N-1, and the word N).
    FaaSum {
        /// The GSAS address.
        #[arg(long, value_parser = parse_u64)]
        addr: u64,
        #[arg(long, default_value_t = 4)]
        threads: usize,
        #[arg(long, default_value_t = 1000)]
        count: u64,
        /// Start only when PARTIES processes have arrived at the barrier word BARRIER (each
        /// adds 1 to it, then reads until it reaches PARTIES): processes started one after the
        /// other on several nodes then run at the same time.
        #[arg(long, value_parser = parse_u64, requires = "parties")]
        barrier: Option<u64>,
        #[arg(long, default_value_t = 1)]
        parties: u64,
        /// Apply every Fetch&Add twice (a second request whose answer is ignored), as a
        /// service that applies an operation twice would: the sums a test checks then differ.
        #[arg(long)]
        apply_twice: bool,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// READ256 and READ128 under concurrent WRITE128 of the 32 bytes at ADDR (32-byte
    /// aligned): writers write (v, v ^ K) into each 16-byte half, readers check every half
    /// they see is all-zero or such a pair. Any other value is a torn read.
    Torn {
        /// The GSAS address.
        #[arg(long, value_parser = parse_u64)]
        addr: u64,
        #[arg(long, default_value_t = 1)]
        writers: usize,
        #[arg(long, default_value_t = 1)]
        readers: usize,
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Reads through a mapping of a page on NODE that is then freed and taken by another tree:
    /// they must fail (fault, then denied), never show the other tree's bytes, never SIGBUS.
    MappedStale {
        #[arg(long)]
        node: u16,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Every operation on a fresh allocation on NODE, each result checked.
    Ops {
        /// The home node (whose memory and service).
        #[arg(long)]
        node: u16,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// From a tree of its own (whatever --tree says), every operation on ADDR must be denied.
    Denied {
        /// The GSAS address.
        #[arg(long, value_parser = parse_u64)]
        addr: u64,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Mapping this node's GSAS pages (`Gsas::map_local`): the mapping is the memory the
    /// service changes, in both directions; another tree's mapping of them is refused
    /// (EACCES), as are freed pages (ENXIO) and pages of another node; a free removes the
    /// mapping (a later access gets SIGBUS).
    Map {
        /// Check the refusal of another tree with this process's own tree instead (which is
        /// allowed): the check must then fail.
        #[arg(long)]
        other_tree_is_mine: bool,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// The bad-input matrix against NODE's service: each case must fail with its own error.
    BadInput(BadInput),
    /// remoteFork across nodes (`fork.rs`): children on NODES Fetch&Add into a page of this
    /// tree and exit with their own statuses; waits, checks statuses and the exact sum,
    /// invariant iii (another tree, same binary: denied) and the bad-input cases.
    Fork(crate::fork::ForkCheck),
}

#[derive(Args)]
pub struct BadInput {
    /// The home node (whose memory and service).
    #[arg(long)]
    node: u16,
    /// A node id with no VM behind it (SEND must refuse it); default: skip that case.
    #[arg(long)]
    absent_node: Option<u16>,
    /// Also exhaust the node's pool to see NO_MEMORY (allocates up to 64 x 256 MiB, then
    /// frees it).
    #[arg(long)]
    exhaust: bool,
    /// With --exhaust: the caller is a user without CAP_SYS_ADMIN, whose share of the pool
    /// (`unimem_gsas user_pages_pct`) ends first: expect QUOTA instead of NO_MEMORY.
    #[arg(long, requires = "exhaust")]
    expect_quota: bool,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Ctx, c: Check) -> Result<i32> {
    match c {
        Check::Fork(f) => crate::fork::check(ctx, f),
        Check::FaaSum {
            addr,
            threads,
            count,
            barrier,
            parties,
            apply_twice,
            json,
        } => {
            if let Some(b) = barrier {
                crate::wait_barrier(ctx, b, parties)?;
            }
            faa_sum(ctx, addr, threads, count, apply_twice, json)
        }
        Check::Torn {
            addr,
            writers,
            readers,
            seconds,
            json,
        } => torn(ctx, addr, writers, readers, seconds, json),
        Check::Ops { node, json } => ops(ctx, node, json),
        Check::MappedStale { node, json } => crate::mapped::stale(ctx, node, json),
        Check::Denied { addr, json } => denied(ctx, addr, json),
        Check::Map {
            other_tree_is_mine,
            json,
        } => crate::map::check(ctx, other_tree_is_mine, json),
        Check::BadInput(b) => bad_input(ctx, b),
    }
}

fn faa_sum(ctx: &Ctx, a: u64, threads: usize, count: u64, twice: bool, json: bool) -> Result<i32> {
    let t0 = Instant::now();
    let results: Vec<Result<(u128, u64, bool, gsas::Stats)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads.max(1))
            .map(|_| {
                s.spawn(move || -> Result<(u128, u64, bool, gsas::Stats)> {
                    let g = ctx.open()?;
                    let (mut sum, mut max, mut increasing) = (0u128, 0u64, true);
                    let mut prev: Option<u64> = None;
                    for _ in 0..count {
                        let old = g.fetch_add(a, 1)?;
                        if twice {
                            g.fetch_add(a, 1)?;
                        }
                        increasing &= prev.is_none_or(|p| old > p);
                        prev = Some(old);
                        sum += u128::from(old);
                        max = max.max(old);
                    }
                    Ok((sum, max, increasing, g.stats()))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("thread panicked"))
            .collect()
    });
    let secs = t0.elapsed().as_secs_f64();
    let (mut sum, mut max, mut ok, mut errors) = (0u128, 0u64, true, 0u64);
    let mut st = gsas::Stats::default();
    for r in results {
        match r {
            Ok((s, m, inc, stats)) => {
                sum += s;
                max = max.max(m);
                ok &= inc;
                st.add(&stats);
            }
            Err(e) => {
                eprintln!("faa-sum: {e:#}");
                errors += 1;
            }
        }
    }
    let ops = threads as u64 * count;
    if json {
        println!(
            "{}",
            Obj::new()
                .num("ops", ops)
                .str("old_sum", &sum.to_string())
                .num("max_old", max)
                .bool("increasing", ok)
                .num("errors", errors)
                .float("seconds", secs)
                .float("ops_per_sec", ops as f64 / secs)
                .float("syscalls_per_op", st.syscalls_per_request())
        );
    } else {
        println!(
            "faa-sum: {threads} threads x {count} Fetch&Add on {a:#x}: old values sum {sum}, max {max}, {} per thread, {errors} errors, {:.0} ops/s, {:.2} syscalls/op",
            if ok { "increasing" } else { "NOT increasing" },
            ops as f64 / secs,
            st.syscalls_per_request()
        );
    }
    Ok(i32::from(!ok || errors != 0))
}

const K: u64 = 0x5555_5555_5555_5555;

/// A 16-byte half as readers may see it.
fn half_ok(lo: u64, hi: u64) -> bool {
    (lo == 0 && hi == 0) || hi == lo ^ K
}

fn torn(
    ctx: &Ctx,
    a: u64,
    writers: usize,
    readers: usize,
    seconds: f64,
    json: bool,
) -> Result<i32> {
    let stop = Arc::new(AtomicBool::new(false));
    let until = Duration::from_secs_f64(seconds.max(0.01));
    let node = gsas::node_of(a) as u64;
    let results: Vec<Result<(u64, u64, u64, u64)>> = std::thread::scope(|s| {
        let mut hs = Vec::new();
        for w in 0..writers {
            let stop = stop.clone();
            hs.push(s.spawn(move || -> Result<(u64, u64, u64, u64)> {
                let g = ctx.open()?;
                let mut n = 0u64;
                let t0 = Instant::now();
                while t0.elapsed() < until {
                    // Distinct values per node, writer and step.
                    let v = node << 56 | (w as u64) << 48 | (n & 0xffff_ffff_ffff);
                    let half = (n % 2) * 16;
                    g.write128(a + half, u128::from(v) | u128::from(v ^ K) << 64)?;
                    n += 1;
                }
                stop.store(true, Ordering::Relaxed);
                Ok((n, 0, 0, 0))
            }));
        }
        for _ in 0..readers {
            hs.push(s.spawn(move || -> Result<(u64, u64, u64, u64)> {
                let g = ctx.open()?;
                let (mut reads, mut torn) = (0u64, 0u64);
                let t0 = Instant::now();
                while t0.elapsed() < until {
                    let w = g.read256(a)?;
                    let v = g.read128(a + 16)?;
                    reads += 2;
                    for (lo, hi) in [(w[0], w[1]), (w[2], w[3]), (v as u64, (v >> 64) as u64)] {
                        if !half_ok(lo, hi) {
                            torn += 1;
                            eprintln!("torn: {lo:#018x} {hi:#018x}");
                        }
                    }
                }
                Ok((0, reads, torn, g.stats().mapped_reads))
            }));
        }
        hs.into_iter()
            .map(|h| h.join().expect("thread panicked"))
            .collect()
    });
    let (mut writes, mut reads, mut torn, mut errors, mut mapped) = (0, 0, 0, 0u64, 0);
    for r in results {
        match r {
            Ok((w, rd, t, m)) => {
                writes += w;
                reads += rd;
                torn += t;
                mapped += m;
            }
            Err(e) => {
                eprintln!("torn: {e:#}");
                errors += 1;
            }
        }
    }
    if json {
        println!(
            "{}",
            Obj::new()
                .num("writes", writes)
                .num("reads", reads)
                .num("torn", torn)
                .num("mapped_reads", mapped)
                .num("errors", errors)
        );
    } else {
        println!("torn: {writes} WRITE128, {reads} READ256/READ128 ({mapped} through mappings), {torn} torn, {errors} errors");
    }
    Ok(i32::from(torn != 0 || errors != 0))
}

fn eq<T: PartialEq + std::fmt::Debug>(c: &mut Checks, name: &str, got: gsas::Result<T>, want: T) {
    match got {
        Ok(v) => {
            let ok = v == want;
            c.expect(name, ok, format!("{v:?} (expected {want:?})"));
        }
        Err(e) => c.expect(name, false, format!("{e}")),
    }
}

fn ops(ctx: &Ctx, node: u16, json: bool) -> Result<i32> {
    let g = ctx.open()?;
    let mut c = Checks::new(json);
    let a = g.alloc_shared_page(node, 2)?;
    c.expect(
        "AllocSharedPage: address on the node, page aligned",
        node_of(a) == node && offset_of(a) % gsas::PAGE_SIZE == 0,
        format!("{a:#x}"),
    );
    eq(&mut c, "fresh page reads zero", g.read(a), 0);
    eq(
        &mut c,
        "fresh page reads zero (bulk, both pages)",
        {
            let mut b = vec![1u8; 2 * gsas::PAGE_SIZE as usize];
            g.bulk_read(a, &mut b).map(|_| b.iter().all(|&x| x == 0))
        },
        true,
    );
    eq(&mut c, "WRITE", g.write(a, 41), ());
    eq(&mut c, "READ after WRITE", g.read(a), 41);
    eq(&mut c, "FETCH_ADD returns old", g.fetch_add(a, 1), 41);
    eq(&mut c, "FETCH_ADD wraps", g.fetch_add(a, u64::MAX), 42);
    eq(&mut c, "READ after FETCH_ADDs", g.read(a), 41);
    eq(&mut c, "failed CAS returns old", g.cas(a, 40, 7), 41);
    eq(&mut c, "failed CAS changed nothing", g.read(a), 41);
    eq(&mut c, "CAS returns old", g.cas(a, 41, 7), 41);
    eq(&mut c, "SWAP returns old", g.swap(a, 0xf0), 7);
    eq(&mut c, "FETCH_AND returns old", g.fetch_and(a, 0x3c), 0xf0);
    eq(&mut c, "FETCH_OR returns old", g.fetch_or(a, 0x01), 0x30);
    eq(&mut c, "FETCH_XOR returns old", g.fetch_xor(a, 0xff), 0x31);
    eq(&mut c, "READ after bitwise", g.read(a), 0xce);
    let b = a + 8;
    eq(&mut c, "WRITE all ones", g.write(b, u64::MAX), ());
    eq(&mut c, "WRITE32 low half", g.write32(b, 5), ());
    eq(
        &mut c,
        "WRITE32 left the high half",
        g.read(b),
        0xffff_ffff_0000_0005,
    );
    eq(&mut c, "READ32 high half", g.read32(b + 4), u32::MAX);
    eq(
        &mut c,
        "FETCH_ADD32 returns old",
        g.fetch_add32(b, u32::MAX),
        5,
    );
    eq(
        &mut c,
        "FETCH_ADD32 wraps in 32 bits, no carry",
        g.read(b),
        0xffff_ffff_0000_0004,
    );
    eq(&mut c, "CAS32 returns old", g.cas32(b, 4, 9), 4);
    eq(&mut c, "failed CAS32 returns old", g.cas32(b, 4, 10), 9);
    eq(&mut c, "SWAP32 returns old", g.swap32(b, 0xff), 9);
    eq(
        &mut c,
        "FETCH_AND32 returns old",
        g.fetch_and32(b, 0x0f),
        0xff,
    );
    eq(
        &mut c,
        "FETCH_OR32 returns old",
        g.fetch_or32(b, 0x30),
        0x0f,
    );
    eq(
        &mut c,
        "FETCH_XOR32 returns old",
        g.fetch_xor32(b, 0x3f),
        0x3f,
    );
    eq(&mut c, "READ32 after 32-bit ops", g.read32(b), 0);
    // Min and max, signed and unsigned, on both widths: -1 is the largest unsigned value.
    eq(&mut c, "WRITE -5", g.write(a, -5i64 as u64), ());
    eq(&mut c, "FETCH_MIN returns old", g.fetch_min(a, 3), -5);
    eq(
        &mut c,
        "FETCH_MIN keeps the smaller (signed)",
        g.read(a),
        -5i64 as u64,
    );
    eq(&mut c, "FETCH_MAX returns old", g.fetch_max(a, 3), -5);
    eq(&mut c, "FETCH_MAX takes the larger (signed)", g.read(a), 3);
    eq(
        &mut c,
        "FETCH_UMAX returns old",
        g.fetch_umax(a, u64::MAX),
        3,
    );
    eq(
        &mut c,
        "FETCH_UMAX: all ones is the largest",
        g.read(a),
        u64::MAX,
    );
    eq(
        &mut c,
        "FETCH_UMIN returns old",
        g.fetch_umin(a, 7),
        u64::MAX,
    );
    eq(
        &mut c,
        "FETCH_UMIN takes the smaller (unsigned)",
        g.read(a),
        7,
    );
    eq(
        &mut c,
        "WRITE ones above a 32-bit word",
        g.write(b, 0xffff_ffff_0000_0002),
        (),
    );
    eq(
        &mut c,
        "FETCH_MIN32 of -1 returns old",
        g.fetch_min32(b, -1),
        2,
    );
    eq(
        &mut c,
        "FETCH_MIN32 compares as i32, leaves the high half",
        g.read(b),
        0xffff_ffff_ffff_ffff,
    );
    eq(&mut c, "FETCH_MAX32 returns old", g.fetch_max32(b, 9), -1);
    eq(&mut c, "FETCH_UMIN32 returns old", g.fetch_umin32(b, 4), 9);
    eq(
        &mut c,
        "FETCH_UMAX32 returns old",
        g.fetch_umax32(b, 0x8000_0000),
        4,
    );
    eq(
        &mut c,
        "READ32 after 32-bit min/max",
        g.read32(b),
        0x8000_0000,
    );
    let x = a + 64;
    let old: u128 = 0x0123_4567_89ab_cdef_0011_2233_4455_6677;
    eq(&mut c, "WRITE128 for CAS128", g.write128(x, old), ());
    eq(
        &mut c,
        "failed CAS128 returns old",
        g.cas128(x, old + 1, 5),
        old,
    );
    eq(&mut c, "failed CAS128 changed nothing", g.read128(x), old);
    eq(
        &mut c,
        "CAS128 returns old",
        g.cas128(x, old, u128::MAX - 1),
        old,
    );
    eq(
        &mut c,
        "CAS128 wrote both halves",
        g.read128(x),
        u128::MAX - 1,
    );
    eq(&mut c, "CAS128 of the upper word", g.read(x + 8), u64::MAX);
    // INDEXED batches applied by the home: scatter, add (an element twice, a 32-bit wrap),
    // gather of both widths, across the two pages.
    {
        use gsas::indexed::{ADD, GATHER, SCATTER};
        let (p, q) = (a + 128, a + gsas::PAGE_SIZE + 8);
        eq(
            &mut c,
            "INDEXED SCATTER",
            g.indexed(SCATTER, 8, &[(p, 40), (q, u64::MAX)], &mut []),
            (),
        );
        eq(
            &mut c,
            "INDEXED ADD",
            g.indexed(ADD, 8, &[(p, 1), (q, 2), (p, 1)], &mut []),
            (),
        );
        eq(&mut c, "INDEXED ADD added twice", g.read(p), 42);
        eq(&mut c, "INDEXED ADD wrapped", g.read(q), 1);
        eq(
            &mut c,
            "INDEXED ADD of 32 bits",
            g.indexed(ADD, 4, &[(p + 4, u64::from(u32::MAX))], &mut []),
            (),
        );
        eq(
            &mut c,
            "INDEXED ADD of 32 bits, its half",
            g.read(p),
            42 | 0xffff_ffff << 32,
        );
        let mut out = [0u64; 3];
        eq(
            &mut c,
            "INDEXED GATHER",
            g.indexed(GATHER, 4, &[(p, 0), (p + 4, 0), (q, 0)], &mut out),
            (),
        );
        eq(
            &mut c,
            "INDEXED GATHER results",
            Ok(out),
            [42, 0xffff_ffff, 1],
        );
        // SCATTER_IF: stores only while its guard holds; the guard as found either way.
        let guard = p - 8;
        eq(&mut c, "WRITE the guard", g.write(guard, 5), ());
        eq(
            &mut c,
            "SCATTER_IF, guard holds",
            g.scatter_if(8, (guard, 5), &[(q, 77), (guard, 6)]),
            5,
        );
        eq(&mut c, "SCATTER_IF stored", g.read(q), 77);
        eq(&mut c, "SCATTER_IF stored its guard last", g.read(guard), 6);
        eq(
            &mut c,
            "SCATTER_IF, guard no longer holds",
            g.scatter_if(8, (guard, 5), &[(q, 88), (guard, 9)]),
            6,
        );
        eq(
            &mut c,
            "SCATTER_IF with a stale guard stored nothing",
            g.read(q),
            77,
        );
        eq(&mut c, "SCATTER_IF left its guard", g.read(guard), 6);
        eq(
            &mut c,
            "SCATTER_IF of 32 bits compares the low half",
            g.scatter_if(4, (p + 4, u64::from(u32::MAX)), &[(p, 43)]),
            u64::from(u32::MAX),
        );
        eq(
            &mut c,
            "SCATTER_IF of 32 bits stored",
            g.read(p),
            43 | 0xffff_ffff << 32,
        );
    }
    // COPY by the home: across the page boundary, unaligned, then overlapping (memmove).
    let pattern: Vec<u8> = (0..300u32).map(|i| (i * 13 % 251) as u8).collect();
    let from = a + 100;
    let to = a + gsas::PAGE_SIZE - 50;
    eq(
        &mut c,
        "BULK_WRITE the COPY source",
        g.bulk_write(from, &pattern),
        (),
    );
    eq(&mut c, "COPY across pages", g.copy(to, from, 300), ());
    eq(
        &mut c,
        "COPY: the destination holds the source's bytes",
        {
            let mut b = vec![0u8; 300];
            g.bulk_read(to, &mut b).map(|_| b == pattern)
        },
        true,
    );
    eq(
        &mut c,
        "COPY overlapping, 7 bytes up",
        g.copy(from + 7, from, 300),
        (),
    );
    eq(
        &mut c,
        "COPY overlapping moves as memmove",
        {
            let mut b = vec![0u8; 300];
            g.bulk_read(from + 7, &mut b).map(|_| b == pattern)
        },
        true,
    );
    let v: u128 = 0x1111_2222_3333_4444_5555_6666_7777_8888;
    let w = a + 32;
    eq(&mut c, "WRITE128", g.write128(w, v), ());
    eq(&mut c, "READ128", g.read128(w), v);
    eq(
        &mut c,
        "WRITE128 second half",
        g.write128(w + 16, 0xabcd),
        (),
    );
    eq(
        &mut c,
        "READ256",
        g.read256(w),
        [0x5555_6666_7777_8888, 0x1111_2222_3333_4444, 0xabcd, 0],
    );
    eq(
        &mut c,
        "READ of a WRITE128 word",
        g.read(w + 8),
        0x1111_2222_3333_4444,
    );
    // Bulk: across the page boundary, unaligned.
    let data: Vec<u8> = (0..6000).map(|i| gsas::cli::pattern(7, i)).collect();
    let at = a + 1000;
    eq(
        &mut c,
        "BULK_WRITE 6000 bytes across pages",
        g.bulk_write(at, &data),
        (),
    );
    let mut back = vec![0u8; data.len()];
    eq(
        &mut c,
        "BULK_READ back",
        g.bulk_read(at, &mut back).map(|_| back == data),
        true,
    );
    eq(
        &mut c,
        "READ of a bulk-written word",
        g.read(a + 1008),
        u64::from_le_bytes(data[8..16].try_into().expect("8 bytes")),
    );
    eq(&mut c, "NOP", g.nop(node), ());
    eq(&mut c, "FREE", g.free(a), ());
    c.expect_err("READ after FREE", g.read(a), &["fault"]);
    let s = g.stats();
    c.expect(
        "one SEND or submission slot per request",
        s.sends + s.submits == s.requests + s.send_retries,
        format!(
            "{} requests, {} sends, {} in slots, {} kicks, {} yields, {} sleeps: {:.2} syscalls/op",
            s.requests,
            s.sends,
            s.submits,
            s.kicks,
            s.yields,
            s.sleeps,
            s.syscalls_per_request()
        ),
    );
    Ok(c.finish("ops"))
}

fn denied(ctx: &Ctx, a: u64, json: bool) -> Result<i32> {
    let g: Gsas = ctx.open_in(TreeSource::Fresh)?;
    let mut c = Checks::new(json);
    let d = &["denied"];
    let a32 = a & !31;
    c.expect_err("READ", g.read(a), d);
    c.expect_err("READ32", g.read32(a), d);
    c.expect_err("WRITE", g.write(a, 0xbad), d);
    c.expect_err("WRITE32", g.write32(a, 0xbad), d);
    c.expect_err("READ128", g.read128(a32), d);
    c.expect_err("READ256", g.read256(a32), d);
    c.expect_err("WRITE128", g.write128(a32, 0xbad), d);
    c.expect_err("FETCH_ADD", g.fetch_add(a, 1), d);
    c.expect_err("FETCH_ADD32", g.fetch_add32(a, 1), d);
    c.expect_err("CAS", g.cas(a, 0, 0xbad), d);
    c.expect_err("SWAP", g.swap(a, 0xbad), d);
    c.expect_err("FETCH_AND", g.fetch_and(a, 0), d);
    c.expect_err("FETCH_OR", g.fetch_or(a, u64::MAX), d);
    c.expect_err("FETCH_XOR", g.fetch_xor(a, u64::MAX), d);
    c.expect_err("CAS32", g.cas32(a, 0, 0xbad), d);
    c.expect_err("SWAP32", g.swap32(a, 0xbad), d);
    c.expect_err("FETCH_MIN", g.fetch_min(a, i64::MIN), d);
    c.expect_err("FETCH_UMAX32", g.fetch_umax32(a, u32::MAX), d);
    c.expect_err("CAS128", g.cas128(a32, 0, 0xbad), d);
    c.expect_err("COPY into the page", g.copy(a, a + 64, 8), d);
    let mut buf = [0u8; 64];
    c.expect_err("BULK_READ", g.bulk_read(a, &mut buf), d);
    c.expect_err("BULK_WRITE", g.bulk_write(a, &[0xba; 64]), d);
    {
        use gsas::indexed::{ADD, GATHER, SCATTER};
        c.expect_err("INDEXED ADD", g.indexed(ADD, 8, &[(a & !7, 1)], &mut []), d);
        c.expect_err(
            "INDEXED SCATTER",
            g.indexed(SCATTER, 4, &[(a & !3, 1)], &mut []),
            d,
        );
        c.expect_err(
            "INDEXED GATHER",
            g.indexed(GATHER, 8, &[(a & !7, 0)], &mut [0]),
            d,
        );
        // A batch with one entry of another tree changes none of this tree's either.
        let mine = g.alloc_shared_page(gsas::node_of(a), 1)?;
        eq(&mut c, "WRITE own page", g.write(mine, 7), ());
        c.expect_err(
            "INDEXED SCATTER, one entry of another tree",
            g.indexed(SCATTER, 8, &[(mine, 9), (a & !7, 1)], &mut []),
            d,
        );
        eq(&mut c, "a refused batch changed nothing", g.read(mine), 7);
        // Another tree's guard is neither compared nor shown, and nothing is stored.
        c.expect_err(
            "INDEXED SCATTER_IF, another tree's guard",
            g.scatter_if(8, (a & !7, 0), &[(mine, 9)]),
            d,
        );
        c.expect_err(
            "INDEXED SCATTER_IF, a store to another tree",
            g.scatter_if(8, (mine, 7), &[(mine, 9), (a & !7, 1)]),
            d,
        );
        eq(
            &mut c,
            "a refused SCATTER_IF changed nothing",
            g.read(mine),
            7,
        );
        eq(&mut c, "FREE own page", g.free(mine), ());
    }
    println!("denied: tree {:#x} of node {}", g.prot_id(), g.node());
    Ok(c.finish("denied"))
}

fn bad_input(ctx: &Ctx, b: BadInput) -> Result<i32> {
    let g = ctx.open()?;
    let mut c = Checks::new(b.json);
    let n = b.node;
    let a = g.alloc_shared_page(n, 2)?;
    let inv = &["invalid"];
    let una = &["unaligned"];
    let fault = &["fault"];
    c.expect_err("READ at +4 (unaligned)", g.read(a + 4), una);
    c.expect_err("READ32 at +2 (unaligned)", g.read32(a + 2), una);
    c.expect_err("FETCH_ADD at +1 (unaligned)", g.fetch_add(a + 1, 1), una);
    c.expect_err("READ128 at +8 (unaligned)", g.read128(a + 8), una);
    c.expect_err("WRITE128 at +8 (unaligned)", g.write128(a + 8, 1), una);
    c.expect_err("READ256 at +16 (unaligned)", g.read256(a + 16), una);
    c.expect_err("FETCH_MAX at +4 (unaligned)", g.fetch_max(a + 4, 1), una);
    c.expect_err("CAS128 at +8 (unaligned)", g.cas128(a + 8, 0, 1), una);
    c.expect_err("unknown opcode 0x7f", g.raw(0x7f, a, 0, 0), inv);
    c.expect_err(
        "READ256 with the 32-bit flag",
        g.raw(op::READ256 | op::WIDTH32, a, 0, 0),
        inv,
    );
    c.expect_err(
        "ALLOC with the 32-bit flag",
        g.raw(op::ALLOC | op::WIDTH32, addr(n, 0), 1, 0),
        inv,
    );
    c.expect_err("ALLOC of 0 pages", g.alloc_shared_page(n, 0), inv);
    c.expect_err(
        "ALLOC of MAX_ALLOC_PAGES + 1",
        g.alloc_shared_page(n, MAX_ALLOC_PAGES + 1),
        inv,
    );
    c.expect_err("BULK_READ of 0 bytes", g.raw(op::BULK_READ, a, 0, 0), inv);
    c.expect_err(
        "BULK_READ of BULK_MAX + 1 bytes",
        g.raw(op::BULK_READ, a, BULK_MAX + 1, 0),
        inv,
    );
    c.expect_err(
        "BULK_WRITE of BULK_MAX + 1 bytes",
        g.raw(op::BULK_WRITE, a, BULK_MAX + 1, 0),
        inv,
    );
    c.expect_err(
        "READ far beyond the partition",
        g.read(addr(n, gsas::OFFSET_MASK & !7)),
        fault,
    );
    c.expect_err(
        "READ of offset 0 (the mailbox rings)",
        g.read(addr(n, 0)),
        fault,
    );
    let other = if n == 0 { 1 } else { 0 };
    c.expect_err(
        "READ of another node's address sent to this node",
        g.raw_to(n, op::READ, addr(other, offset_of(a)), 0, 0),
        fault,
    );
    c.expect_err("COPY of 0 bytes", g.raw(op::COPY, a, a + 64, 0), inv);
    c.expect_err(
        "COPY of COPY_MAX + 1 bytes",
        g.raw(op::COPY, a, a + 64, gsas::COPY_MAX + 1),
        inv,
    );
    c.expect_err(
        "COPY from another node's address",
        g.raw(op::COPY, a, addr(other, offset_of(a)), 8),
        fault,
    );
    c.expect_err(
        "COPY running past the allocation",
        g.copy(a, a + gsas::PAGE_SIZE, gsas::PAGE_SIZE + 8),
        fault,
    );
    {
        use gsas::indexed::{ADD, SCATTER};
        c.expect_err(
            "INDEXED of 0 entries",
            g.raw(op::INDEXED, a, 8 << 32, 0),
            inv,
        );
        c.expect_err(
            "INDEXED of kind 4 (none)",
            g.raw(op::INDEXED, a, 1 | 8 << 32 | 4 << 40, 0),
            inv,
        );
        c.expect_err(
            "INDEXED of 2-byte elements",
            g.raw(op::INDEXED, a, 1 | 2 << 32, 0),
            inv,
        );
        eq(&mut c, "WRITE before a failed INDEXED", g.write(a, 5), ());
        c.expect_err(
            "INDEXED ADD, one entry unaligned",
            g.indexed(ADD, 8, &[(a, 1), (a + 4, 1)], &mut []),
            una,
        );
        c.expect_err(
            "INDEXED SCATTER, one entry outside the pool",
            g.indexed(
                SCATTER,
                8,
                &[(a, 1), (addr(n, gsas::OFFSET_MASK & !7), 1)],
                &mut [],
            ),
            fault,
        );
        c.expect_err(
            "INDEXED SCATTER, one entry on another node",
            g.indexed(
                SCATTER,
                8,
                &[(a, 1), (addr(other, offset_of(a)), 1)],
                &mut [],
            ),
            fault,
        );
        eq(
            &mut c,
            "a failed INDEXED batch changed nothing",
            g.read(a),
            5,
        );
    }
    c.expect_err("FREE of an unaligned address", g.free(a + 8), una);
    c.expect_err(
        "FREE of the second page of an allocation",
        g.free(a + gsas::PAGE_SIZE),
        fault,
    );
    eq(&mut c, "FREE", g.free(a), ());
    c.expect_err("READ after FREE", g.read(a), fault);
    c.expect_err(
        "READ of the second page after FREE",
        g.read(a + gsas::PAGE_SIZE),
        fault,
    );
    c.expect_err("WRITE after FREE", g.write(a, 1), fault);
    c.expect_err("FETCH_ADD after FREE", g.fetch_add(a, 1), fault);
    c.expect_err(
        "BULK_READ after FREE",
        g.bulk_read(a, &mut [0u8; 16]),
        fault,
    );
    c.expect_err("double FREE", g.free(a), fault);
    c.expect_err(
        "node 16 (beyond the 16 a cluster may have)",
        g.read(addr(16, 4096)),
        &["argument"],
    );
    if let Some(absent) = b.absent_node {
        let t0 = Instant::now();
        let r = g.nop(absent);
        let ok = matches!(&r, Err(Error::Mailbox(_)) | Err(Error::Timeout { .. }));
        c.expect(
            &format!("NOP to absent node {absent}"),
            ok,
            format!("{r:?} after {:?}", t0.elapsed()),
        );
    }
    if b.exhaust {
        let mut held = Vec::new();
        let mut last = None;
        for _ in 0..64 {
            match g.alloc_shared_page(n, MAX_ALLOC_PAGES) {
                Ok(x) => held.push(x),
                Err(e) => {
                    last = Some(e);
                    break;
                }
            }
        }
        let (want, what) = if b.expect_quota {
            ("quota", "ALLOC beyond the user's share of the pool: QUOTA")
        } else {
            ("no-memory", "ALLOC beyond the pool: NO_MEMORY")
        };
        // Smaller requests until even one page is refused.
        if last.as_ref().is_some_and(|e| e.kind() == want) {
            let mut pages = MAX_ALLOC_PAGES / 2;
            while pages >= 1 {
                match g.alloc_shared_page(n, pages) {
                    Ok(x) => held.push(x),
                    Err(_) => pages /= 2,
                }
            }
        }
        let freed = held.iter().filter(|&&x| g.free(x).is_ok()).count();
        let kind = last.as_ref().map_or("none", |e| e.kind());
        c.expect(
            what,
            kind == want,
            format!(
                "{} allocations held, then {} ({})",
                held.len(),
                kind,
                last.map(|e| e.to_string()).unwrap_or_default()
            ),
        );
        c.expect(
            "everything allocated could be freed",
            freed == held.len(),
            format!("{freed} of {}", held.len()),
        );
        eq(
            &mut c,
            "allocation works again after freeing",
            g.alloc_shared_page(n, 1).and_then(|x| g.free(x)),
            (),
        );
    }
    eq(&mut c, "the service still answers", g.nop(n), ());
    Ok(c.finish("bad-input"))
}
