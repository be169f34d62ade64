//! Latency statistics and the one-line `RESULT` format shared by `ping` (unimem-mbox), `kping`
//! and `bench-baseline` (unimem-mbox-test), so the benchmark script parses all of them the same way.

use std::time::Duration;

/// Half round-trip times of a ping-pong run.
pub struct Summary {
    pub count: usize,
    pub min_us: f64,
    pub median_us: f64,
    pub mean_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// Messages delivered per second, both directions counted (2 per round trip).
    pub msgs_per_s: f64,
}

impl Summary {
    /// `rtts`: one round-trip time per exchange; `elapsed`: wall time of the whole run.
    pub fn from_round_trips(rtts: &[Duration], elapsed: Duration) -> Self {
        let mut half: Vec<f64> = rtts.iter().map(|d| d.as_secs_f64() * 1e6 / 2.0).collect();
        half.sort_by(f64::total_cmp);
        let n = half.len();
        let at = |q: f64| {
            if n == 0 {
                0.0
            } else {
                half[((n as f64 * q).ceil() as usize).clamp(1, n) - 1]
            }
        };
        let median = if n == 0 {
            0.0
        } else if n % 2 == 1 {
            half[n / 2]
        } else {
            (half[n / 2 - 1] + half[n / 2]) / 2.0
        };
        let secs = elapsed.as_secs_f64();
        Summary {
            count: n,
            min_us: half.first().copied().unwrap_or(0.0),
            median_us: median,
            mean_us: if n == 0 {
                0.0
            } else {
                half.iter().sum::<f64>() / n as f64
            },
            p99_us: at(0.99),
            max_us: half.last().copied().unwrap_or(0.0),
            msgs_per_s: if secs > 0.0 {
                2.0 * n as f64 / secs
            } else {
                0.0
            },
        }
    }

    /// `RESULT test=.. mode=.. size=.. count=.. min_us=.. median_us=.. mean_us=.. p99_us=..
    /// max_us=.. msgs_per_s=..` (all `*_us` are half round trips).
    pub fn result_line(&self, test: &str, mode: &str, size: usize) -> String {
        format!(
            "RESULT test={test} mode={mode} size={size} count={} min_us={:.2} median_us={:.2} \
             mean_us={:.2} p99_us={:.2} max_us={:.2} msgs_per_s={:.0}",
            self.count,
            self.min_us,
            self.median_us,
            self.mean_us,
            self.p99_us,
            self.max_us,
            self.msgs_per_s
        )
    }

    /// A line for people.
    pub fn human(&self) -> String {
        format!(
            "half round trip: min {:.2} us, median {:.2} us, mean {:.2} us, p99 {:.2} us, max {:.2} us; {:.0} msgs/s",
            self.min_us, self.median_us, self.mean_us, self.p99_us, self.max_us, self.msgs_per_s
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_and_orders() {
        let rtts: Vec<_> = [10u64, 2, 4, 8]
            .iter()
            .map(|&u| Duration::from_micros(u))
            .collect();
        let s = Summary::from_round_trips(&rtts, Duration::from_millis(1));
        assert_eq!(s.count, 4);
        assert_eq!(s.min_us, 1.0);
        assert_eq!(s.max_us, 5.0);
        assert_eq!(s.median_us, 3.0);
        assert_eq!(s.mean_us, 3.0);
        assert_eq!(s.p99_us, 5.0);
        // 4 round trips = 8 messages in 1 ms.
        assert_eq!(s.msgs_per_s, 8000.0);
        let line = s.result_line("ping", "block", 25);
        assert!(line.starts_with("RESULT test=ping mode=block size=25 count=4 min_us=1.00"));
        assert!(line.ends_with("msgs_per_s=8000"));
    }

    #[test]
    fn empty_run_is_zero_not_nan() {
        let s = Summary::from_round_trips(&[], Duration::ZERO);
        assert_eq!((s.count, s.mean_us, s.msgs_per_s), (0, 0.0, 0.0));
    }
}
