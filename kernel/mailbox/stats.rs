// SPDX-License-Identifier: GPL-2.0
//! `/sys/kernel/debug/unimem_mailbox/stats`.

use crate::state::State;
use core::{fmt, sync::atomic::Ordering};

impl State {
    pub(crate) fn write_stats(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let load = |c: &core::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        writeln!(f, "node {} of {}", self.window.node, self.window.nodes)?;
        writeln!(f, "iface thread prot sent received rejected dropped")?;
        for (id, i) in self.owners.ifaces.iter().enumerate() {
            let owner = *i.owner.lock();
            let counts = [
                load(&i.sent),
                load(&i.received),
                load(&i.rejected),
                load(&i.dropped),
            ];
            if owner.is_none() && counts.iter().all(|&c| c == 0) {
                continue;
            }
            match owner {
                Some(o) => write!(f, "{} {} {}", id, o.thread_id, o.prot_id)?,
                None => write!(f, "{} - -", id)?,
            }
            writeln!(
                f,
                " {} {} {} {}",
                counts[0], counts[1], counts[2], counts[3]
            )?;
        }
        writeln!(f, "malformed {}", load(&self.counters.malformed))?;
        writeln!(f, "resynced {}", load(&self.counters.resynced))?;
        writeln!(f, "submissions {}", load(&self.counters.submitted))?;
        writeln!(f, "kicks {}", load(&self.counters.kicks))?;
        writeln!(f, "answer_sleeps {}", load(&self.counters.answer_sleeps))?;
        writeln!(f, "service sent received rejected dropped")?;
        let c = &self.services.counters;
        for s in 1..c.sent.len() {
            let counts = [
                load(&c.sent[s]),
                load(&c.received[s]),
                load(&c.rejected[s]),
                load(&c.dropped[s]),
            ];
            if counts.iter().any(|&n| n != 0) {
                writeln!(
                    f,
                    "{} {} {} {} {}",
                    s, counts[0], counts[1], counts[2], counts[3]
                )?;
            }
        }
        Ok(())
    }
}
