// SPDX-License-Identifier: GPL-2.0
//! The 256-bit packetizer packet (seed 000, Figure 9).
//!
//! ```text
//! bits   0..24  sender: interface id (bits 0..16) + node id (bits 16..24)   } header, written
//! bits  24..48  protection id                                               } only by the
//! bits  48..56  reserved, zero                                              } driver
//! bits  56..64  opcode                                                      \
//! bits  64..128 address                                                      } payload (200 bits),
//! bits 128..192 argument 1                                                   } written by the thread
//! bits 192..256 argument 2                                                  /
//! ```
//! Little-endian. This file is included by the kernel modules with `#[path]`; `core` only.

/// Encoded packet length.
pub const PACKET_LEN: usize = 32;
/// Header length (56 bits).
pub const HEADER_LEN: usize = 7;
/// Payload length (200 bits).
pub const PAYLOAD_LEN: usize = PACKET_LEN - HEADER_LEN;
/// Largest value of a 24-bit field.
pub const MAX_24: u32 = (1 << 24) - 1;

/// Why bytes are not a valid packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketError {
    /// Fewer than [`PACKET_LEN`] bytes.
    Truncated,
    /// The reserved header byte is not zero.
    Reserved(u8),
}

/// Who sent a packet: filled in by the sending node's driver, never by the thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// Sending node (board) id.
    pub node: u8,
    /// Sending interface id on that node.
    pub iface: u16,
    /// Protection id of the sending thread (24 bits).
    pub prot_id: u32,
}

/// What the thread writes: the operation and its operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Payload {
    pub opcode: u8,
    pub address: u64,
    pub arg1: u64,
    pub arg2: u64,
}

/// A whole packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Packet {
    pub header: Header,
    pub payload: Payload,
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

fn u24_at(b: &[u8], off: usize) -> u32 {
    u32::from(b[off]) | u32::from(b[off + 1]) << 8 | u32::from(b[off + 2]) << 16
}

impl Payload {
    /// Encodes the 25 payload bytes.
    pub fn encode(&self) -> [u8; PAYLOAD_LEN] {
        let mut b = [0u8; PAYLOAD_LEN];
        b[0] = self.opcode;
        b[1..9].copy_from_slice(&self.address.to_le_bytes());
        b[9..17].copy_from_slice(&self.arg1.to_le_bytes());
        b[17..25].copy_from_slice(&self.arg2.to_le_bytes());
        b
    }

    /// Decodes 25 payload bytes (every bit pattern is a valid payload).
    pub fn decode(b: &[u8; PAYLOAD_LEN]) -> Self {
        Payload {
            opcode: b[0],
            address: u64_at(b, 1),
            arg1: u64_at(b, 9),
            arg2: u64_at(b, 17),
        }
    }
}

impl Packet {
    /// Builds the packet the driver transmits: `payload` bytes from the thread, header from the
    /// driver's own records. Out-of-range header values are truncated to their field widths.
    pub fn seal(header: Header, payload: &[u8; PAYLOAD_LEN]) -> [u8; PACKET_LEN] {
        let mut b = [0u8; PACKET_LEN];
        let sender = u32::from(header.iface) | u32::from(header.node) << 16;
        b[0..3].copy_from_slice(&sender.to_le_bytes()[..3]);
        b[3..6].copy_from_slice(&(header.prot_id & MAX_24).to_le_bytes()[..3]);
        b[HEADER_LEN..].copy_from_slice(payload);
        b
    }

    /// Encodes the packet.
    pub fn encode(&self) -> [u8; PACKET_LEN] {
        Self::seal(self.header, &self.payload.encode())
    }

    /// Decodes and checks a packet.
    pub fn decode(b: &[u8]) -> Result<Self, PacketError> {
        if b.len() < PACKET_LEN {
            return Err(PacketError::Truncated);
        }
        if b[6] != 0 {
            return Err(PacketError::Reserved(b[6]));
        }
        let sender = u24_at(b, 0);
        let mut payload = [0u8; PAYLOAD_LEN];
        payload.copy_from_slice(&b[HEADER_LEN..PACKET_LEN]);
        Ok(Packet {
            header: Header {
                node: (sender >> 16) as u8,
                iface: sender as u16,
                prot_id: u24_at(b, 3),
            },
            payload: Payload::decode(&payload),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let p = Packet {
            header: Header {
                node: 15,
                iface: 63,
                prot_id: 0xabcdef,
            },
            payload: Payload {
                opcode: 7,
                address: 0x1122_3344_5566_7788,
                arg1: u64::MAX,
                arg2: 1,
            },
        };
        let b = p.encode();
        assert_eq!(b[0..3], [63, 0, 15]);
        assert_eq!(b[7], 7);
        assert_eq!(Packet::decode(&b), Ok(p));
    }

    #[test]
    fn header_is_not_the_threads() {
        // Whatever the thread puts in its payload, the header comes from the driver.
        let forged = [0xffu8; PAYLOAD_LEN];
        let b = Packet::seal(
            Header {
                node: 2,
                iface: 5,
                prot_id: 1234,
            },
            &forged,
        );
        let p = Packet::decode(&b).unwrap();
        assert_eq!(
            p.header,
            Header {
                node: 2,
                iface: 5,
                prot_id: 1234
            }
        );
        assert_eq!(p.payload.encode(), forged);
    }

    #[test]
    fn rejects_malformed() {
        let b = Packet::default().encode();
        assert_eq!(Packet::decode(&b[..31]), Err(PacketError::Truncated));
        let mut bad = b;
        bad[6] = 1;
        assert_eq!(Packet::decode(&bad), Err(PacketError::Reserved(1)));
    }

    #[test]
    fn prot_id_is_24_bits() {
        let b = Packet::seal(
            Header {
                node: 0,
                iface: 0,
                prot_id: 0x0100_0001,
            },
            &[0; PAYLOAD_LEN],
        );
        assert_eq!(Packet::decode(&b).unwrap().header.prot_id, 1);
    }
}
