//! The DHTNode (seed Figure 14): 256 bits, four little-endian words as READ256 returns them.
//! Word 0: the "indirect" field (bits 0-15, here a state), the lock (16-31), the version
//! (32-63). Word 1: the key, or the container's address. Words 2-3: the 128-bit value.

/// The state field. The seed's field only says whether the entry is indirect; the other values
/// say whether a direct entry holds a pair.
pub mod state {
    /// Never used: ends a probe in a container.
    pub const EMPTY: u16 = 0;
    /// Holds a key and its value.
    pub const PAIR: u16 = 1;
    /// First level only: word 1 is the address of a container (second level).
    pub const INDIRECT: u16 = 2;
    /// Containers only: a deleted pair; a probe goes on past it, an insert may reuse it.
    pub const DELETED: u16 = 3;
}

/// Bytes per entry, and entries per container page.
pub const ENTRY_BYTES: u64 = 32;
pub const CONTAINER_ENTRIES: u64 = gsas::PAGE_SIZE / ENTRY_BYTES;

/// One entry as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Entry {
    pub state: u16,
    /// 0 when free, else the holder's id ([`holder_id`]).
    pub lock: u16,
    pub version: u32,
    pub key: u64,
    pub value: u128,
}

impl Entry {
    pub fn decode(w: [u64; 4]) -> Entry {
        Entry {
            state: w[0] as u16,
            lock: (w[0] >> 16) as u16,
            version: (w[0] >> 32) as u32,
            key: w[1],
            value: u128::from(w[2]) | u128::from(w[3]) << 64,
        }
    }

    /// Word 0 with these fields.
    pub fn head(state: u16, lock: u16, version: u32) -> u64 {
        u64::from(state) | u64::from(lock) << 16 | u64::from(version) << 32
    }

    /// This entry's word 0.
    pub fn word0(&self) -> u64 {
        Self::head(self.state, self.lock, self.version)
    }

    pub fn locked(&self) -> bool {
        self.lock != 0
    }

    /// Word 0 after an update: unlocked, `state`, the version one further.
    pub fn next_head(&self, state: u16) -> u64 {
        Self::head(state, 0, self.version.wrapping_add(1))
    }
}

/// Bits of an interface's allocation count a lock keeps.
pub const GENERATION_MASK: u32 = 31;

/// The lock value a handle writes: its node (4 bits), interface (6) and the low 5 bits of the
/// interface's allocation count (`Gsas::iface_state`), plus one: never 0, and unique per holder
/// unless 32 owners of one interface came and went while the lock was held.
pub fn holder_id(node: u16, iface: u32, generation: u32) -> u16 {
    1 + (((generation & GENERATION_MASK) as u16) << 10 | (node & 15) << 6 | (iface & 63) as u16)
}

/// Who holds a lock: (node, interface, generation bits).
pub fn holder_of(lock: u16) -> (u16, u16, u32) {
    let l = lock.wrapping_sub(1);
    ((l >> 6) & 15, l & 63, u32::from(l >> 10) & GENERATION_MASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_sit_where_the_seed_puts_them() {
        let e = Entry::decode([0x0000_0007_0005_0002, 9, 0x11, 0x22]);
        assert_eq!((e.state, e.lock, e.version, e.key), (2, 5, 7, 9));
        assert_eq!(e.value, 0x22u128 << 64 | 0x11);
        assert_eq!(e.word0(), 0x0000_0007_0005_0002);
        assert_eq!(e.next_head(state::PAIR), 0x0000_0008_0000_0001);
        let full = Entry {
            version: u32::MAX,
            ..e
        };
        assert_eq!(full.next_head(0) >> 32, 0, "the version wraps");
    }

    #[test]
    fn holder_ids_are_never_zero_and_name_their_holder() {
        let mut seen = std::collections::BTreeSet::new();
        for node in 0..16 {
            for iface in 0..63 {
                for generation in [0, 1, 30, 31, 32, 33, u32::MAX] {
                    let h = holder_id(node, iface, generation);
                    assert_ne!(h, 0);
                    let g = generation & GENERATION_MASK;
                    assert_eq!(holder_of(h), (node, iface as u16, g));
                    seen.insert((h, node, iface, g));
                }
            }
        }
        let ids: std::collections::BTreeSet<u16> = seen.iter().map(|s| s.0).collect();
        assert_eq!(ids.len(), seen.len(), "two holders share an id");
    }
}
