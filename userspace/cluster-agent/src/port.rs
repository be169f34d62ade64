//! Locating and opening the guest side of the virtio-serial port.

use nix::fcntl::OFlag;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where the kernel lists virtio-serial ports with their names. The guests
/// have devtmpfs but no udev, so there are no /dev/virtio-ports/ symlinks.
pub const VIRTIO_PORTS_CLASS: &str = "/sys/class/virtio-ports";

/// Finds the port whose `name` attribute is `name` and returns its device
/// node (`dev_dir/vportNpM`), or `None` if no such port exists (yet).
pub fn find_port(class_dir: &Path, dev_dir: &Path, name: &str) -> io::Result<Option<PathBuf>> {
    let entries = match std::fs::read_dir(class_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry?;
        // A port whose name is unreadable just is not ours.
        let Ok(port_name) = std::fs::read_to_string(entry.path().join("name")) else {
            continue;
        };
        if port_name.trim_end() == name {
            found.push(dev_dir.join(entry.file_name()));
        }
    }
    found.sort();
    Ok(found.into_iter().next())
}

/// Opens a port device for non-blocking reads and writes. std opens with
/// O_CLOEXEC, which keeps the port out of the commands the agent runs.
pub fn open_port(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::find_port;
    use std::path::Path;

    #[test]
    fn finds_port_by_name_attribute() {
        let root = std::env::temp_dir().join(format!("unimem-port-test-{}", std::process::id()));
        let class = root.join("class");
        for (port, name) in [
            ("vport0p0", "org.qemu.guest_agent.0"),
            ("vport1p1", "unimem.agent"),
        ] {
            std::fs::create_dir_all(class.join(port)).unwrap();
            std::fs::write(class.join(port).join("name"), format!("{name}\n")).unwrap();
        }
        // A port without a name attribute must be skipped, not fail the scan.
        std::fs::create_dir_all(class.join("vport2p0")).unwrap();

        let dev = Path::new("/dev");
        assert_eq!(
            find_port(&class, dev, "unimem.agent").unwrap(),
            Some(dev.join("vport1p1"))
        );
        assert_eq!(find_port(&class, dev, "unimem").unwrap(), None);
        assert_eq!(
            find_port(&root.join("missing"), dev, "unimem.agent").unwrap(),
            None
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
