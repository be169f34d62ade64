// SPDX-License-Identifier: GPL-2.0
//! A board's fabric device: a device-tree node `compatible = "forth,unimem-fabric"`
//! (`dts/bindings/forth,unimem-fabric.yaml`, example `dts/unimem-node.dtsi`).
//!
//! - `reg` named `doorbell`: the doorbell register block, ivshmem's register layout (a 32-bit
//!   write of `(peer << 16) | vector` at offset 12 rings a peer); claimed and mapped.
//! - `reg` named `gas`: the GAS window (memory the FPGA/SoC exposes; not claimed, so that a
//!   NUMA module can hot-add a lent range of it as System RAM, as on PCI), with the GAS
//!   descriptor at its start.
//! - `interrupts`: doorbell vector i is interrupt i.
//! - `forth,node-id` (required): this node's id, which the PCI function reads from IVPOSITION.
//! - `forth,node-count`, `forth,ctl-size`, `forth,partition-size` (optional): what the board
//!   was built for; when present they must match the descriptor.

use crate::{doorbell, read_descriptor, regs, window, Bus, DeviceData, Found, MAX_VECTORS};
use kernel::{
    device::{
        property::{FwNode, Property, PropertyInt},
        Bound, Core, Device,
    },
    of, platform,
    prelude::*,
};

pub(crate) struct BoardDriver;

kernel::of_device_table!(
    OF_TABLE,
    <BoardDriver as platform::Driver>::IdInfo,
    [(of::DeviceId::new(c"forth,unimem-fabric"), ())]
);

/// Reads property `name`, which must hold exactly one `T`: `None` when it is absent, an error
/// (logged) when it holds something else (a 64-bit size written as one cell, say).
fn property<T: Property + PropertyInt>(
    dev: &Device,
    node: &FwNode,
    name: &CStr,
) -> Result<Option<T>> {
    if !node.property_present(name) {
        return Ok(None);
    }
    match (
        node.property_count_elem::<T>(name),
        node.property_read::<T>(name).optional(),
    ) {
        (Ok(1), Some(value)) => Ok(Some(value)),
        _ => {
            dev_err!(
                dev,
                "property '{}' is malformed: it must be one {}-bit value\n",
                name,
                8 * core::mem::size_of::<T>()
            );
            Err(EINVAL)
        }
    }
}

/// Checks an optional size or count of the device tree against the descriptor's value.
fn check_matches(dev: &Device, name: &CStr, dt: Option<u64>, descriptor: u64) -> Result {
    match dt {
        Some(v) if v != descriptor => {
            dev_err!(
                dev,
                "{} is {:#x} in the device tree but {:#x} in the GAS descriptor\n",
                name,
                v,
                descriptor
            );
            Err(EINVAL)
        }
        _ => Ok(()),
    }
}

impl platform::Driver for BoardDriver {
    type IdInfo = ();
    type Data<'bound> = DeviceData<'bound>;

    const OF_ID_TABLE: Option<of::IdTable<Self::IdInfo>> = Some(&OF_TABLE);

    fn probe<'bound>(
        pdev: &'bound platform::Device<Core<'_>>,
        _info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        let dev: &'bound Device<Bound> = pdev.as_ref();
        let node = dev.fwnode().ok_or_else(|| {
            dev_err!(dev, "no device-tree node\n");
            ENODEV
        })?;
        let node_id: u32 = property(dev, node, c"forth,node-id")?.ok_or_else(|| {
            dev_err!(
                dev,
                "property 'forth,node-id' (this node's id) is missing\n"
            );
            EINVAL
        })?;
        let node_count: Option<u32> = property(dev, node, c"forth,node-count")?;
        let ctl_size: Option<u64> = property(dev, node, c"forth,ctl-size")?;
        let partition_size: Option<u64> = property(dev, node, c"forth,partition-size")?;

        let gas = pdev.resource_by_name(c"gas").ok_or_else(|| {
            dev_err!(dev, "no 'gas' entry in reg (reg-names)\n");
            ENODEV
        })?;
        let (phys, len) = (gas.start(), gas.size());
        let window = window::GasWindow::map(phys, len).inspect_err(|_| {
            dev_err!(dev, "cannot map the GAS window {:#x}+{:#x}\n", phys, len);
        })?;
        let desc = read_descriptor(dev, &window, c"forth,node-id", node_id)?;
        check_matches(
            dev,
            c"forth,node-count",
            node_count.map(u64::from),
            desc.node_count.into(),
        )?;
        check_matches(dev, c"forth,ctl-size", ctl_size, desc.ctl_size)?;
        check_matches(
            dev,
            c"forth,partition-size",
            partition_size,
            desc.partition_size,
        )?;

        let request = pdev.io_request_by_name(c"doorbell").ok_or_else(|| {
            dev_err!(dev, "no 'doorbell' entry in reg (reg-names)\n");
            ENODEV
        })?;
        // Claimed in the iomem tree (kernel patch 0014: 7.3's exclusive mapping claimed it below
        // the device's own resource, which a device-tree device does not put in the tree).
        let mmio = request
            .iomap_exclusive_sized::<{ regs::MMIO_SIZE }>()
            .inspect_err(|e| {
                dev_err!(
                    dev,
                    "cannot claim and map the doorbell registers (at least {} bytes): {:?}\n",
                    regs::MMIO_SIZE,
                    e
                );
            })?;
        let regs = regs::DoorbellRegs::Mmio(mmio.into_devres()?);

        // One interrupt per doorbell vector, as many as the descriptor has and the node lists.
        let wanted = desc.vectors.clamp(1, MAX_VECTORS);
        let mut lines = KVec::with_capacity(wanted as usize, GFP_KERNEL)?;
        for index in 0..wanted {
            match pdev.optional_irq_by_index(index) {
                Ok(line) => lines.push(line, GFP_KERNEL)?,
                Err(e) if e == ENXIO => break,
                Err(e) => return Err(e),
            }
        }
        if lines.is_empty() {
            dev_err!(dev, "no doorbell interrupts in the device tree\n");
            return Err(ENODEV);
        }
        let found = Found {
            regs,
            window,
            desc,
            node_id,
            doorbells: lines.len(),
        };
        crate::bind(dev, Bus::DeviceTree, found, |fabric| {
            doorbell::DoorbellIrqs::request_lines(lines, fabric)
        })
    }
}
