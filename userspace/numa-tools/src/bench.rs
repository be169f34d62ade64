//! Memory benchmark kernels for comparing nodes: run under `numactl --membind=<node>` every
//! page lands on that node, since the arrays are allocated and first touched here. Single
//! threaded: one core's bandwidth and latency to the node, which is what a remote page costs
//! a thread.

use anyhow::{ensure, Result};
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// STREAM's scalar.
const SCALAR: f64 = 3.0;

/// Best bandwidth of each STREAM kernel, in MB/s (10^6 bytes/s, as STREAM reports).
#[derive(Debug)]
pub struct StreamResult {
    pub copy: f64,
    pub scale: f64,
    pub add: f64,
    pub triad: f64,
}

impl StreamResult {
    /// The kernels in STREAM's order, with their MB/s.
    pub fn kernels(&self) -> [(&'static str, f64); 4] {
        [
            ("copy", self.copy),
            ("scale", self.scale),
            ("add", self.add),
            ("triad", self.triad),
        ]
    }

    /// `unimem-numabench stream --json`: `mib`, `reps`, `<kernel>_mb_per_s` per kernel and
    /// `valid` (always true: [`stream`] fails unless the arrays verified).
    pub fn json(&self, mib: usize, reps: usize) -> Value {
        let mut v = json!({"mib": mib, "reps": reps, "valid": true});
        for (k, mbs) in self.kernels() {
            v[format!("{k}_mb_per_s")] = json!(mbs);
        }
        v
    }
}

/// What `unimem-numabench chase` measured.
#[derive(Debug, PartialEq)]
pub struct ChaseResult {
    /// Average nanoseconds per dependent load.
    pub ns_per_access: f64,
    pub mib: usize,
    pub steps: u64,
    pub seed: u64,
}

impl ChaseResult {
    /// `unimem-numabench chase --json`: the fields above by name.
    pub fn json(&self) -> Value {
        json!({
            "ns_per_access": self.ns_per_access,
            "mib": self.mib,
            "steps": self.steps,
            "seed": self.seed,
        })
    }
}

/// STREAM copy/scale/add/triad over three arrays of `mib` MiB each, `reps` times; the best
/// time of each kernel counts. Fails when the arrays do not hold what the kernels computed.
pub fn stream(mib: usize, reps: usize) -> Result<StreamResult> {
    ensure!(mib > 0 && reps > 0, "--mib and --reps must be at least 1");
    let n = (mib << 20) / std::mem::size_of::<f64>();
    // Nonzero fill values so every page is written (first-touched) here: a zeroed Vec comes
    // from calloc, whose pages stay unpopulated until the first kernel.
    let mut a = vec![1.0f64; n];
    let mut b = vec![2.0f64; n];
    let mut c = vec![-1.0f64; n];
    for x in a.iter_mut() {
        *x *= 2.0;
    }

    let mut best = [Duration::MAX; 4];
    for _ in 0..reps {
        let times = [
            timed(|| copy(black_box(&a), &mut c)),
            timed(|| scale(black_box(&c), &mut b)),
            timed(|| add(black_box(&a), black_box(&b), &mut c)),
            timed(|| triad(black_box(&b), black_box(&c), &mut a)),
        ];
        for (best, t) in best.iter_mut().zip(times) {
            *best = (*best).min(t);
        }
    }
    validate(&a, &b, &c, reps)?;

    let bytes = (n * std::mem::size_of::<f64>()) as f64;
    let mbs = |moved: f64, t: Duration| moved * bytes / t.as_secs_f64().max(1e-9) / 1e6;
    Ok(StreamResult {
        copy: mbs(2.0, best[0]),
        scale: mbs(2.0, best[1]),
        add: mbs(3.0, best[2]),
        triad: mbs(3.0, best[3]),
    })
}

fn timed(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn copy(a: &[f64], c: &mut [f64]) {
    c.copy_from_slice(a);
}

fn scale(c: &[f64], b: &mut [f64]) {
    for (b, c) in b.iter_mut().zip(c) {
        *b = SCALAR * c;
    }
}

fn add(a: &[f64], b: &[f64], c: &mut [f64]) {
    for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
        *c = a + b;
    }
}

fn triad(b: &[f64], c: &[f64], a: &mut [f64]) {
    for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
        *a = b + SCALAR * c;
    }
}

/// STREAM's check: replay the kernels on one element and compare every element's value.
fn validate(a: &[f64], b: &[f64], c: &[f64], reps: usize) -> Result<()> {
    let (mut aj, mut bj, mut cj) = (2.0f64, 2.0f64, -1.0f64);
    for _ in 0..reps {
        cj = aj;
        bj = SCALAR * cj;
        cj = aj + bj;
        aj = bj + SCALAR * cj;
    }
    for (name, arr, want) in [("a", a, aj), ("b", b, bj), ("c", c, cj)] {
        let sum: f64 = arr.iter().map(|x| (x - want).abs()).sum();
        let avg_err = sum / arr.len() as f64;
        ensure!(
            avg_err <= 1e-13 * want.abs(),
            "stream validation failed: array {name} averages error {avg_err:e} against \
             {want:e}"
        );
    }
    Ok(())
}

/// xorshift64*: enough randomness to defeat the prefetchers, no dependency.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        // Zero is xorshift's fixed point.
        Self(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in 0..n (Lemire's multiply-shift; the bias is below 2^-40 for our n).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// One cache line; the first word is the index of the next slot.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct Slot {
    next: usize,
    _pad: [usize; 7],
}

/// Slots linked in one random cycle through all of them (Sattolo's algorithm), so a chase
/// touches every line once per lap in an order no prefetcher predicts.
pub fn build_chain(slots: usize, seed: u64) -> Result<Vec<Slot>> {
    ensure!(slots >= 2, "a chase needs at least 2 slots");
    let mut v: Vec<Slot> = (0..slots)
        .map(|i| Slot {
            next: i,
            _pad: [0; 7],
        })
        .collect();
    let mut rng = XorShift::new(seed);
    for i in (1..slots).rev() {
        let j = rng.below(i);
        let t = v[i].next;
        v[i].next = v[j].next;
        v[j].next = t;
    }
    let lap = cycle_len(&v);
    ensure!(
        lap == slots,
        "chain is not one cycle: returns to slot 0 after {lap} of {slots}"
    );
    Ok(v)
}

/// Steps from slot 0 until back at 0 (at most `v.len()` steps).
fn cycle_len(v: &[Slot]) -> usize {
    let mut p = v[0].next;
    let mut n = 1;
    while p != 0 && n <= v.len() {
        p = v[p].next;
        n += 1;
    }
    n
}

fn chase_steps(v: &[Slot], steps: u64) -> usize {
    let mut p = 0;
    for _ in 0..steps {
        p = v[black_box(p)].next;
    }
    p
}

/// Average latency in ns of one dependent load over `mib` MiB of cache lines.
pub fn chase(mib: usize, steps: u64, seed: u64) -> Result<f64> {
    ensure!(steps > 0, "--steps must be at least 1");
    let v = build_chain((mib << 20) / std::mem::size_of::<Slot>(), seed)?;
    // Warm the TLB and caches as far as they go, so the timed laps see the steady state.
    black_box(chase_steps(&v, steps.min(v.len() as u64)));
    let t = Instant::now();
    black_box(chase_steps(&v, steps));
    Ok(t.elapsed().as_nanos() as f64 / steps as f64)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn keys(v: &serde_json::Value) -> Vec<&str> {
        let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        k.sort_unstable();
        k
    }

    #[test]
    fn stream_json_keys() {
        let r = StreamResult {
            copy: 1.5,
            scale: 2.0,
            add: 3.0,
            triad: 2.5,
        };
        let v = r.json(8, 2);
        assert_eq!(
            keys(&v),
            [
                "add_mb_per_s",
                "copy_mb_per_s",
                "mib",
                "reps",
                "scale_mb_per_s",
                "triad_mb_per_s",
                "valid"
            ]
        );
        assert_eq!(v["copy_mb_per_s"], 1.5);
        assert_eq!(v["triad_mb_per_s"], 2.5);
        assert_eq!(v["valid"], true);
        assert_eq!(v["mib"], 8);
        assert_eq!(v["reps"], 2);
    }

    #[test]
    fn chase_json_keys() {
        let r = ChaseResult {
            ns_per_access: 80.5,
            mib: 64,
            steps: 1000,
            seed: 7,
        };
        let v = r.json();
        assert_eq!(keys(&v), ["mib", "ns_per_access", "seed", "steps"]);
        assert_eq!(
            v,
            json!({"ns_per_access": 80.5, "mib": 64, "steps": 1000, "seed": 7})
        );
    }
    use super::*;

    #[test]
    fn stream_small_validates() {
        let r = stream(1, 2).unwrap();
        assert!(r.copy > 0.0 && r.triad > 0.0, "{r:?}");
    }

    #[test]
    fn validation_catches_corruption() {
        let n = 1000;
        let (mut a, mut b, mut c) = (vec![2.0; n], vec![2.0; n], vec![-1.0; n]);
        for _ in 0..3 {
            copy(&a, &mut c);
            scale(&c, &mut b);
            add(&a, &b, &mut c);
            triad(&b, &c, &mut a);
        }
        validate(&a, &b, &c, 3).unwrap();
        b[17] += 1.0;
        assert!(validate(&a, &b, &c, 3).is_err());
    }

    #[test]
    fn chain_is_one_cycle() {
        for slots in [2, 3, 10, 1000] {
            for seed in 0..5 {
                let v = build_chain(slots, seed).unwrap();
                let mut seen = vec![false; slots];
                let mut p = 0;
                for _ in 0..slots {
                    assert!(!seen[p]);
                    seen[p] = true;
                    p = v[p].next;
                }
                assert_eq!(p, 0);
            }
        }
    }

    #[test]
    fn cycle_check_rejects_two_cycles() {
        let mut v: Vec<Slot> = (0..4)
            .map(|i| Slot {
                next: i,
                _pad: [0; 7],
            })
            .collect();
        v[0].next = 1;
        v[1].next = 0;
        v[2].next = 3;
        v[3].next = 2;
        assert_eq!(cycle_len(&v), 2);
    }

    #[test]
    fn rng_range() {
        let mut r = XorShift::new(0);
        assert!((0..1000).all(|_| r.below(7) < 7));
    }

    #[test]
    fn chase_runs() {
        assert!(chase(1, 10_000, 1).unwrap() > 0.0);
    }
}
