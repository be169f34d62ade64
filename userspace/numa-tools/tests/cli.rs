//! `unimem-sl` on the host, against fake sysfs and registry trees (its set_mempolicy call is
//! real, and works with one node). No root needed. (`unimem-numatest` and `unimem-numabench`
//! are test rigs now: tests/rigs/tests/numa.rs.)
//! What the host kernel cannot do (weighted interleave before Linux 6.9, NUMA calls a container
//! blocks) is skipped with a `SKIP test: why` line on stderr, which `scripts/test.sh` reports.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("unimem-cli-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A sysfs with node 0 (CPUs, memory), node 1 (memory, no CPUs: the remote one) and node 2
/// (CPUs, no memory), weights all 1, auto mode on.
fn fake_sysfs(root: &Path) -> PathBuf {
    let sys = root.join("sys");
    for (n, cpus, kib) in [(0, "0-1\n", 1 << 20), (1, "\n", 1 << 16), (2, "2\n", 0)] {
        let d = sys.join(format!("devices/system/node/node{n}"));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("cpulist"), cpus).unwrap();
        fs::write(
            d.join("meminfo"),
            format!("Node {n} MemTotal: {kib} kB\nNode {n} MemFree: 1 kB\n"),
        )
        .unwrap();
    }
    fs::write(sys.join("devices/system/node/online"), "0-2\n").unwrap();
    let w = sys.join("kernel/mm/mempolicy/weighted_interleave");
    fs::create_dir_all(&w).unwrap();
    fs::write(w.join("node0"), "1\n").unwrap();
    fs::write(w.join("node1"), "1\n").unwrap();
    fs::write(w.join("auto"), "true\n").unwrap();
    sys
}

fn sl(t: &TempDir, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_unimem-sl"))
        .args(args)
        .env("UNIMEM_SL_SYSFS", t.0.join("sys"))
        .env("UNIMEM_SL_REGISTRY", t.0.join("reg"))
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Prints `SKIP test: why` where `cargo test` shows it: the harness captures `eprintln!` but not
/// writes to the stderr handle.
fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {why}");
}

/// Whether `unimem-sl run` can set its policy here (on node 0, the fake sysfs's local node);
/// prints the skip line when not.
fn weighted_interleave(test: &str) -> bool {
    match unimem_numa_tools::mempolicy::probe_weighted_interleave(&[0]) {
        Ok(()) => true,
        Err(why) => {
            skip(test, &why);
            false
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Stdout that must be exactly one JSON value on one line.
fn json(b: &[u8]) -> serde_json::Value {
    let s = text(b);
    assert_eq!(s.lines().count(), 1, "not one line: {s}");
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

fn weight(t: &TempDir, f: &str) -> String {
    fs::read_to_string(
        t.0.join("sys/kernel/mm/mempolicy/weighted_interleave")
            .join(f),
    )
    .unwrap()
    .trim()
    .to_owned()
}

#[test]
fn sl_weights_prints_sysfs() {
    let t = TempDir::new("weights");
    fake_sysfs(&t.0);
    fs::write(
        t.0.join("sys/kernel/mm/mempolicy/weighted_interleave/node1"),
        "7\n",
    )
    .unwrap();
    let out = sl(&t, &["weights"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "auto=true\nnode0=1\nnode1=7\n");
    let out = sl(&t, &["weights", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        json(&out.stdout),
        serde_json::json!({"auto": true, "node0": 1, "node1": 7})
    );
}

#[test]
fn sl_run_sets_weights_policy_group_and_registry() {
    if !weighted_interleave("sl_run_sets_weights_policy_group_and_registry") {
        return;
    }
    let t = TempDir::new("run");
    fake_sysfs(&t.0);
    // The shell prints its pid, its own stat (pgrp), its policy as numa_maps shows it (the
    // task policy, for mappings without their own) and its registry entry.
    let script = "echo $$; cat /proc/$$/stat; head -n1 /proc/$$/numa_maps; \
                  cat \"$UNIMEM_SL_REGISTRY/$$\"";
    let out = sl(
        &t,
        &[
            "run", "--remote", "2", "--local", "6", "--", "sh", "-c", script,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let pid: i32 = lines[0].parse().unwrap();
    assert_eq!(
        unimem_numa_tools::procfs::pgrp(lines[1]),
        Some(pid),
        "own process group"
    );
    assert!(
        lines[2].contains("weighted interleave"),
        "policy: {}",
        lines[2]
    );
    assert_eq!(lines[3], "remote_node=1 local_node=0 remote=1 local=3");
    assert_eq!(weight(&t, "auto"), "false");
    assert_eq!(weight(&t, "node1"), "1");
    assert_eq!(weight(&t, "node0"), "3");
}

#[test]
fn sl_run_refuses_conflict_unless_forced_and_drops_stale() {
    let t = TempDir::new("conflict");
    fake_sysfs(&t.0);
    let reg = t.0.join("reg");
    fs::create_dir_all(&reg).unwrap();
    // Our own group is alive for the whole test; i32::MAX never is.
    let me = nix::unistd::getpgrp().as_raw();
    fs::write(
        reg.join(me.to_string()),
        "remote_node=1 local_node=0 remote=1 local=2\n",
    )
    .unwrap();
    fs::write(
        reg.join(i32::MAX.to_string()),
        "remote_node=1 local_node=0 remote=9 local=1\n",
    )
    .unwrap();

    let out = sl(&t, &["run", "--remote", "1", "--local", "3", "--", "true"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("process group {me}")) && err.contains("1:2"),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert!(
        !reg.join(i32::MAX.to_string()).exists(),
        "stale entry not removed"
    );
    assert_eq!(weight(&t, "node0"), "1", "weights changed although refused");
    if !weighted_interleave("sl_run_refuses_conflict_unless_forced_and_drops_stale") {
        return;
    }

    // The same ratio, spelled differently, is no conflict.
    let out = sl(&t, &["run", "--remote", "2", "--local", "4", "--", "true"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let out = sl(
        &t,
        &[
            "run", "--remote", "1", "--local", "3", "--force", "--", "true",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(weight(&t, "node0"), "3");
}

#[test]
fn sl_run_rejects_bad_levels() {
    let t = TempDir::new("bad");
    fake_sysfs(&t.0);
    for (args, want) in [
        (&["--remote", "0", "--local", "1"][..], "at least 1"),
        (&["--remote", "256", "--local", "1"][..], "255"),
        (
            &["--remote", "1", "--local", "1", "--remote-node", "0"][..],
            "both 0",
        ),
        (
            &["--remote", "1", "--local", "1", "--remote-node", "2"][..],
            "node2",
        ),
    ] {
        let mut a = vec!["run"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--", "true"]);
        let out = sl(&t, &a);
        assert!(!out.status.success(), "{a:?}");
        assert!(
            text(&out.stderr).contains(want),
            "{a:?}: {}",
            text(&out.stderr)
        );
    }
    // Failing to exec comes after the policy is set.
    if !weighted_interleave("sl_run_rejects_bad_levels") {
        return;
    }
    let out = sl(
        &t,
        &[
            "run",
            "--remote",
            "1",
            "--local",
            "1",
            "--",
            "/nonexistent/cmd",
        ],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("executing"),
        "{}",
        text(&out.stderr)
    );
    let entries: Vec<_> = fs::read_dir(t.0.join("reg"))
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .collect();
    assert!(entries.is_empty(), "entry left after a failed exec");
}

#[test]
fn sl_show_counts_group_pages() {
    if !weighted_interleave("sl_show_counts_group_pages") {
        return;
    }
    let t = TempDir::new("show");
    fake_sysfs(&t.0);
    let mut child = Command::new(env!("CARGO_BIN_EXE_unimem-sl"))
        .args(["run", "--remote", "1", "--local", "1", "--", "sleep", "30"])
        .env("UNIMEM_SL_SYSFS", t.0.join("sys"))
        .env("UNIMEM_SL_REGISTRY", t.0.join("reg"))
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pgid = child.id() as i32;
    let entry = t.0.join("reg").join(pgid.to_string());
    for _ in 0..200 {
        if entry.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = sl(&t, &["show", "--pgid", &pgid.to_string()]);
    let out_json = sl(&t, &["show", "--pgid", &pgid.to_string(), "--json"]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = text(&out.stdout);
    assert!(
        line.starts_with(&format!(
            "pgid={pgid} ratio=1:1 remote_node=1 local_node=0 procs=1 "
        )),
        "{line}"
    );
    let field = |k: &str| -> f64 {
        line.split_whitespace()
            .find_map(|t| t.strip_prefix(k))
            .unwrap()
            .parse()
            .unwrap()
    };
    // The host has one node: every page is local.
    assert!(field("local_pages=") > 0.0, "{line}");
    assert_eq!(field("remote_pct="), 0.0);
    assert_eq!(field("target_pct="), 50.0);
    assert!(out_json.status.success(), "{}", text(&out_json.stderr));
    let v = json(&out_json.stdout);
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v[0]["pgid"], pgid);
    assert_eq!(v[0]["ratio"], "1:1");
    assert_eq!(v[0]["target_pct"], 50.0);
    for key in [
        "remote_node",
        "local_node",
        "procs",
        "remote_pages",
        "local_pages",
        "other_pages",
        "remote_pct",
    ] {
        assert!(v[0].get(key).is_some(), "no {key} in {v}");
    }

    // Dead now: the entry is stale and the group is gone.
    let out = sl(&t, &["show"]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "");
    assert!(!entry.exists());
}
