//! `unimem-dht`: the DHT on GSAS from the command line: create a table, put, get and delete
//! keys, count what a table holds, destroy it. The concurrency checker, the denial check,
//! `hold` and the seed's benchmark workloads are the test rig `unimem-dht-test` (tests/rigs),
//! which `make install` does not ship.

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};
use dht::cli::Ctx;
use dht::Dht;
use gsas::cli::{parse_u64, HandleArgs};
use gsas::json::Obj;

#[derive(Parser)]
#[command(
    name = "unimem-dht",
    version,
    about = "A distributed hash table on GSAS (seed 000 section 2.5): create tables over nodes, put/get/delete 128-bit values under 64-bit keys",
    after_help = dht::cli::TABLE_HELP
)]
struct Cli {
    #[command(flatten)]
    handle: HandleArgs,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// dhtCreate: a table for about CAPACITY keys over NODES; prints its root address.
    Create {
        /// Nodes holding the first level, in order (comma-separated), e.g. 0,1,2,3.
        #[arg(long, value_delimiter = ',', required = true)]
        nodes: Vec<u16>,
        #[arg(long)]
        capacity: u64,
        /// Node of the root page (default: the first of --nodes).
        #[arg(long)]
        root_node: Option<u16>,
        #[arg(long)]
        json: bool,
    },
    /// dhtPut: KEY gets VALUE (128 bits: VALUE is the low word, --high the high word).
    Put {
        #[arg(value_parser = parse_u64)]
        root: u64,
        #[arg(value_parser = parse_u64)]
        key: u64,
        #[arg(value_parser = parse_u64)]
        value: u64,
        #[arg(long, value_parser = parse_u64, default_value_t = 0)]
        high: u64,
    },
    /// dhtGet: prints the value (low and high word), or `invalid` if the key is absent.
    Get {
        #[arg(value_parser = parse_u64)]
        root: u64,
        #[arg(value_parser = parse_u64)]
        key: u64,
        #[arg(long)]
        json: bool,
    },
    /// dhtDelete: prints `deleted` or `absent`.
    Delete {
        #[arg(value_parser = parse_u64)]
        root: u64,
        #[arg(value_parser = parse_u64)]
        key: u64,
    },
    /// The table's layout and what it holds (read while nobody writes for exact counts).
    Stats {
        #[arg(value_parser = parse_u64)]
        root: u64,
        #[arg(long)]
        json: bool,
    },
    /// dhtDestroy: frees the table (when no process uses it any more).
    Destroy {
        #[arg(value_parser = parse_u64)]
        root: u64,
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    unimem_clidoc::generate_if_asked(Cli::command, "1");
    let cli = Cli::parse();
    gsas::cli::main_with("unimem-dht", || run(cli))
}

fn hex128(v: u128) -> String {
    format!("{:#x} {:#x}", v as u64, (v >> 64) as u64)
}

fn run(cli: Cli) -> Result<i32> {
    let ctx = Ctx(cli.handle.ctx()?);
    match cli.cmd {
        Cmd::Create {
            nodes,
            capacity,
            root_node,
            json,
        } => {
            let root_node = root_node.or(nodes.first().copied()).unwrap_or(0);
            let t = Dht::create(ctx.gsas()?, &nodes, capacity, root_node)?;
            let l = t.layout();
            if json {
                println!(
                    "{}",
                    Obj::new()
                        .str("root", &format!("{:#x}", l.root))
                        .num("entries_per_node", l.per_node)
                        .nums(
                            "nodes",
                            &l.nodes().iter().map(|&n| u64::from(n)).collect::<Vec<_>>()
                        )
                        .num("tree", t.gsas().prot_id())
                );
            } else {
                println!("{:#x}", l.root);
            }
            Ok(0)
        }
        Cmd::Put {
            root,
            key,
            value,
            high,
        } => {
            ctx.open(root)?
                .put(key, u128::from(value) | u128::from(high) << 64)?;
            Ok(0)
        }
        Cmd::Get { root, key, json } => {
            let v = ctx.open(root)?.get(key)?;
            match (v, json) {
                (Some(v), true) => println!(
                    "{}",
                    Obj::new()
                        .bool("found", true)
                        .str("low", &format!("{:#x}", v as u64))
                        .str("high", &format!("{:#x}", (v >> 64) as u64))
                ),
                (None, true) => println!("{}", Obj::new().bool("found", false)),
                (Some(v), false) => println!("{}", hex128(v)),
                (None, false) => println!("invalid"),
            }
            Ok(0)
        }
        Cmd::Delete { root, key } => {
            let found = ctx.open(root)?.delete(key)?;
            println!("{}", if found { "deleted" } else { "absent" });
            Ok(0)
        }
        Cmd::Stats { root, json } => stats(&ctx, root, json),
        Cmd::Destroy { root, json } => {
            let d = ctx.open(root)?.destroy()?;
            if json {
                println!(
                    "{}",
                    Obj::new()
                        .num("containers", d.containers)
                        .num("malformed", d.malformed)
                        .num("free_errors", d.free_errors)
                        .num("unlinked", d.unlinked)
                );
            } else {
                println!(
                    "destroyed {root:#x}: {} containers freed, {} unlinked containers freed, {} malformed entries skipped, {} frees failed",
                    d.containers, d.unlinked, d.malformed, d.free_errors
                );
            }
            Ok(if d.free_errors == 0 { 0 } else { 1 })
        }
    }
}

fn stats(ctx: &Ctx, root: u64, json: bool) -> Result<i32> {
    let t = ctx.open(root)?;
    let s = t.scan()?;
    let l = t.layout();
    let slices: Vec<String> = l.slices.iter().map(|s| format!("{s:#x}")).collect();
    let layout = format!(
        "--per-node {} --seeds {:#x},{:#x} --slices {}",
        l.per_node,
        l.seed1,
        l.seed2,
        slices.join(",")
    );
    if json {
        println!(
            "{}",
            Obj::new()
                .str("root", &format!("{root:#x}"))
                .num("entries", s.entries)
                .num("keys", s.keys())
                .num("direct", s.direct)
                .num("containers", s.indirect)
                .num("in_containers", s.in_containers)
                .num("deleted", s.deleted)
                .num("locked", s.locked)
                .num("malformed", s.malformed)
                .num("capacity", l.capacity)
                .str("layout", &layout)
        );
    } else {
        println!(
            "table {root:#x}: {} first-level entries ({} per node on nodes {:?}), capacity {}",
            s.entries,
            l.per_node,
            l.nodes(),
            l.capacity
        );
        println!(
            "keys {} ({} direct, {} in {} containers), {} deleted entries, {} locked, {} malformed",
            s.keys(),
            s.direct,
            s.in_containers,
            s.indirect,
            s.deleted,
            s.locked,
            s.malformed
        );
        println!("layout: {layout}");
    }
    Ok(0)
}
