// SPDX-License-Identifier: GPL-2.0
//! The virtual cluster's fabric device: QEMU `ivshmem-doorbell` (PCI 1af4:1110). BAR0 holds
//! the registers (IVPOSITION is this node's id, DOORBELL rings a peer), BAR2 the GAS window,
//! MSI-X vectors the doorbell interrupts.

use crate::{doorbell, read_descriptor, regs, window, Bus, DeviceData, Found};
use kernel::{
    device::Core,
    dma::{Device as _, DmaMask},
    io::Io,
    pci,
    prelude::*,
};

pub(crate) struct IvshmemDriver;

kernel::pci_device_table!(
    PCI_TABLE,
    <IvshmemDriver as pci::Driver>::IdInfo,
    [(
        pci::DeviceId::from_id(pci::Vendor::REDHAT_QUMRANET, 0x1110),
        ()
    )]
);

impl pci::Driver for IvshmemDriver {
    type IdInfo = ();
    type Data<'bound> = DeviceData<'bound>;

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        _info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        pdev.enable_device_mem()?;
        pdev.set_master();
        // The emulated CDMA engine (`cdma.rs`) copies to and from any RAM page a client maps.
        // SAFETY: nothing is mapped or allocated for DMA on this device yet.
        unsafe { pdev.dma_set_mask_and_coherent(DmaMask::new::<64>())? };

        let bar = pdev.iomap_region_sized::<{ regs::BAR0_SIZE }>(0, c"unimem_eusrvmem")?;
        let node_id = bar.read32(regs::IVPOSITION);
        let regs = regs::DoorbellRegs::Pci(bar.into_devres()?);

        let phys = pdev.resource_start(regs::SHMEM_BAR)?;
        let len = pdev.resource_len(regs::SHMEM_BAR)?;
        let window = window::GasWindow::map(phys, len)?;
        let desc = read_descriptor(pdev.as_ref(), &window, c"IVPOSITION", node_id)?;

        let msix = pci::IrqTypes::default().with(pci::IrqType::MsiX);
        let vectors = pdev.alloc_irq_vectors(1, desc.vectors.clamp(1, crate::MAX_VECTORS), msix)?;
        let found = Found {
            regs,
            window,
            desc,
            node_id,
            doorbells: vectors.len(),
        };
        crate::bind(pdev.as_ref(), Bus::Pci, found, |fabric| {
            doorbell::DoorbellIrqs::request_msix(vectors, fabric)
        })
    }
}
