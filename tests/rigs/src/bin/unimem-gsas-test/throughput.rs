//! `unimem-gsas-test throughput`: operations per second of THREADS threads of this process, each
//! with its own handle, applying one operation for a fixed time to one variable (seed Figure
//! 11), to variables picked at random among many spread over several nodes (Figure 12), or
//! reading with READ256 / bulk reads (bandwidth). Processes on several nodes start together at
//! a barrier word, as `check faa-sum` does, and `scripts/bench/gsas.sh` adds up their rates.

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use gsas::cli::{parse_u64, Ctx};
use gsas::json::Obj;

pub use gsas::measure::{Rng, Timing};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TputOp {
    /// Fetch&Add 1 on the variable.
    Faa,
    /// READ256 of the 32 bytes at the variable (32-byte aligned).
    Read256,
    /// Bulk read of --len bytes at the variable (MB/s in the output).
    BulkRead,
    /// NOP to the variable's home node (no memory touched).
    Nop,
}

#[derive(Args)]
pub struct Throughput {
    /// A page (GSAS address) holding variables; repeat for pages on several nodes. Each
    /// operation picks one of the --vars variables at random, uniformly over all of them.
    #[arg(long = "addr", value_parser = parse_u64, required = true)]
    addrs: Vec<u64>,
    /// Variables per address: 8-byte words (32-byte blocks for read256) from the address up,
    /// all inside its page. 1 = the address itself (single-variable throughput).
    #[arg(long, default_value_t = 1)]
    vars: u64,
    #[arg(long, value_enum, default_value_t = TputOp::Faa)]
    op: TputOp,
    /// Bytes per bulk read (any length: split into page pieces).
    #[arg(long, default_value_t = 4096)]
    len: usize,
    #[command(flatten)]
    timing: Timing,
    /// Untimed operations per thread first.
    #[arg(long, default_value_t = 20)]
    warmup: u64,
    /// RNG seed of the variable choice (each thread derives its own).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    json: bool,
}

/// The addresses of the variables: `vars` per page address, `stride` bytes apart.
pub fn variables(addrs: &[u64], vars: u64, stride: u64) -> Result<Vec<u64>> {
    if vars == 0 || vars * stride > gsas::PAGE_SIZE {
        bail!(
            "--vars must be 1..={} for this operation",
            gsas::PAGE_SIZE / stride
        );
    }
    Ok(addrs
        .iter()
        .flat_map(|&a| (0..vars).map(move |i| a + i * stride))
        .collect())
}

pub fn run(ctx: &Ctx, t: Throughput) -> Result<i32> {
    let tm = &t.timing;
    tm.check(usize::from(u16::MAX))?;
    if t.op == TputOp::BulkRead && t.len == 0 {
        bail!("--len must be at least 1");
    }
    let stride = match t.op {
        TputOp::Read256 => 32,
        TputOp::BulkRead => t.len.max(1) as u64,
        _ => 8,
    };
    let vars = if t.op == TputOp::BulkRead {
        // A bulk read may span pages: the variables are the addresses themselves.
        t.addrs.clone()
    } else {
        variables(&t.addrs, t.vars, stride)?
    };
    if let Some(b) = tm.barrier {
        crate::wait_barrier(ctx, b, tm.parties)?;
    }
    let vars = &vars;
    let t = &t;
    let results: Vec<Result<(Vec<u64>, gsas::Stats, u16)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..tm.threads)
            .map(|i| {
                s.spawn(move || -> Result<(Vec<u64>, gsas::Stats, u16)> {
                    let g = ctx.open()?;
                    let mut rng = Rng::new(t.seed ^ (u64::from(g.node()) << 32) ^ i as u64);
                    let mut buf = vec![0u8; t.len];
                    let mut one = |rng: &mut Rng| -> gsas::Result<()> {
                        let a = vars[rng.below(vars.len() as u64) as usize];
                        match t.op {
                            TputOp::Faa => g.fetch_add(a, 1).map(drop),
                            TputOp::Read256 => g.read256(a).map(drop),
                            TputOp::BulkRead => g.bulk_read(a, &mut buf),
                            TputOp::Nop => g.nop(gsas::node_of(a)),
                        }
                    };
                    for _ in 0..t.warmup {
                        one(&mut rng)?;
                    }
                    let before = g.stats();
                    let counts = tm.windows(|| one(&mut rng))?;
                    Ok((counts, g.stats().since(&before), g.node()))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("thread panicked"))
            .collect()
    });
    let mut per_thread = Vec::new();
    let mut st = gsas::Stats::default();
    let mut node = None;
    for r in results {
        let (c, s, n) = r?;
        node = Some(n);
        per_thread.push(c);
        st.add(&s);
    }
    let w = tm.window().as_secs_f64();
    let (med, min, max) = tm.rates(&per_thread);
    let ops: u64 = per_thread.iter().flatten().sum();
    let bytes_per_op = match t.op {
        TputOp::Read256 => 32.0,
        TputOp::BulkRead => t.len as f64,
        _ => 0.0,
    };
    let name =
        t.op.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default();
    if t.json {
        let mut o = Obj::new()
            .str("op", &name)
            .num("issuer", node.unwrap_or(u16::MAX))
            .num("threads", tm.threads as u64)
            .num("variables", vars.len() as u64)
            .num("ops", ops)
            .num("reps", tm.reps as u64)
            .float("window_s", w)
            .float("ops_per_s", med)
            .float("min_ops_per_s", min)
            .float("max_ops_per_s", max)
            .float("syscalls_per_op", st.syscalls_per_request());
        if bytes_per_op > 0.0 {
            o = o.float("mb_per_s", med * bytes_per_op / 1e6);
        }
        println!("{o}");
    } else {
        println!(
            "throughput {name}: {} threads, {} variables: median {med:.0} ops/s (min {min:.0}, max {max:.0}) over {} windows of {w:.2} s; {:.2} syscalls/op{}",
            tm.threads,
            vars.len(),
            tm.reps,
            st.syscalls_per_request(),
            if bytes_per_op > 0.0 {
                format!(", {:.2} MB/s", med * bytes_per_op / 1e6)
            } else {
                String::new()
            }
        );
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_spread_over_pages() {
        let v = variables(&[0x1_0000_0000_0000, 0x2_0000_0000_1000], 3, 8).unwrap();
        assert_eq!(
            v,
            [
                0x1_0000_0000_0000,
                0x1_0000_0000_0008,
                0x1_0000_0000_0010,
                0x2_0000_0000_1000,
                0x2_0000_0000_1008,
                0x2_0000_0000_1010
            ]
        );
        assert!(variables(&[0], 0, 8).is_err());
        assert!(variables(&[0], 513, 8).is_err());
        assert_eq!(variables(&[0], 128, 32).unwrap().len(), 128);
        assert!(variables(&[0], 129, 32).is_err());
    }
}
