//! `gsas-raw`: raw requests to a node's GSAS atomic service (`unimem_gsas.ko`), for tests of the
//! kernel service without the GSAS library: allocate an interface (optionally in a given
//! protection tree), map its area, send each request as a packet to interface
//! `SERVICE_IFACE` of the home node and wait for the response slot's `seq` to move.
//!
//! A request is `OP:ADDR:ARG1:ARG2` (trailing parts may be left out, numbers decimal or 0x
//! hex); OP is a name (`nop read write read128 read256 write128 fetch_add cas swap fetch_and
//! fetch_or fetch_xor bulk_read bulk_write alloc free`, `+32` for the 32-bit width, e.g.
//! `fetch_add32`) or a raw opcode number; ADDR may be `A` or `A+N`: the address the last
//! ALLOC returned (plus N bytes).

use anyhow::{anyhow, bail, Context, Result};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use unimem_mailbox::cli::print_identity;
use unimem_mailbox::Mailbox;
use unimem_wire::gsas::{self, op, status, Response, SERVICE_IFACE};

#[derive(clap::Args)]
pub struct GsasRawArgs {
    /// Home node: the node whose service applies the requests.
    #[arg(long)]
    node: u32,
    /// Put the interface in this protection tree first (SET_TREE, CAP_SYS_ADMIN).
    #[arg(long, value_parser = parse_num)]
    tree: Option<u64>,
    /// Send the list of requests this many times.
    #[arg(long, default_value_t = 1)]
    repeat: u64,
    /// Print only the summary (and the value of the last response).
    #[arg(long)]
    quiet: bool,
    /// Byte to fill bulk-out with before each BULK_WRITE; BULK_READ reports whether bulk-in
    /// holds only this byte.
    #[arg(long, value_parser = parse_num, default_value = "0xa5")]
    fill: u64,
    /// Give up on a response after this many milliseconds.
    #[arg(long, default_value_t = 20_000)]
    wait_ms: u64,
    /// After the requests, keep reading the mapped response slot for this many seconds
    /// (tests: a revoked mapping ends the process with SIGBUS).
    #[arg(long, default_value_t = 0)]
    then_watch: u64,
    /// Requests: OP:ADDR:ARG1:ARG2.
    #[arg(required = true)]
    requests: Vec<String>,
}

fn parse_num(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("{s}: {e}"))
}

const NAMES: [(&str, u8); 16] = [
    ("nop", op::NOP),
    ("read", op::READ),
    ("write", op::WRITE),
    ("read128", op::READ128),
    ("read256", op::READ256),
    ("write128", op::WRITE128),
    ("fetch_add", op::FETCH_ADD),
    ("cas", op::CAS),
    ("swap", op::SWAP),
    ("fetch_and", op::FETCH_AND),
    ("fetch_or", op::FETCH_OR),
    ("fetch_xor", op::FETCH_XOR),
    ("bulk_read", op::BULK_READ),
    ("bulk_write", op::BULK_WRITE),
    ("alloc", op::ALLOC),
    ("free", op::FREE),
];

/// The name of a status, as the tests grep it.
pub fn status_name(s: u8) -> String {
    match s {
        status::OK => "OK".into(),
        status::INVALID => "INVALID".into(),
        status::UNALIGNED => "UNALIGNED".into(),
        status::FAULT => "FAULT".into(),
        status::DENIED => "DENIED".into(),
        status::NO_MEMORY => "NO_MEMORY".into(),
        status::NO_POOL => "NO_POOL".into(),
        status::STALLED => "STALLED".into(),
        other => format!("STATUS_{other}"),
    }
}

fn parse_op(s: &str) -> Result<u8> {
    if let Ok(n) = parse_num(s) {
        return u8::try_from(n).map_err(|_| anyhow!("opcode {s} does not fit a byte"));
    }
    let find = |name: &str| NAMES.iter().find(|(n, _)| *n == name).map(|&(_, c)| c);
    if let Some(code) = find(s) {
        return Ok(code);
    }
    s.strip_suffix("32")
        .and_then(find)
        .map(|code| code | op::WIDTH32)
        .ok_or_else(|| anyhow!("unknown operation {s}"))
}

struct Request {
    opcode: u8,
    addr: String,
    arg1: u64,
    arg2: u64,
}

fn parse_request(s: &str) -> Result<Request> {
    let mut parts = s.split(':');
    let opcode = parse_op(parts.next().unwrap_or_default())?;
    let addr = parts.next().unwrap_or("0").to_owned();
    let mut num = |what: &str| -> Result<u64> {
        parts
            .next()
            .map_or(Ok(0), |p| parse_num(p).map_err(|e| anyhow!("{what}: {e}")))
    };
    let arg1 = num("arg1")?;
    let arg2 = num("arg2")?;
    if parts.next().is_some() {
        bail!("{s}: at most OP:ADDR:ARG1:ARG2");
    }
    Ok(Request {
        opcode,
        addr,
        arg1,
        arg2,
    })
}

fn resolve(addr: &str, last_alloc: Option<u64>) -> Result<u64> {
    if let Some(rest) = addr.strip_prefix('A') {
        let base = last_alloc.ok_or_else(|| anyhow!("{addr}: no ALLOC answered yet"))?;
        let off = match rest.strip_prefix('+') {
            Some(n) => parse_num(n).map_err(|e| anyhow!(e))?,
            None if rest.is_empty() => 0,
            None => bail!("{addr}: expected A or A+N"),
        };
        return Ok(base.wrapping_add(off));
    }
    parse_num(addr).map_err(|e| anyhow!(e))
}

pub fn run(a: &GsasRawArgs) -> Result<()> {
    let requests = a
        .requests
        .iter()
        .map(|s| parse_request(s))
        .collect::<Result<Vec<_>>>()?;
    let mb = Mailbox::open()?;
    if let Some(tree) = a.tree {
        mb.set_tree(tree as u32).context("SET_TREE")?;
    }
    let me = mb.alloc().context("ALLOC")?;
    print_identity(&me);
    let area = mb.map_area().context("mapping the interface area")?;
    let fill = a.fill as u8;
    let mut last_alloc = None;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut last = Response::default();
    let started = Instant::now();
    let mut sent = 0u64;
    for round in 0..a.repeat {
        for (k, r) in requests.iter().enumerate() {
            let addr = resolve(&r.addr, last_alloc)?;
            if r.opcode == op::BULK_WRITE {
                area.write_bulk_out(&vec![fill; gsas::BULK_MAX as usize]);
            }
            let before = area.seq(a.node);
            let payload = gsas::request(r.opcode, addr, r.arg1, r.arg2);
            // The ring holds 32 packets per sender: wait a little when it is full.
            let deadline = Instant::now() + Duration::from_millis(a.wait_ms);
            loop {
                match mb.send(a.node, SERVICE_IFACE, &payload) {
                    Ok(()) => break,
                    Err(e) if e.is(unimem_mailbox::Errno::EAGAIN) && Instant::now() < deadline => {
                        std::thread::yield_now()
                    }
                    Err(e) => return Err(anyhow!(e).context(format!("sending request {k}"))),
                }
            }
            sent += 1;
            let resp = loop {
                if area.seq(a.node) != before {
                    break area.response(a.node);
                }
                unimem_mailbox::cli::deadline::check(&format!("for the answer to request {k}"))?;
                if Instant::now() > deadline {
                    bail!(
                        "no answer from node {}'s GSAS service within {} ms (request {k}, seq {before}): is unimem_gsas loaded there?",
                        a.node,
                        a.wait_ms
                    );
                }
                // One vCPU per node: let the service (or the mailbox's work) run.
                std::thread::yield_now();
            };
            if resp.opcode != r.opcode || resp.address != addr {
                bail!(
                    "request {k}: the answer echoes opcode {:#x} address {:#x}, sent {:#x} {addr:#x}",
                    resp.opcode,
                    resp.address,
                    r.opcode
                );
            }
            if resp.seq != before.wrapping_add(1) {
                bail!(
                    "request {k}: seq went from {before} to {}, not by one",
                    resp.seq
                );
            }
            *counts.entry(status_name(resp.status)).or_default() += 1;
            if r.opcode == op::ALLOC && resp.status == status::OK {
                last_alloc = Some(resp.word());
            }
            if !a.quiet {
                println!(
                    "resp {round}.{k}: op {:#04x} addr {addr:#x} status {} seq {} value {:#x}",
                    r.opcode,
                    status_name(resp.status),
                    resp.seq,
                    resp.word()
                );
                if r.opcode & !op::WIDTH32 == op::READ128 || r.opcode == op::READ256 {
                    let words: Vec<String> = resp
                        .value
                        .chunks(8)
                        .map(|c| {
                            format!("{:#x}", u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                        })
                        .collect();
                    println!("value words: {}", words.join(" "));
                }
                if r.opcode == op::BULK_READ && resp.status == status::OK {
                    let mut b = vec![0u8; r.arg1.min(gsas::BULK_MAX) as usize];
                    area.read_bulk_in(&mut b);
                    let same = b.iter().all(|&x| x == fill);
                    println!(
                        "bulk-in: {} bytes, all {fill:#04x}: {}",
                        b.len(),
                        if same { "yes" } else { "no" }
                    );
                }
            }
            last = resp;
        }
    }
    if a.then_watch > 0 {
        println!("watching the response slot for {} s", a.then_watch);
        let end = Instant::now() + Duration::from_secs(a.then_watch);
        let mut reads = 0u64;
        while Instant::now() < end {
            std::hint::black_box(area.seq(a.node));
            reads += 1;
            std::thread::sleep(Duration::from_millis(10));
        }
        println!("watch: {reads} reads, the mapping stayed readable");
    }
    let us = started.elapsed().as_secs_f64() * 1e6 / sent.max(1) as f64;
    let summary: Vec<String> = counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!(
        "summary: {sent} requests, {} ; last status {} value {:#x}; {us:.1} us per request",
        summary.join(" "),
        status_name(last.status),
        last.word()
    );
    Ok(())
}
