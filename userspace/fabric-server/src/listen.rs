//! The listening socket's path: claimed only if no live server owns it, released on exit.

use std::fs;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use mio::net::UnixListener;
use nix::sys::stat::{umask, Mode};

/// The socket file we created. Dropping it removes the file, unless it has since been replaced
/// by someone else's (a second server started after ours was declared dead, say).
pub struct SocketFile {
    path: PathBuf,
    identity: (u64, u64),
    _claim: UnixDatagram,
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        match fs::symlink_metadata(&self.path) {
            Ok(meta) if (meta.dev(), meta.ino()) == self.identity => {
                if let Err(e) = fs::remove_file(&self.path) {
                    log::warn!("removing {}: {e}", self.path.display());
                }
            }
            Ok(_) => log::warn!(
                "{} was replaced by another file; leaving it",
                self.path.display()
            ),
            Err(_) => {}
        }
    }
}

/// Binds a listener at `path`, removing a socket file left by a dead server but refusing to
/// steal the path from a live one (or to delete something that is not a socket). A `private`
/// socket is created with mode 0600: only our user (and root) can connect.
pub fn bind(path: &Path, private: bool) -> Result<(UnixListener, SocketFile)> {
    let claim = claim(path)?;
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("inspecting {}", path.display())),
        Ok(meta) if !meta.file_type().is_socket() => {
            bail!(
                "{} exists and is not a socket; refusing to replace it",
                path.display()
            )
        }
        // Whatever listens there is not a unimem-fabric (we hold the claim), so connecting
        // is the only way to tell whether it is alive.
        Ok(_) => match std::os::unix::net::UnixStream::connect(path) {
            Ok(_) => bail!(
                "another server is already listening on {}; stop it first",
                path.display()
            ),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                log::info!("removing stale socket {}", path.display());
                fs::remove_file(path)
                    .with_context(|| format!("removing stale socket {}", path.display()))?;
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("checking whether a server listens on {}", path.display())
                })
            }
        },
    }
    let listener = if private {
        // The mode is set at creation, so there is no moment at which others could connect.
        // The server is single-threaded: nothing else creates files meanwhile.
        let old = umask(Mode::from_bits_truncate(0o177));
        let bound = UnixListener::bind(path);
        umask(old);
        bound
    } else {
        UnixListener::bind(path)
    }
    .with_context(|| format!("listening on {}", path.display()))?;
    let meta = fs::symlink_metadata(path)
        .with_context(|| format!("inspecting the new socket {}", path.display()))?;
    Ok((
        listener,
        SocketFile {
            path: path.to_path_buf(),
            identity: (meta.dev(), meta.ino()),
            _claim: claim,
        },
    ))
}

/// Tells a live unimem-fabric on `path` apart from a stale socket file without connecting to
/// it: a probe connection would be accepted as a VM, and the VMs already connected would see a
/// node come and go. Every server holds an abstract-namespace socket named after its path; the
/// kernel releases the name when the server dies, however it dies.
fn claim(path: &Path) -> Result<UnixDatagram> {
    let name = claim_name(path)?;
    let addr = SocketAddr::from_abstract_name(name.as_bytes())
        .with_context(|| format!("naming the claim on {}", path.display()))?;
    match UnixDatagram::bind_addr(&addr) {
        Ok(sock) => Ok(sock),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => bail!(
            "another server is already listening on {}; stop it first",
            path.display()
        ),
        Err(e) => Err(e).with_context(|| format!("claiming {}", path.display())),
    }
}

fn claim_name(path: &Path) -> Result<String> {
    let file = path
        .file_name()
        .with_context(|| format!("{} does not name a file", path.display()))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = fs::canonicalize(dir).with_context(|| format!("resolving {}", dir.display()))?;
    let full = dir.join(file);
    let name = format!("unimem-fabric:{}", full.display());
    // Abstract names share sun_path's 108 bytes with the leading NUL.
    if name.len() < 108 {
        return Ok(name);
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in full.as_os_str().as_encoded_bytes() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    Ok(format!("unimem-fabric:{h:016x}"))
}
