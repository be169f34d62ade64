// SPDX-License-Identifier: GPL-2.0
//! unimem eusrvmem: the GAS window driver of the virtual Unimem cluster.
//!
//! Binds the fabric device (QEMU `ivshmem-doorbell`, PCI 1af4:1110), reads the GAS descriptor
//! the fabric server wrote at the start of the shared region, and exposes the node's view:
//! `/sys/class/misc/eusrvmem/` (ids, layout, doorbell counters), `/dev/eusrvmem` (privileged
//! mmap of any node's partition, doorbell ioctl) and a C ABI for other unimem modules.

use core::sync::atomic::AtomicBool;
use kernel::{
    device::Core,
    io::Io,
    miscdevice::{MiscDeviceOptions, MiscDeviceRegistration},
    pci,
    prelude::*,
    sync::Arc,
};

mod chardev;
mod clients;
mod doorbell;
mod fabric;
#[path = "../include/privilege.rs"]
mod privilege;
mod regs;
// The seam functions are `pub` because other modules link against them (exports.c).
#[allow(unreachable_pub)]
mod seam;
mod sysfs;
#[path = "../include/sysfs_group.rs"]
// The /sys/kernel directories (`KernelDir`) are for the counters of other modules.
#[allow(dead_code)]
mod sysfs_group;
mod window;

#[path = "../include/unimem_fabric.rs"]
#[allow(dead_code, unreachable_pub)]
mod fabric_api;
#[path = "../include/wire.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire;
// The wire files name each other `crate::gas`, `crate::packet`, `crate::mailbox`.
#[allow(unused_imports)]
use wire::{gas, mailbox, packet};

use gas::{GasDescriptor, DESCRIPTOR_LEN, MAX_NODES};

/// Hard limit on doorbell vectors per node (the fabric server's own limit).
const MAX_VECTORS: u32 = 64;

struct EusrvmemDriver;

/// Per-device state. Fields drop in declaration order, which is the teardown order: unpublish
/// (no new users), revoke the users there are (client modules stop using the window, user
/// mappings are zapped), remove `/dev/eusrvmem` and its sysfs attributes, free IRQs, then the
/// fabric reference (the window is unmapped when the last holder lets go).
struct DeviceData<'bound> {
    _published: fabric::Published,
    _revoker: clients::Revoker,
    _misc: Pin<KBox<MiscDeviceRegistration<chardev::GasFile>>>,
    _irqs: doorbell::DoorbellIrqs<'bound>,
    _fabric: Arc<fabric::Fabric>,
}

kernel::pci_device_table!(
    PCI_TABLE,
    <EusrvmemDriver as pci::Driver>::IdInfo,
    [(
        pci::DeviceId::from_id(pci::Vendor::REDHAT_QUMRANET, 0x1110),
        ()
    )]
);

impl pci::Driver for EusrvmemDriver {
    type IdInfo = ();
    type Data<'bound> = DeviceData<'bound>;

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        _info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        pdev.enable_device_mem()?;
        pdev.set_master();

        let bar = pdev.iomap_region_sized::<{ regs::BAR0_SIZE }>(0, c"unimem_eusrvmem")?;
        let node_id = bar.read32(regs::IVPOSITION);
        let regs = bar.into_devres()?;

        let phys = pdev.resource_start(regs::SHMEM_BAR)?;
        let len = pdev.resource_len(regs::SHMEM_BAR)?;
        let window = window::GasWindow::map(phys, len)?;
        let mut raw = [0u8; DESCRIPTOR_LEN];
        window.read(0, &mut raw)?;
        let desc = GasDescriptor::decode(&raw).map_err(|e| {
            dev_err!(
                pdev,
                "no valid GAS descriptor at the start of the region: {:?}\n",
                e
            );
            EINVAL
        })?;
        if desc.region_size > len || node_id >= desc.node_count || desc.node_count > MAX_NODES {
            dev_err!(
                pdev,
                "descriptor does not fit this device: node {} of {}, region {} > BAR {}\n",
                node_id,
                desc.node_count,
                desc.region_size,
                len
            );
            return Err(EINVAL);
        }

        let msix = pci::IrqTypes::default().with(pci::IrqType::MsiX);
        let vectors = pdev.alloc_irq_vectors(1, desc.vectors.clamp(1, MAX_VECTORS), msix)?;
        let mut doorbells = KVec::with_capacity(vectors.len(), GFP_KERNEL)?;
        for v in 0..vectors.len() {
            doorbells.push(doorbell::Doorbell::new(v as u32), GFP_KERNEL)?;
        }
        let fabric = Arc::pin_init(
            pin_init!(fabric::Fabric {
                regs,
                window,
                desc,
                node_id,
                doorbells,
                live: AtomicBool::new(true),
                users <- clients::Users::new(),
            }),
            GFP_KERNEL,
        )?;
        let irqs = doorbell::DoorbellIrqs::request(vectors, &fabric)?;

        let published = fabric::Published::new(fabric.clone()).inspect_err(|_| {
            dev_err!(
                pdev,
                "another fabric device is already bound; only one is supported\n"
            );
        })?;
        let misc = KBox::pin_init(
            MiscDeviceRegistration::register_with_groups(
                MiscDeviceOptions { name: c"eusrvmem" },
                sysfs::groups(),
            ),
            GFP_KERNEL,
        )?;

        dev_info!(
            pdev,
            "node {} of {}: GAS {:#x}+{:#x}, partitions of {:#x} after {:#x}, {} doorbells\n",
            node_id,
            desc.node_count,
            phys,
            len,
            desc.partition_size,
            desc.ctl_size,
            fabric.doorbells.len()
        );
        Ok(DeviceData {
            _published: published,
            _revoker: clients::Revoker(fabric.clone()),
            _misc: misc,
            _irqs: irqs,
            _fabric: fabric,
        })
    }
}

kernel::module_pci_driver! {
    type: EusrvmemDriver,
    name: "unimem_eusrvmem",
    authors: ["unimem developers"],
    description: "unimem GAS window driver: node id, partitions, /dev/eusrvmem mmap, doorbells",
    license: "GPL v2",
}
