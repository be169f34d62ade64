//! Service levels (seed 000, section 4.3): a process group's ratio of remote to local pages,
//! realised with the kernel's weighted interleave. The node weights are system-wide, so two
//! groups can only run at once when they agree on the weight of every node they share.

use anyhow::{bail, ensure, Context, Result};
use std::fmt;
use std::str::FromStr;

/// Remote:local pages, reduced, each part a valid interleave weight (1..=255).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ratio {
    pub remote: u8,
    pub local: u8,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Ratio {
    /// Reduces `remote:local` by their gcd so equal ratios get equal weights (2:6 and 1:3
    /// both become 1:3), then checks the parts fit the kernel's 1..=255 weights.
    pub fn new(remote: u64, local: u64) -> Result<Self> {
        ensure!(
            remote > 0 && local > 0,
            "ratio {remote}:{local}: both parts must be at least 1 (weighted interleave has no \
             weight 0; for all-remote or all-local use numactl --membind)"
        );
        let g = gcd(remote, local);
        let (r, l) = (remote / g, local / g);
        match (u8::try_from(r), u8::try_from(l)) {
            (Ok(remote), Ok(local)) => Ok(Self { remote, local }),
            _ => bail!(
                "ratio {remote}:{local} reduces to {r}:{l}, but interleave weights are at most 255"
            ),
        }
    }

    /// The share of remote pages this ratio aims at, in percent.
    pub fn remote_pct(self) -> f64 {
        100.0 * f64::from(self.remote) / (f64::from(self.remote) + f64::from(self.local))
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}:{}", self.remote, self.local)
    }
}

/// A group's level: which node is remote, which local, and the ratio between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceLevel {
    pub remote_node: u32,
    pub local_node: u32,
    pub ratio: Ratio,
}

impl ServiceLevel {
    pub fn new(remote_node: u32, local_node: u32, ratio: Ratio) -> Result<Self> {
        ensure!(
            remote_node != local_node,
            "remote and local node are both {local_node}"
        );
        Ok(Self {
            remote_node,
            local_node,
            ratio,
        })
    }

    /// The system-wide interleave weight each of the two nodes needs.
    pub fn weights(&self) -> [(u32, u8); 2] {
        [
            (self.remote_node, self.ratio.remote),
            (self.local_node, self.ratio.local),
        ]
    }
}

/// The registry file's format: `remote_node=1 local_node=0 remote=1 local=3`.
impl fmt::Display for ServiceLevel {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "remote_node={} local_node={} remote={} local={}",
            self.remote_node, self.local_node, self.ratio.remote, self.ratio.local
        )
    }
}

impl FromStr for ServiceLevel {
    type Err = anyhow::Error;

    /// Unknown keys are ignored so a later version may add some.
    fn from_str(s: &str) -> Result<Self> {
        let (mut rn, mut ln, mut r, mut l) = (None, None, None, None);
        for tok in s.split_whitespace() {
            let (k, v) = tok
                .split_once('=')
                .with_context(|| format!("`{tok}` is not key=value"))?;
            let slot = match k {
                "remote_node" => &mut rn,
                "local_node" => &mut ln,
                "remote" => &mut r,
                "local" => &mut l,
                _ => continue,
            };
            *slot = Some(
                v.parse::<u32>()
                    .with_context(|| format!("{k}={v}: not a number"))?,
            );
        }
        let need = |v: Option<u32>, k: &str| v.with_context(|| format!("no {k}="));
        let ratio = Ratio::new(need(r, "remote")?.into(), need(l, "local")?.into())?;
        Self::new(need(rn, "remote_node")?, need(ln, "local_node")?, ratio)
    }
}

/// The first of `others` (pgid, level) that needs a different weight on a node `new` uses.
/// Groups on disjoint nodes, or that agree on the shared nodes' weights, can run together.
pub fn find_conflict<'a>(
    new: &ServiceLevel,
    others: &'a [(i32, ServiceLevel)],
) -> Option<&'a (i32, ServiceLevel)> {
    others.iter().find(|(_, other)| {
        new.weights()
            .iter()
            .any(|(node, w)| other.weights().iter().any(|(n, ow)| n == node && ow != w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sl(rn: u32, ln: u32, r: u64, l: u64) -> ServiceLevel {
        ServiceLevel::new(rn, ln, Ratio::new(r, l).unwrap()).unwrap()
    }

    #[test]
    fn ratio_reduces() {
        assert_eq!(
            Ratio::new(2, 6).unwrap(),
            Ratio {
                remote: 1,
                local: 3
            }
        );
        assert_eq!(
            Ratio::new(510, 255).unwrap(),
            Ratio {
                remote: 2,
                local: 1
            }
        );
        assert_eq!(
            Ratio::new(255, 254).unwrap(),
            Ratio {
                remote: 255,
                local: 254
            }
        );
        assert_eq!(Ratio::new(1, 3).unwrap().remote_pct(), 25.0);
    }

    #[test]
    fn ratio_rejects() {
        assert!(Ratio::new(0, 3).is_err());
        assert!(Ratio::new(3, 0).is_err());
        let e = Ratio::new(256, 1).unwrap_err().to_string();
        assert!(e.contains("255"), "{e}");
        assert!(Ratio::new(1, 1000).is_err());
    }

    #[test]
    fn registry_format_round_trip() {
        let s = sl(1, 0, 1, 3);
        let text = s.to_string();
        assert_eq!(text, "remote_node=1 local_node=0 remote=1 local=3");
        assert_eq!(text.parse::<ServiceLevel>().unwrap(), s);
        assert_eq!(format!("{text}\n").parse::<ServiceLevel>().unwrap(), s);
    }

    #[test]
    fn registry_format_tolerates_order_and_extra_keys() {
        let s: ServiceLevel = "local=6 remote=2 cmd=x local_node=0 remote_node=2"
            .parse()
            .unwrap();
        assert_eq!(s, sl(2, 0, 1, 3));
    }

    #[test]
    fn registry_format_rejects() {
        for bad in [
            "",
            "remote_node=1 local_node=0 remote=1",
            "remote_node=1 local_node=1 remote=1 local=3",
            "remote_node=x local_node=0 remote=1 local=3",
            "remote_node=1 local_node=0 remote=0 local=3",
            "remote_node=1 local_node=0 remote=1 local=3 junk",
        ] {
            assert!(bad.parse::<ServiceLevel>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn conflicts() {
        let others = [(100, sl(1, 0, 1, 3)), (200, sl(2, 3, 1, 1))];
        // Same ratio on the same nodes: fine.
        assert_eq!(find_conflict(&sl(1, 0, 2, 6), &others), None);
        // Different ratio on the same nodes.
        assert_eq!(
            find_conflict(&sl(1, 0, 1, 2), &others).map(|c| c.0),
            Some(100)
        );
        // Shares node 0 only, and wants the same weight 3 there: fine.
        assert_eq!(find_conflict(&sl(4, 0, 5, 3), &others), None);
        // Shares node 0 with a different weight.
        assert_eq!(
            find_conflict(&sl(4, 0, 1, 1), &others).map(|c| c.0),
            Some(100)
        );
        // Swapped roles: node 1 local with weight 3 vs remote weight 1.
        assert_eq!(
            find_conflict(&sl(0, 1, 1, 3), &others).map(|c| c.0),
            Some(100)
        );
        // Disjoint nodes never conflict.
        assert_eq!(find_conflict(&sl(5, 6, 7, 1), &others), None);
        assert_eq!(
            find_conflict(&sl(2, 3, 1, 2), &others).map(|c| c.0),
            Some(200)
        );
    }
}
