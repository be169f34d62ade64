//! `/proc/<pid>/numa_maps`: one line per mapping, `<addr> <policy> [tokens]`, where `N<node>=
//! <pages>` counts the mapping's resident pages per node in units of `kernelpagesize_kB`.
//! The policy may itself contain a space ("weighted interleave:0-1"), so lines are read as
//! loose tokens rather than by column.

use std::collections::BTreeMap;

/// Resident bytes per node over all mappings in `text`. Pages of a mapping without a
/// `kernelpagesize_kB` token count as `base_page` bytes.
pub fn bytes_per_node(text: &str, base_page: u64) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let page = line
            .split_whitespace()
            .find_map(|t| t.strip_prefix("kernelpagesize_kB="))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(base_page, |kb| kb * 1024);
        for (node, pages) in line.split_whitespace().filter_map(node_pages) {
            *out.entry(node).or_insert(0) += pages * page;
        }
    }
    out
}

/// `N1=42` -> (1, 42).
fn node_pages(token: &str) -> Option<(u32, u64)> {
    let (node, pages) = token.strip_prefix('N')?.split_once('=')?;
    Some((node.parse().ok()?, pages.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
55d0c0a00000 default file=/usr/bin/cat mapped=2 N0=2 kernelpagesize_kB=4
7f1c00000000 weighted interleave:0-1 anon=300 dirty=300 active=0 N0=225 N1=75 kernelpagesize_kB=4
7f1d00000000 bind:1 huge anon=2 dirty=2 N1=2 kernelpagesize_kB=2048
7ffd1e5a2000 default stack anon=3 dirty=3 N0=3 kernelpagesize_kB=4
7ffd1e5f0000 default
";

    #[test]
    fn sums_pages_by_node_and_page_size() {
        let m = bytes_per_node(SAMPLE, 4096);
        assert_eq!(m[&0], (2 + 225 + 3) * 4096);
        assert_eq!(m[&1], 75 * 4096 + 2 * 2048 * 1024);
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn ignores_lookalike_tokens() {
        let m = bytes_per_node("1000 default Nx=3 N=4 N2=y N3=5", 4096);
        assert_eq!(m.into_iter().collect::<Vec<_>>(), vec![(3, 5 * 4096)]);
    }

    #[test]
    fn missing_page_size_uses_base_page() {
        let m = bytes_per_node("1000 default anon=1 N4=1", 65536);
        assert_eq!(m[&4], 65536);
    }
}
