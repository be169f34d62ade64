//! Deterministic test patterns: every 8-byte word depends on the seed and its own offset, so a
//! misplaced, stale or partial write never passes as a correct one.

fn word(seed: u64, index: u64) -> u64 {
    // splitmix64 of (seed, index): cheap and well mixed.
    let mut z = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Byte `i` of the pattern for `seed`.
fn byte(seed: u64, i: u64) -> u8 {
    word(seed, i / 8).to_le_bytes()[(i % 8) as usize]
}

/// Fills `buf` (which starts at pattern position `start`).
pub fn fill(buf: &mut [u8], seed: u64, start: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = byte(seed, start + i as u64);
    }
}

/// Position of the first byte of `buf` that differs from the pattern, with found and expected.
pub fn first_mismatch(buf: &[u8], seed: u64, start: u64) -> Option<(u64, u8, u8)> {
    buf.iter().enumerate().find_map(|(i, &b)| {
        let want = byte(seed, start + i as u64);
        (b != want).then_some((start + i as u64, b, want))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_then_verify() {
        let mut buf = vec![0u8; 4099];
        fill(&mut buf, 7, 13);
        assert_eq!(first_mismatch(&buf, 7, 13), None);
        assert!(
            first_mismatch(&buf, 8, 13).is_some(),
            "another seed must not verify"
        );
        assert!(
            first_mismatch(&buf, 7, 21).is_some(),
            "a shifted range must not verify"
        );
        buf[4000] ^= 1;
        assert_eq!(first_mismatch(&buf, 7, 13).map(|m| m.0), Some(4013));
    }
}
