//! This node's id and the node count, from `unimem_eusrvmem`'s sysfs directory (the mailbox
//! driver's own `ALLOC` also reports the node id; the count is only published there).

use std::io;
use std::path::Path;

/// sysfs directory of the fabric device.
pub const SYSFS_DIR: &str = "/sys/class/misc/eusrvmem";

fn read_u32(name: &str) -> io::Result<u32> {
    let path = Path::new(SYSFS_DIR).join(name);
    let text = std::fs::read_to_string(&path)?;
    parse_u32(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: not a number: {text:?}", path.display()),
        )
    })
}

fn parse_u32(text: &str) -> Option<u32> {
    text.trim().parse().ok()
}

/// This node's id.
pub fn node_id() -> io::Result<u32> {
    read_u32("node_id")
}

/// Number of nodes of the fabric (valid destination nodes are `0..node_count`).
pub fn node_count() -> io::Result<u32> {
    read_u32("node_count")
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_sysfs_numbers() {
        assert_eq!(super::parse_u32("3\n"), Some(3));
        assert_eq!(super::parse_u32(" 16 "), Some(16));
        assert_eq!(super::parse_u32("x"), None);
    }
}
