//! `unimem-gsas-test check fork`: remoteFork across nodes, with exit statuses and invariants ii-iii
//! of seed 2.2.1 (docs/GSAS.md, "remoteFork").

use anyhow::{bail, Context, Result};
use clap::Args;
use gsas::cli::Ctx;
use gsas::json::Obj;
use gsas::{addr, fork, op, ChildId, Error, Transport, TreeSource};
use nix::errno::Errno;

#[derive(Args)]
pub struct ForkCheck {
    /// The nodes to start children on (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    nodes: Vec<u16>,
    /// Node of the shared page (default: this node).
    #[arg(long)]
    home: Option<u16>,
    /// Fetch&Adds per child.
    #[arg(long, default_value_t = 200)]
    count: u64,
    /// The program the children run (default: `unimem-gsas` in this binary's directory, whose
    /// path is the same on every node of the cluster): `PROG faa ADDR --add K --count C
    /// --exit-code S`.
    #[arg(long)]
    prog: Option<String>,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// The child's exit code for node `n`.
fn code_of(n: u16) -> i32 {
    10 + i32::from(n)
}

fn faa_args(a: u64, add: u64, count: u64, code: i32) -> Vec<String> {
    vec![
        "faa".into(),
        format!("{a:#x}"),
        "--add".into(),
        add.to_string(),
        "--count".into(),
        count.to_string(),
        "--exit-code".into(),
        code.to_string(),
    ]
}

pub fn check(ctx: &Ctx, c: ForkCheck) -> Result<i32> {
    let g = ctx.open()?;
    let prog = match c.prog {
        Some(p) => p,
        // This rig has no `faa`: the product tool beside it (target/release, the guests'
        // /opt/unimem/bin) does, and a child of another tree runs the same binary.
        None => std::env::current_exe()
            .context("this binary's path")?
            .with_file_name("unimem-gsas")
            .to_string_lossy()
            .into_owned(),
    };
    let home = c.home.unwrap_or(g.node());
    let a = g.alloc_shared_page(home, 1)?;
    println!(
        "tree {:#x}: page {a:#x} on node {home}; children run {prog}",
        g.prot_id()
    );
    let mut failed = 0u32;
    let mut check = |ok: bool, what: String| {
        println!("{} {what}", if ok { "ok  " } else { "FAIL" });
        if !ok {
            failed += 1;
        }
    };
    // Invariants ii and iii: the children (another binary instance, other nodes) reach this
    // tree's page; they are started together, then waited for.
    let t0 = std::time::Instant::now();
    let mut children = Vec::new();
    for &n in &c.nodes {
        let add = u64::from(n) + 1;
        let child = g.remote_fork(n, &prog, &faa_args(a, add, c.count, code_of(n)))?;
        check(
            child.node() == n,
            format!("node {n}: started child {child}"),
        );
        children.push((n, child, add));
    }
    let fork_ms = t0.elapsed().as_secs_f64() * 1e3 / c.nodes.len().max(1) as f64;
    // The id of a running child with another node's number is refused by the child's node
    // (the node is part of the id, not only the serial).
    if let Some(&(n, child, _)) = children.first() {
        let forged = fork::child_id((n + 1) % 16, fork::serial(child.0));
        let r = g.raw_to(n, op::WAIT, forged, 0, 0);
        check(
            matches!(r, Err(Error::NoChild(_))),
            format!(
                "WAIT to node {n} for {forged:#x} (its child's serial, another node): {}",
                result_kind(&r)
            ),
        );
    }
    for &(n, child, _) in &children {
        let st = g.wait(child)?;
        check(
            st.code() == Some(code_of(n)),
            format!(
                "node {n}: child {child}: {st} (expected exit code {})",
                code_of(n)
            ),
        );
    }
    let run_ms = t0.elapsed().as_secs_f64() * 1e3;
    let expected: u64 = children.iter().map(|&(_, _, add)| add * c.count).sum();
    let sum = g.read(a)?;
    check(sum == expected, format!("sum {sum}, expected {expected}"));
    // A waited-for child is forgotten.
    if let Some(&(_, child, _)) = children.first() {
        let r = g.try_wait(child);
        check(
            matches!(r, Err(Error::NoChild(_))),
            format!("WAIT again for {child}: {r:?} (no-child)"),
        );
    }

    // Invariant iii: another tree running the same binary, remoteForked on a node, is denied
    // on this page (and this tree may not wait for it).
    let other = ctx.open_in(TreeSource::Fresh)?;
    if let Some(&n) = c.nodes.first() {
        let child = other.remote_fork(n, &prog, &faa_args(a, 1_000_000, 1, 0))?;
        let r = g.try_wait(child);
        check(
            matches!(r, Err(Error::Denied(_))),
            format!("WAIT for another tree's child: {}", result_kind(&r)),
        );
        let st = other.wait(child)?;
        check(
            st.code() == Some(1),
            format!(
                "tree {:#x}, same binary on node {n}: {st} (expected 1: denied)",
                other.prot_id()
            ),
        );
        let after = g.read(a)?;
        check(
            after == sum,
            format!("page unchanged by the other tree: {after}"),
        );
    }
    // And a process of another tree on this node, same binary, no GSAS_TREE_FD.
    let out = std::process::Command::new(&prog)
        .args(faa_args(a, 1_000_000, 1, 0))
        .env_remove(gsas::TREE_FD_ENV)
        .output()
        .context("running the program locally")?;
    let err = String::from_utf8_lossy(&out.stderr);
    check(
        !out.status.success() && err.contains("denied"),
        format!("local process of another tree: {}", err.trim()),
    );
    check(g.read(a)? == sum, "page unchanged".into());

    // The bad-input matrix.
    let target = *c.nodes.first().unwrap_or(&home);
    let r = g.remote_fork::<&str>(target, "/nonexistent/gsas-prog", &[]);
    check(
        matches!(
            r,
            Err(Error::ExecFailed {
                errno: Errno::ENOENT,
                ..
            })
        ),
        format!("non-existent path: {}", result_kind(&r)),
    );
    let r = g.remote_fork::<&str>(target, "bin/true", &[]);
    check(
        matches!(r, Err(Error::Argument(_))),
        format!("relative path: {}", result_kind(&r)),
    );
    let r = g.remote_fork(target, "/bin/true", &[""]);
    check(
        matches!(r, Err(Error::Argument(_))),
        format!("empty argument: {}", result_kind(&r)),
    );
    let long = vec!["x".repeat(100); 50];
    let r = g.remote_fork(target, "/bin/true", &long);
    check(
        matches!(r, Err(Error::Argument(_))),
        format!("argv of 5000 bytes: {}", result_kind(&r)),
    );
    let many = vec!["x"; fork::MAX_ARGS];
    let r = g.remote_fork(target, "/bin/true", &many);
    check(
        matches!(r, Err(Error::Argument(_))),
        format!("{} arguments: {}", fork::MAX_ARGS, result_kind(&r)),
    );
    // The same blobs sent raw: the service checks them too.
    for (what, blob, len) in [
        ("raw relative path", &b"bin/true\0"[..], 9u64),
        ("raw unterminated", &b"/bin/true"[..], 9),
        ("raw empty argument", &b"/bin/true\0\0"[..], 11),
        (
            "raw length 4097",
            &b"/bin/true\0"[..],
            fork::BLOB_MAX as u64 + 1,
        ),
        ("raw length 0", &b"/bin/true\0"[..], 0),
    ] {
        g.transport().write_bulk_out(blob);
        let r = g.raw_to(target, op::FORK, addr(target, 0xf00d), len, 0);
        check(
            matches!(r, Err(Error::Invalid(_))),
            format!("{what}: {}", result_kind(&r)),
        );
    }
    let r = g.try_wait(ChildId(fork::child_id(target, 0x00ff_fff0)));
    check(
        matches!(r, Err(Error::NoChild(_))),
        format!("WAIT unknown child: {}", result_kind(&r)),
    );

    g.free(a)?;
    if c.json {
        println!(
            "{}",
            Obj::new()
                .num("children", children.len() as u64)
                .num("sum", sum)
                .float("fork_ms", fork_ms)
                .float("run_ms", run_ms)
                .num("failed", u64::from(failed))
        );
    } else {
        println!(
            "{} children: remoteFork {fork_ms:.0} ms each, all done in {run_ms:.0} ms; {failed} checks failed",
            children.len()
        );
    }
    if failed != 0 {
        bail!("{failed} remoteFork checks failed");
    }
    Ok(0)
}

fn result_kind<T: std::fmt::Debug>(r: &gsas::Result<T>) -> String {
    match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) => format!("{} ({e})", e.kind()),
    }
}
