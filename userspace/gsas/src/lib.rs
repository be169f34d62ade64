//! GSAS, the global shared address space (seed 000 section 2, with seed 001's extensions):
//! threads on any node allocate pages on any node and apply reads, writes and atomic
//! operations to them; each node's atomic service (`unimem_gsas.ko`) applies every operation
//! on its memory and answers in the issuer's response slot. See `docs/GSAS.md`.
//!
//! A [`Gsas`] handle is one mailbox interface of the calling thread, with its GSAS area
//! mapped: an operation costs one `SEND` ioctl, and the answer is read from memory (after a
//! bounded spin, then `sched_yield`s, then short sleeps, until a timeout of 5 s by default).
//! All handles of a process share its protection tree ([`tree`]).
//!
//! ```no_run
//! let g = gsas::Gsas::open()?;
//! let a = g.alloc_shared_page(2, 1)?; // one page on node 2
//! g.write(a, 41)?;
//! assert_eq!(g.fetch_add(a, 1)?, 41);
//! assert_eq!(g.read(a)?, 42);
//! g.free(a)?;
//! # Ok::<(), gsas::Error>(())
//! ```
//!
//! The C library (`include/gsas.h`, `libgsas.so`/`libgsas.a`) is [`capi`].

pub mod capi;
pub mod cli;
mod error;
mod handle;
pub mod json;
mod mapped_read;
pub mod measure;
mod read_arena;
mod submit;
pub mod transport;
pub mod tree;
pub mod tree_socket;

#[cfg(test)]
mod tests;

pub use error::{op_name, Error, Request, Result};
pub use handle::{pieces, ChildId, ExitStatus, Gsas, Stats, WaitPolicy};
pub use transport::{Device, Pause, Transport};
pub use tree::{export_tree_fd, TreeSource, TREE_FD_ENV};
pub use unimem_wire::gsas::{
    addr, fork, indexed, node_of, offset_of, op, status, BULK_MAX, COPY_MAX, MAX_ALLOC_PAGES,
    OFFSET_MASK, PAGE_SIZE,
};
