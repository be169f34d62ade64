// SPDX-License-Identifier: GPL-2.0
//! `/dev/unimem_mailbox`: one interface pair per open file, packets and 64-bit messages.

use crate::{
    gsas::{
        area_page,
        owner::{self, Creds},
        AREA_PAGES, BULK_OUT_PAGE, PAGE_SIZE as GSAS_PAGE,
    },
    kmsg_api::MapRequest,
    mailbox as abi,
    owners::Owners,
    packet::{Packet, PACKET_LEN},
    receive::Take,
    state::State,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    bindings,
    fs::{file, File, LocalFile},
    ioctl::{_IOR, _IOW, _IOWR},
    miscdevice::{MiscDevice, MiscDeviceRegistration},
    mm::virt::{flags as vm, VmaNew},
    new_mutex, new_poll_condvar,
    prelude::*,
    sync::{
        poll::{PollCondVar, PollTable},
        Arc, Mutex,
    },
    transmute::{AsBytes, FromBytes},
    uaccess::{UserPtr, UserSlice},
};

const ALLOC: u32 = _IOR::<abi::AllocInfo>(abi::IOCTL_TYPE, abi::NR_ALLOC);
const ALLOC_AT: u32 = _IOWR::<abi::AllocInfo>(abi::IOCTL_TYPE, abi::NR_ALLOC_AT);
const SEND: u32 = _IOW::<abi::SendArgs>(abi::IOCTL_TYPE, abi::NR_SEND);
const RECV: u32 = _IOR::<abi::RecvArgs>(abi::IOCTL_TYPE, abi::NR_RECV);
const SET_PROT: u32 = _IOW::<abi::SetProtArgs>(abi::IOCTL_TYPE, abi::NR_SET_PROT);
const KBIND: u32 = _IOW::<u32>(abi::IOCTL_TYPE, abi::NR_KBIND);
const KSEND: u32 = _IOW::<abi::KmsgArgs>(abi::IOCTL_TYPE, abi::NR_KSEND);
const KRECV: u32 = _IOR::<abi::KmsgArgs>(abi::IOCTL_TYPE, abi::NR_KRECV);
const INHERIT: u32 = _IOW::<u32>(abi::IOCTL_TYPE, abi::NR_INHERIT);
const SET_TREE: u32 = _IOW::<u32>(abi::IOCTL_TYPE, abi::NR_SET_TREE);
const KICK: u32 = _IOW::<u32>(abi::IOCTL_TYPE, abi::NR_KICK);
const SET_OWNER: u32 = _IOW::<abi::OwnerArgs>(abi::IOCTL_TYPE, abi::NR_SET_OWNER);
const RECV_CREDS: u32 = _IOR::<abi::RecvCredsArgs>(abi::IOCTL_TYPE, abi::NR_RECV_CREDS);
const WAIT_ANSWER: u32 = _IOW::<abi::WaitAnswerArgs>(abi::IOCTL_TYPE, abi::NR_WAIT_ANSWER);

// The interface area is mapped page by page with the kernel's pages.
const _: () = assert!(GSAS_PAGE as usize == bindings::PAGE_SIZE);

const NONE: u32 = u32::MAX;

/// What a file is told before `ALLOC`.
#[derive(Default)]
struct Join {
    tree: Option<u32>,
    creds: Option<Creds>,
}

/// An open `/dev/unimem_mailbox`.
#[pin_data]
pub(crate) struct MboxFile {
    state: Arc<State>,
    iface: AtomicU32,
    service: AtomicU32,
    /// Round-robin start among senders, so one busy node cannot starve the others.
    next_sender: AtomicU32,
    /// What `ALLOC` gives the interface: a tree (`INHERIT`, `SET_TREE`; `None`: a fresh one)
    /// and an identity (`SET_OWNER`; `None`: the opener's). Also serializes those ioctls with
    /// `ALLOC`.
    #[pin]
    join: Mutex<Join>,
    /// Always registered by `poll`, and signalled by `ALLOC`/`KBIND`: an epoll set that
    /// watched the file before it had anything to wait for re-polls and picks up the rest.
    #[pin]
    armed: PollCondVar,
}

use crate::privilege::require_admin;

// The ioctl arguments are `#[repr(C)]` structs of integers and byte arrays, defined once in
// `unimem-wire`, which asserts that each is as large as its fields together (no padding).

// SAFETY: integers and a byte array only: every bit pattern is a valid value.
unsafe impl FromBytes for abi::SendArgs {}
// SAFETY: two `u32`s: every bit pattern is a valid value.
unsafe impl FromBytes for abi::SetProtArgs {}
// SAFETY: `u32`, `u32`, `u64`: every bit pattern is a valid value.
unsafe impl FromBytes for abi::KmsgArgs {}
// SAFETY: three `u32`s: every bit pattern is a valid value.
unsafe impl FromBytes for abi::OwnerArgs {}
// SAFETY: four `u32`s: every bit pattern is a valid value.
unsafe impl FromBytes for abi::AllocInfo {}
// SAFETY: four `u32`s: every bit pattern is a valid value.
unsafe impl FromBytes for abi::WaitAnswerArgs {}
// SAFETY: four `u32`s and no padding (asserted in `unimem-wire`): every byte is initialized.
unsafe impl AsBytes for abi::AllocInfo {}
// SAFETY: one byte array: every byte is initialized.
unsafe impl AsBytes for abi::RecvArgs {}
// SAFETY: a byte array and four `u32`s, no padding (asserted in `unimem-wire`): every byte is
// initialized.
unsafe impl AsBytes for abi::RecvCredsArgs {}
// SAFETY: `u32`, `u32`, `u64` and no padding (asserted in `unimem-wire`): every byte is
// initialized.
unsafe impl AsBytes for abi::KmsgArgs {}

/// Reads the ioctl argument `T` from user memory at `arg`.
fn read_arg<T: FromBytes>(arg: usize) -> Result<T> {
    UserSlice::new(UserPtr::from_addr(arg), core::mem::size_of::<T>())
        .reader()
        .read()
}

/// Writes the ioctl result `value` to user memory at `arg`.
fn write_arg<T: AsBytes>(arg: usize, value: &T) -> Result {
    UserSlice::new(UserPtr::from_addr(arg), core::mem::size_of::<T>())
        .writer()
        .write(value)
}

/// The identity `ALLOC` seals by default: the effective ids of whoever opened the file (as
/// the initial user namespace sees them: one view across the cluster), and `ADMIN` if the
/// allocating thread has `CAP_SYS_ADMIN`. A file opened by root and handed to someone without
/// the capability seals uid 0 without `ADMIN`, which remoteFork refuses to run as root.
fn opener(file: &File) -> Creds {
    let cred = file.cred();
    Creds {
        uid: cred.euid().into_uid_in_init_ns(),
        gid: cred.egid().into_gid_in_init_ns(),
        flags: if require_admin().is_ok() {
            owner::ADMIN
        } else {
            0
        },
    }
}

fn nonblocking(file: &File) -> bool {
    file.flags() & file::flags::O_NONBLOCK != 0
}

impl MboxFile {
    fn iface(&self) -> Result<u32> {
        match self.iface.load(Ordering::Acquire) {
            NONE => Err(EINVAL),
            id => Ok(id),
        }
    }

    /// `ALLOC` (`want` `None`: the lowest free interface that is not well-known) or
    /// `ALLOC_AT` (`CAP_SYS_ADMIN`: the well-known interface the argument names).
    fn alloc(&self, file: &File, arg: usize, at: bool) -> Result<isize> {
        let want = if at {
            require_admin()?;
            let asked: abi::AllocInfo = read_arg(arg)?;
            if !abi::well_known::contains(asked.iface) {
                return Err(EINVAL);
            }
            Some(asked.iface)
        } else {
            None
        };
        let join = self.join.lock();
        if self.iface.load(Ordering::Acquire) != NONE {
            return Err(EINVAL);
        }
        let creds = join.creds.unwrap_or_else(|| opener(file));
        let thread_id = kernel::current!().pid();
        let s = &self.state;
        let (id, prot_id) =
            s.owners
                .alloc(&s.window, &s.counters, thread_id, join.tree, creds, want)?;
        self.iface.store(id, Ordering::Release);
        drop(join);
        let info = abi::AllocInfo {
            iface: id,
            node: self.state.window.node,
            thread_id: thread_id as u32,
            prot_id,
        };
        self.armed.notify_all();
        write_arg(arg, &info)?;
        Ok(0)
    }

    /// `SET_OWNER(args)` (`CAP_SYS_ADMIN`): before `ALLOC`, the identity it seals instead of
    /// the opener's.
    fn set_owner(&self, arg: usize) -> Result<isize> {
        require_admin()?;
        let args: abi::OwnerArgs = read_arg(arg)?;
        if args.flags & !owner::ADMIN != 0 {
            return Err(EINVAL);
        }
        let mut join = self.join.lock();
        if self.iface.load(Ordering::Acquire) != NONE {
            return Err(EINVAL);
        }
        join.creds = Some(Creds {
            uid: args.uid,
            gid: args.gid,
            flags: args.flags,
        });
        Ok(0)
    }

    fn send(&self, arg: usize) -> Result<isize> {
        let args: abi::SendArgs = read_arg(arg)?;
        if args.reserved.iter().any(|&b| b != 0) {
            return Err(EINVAL);
        }
        let polled = self
            .state
            .send(self.iface()?, args.node, args.iface, &args.payload)?;
        Ok(isize::from(polled))
    }

    /// `KICK(node)`: after `ALLOC`, ring `node` (a request waits in a submission slot).
    fn kick(&self, arg: usize) -> Result<isize> {
        let node: u32 = read_arg(arg)?;
        self.iface()?;
        self.state.kick_node(node)?;
        Ok(0)
    }

    fn recv(&self, file: &File, arg: usize) -> Result<isize> {
        let packet = self.take(file)?;
        write_arg(arg, &abi::RecvArgs { packet })?;
        Ok(0)
    }

    /// `RECV_CREDS`: as `RECV`, with the sender's sealed credentials (`abi::RecvCredsArgs`).
    fn recv_creds(&self, file: &File, arg: usize) -> Result<isize> {
        let packet = self.take(file)?;
        let creds = Packet::decode(&packet).ok().and_then(|p| {
            let w = self.state.window.gas().access()?;
            Owners::sender_creds(&w, &p.header)
        });
        let c = creds.unwrap_or_default();
        write_arg(
            arg,
            &abi::RecvCredsArgs {
                packet,
                uid: c.uid,
                gid: c.gid,
                flags: c.flags,
                valid: u32::from(creds.is_some()),
            },
        )?;
        Ok(0)
    }

    /// The next packet for this file's interface (waits unless `O_NONBLOCK`).
    fn take(&self, file: &File) -> Result<[u8; PACKET_LEN]> {
        let id = self.iface()?;
        let s = &self.state;
        let iface = &s.owners.ifaces[id as usize];
        let start = self.next_sender.fetch_add(1, Ordering::Relaxed);
        let packet = loop {
            {
                let mut owner = iface.owner.lock();
                match s.window.take_packet(&s.counters, id, start) {
                    Take::Packet(p) => break p,
                    Take::Gone => return Err(ENODEV),
                    Take::Empty => {
                        if nonblocking(file) {
                            return Err(EAGAIN);
                        }
                        if iface.wait.wait_interruptible(&mut owner) {
                            return Err(ERESTARTSYS);
                        }
                    }
                    // Peers queued more than one pass takes: go again, with the lock released
                    // (and interrupts enabled), so a peer rewriting a ring cannot pin this CPU.
                    Take::Again => {}
                }
            }
            if kernel::current!().signal_pending() {
                return Err(ERESTARTSYS);
            }
        };
        crate::iface::Iface::count(&iface.received);
        Ok(packet)
    }

    fn set_prot(&self, arg: usize) -> Result<isize> {
        require_admin()?;
        let args: abi::SetProtArgs = read_arg(arg)?;
        self.state
            .owners
            .set_prot(&self.state.window, args.iface, args.prot_id)?;
        Ok(0)
    }

    /// `INHERIT(fd)`: before `ALLOC`, join the protection tree of the mailbox file `fd` (which
    /// has allocated). Holding that file is the capability.
    fn inherit(&self, file: &File, arg: usize) -> Result<isize> {
        let fd: u32 = read_arg(arg)?;
        let other = LocalFile::fget(fd).map_err(|_| EBADF)?;
        // SAFETY: both files are alive (ours is being operated on, `other` is referenced).
        let same_driver = unsafe { (*other.as_ptr()).f_op == (*file.as_ptr()).f_op };
        if !same_driver || core::ptr::eq(other.as_ptr(), file.as_ptr()) {
            return Err(EINVAL);
        }
        // SAFETY: a file with this driver's file operations is an open mailbox file, whose
        // private data is the `MboxFile` that `open` returned (a `Pin<KBox<MboxFile>>` turned
        // into its raw pointer), freed only at release, which `other`'s reference holds off.
        let theirs = unsafe { &*(*other.as_ptr()).private_data.cast::<MboxFile>() };
        let tree = theirs
            .iface()
            .ok()
            .and_then(|id| self.state.owners.tree_of(id))
            .ok_or(EINVAL)?;
        self.join(tree)
    }

    /// `SET_TREE(id)` (`CAP_SYS_ADMIN`): before `ALLOC`, put this file in tree `id`.
    fn set_tree(&self, arg: usize) -> Result<isize> {
        require_admin()?;
        let tree: u32 = read_arg(arg)?;
        if !Owners::valid_tree(tree) {
            return Err(EINVAL);
        }
        self.join(tree)
    }

    fn join(&self, id: u32) -> Result<isize> {
        let mut join = self.join.lock();
        if self.iface.load(Ordering::Acquire) != NONE {
            return Err(EINVAL);
        }
        join.tree = Some(id);
        Ok(0)
    }

    fn kbind(&self, arg: usize) -> Result<isize> {
        require_admin()?;
        let service: u32 = read_arg(arg)?;
        if self.service.load(Ordering::Acquire) != NONE {
            return Err(EINVAL);
        }
        self.state.services.bind(service)?;
        self.service.store(service, Ordering::Release);
        self.armed.notify_all();
        Ok(0)
    }

    fn ksend(&self, arg: usize) -> Result<isize> {
        require_admin()?;
        let args: abi::KmsgArgs = read_arg(arg)?;
        self.state.ksend(args.node, args.service, args.word)?;
        Ok(0)
    }

    fn krecv(&self, file: &File, arg: usize) -> Result<isize> {
        require_admin()?;
        let service = match self.service.load(Ordering::Acquire) {
            NONE => return Err(EINVAL),
            s => s,
        };
        let user = &self.state.services.user[service as usize];
        let (sender, word) = {
            let mut queue = user.queue.lock();
            loop {
                if let Some(m) = queue.pop() {
                    break m;
                }
                if self.state.window.gone() {
                    return Err(ENODEV);
                }
                if nonblocking(file) {
                    return Err(EAGAIN);
                }
                if user.wait.wait_interruptible(&mut queue) {
                    return Err(ERESTARTSYS);
                }
            }
        };
        write_arg(
            arg,
            &abi::KmsgArgs {
                node: sender,
                service,
                word,
            },
        )?;
        Ok(0)
    }
}

#[vtable]
impl MiscDevice for MboxFile {
    type Ptr = Pin<KBox<Self>>;

    fn open(_file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<Pin<KBox<Self>>> {
        let state = crate::current_state().ok_or(ENODEV)?;
        KBox::pin_init(
            pin_init!(MboxFile {
                state,
                iface: AtomicU32::new(NONE),
                service: AtomicU32::new(NONE),
                next_sender: AtomicU32::new(0),
                join <- new_mutex!(Join::default(), "unimem_mailbox::join"),
                armed <- new_poll_condvar!("unimem_mailbox::armed"),
            }),
            GFP_KERNEL,
        )
    }

    fn release(this: Pin<KBox<Self>>, file: &File) {
        // Every mapping of the interface area held the file, so none is left: the next owner
        // of the interface cannot be reached through an old one.
        this.state.maps.unmap_file(file.as_ptr());
        if let Ok(id) = this.iface() {
            this.state.owners.free(&this.state.window, id);
        }
        let service = this.service.load(Ordering::Acquire);
        if service != NONE {
            this.state.services.unbind(service);
        }
    }

    fn ioctl(this: Pin<&Self>, file: &File, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            ALLOC => this.alloc(file, arg, false),
            ALLOC_AT => this.alloc(file, arg, true),
            SEND => this.send(arg),
            RECV => this.recv(file, arg),
            RECV_CREDS => this.recv_creds(file, arg),
            SET_PROT => this.set_prot(arg),
            KBIND => this.kbind(arg),
            KSEND => this.ksend(arg),
            KRECV => this.krecv(file, arg),
            INHERIT => this.inherit(file, arg),
            SET_TREE => this.set_tree(arg),
            KICK => this.kick(arg),
            SET_OWNER => this.set_owner(arg),
            WAIT_ANSWER => {
                let args: abi::WaitAnswerArgs = read_arg(arg)?;
                this.state.wait_answer(this.iface()?, &args)?;
                Ok(0)
            }
            _ => Err(ENOTTY),
        }
    }

    /// The interface's GSAS area in this node's partition (`gsas::AREA_*`): offset
    /// `MMAP_RESPONSES` (responses, bulk-in) read-only, `MMAP_BULK_OUT` (bulk-out, submission
    /// slots) read-write and shared. From `MMAP_GSAS` on: pages of this node's partition that the GSAS service
    /// allocated to the file's protection tree, shared. From `MMAP_REMOTE` on: pages of another
    /// node's partition as its service approved (`remote_map.rs`). Only after `ALLOC`; never
    /// executable.
    fn mmap(this: Pin<&Self>, file: &File, vma: &VmaNew) -> Result {
        let id = this.iface()?;
        let len = vma.end() - vma.start();
        // SAFETY: `vma` is a valid VMA being set up; `vm_pgoff` is plain data.
        let pgoff = unsafe { (*vma.as_ptr()).vm_pgoff };
        let offset = (pgoff as u64).checked_mul(GSAS_PAGE).ok_or(EINVAL)?;
        let end = offset.checked_add(len as u64).ok_or(EINVAL)?;
        if len == 0 {
            return Err(EINVAL);
        }
        vma.try_clear_mayexec()?;
        if let Some((home, part_off)) = abi::remote_of(offset) {
            return crate::remote_map::mmap(&this.state, file, id, vma, home, part_off, len);
        }
        let private_write = vma.flags() & vm::SHARED == 0 && vma.flags() & vm::MAYWRITE != 0;
        let s = &this.state;
        let info = s.window.gas().info();
        let partition =
            info.gas_phys + info.ctl_size + u64::from(s.window.node) * info.partition_size;
        let (phys, pages) = if let Some(part_off) = offset.checked_sub(abi::MMAP_GSAS) {
            if end - abi::MMAP_GSAS > info.partition_size {
                return Err(EINVAL);
            }
            if private_write {
                // A private copy would never be the memory the service changes.
                return Err(EINVAL);
            }
            let tree = s.owners.tree_of(id).ok_or(EINVAL)?;
            let creds = {
                let w = s.window.gas().access().ok_or(ENODEV)?;
                Owners::published_creds(&s.window, &w, id)
            };
            // A read-only mapping stays so: another tree's pages may be granted for reading
            // only, checked once, here.
            let write = vma.writable();
            if !write {
                vma.try_clear_maywrite()?;
            }
            let pages = MapRequest {
                tree,
                uid: creds.uid,
                gid: creds.gid,
                flags: creds.flags,
                write: u32::from(write),
                offset: part_off,
                len: len as u64,
            };
            (partition + part_off, Some(pages))
        } else {
            if end > AREA_PAGES * GSAS_PAGE {
                return Err(EINVAL);
            }
            if offset < BULK_OUT_PAGE * GSAS_PAGE {
                // Responses and bulk-in are written by the services only.
                if vma.writable() {
                    return Err(EACCES);
                }
                vma.try_clear_maywrite()?;
            } else if private_write {
                // A private copy of bulk-out or the slots would never reach the service.
                return Err(EINVAL);
            }
            (partition + area_page(id, 0) + offset, None)
        };
        vma.set_io();
        vma.set_dontexpand();
        vma.set_dontdump();
        s.maps.map_user(file.as_ptr(), pages, || {
            // SAFETY: `[phys, phys + len)` is inside this node's partition of the window: this
            // interface's area (`AREA_END` lies inside the reserved start of every partition,
            // which `Window::new` checked) or pages the GSAS service allocated to this file's
            // tree (`map_user` asked it, and its frees zap this mapping); the device is bound
            // (`map_user`; revocation zaps this mapping), and `VM_IO | VM_DONTEXPAND` keep the
            // core from treating it as ordinary pages or growing it.
            kernel::error::to_result(unsafe {
                bindings::remap_pfn_range(
                    vma.as_ptr(),
                    vma.start(),
                    (phys >> bindings::PAGE_SHIFT) as usize,
                    len,
                    (*vma.as_ptr()).vm_page_prot,
                )
            })
        })
    }

    fn poll(this: Pin<&Self>, file: &File, table: &PollTable<'_>) -> Result<u32> {
        if this.state.window.gone() {
            return Ok(bindings::POLLERR | bindings::POLLHUP);
        }
        let mut mask = bindings::POLLOUT | bindings::POLLWRNORM;
        table.register_wait(file, &this.armed);
        if let Ok(id) = this.iface() {
            let iface = &this.state.owners.ifaces[id as usize];
            table.register_wait(file, &iface.wait);
            if this.state.window.has_packet(id) {
                mask |= bindings::POLLIN | bindings::POLLRDNORM;
            }
        }
        let service = this.service.load(Ordering::Acquire);
        if let Some(user) = this.state.services.user.get(service as usize) {
            table.register_wait(file, &user.wait);
            if !user.queue.lock().is_empty() {
                mask |= bindings::POLLIN | bindings::POLLRDNORM;
            }
        }
        Ok(mask)
    }
}
