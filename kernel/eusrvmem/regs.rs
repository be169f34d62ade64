// SPDX-License-Identifier: GPL-2.0
//! The doorbell registers: BAR0 of QEMU's ivshmem device (see QEMU
//! `docs/specs/ivshmem-spec.rst`), or the register block a board's device tree names
//! `doorbell` (`dts/bindings/forth,unimem-fabric.yaml`), which has the same layout (as QEMU's
//! MMIO variant `ivshmem-flat` does).

use kernel::{
    io::{mem::DevresExclusiveIoMem, Io},
    pci,
};

/// Size of the register BAR.
pub(crate) const BAR0_SIZE: usize = 256;
/// Smallest doorbell register block of a board: INTRMASK, INTRSTATUS, IVPOSITION, DOORBELL.
pub(crate) const MMIO_SIZE: usize = 16;
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

/// Where the doorbell register is, whichever bus the fabric device came from. Both mappings
/// are device-managed: access is revoked when the device is unbound.
pub(crate) enum DoorbellRegs {
    /// BAR0 of the PCI function (`ivshmem-doorbell`).
    Pci(pci::DevresBar<BAR0_SIZE>),
    /// The `doorbell` register block of a device-tree node, claimed in the iomem tree.
    Mmio(DevresExclusiveIoMem<MMIO_SIZE>),
}

impl DoorbellRegs {
    /// Writes the doorbell register value of `(peer, vector)`; `None` once the device is gone.
    pub(crate) fn ring(&self, peer: u32, vector: u32) -> Option<()> {
        let value = doorbell_value(peer, vector);
        match self {
            Self::Pci(bar) => bar.try_access_with(|bar| bar.write32(value, DOORBELL)),
            Self::Mmio(io) => io.try_access_with(|io| io.write32(value, DOORBELL)),
        }
    }
}
