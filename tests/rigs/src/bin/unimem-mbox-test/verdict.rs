//! Bookkeeping for commands that run a list of checks: one `ok`/`FAIL` line per check, a
//! summary, and a non-zero exit if any failed (so every check is able to fail the test).

use anyhow::{bail, Result};
use std::fmt::Debug;
use unimem_mailbox::Errno;

pub struct Checks {
    name: &'static str,
    total: u32,
    failed: u32,
}

impl Checks {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            total: 0,
            failed: 0,
        }
    }

    /// Records a check; `detail` says what was seen.
    pub fn expect(&mut self, what: &str, passed: bool, detail: impl std::fmt::Display) -> bool {
        self.total += 1;
        if passed {
            println!("ok   {what}: {detail}");
        } else {
            self.failed += 1;
            println!("FAIL {what}: {detail}");
        }
        passed
    }

    /// Records that `r` failed with exactly `want`.
    pub fn expect_errno<T: Debug>(
        &mut self,
        what: &str,
        r: unimem_mailbox::Result<T>,
        want: Errno,
    ) -> bool {
        match r {
            Err(e) if e.is(want) => self.expect(what, true, want),
            Err(e) => self.expect(what, false, format!("got {e}, expected {want}")),
            Ok(v) => self.expect(what, false, format!("succeeded ({v:?}), expected {want}")),
        }
    }

    /// Prints the summary; fails if any check failed.
    pub fn finish(self) -> Result<()> {
        println!(
            "{}: {} checks, {} failed",
            self.name, self.total, self.failed
        );
        if self.failed > 0 {
            bail!(
                "{}: {} of {} checks failed",
                self.name,
                self.failed,
                self.total
            );
        }
        Ok(())
    }
}
