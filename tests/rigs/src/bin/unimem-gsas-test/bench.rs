//! `unimem-gsas-test bench`: latency of one operation against a home node: REPS repetitions of
//! COUNT operations each (after WARMUP), the per-operation latency of each repetition, their
//! median, minimum and maximum, and the system calls per operation; with --per-op also the
//! quartiles of the single operations' latencies (the figure a ping-pong median compares to).

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use gsas::cli::Ctx;
use gsas::json::Obj;
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchOp {
    /// Fetch&Add on a word of a page allocated on the node.
    Faa,
    /// The service's round trip, no memory touched.
    Nop,
    /// 64-bit READ.
    Read,
    /// READ256.
    Read256,
    /// Bulk read of --len bytes (a page by default; bandwidth: MB/s in the output).
    BulkRead,
}

#[derive(Args)]
pub struct Bench {
    /// The home node.
    #[arg(long)]
    node: u16,
    #[arg(long, value_enum, default_value_t = BenchOp::Faa)]
    op: BenchOp,
    /// Operations per repetition.
    #[arg(long, default_value_t = 1000)]
    count: u64,
    /// Repetitions (the median is over these).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Operations before measuring.
    #[arg(long, default_value_t = 100)]
    warmup: u64,
    /// Bytes per bulk read (any length; pages allocated to hold it).
    #[arg(long, default_value_t = gsas::PAGE_SIZE as usize)]
    len: usize,
    /// Also time every operation alone: quartiles of the single operations' latencies.
    #[arg(long)]
    per_op: bool,
    #[arg(long)]
    json: bool,
}

/// The value at quantile `q` (0..=1) of a sorted sample, nearest rank (0 if empty).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    sorted[((n as f64 * q).ceil() as usize).clamp(1, n) - 1]
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn run(ctx: &Ctx, b: Bench) -> Result<i32> {
    if b.count == 0 || b.reps == 0 {
        bail!("--count and --reps must be at least 1");
    }
    if b.op == BenchOp::BulkRead && b.len == 0 {
        bail!("--len must be at least 1");
    }
    let g = ctx.open()?;
    let pages = (b.len as u64).div_ceil(gsas::PAGE_SIZE).max(1);
    let page = match b.op {
        BenchOp::Nop => None,
        BenchOp::BulkRead => Some(g.alloc_shared_page(b.node, pages)?),
        _ => Some(g.alloc_shared_page(b.node, 1)?),
    };
    let a = page.unwrap_or(0);
    let mut buf = vec![0u8; b.len];
    let mut one = |g: &gsas::Gsas| -> gsas::Result<()> {
        match b.op {
            BenchOp::Faa => g.fetch_add(a, 1).map(drop),
            BenchOp::Nop => g.nop(b.node),
            BenchOp::Read => g.read(a).map(drop),
            BenchOp::Read256 => g.read256(a).map(drop),
            BenchOp::BulkRead => g.bulk_read(a, &mut buf),
        }
    };
    for _ in 0..b.warmup {
        one(&g)?;
    }
    let before = g.stats();
    let mut lat = Vec::with_capacity(b.reps);
    let mut single = Vec::with_capacity(if b.per_op {
        b.reps * b.count as usize
    } else {
        0
    });
    for _ in 0..b.reps {
        let t0 = Instant::now();
        for _ in 0..b.count {
            if b.per_op {
                let t = Instant::now();
                one(&g)?;
                single.push(t.elapsed().as_secs_f64() * 1e6);
            } else {
                one(&g)?;
            }
        }
        lat.push(t0.elapsed().as_secs_f64() * 1e6 / b.count as f64);
    }
    single.sort_by(f64::total_cmp);
    let s = g.stats().since(&before);
    if let Some(p) = page {
        g.free(p)?;
    }
    let (min, max) = lat
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    let reps: Vec<f64> = lat.clone();
    let med = median(&mut lat);
    let name =
        b.op.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default();
    let mbps = (b.op == BenchOp::BulkRead).then(|| b.len as f64 / med);
    if b.json {
        let mut o = Obj::new()
            .str("op", &name)
            .num("issuer", g.node())
            .num("home", b.node)
            .num("count", b.count)
            .num("reps", b.reps as u64)
            .float("median_us", med)
            .float("min_us", min)
            .float("max_us", max)
            .float("syscalls_per_op", s.syscalls_per_request())
            .float("sends_per_op", s.sends as f64 / s.requests.max(1) as f64)
            .float(
                "submits_per_op",
                s.submits as f64 / s.requests.max(1) as f64,
            )
            .float("kicks_per_op", s.kicks as f64 / s.requests.max(1) as f64)
            .float("yields_per_op", s.yields as f64 / s.requests.max(1) as f64)
            .float("sleeps_per_op", s.sleeps as f64 / s.requests.max(1) as f64)
            .float(
                "answer_sleeps_per_op",
                s.answer_sleeps as f64 / s.requests.max(1) as f64,
            );
        if let Some(m) = mbps {
            o = o.float("mb_per_s", m).num("len", b.len as u64);
        }
        if b.per_op {
            o = o
                .float("op_p25_us", quantile(&single, 0.25))
                .float("op_median_us", quantile(&single, 0.5))
                .float("op_p75_us", quantile(&single, 0.75))
                .float("op_min_us", quantile(&single, 0.0))
                .float("op_max_us", quantile(&single, 1.0));
        }
        let rs: Vec<String> = reps.iter().map(|x| format!("{x:.3}")).collect();
        println!("{}", o.str("reps_us", &rs.join(" ")));
    } else {
        println!(
            "bench {name}: node {} -> node {}: median {med:.2} us/op (min {min:.2}, max {max:.2}) over {} x {}; {:.2} syscalls/op ({:.2} sends, {:.2} kicks, {:.2} yields, {:.2} sleeps; {:.2} in slots){}",
            g.node(),
            b.node,
            b.reps,
            b.count,
            s.syscalls_per_request(),
            s.sends as f64 / s.requests.max(1) as f64,
            s.kicks as f64 / s.requests.max(1) as f64,
            s.yields as f64 / s.requests.max(1) as f64,
            s.sleeps as f64 / s.requests.max(1) as f64,
            s.submits as f64 / s.requests.max(1) as f64,
            mbps.map(|m| format!(", {m:.1} MB/s")).unwrap_or_default()
        );
        if b.per_op {
            println!(
                "single operations: p25 {:.2} us, median {:.2} us, p75 {:.2} us",
                quantile(&single, 0.25),
                quantile(&single, 0.5),
                quantile(&single, 0.75)
            );
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 0.25), 1.0);
        assert_eq!(quantile(&v, 0.5), 2.0);
        assert_eq!(quantile(&v, 0.75), 3.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }
}
