//! x86-64 long-mode page tables, 4-level (48-bit VA) and 5-level (57-bit VA).
//! Descriptor: bit 0 present, bit 1 writable, bit 2 user, bit 7 PS (leaf at PDPT/PD level),
//! bits 12..51 the physical address (Intel SDM Vol. 3A §4.5).

use super::{Desc, LevelGeom};
use tlblab_types::{Domain, PageSize, PhysAddr};

const P: u64 = 1;
const RW: u64 = 2;
const US: u64 = 4;
const PS: u64 = 1 << 7;
/// Global (Intel SDM Vol. 3A §4.5, Tables 4-15 ff., bit 8 of a leaf; §4.10.2.4).
const G: u64 = 1 << 8;
const ADDR: u64 = 0x000f_ffff_ffff_f000;

/// 5-level paging: PML5 above the 4-level hierarchy.
pub const LEVELS_5: &[LevelGeom] = &[
    LevelGeom {
        name: "PML5",
        shift: 48,
        bits: 9,
        entry_bytes: 8,
        leaf_sizes: &[],
    },
    LevelGeom {
        name: "PML4",
        shift: 39,
        bits: 9,
        entry_bytes: 8,
        leaf_sizes: &[],
    },
    LevelGeom {
        name: "PDPT",
        shift: 30,
        bits: 9,
        entry_bytes: 8,
        leaf_sizes: &[PageSize::Size1G],
    },
    LevelGeom {
        name: "PD",
        shift: 21,
        bits: 9,
        entry_bytes: 8,
        leaf_sizes: &[PageSize::Size2M],
    },
    LevelGeom {
        name: "PT",
        shift: 12,
        bits: 9,
        entry_bytes: 8,
        leaf_sizes: &[PageSize::Size4K],
    },
];

/// 4-level paging: the same levels without PML5.
pub const LEVELS_4: &[LevelGeom] = match LEVELS_5.split_first() {
    Some((_, rest)) => rest,
    None => &[],
};

pub fn encode_table(child: PhysAddr, _domain: Domain) -> u64 {
    (child.0 & ADDR) | P | RW | US
}

pub fn encode_leaf(frame: PhysAddr, size: PageSize, _domain: Domain, global: bool) -> u64 {
    let ps = if size == PageSize::Size4K { 0 } else { PS };
    // A global page is the kernel's: supervisor-only (U/S clear) with G set.
    let g = if global { G } else { US };
    (frame.0 & ADDR) | P | RW | g | ps
}

pub fn decode(desc: u64, level: &LevelGeom, last: bool) -> Desc {
    if desc & P == 0 {
        Desc::Invalid
    } else if last {
        Desc::Leaf {
            frame: PhysAddr(desc & ADDR),
            size: PageSize::Size4K,
            domain: Domain(0),
            global: desc & G != 0,
        }
    } else if desc & PS != 0 {
        Desc::Leaf {
            frame: PhysAddr(desc & ADDR),
            size: level.leaf_sizes[0],
            domain: Domain(0),
            global: desc & G != 0,
        }
    } else {
        Desc::Table {
            child: PhysAddr(desc & ADDR),
        }
    }
}
