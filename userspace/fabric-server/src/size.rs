//! Human-friendly byte sizes for the command line ("1G", "2M", "4096").

/// Parses a byte count with an optional binary suffix K, M, G or T (case-insensitive).
///
/// Returns a `String` error because clap shows it verbatim next to the offending option.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, shift) = match text.char_indices().last() {
        None => return Err("empty size".into()),
        Some((i, c)) => match c.to_ascii_uppercase() {
            'K' => (&text[..i], 10),
            'M' => (&text[..i], 20),
            'G' => (&text[..i], 30),
            'T' => (&text[..i], 40),
            _ => (text, 0),
        },
    };
    // `u64::from_str` accepts a leading '+', which would make "+1G" valid by accident.
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "invalid size {text:?}: expected a whole number with an optional K, M, G or T suffix"
        ));
    }
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("size {text:?} is too large"))?;
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size {text:?} is too large"))
}

/// Like [`parse_size`], but the result must be a power of two: the region becomes a PCI BAR,
/// and BAR sizes are powers of two.
pub fn parse_region_size(text: &str) -> Result<u64, String> {
    let size = parse_size(text)?;
    if !size.is_power_of_two() {
        return Err(format!("{size} bytes is not a power of two"));
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_suffixed() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("2M"), Ok(2 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("3T"), Ok(3 << 40));
        assert_eq!(parse_size(" 8M "), Ok(8 << 20));
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "", " ", "G", "1.5G", "-1", "+1G", "1X", "1GB", "1 G", "0x10", "G1", "１G",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn rejects_overflow() {
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        assert!(parse_size("18446744073709551616").is_err());
        assert!(parse_size("16777216T").is_err());
        assert_eq!(parse_size("16777215T"), Ok(16_777_215 << 40));
    }

    #[test]
    fn region_size_must_be_power_of_two() {
        assert_eq!(parse_region_size("1G"), Ok(1 << 30));
        assert_eq!(parse_region_size("64M"), Ok(64 << 20));
        assert!(parse_region_size("3M").is_err());
        assert!(parse_region_size("0").is_err());
        assert!(parse_region_size("1000").is_err());
    }
}
