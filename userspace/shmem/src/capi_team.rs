//! The C ABI of OpenSHMEM 1.5 teams (`include/shmem/teams.h`): team management, team
//! contexts, and the entry points of the header's team collectives. A `shmem_team_t` is a
//! team's slot + 1 ([`crate::team`]). Unlike the 1.4 routines, these report a bad team
//! (`SHMEM_TEAM_INVALID`, a destroyed one) with their return value, as the spec asks; program
//! errors in the data (a non-symmetric buffer, a root out of range) still end the job.

use crate::capi::Ctx;
use crate::pe::{die, job};
use crate::team::{self, Team, NUM_CONTEXTS, SHARED, WORLD};
use crate::team_coll::{self, Args, Combine, Kind};
use crate::team_ctx::{self, Seat};
use std::ffi::{c_int, c_long, c_void};
use std::ptr::null_mut;
use std::sync::Arc;

/// `shmem_team_config_t`.
#[repr(C)]
pub struct Config {
    pub num_contexts: c_int,
}

/// `SHMEM_CTX_INVALID`.
pub const CTX_INVALID: usize = usize::MAX;

type Handle = *mut c_void;

fn handle(h: usize) -> Handle {
    h as Handle
}

fn team_of(h: Handle) -> Option<Arc<Team>> {
    job();
    team::get(h as usize)
}

#[no_mangle]
pub extern "C" fn shmem_team_my_pe(t: Handle) -> c_int {
    team_of(t).map_or(-1, |t| t.me as c_int)
}

#[no_mangle]
pub extern "C" fn shmem_team_n_pes(t: Handle) -> c_int {
    team_of(t).map_or(-1, |t| t.pes.len() as c_int)
}

/// # Safety
/// `config` is NULL or a `shmem_team_config_t` to write.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_get_config(
    t: Handle,
    mask: c_long,
    config: *mut Config,
) -> c_int {
    let Some(t) = team_of(t) else { return -1 };
    if config.is_null() {
        return -1;
    }
    if mask & NUM_CONTEXTS != 0 {
        // SAFETY: the caller's config (checked non-NULL).
        unsafe { (*config).num_contexts = t.contexts.configured() };
    }
    0
}

#[no_mangle]
pub extern "C" fn shmem_team_translate_pe(from: Handle, pe: c_int, to: Handle) -> c_int {
    match (team_of(from), team_of(to)) {
        (Some(f), Some(t)) => team::translate(&f, pe, &t),
        _ => -1,
    }
}

/// `num_contexts` of a split's configuration, if the mask asks for it (a negative count
/// allows no context, as 0 does).
/// # Safety
/// `config` is NULL or a `shmem_team_config_t`.
unsafe fn contexts(config: *const Config, mask: c_long) -> Option<usize> {
    if mask & NUM_CONTEXTS != 0 && !config.is_null() {
        // SAFETY: the caller's config (checked non-NULL).
        let n = unsafe { (*config).num_contexts };
        Some(usize::try_from(n).unwrap_or(0))
    } else {
        None
    }
}

/// Writes the split's results (when the out pointer is not NULL).
/// # Safety
/// Each pointer is NULL or a `shmem_team_t` to write.
unsafe fn give(out: &[*mut Handle], handles: &[usize]) {
    for (&o, &h) in out.iter().zip(handles) {
        if !o.is_null() {
            // SAFETY: the caller's shmem_team_t.
            unsafe { *o = handle(h) };
        }
    }
}

/// # Safety
/// The pointers are as shmem/teams.h describes them (valid, or NULL where allowed).
#[no_mangle]
pub unsafe extern "C" fn shmem_team_split_strided(
    parent: Handle,
    start: c_int,
    stride: c_int,
    size: c_int,
    config: *const Config,
    mask: c_long,
    new_team: *mut Handle,
) -> c_int {
    // SAFETY: as the caller's contract.
    unsafe { give(&[new_team], &[0]) };
    let Some(p) = team_of(parent) else { return -1 };
    let idx = match team::strided(p.pes.len(), start, stride, size) {
        Ok(v) => v,
        Err(why) => {
            log::debug!("shmem_team_split_strided: {why}");
            return -1;
        }
    };
    // SAFETY: as the caller's contract.
    let axes = [(idx, unsafe { contexts(config, mask) })];
    match team::create("shmem_team_split_strided", &p, &axes) {
        // SAFETY: as the caller's contract.
        Some(h) => unsafe {
            give(&[new_team], &h);
            0
        },
        None => -1,
    }
}

/// # Safety
/// The pointers are as shmem/teams.h describes them (valid, or NULL where allowed).
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the spec's signature
pub unsafe extern "C" fn shmem_team_split_2d(
    parent: Handle,
    xrange: c_int,
    xconfig: *const Config,
    xmask: c_long,
    xteam: *mut Handle,
    yconfig: *const Config,
    ymask: c_long,
    yteam: *mut Handle,
) -> c_int {
    // SAFETY: as the caller's contract.
    unsafe { give(&[xteam, yteam], &[0, 0]) };
    let Some(p) = team_of(parent) else { return -1 };
    if xrange < 1 {
        return -1;
    }
    let (xs, ys) = team::grid(p.pes.len(), p.me, xrange as usize);
    // SAFETY: as the caller's contract.
    let axes = unsafe {
        [
            (xs, contexts(xconfig, xmask)),
            (ys, contexts(yconfig, ymask)),
        ]
    };
    match team::create("shmem_team_split_2d", &p, &axes) {
        // SAFETY: as the caller's contract.
        Some(h) => unsafe {
            give(&[xteam, yteam], &h);
            0
        },
        None => -1,
    }
}

#[no_mangle]
pub extern "C" fn shmem_team_destroy(t: Handle) {
    let h = t as usize;
    if h == WORLD + 1 || h == SHARED + 1 {
        die("shmem_team_destroy: the predefined teams (SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED) cannot be destroyed");
    }
    let Some(team) = team_of(t) else { return };
    // Every member is done with the team's words before any reuses the slot.
    let j = job();
    crate::coll::barrier(&j, "shmem_team_destroy", &team.set(), team.words(&j));
    team::remove(h);
}

#[no_mangle]
pub extern "C" fn shmem_team_sync(t: Handle) -> c_int {
    let Some(team) = team_of(t) else { return -1 };
    let j = job();
    crate::coll::barrier(&j, "shmem_team_sync", &team.set(), team.words(&j));
    0
}

/// `shmem_ptr` for team PE `pe`: NULL where `shmem_ptr` is (PEs of other nodes), and for a
/// PE that is not one of the team.
#[no_mangle]
pub extern "C" fn shmem_team_ptr(t: Handle, dest: *const c_void, pe: c_int) -> *mut c_void {
    match team_of(t).and_then(|t| t.world(pe)) {
        Some(w) => crate::capi::shmem_ptr(dest, w as c_int),
        None => null_mut(),
    }
}

/// A context of team `t`: non-zero and `SHMEM_CTX_INVALID` for an invalid team, unknown
/// options, or a team whose configured `num_contexts` are all open ([`crate::team_ctx`]).
/// # Safety
/// `ctx` is NULL or a `shmem_ctx_t` to write.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_create_ctx(
    t: Handle,
    options: c_long,
    ctx: *mut *mut Ctx,
) -> c_int {
    if ctx.is_null() {
        die("shmem_team_create_ctx: ctx is NULL");
    }
    let Some(seat) = team_of(t).and_then(Seat::take) else {
        log::debug!("shmem_team_create_ctx: an invalid team, or all its num_contexts are open");
        // SAFETY: the caller's shmem_ctx_t (checked non-NULL).
        unsafe { *ctx = CTX_INVALID as *mut Ctx };
        return -1;
    };
    // SAFETY: as above.
    let r = unsafe { crate::capi::shmem_ctx_create(options, ctx) };
    if r == 0 {
        // SAFETY: just made by shmem_ctx_create; the context gives the seat back when destroyed.
        unsafe {
            (**ctx).team = t as usize;
            (**ctx).seat = Some(seat);
        }
    } else {
        // SAFETY: as above.
        unsafe { *ctx = CTX_INVALID as *mut Ctx };
    }
    r
}

/// # Safety
/// `ctx` is a context (default, made and not destroyed, or `SHMEM_CTX_INVALID`); `team` is
/// NULL or a `shmem_team_t` to write.
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_get_team(ctx: *mut Ctx, team: *mut Handle) -> c_int {
    let h = match ctx as usize {
        0 => WORLD + 1,
        CTX_INVALID => 0,
        // SAFETY: a context shmem_ctx_create made (the caller's contract).
        _ => unsafe { (*ctx).team },
    };
    if !team.is_null() {
        // SAFETY: the caller's shmem_team_t.
        unsafe { *team = handle(h) };
    }
    if h == 0 || team.is_null() {
        -1
    } else {
        0
    }
}

/// The world PE of PE `pe` of context `ctx`'s team: the one translation of every context
/// form of RMA, atomics and put-with-signal (shmem.h's `_shmem_ctx_pe`, which the typed
/// `shmem_ctx_*` routines and the C11 generic forms with a context all go through).
/// # Safety
/// As `shmem_ctx_get_team`.
#[no_mangle]
pub unsafe extern "C" fn unimem_shmem_ctx_pe(ctx: *mut Ctx, pe: c_int) -> c_int {
    let c = match ctx as usize {
        0 => return pe,
        CTX_INVALID => die("a shmem_ctx_* routine was called with SHMEM_CTX_INVALID"),
        // SAFETY: a context shmem_ctx_create made (the caller's contract).
        _ => unsafe { &*ctx },
    };
    // shmem_ctx_create's contexts, and team contexts of WORLD: world numbers already.
    let Some(seat) = c.seat.as_ref().filter(|_| c.team != WORLD + 1) else {
        return pe;
    };
    // The seat keeps the team's list, but a destroyed team's contexts must not be used.
    if !team_of(c.team as Handle).is_some_and(|t| Arc::ptr_eq(&t, seat.team())) {
        die("a shmem_ctx_* routine was called on a context whose team was destroyed")
    }
    match team_ctx::world_pe(seat.team(), pe) {
        Ok(w) => w as c_int,
        Err(why) => die(&format!("shmem_ctx_*: {why}")),
    }
}

/// The team collectives of shmem/teams.h: `kind` 0 broadcast, 1 collect, 2 fcollect, 3
/// alltoall, 4 alltoalls; `nelems` elements of `width` bytes; `root` (broadcast); strides
/// (alltoalls). 0, or -1 for a bad team.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn unimem_shmem_team_coll(
    t: Handle,
    kind: c_int,
    width: usize,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    root: c_int,
    dst: isize,
    sst: isize,
) -> c_int {
    let Some(k) = Kind::from_code(kind) else {
        die(&format!("unknown team collective {kind}"))
    };
    let Some(team) = team_of(t) else { return -1 };
    let a = Args {
        dest: dest as usize,
        src: src as usize,
        nelems,
        width,
        root,
        dst,
        sst,
    };
    team_coll::run(&job(), &team, k, &a);
    0
}

/// The team reductions: `nreduce` elements of `size` bytes, combined by `combine`.
#[no_mangle]
pub extern "C" fn unimem_shmem_team_reduce(
    t: Handle,
    dest: *mut c_void,
    src: *const c_void,
    nreduce: usize,
    size: usize,
    combine: Combine,
) -> c_int {
    let Some(team) = team_of(t) else { return -1 };
    team_coll::reduce(
        &job(),
        &team,
        dest as usize,
        src as usize,
        nreduce,
        size,
        combine,
    );
    0
}
