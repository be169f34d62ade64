//! Measuring pieces of the test rigs over GSAS (`unimem-gsas-test`, `unimem-dht-test`): a cheap random generator, medians of measurement windows, and a start barrier on a GSAS word.

use crate::cli::parse_u64;
use crate::{Gsas, Transport};
use std::time::{Duration, Instant};

/// xorshift64*: a cheap per-thread generator for picking variables.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((u128::from(x) * u128::from(n)) >> 64) as u64
    }
}

/// Median of a sample (0 if empty).
pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Per window, the sum over threads of the operations they completed in it.
pub fn window_totals(per_thread: &[Vec<u64>], reps: usize) -> Vec<u64> {
    (0..reps)
        .map(|w| {
            per_thread
                .iter()
                .map(|t| t.get(w).copied().unwrap_or(0))
                .sum()
        })
        .collect()
}

/// How long a throughput measurement runs, with how many threads, and when it starts.
#[derive(Debug, Clone, clap::Args)]
pub struct Timing {
    /// Threads of this process, each with its own handle (mailbox interface).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Measured time, cut into --reps equal windows (the median is over them).
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Start only when PARTIES processes have arrived at the barrier word BARRIER.
    #[arg(long, value_parser = parse_u64, requires = "parties")]
    pub barrier: Option<u64>,
    #[arg(long, default_value_t = 1)]
    pub parties: u64,
}

impl Timing {
    /// Checks the numbers (threads 1..=`max_threads`).
    pub fn check(&self, max_threads: usize) -> anyhow::Result<()> {
        if self.threads == 0 || self.threads > max_threads || self.reps == 0 || self.seconds <= 0.0
        {
            anyhow::bail!("--threads must be 1-{max_threads}, --reps and --seconds positive");
        }
        Ok(())
    }

    pub fn window(&self) -> Duration {
        Duration::from_secs_f64(self.seconds / self.reps as f64)
    }

    /// Runs `one` over and over for `reps` windows: the operations completed in each.
    pub fn windows<E>(&self, mut one: impl FnMut() -> Result<(), E>) -> Result<Vec<u64>, E> {
        let window = self.window();
        let mut counts = Vec::with_capacity(self.reps);
        for _ in 0..self.reps {
            let end = Instant::now() + window;
            let mut n = 0u64;
            while Instant::now() < end {
                one()?;
                n += 1;
            }
            counts.push(n);
        }
        Ok(counts)
    }

    /// The rates (ops/s) of the windows, all threads together: (median, min, max).
    pub fn rates(&self, per_thread: &[Vec<u64>]) -> (f64, f64, f64) {
        let w = self.window().as_secs_f64();
        let rates: Vec<f64> = window_totals(per_thread, self.reps)
            .iter()
            .map(|&n| n as f64 / w)
            .collect();
        let (min, max) = rates
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        (median(&rates), min, max)
    }
}

/// Arrives at the barrier word `b` (a Fetch&Add) and waits until `parties` have arrived, or
/// fails after `limit` with how many had.
pub fn barrier<T: Transport>(
    g: &Gsas<T>,
    b: u64,
    parties: u64,
    limit: Duration,
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let mut n = g.fetch_add(b, 1)? + 1;
    while n < parties {
        if t0.elapsed() > limit {
            anyhow::bail!("barrier {b:#x}: {n} of {parties} parties after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(1));
        n = g.read(b)?;
    }
    log::info!("barrier {b:#x}: {n} parties after {:?}", t0.elapsed());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_covers_the_range_evenly() {
        let mut r = Rng::new(7);
        let mut hits = [0u32; 8];
        for _ in 0..8000 {
            hits[r.below(8) as usize] += 1;
        }
        assert!(hits.iter().all(|&h| (800..1200).contains(&h)), "{hits:?}");
        assert_eq!(Rng::new(1).below(1), 0);
    }

    #[test]
    fn medians_and_window_totals() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(
            window_totals(&[vec![1, 2, 3], vec![10, 20]], 3),
            [11, 22, 3]
        );
    }
}
