//! When a request goes through the submission slot of the home node instead of a `SEND`
//! (docs/GSAS.md, "System calls per operation").
//!
//! A slot costs no system call, but only a home that is busy-polling looks at it; a sleeping
//! one has to be rung (`KICK`). So a handle uses a home's slot while it knows the home polls: a
//! `SEND` told it so (the driver skipped the doorbell), or the last slot request was answered
//! without a kick. A slot request that is not answered within `kick_polls` looks at the
//! response slot gets a `KICK`, and the next request to that home is a `SEND` again. Requests
//! to this node's own service always `SEND`: that applies them at once, in the caller.
//! `GSAS_SUBMIT` chooses: 0 never uses the slots, 1 (the default) as above, 2 puts every
//! request to another node in its slot, kicking when not answered (for tests of the slots).

use unimem_wire::gas::MAX_NODES;

/// Where to send a request, per home node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slots {
    /// Per home: whether it was polling at the last look.
    polling: [bool; MAX_NODES as usize],
    /// Per home: the `seq` of the last request left in its slot (0: none since the interface
    /// was allocated; the driver zeroes the slots for every new owner).
    seq: [u32; MAX_NODES as usize],
    /// `GSAS_SUBMIT`: 0 never, 1 while the home polls, 2 always.
    pub(crate) mode: u8,
    /// Looks at the response slot before a slot request gets a `KICK` (`GSAS_KICK_POLLS`).
    pub(crate) kick_polls: u64,
}

impl Default for Slots {
    fn default() -> Self {
        Slots {
            polling: [false; MAX_NODES as usize],
            seq: [0; MAX_NODES as usize],
            mode: 1,
            kick_polls: 200,
        }
    }
}

impl Slots {
    /// The defaults, changed by `GSAS_SUBMIT` (0, 1 or 2) and `GSAS_KICK_POLLS`.
    pub(crate) fn from_env() -> Self {
        let mut s = Slots::default();
        let num = crate::handle::env_u64;
        if let Some(v) = num("GSAS_SUBMIT") {
            s.mode = v.min(2) as u8;
        }
        if let Some(n) = num("GSAS_KICK_POLLS") {
            s.kick_polls = n.max(1);
        }
        s
    }

    /// Whether the next request to `home` (not this node) goes through its slot.
    pub(crate) fn use_slot(&self, home: u16) -> bool {
        let polling = self.polling.get(usize::from(home)).copied();
        match self.mode {
            0 => false,
            1 => polling.unwrap_or(false),
            _ => polling.is_some(),
        }
    }

    /// The `seq` for the next request in `home`'s slot (never 0).
    pub(crate) fn next_seq(&mut self, home: u16) -> u32 {
        let s = &mut self.seq[usize::from(home) % MAX_NODES as usize];
        *s = s.wrapping_add(1).max(1);
        *s
    }

    /// What a `SEND` to `home` or a slot request's answer (`true`) or `KICK` (`false`) told.
    pub(crate) fn set_polling(&mut self, home: u16, polling: bool) {
        if let Some(p) = self.polling.get_mut(usize::from(home)) {
            *p = polling;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_what_the_home_said() {
        let mut s = Slots::default();
        assert!(!s.use_slot(2), "a SEND first");
        s.set_polling(2, true);
        assert!(s.use_slot(2) && !s.use_slot(1));
        s.set_polling(2, false);
        assert!(!s.use_slot(2));
        s.set_polling(200, true);
        assert!(!s.use_slot(200), "no such node");
        s.mode = 0;
        s.set_polling(2, true);
        assert!(!s.use_slot(2), "turned off");
        s.mode = 2;
        s.set_polling(2, false);
        assert!(s.use_slot(2) && s.use_slot(15) && !s.use_slot(16), "always");
    }

    #[test]
    fn seq_starts_at_one_and_skips_zero() {
        let mut s = Slots::default();
        assert_eq!((s.next_seq(3), s.next_seq(3), s.next_seq(4)), (1, 2, 1));
        s.seq[3] = u32::MAX;
        assert_eq!(s.next_seq(3), 1, "0 means no request");
    }
}
