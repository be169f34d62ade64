// SPDX-License-Identifier: GPL-2.0
//! unimem eusrvmem: the GAS window driver of the virtual Unimem cluster and of a board.
//!
//! Binds the fabric device, reads the GAS descriptor at the start of the shared region, and
//! exposes the node's view: `/sys/class/misc/eusrvmem/` (ids, layout, doorbell counters),
//! `/dev/eusrvmem` (privileged mmap of any node's partition, doorbell ioctl) and a C ABI for
//! other unimem modules. The fabric device is either the virtual cluster's PCI function (QEMU
//! `ivshmem-doorbell`, 1af4:1110; `ivshmem.rs`) or a board's device-tree node
//! (`forth,unimem-fabric`; `board.rs`): one module registers both drivers, and each turns what
//! its bus gives into the same [`fabric::Fabric`] through [`bind`].

use core::sync::atomic::AtomicBool;
use kernel::{
    device::{Bound, Device},
    driver,
    miscdevice::{MiscDeviceOptions, MiscDeviceRegistration},
    pci, platform,
    prelude::*,
    sync::Arc,
    InPlaceModule, ModuleMetadata, ThisModule,
};

mod board;
mod cdma;
mod chardev;
mod clients;
mod doorbell;
mod fabric;
#[path = "../common/file_maps.rs"]
mod file_maps;
mod heartbeat;
mod ivshmem;
#[path = "../common/lease_ticker.rs"]
mod lease_ticker;
#[path = "../common/privilege.rs"]
mod privilege;
#[path = "../common/published.rs"]
mod published;
mod regs;
// The seam functions are `pub` because other modules link against them (exports.c).
#[allow(unreachable_pub)]
mod seam;
mod sysfs;
#[path = "../common/sysfs_group.rs"]
mod sysfs_group;
mod window;

// The shared layer (kernel/README.md): the wire formats and the fabric seam's declarations.
#[path = "../common/exporter.rs"]
mod common;
use common::*;

use gas::{GasDescriptor, DESCRIPTOR_LEN, MAX_NODES};

/// Hard limit on doorbell vectors per node (the fabric server's own limit).
const MAX_VECTORS: u32 = 64;

/// Per-device state. Fields drop in declaration order, which is the teardown order: unpublish
/// (no new users), revoke the users there are (client modules stop using the window, user
/// mappings are zapped), remove `/dev/eusrvmem` and its sysfs attributes, free IRQs, then the
/// fabric reference (the window is unmapped when the last holder lets go).
struct DeviceData<'bound> {
    /// First: the heartbeat says "stopped" while the device is still live.
    _heartbeat: heartbeat::Beating,
    _published: published::Published<fabric::Fabric>,
    _revoker: clients::Revoker,
    /// After the revoker: clients release their channels when they are revoked.
    _cdma: Option<kernel::dmaengine::provider::Registration<cdma::Cdma>>,
    _misc: Pin<KBox<MiscDeviceRegistration<chardev::GasFile>>>,
    _irqs: doorbell::DoorbellIrqs<'bound>,
    _fabric: Arc<fabric::Fabric>,
}

/// Reads the GAS descriptor at the start of `window` and checks it against the device: the
/// region fits the window, and node `node_id` (read from `id_source`) is one of its nodes.
fn read_descriptor(
    dev: &Device<Bound>,
    window: &window::GasWindow,
    id_source: &CStr,
    node_id: u32,
) -> Result<GasDescriptor> {
    let mut raw = [0u8; DESCRIPTOR_LEN];
    window.read(0, &mut raw).inspect_err(|_| {
        dev_err!(
            dev,
            "a window of {} bytes cannot hold the GAS descriptor\n",
            window.size()
        );
    })?;
    let desc = GasDescriptor::decode(&raw).map_err(|e| {
        dev_err!(
            dev,
            "no valid GAS descriptor at the start of the region: {:?}\n",
            e
        );
        EINVAL
    })?;
    if desc.region_size > window.size() as u64 {
        dev_err!(
            dev,
            "the GAS window {:#x}+{:#x} is smaller than the descriptor's region ({:#x} bytes)\n",
            window.phys(),
            window.size(),
            desc.region_size
        );
        return Err(EINVAL);
    }
    if desc.node_count > MAX_NODES || node_id >= desc.node_count {
        dev_err!(
            dev,
            "{} {} is not a node of the GAS descriptor ({} nodes)\n",
            id_source,
            node_id,
            desc.node_count
        );
        return Err(EINVAL);
    }
    Ok(desc)
}

/// Channels of the emulated CDMA engine: `cdma_channels`, or one per CPU if negative.
fn cdma_channels() -> usize {
    let n = *module_parameters::cdma_channels.value_ref();
    let n = usize::try_from(n).unwrap_or(kernel::cpu::nr_cpu_ids() as usize);
    n.min(cdma::MAX_CHANNELS)
}

/// How the fabric device was found, for the log.
#[derive(Clone, Copy)]
enum Bus {
    Pci,
    DeviceTree,
}

/// What a bus driver found, checked: the doorbell registers, the mapped window, its
/// descriptor, this node's id and how many doorbells (IRQs) it can have.
struct Found {
    regs: regs::DoorbellRegs,
    window: window::GasWindow,
    desc: GasDescriptor,
    node_id: u32,
    doorbells: usize,
}

/// Builds the fabric state from what a bus driver found and publishes it: `request_irqs`
/// registers the IRQ handlers of its doorbells on the bus's interrupts. The same for both buses.
fn bind<'bound>(
    dev: &'bound Device<Bound>,
    bus: Bus,
    found: Found,
    request_irqs: impl FnOnce(&Arc<fabric::Fabric>) -> Result<doorbell::DoorbellIrqs<'bound>>,
) -> Result<DeviceData<'bound>> {
    let Found {
        regs,
        window,
        desc,
        node_id,
        doorbells: count,
    } = found;
    let mut doorbells = KVec::with_capacity(count, GFP_KERNEL)?;
    for v in 0..count {
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
    let irqs = request_irqs(&fabric)?;

    let published = fabric::publish(fabric.clone()).inspect_err(|_| {
        dev_err!(
            dev,
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

    // The virtual cluster's card gets the emulated engine; a board has its own CDMA.
    let cdma = match (bus, cdma_channels()) {
        (Bus::Pci, n) if n > 0 => Some(
            cdma::register(
                dev,
                &fabric,
                n,
                *module_parameters::cdma_fail_every.value_ref(),
                *module_parameters::cdma_hardirq.value_ref(),
            )
            .inspect_err(|e| {
                dev_err!(dev, "cannot register the emulated CDMA engine: {:?}\n", e);
            })?,
        ),
        _ => None,
    };
    let how = match bus {
        Bus::Pci => "",
        Bus::DeviceTree => "bound through the device tree: ",
    };
    dev_info!(
        dev,
        "{}node {} of {}: GAS {:#x}+{:#x}, partitions of {:#x} after {:#x}, {} doorbells\n",
        how,
        node_id,
        desc.node_count,
        fabric.window.phys(),
        fabric.window.size(),
        desc.partition_size,
        desc.ctl_size,
        fabric.doorbells.len()
    );
    if let Some(c) = &cdma {
        dev_info!(
            dev,
            "emulated CDMA engine: {} DMA_MEMCPY channel(s)\n",
            c.channels()
        );
    }
    let heartbeat = heartbeat::Beating::start(fabric.clone())?;
    Ok(DeviceData {
        _heartbeat: heartbeat,
        _published: published,
        _revoker: clients::Revoker(fabric.clone()),
        _cdma: cdma,
        _misc: misc,
        _irqs: irqs,
        _fabric: fabric,
    })
}

/// The module: the PCI driver (virtual cluster) and the platform driver (device tree) under
/// one name. Unloading unregisters the PCI driver first, then the platform driver; each unbinds
/// its device on the way.
#[pin_data]
struct EusrvmemModule {
    #[pin]
    _pci: driver::Registration<pci::Adapter<ivshmem::IvshmemDriver>>,
    #[pin]
    _board: driver::Registration<platform::Adapter<board::BoardDriver>>,
}

impl InPlaceModule for EusrvmemModule {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            _pci <- driver::Registration::new(<Self as ModuleMetadata>::NAME, module),
            _board <- driver::Registration::new(<Self as ModuleMetadata>::NAME, module),
        })
    }
}

module! {
    type: EusrvmemModule,
    name: "unimem_eusrvmem",
    authors: ["unimem developers"],
    description: "unimem GAS window driver: node id, partitions, /dev/eusrvmem mmap, doorbells",
    license: "GPL v2",
    params: {
        cdma_channels: i32 {
            default: -1,
            description: "DMA_MEMCPY channels of the virtual cluster's emulated CDMA engine (-1: one per CPU, at most 16; 0: none)",
        },
        cdma_fail_every: u32 {
            default: 0,
            description: "For tests of clients' error paths: the emulated CDMA engine fails every Nth copy (0: none)",
        },
        cdma_hardirq: bool {
            default: false,
            description: "For tests of clients' completion paths: the emulated CDMA engine calls completion callbacks in hard interrupt context, as a board's engine may (default: in process context)",
        },
    },
}
