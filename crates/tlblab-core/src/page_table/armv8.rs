//! ARMv8-A stage-1 translation tables, 4 KiB granule, 4 levels (48-bit VA).
//! Descriptor bits [1:0]: 0b11 table (levels 0–2) or page (level 3), 0b01 block (levels 1–2);
//! bits 12..47 the output address; bit 52 the contiguous hint, which we set on each of the 16
//! replicated level-3 entries of a 64 KiB page (ARM ARM D5.3, "contiguous bit").

use super::{Desc, LevelGeom};
use tlblab_types::{Domain, PageSize, PhysAddr};

const VALID: u64 = 1;
const TABLE_OR_PAGE: u64 = 2;
const AF: u64 = 1 << 10;
/// Not global (ARM ARM D5.3.3, bit 11 of a block or page descriptor): set on user pages.
const NG: u64 = 1 << 11;
const CONTIG: u64 = 1 << 52;
const ADDR: u64 = 0x0000_ffff_ffff_f000;

pub const LEVELS: &[LevelGeom] = &[
    LevelGeom {
        name: "L0",
        shift: 39,
        bits: 9,
        entry_bytes: 8,
        leaf_sizes: &[],
    },
    LevelGeom {
        name: "L1",
        shift: 30,
        bits: 9,
        entry_bytes: 8,
        leaf_sizes: &[PageSize::Size1G],
    },
    LevelGeom {
        name: "L2",
        shift: 21,
        bits: 9,
        entry_bytes: 8,
        leaf_sizes: &[PageSize::Size2M],
    },
    LevelGeom {
        name: "L3",
        shift: 12,
        bits: 9,
        entry_bytes: 8,
        leaf_sizes: &[PageSize::Size4K, PageSize::Size64K],
    },
];

pub fn encode_table(child: PhysAddr, _domain: Domain) -> u64 {
    (child.0 & ADDR) | VALID | TABLE_OR_PAGE
}

pub fn encode_leaf(frame: PhysAddr, size: PageSize, _domain: Domain, global: bool) -> u64 {
    let ng = if global { 0 } else { NG };
    ng | match size {
        PageSize::Size4K => (frame.0 & ADDR) | VALID | TABLE_OR_PAGE | AF,
        PageSize::Size64K => (frame.0 & ADDR) | VALID | TABLE_OR_PAGE | AF | CONTIG,
        _ => (frame.0 & ADDR) | VALID | AF, // block
    }
}

pub fn decode(desc: u64, level: &LevelGeom, last: bool) -> Desc {
    if desc & VALID == 0 {
        Desc::Invalid
    } else if last {
        let size = if desc & CONTIG != 0 {
            PageSize::Size64K
        } else {
            PageSize::Size4K
        };
        let frame = desc & ADDR & !(size.bytes() - 1);
        Desc::Leaf {
            frame: PhysAddr(frame),
            size,
            domain: Domain(0),
            global: desc & NG == 0,
        }
    } else if desc & TABLE_OR_PAGE == 0 {
        Desc::Leaf {
            frame: PhysAddr(desc & ADDR),
            size: level.leaf_sizes[0],
            domain: Domain(0),
            global: desc & NG == 0,
        }
    } else {
        Desc::Table {
            child: PhysAddr(desc & ADDR),
        }
    }
}
