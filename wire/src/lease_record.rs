//! The lender's record of its loans, kept in its own partition of the GAS (between the mailbox
//! rings and chunk 0), so that a kram-daemon that restarts without its state file, or on a
//! node that rebooted, knows which chunks borrowers still use.
//!
//! ```text
//! offset  size
//!      0     8  magic "UNIMEMLR"
//!      8     4  format version (1)
//!     12     4  lender node id
//!     16     4  chunks in the lender's table
//!     20     4  number of grants n (at most MAX_GRANTS)
//!     24     8  generation (incremented on every write)
//!     32  16*n  grants: u8 node, u8 instance, u16 zero, u32 first chunk, u32 chunks, u32 zero
//! 32+16n     8  FNV-1a 64 of bytes 0..32+16n
//! ```
//! Little-endian. Only lent ranges are recorded (offers expire anyway). A record that is all
//! zero is a partition nothing was ever lent from (the fabric creates the GAS zeroed); anything
//! else that does not decode (torn write, a peer's garbage, memory after a power cycle) means
//! the lender cannot know what is lent and must wait a lease time for claims.

/// Where the record lies in the lender's partition.
pub const RECORD_OFFSET: u64 = crate::kram::LENDABLE_OFFSET - RECORD_SIZE as u64;
/// Bytes reserved for it.
pub const RECORD_SIZE: usize = 64 * 1024;
/// At most one grant per (node, instance).
pub const MAX_GRANTS: usize = 16 * 16;
const MAGIC: &[u8; 8] = b"UNIMEMLR";
const FORMAT: u32 = 1;
const HEADER: usize = 32;
const ENTRY: usize = 16;

/// One lent range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordedGrant {
    pub node: u8,
    pub instance: u8,
    pub first: u32,
    pub chunks: u32,
}

/// What a partition's record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// All zero: nothing was ever lent from here.
    Fresh,
    /// A valid record: `count` grants in the caller's buffer.
    Valid {
        node: u32,
        chunks: u32,
        generation: u64,
        count: usize,
    },
    /// Not a record (why).
    Invalid(RecordError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordError {
    Magic,
    Format(u32),
    Count(usize),
    Checksum,
    /// A grant that is empty, runs past the table, has a nonzero pad, or an owner twice.
    Grant(usize),
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from(u32_at(b, at)) | u64::from(u32_at(b, at + 4)) << 32
}

/// Writes the record for `grants` into `out` (at least [`encoded_len`] bytes); returns the
/// length written, or `None` if there are too many grants or `out` is too small.
pub fn encode(
    node: u32,
    chunks: u32,
    generation: u64,
    grants: &[RecordedGrant],
    out: &mut [u8],
) -> Option<usize> {
    let len = encoded_len(grants.len());
    if grants.len() > MAX_GRANTS || out.len() < len {
        return None;
    }
    out[..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&FORMAT.to_le_bytes());
    out[12..16].copy_from_slice(&node.to_le_bytes());
    out[16..20].copy_from_slice(&chunks.to_le_bytes());
    out[20..24].copy_from_slice(&(grants.len() as u32).to_le_bytes());
    out[24..32].copy_from_slice(&generation.to_le_bytes());
    for (i, g) in grants.iter().enumerate() {
        let e = &mut out[HEADER + i * ENTRY..HEADER + (i + 1) * ENTRY];
        e.fill(0);
        e[0] = g.node;
        e[1] = g.instance;
        e[4..8].copy_from_slice(&g.first.to_le_bytes());
        e[8..12].copy_from_slice(&g.chunks.to_le_bytes());
    }
    let body = HEADER + grants.len() * ENTRY;
    let sum = fnv1a(&out[..body]);
    out[body..body + 8].copy_from_slice(&sum.to_le_bytes());
    Some(len)
}

/// Bytes a record of `n` grants takes.
pub const fn encoded_len(n: usize) -> usize {
    HEADER + n * ENTRY + 8
}

/// Reads a record from `bytes` (the [`RECORD_SIZE`] bytes at [`RECORD_OFFSET`], copied out of
/// the shared memory first: a peer may write it concurrently), putting the grants into
/// `grants`. Every field is checked; nothing is trusted.
pub fn decode(bytes: &[u8], grants: &mut [RecordedGrant; MAX_GRANTS]) -> Decoded {
    if bytes.len() < HEADER + 8 {
        return Decoded::Invalid(RecordError::Count(0));
    }
    if bytes.iter().all(|&b| b == 0) {
        return Decoded::Fresh;
    }
    if &bytes[..8] != MAGIC {
        return Decoded::Invalid(RecordError::Magic);
    }
    let format = u32_at(bytes, 8);
    if format != FORMAT {
        return Decoded::Invalid(RecordError::Format(format));
    }
    let node = u32_at(bytes, 12);
    let chunks = u32_at(bytes, 16);
    let count = u32_at(bytes, 20) as usize;
    if count > MAX_GRANTS || encoded_len(count) > bytes.len() {
        return Decoded::Invalid(RecordError::Count(count));
    }
    let body = HEADER + count * ENTRY;
    if fnv1a(&bytes[..body]) != u64_at(bytes, body) {
        return Decoded::Invalid(RecordError::Checksum);
    }
    for i in 0..count {
        let e = &bytes[HEADER + i * ENTRY..HEADER + (i + 1) * ENTRY];
        let g = RecordedGrant {
            node: e[0],
            instance: e[1],
            first: u32_at(e, 4),
            chunks: u32_at(e, 8),
        };
        let pad = e[2] != 0 || e[3] != 0 || u32_at(e, 12) != 0;
        let past = g.chunks == 0 || g.first.checked_add(g.chunks).is_none_or(|end| end > chunks);
        let twice = grants[..i]
            .iter()
            .any(|o| (o.node, o.instance) == (g.node, g.instance));
        if pad || past || twice || g.node > 0xf || g.instance > 0xf {
            return Decoded::Invalid(RecordError::Grant(i));
        }
        grants[i] = g;
    }
    Decoded::Valid {
        node,
        chunks,
        generation: u64_at(bytes, 24),
        count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> [RecordedGrant; 2] {
        [
            RecordedGrant {
                node: 0,
                instance: 1,
                first: 0,
                chunks: 32,
            },
            RecordedGrant {
                node: 2,
                instance: 15,
                first: 128,
                chunks: 1024,
            },
        ]
    }

    #[test]
    fn round_trip() {
        let mut buf = [0u8; RECORD_SIZE];
        let n = encode(1, 2000, 7, &sample(), &mut buf).unwrap();
        assert_eq!(n, encoded_len(2));
        let mut out = [RecordedGrant::default(); MAX_GRANTS];
        assert_eq!(
            decode(&buf, &mut out),
            Decoded::Valid {
                node: 1,
                chunks: 2000,
                generation: 7,
                count: 2
            }
        );
        assert_eq!(out[..2], sample());
        assert_eq!(decode(&[0u8; RECORD_SIZE], &mut out), Decoded::Fresh);
        assert!(RECORD_OFFSET >= crate::mailbox::layout::RESERVED as u64);
        assert!(encoded_len(MAX_GRANTS) <= RECORD_SIZE);
    }

    #[test]
    fn malformed() {
        let mut good = [0u8; RECORD_SIZE];
        encode(1, 2000, 7, &sample(), &mut good).unwrap();
        let mut out = [RecordedGrant::default(); MAX_GRANTS];
        // Any flipped byte of the record is caught.
        for at in 0..encoded_len(2) {
            let mut b = good;
            b[at] ^= 0x40;
            assert!(
                matches!(decode(&b, &mut out), Decoded::Invalid(_)),
                "byte {at}"
            );
        }
        let mut b = good;
        b[20..24].copy_from_slice(&300u32.to_le_bytes());
        assert_eq!(
            decode(&b, &mut out),
            Decoded::Invalid(RecordError::Count(300))
        );
        // Well-checksummed but nonsensical grants: past the table, twice the same owner.
        let mut b = [0u8; RECORD_SIZE];
        let past = [RecordedGrant {
            node: 0,
            instance: 0,
            first: 1990,
            chunks: 20,
        }];
        encode(1, 2000, 1, &past, &mut b).unwrap();
        assert_eq!(
            decode(&b, &mut out),
            Decoded::Invalid(RecordError::Grant(0))
        );
        let twice = [
            sample()[0],
            RecordedGrant {
                first: 100,
                ..sample()[0]
            },
        ];
        encode(1, 2000, 1, &twice, &mut b).unwrap();
        assert_eq!(
            decode(&b, &mut out),
            Decoded::Invalid(RecordError::Grant(1))
        );
        let bad_owner = [RecordedGrant {
            node: 16,
            ..sample()[0]
        }];
        encode(1, 2000, 1, &bad_owner, &mut b).unwrap();
        assert_eq!(
            decode(&b, &mut out),
            Decoded::Invalid(RecordError::Grant(0))
        );
        assert!(encode(1, 1, 1, &[RecordedGrant::default(); MAX_GRANTS + 1], &mut b).is_none());
        assert_eq!(
            decode(&b[..10], &mut out),
            Decoded::Invalid(RecordError::Count(0))
        );
    }
}
