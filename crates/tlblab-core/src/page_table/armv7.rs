//! ARMv7-A short-descriptor translation tables (also the ARMv4/v5 layout of the StrongARM SA-1100
//! for the parts tlblab models): a 4096-entry first-level table indexed by VA[31:20], 4-byte
//! descriptors; first-level entries are 1 MiB sections or pointers to 256-entry second-level
//! tables indexed by VA[19:12] holding 4 KiB small pages or 64 KiB large pages (replicated 16
//! times). The domain (0..15) lives in first-level descriptor bits [8:5] (ARM ARM B3.5.1) — the
//! tag seed 002 uses as an address-space identifier.

use super::{Desc, LevelGeom};
use tlblab_types::{Domain, PageSize, PhysAddr, VirtAddr};

/// Where Linux puts a hardware second-level table in its page (`TableLayout::LinuxArmv7`).
/// Linux allocates one 4 KiB page per 2 MiB of address space (`PTRS_PER_PGD` 2048 entries of
/// two first-level descriptors each) and lays it out as "Linux pt 0" at +0, "Linux pt 1" at
/// +1024, "h/w pt 0" at +2048, "h/w pt 1" at +3072 (arch/arm/include/asm/pgtable-2level.h,
/// the layout comment and `PTE_HWTABLE_OFF` = `PTRS_PER_PTE` 512 × 4 bytes); `__pmd_populate`
/// (arch/arm/include/asm/pgalloc.h) points the first-level descriptor of the lower MiB at
/// `pte + PTE_HWTABLE_OFF` and the upper one's 256 entries (1 KiB) further. So the table of
/// `va` in the page at `page` starts at `page + 2048 + 1024 × VA[20]`. The walker never reads
/// Linux's copies; their lines are left unused here.
pub const LINUX_HWTABLE_OFF: u64 = 2048;
pub const HWTABLE_BYTES: u64 = 256 * 4;

pub fn linux_table(page: PhysAddr, va: VirtAddr) -> PhysAddr {
    PhysAddr(page.0 + LINUX_HWTABLE_OFF + ((va.0 >> 20) & 1) * HWTABLE_BYTES)
}

pub const LEVELS: &[LevelGeom] = &[
    LevelGeom {
        name: "L1",
        shift: 20,
        bits: 12,
        entry_bytes: 4,
        leaf_sizes: &[PageSize::Size1M],
    },
    LevelGeom {
        name: "L2",
        shift: 12,
        bits: 8,
        entry_bytes: 4,
        leaf_sizes: &[PageSize::Size4K, PageSize::Size64K],
    },
];

pub fn encode_table(child: PhysAddr, domain: Domain) -> u64 {
    (child.0 & 0xffff_fc00) | ((domain.0 as u64 & 0xf) << 5) | 0b01
}

/// The not-global bit: bit 17 of a section, bit 11 of a small or large page (ARM ARM
/// B3.5.1). Clear for the kernel's mappings, set for user pages (Linux's `set_pte_at`).
const SECTION_NG: u64 = 1 << 17;
const PAGE_NG: u64 = 1 << 11;

pub fn encode_leaf(frame: PhysAddr, size: PageSize, domain: Domain, global: bool) -> u64 {
    match size {
        PageSize::Size1M => {
            let ng = if global { 0 } else { SECTION_NG };
            (frame.0 & 0xfff0_0000) | ((domain.0 as u64 & 0xf) << 5) | ng | 0b10
        }
        PageSize::Size64K => (frame.0 & 0xffff_0000) | if global { 0 } else { PAGE_NG } | 0b01,
        _ => (frame.0 & 0xffff_f000) | if global { 0 } else { PAGE_NG } | 0b10,
    }
}

pub fn decode(desc: u64, _level: &LevelGeom, last: bool) -> Desc {
    let domain = Domain(((desc >> 5) & 0xf) as u8);
    if !last {
        match desc & 0b11 {
            0b01 => Desc::Table {
                child: PhysAddr(desc & 0xffff_fc00),
            },
            0b10 => Desc::Leaf {
                frame: PhysAddr(desc & 0xfff0_0000),
                size: PageSize::Size1M,
                domain,
                global: desc & SECTION_NG == 0,
            },
            _ => Desc::Invalid,
        }
    } else {
        match desc & 0b11 {
            0b01 => Desc::Leaf {
                frame: PhysAddr(desc & 0xffff_0000),
                size: PageSize::Size64K,
                domain: Domain(0),
                global: desc & PAGE_NG == 0,
            },
            0b10 | 0b11 => Desc::Leaf {
                frame: PhysAddr(desc & 0xffff_f000),
                size: PageSize::Size4K,
                domain: Domain(0),
                global: desc & PAGE_NG == 0,
            },
            _ => Desc::Invalid,
        }
    }
}
