//! The collector of named checks that `check ops`, `check denied`, `check bad-input` and
//! `check map` share: a line per case (or one JSON object with --json) and the exit status.
//! Its own module, so that `check` (the dispatcher) and `map` do not import each other.

use gsas::json::Obj;

/// Collects named checks.
pub struct Checks {
    rows: Vec<Obj>,
    failed: usize,
    json: bool,
}

impl Checks {
    pub fn new(json: bool) -> Self {
        Checks {
            rows: Vec::new(),
            failed: 0,
            json,
        }
    }

    pub fn expect(&mut self, name: &str, ok: bool, detail: String) {
        if !ok {
            self.failed += 1;
        }
        if !self.json {
            println!("{}: {name}: {detail}", if ok { "ok" } else { "FAIL" });
        }
        self.rows.push(
            Obj::new()
                .str("case", name)
                .bool("ok", ok)
                .str("detail", &detail),
        );
    }

    /// `r` must have failed with an error of kind `kind` (one of `kinds`).
    pub fn expect_err<T: std::fmt::Debug>(
        &mut self,
        name: &str,
        r: gsas::Result<T>,
        kinds: &[&str],
    ) {
        match r {
            Err(e) => {
                let ok = kinds.contains(&e.kind());
                self.expect(
                    name,
                    ok,
                    format!("{} (expected {}): {e}", e.kind(), kinds.join(" or ")),
                );
            }
            Ok(v) => self.expect(
                name,
                false,
                format!("succeeded with {v:?}, expected {}", kinds.join(" or ")),
            ),
        }
    }

    pub fn finish(self, what: &str) -> i32 {
        let total = self.rows.len();
        if self.json {
            println!(
                "{}",
                Obj::new()
                    .str("check", what)
                    .num("passed", (total - self.failed) as u64)
                    .num("failed", self.failed as u64)
                    .objs("cases", &self.rows)
            );
        } else {
            println!(
                "{what}: {} passed, {} failed",
                total - self.failed,
                self.failed
            );
        }
        i32::from(self.failed != 0)
    }
}
