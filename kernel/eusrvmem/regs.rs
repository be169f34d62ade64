// SPDX-License-Identifier: GPL-2.0
//! Registers of QEMU's ivshmem device (BAR0), see QEMU `docs/specs/ivshmem-spec.rst`.

/// Size of the register BAR.
pub(crate) const BAR0_SIZE: usize = 256;
/// Peer id the fabric server assigned to this node (read-only).
pub(crate) const IVPOSITION: usize = 8;
/// Write `(peer << 16) | vector` to interrupt `vector` of `peer`.
pub(crate) const DOORBELL: usize = 12;
/// BAR holding the shared memory when the device has a doorbell (BAR1 is the MSI-X table).
pub(crate) const SHMEM_BAR: u32 = 2;

/// Doorbell register value for `(peer, vector)`; both are 16-bit fields in hardware.
pub(crate) fn doorbell_value(peer: u32, vector: u32) -> u32 {
    (peer << 16) | (vector & 0xffff)
}
