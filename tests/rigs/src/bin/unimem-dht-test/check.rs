//! `unimem-dht-test check` (the concurrency checker of `dht::check` on real threads and nodes) and
//! `unimem-dht-test denied` (another tree cannot use a table).

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use dht::check::{self, Op, Plan};
use dht::cli::Ctx;
use dht::{Dht, Layout};
use gsas::cli::parse_u64;
use gsas::json::Obj;
use gsas::measure::barrier;
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct Check {
    #[arg(value_parser = parse_u64)]
    root: u64,
    /// Threads of this process, each with its own handle.
    #[arg(long, default_value_t = 4)]
    threads: u16,
    /// Operations per thread.
    #[arg(long, default_value_t = 500)]
    ops: u64,
    /// Keys each thread alone writes.
    #[arg(long, default_value_t = 16)]
    own_keys: u64,
    /// Keys the threads of this process share.
    #[arg(long, default_value_t = 32)]
    shared_keys: u64,
    /// Keys every process shares.
    #[arg(long, default_value_t = 16)]
    global_keys: u64,
    #[arg(long, default_value_t = 50)]
    put_pct: u64,
    #[arg(long, default_value_t = 10)]
    delete_pct: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Start when PARTIES processes have arrived at the word BARRIER; verify the final state
    /// when they have all arrived at BARRIER + 8 (all done writing).
    #[arg(long, value_parser = parse_u64, requires = "parties")]
    barrier: Option<u64>,
    #[arg(long, default_value_t = 1)]
    parties: u64,
    /// Test the checker: every Nth put of each thread stores its value with the high half
    /// flipped (a torn value), which the checker must report.
    #[arg(long)]
    inject_torn: Option<u64>,
    /// Write the threads' last writes of the keys every process shares to FILE (`key value`
    /// lines), for `check-final` once every process is done.
    #[arg(long)]
    last_writes: Option<std::path::PathBuf>,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct CheckFinal {
    #[arg(value_parser = parse_u64)]
    root: u64,
    /// The `--last-writes` files of every `check` process that used the table.
    #[arg(required = true)]
    files: Vec<std::path::PathBuf>,
    #[arg(long)]
    json: bool,
}

/// `check-final`: after every `check` process is done, each key they all shared holds the last
/// write of one of their threads (no update lost across processes and nodes).
pub fn check_final(ctx: &Ctx, c: CheckFinal) -> Result<i32> {
    let mut writes = Vec::new();
    for f in &c.files {
        let text = std::fs::read_to_string(f)
            .with_context(|| format!("reading last writes from {}", f.display()))?;
        writes
            .extend(check::parse_last_writes(&text).map_err(|e| anyhow!("{}: {e}", f.display()))?);
    }
    let t = ctx.open(c.root)?;
    let mut report = check::Report::default();
    let keys = check::final_global(&t, &writes, &mut report)?;
    for p in &report.problems {
        eprintln!("violation: {p}");
    }
    if c.json {
        println!(
            "{}",
            Obj::new()
                .num("files", c.files.len() as u64)
                .num("last_writes", writes.len() as u64)
                .num("keys", keys)
                .num("violations", report.violations)
        );
    } else {
        println!(
            "check-final: {} last writes from {} files, {keys} shared keys checked; {} violations",
            writes.len(),
            c.files.len(),
            report.violations
        );
    }
    Ok(if report.ok() { 0 } else { 1 })
}

const BARRIER_LIMIT: Duration = Duration::from_secs(300);

pub fn run(ctx: &Ctx, c: Check) -> Result<i32> {
    if c.threads == 0 || c.threads > 62 || c.put_pct + c.delete_pct > 100 {
        bail!("--threads must be 1-62 and --put-pct + --delete-pct at most 100");
    }
    if c.own_keys + c.shared_keys + c.global_keys == 0 {
        bail!("no keys: give --own-keys, --shared-keys or --global-keys");
    }
    let t0 = ctx.open(c.root)?;
    let node = t0.gsas().node();
    let layout = t0.layout().clone();
    let plans: Vec<Plan> = (0..c.threads)
        .map(|thread| Plan {
            node,
            thread,
            ops: c.ops,
            own_keys: c.own_keys,
            shared_keys: c.shared_keys,
            global_keys: c.global_keys,
            put_pct: c.put_pct,
            delete_pct: c.delete_pct,
            seed: c.seed,
        })
        .collect();
    if let Some(b) = c.barrier {
        barrier(t0.gsas(), b, c.parties, BARRIER_LIMIT)?;
    }
    let start = Instant::now();
    let results: Vec<Result<(Vec<Op>, dht::OpStats)>> = std::thread::scope(|s| {
        let hs: Vec<_> = plans
            .iter()
            .map(|p| {
                let layout = layout.clone();
                let inject = c.inject_torn;
                s.spawn(move || -> Result<(Vec<Op>, dht::OpStats)> {
                    let t = Dht::attach(ctx.gsas()?, layout);
                    let mut h = check::run(&t, p)?;
                    if let Some(n) = inject {
                        tear(&t, &mut h, n.max(1))?;
                    }
                    Ok((h, t.stats()))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("thread panicked"))
            .collect()
    });
    let elapsed = start.elapsed();
    let mut hist = Vec::new();
    let mut retries = 0;
    for r in results {
        let (h, st) = r?;
        retries += st.retries;
        hist.push(h);
    }
    let mut report = check::verify(&plans, &hist);
    if let Some(b) = c.barrier {
        barrier(t0.gsas(), b + 8, c.parties, BARRIER_LIMIT)?;
    }
    let finals = check::final_check(&t0, &plans, &hist, &mut report)?;
    if let Some(f) = &c.last_writes {
        let text = check::format_last_writes(&check::global_last_writes(&hist));
        std::fs::write(f, text).with_context(|| format!("writing {}", f.display()))?;
    }
    for p in &report.problems {
        eprintln!("violation: {p}");
    }
    let ops = report.puts + report.gets + report.deletes;
    if c.json {
        println!(
            "{}",
            Obj::new()
                .num("node", node)
                .num("threads", u64::from(c.threads))
                .num("puts", report.puts)
                .num("gets", report.gets)
                .num("gets_found", report.gets_found)
                .num("foreign", report.foreign)
                .num("deletes", report.deletes)
                .num("final_keys", finals)
                .num("torn", report.torn)
                .num("violations", report.violations)
                .num("retries", retries)
                .float("ops_per_s", ops as f64 / elapsed.as_secs_f64())
        );
    } else {
        println!(
            "check: node {node}, {} threads: {} puts, {} gets ({} found, {} from other processes), {} deletes, {} keys checked at the end; {} torn, {} violations; {} retries",
            c.threads, report.puts, report.gets, report.gets_found, report.foreign, report.deletes, finals, report.torn, report.violations, retries
        );
    }
    Ok(if report.ok() { 0 } else { 1 })
}

/// Replaces, in the table, every `n`th value this thread put (as its last put of the key) by a
/// torn one, and records a get of it: what a table that tears values would give the checker.
fn tear(t: &Dht, h: &mut Vec<Op>, n: u64) -> Result<()> {
    let puts: Vec<(u64, u128)> = h
        .iter()
        .filter_map(|o| match *o {
            Op::Put { key, value } => Some((key, value)),
            _ => None,
        })
        .step_by(n as usize)
        .collect();
    for (key, value) in puts {
        let torn = value ^ 1 << 64;
        t.put(key, torn)?;
        h.push(Op::Get {
            key,
            got: t.get(key)?,
        });
    }
    Ok(())
}

#[derive(Args)]
pub struct Denied {
    #[arg(value_parser = parse_u64)]
    root: u64,
    /// The table's layout, as `unimem-dht stats` prints it.
    #[arg(long)]
    per_node: u64,
    /// The seeds of h1 and h2: S1,S2.
    #[arg(long, value_delimiter = ',', value_parser = parse_u64, required = true)]
    seeds: Vec<u64>,
    #[arg(long, value_delimiter = ',', value_parser = parse_u64, required = true)]
    slices: Vec<u64>,
    /// Keys to try.
    #[arg(long, default_value_t = 8)]
    keys: u64,
}

pub fn denied(ctx: &Ctx, d: Denied) -> Result<i32> {
    if d.seeds.len() != 2 {
        bail!("--seeds takes two numbers, S1,S2 (as `stats` prints them)");
    }
    let mut refused = 0u64;
    // Stops at the first operation that is not denied: run by the table's own tree, the rest
    // (a put, a destroy) must not happen.
    let mut expect = |what: &str, r: dht::Result<()>| -> Result<()> {
        match r {
            Err(dht::Error::Gsas(gsas::Error::Denied(_))) => {
                refused += 1;
                println!("ok: {what}: denied");
                Ok(())
            }
            Err(e) => bail!("{what}: {e} (not a denial)"),
            Ok(()) => bail!("{what}: succeeded"),
        }
    };
    expect(
        "open (read the root)",
        Dht::open(ctx.gsas()?, d.root).map(drop),
    )?;
    let layout = Layout {
        root: d.root,
        per_node: d.per_node,
        seed1: d.seeds[0],
        seed2: d.seeds[1],
        capacity: 0,
        slices: d.slices,
    };
    let t = Dht::attach(ctx.gsas()?, layout);
    println!("tree {:#x} tries table {:#x}", t.gsas().prot_id(), d.root);
    for k in 0..d.keys {
        expect(&format!("get {k}"), t.get(k).map(drop))?;
        expect(&format!("put {k}"), t.put(k, 0xbad))?;
        expect(&format!("delete {k}"), t.delete(k).map(drop))?;
    }
    expect("scan", t.scan().map(drop))?;
    expect("destroy", t.destroy().map(drop))?;
    println!("all {refused} operations denied");
    Ok(0)
}
