//! The two hash functions of the seed: `h1` picks the first-level entry (0..size), `h2` the
//! entry of a container (0..128). Both are 64-bit mixers of the key with a seed of the table,
//! with different constants, so that keys that collide in one level spread in the other.

/// splitmix64's finalizer.
fn mix1(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// MurmurHash3's fmix64.
fn mix2(mut x: u64) -> u64 {
    x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x = (x ^ (x >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// First level: an index in `0..size` (multiply-high: uniform for any size).
pub fn h1(seed: u64, key: u64, size: u64) -> u64 {
    ((u128::from(mix1(key ^ seed)) * u128::from(size)) >> 64) as u64
}

/// Second level: an index in `0..entries` (a power of two).
pub fn h2(seed: u64, key: u64, entries: u64) -> u64 {
    mix2(key.wrapping_add(seed)) & (entries - 1)
}

/// A 64-bit mix for anything else that needs one (seeds, checker values).
pub fn mix(x: u64) -> u64 {
    mix1(x.wrapping_add(0x9e37_79b9_7f4a_7c15))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_levels_spread_keys_evenly_and_independently() {
        let (size, n) = (1000u64, 100_000u64);
        let mut l1 = vec![0u32; size as usize];
        let mut l2 = [0u32; 128];
        for k in 0..n {
            l1[h1(7, k, size) as usize] += 1;
            l2[h2(9, k, 128) as usize] += 1;
        }
        assert!(l1.iter().all(|&c| (50..160).contains(&c)), "h1 uneven");
        assert!(l2.iter().all(|&c| (600..960).contains(&c)), "h2 uneven");
        // Keys sharing a first-level entry still spread over a container.
        let same: Vec<u64> = (0..n).filter(|&k| h1(7, k, size) == 3).collect();
        let mut seen = std::collections::HashSet::new();
        for &k in &same {
            seen.insert(h2(9, k, 128));
        }
        assert!(seen.len() * 10 >= same.len() * 5, "h2 follows h1");
    }
}
