// SPDX-License-Identifier: GPL-2.0
//! Requests: what a client asks `famd`, one variant per opcode.

use super::codec::{DecodeError, EncodeError, Reader, Writer};
use super::{op, Interleave, MemoryType, Redundancy};

/// A control request. Ids are the store's `RegionId`/`ItemId` numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request<'a> {
    Hello {
        version: u16,
    },
    CreateRegion {
        name: &'a str,
        size: u64,
        mode: u32,
        redundancy: Redundancy,
        memory_type: MemoryType,
        interleave: Interleave,
    },
    DestroyRegion {
        region: u64,
    },
    ResizeRegion {
        region: u64,
        size: u64,
    },
    LookupRegion {
        name: &'a str,
    },
    ChangeRegionPermissions {
        region: u64,
        mode: u32,
    },
    StatRegion {
        region: u64,
    },
    /// `name` empty: an anonymous item.
    Allocate {
        region: u64,
        name: &'a str,
        size: u64,
        mode: u32,
    },
    Deallocate {
        item: u64,
    },
    Lookup {
        item: &'a str,
        region: &'a str,
    },
    ChangeItemPermissions {
        item: u64,
        mode: u32,
    },
    StatItem {
        item: u64,
    },
    /// The extents of an item from index `first`: the pages after an item description's
    /// first [`MAX_EXTENTS`](super::MAX_EXTENTS). An item's extents never change while it
    /// lives, and item ids are never reused, so pages fetched one by one make up one
    /// consistent list.
    ItemExtents {
        item: u64,
        first: u32,
    },
    Backup {
        item: u64,
        name: &'a str,
    },
    Restore {
        name: &'a str,
        item: u64,
    },
    RestoreNew {
        name: &'a str,
        region: u64,
        item: &'a str,
        mode: u32,
    },
    DeleteBackup {
        name: &'a str,
    },
    /// `name` empty: every backup.
    ListBackup {
        name: &'a str,
    },
}

impl<'a> Request<'a> {
    /// Its opcode ([`op`]).
    pub const fn op(&self) -> u8 {
        match self {
            Request::Hello { .. } => op::HELLO,
            Request::CreateRegion { .. } => op::CREATE_REGION,
            Request::DestroyRegion { .. } => op::DESTROY_REGION,
            Request::ResizeRegion { .. } => op::RESIZE_REGION,
            Request::LookupRegion { .. } => op::LOOKUP_REGION,
            Request::ChangeRegionPermissions { .. } => op::CHANGE_REGION_PERMISSIONS,
            Request::StatRegion { .. } => op::STAT_REGION,
            Request::Allocate { .. } => op::ALLOCATE,
            Request::Deallocate { .. } => op::DEALLOCATE,
            Request::Lookup { .. } => op::LOOKUP,
            Request::ChangeItemPermissions { .. } => op::CHANGE_ITEM_PERMISSIONS,
            Request::StatItem { .. } => op::STAT_ITEM,
            Request::ItemExtents { .. } => op::ITEM_EXTENTS,
            Request::Backup { .. } => op::BACKUP,
            Request::Restore { .. } => op::RESTORE,
            Request::RestoreNew { .. } => op::RESTORE_NEW,
            Request::DeleteBackup { .. } => op::DELETE_BACKUP,
            Request::ListBackup { .. } => op::LIST_BACKUP,
        }
    }

    /// Writes it, with request id `id`, to the front of `out`; returns the length
    /// (at most [`MAX_REQUEST_LEN`](super::MAX_REQUEST_LEN)).
    pub fn encode(&self, id: u32, out: &mut [u8]) -> Result<usize, EncodeError> {
        let mut w = Writer::new(out);
        w.u8(self.op())?;
        w.u32(id)?;
        match *self {
            Request::Hello { version } => w.u16(version)?,
            Request::CreateRegion {
                name,
                size,
                mode,
                redundancy,
                memory_type,
                interleave,
            } => {
                w.name(name)?;
                w.u64(size)?;
                w.u32(mode)?;
                w.u8(redundancy as u8)?;
                w.u8(memory_type as u8)?;
                w.u8(interleave as u8)?;
            }
            Request::DestroyRegion { region }
            | Request::StatRegion { region }
            | Request::Deallocate { item: region }
            | Request::StatItem { item: region } => w.u64(region)?,
            Request::ResizeRegion { region, size } => {
                w.u64(region)?;
                w.u64(size)?;
            }
            Request::LookupRegion { name }
            | Request::DeleteBackup { name }
            | Request::ListBackup { name } => w.name(name)?,
            Request::ChangeRegionPermissions { region, mode }
            | Request::ChangeItemPermissions { item: region, mode } => {
                w.u64(region)?;
                w.u32(mode)?;
            }
            Request::Allocate {
                region,
                name,
                size,
                mode,
            } => {
                w.u64(region)?;
                w.name(name)?;
                w.u64(size)?;
                w.u32(mode)?;
            }
            Request::Lookup { item, region } => {
                w.name(item)?;
                w.name(region)?;
            }
            Request::ItemExtents { item, first } => {
                w.u64(item)?;
                w.u32(first)?;
            }
            Request::Backup { item, name } => {
                w.u64(item)?;
                w.name(name)?;
            }
            Request::Restore { name, item } => {
                w.name(name)?;
                w.u64(item)?;
            }
            Request::RestoreNew {
                name,
                region,
                item,
                mode,
            } => {
                w.name(name)?;
                w.u64(region)?;
                w.name(item)?;
                w.u32(mode)?;
            }
        }
        Ok(w.pos)
    }

    /// Reads a whole message: the request id and the request, names borrowed from `bytes`.
    pub fn decode(bytes: &'a [u8]) -> Result<(u32, Request<'a>), DecodeError> {
        let mut r = Reader::new(bytes);
        let opcode = r.u8()?;
        let id = r.u32()?;
        let req = match opcode {
            op::HELLO => Request::Hello { version: r.u16()? },
            op::CREATE_REGION => {
                let name = r.name()?;
                let size = r.u64()?;
                let mode = r.u32()?;
                let v = r.u8()?;
                let redundancy = Redundancy::from_u8(v).ok_or(DecodeError::Redundancy(v))?;
                let v = r.u8()?;
                let memory_type = MemoryType::from_u8(v).ok_or(DecodeError::MemoryType(v))?;
                let v = r.u8()?;
                let interleave = Interleave::from_u8(v).ok_or(DecodeError::Interleave(v))?;
                Request::CreateRegion {
                    name,
                    size,
                    mode,
                    redundancy,
                    memory_type,
                    interleave,
                }
            }
            op::DESTROY_REGION => Request::DestroyRegion { region: r.u64()? },
            op::RESIZE_REGION => Request::ResizeRegion {
                region: r.u64()?,
                size: r.u64()?,
            },
            op::LOOKUP_REGION => Request::LookupRegion { name: r.name()? },
            op::CHANGE_REGION_PERMISSIONS => Request::ChangeRegionPermissions {
                region: r.u64()?,
                mode: r.u32()?,
            },
            op::STAT_REGION => Request::StatRegion { region: r.u64()? },
            op::ALLOCATE => Request::Allocate {
                region: r.u64()?,
                name: r.name()?,
                size: r.u64()?,
                mode: r.u32()?,
            },
            op::DEALLOCATE => Request::Deallocate { item: r.u64()? },
            op::LOOKUP => Request::Lookup {
                item: r.name()?,
                region: r.name()?,
            },
            op::CHANGE_ITEM_PERMISSIONS => Request::ChangeItemPermissions {
                item: r.u64()?,
                mode: r.u32()?,
            },
            op::STAT_ITEM => Request::StatItem { item: r.u64()? },
            op::ITEM_EXTENTS => Request::ItemExtents {
                item: r.u64()?,
                first: r.u32()?,
            },
            op::BACKUP => Request::Backup {
                item: r.u64()?,
                name: r.name()?,
            },
            op::RESTORE => Request::Restore {
                name: r.name()?,
                item: r.u64()?,
            },
            op::RESTORE_NEW => Request::RestoreNew {
                name: r.name()?,
                region: r.u64()?,
                item: r.name()?,
                mode: r.u32()?,
            },
            op::DELETE_BACKUP => Request::DeleteBackup { name: r.name()? },
            op::LIST_BACKUP => Request::ListBackup { name: r.name()? },
            other => return Err(DecodeError::Opcode(other)),
        };
        r.end()?;
        Ok((id, req))
    }
}
