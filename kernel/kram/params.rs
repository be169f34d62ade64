// SPDX-License-Identifier: GPL-2.0
//! The module parameters, checked at load; `size=32,64`: one size in MiB per instance (a list
//! parameter; kernel patch 0003).

use crate::disk::Transfer;
use crate::module_parameters;
use crate::wire::kram::{MAX_INSTANCES, MAX_REQUEST_CHUNKS_V2};
use kernel::{module_param::ModuleParam, prelude::*, str::BStr};

/// Sizes in MiB (1 MiB = one chunk of the protocol), at most one per possible instance.
#[derive(Clone, Copy)]
pub(crate) struct SizeList {
    len: usize,
    mib: [u32; MAX_INSTANCES as usize],
}

impl SizeList {
    pub(crate) const EMPTY: Self = Self {
        len: 0,
        mib: [0; MAX_INSTANCES as usize],
    };

    pub(crate) fn as_slice(&self) -> &[u32] {
        &self.mib[..self.len]
    }
}

fn parse_mib(word: &[u8]) -> Result<u32> {
    if word.is_empty() || word.len() > 5 || !word.iter().all(u8::is_ascii_digit) {
        return Err(EINVAL);
    }
    let v = word
        .iter()
        .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'));
    if v == 0 || v > MAX_REQUEST_CHUNKS_V2 {
        pr_err!("size: {} MiB is outside 1-{}\n", v, MAX_REQUEST_CHUNKS_V2);
        return Err(EINVAL);
    }
    Ok(v)
}

impl ModuleParam for SizeList {
    fn try_from_param_arg(arg: &BStr) -> Result<Self> {
        let mut list = Self::EMPTY;
        let bytes: &[u8] = arg;
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        for word in bytes.split(|&b| b == b',') {
            if list.len == list.mib.len() {
                pr_err!("size: more than {} sizes\n", MAX_INSTANCES);
                return Err(EINVAL);
            }
            list.mib[list.len] = parse_mib(word)?;
            list.len += 1;
        }
        Ok(list)
    }
}

/// The module parameters, checked.
pub(crate) struct Params {
    pub(crate) sizes: KVec<u32>,
    pub(crate) transfer: Transfer,
    pub(crate) mirror: bool,
    pub(crate) max_stall_ns: i64,
}

pub(crate) fn validated_params() -> Result<Params> {
    let n = *module_parameters::ninstances.value_ref();
    if n == 0 || n > MAX_INSTANCES {
        pr_err!("ninstances={} is out of range (1-{})\n", n, MAX_INSTANCES);
        return Err(EINVAL);
    }
    let sizes = module_parameters::size.value_ref();
    if sizes.as_slice().len() != n as usize {
        pr_err!(
            "size: {} size(s) given for ninstances={} (one per instance, e.g. size=32,64)\n",
            sizes.as_slice().len(),
            n
        );
        return Err(EINVAL);
    }
    let transfer = match *module_parameters::transfermode.value_ref() {
        0 => Transfer::Memcpy,
        1 => Transfer::Cdma,
        t => {
            pr_err!(
                "transfermode={} is invalid (0 = memcpy, 1 = CDMA engine)\n",
                t
            );
            return Err(EINVAL);
        }
    };
    let stall_s = *module_parameters::stall_timeout.value_ref();
    if !(1..=3600).contains(&stall_s) {
        pr_err!(
            "stall_timeout={} is out of range (1-3600 seconds)\n",
            stall_s
        );
        return Err(EINVAL);
    }
    let mut v = KVec::with_capacity(n as usize, GFP_KERNEL)?;
    for &mib in sizes.as_slice() {
        v.push(mib, GFP_KERNEL)?;
    }
    Ok(Params {
        sizes: v,
        transfer,
        mirror: *module_parameters::mirror.value_ref(),
        max_stall_ns: i64::from(stall_s) * 1_000_000_000,
    })
}
