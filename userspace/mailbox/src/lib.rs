//! Safe user-space access to `/dev/unimem_mailbox`, the virtualized mailbox and packetizer of a
//! unimem node (seed 000, 2.3.2): a thread allocates an interface pair, sends 25-byte payloads
//! to any (node, interface) and receives 32-byte packets whose 7-byte header the *sending
//! node's driver* wrote (sender node, interface and protection id). Privileged services also
//! exchange 64-bit kernel messages addressed to a service number.
//!
//! The ABI (ioctl numbers, argument structs, packet format) is defined once in
//! `unimem_wire::{mailbox, packet}`; this crate only wraps it.
//!
//! ```no_run
//! use unimem_mailbox::{Mailbox, Payload};
//! let mb = Mailbox::open()?;
//! let me = mb.alloc()?;
//! mb.send(me.node, me.iface, &Payload { opcode: 1, ..Default::default() })?;
//! let packet = mb.recv()?;
//! assert_eq!(u32::from(packet.header.iface), me.iface);
//! # Ok::<(), unimem_mailbox::Error>(())
//! ```

pub mod cli;
mod error;
pub mod fabric;
mod fixed_map;
pub mod ioctl;
mod mailbox;
pub mod stats;

pub use error::{hint, Error, Op, Result};
pub use mailbox::{Area, Mailbox, DEVICE_PATH};
pub use nix::errno::Errno;
pub use unimem_wire::mailbox::{service, AllocInfo, Kmsg, SendArgs, INTERFACES};
pub use unimem_wire::packet::{
    Header, Packet, Payload, HEADER_LEN, MAX_24, PACKET_LEN, PAYLOAD_LEN,
};
