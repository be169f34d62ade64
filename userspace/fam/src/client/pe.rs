//! Processing elements: this process's rank and the group's size, and the barrier. Under
//! oshrun (`SHMEM_JOB` and `SHMEM_PE` set) they are the OpenSHMEM job's: the PE count from its
//! descriptor and the barrier on its header (`shmem::job::Layout::aux_barrier`), without
//! `shmem_init` (which would map a symmetric heap the FAM program does not need). Otherwise
//! the program is one PE: id 0, count 1, and the barrier returns at once.

use std::time::Duration;

use shmem::job::Layout;
use shmem::pe::{JOB_ENV, PE_ENV};
use shmem::remote::Remote;

use super::memory::Memory;
use crate::{FamError, Result};

/// OpenFAM's `runtime` values: all accepted, none needs anything from unimem (oshrun or no
/// launcher are what there is).
pub const RUNTIMES: [&str; 3] = ["NONE", "PMIX", "PMI2"];

/// The PE this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pe {
    pub id: u32,
    pub count: u32,
    /// The oshrun job, if any.
    pub job: Option<Layout>,
}

impl Pe {
    pub const SINGLE: Pe = Pe {
        id: 0,
        count: 1,
        job: None,
    };
}

/// Checks OpenFAM's `runtime` option.
pub fn check_runtime(runtime: Option<&str>) -> Result<()> {
    match runtime {
        None => Ok(()),
        Some(r) if RUNTIMES.iter().any(|k| k.eq_ignore_ascii_case(r.trim())) => Ok(()),
        Some(r) => Err(FamError::Invalid(format!(
            "runtime {r:?}: known are NONE, PMIX and PMI2"
        ))),
    }
}

/// Adapts the pool's handle to what shmem's job code calls.
struct Gas<'a>(&'a dyn Memory);

impl Remote for Gas<'_> {
    fn read(&self, addr: u64) -> gsas::Result<u64> {
        self.0.word(unimem_wire::gsas::op::READ, addr, 0, 0)
    }
    fn write(&self, addr: u64, v: u64) -> gsas::Result<()> {
        self.0
            .word(unimem_wire::gsas::op::WRITE, addr, v, 0)
            .map(drop)
    }
    fn fetch_add(&self, addr: u64, v: u64) -> gsas::Result<u64> {
        self.0.word(unimem_wire::gsas::op::FETCH_ADD, addr, v, 0)
    }
    fn bulk_read(&self, addr: u64, buf: &mut [u8]) -> gsas::Result<()> {
        self.0.bulk_read(addr, buf)
    }
    fn bulk_write(&self, addr: u64, data: &[u8]) -> gsas::Result<()> {
        self.0.bulk_write(addr, data)
    }
}

/// The job's environment: descriptor address and PE number, if oshrun started us.
pub fn job_env(job: Option<&str>, pe: Option<&str>) -> Result<Option<(u64, u32)>> {
    let (Some(job), Some(pe)) = (job, pe) else {
        return Ok(None);
    };
    let desc = u64::from_str_radix(job.trim().trim_start_matches("0x"), 16)
        .map_err(|_| FamError::Invalid(format!("{JOB_ENV}={job:?} is not an address")))?;
    let pe = pe
        .trim()
        .parse::<u32>()
        .map_err(|_| FamError::Invalid(format!("{PE_ENV}={pe:?} is not a PE number")))?;
    Ok(Some((desc, pe)))
}

/// This process's PE: the oshrun job's if `env` names one (read from its descriptor), else
/// the single PE.
pub fn join(m: &dyn Memory, env: Option<(u64, u32)>) -> Result<Pe> {
    let Some((desc, id)) = env else {
        return Ok(Pe::SINGLE);
    };
    let layout = Layout::open(&Gas(m), desc).map_err(FamError::Resource)?;
    if id as usize >= layout.npes {
        return Err(FamError::Invalid(format!(
            "{PE_ENV}={id} but the job has {} PEs",
            layout.npes
        )));
    }
    Ok(Pe {
        id,
        count: layout.npes as u32,
        job: Some(layout),
    })
}

/// The process's PE from its environment.
pub fn join_from_env(m: &dyn Memory) -> Result<Pe> {
    let job = std::env::var(JOB_ENV).ok();
    let pe = std::env::var(PE_ENV).ok();
    join(m, job_env(job.as_deref(), pe.as_deref())?)
}

/// Waits until every PE of the job called it.
pub fn barrier(m: &dyn Memory, pe: &Pe) -> Result<()> {
    let Some(layout) = pe.job else { return Ok(()) };
    layout
        .aux_barrier(&Gas(m), Duration::from_millis(2))
        .map_err(|e| match e.contains("aborted") {
            true => FamError::InvalidOp(e),
            false => FamError::Libfabric(e),
        })
}

/// `fam_abort(status)` under oshrun: the job ends everywhere with `status`, as OpenFAM's
/// launcher (PMIx_Abort) ends it, the way `shmem_global_exit` does (the status in this PE's
/// slot, then the job's abort flag; oshrun exits with the first status recorded). This
/// process stays to exit with its own status: its agent's SIGTERM is blocked first.
pub fn abort(m: &dyn Memory, pe: &Pe, status: i32) {
    let Some(layout) = pe.job else { return };
    let mut term = nix::sys::signal::SigSet::empty();
    term.add(nix::sys::signal::SIGTERM);
    let _ = term.thread_block();
    layout.global_exit(&Gas(m), pe.id as usize, status);
}
