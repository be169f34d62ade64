//! A protection tree handed to processes of the same user through a Unix socket.
//!
//! Only remoteFork puts a process of another node in a tree, and on one node only a descendant
//! inherits it (`GSAS_TREE_FD`). A user's job whose steps start from separate shells (a batch
//! script per node, a test driver) keeps its tree in a process that serves this socket: every
//! process that connects gets a duplicate of the tree's mailbox file over `SCM_RIGHTS` and joins
//! the tree with it (`INHERIT`), exactly as a child would with the inherited file.
//!
//! Nothing here widens who may join: the socket is the user's (mode 0600), and a peer whose
//! uid (`SO_PEERCRED`, set by the kernel) is neither the server's nor root is turned away, so a
//! tree never leaves its user, as with `SET_TREE` (`CAP_SYS_ADMIN`).

use crate::error::{Error, Result};
use nix::sys::socket::{
    getsockopt, recvmsg, sendmsg, sockopt::PeerCredentials, ControlMessage, ControlMessageOwned,
    MsgFlags,
};
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

/// The one byte that travels with the descriptor (a message must carry some data).
const TAG: u8 = b'T';

fn io_err(path: &Path, e: std::io::Error) -> Error {
    Error::Argument(format!("tree socket {}: {e}", path.display()))
}

/// Binds `path` (mode 0600) for [`serve`]. A socket file left by a server that is gone is
/// replaced; one whose server still answers is an error, as is any other file.
pub fn bind(path: &Path) -> Result<UnixListener> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(Error::Argument(format!(
                "{}: exists and is not a socket",
                path.display()
            )));
        }
        if UnixStream::connect(path).is_ok() {
            return Err(Error::Argument(format!(
                "{}: another process serves a tree there",
                path.display()
            )));
        }
        std::fs::remove_file(path).map_err(|e| io_err(path, e))?;
    }
    // The umask makes the file 0600 from the start: no moment in which another user may connect.
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    let bound = UnixListener::bind(path);
    nix::sys::stat::umask(old);
    let listener = bound.map_err(|e| io_err(path, e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| io_err(path, e))?;
    Ok(listener)
}

/// Answers every connection to `listener` with a duplicate of `tree` (a mailbox file in the
/// tree), for as long as the process lives. Peers of another user are refused and logged.
pub fn serve(listener: &UnixListener, tree: &OwnedFd) -> Result<()> {
    let me = nix::unistd::getuid().as_raw();
    for conn in listener.incoming() {
        let conn = match conn {
            Ok(c) => c,
            Err(e) => {
                log::warn!("tree socket: accept: {e}");
                continue;
            }
        };
        let uid = match getsockopt(&conn, PeerCredentials) {
            Ok(c) => c.uid(),
            Err(e) => {
                log::warn!("tree socket: SO_PEERCRED: {e}");
                continue;
            }
        };
        if uid != me && uid != 0 {
            log::warn!("tree socket: refused a process of uid {uid} (this tree is uid {me}'s)");
            continue;
        }
        let fds = [tree.as_raw_fd()];
        let cmsg = [ControlMessage::ScmRights(&fds)];
        if let Err(e) = sendmsg::<()>(
            conn.as_raw_fd(),
            &[IoSlice::new(&[TAG])],
            &cmsg,
            MsgFlags::empty(),
            None,
        ) {
            log::warn!("tree socket: sending the tree's file: {e}");
        }
    }
    Ok(())
}

/// The tree's file from the server at `path`: pass it to [`crate::TreeSource::Fd`].
pub fn receive(path: &Path) -> Result<OwnedFd> {
    let conn = UnixStream::connect(path).map_err(|e| io_err(path, e))?;
    let mut byte = [0u8; 1];
    let mut iov = [IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let msg = recvmsg::<()>(
        conn.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )?;
    for c in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = c {
            let mut first = None;
            for fd in fds {
                // SAFETY: SCM_RIGHTS installed this descriptor in this process for us alone.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                // Any more than one are closed here.
                first.get_or_insert(fd);
            }
            if let Some(fd) = first {
                return Ok(fd);
            }
        }
    }
    Err(Error::Argument(format!(
        "tree socket {}: the server sent no file (another user's socket?)",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    // Temporary files from std and nix alone: the tempfile crate, as a dev-dependency, turned
    // on a feature of a crate the workspace shares (bitflags "std"), so that every
    // `cargo build` after a `cargo test` rebuilt gsas and all that depends on it.

    /// A directory of its own under the system's temporary directory, removed when dropped.
    struct TempDir(std::path::PathBuf);

    impl TempDir {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir() -> TempDir {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("gsas-test-{}-{n}", std::process::id()));
        std::fs::create_dir(&path).expect("temporary directory");
        TempDir(path)
    }

    /// An unnamed file (a memfd: nothing to clean up).
    fn tempfile() -> std::fs::File {
        use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
        std::fs::File::from(
            memfd_create(c"gsas-test", MemFdCreateFlag::MFD_CLOEXEC).expect("memfd"),
        )
    }

    /// A server on its own thread handing out a file (any file stands in for the mailbox's).
    fn serving(path: &Path, file: &std::fs::File) -> std::thread::JoinHandle<()> {
        let listener = bind(path).expect("bind");
        let fd: OwnedFd = file.try_clone().expect("dup").into();
        std::thread::spawn(move || {
            let _ = serve(&listener, &fd);
        })
    }

    #[test]
    fn a_client_gets_the_same_file() {
        let d = dir();
        let path = d.path().join("tree.sock");
        let file = tempfile();
        let _server = serving(&path, &file);
        let mode = std::fs::metadata(&path).expect("socket").mode() & 0o777;
        assert_eq!(mode, 0o600, "the socket is the user's alone");
        for _ in 0..2 {
            let got = std::fs::File::from(receive(&path).expect("receive"));
            let (a, b) = (
                got.metadata().expect("stat"),
                file.metadata().expect("stat"),
            );
            assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()));
        }
    }

    #[test]
    fn bind_replaces_only_a_dead_socket() {
        let d = dir();
        let plain = d.path().join("plain");
        std::fs::write(&plain, b"x").expect("write");
        assert!(bind(&plain).is_err(), "a regular file is not replaced");
        assert!(plain.exists());

        let stale = d.path().join("stale.sock");
        drop(UnixListener::bind(&stale).expect("bind"));
        assert!(bind(&stale).is_ok(), "a socket nobody serves is replaced");

        let live = d.path().join("live.sock");
        let file = tempfile();
        let _server = serving(&live, &file);
        assert!(bind(&live).is_err(), "a served socket is not taken over");
        assert!(receive(&live).is_ok(), "the first server still serves");
    }

    #[test]
    fn no_server_is_a_clear_error() {
        let d = dir();
        let e = receive(&d.path().join("none.sock")).expect_err("nothing there");
        assert!(e.to_string().contains("none.sock"), "{e}");
    }

    /// A process of another user who reaches the socket (made world-writable here) gets
    /// nothing. Needs root to change user; skipped otherwise.
    #[test]
    fn another_user_is_refused() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root to run a client as another user");
            return;
        }
        let d = dir();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let path = d.path().join("tree.sock");
        let file = tempfile();
        let _server = serving(&path, &file);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        // SAFETY: the child only changes its uid, connects and exits (no locks, no allocation
        // shared with the parent's other threads is relied on).
        match unsafe { nix::unistd::fork() }.expect("fork") {
            nix::unistd::ForkResult::Child => {
                let nobody = nix::unistd::Uid::from_raw(65534);
                let code = if nix::unistd::setresuid(nobody, nobody, nobody).is_err() {
                    3
                } else if receive(&path).is_ok() {
                    1
                } else {
                    0
                };
                // SAFETY: _exit ends the forked child without running the parent's destructors.
                unsafe { nix::libc::_exit(code) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                let st = nix::sys::wait::waitpid(child, None).expect("wait");
                assert_eq!(
                    st,
                    nix::sys::wait::WaitStatus::Exited(child, 0),
                    "1: the other user got the tree's file; 3: setresuid failed"
                );
            }
        }
        assert!(receive(&path).is_ok(), "the owner still gets it");
    }
}
