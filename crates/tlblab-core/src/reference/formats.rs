//! The reference's own page-table geometry, one table per format, written from the
//! architecture manuals rather than taken from `page_table/`: per level, root first, the lowest
//! virtual-address bit its index uses, the index's width, the entry's size and the page sizes
//! an entry of the level maps directly.

use crate::page_table::PageTableFormat;
use tlblab_types::PageSize;

/// One level of a radix page table, as the reference walks it.
#[derive(Clone, Copy, Debug)]
pub(super) struct RefLevel {
    pub(super) shift: u32,
    pub(super) bits: u32,
    pub(super) entry_bytes: u64,
    pub(super) leaves: &'static [PageSize],
}

const fn level(shift: u32, bits: u32, entry_bytes: u64, leaves: &'static [PageSize]) -> RefLevel {
    RefLevel {
        shift,
        bits,
        entry_bytes,
        leaves,
    }
}

/// Intel SDM Vol. 3A §4.5 (4-level paging, Table 4-14 ff.): PML4, PDPT (1 GiB pages), PD
/// (2 MiB pages), PT (4 KiB pages); 512 entries of 8 bytes each.
const X86_64_4: [RefLevel; 4] = [
    level(39, 9, 8, &[]),
    level(30, 9, 8, &[PageSize::Size1G]),
    level(21, 9, 8, &[PageSize::Size2M]),
    level(12, 9, 8, &[PageSize::Size4K]),
];

/// Intel SDM Vol. 3A §4.5 (5-level paging): a PML5 above the 4-level tables.
const X86_64_5: [RefLevel; 5] = [
    level(48, 9, 8, &[]),
    level(39, 9, 8, &[]),
    level(30, 9, 8, &[PageSize::Size1G]),
    level(21, 9, 8, &[PageSize::Size2M]),
    level(12, 9, 8, &[PageSize::Size4K]),
];

/// ARM ARM (ARMv7-A) §B3.5, the short-descriptor format: a first-level table of 4,096 4-byte
/// entries indexed by VA[31:20] (sections: 1 MiB pages), second-level tables of 256 entries
/// indexed by VA[19:12] (small pages, 4 KiB; large pages, 64 KiB, as 16 repeated entries).
const ARMV7: [RefLevel; 2] = [
    level(20, 12, 4, &[PageSize::Size1M]),
    level(12, 8, 4, &[PageSize::Size4K, PageSize::Size64K]),
];

/// ARM ARM (ARMv8-A) §D5.2, the 4 KiB translation granule with 48-bit VAs: levels 0..3 of 512
/// 8-byte entries; level 1 blocks are 1 GiB, level 2 blocks 2 MiB, level 3 pages 4 KiB (and
/// 64 KiB with the contiguous bit: 16 entries).
const ARMV8: [RefLevel; 4] = [
    level(39, 9, 8, &[]),
    level(30, 9, 8, &[PageSize::Size1G]),
    level(21, 9, 8, &[PageSize::Size2M]),
    level(12, 9, 8, &[PageSize::Size4K, PageSize::Size64K]),
];

/// The levels of `format`, root first.
pub(super) fn levels(format: PageTableFormat) -> &'static [RefLevel] {
    match format {
        PageTableFormat::X86_64_4level => &X86_64_4,
        PageTableFormat::X86_64_5level => &X86_64_5,
        PageTableFormat::Armv7Short => &ARMV7,
        PageTableFormat::Armv8_4k => &ARMV8,
    }
}

/// Where ARM Linux puts the second-level (hardware) table of `va` in the 4 KiB page `page`
/// that holds the tables of both 1 MiB halves of `va`'s 2 MiB (`TableLayout::LinuxArmv7`),
/// from arch/arm/include/asm/pgtable-2level.h's picture of that page: "Linux pt 0" at +0,
/// "Linux pt 1" at +1024, "h/w pt 0" at +2048, "h/w pt 1" at +3072; the first-level entry of
/// the even MiB points at the first hardware table, the odd one's at the second
/// (asm/pgalloc.h, `__pmd_populate`: `pmdp[0]` and `pmdp[1]`, 256 four-byte entries apart).
pub(super) fn linux_armv7_table(page: u64, va: u64) -> u64 {
    let upper_mib = (va >> 20) & 1 == 1;
    page + if upper_mib { 3072 } else { 2048 }
}

/// The page a table of `level` occupies: the ARMv7 first-level table is 16 KiB (aligned to
/// 16 KiB, §B3.5.1); every other table, the 1 KiB ARMv7 second-level ones included, takes one
/// 4 KiB frame of its own (the allocator hands out nothing smaller).
pub(super) fn table_page(level: &RefLevel) -> PageSize {
    if level.entry_bytes << level.bits > 4096 {
        PageSize::Size16K
    } else {
        PageSize::Size4K
    }
}
