//! Running commands inside unimem's QEMU cluster nodes.
//!
//! The nodes have no network; each one's guest runs `unimem-agent` on a
//! virtio-serial port whose host end is a UNIX socket served by QEMU, and
//! `unimem-exec` on the host talks to it. Both speak the frame protocol in
//! [`frame`] (one definition, used by both sides).

mod agent;
pub mod client;
pub mod decoder;
pub mod frame;
mod job;
mod out_queue;
pub mod port;

pub use agent::{serve, OnHangup, ServeOptions};
pub use job::{Launch, TIMEOUT_STATUS};
