//! `oshrun -np N [--nodes LIST] PROGRAM [ARGS...]`: runs an OpenSHMEM program as N PEs
//! across the cluster's nodes (remoteFork, in this process's protection tree), prints their
//! output line by line prefixed with the PE number, and exits with the worst exit status.
//! A PE that fails, or Ctrl-C / SIGTERM, stops every PE; nothing is left running or
//! allocated. Needs `gsasd`, `unimem_gsas` and `unimem_mailbox` on every node it uses.

mod agent;
mod launch;

use anyhow::Result;
use clap::{CommandFactory, Parser};

#[derive(Parser, Debug)]
#[command(
    name = "oshrun",
    about = "Run an OpenSHMEM program (built with oshcc) as N PEs across the unimem cluster",
    long_about = "Run an OpenSHMEM program (built with oshcc) as N PEs across the unimem cluster.\n\n\
        PEs are placed in blocks: with N PEs on M nodes, the first N % M nodes get one more, \
        and each node's PEs have consecutive numbers. Every PE's output (stdout and stderr) is \
        printed here, line by line, as 'PE <n>: <line>'. The exit status is the worst of the \
        PEs' (128 + signal for a PE killed by a signal), or the status a PE gave \
        shmem_global_exit (its low 8 bits). If a PE fails, or oshrun gets SIGINT \
        or SIGTERM, the other PEs are stopped.\n\n\
        oshrun passes its SHMEM_* environment variables to the PEs, e.g. SHMEM_SYMMETRIC_SIZE \
        (the symmetric heap per PE: bytes, or with K, M or G; default: the largest power of two \
        up to 256M whose heaps fit in this node's GSAS pool for the PEs placed on one node). \
        The program's path must be the same on every node (e.g. under /opt/unimem)."
)]
struct Cli {
    /// Number of PEs (also `-np N`).
    #[arg(short = 'n', long = "np", value_name = "N")]
    np: Option<usize>,
    /// Nodes to place the PEs on: a comma-separated list of ids and ranges (0,2-3); default:
    /// every node of the cluster.
    #[arg(long, value_name = "LIST")]
    nodes: Option<String>,
    /// Run as the agent of one PE (started by oshrun on the PE's node).
    #[arg(long, hide = true)]
    pe_agent: bool,
    #[arg(long, hide = true, value_parser = parse_hex)]
    job: Option<u64>,
    #[arg(long, hide = true)]
    pe: Option<usize>,
    /// Environment for the PE (NAME=VALUE), set by oshrun from its own SHMEM_* variables.
    #[arg(long = "env", hide = true, value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// The program and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    command: Vec<String>,
}

fn parse_hex(s: &str) -> Result<u64, String> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).map_err(|e| e.to_string())
}

fn main() {
    unimem_clidoc::generate_if_asked(Cli::command, "1");
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    // `-np N` as MPI launchers spell it.
    let args = std::env::args().map(|a| if a == "-np" { "--np".to_string() } else { a });
    let cli = Cli::parse_from(args);
    let r: Result<i32> = if cli.pe_agent {
        match (cli.job, cli.pe) {
            (Some(job), Some(pe)) => agent::run(job, pe, &cli.env, &cli.command),
            _ => Err(anyhow::anyhow!("--pe-agent needs --job and --pe")),
        }
    } else {
        match cli.np {
            Some(np) => launch::run(np, cli.nodes.as_deref(), &cli.command),
            None => Err(anyhow::anyhow!("how many PEs? give -np N")),
        }
    };
    match r {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("oshrun: {e:#}");
            std::process::exit(1);
        }
    }
}
