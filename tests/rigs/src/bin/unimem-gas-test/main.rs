//! `unimem-gas-test`: what `unimem-gas` used to carry for the tests only. `scribble` is chaos:
//! random bytes over a node's mailbox rings, as a hostile or broken peer would write them;
//! `without-admin` runs a command without CAP_SYS_ADMIN, as root in a container would be. No
//! operator of a real cluster runs either, so they live here, outside the installed tools, under
//! their former subcommand names.

mod scribble;
mod without_admin;

use anyhow::Result;
use clap::{Parser, Subcommand};
use scribble::{Plan, Rng, Target};
use std::time::{Duration, Instant};
use unimem_gas::device::Device;
use unimem_gas::sysfs::FabricView;
use unimem_wire::mailbox::{layout, DOORBELL_VECTOR};

/// Test rig: chaos on the GAS window through /dev/eusrvmem, and a helper of the tests.
#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Chaos test: write random bytes over a node's mailbox rings (indices, slots, forged
    /// kernel messages) for a while, ringing its mailbox doorbell so it looks. The node must
    /// stay up and count what it drops. Destroys whatever the node has queued.
    Scribble(ScribbleArgs),
    /// Run a command as the same user without CAP_SYS_ADMIN (dropped from the bounding set, so
    /// uid 0 does not get it back on exec), as root in a container would be. For tests.
    WithoutAdmin {
        /// The command and its arguments.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
}

#[derive(clap::Args)]
struct ScribbleArgs {
    /// Target node.
    #[arg(long)]
    node: u32,
    /// Only the mailbox rings (the default).
    #[arg(long, conflicts_with = "all_partition")]
    rings: bool,
    /// The rings and the first 64 MiB of the partition beyond them (destroys lent memory
    /// there: only for a node that lends nothing).
    #[arg(long)]
    all_partition: bool,
    /// How long to scribble.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Seed of the random bytes (runs are repeatable up to timing).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Milliseconds of each chase (one ring's tail kept a full ring ahead of its head) between
    /// one-second random phases; 0: random only.
    #[arg(long, default_value_t = 2000)]
    chase_ms: u64,
}

fn main() -> Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    match Cli::parse().cmd {
        Cmd::Scribble(a) => run_scribble(&a),
        Cmd::WithoutAdmin { command } => without_admin::exec(&command),
    }
}

fn run_scribble(a: &ScribbleArgs) -> Result<()> {
    let view = FabricView::load()?;
    let target = if a.all_partition {
        Target::AllPartition
    } else {
        Target::Rings
    };
    let reserved = layout::RESERVED as u64;
    let len = match target {
        Target::Rings => reserved,
        Target::AllPartition => view.partition_size.min(reserved + (64 << 20)),
    };
    let dev = Device::open()?;
    let mut map = dev.map(view.locate(a.node, 0, len)?, usize::try_from(len)?)?;
    let area = map.as_mut_slice();
    let mut rng = Rng::new(a.seed);
    let deadline = Instant::now() + Duration::from_secs(a.seconds);
    let mut bell_errors = 0u64;
    // SAFETY: `area` is the live mapping of `len` bytes at the start of the partition (page
    // aligned); the scribbler only uses volatile accesses inside it.
    let tally = unsafe {
        scribble::scribble(
            area.as_mut_ptr(),
            area.len(),
            &Plan {
                target,
                nodes: view.node_count,
                chase: Duration::from_millis(a.chase_ms),
                deadline,
            },
            &mut rng,
            || {
                if dev.ring(a.node, DOORBELL_VECTOR).is_err() {
                    bell_errors += 1;
                }
            },
        )
    };
    println!(
        "scribbled node {} for {} s (seed {}): {:?}, {} doorbell errors",
        a.node, a.seconds, a.seed, tally, bell_errors
    );
    Ok(())
}
