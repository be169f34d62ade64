//! `unimem-gsas`: GSAS from the command line: allocate, read, write and apply atomics to
//! global addresses, share a tree, remoteFork and wait. The cluster checks and the benchmarks
//! are the test rig `unimem-gsas-test` (tests/rigs), which `make install` does not ship.

mod fork;

use anyhow::{bail, Context, Result};
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use gsas::cli::HandleArgs;
use gsas::cli::{parse_mode, parse_u64, pattern, Ctx};
use gsas::{json, TreeSource};

#[derive(Parser)]
#[command(
    name = "unimem-gsas",
    version,
    about = "GSAS, the global shared address space: allocate pages on any node, read, write and apply atomics to them",
    after_help = gsas::cli::ADDRESS_HELP
)]
struct Cli {
    #[command(flatten)]
    handle: HandleArgs,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// This node, the interface and the tree of this process; with --nodes, a NOP to each node.
    Info {
        /// Ping nodes 0..N-1 (their services' round trip).
        #[arg(long)]
        nodes: Option<u16>,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// AllocSharedPage: zeroed pages on a node, owned by this process's tree.
    Alloc {
        /// The home node (whose memory and service).
        #[arg(long)]
        node: u16,
        #[arg(long, default_value_t = 1)]
        pages: u64,
        /// A tag the allocation keeps (not 0), for `free-tag`.
        #[arg(long, value_parser = parse_u64)]
        tag: Option<u64>,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Free the allocation that starts at ADDR.
    Free {
        #[arg(value_parser = parse_u64)]
        addr: u64,
    },
    /// Let other users use the allocation that starts at ADDR: MODE's POSIX bits (0640) for
    /// user UID, group GID and others (reads need r, writes w, atomics both); 0 takes it back.
    Grant {
        #[arg(value_parser = parse_u64)]
        addr: u64,
        #[arg(long)]
        uid: u32,
        #[arg(long)]
        gid: u32,
        /// Octal, as chmod takes it (0640).
        #[arg(long, value_parser = parse_mode)]
        mode: u32,
    },
    /// Keep what the grant of the allocation ADDR lies in lets this user do now, for this
    /// tree, across later grants that take it away (as an open file keeps its access after a
    /// chmod); prints what is kept (r, w, rw).
    Keep {
        #[arg(value_parser = parse_u64)]
        addr: u64,
    },
    /// Let go of what `keep` kept of the allocation ADDR lies in.
    Unkeep {
        #[arg(value_parser = parse_u64)]
        addr: u64,
    },
    /// Free every allocation of this tree on NODE tagged TAG; prints each address freed.
    FreeTag {
        #[arg(long)]
        node: u16,
        #[arg(long, value_parser = parse_u64)]
        tag: u64,
    },
    /// Read at ADDR (prints the value in hex; 128 and 256 bits as words, lowest address first).
    Read {
        #[arg(value_parser = parse_u64)]
        addr: u64,
        #[arg(long, value_enum, default_value_t = Width::W64)]
        width: Width,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Write VALUE at ADDR (128 bits: VALUE is the low word, --high the high word).
    Write {
        #[arg(value_parser = parse_u64)]
        addr: u64,
        #[arg(value_parser = parse_u64)]
        value: u64,
        #[arg(long, value_enum, default_value_t = Width::W64)]
        width: Width,
        /// The high word of a 128-bit write.
        #[arg(long, value_parser = parse_u64, default_value_t = 0)]
        high: u64,
    },
    /// Fetch&Add V to the word at ADDR, COUNT times; prints the final value (the last old
    /// value plus V).
    Faa {
        #[arg(value_parser = parse_u64)]
        addr: u64,
        #[arg(long, value_parser = parse_u64, default_value_t = 1)]
        add: u64,
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
        /// Exit with this status after success (remoteFork tests: a child's own status).
        #[arg(long, default_value_t = 0)]
        exit_code: u8,
    },
    /// Compare-and-swap: if the word is EXPECTED, write NEW; prints the old word.
    Cas {
        #[arg(value_parser = parse_u64)]
        addr: u64,
        #[arg(value_parser = parse_u64)]
        expected: u64,
        #[arg(value_parser = parse_u64)]
        new: u64,
        #[arg(long, value_enum, default_value_t = Width::W64)]
        width: Width,
    },
    /// Swap in VALUE; prints the old word.
    Swap {
        #[arg(value_parser = parse_u64)]
        addr: u64,
        #[arg(value_parser = parse_u64)]
        value: u64,
        #[arg(long, value_enum, default_value_t = Width::W64)]
        width: Width,
    },
    /// Fetch-and/or/xor VALUE; prints the old word.
    Bitwise {
        #[arg(value_enum)]
        op: BitOp,
        #[arg(value_parser = parse_u64)]
        addr: u64,
        #[arg(value_parser = parse_u64)]
        value: u64,
        #[arg(long, value_enum, default_value_t = Width::W64)]
        width: Width,
    },
    /// Bulk-write LEN bytes of a pattern (from SEED) at ADDR.
    BulkWrite {
        #[arg(value_parser = parse_u64)]
        addr: u64,
        #[arg(long)]
        len: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Bulk-read LEN bytes at ADDR: verify them against the pattern of SEED, or print a checksum.
    BulkRead {
        #[arg(value_parser = parse_u64)]
        addr: u64,
        #[arg(long)]
        len: usize,
        /// Verify against the pattern `bulk-write --seed` wrote.
        #[arg(long)]
        seed: Option<u64>,
    },
    /// A round trip to a node's service.
    Nop {
        /// The home node (whose memory and service).
        #[arg(long)]
        node: u16,
        #[arg(long, default_value_t = 1)]
        count: u64,
    },
    /// Run CMD in this process's tree (GSAS_TREE_FD): every GSAS process it starts on this
    /// node shares the tree.
    Exec {
        #[arg(required = true, trailing_var_arg = true)]
        cmd: Vec<String>,
    },
    /// Keep this process's tree (or the one --tree/--tree-socket names) and hand it to every
    /// process of the same user that connects to SOCKET (`--tree-socket SOCKET`), until
    /// killed: one tree for a job whose steps start from separate shells. Started on other
    /// nodes by `fork`, it serves the same tree there.
    ShareTree {
        /// The socket to create (mode 0600; a stale one is replaced).
        #[arg(long)]
        socket: std::path::PathBuf,
    },
    /// remoteFork: start PROG (an absolute path) with ARGS on NODE, in this process's tree and
    /// as this user (uid 0 only with CAP_SYS_ADMIN); prints the child id. With --wait, waits
    /// for it and exits with its status (a signal: 128 + the signal). NODE's fork policy may
    /// refuse the program or the user (gsasd --policy).
    Fork {
        #[arg(long)]
        node: u16,
        /// Wait for the child and exit with its status.
        #[arg(long)]
        wait: bool,
        #[arg(required = true, trailing_var_arg = true)]
        cmd: Vec<String>,
    },
    /// Wait for remoteForked child CHILD (of this process's tree: use --tree) and exit with
    /// its status.
    Wait {
        #[arg(value_parser = parse_u64)]
        child: u64,
        /// Only ask once: exit 0 and print `running` if it has not exited.
        #[arg(long)]
        no_hang: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Width {
    #[value(name = "32")]
    W32,
    #[value(name = "64")]
    W64,
    #[value(name = "128")]
    W128,
    #[value(name = "256")]
    W256,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BitOp {
    And,
    Or,
    Xor,
}

fn width_err(w: Width, what: &str) -> anyhow::Error {
    let n = match w {
        Width::W32 => 32,
        Width::W64 => 64,
        Width::W128 => 128,
        Width::W256 => 256,
    };
    anyhow::anyhow!("{what} has no {n}-bit form")
}

fn main() {
    unimem_clidoc::generate_if_asked(Cli::command, "1");
    let cli = Cli::parse();
    gsas::cli::main_with("unimem-gsas", || run(cli))
}

fn run(cli: Cli) -> Result<i32> {
    let mut ctx = cli.handle.ctx()?;
    // One command reads a page once or a few times: a mapping would cost more than it saves
    // (GSAS_MAPPED_READS=1 maps anyway).
    ctx.mapped_reads = std::env::var("GSAS_MAPPED_READS").is_ok_and(|v| v.trim() == "1");
    match cli.cmd {
        Cmd::Info { nodes, json } => info(&ctx, nodes, json),
        Cmd::Alloc {
            node,
            pages,
            tag,
            json,
        } => {
            let g = ctx.open()?;
            let a = match tag {
                Some(0) => anyhow::bail!("--tag 0 means no tag: leave it out"),
                Some(t) => g.alloc_tagged(node, pages, t)?,
                None => g.alloc_shared_page(node, pages)?,
            };
            if json {
                println!(
                    "{}",
                    json::Obj::new()
                        .num("addr", a)
                        .str("addr_hex", &format!("{a:#x}"))
                        .num("node", node)
                        .num("pages", pages)
                        .num("tree", g.prot_id())
                );
            } else {
                println!("{a:#x}");
            }
            Ok(0)
        }
        Cmd::Free { addr } => {
            ctx.open()?.free(addr)?;
            Ok(0)
        }
        Cmd::Grant {
            addr,
            uid,
            gid,
            mode,
        } => {
            ctx.open()?.grant(addr, uid, gid, mode)?;
            Ok(0)
        }
        Cmd::Keep { addr } => {
            use unimem_wire::gsas::grant::{READ, WRITE};
            let bits = ctx.open()?.keep(addr)?;
            let r = if bits & READ != 0 { "r" } else { "" };
            let w = if bits & WRITE != 0 { "w" } else { "" };
            println!("{r}{w}");
            Ok(0)
        }
        Cmd::Unkeep { addr } => {
            ctx.open()?.unkeep(addr)?;
            Ok(0)
        }
        Cmd::FreeTag { node, tag } => {
            let g = ctx.open()?;
            // Each request frees one; a pool has fewer allocations than this.
            for _ in 0..1u32 << 20 {
                match g.free_tag(node, tag)? {
                    Some(a) => println!("{a:#x}"),
                    None => return Ok(0),
                }
            }
            anyhow::bail!("node {node} kept answering FREE_TAG {tag:#x}")
        }
        Cmd::Read { addr, width, json } => {
            let g = ctx.open()?;
            let words: Vec<u64> = match width {
                Width::W32 => vec![u64::from(g.read32(addr)?)],
                Width::W64 => vec![g.read(addr)?],
                Width::W128 => {
                    let v = g.read128(addr)?;
                    vec![v as u64, (v >> 64) as u64]
                }
                Width::W256 => g.read256(addr)?.to_vec(),
            };
            if json {
                println!("{}", json::Obj::new().nums("words", &words));
            } else {
                let s: Vec<String> = words.iter().map(|w| format!("{w:#x}")).collect();
                println!("{}", s.join(" "));
            }
            Ok(0)
        }
        Cmd::Write {
            addr,
            value,
            width,
            high,
        } => {
            let g = ctx.open()?;
            match width {
                Width::W32 => g.write32(addr, u32::try_from(value).context("32-bit value")?)?,
                Width::W64 => g.write(addr, value)?,
                Width::W128 => g.write128(addr, u128::from(value) | u128::from(high) << 64)?,
                Width::W256 => return Err(width_err(width, "write")),
            }
            Ok(0)
        }
        Cmd::Faa {
            addr,
            add,
            count,
            json,
            exit_code,
        } => {
            if count == 0 {
                bail!("--count must be at least 1");
            }
            let g = ctx.open()?;
            let mut old = 0;
            for _ in 0..count {
                old = g.fetch_add(addr, add)?;
            }
            let last = old.wrapping_add(add);
            let s = g.stats();
            if json {
                println!(
                    "{}",
                    json::Obj::new()
                        .num("final", last)
                        .num("count", count)
                        .float("syscalls_per_op", s.syscalls_per_request())
                );
            } else {
                println!("{last}");
            }
            Ok(i32::from(exit_code))
        }
        Cmd::Cas {
            addr,
            expected,
            new,
            width,
        } => {
            let g = ctx.open()?;
            let old = match width {
                Width::W64 => g.cas(addr, expected, new)?,
                Width::W32 => u64::from(g.cas32(addr, expected as u32, new as u32)?),
                w => return Err(width_err(w, "cas")),
            };
            println!("{old:#x}");
            Ok(0)
        }
        Cmd::Swap { addr, value, width } => {
            let g = ctx.open()?;
            let old = match width {
                Width::W64 => g.swap(addr, value)?,
                Width::W32 => u64::from(g.swap32(addr, value as u32)?),
                w => return Err(width_err(w, "swap")),
            };
            println!("{old:#x}");
            Ok(0)
        }
        Cmd::Bitwise {
            op,
            addr,
            value,
            width,
        } => {
            let g = ctx.open()?;
            let v32 = value as u32;
            let old = match (width, op) {
                (Width::W64, BitOp::And) => g.fetch_and(addr, value)?,
                (Width::W64, BitOp::Or) => g.fetch_or(addr, value)?,
                (Width::W64, BitOp::Xor) => g.fetch_xor(addr, value)?,
                (Width::W32, BitOp::And) => u64::from(g.fetch_and32(addr, v32)?),
                (Width::W32, BitOp::Or) => u64::from(g.fetch_or32(addr, v32)?),
                (Width::W32, BitOp::Xor) => u64::from(g.fetch_xor32(addr, v32)?),
                (w, _) => return Err(width_err(w, "bitwise")),
            };
            println!("{old:#x}");
            Ok(0)
        }
        Cmd::BulkWrite { addr, len, seed } => {
            let data: Vec<u8> = (0..len).map(|i| pattern(seed, i)).collect();
            let g = ctx.open()?;
            g.bulk_write(addr, &data)?;
            println!("wrote {len} bytes in {} requests", g.stats().requests);
            Ok(0)
        }
        Cmd::BulkRead { addr, len, seed } => {
            let mut data = vec![0u8; len];
            let g = ctx.open()?;
            g.bulk_read(addr, &mut data)?;
            match seed {
                Some(seed) => {
                    let bad = (0..len).filter(|&i| data[i] != pattern(seed, i)).count();
                    println!(
                        "read {len} bytes in {} requests, {bad} differ from seed {seed}",
                        g.stats().requests
                    );
                    Ok(i32::from(bad != 0))
                }
                None => {
                    let sum = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                    });
                    println!("read {len} bytes, fnv1a {sum:#018x}");
                    Ok(0)
                }
            }
        }
        Cmd::Nop { node, count } => {
            let g = ctx.open()?;
            for _ in 0..count {
                g.nop(node)?;
            }
            println!("{count} NOPs answered by node {node}");
            Ok(0)
        }
        Cmd::Exec { cmd } => exec(&ctx, &cmd),
        Cmd::ShareTree { socket } => share_tree(&ctx, &socket),
        Cmd::Fork { node, wait, cmd } => {
            let g = ctx.open()?;
            let child = g
                .remote_fork(node, &cmd[0], &cmd[1..])
                .map_err(|e| fork::explain(e, node, &cmd[0]))?;
            println!("{child}");
            if !wait {
                return Ok(0);
            }
            let st = g.wait(child)?;
            eprintln!("child {child} on node {node}: {st}");
            Ok(st.shell())
        }
        Cmd::Wait { child, no_hang } => {
            let g = ctx.open()?;
            let child = gsas::ChildId(child);
            let st = if no_hang {
                match g.try_wait(child)? {
                    Some(st) => st,
                    None => {
                        println!("running");
                        return Ok(0);
                    }
                }
            } else {
                g.wait(child)?
            };
            println!("{st}");
            Ok(st.shell())
        }
    }
}

fn info(ctx: &Ctx, nodes: Option<u16>, json: bool) -> Result<i32> {
    let g = ctx.open()?;
    let mut obj = json::Obj::new()
        .num("node", g.node())
        .num("iface", g.iface())
        .num("tree", g.prot_id())
        .str("tree_hex", &format!("{:#x}", g.prot_id()));
    if !json {
        println!(
            "node {} iface {} tree {:#x}",
            g.node(),
            g.iface(),
            g.prot_id()
        );
    }
    let mut failed = 0;
    if let Some(n) = nodes {
        let mut up = Vec::new();
        for node in 0..n {
            let t0 = std::time::Instant::now();
            match g.nop(node) {
                Ok(()) => {
                    let us = t0.elapsed().as_secs_f64() * 1e6;
                    if !json {
                        println!("node {node}: service answers ({us:.0} us)");
                    }
                    up.push(u64::from(node));
                }
                Err(e) => {
                    failed += 1;
                    if !json {
                        println!("node {node}: {e}");
                    }
                }
            }
        }
        obj = obj.nums("answering", &up);
    }
    if json {
        println!("{obj}");
    }
    Ok(i32::from(failed != 0))
}

fn share_tree(ctx: &Ctx, socket: &std::path::Path) -> Result<i32> {
    let (fd, g) = tree_file(ctx)?;
    let listener = gsas::tree_socket::bind(socket)?;
    // Who waits for the socket (a test, a batch script) reads this line.
    println!(
        "serving tree {:#08x} at {}",
        g.transport().interface().info.prot_id,
        socket.display()
    );
    std::io::Write::flush(&mut std::io::stdout())?;
    gsas::tree_socket::serve(&listener, &fd)?;
    Ok(0)
}

/// A file of `ctx`'s tree that a child may inherit, and a handle in that tree (kept open: the
/// file's interface lives as long as it does).
fn tree_file(ctx: &Ctx) -> Result<(std::os::fd::OwnedFd, gsas::Gsas)> {
    let g = ctx.open()?;
    let fd = match ctx.tree {
        TreeSource::Process => gsas::export_tree_fd()?,
        _ => g.transport().interface().export_fd()?,
    };
    Ok((fd, g))
}

fn exec(ctx: &Ctx, cmd: &[String]) -> Result<i32> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let (fd, g) = tree_file(ctx)?;
    // Its interface stays allocated across exec (the file is inherited), so the tree lives on.
    std::mem::forget(g);
    let err = std::process::Command::new(&cmd[0])
        .args(&cmd[1..])
        .env(gsas::TREE_FD_ENV, fd.as_raw_fd().to_string())
        .exec();
    bail!("exec {}: {err}", cmd[0])
}
