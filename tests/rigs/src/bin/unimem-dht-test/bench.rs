//! `unimem-dht-test bench`: operations per second of THREADS threads (each its own handle) running
//! one of the seed's workloads on a table for a fixed time cut into windows (the median window
//! is the figure; processes on several nodes start together at a barrier word and
//! `scripts/bench/dht.sh` adds their rates up), and `fill`, which prefills keys 0..KEYS.

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use dht::cli::Ctx;
use dht::Dht;
use gsas::cli::parse_u64;
use gsas::json::Obj;
use gsas::measure::{barrier, Rng, Timing};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// Puts of keys 0..KEYS, split over the threads (run once before `get`).
    Fill,
    /// Gets of random keys of 0..KEYS (a table prefilled by `fill`; seed Figure 15).
    Get,
    /// Puts of new keys into an empty table (Figure 16).
    Put,
    /// 80% puts of new keys, 20% gets of keys this thread put (Figure 17).
    Mix80,
    /// 50% puts, 50% gets (Figure 18).
    Mix50,
}

#[derive(Args)]
pub struct Bench {
    #[arg(value_parser = parse_u64)]
    root: u64,
    #[arg(long, value_enum)]
    workload: Workload,
    /// Threads, time and start (fill: only the threads).
    #[command(flatten)]
    timing: Timing,
    /// Keys of `fill` and `get`.
    #[arg(long, default_value_t = 4096)]
    keys: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    json: bool,
}

/// A key no other thread or node of a run puts (and none of fill's 0..KEYS).
fn fresh_key(node: u16, thread: usize, n: u64) -> u64 {
    1 << 63 | u64::from(node) << 48 | (thread as u64) << 40 | n
}

pub fn run(ctx: &Ctx, b: Bench) -> Result<i32> {
    let tm = &b.timing;
    tm.check(62)?;
    if b.keys == 0 {
        bail!("--keys must be positive");
    }
    let t0 = ctx.open(b.root)?;
    let node = t0.gsas().node();
    if b.workload == Workload::Fill {
        return fill(ctx, &t0, &b);
    }
    if let Some(a) = tm.barrier {
        barrier(t0.gsas(), a, tm.parties, Duration::from_secs(300))?;
    }
    let layout = t0.layout().clone();
    let b = &b;
    let results: Vec<Result<(Vec<u64>, dht::OpStats, gsas::Stats)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..tm.threads)
            .map(|i| {
                let layout = layout.clone();
                s.spawn(move || -> Result<(Vec<u64>, dht::OpStats, gsas::Stats)> {
                    let t = Dht::attach(ctx.gsas()?, layout);
                    let mut rng = Rng::new(b.seed ^ u64::from(node) << 32 ^ i as u64);
                    let put_pct = match b.workload {
                        Workload::Get => 0,
                        Workload::Put | Workload::Fill => 100,
                        Workload::Mix80 => 80,
                        Workload::Mix50 => 50,
                    };
                    let mut puts = 0u64;
                    let mut one = |rng: &mut Rng| -> dht::Result<()> {
                        if rng.below(100) < put_pct || (puts == 0 && b.workload != Workload::Get) {
                            let k = fresh_key(node, i, puts);
                            puts += 1;
                            t.put(k, u128::from(k))
                        } else if b.workload == Workload::Get {
                            t.get(rng.below(b.keys)).map(drop)
                        } else {
                            t.get(fresh_key(node, i, rng.below(puts))).map(drop)
                        }
                    };
                    let before = t.gsas().stats();
                    let counts = tm.windows(|| one(&mut rng))?;
                    Ok((counts, t.stats(), t.gsas().stats().since(&before)))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("thread panicked"))
            .collect()
    });
    let (mut per_thread, mut retries, mut requests) = (Vec::new(), 0, 0);
    let (mut st_all, mut gs_all) = (dht::OpStats::default(), gsas::Stats::default());
    for r in results {
        let (c, st, gs) = r?;
        per_thread.push(c);
        retries += st.retries;
        requests += gs.requests;
        st_all.lock_retries += st.lock_retries;
        st_all.locks += st.locks;
        st_all.lock_held_ns += st.lock_held_ns;
        st_all.containers += st.containers;
        st_all.unlocked_puts += st.unlocked_puts;
        st_all.unlocked_misses += st.unlocked_misses;
        gs_all.add(&gs);
    }
    // Where writes wait: lock contention and hold time, containers made, reads that needed no
    // request (docs/DHT.md, "Scaling").
    let hold_us = st_all.lock_held_ns as f64 / 1e3 / st_all.locks.max(1) as f64;
    let w = tm.window().as_secs_f64();
    let (med, min, max) = tm.rates(&per_thread);
    let ops: u64 = per_thread.iter().flatten().sum();
    let name = b
        .workload
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    let per_op = requests as f64 / ops.max(1) as f64;
    if b.json {
        println!(
            "{}",
            Obj::new()
                .str("workload", &name)
                .num("node", node)
                .num("threads", tm.threads as u64)
                .num("ops", ops)
                .float("window_s", w)
                .float("ops_per_s", med)
                .float("min_ops_per_s", min)
                .float("max_ops_per_s", max)
                .float("gsas_requests_per_op", per_op)
                .num("retries", retries)
                .num("locks", st_all.locks)
                .num("lock_retries", st_all.lock_retries)
                .float("lock_hold_us", hold_us)
                .num("containers", st_all.containers)
                .num("unlocked_puts", st_all.unlocked_puts)
                .num("unlocked_misses", st_all.unlocked_misses)
                .num("mapped_reads", gs_all.mapped_reads)
                .num("mapped_retries", gs_all.mapped_retries)
                .num("mapped_fallbacks", gs_all.mapped_fallbacks)
                .num("stalls", gs_all.stalls)
                .num("yields", gs_all.yields)
                .num("sleeps", gs_all.sleeps)
                .num("answer_sleeps", gs_all.answer_sleeps)
                .num("kicks", gs_all.kicks)
        );
    } else {
        println!(
            "bench {name}: node {node}, {} threads: median {med:.0} ops/s over {} windows of {w:.2} s; {per_op:.2} GSAS requests per operation, {retries} retries; {} unlocked puts ({} missed), {} locks, {} lock retries, {hold_us:.1} us held on average; {} containers; {} reads through mappings",
            tm.threads, tm.reps, st_all.unlocked_puts, st_all.unlocked_misses, st_all.locks, st_all.lock_retries, st_all.containers, gs_all.mapped_reads
        );
    }
    Ok(0)
}

/// Puts keys 0..KEYS (value = key), thread j the keys j, j + THREADS, ...
fn fill(ctx: &Ctx, t0: &Dht, b: &Bench) -> Result<i32> {
    let start = Instant::now();
    let layout = t0.layout().clone();
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..b.timing.threads)
            .map(|i| {
                let layout = layout.clone();
                s.spawn(move || -> Result<()> {
                    let t = Dht::attach(ctx.gsas()?, layout);
                    for k in (i as u64..b.keys).step_by(b.timing.threads) {
                        t.put(k, u128::from(k))?;
                    }
                    Ok(())
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("thread panicked"))
            .collect()
    });
    for r in results {
        r?;
    }
    let secs = start.elapsed().as_secs_f64();
    let rate = b.keys as f64 / secs;
    if b.json {
        println!(
            "{}",
            Obj::new()
                .str("workload", "fill")
                .num("keys", b.keys)
                .float("seconds", secs)
                .float("ops_per_s", rate)
        );
    } else {
        println!("fill: {} keys in {secs:.2} s ({rate:.0} puts/s)", b.keys);
    }
    Ok(0)
}
