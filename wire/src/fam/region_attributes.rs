// SPDX-License-Identifier: GPL-2.0
//! OpenFAM's region attributes (`Fam_Region_Attributes`): what a region is created with and
//! described by, one byte each on the wire.

/// OpenFAM's `Fam_Redundancy_Level`, with its C numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Redundancy {
    #[default]
    Default = 0,
    None = 1,
    Raid1 = 2,
    Raid5 = 3,
}

/// OpenFAM's `Fam_Memory_Type`, with its C numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum MemoryType {
    #[default]
    Default = 0,
    Volatile = 1,
    Persistent = 2,
}

/// OpenFAM's `Fam_Interleave_Enable`, with its C numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Interleave {
    #[default]
    Default = 0,
    Enable = 1,
    Disable = 2,
}

impl Redundancy {
    pub const fn from_u8(v: u8) -> Option<Redundancy> {
        Some(match v {
            0 => Redundancy::Default,
            1 => Redundancy::None,
            2 => Redundancy::Raid1,
            3 => Redundancy::Raid5,
            _ => return None,
        })
    }
}

impl MemoryType {
    pub const fn from_u8(v: u8) -> Option<MemoryType> {
        Some(match v {
            0 => MemoryType::Default,
            1 => MemoryType::Volatile,
            2 => MemoryType::Persistent,
            _ => return None,
        })
    }
}

impl Interleave {
    pub const fn from_u8(v: u8) -> Option<Interleave> {
        Some(match v {
            0 => Interleave::Default,
            1 => Interleave::Enable,
            2 => Interleave::Disable,
            _ => return None,
        })
    }
}
