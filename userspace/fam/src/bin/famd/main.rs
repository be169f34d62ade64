//! `famd`: OpenFAM's metadata service (docs/FAM.md). One per cluster, run by root: it holds
//! the regions and data items (`fam::meta::Store`, written to its file after every change),
//! allocates items' pages on the lenders in its own protection tree, grants them to each
//! item's owner, group and mode, and answers the control calls of the client library
//! (`libunimem_fam`), which reach it at the well-known mailbox interface 62 of its node. The
//! data path does not pass through it.

mod backup;
mod listen;
mod serve;
mod space;
mod tree;

use anyhow::{bail, Context, Result};
use clap::{CommandFactory, Parser};
use fam::meta::{Creds, Item, Space, Store, StoreConfig, DEFAULT_STRIPE};
use gsas::Gsas;
use listen::{Listener, Sender};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use nix::sys::signal::Signal;
use serve::Pages;
use signal_hook_mio::v1_0::Signals;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use unimem_wire::fam::{Request, MAX_MESSAGE};
use unimem_wire::gsas::owner::ADMIN;

#[derive(Parser)]
#[command(
    name = "famd",
    version,
    about = "OpenFAM's metadata service over unimem: regions, data items, placement, permissions",
    long_about = "OpenFAM's metadata service over unimem (docs/FAM.md). Holds the regions and \
        data items, places items' pages on the lender nodes (GSAS), grants them to each item's \
        owner, group and mode, and answers the OpenFAM library's control calls at the \
        well-known mailbox interface 62 of this node. Runs as root (it takes the well-known \
        interface and rejoins its protection tree after a restart); one per cluster. Clients \
        find it through UNIMEM_FAMD_NODE or famd_node in /etc/unimem/fam.conf. Stops cleanly on \
        SIGTERM or SIGINT; everything is on disk after each change."
)]
struct Args {
    /// The store's file (JSON, replaced atomically after every change); STATE.tree beside it
    /// keeps famd's protection tree.
    #[arg(long, default_value = "/var/lib/unimem/famd.json")]
    state: PathBuf,
    /// Nodes lending memory to new regions, e.g. 1,2,3 (default: every node but this one).
    #[arg(long, value_delimiter = ',')]
    lenders: Vec<u16>,
    /// Where backups (fam_backup) are written, on this node.
    #[arg(long, default_value = "/var/lib/unimem/fam-backups")]
    backup_dir: PathBuf,
    /// Interleave stripe of new items, bytes (a power of two, at least a page).
    #[arg(long, default_value_t = DEFAULT_STRIPE)]
    stripe: u64,
}

const MAILBOX: Token = Token(0);
const SIGNALS: Token = Token(1);

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
    unimem_clidoc::generate_if_asked(Args::command, "8");
    if let Err(e) = run(Args::parse()) {
        eprintln!("famd: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<()> {
    let listener = Listener::open()?;
    let me = listener.node();
    let lenders = if args.lenders.is_empty() {
        let n = unimem_mailbox::fabric::node_count().context("reading the node count")?;
        (0..n as u16).filter(|&n| u32::from(n) != me).collect()
    } else {
        args.lenders.clone()
    };
    if lenders.is_empty() {
        bail!("no lender nodes (--lenders, or a cluster of more than this node)");
    }
    if let Some(dir) = args.state.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut config = StoreConfig::new(lenders.clone());
    config.stripe = args.stripe;
    let mut store = Store::open(&args.state, config)
        .with_context(|| format!("opening the store {}", args.state.display()))?;
    let has_items = store.items().next().is_some();
    let gsas = tree::open(&args.state, has_items)?;
    let (regions, items) = (store.regions().count(), store.items().count());

    let mut poll = Poll::new().context("creating the event loop")?;
    let mut signals = Signals::new([Signal::SIGTERM as i32, Signal::SIGINT as i32])
        .context("installing signal handlers")?;
    poll.registry().register(
        &mut SourceFd(&listener.as_raw_fd()),
        MAILBOX,
        Interest::READABLE,
    )?;
    poll.registry()
        .register(&mut signals, SIGNALS, Interest::READABLE)?;
    log::info!(
        "famd: serving on node {me} interface {} (pid {}): {regions} regions, {items} items in {}, lenders {lenders:?}, tree {:#x}",
        unimem_wire::mailbox::well_known::FAMD,
        std::process::id(),
        args.state.display(),
        gsas.prot_id()
    );
    let backups = backup::Backups::new(args.backup_dir.clone());
    log::info!("famd: backups in {}", backups.dir().display());
    serve_until_signal(
        listener,
        &mut poll,
        &mut signals,
        &mut store,
        &gsas,
        &backups,
    )
}

fn serve_until_signal(
    mut listener: Listener,
    poll: &mut Poll,
    signals: &mut Signals,
    store: &mut Store,
    gsas: &Gsas,
    backups: &backup::Backups,
) -> Result<()> {
    let mut events = Events::with_capacity(8);
    let mut pages = GsasPages { gsas };
    let mut served = 0u64;
    loop {
        match poll.poll(&mut events, None) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("waiting for events"),
            Ok(()) => {}
        }
        for ev in events.iter() {
            match ev.token() {
                SIGNALS => {
                    if let Some(sig) = signals.pending().next() {
                        let name = Signal::try_from(sig).map_or("a signal", Signal::as_str);
                        log::info!(
                            "famd: {name}: stopping after {served} requests ({} answers dropped)",
                            listener.dropped
                        );
                        return Ok(());
                    }
                }
                _ => listener.drain(|sender, message, answer| {
                    served += 1;
                    one_request(store, &mut pages, backups, sender, message, answer)
                })?,
            }
        }
    }
}

/// Decodes and serves one message; the answer's length (0: none, for a message that is not a
/// request: there is no request id to answer).
fn one_request(
    store: &mut Store,
    pages: &mut GsasPages<'_>,
    backups: &backup::Backups,
    sender: &Sender,
    message: &[u8],
    answer: &mut [u8; MAX_MESSAGE],
) -> usize {
    let (id, req) = match Request::decode(message) {
        Ok(r) => r,
        Err(e) => {
            // Answer with the opcode and id if they are there, so the client fails fast.
            log::warn!(
                "famd: node {} iface {}: undecodable request: {e:?}",
                sender.node,
                sender.iface
            );
            return refuse_undecodable(message, e, answer);
        }
    };
    let Some(c) = sender.creds else {
        log::warn!(
            "famd: node {} iface {}: {:?} refused: the sender's node sealed no identity for it",
            sender.node,
            sender.iface,
            req.op()
        );
        let msg = "the sender's node sealed no identity for its interface";
        return unimem_wire::fam::Response::err(req.op(), fam::code::NOPERM, msg)
            .encode(id, answer)
            .unwrap_or(0);
    };
    let creds = if c.flags & ADMIN != 0 {
        Creds::admin(c.uid, c.gid)
    } else {
        Creds::user(c.uid, c.gid)
    };
    log::debug!(
        "famd: node {} iface {} uid {} gid {}: {req:?}",
        sender.node,
        sender.iface,
        c.uid,
        c.gid
    );
    serve::handle(store, pages, backups, &creds, id, &req, answer)
}

/// The answer to a message that is not a valid request (`DecodeError::status`), if at least
/// its opcode and id could be read, else nothing.
fn refuse_undecodable(
    message: &[u8],
    e: unimem_wire::fam::DecodeError,
    answer: &mut [u8; MAX_MESSAGE],
) -> usize {
    let Some((opcode, id)) = unimem_wire::fam::peek(message) else {
        return 0;
    };
    let code = e.status();
    let msg = format!("famd could not decode the request: {e:?}");
    unimem_wire::fam::Response::err(opcode, code, &msg)
        .encode(id, answer)
        .unwrap_or(0)
}

/// The store's pages over famd's GSAS handle.
struct GsasPages<'a> {
    gsas: &'a Gsas,
}

impl Space for GsasPages<'_> {
    fn alloc(&mut self, node: u16, pages: u64) -> fam::Result<u64> {
        space::GsasSpace { gsas: self.gsas }.alloc(node, pages)
    }

    fn free(&mut self, addr: u64) -> fam::Result<()> {
        space::GsasSpace { gsas: self.gsas }.free(addr)
    }
}

impl Pages for GsasPages<'_> {
    fn grant(&mut self, item: &Item) -> fam::Result<()> {
        space::grant_item(self.gsas, item)
    }

    fn read(&mut self, addr: u64, buf: &mut [u8]) -> fam::Result<()> {
        self.gsas
            .bulk_read(addr, buf)
            .map_err(|e| fam::FamError::Allocator(format!("reading {addr:#x}: {e}")))
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> fam::Result<()> {
        self.gsas
            .bulk_write(addr, data)
            .map_err(|e| fam::FamError::Allocator(format!("writing {addr:#x}: {e}")))
    }
}
