//! What keeps protection trees apart when an interface changes owner and when a tree id is made
//! again: the claim table and the live-tree map, both in each node's own partition after the
//! owner table (`gsas::owner`), written only by that node's GSAS service (kernel), read by the
//! other nodes' mailbox drivers.
//!
//! **Claims.** A home applies a request of (issuer node, interface) only under a claim: it
//! reads the issuer's owner entry word, stores it in its claim word for that interface, makes
//! the store visible (a full fence), reads the entry word again and goes on only if it is
//! unchanged and names the packet's tree; it clears the claim after its answer is written. The
//! issuer's driver withdraws an entry (a full fence after the store) before the interface can
//! change owner, and gives the interface to a new owner (wiping its area first) only when no
//! home's claim word holds the withdrawn entry. Either the home sees the withdrawal and drops
//! the request, or the issuer sees the claim and waits: a previous owner's request is never
//! applied with the next owner's bulk pages or answered into its slots.
//!
//! **Live trees.** Bit `serial` of origin node `o`'s map on home `h` is set while `h` holds
//! something of tree `prot::new(o, serial)`: pages, or remoteFork children not yet waited for.
//! Node `o` makes a tree id anew only if no home's map has its bit, no node's owner table names
//! it and no claim names it, so ids are never recycled while anything of theirs lives anywhere
//! in the cluster. A home whose memory is lost (`gas::node_state::LOST`, all bytes 0xff) holds
//! nothing: its map is not read.
//!
//! **Header.** Both tables count only while the home's service runs: it zeroes them and then
//! writes [`MAGIC`] at [`HEADER_OFFSET`] when it loads, and clears the header when it unloads.
//! A partition whose header is not [`MAGIC`] (no service, a node restarted after its memory was
//! poisoned, bytes scribbled over it) claims nothing and holds no tree.
//!
//! All words are little-endian `u64`s in shared memory, accessed with aligned atomic loads and
//! stores; only the partition's node writes them.

use crate::gas::MAX_NODES;
use crate::gsas::{owner, PAGE_SIZE, USER_INTERFACES};

/// Partition offset of the header word.
pub const HEADER_OFFSET: u64 = owner::TABLE_END;
/// The header of a partition whose service keeps its tables ("UMTREES1").
pub const MAGIC: u64 = u64::from_le_bytes(*b"UMTREES1");
/// Partition offset of the claim table: one word per (issuer node, user interface).
pub const CLAIMS_OFFSET: u64 = HEADER_OFFSET + 64;
/// Words per issuer node in the claim table (64: simple indexing; the last is unused).
const CLAIMS_PER_NODE: u64 = 64;
/// End of the claim table.
pub const CLAIMS_END: u64 = CLAIMS_OFFSET + MAX_NODES as u64 * CLAIMS_PER_NODE * 8;

/// Partition offset of the claim word of `issuer`'s interface `iface` (`issuer < MAX_NODES`,
/// `iface < USER_INTERFACES`).
pub const fn claim(issuer: u32, iface: u32) -> u64 {
    CLAIMS_OFFSET + (issuer as u64 * CLAIMS_PER_NODE + iface as u64) * 8
}

/// Tree serials per origin node (`prot::new`'s 16-bit serial).
pub const SERIALS: u64 = 1 << 16;
/// Bytes of one origin node's map.
pub const MAP_LEN: u64 = SERIALS / 8;
/// Partition offset of the live-tree maps: one per origin node.
pub const LIVE_OFFSET: u64 = CLAIMS_END.div_ceil(PAGE_SIZE) * PAGE_SIZE;
/// End of the maps.
pub const LIVE_END: u64 = LIVE_OFFSET + MAX_NODES as u64 * MAP_LEN;
/// Everything a service resets when it starts: the header, the claims and the maps.
pub const TABLES: core::ops::Range<u64> = HEADER_OFFSET..LIVE_END;

const _: () = assert!(USER_INTERFACES as u64 <= CLAIMS_PER_NODE);
const _: () = assert!(LIVE_END <= crate::lease_record::RECORD_OFFSET);

/// Where the bit of tree `serial` made on `origin` lies: the word's partition offset and the
/// bit's mask (`origin < MAX_NODES`).
pub const fn live_bit(origin: u32, serial: u16) -> (u64, u64) {
    (
        LIVE_OFFSET + origin as u64 * MAP_LEN + (serial as u64 / 64) * 8,
        1 << (serial % 64),
    )
}

/// Whether a claim word read from a home claims something of tree `tree`.
pub const fn claims_tree(claim: u64, tree: u32) -> bool {
    match owner::tree(claim) {
        Some(t) => t == tree,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gsas::{owner, prot, AREA_END};

    #[test]
    fn tables_follow_the_owner_table_and_do_not_overlap() {
        const { assert!(HEADER_OFFSET >= AREA_END + PAGE_SIZE) };
        const { assert!(CLAIMS_OFFSET >= HEADER_OFFSET + 8) };
        assert_ne!(MAGIC, u64::MAX, "a poisoned partition must not pass");
        assert_eq!(claim(0, 0), CLAIMS_OFFSET);
        assert!(claim(MAX_NODES - 1, USER_INTERFACES - 1) + 8 <= CLAIMS_END);
        const { assert!(CLAIMS_END <= LIVE_OFFSET) };
        let (last, _) = live_bit(MAX_NODES - 1, u16::MAX);
        assert!(last + 8 <= LIVE_END);
        assert_eq!(live_bit(1, 0).0, LIVE_OFFSET + MAP_LEN);
        assert_eq!(live_bit(0, 65), (LIVE_OFFSET + 8, 2));
        assert_eq!(LIVE_OFFSET % 8, 0);
    }

    #[test]
    fn every_serial_has_its_own_bit() {
        for serial in 0..=u16::MAX {
            let (word, mask) = live_bit(3, serial);
            assert_eq!(mask.count_ones(), 1);
            let index = (word - LIVE_OFFSET) * 8 + u64::from(mask.trailing_zeros());
            assert_eq!(index, 3 * SERIALS + u64::from(serial));
        }
    }

    #[test]
    fn claims_name_only_their_tree() {
        let e = owner::word(7, prot::new(2, 9));
        assert!(claims_tree(e, prot::new(2, 9)));
        assert!(!claims_tree(e, prot::new(2, 10)));
        assert!(!claims_tree(0, 0), "a cleared claim claims nothing");
        assert!(!claims_tree(e & !owner::VALID, prot::new(2, 9)));
    }
}
