//! A data pattern that depends on the seed and on each word's offset, so a page that came back
//! from a migration with the wrong contents, or from the wrong place, never verifies.

/// The word at word `index` for `seed` (splitmix64 of both).
pub fn word(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Writes the pattern into every word, which also first-touches every page.
pub fn fill(words: &mut [u64], seed: u64) {
    for (i, w) in words.iter_mut().enumerate() {
        *w = word(seed, i as u64);
    }
}

/// The byte offset of the first word that differs from the pattern, with found and expected.
pub fn first_mismatch(words: &[u64], seed: u64) -> Option<(usize, u64, u64)> {
    words.iter().enumerate().find_map(|(i, &w)| {
        let want = word(seed, i as u64);
        (w != want).then_some((i * 8, w, want))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_then_verify() {
        let mut v = vec![0u64; 1024];
        fill(&mut v, 7);
        assert_eq!(first_mismatch(&v, 7), None);
        assert!(first_mismatch(&v, 8).is_some());
        v[100] ^= 1;
        assert_eq!(first_mismatch(&v, 7).map(|m| m.0), Some(800));
    }

    #[test]
    fn pages_differ() {
        // Two pages' worth of words at different offsets must not repeat.
        assert_ne!(word(1, 0), word(1, 512));
        assert_ne!(word(1, 0), word(2, 0));
    }
}
