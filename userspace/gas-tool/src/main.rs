//! `unimem-gas`: inspect this node's GAS view and read, write or ring any node through
//! `/dev/eusrvmem`.

use anyhow::{bail, Context, Result};
use clap::{CommandFactory, Parser, Subcommand};
use unimem_gas::device::{self, Device};
use unimem_gas::pattern;
use unimem_gas::sysfs::{self, FabricView};
use unimem_wire::gas::GasDescriptor;

#[derive(Parser)]
#[command(
    version,
    about = "Use the unimem global address space through /dev/eusrvmem"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print this node's id, the node count, the layout and doorbell counters (gas_phys, a
    /// physical address, for root only).
    Info {
        /// One JSON object: node_id, node_count, vectors, gas_phys (hex string, or null when
        /// not root), gas_size, ctl_size, partition_size (bytes), doorbell_counts (array),
        /// partitions (array of {node, offset, size}).
        #[arg(long)]
        json: bool,
    },
    /// Fill a range of a node's partition with a seeded pattern.
    Write(RangeArgs),
    /// Check a range of a node's partition against a seeded pattern (exit 1 on mismatch).
    Verify(RangeArgs),
    /// Check that a range of a node's partition reads as zeros (exit 1 at the first byte that
    /// does not): lent memory comes back wiped.
    Zeroed(ZeroArgs),
    /// Keep a range of a node's partition mapped and read a byte of every 64 KiB of it every
    /// 10 ms for a while: a process using the window. Unbinding the fabric device, or the range
    /// becoming this node's RAM, revokes the mapping: the process dies of SIGBUS.
    Watch {
        /// Node whose partition is read.
        #[arg(long)]
        node: u32,
        /// Byte offset inside the partition.
        #[arg(long, default_value_t = 0)]
        offset: u64,
        /// Length in bytes.
        #[arg(long, default_value_t = 4096)]
        len: u64,
        /// How long to keep reading.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
    },
    /// Raise a doorbell interrupt on a node.
    Ring {
        /// Destination node id.
        #[arg(long)]
        node: u32,
        /// Doorbell vector.
        #[arg(long, default_value_t = 0)]
        vector: u32,
    },
    /// Print the doorbell interrupt count of one vector (or all, space separated).
    Count {
        #[arg(long)]
        vector: Option<usize>,
    },
    /// Write a GAS descriptor (what the fabric server puts at the start of the region) to a
    /// file: for a board whose window no fabric server initialises, and for the device-tree
    /// test (scripts/arm64-dt-test.sh), which loads it into guest memory. Prints the layout.
    Descriptor(DescriptorArgs),
}

#[derive(clap::Args)]
struct RangeArgs {
    /// Node whose partition is accessed.
    #[arg(long)]
    node: u32,
    /// Byte offset inside the partition.
    #[arg(long, default_value_t = 0)]
    offset: u64,
    /// Length in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    len: u64,
    /// Pattern seed.
    #[arg(long)]
    seed: u64,
}

#[derive(clap::Args)]
struct DescriptorArgs {
    /// Number of nodes (partitions).
    #[arg(long)]
    nodes: u32,
    /// Doorbell vectors per node.
    #[arg(long, default_value_t = 4)]
    vectors: u32,
    /// Size of the whole region (the window) in bytes.
    #[arg(long)]
    region_size: u64,
    /// Bytes before partition 0 (descriptor included).
    #[arg(long, default_value_t = 2 << 20)]
    ctl_size: u64,
    /// Generation (the fabric server uses a new one at every start).
    #[arg(long, default_value_t = 1)]
    generation: u64,
    /// File to write the 64 bytes to.
    #[arg(long)]
    out: std::path::PathBuf,
}

#[derive(clap::Args)]
struct ZeroArgs {
    /// Node whose partition is read.
    #[arg(long)]
    node: u32,
    /// Byte offset inside the partition.
    #[arg(long, default_value_t = 0)]
    offset: u64,
    /// Length in bytes.
    #[arg(long)]
    len: u64,
}

fn main() -> Result<()> {
    unimem_clidoc::generate_if_asked(Cli::command, "1");
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    match Cli::parse().cmd {
        Cmd::Info { json } => {
            let info = unimem_gas::info::Info::load_in(&sysfs::sysfs_dir())?;
            if json {
                println!("{}", info.json());
            } else {
                print!("{}", info.text());
            }
        }
        Cmd::Write(r) => {
            let mut map = map_range(r.node, r.offset, r.len)?;
            pattern::fill(map.as_mut_slice(), r.seed, r.offset);
            log::info!(
                "wrote {} bytes (seed {}) at node {} offset {:#x}",
                r.len,
                r.seed,
                r.node,
                r.offset
            );
        }
        Cmd::Verify(r) => {
            let mut map = map_range(r.node, r.offset, r.len)?;
            if let Some((at, got, want)) =
                pattern::first_mismatch(map.as_mut_slice(), r.seed, r.offset)
            {
                bail!("mismatch in node {}'s partition at offset {at:#x}: found {got:#04x}, expected {want:#04x}", r.node);
            }
            println!(
                "verified {} bytes (seed {}) at node {} offset {:#x}",
                r.len, r.seed, r.node, r.offset
            );
        }
        Cmd::Zeroed(z) => {
            let mut map = map_range(z.node, z.offset, z.len)?;
            if let Some(at) = map.as_mut_slice().iter().position(|&b| b != 0) {
                bail!(
                    "node {}'s partition is not zero at offset {:#x}",
                    z.node,
                    z.offset + at as u64
                );
            }
            println!(
                "{} bytes at node {} offset {:#x} are zero",
                z.len, z.node, z.offset
            );
        }
        Cmd::Watch {
            node,
            offset,
            len,
            seconds,
        } => watch(node, offset, len, seconds)?,
        Cmd::Ring { node, vector } => Device::open()?.ring(node, vector)?,
        Cmd::Descriptor(d) => descriptor(&d)?,
        Cmd::Count { vector } => {
            let counts = sysfs::doorbell_counts()?;
            match vector {
                Some(v) => match counts.get(v) {
                    Some(c) => println!("{c}"),
                    None => bail!("vector {v} does not exist ({} vectors)", counts.len()),
                },
                None => println!(
                    "{}",
                    counts
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            }
        }
    }
    Ok(())
}

fn watch(node: u32, offset: u64, len: u64, seconds: u64) -> Result<()> {
    use std::time::{Duration, Instant};
    let mut map = map_range(node, offset, len)?;
    println!("watching {len} bytes of node {node}'s partition at {offset:#x} for {seconds} s");
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut sum = 0u64;
    while Instant::now() < end {
        for b in map.as_mut_slice().iter().step_by(64 << 10) {
            // SAFETY: `b` is a byte of the live mapping; volatile, so every pass really touches
            // the mapping.
            sum = sum.wrapping_add(u64::from(unsafe { std::ptr::read_volatile(b) }));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("read for {seconds} s (checksum {sum})");
    Ok(())
}

fn descriptor(d: &DescriptorArgs) -> Result<()> {
    let desc = GasDescriptor::layout(d.nodes, d.vectors, d.region_size, d.ctl_size, d.generation)
        .map_err(|e| {
        anyhow::anyhow!(
            "--nodes {} --region-size {} --ctl-size {}: no valid layout ({e:?})",
            d.nodes,
            d.region_size,
            d.ctl_size
        )
    })?;
    std::fs::write(&d.out, desc.encode())
        .with_context(|| format!("writing {}", d.out.display()))?;
    println!(
        "node_count {} vectors {} region_size {} ctl_size {} partition_size {} generation {:#x}",
        desc.node_count,
        desc.vectors,
        desc.region_size,
        desc.ctl_size,
        desc.partition_size,
        desc.generation
    );
    Ok(())
}

fn map_range(node: u32, offset: u64, len: u64) -> Result<device::Mapping> {
    let view = FabricView::load()?;
    let gas_offset = view.locate(node, offset, len)?;
    Device::open()?.map(gas_offset, usize::try_from(len)?)
}
