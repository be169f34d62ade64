//! What `unimem-dht` and its test rig `unimem-dht-test` (tests/rigs: the concurrency checker,
//! the denial check, `hold` and the benchmark) share: how every handle of the process opens
//! (`--tree`, `--timeout-ms`), and tables with them.

use crate::Dht;
use anyhow::{Context, Result};

/// How every handle of this process opens, and tables with them.
#[derive(Clone, Copy)]
pub struct Ctx(pub gsas::cli::Ctx);

impl Ctx {
    pub fn gsas(&self) -> Result<gsas::Gsas> {
        self.0.open()
    }

    pub fn open(&self, root: u64) -> Result<Dht> {
        Dht::open(self.gsas()?, root).with_context(|| format!("opening table {root:#x}"))
    }
}

/// What `--help` says below the commands of `unimem-dht` and `unimem-dht-test`.
pub const TABLE_HELP: &str = "A table is named by its root address (printed by `create`). \
    Every process has its own protection tree unless --tree joins another (CAP_SYS_ADMIN) or it \
    runs under `unimem-gsas exec`: only processes of the table's tree can use it.";
