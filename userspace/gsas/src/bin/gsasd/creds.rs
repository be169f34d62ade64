//! Whom a child runs as, and how it gets there: the issuer's uid and gid as the issuing node's
//! kernel sealed them in the job, this node's supplementary groups of that uid, every
//! capability dropped; and its log file, which that user can read but could not have planted.

use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use nix::fcntl::{self, FcntlArg, OFlag};
use nix::sys::stat::{self, Mode, SFlag};
use nix::unistd::{self, Gid, Uid, UnlinkatFlags, User};
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use unimem_wire::gsas::daemon::{Job, JOB_ADMIN};

/// A child's credentials.
#[derive(Debug, Clone)]
pub struct Identity {
    pub uid: Uid,
    pub gid: Gid,
    /// Supplementary groups, `gid` among them.
    pub groups: Vec<Gid>,
    /// The uid's passwd entry on this node, if it has one.
    pub user: Option<User>,
}

impl Identity {
    /// The job's identity; `EPERM` for uid 0 without [`JOB_ADMIN`]. The groups are those
    /// `initgroups(3)` would set, looked up here because the child may only make async-signal-safe
    /// calls (this daemon has threads); a uid without a passwd entry gets `gid` alone.
    pub fn of(job: &Job) -> Result<Identity, Errno> {
        let (uid, gid) = (Uid::from_raw(job.uid), Gid::from_raw(job.gid));
        if uid.is_root() && job.flags & JOB_ADMIN == 0 {
            return Err(Errno::EPERM);
        }
        let user = User::from_uid(uid)?;
        let groups = match &user {
            Some(u) => {
                let name = CString::new(u.name.as_bytes()).map_err(|_| Errno::EINVAL)?;
                unistd::getgrouplist(&name, gid)?
            }
            None => vec![gid],
        };
        Ok(Identity {
            uid,
            gid,
            groups,
            user,
        })
    }

    /// The groups as numbers (the policy's view).
    pub fn raw_groups(&self) -> Vec<u32> {
        self.groups.iter().map(|g| g.as_raw()).collect()
    }

    /// In the child, between fork and exec (async-signal-safe calls only): groups and gid first
    /// (both need CAP_SETGID, which leaving uid 0 drops), then uid, then, for a user other than
    /// root, no capability left in any set; and no new privileges through set-user-ID or
    /// file-capability programs, as under gsasd.service's NoNewPrivileges=.
    pub fn become_it(&self) -> io::Result<()> {
        unistd::setgroups(&self.groups)?;
        unistd::setresgid(self.gid, self.gid, self.gid)?;
        // With keep-caps set, a setuid away from root would keep the permitted set.
        nix::sys::prctl::set_keepcaps(false)?;
        unistd::setresuid(self.uid, self.uid, self.uid)?;
        if !self.uid.is_root() {
            drop_capabilities()?;
        }
        nix::sys::prctl::set_no_new_privs()?;
        Ok(())
    }
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`: two `CapData`, capabilities 0-31 and 32-63.
const CAP_VERSION_3: u32 = 0x2008_0522;

/// Empties the effective, permitted and inheritable sets (and so the ambient one) and checks that
/// they are empty: the setuid away from root clears them unless securebits say otherwise.
fn drop_capabilities() -> io::Result<()> {
    let mut hdr = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capset reads a valid header and two data records.
    if unsafe { libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: capget writes the header and two data records, all valid.
    if unsafe { libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if data
        .iter()
        .any(|d| d.effective | d.permitted | d.inheritable != 0)
    {
        return Err(io::Error::from_raw_os_error(libc::EPERM));
    }
    Ok(())
}

/// LOG_DIR, opened once: children's logs are created relative to it, so nobody can redirect them
/// by replacing a path component.
pub struct LogDir {
    fd: OwnedFd,
    pub path: PathBuf,
}

impl LogDir {
    /// Creates `path` if needed (0755) and opens it. It must be a directory, not a symlink,
    /// owned by this daemon's user and writable by it alone: a log is created there as root
    /// and then given to the child's user.
    pub fn open(path: &Path) -> Result<LogDir> {
        if !path.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(path)
                .with_context(|| format!("creating {}", path.display()))?;
        }
        let fd = fcntl::open(
            path,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .with_context(|| format!("{}: not a directory, or a symlink", path.display()))?;
        // SAFETY: open returned a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let st = stat::fstat(fd.as_raw_fd())?;
        if st.st_uid != unistd::geteuid().as_raw() || st.st_mode & 0o022 != 0 {
            bail!(
                "{}: owned by uid {} with mode {:o}: the log directory must be owned by uid {} and writable by it alone (children's logs are created there, then handed to their users)",
                path.display(),
                st.st_uid,
                st.st_mode & 0o7777,
                unistd::geteuid()
            );
        }
        Ok(LogDir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// `child-<serial>.log` for a child of `id`, open for appending, owned by `id` (mode 0600).
    /// A log left by an earlier child with the same serial (serials restart with the module) is
    /// appended to if it is a plain file of the same user, and replaced otherwise.
    pub fn child_log(&self, serial: u32, id: &Identity) -> Result<File, Errno> {
        let name = format!("child-{serial}.log");
        let dir = Some(self.fd.as_raw_fd());
        let append = OFlag::O_WRONLY | OFlag::O_APPEND | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        for _ in 0..3 {
            match fcntl::openat(
                dir,
                name.as_str(),
                append | OFlag::O_CREAT | OFlag::O_EXCL,
                Mode::from_bits_truncate(0o600),
            ) {
                Ok(fd) => {
                    // SAFETY: openat returned a new descriptor that nothing else owns.
                    let f = unsafe { File::from_raw_fd(fd) };
                    unistd::fchown(fd, Some(id.uid), Some(id.gid))?;
                    return Ok(f);
                }
                Err(Errno::EEXIST) => {}
                Err(e) => return Err(e),
            }
            // O_NONBLOCK: whatever it is, opening it must not wait.
            if let Ok(fd) = fcntl::openat(
                dir,
                name.as_str(),
                append | OFlag::O_NONBLOCK,
                Mode::empty(),
            ) {
                // SAFETY: as above.
                let f = unsafe { File::from_raw_fd(fd) };
                let st = stat::fstat(fd)?;
                let regular =
                    SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFREG;
                if regular && st.st_nlink == 1 && st.st_uid == id.uid.as_raw() {
                    fcntl::fcntl(fd, FcntlArg::F_SETFL(OFlag::O_APPEND))?;
                    return Ok(f);
                }
            }
            log::info!(
                "{}/{name}: replacing the log of an earlier child (another user's, or not a plain file)",
                self.path.display()
            );
            match unistd::unlinkat(dir, name.as_str(), UnlinkatFlags::NoRemoveDir) {
                Ok(()) | Err(Errno::ENOENT) => {}
                Err(e) => return Err(e),
            }
        }
        Err(Errno::EEXIST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    use unimem_wire::gsas::fork::BLOB_MAX;

    fn job(uid: u32, gid: u32, flags: u32) -> Job {
        Job {
            serial: 1,
            tree: 2,
            node: 3,
            len: 0,
            uid,
            gid,
            flags,
            _reserved: 0,
            blob: [0; BLOB_MAX],
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("gsasd-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn root() -> bool {
        unistd::geteuid().is_root()
    }

    #[test]
    fn identities() {
        assert_eq!(Identity::of(&job(0, 0, 0)).unwrap_err(), Errno::EPERM);
        let admin = Identity::of(&job(0, 0, JOB_ADMIN)).unwrap();
        assert!(admin.groups.contains(&Gid::from_raw(0)));
        assert_eq!(admin.user.map(|u| u.name), Some("root".to_string()));
        // No passwd entry: the job's gid alone.
        let stranger = Identity::of(&job(3_999_999, 3_999_998, 0)).unwrap();
        assert!(stranger.user.is_none());
        assert_eq!(stranger.raw_groups(), vec![3_999_998]);
    }

    #[test]
    fn log_dir_must_be_ours_alone() {
        let d = scratch("dir");
        std::fs::create_dir_all(&d).unwrap();
        let open = LogDir::open(&d.join("logs")).unwrap();
        assert_eq!(std::fs::metadata(&open.path).unwrap().mode() & 0o777, 0o755);
        let wide = d.join("wide");
        std::fs::create_dir(&wide).unwrap();
        std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(LogDir::open(&wide).is_err());
        std::os::unix::fs::symlink(d.join("logs"), d.join("link")).unwrap();
        assert!(LogDir::open(&d.join("link")).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn child_logs() {
        let d = scratch("logs");
        let dir = LogDir::open(&d).unwrap();
        let me = Identity::of(&job(
            unistd::geteuid().as_raw(),
            unistd::getegid().as_raw(),
            JOB_ADMIN,
        ))
        .unwrap();
        dir.child_log(1, &me).unwrap().write_all(b"a").unwrap();
        dir.child_log(1, &me).unwrap().write_all(b"b").unwrap();
        let log = d.join("child-1.log");
        assert_eq!(std::fs::read(&log).unwrap(), b"ab", "appended");
        assert_eq!(std::fs::metadata(&log).unwrap().mode() & 0o777, 0o600);
        // A symlink planted where a log goes is replaced, never followed.
        let target = d.join("target");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, d.join("child-2.log")).unwrap();
        dir.child_log(2, &me).unwrap().write_all(b"x").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        let m = std::fs::symlink_metadata(d.join("child-2.log")).unwrap();
        assert!(m.file_type().is_file());
        if root() {
            // Another user's child with the same serial: a new file, that user's.
            let nobody = Identity::of(&job(65534, 65534, 0)).unwrap();
            dir.child_log(1, &nobody).unwrap().write_all(b"n").unwrap();
            let m = std::fs::metadata(&log).unwrap();
            assert_eq!((m.uid(), m.gid()), (65534, 65534));
            assert_eq!(std::fs::read(&log).unwrap(), b"n");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// As root only: a child of uid 65534 has its ids, its groups, no capability, no new
    /// privileges.
    #[test]
    fn children_lose_every_privilege() {
        if !root() {
            eprintln!("skipped: needs root");
            return;
        }
        let id = Identity::of(&job(65534, 65534, 0)).unwrap();
        let mut cmd = std::process::Command::new("/bin/cat");
        cmd.arg("/proc/self/status");
        let become_it = id.clone();
        // SAFETY: as in gsasd: system calls only.
        unsafe {
            cmd.pre_exec(move || become_it.become_it());
        }
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        let field = |k: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(&format!("{k}:")))
                .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
                .unwrap_or_default()
        };
        assert_eq!(field("Uid"), "65534 65534 65534 65534");
        assert_eq!(field("Gid"), "65534 65534 65534 65534");
        let groups: Vec<String> = id.raw_groups().iter().map(|g| g.to_string()).collect();
        assert_eq!(field("Groups"), groups.join(" "));
        for cap in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
            assert_eq!(field(cap), "0000000000000000", "{cap}");
        }
        assert_eq!(field("NoNewPrivs"), "1");
    }
}
