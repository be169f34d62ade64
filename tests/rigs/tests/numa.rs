//! The NUMA rigs on the host: `unimem-numatest` failing cleanly on a host without the remote
//! node (and running every call with remote = local), and `unimem-numabench`'s output format.
//! No root needed. What the host kernel cannot do (NUMA calls a container blocks) is skipped
//! with a `SKIP test: why` line on stderr, which `scripts/test.sh` reports.

use std::io::Write;
use std::process::Command;

/// Prints `SKIP test: why` where `cargo test` shows it: the harness captures `eprintln!` but not
/// writes to the stderr handle.
fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {why}");
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

#[test]
fn numatest_fails_cleanly_without_the_node() {
    let out = Command::new(env!("CARGO_BIN_EXE_unimem-numatest"))
        .args(["--remote", "4000", "--mib", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("FAIL numa_available: "), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("SKIP ")).count(),
        4,
        "{stdout}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_unimem-numatest"))
        .args(["--remote", "4000", "--mib", "1", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out.stdout);
    assert_eq!(v["remote"], 4000);
    assert_eq!(v["passed"], false);
    let results: Vec<(&str, &str)> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["step"].as_str().unwrap(), s["result"].as_str().unwrap()))
        .collect();
    assert_eq!(
        results,
        [
            ("numa_available", "FAIL"),
            ("numa_alloc_onnode", "SKIP"),
            ("numa_alloc_interleaved", "SKIP"),
            ("numa_move_pages", "SKIP"),
            ("numa_migrate_pages", "SKIP")
        ],
        "{v}"
    );
}

#[test]
fn numatest_runs_every_call_on_one_node() {
    // With remote = local every call runs on the host, and only interleaving (which needs two
    // nodes) fails.
    let out = Command::new(env!("CARGO_BIN_EXE_unimem-numatest"))
        .args(["--remote", "0", "--local", "0", "--mib", "2"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    if stdout.starts_with("FAIL numa_available: numa_available() < 0") {
        skip(
            "numatest_runs_every_call_on_one_node",
            "no NUMA support here (a container blocking the NUMA syscalls?)",
        );
        return;
    }
    let verdicts: Vec<&str> = stdout
        .lines()
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        verdicts,
        [
            "PASS numa_available",
            "PASS numa_alloc_onnode",
            "FAIL numa_alloc_interleaved",
            "PASS numa_move_pages",
            "PASS numa_migrate_pages"
        ],
        "{stdout}"
    );
}

#[test]
fn numabench_output_format() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_unimem-numabench"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let stream = run(&["stream", "--mib", "1", "--reps", "2"]);
    let kernels: Vec<&str> = stream
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    assert_eq!(
        kernels,
        ["copy", "scale", "add", "triad", "valid"],
        "{stream}"
    );
    for l in stream.lines().take(4) {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!((f.len(), f[0], f[2]), (4, "stream", "MB/s"), "{l}");
        assert!(f[3].parse::<f64>().unwrap() > 0.0);
    }
    let chase = run(&["chase", "--mib", "1", "--steps", "1000"]);
    let f: Vec<&str> = chase.trim().split(' ').collect();
    assert_eq!(&f[..2], ["chase", "ns/access"], "{chase}");
    assert!(f[2].parse::<f64>().unwrap() > 0.0);

    let v: serde_json::Value =
        serde_json::from_str(&run(&["--json", "stream", "--mib", "1", "--reps", "2"])).unwrap();
    assert!(v["triad_mb_per_s"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["valid"], true);
    let v: serde_json::Value =
        serde_json::from_str(&run(&["chase", "--mib", "1", "--steps", "1000", "--json"])).unwrap();
    assert!(v["ns_per_access"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["steps"], 1000);
}
