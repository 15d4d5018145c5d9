//! The formats' dispatch: each `PageTableFormat` to its file's geometry (`LevelGeom`, root
//! first) and descriptor encoding, and a descriptor decoded (`Desc`).

use super::*;

/// The page-table formats tlblab models.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PageTableFormat {
    /// x86-64 4-level paging (48-bit VA): 4 KiB, 2 MiB, 1 GiB pages.
    #[default]
    X86_64_4level,
    /// x86-64 5-level paging (57-bit VA).
    X86_64_5level,
    /// ARMv7 short descriptor, 2 levels, with domains: 4 KiB, 64 KiB, 1 MiB pages.
    Armv7Short,
    /// ARMv8 4 KiB granule, 4 levels: 4 KiB, 64 KiB (contiguous), 2 MiB, 1 GiB pages.
    Armv8_4k,
}

/// Where a format's tables sit in their frames (`page_table.layout`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TableLayout {
    /// Every table at the start of a frame of its own: a 1 KiB ARMv7 second-level table alone
    /// at the start of a 4 KiB frame.
    #[default]
    OwnFrame,
    /// ARM Linux's short-descriptor layout (`armv7_short` only): the second-level tables of
    /// the two 1 MiB halves of a 2 MiB-aligned region share one 4 KiB page, the hardware
    /// table of the lower half 2048 bytes in and of the upper half 3072 bytes in, behind
    /// Linux's own copies of the entries (`armv7::linux_table`).
    LinuxArmv7,
}

impl TableLayout {
    pub fn name(self) -> &'static str {
        match self {
            TableLayout::OwnFrame => "own_frame",
            TableLayout::LinuxArmv7 => "linux_armv7",
        }
    }

    pub fn is_own_frame(&self) -> bool {
        *self == TableLayout::OwnFrame
    }
}

/// Geometry of one level of a radix page table, root first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelGeom {
    pub name: &'static str,
    /// The lowest VA bit this level's index uses.
    pub shift: u32,
    /// Index width in bits (entries = 2^bits).
    pub bits: u32,
    pub entry_bytes: u64,
    /// Page sizes a descriptor at this level can map directly.
    pub leaf_sizes: &'static [PageSize],
}

impl LevelGeom {
    /// The index of `va`'s entry in a table of this level.
    #[inline(always)]
    pub fn index_of(&self, va: VirtAddr) -> usize {
        ((va.0 >> self.shift) & ((1 << self.bits) - 1)) as usize
    }
}

/// A decoded descriptor.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Desc {
    Invalid,
    Table {
        child: PhysAddr,
    },
    Leaf {
        frame: PhysAddr,
        size: PageSize,
        domain: Domain,
        /// The mapping is global (ARM's nG bit clear, x86's G bit set): its TLB entries
        /// translate for every ASID (the kernel's mappings).
        global: bool,
    },
}

impl PageTableFormat {
    pub fn levels(self) -> &'static [LevelGeom] {
        match self {
            PageTableFormat::X86_64_4level => x86_64::LEVELS_4,
            PageTableFormat::X86_64_5level => x86_64::LEVELS_5,
            PageTableFormat::Armv7Short => armv7::LEVELS,
            PageTableFormat::Armv8_4k => armv8::LEVELS,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PageTableFormat::X86_64_4level => "x86_64_4level",
            PageTableFormat::X86_64_5level => "x86_64_5level",
            PageTableFormat::Armv7Short => "armv7_short",
            PageTableFormat::Armv8_4k => "armv8_4k",
        }
    }

    /// Highest virtual address + 1 the format translates.
    pub fn va_limit(self) -> u64 {
        let top = self.levels()[0];
        1u64 << (top.shift + top.bits)
    }

    pub fn supports(self, size: PageSize) -> bool {
        self.levels().iter().any(|l| l.leaf_sizes.contains(&size))
    }

    /// The page sizes this format can map.
    pub fn page_sizes(self) -> Vec<PageSize> {
        PageSize::ALL
            .into_iter()
            .filter(|&s| self.supports(s))
            .collect()
    }

    pub(super) fn encode_table(self, child: PhysAddr, domain: Domain) -> u64 {
        match self {
            PageTableFormat::X86_64_4level | PageTableFormat::X86_64_5level => {
                x86_64::encode_table(child, domain)
            }
            PageTableFormat::Armv7Short => armv7::encode_table(child, domain),
            PageTableFormat::Armv8_4k => armv8::encode_table(child, domain),
        }
    }

    pub(super) fn encode_leaf(
        self,
        frame: PhysAddr,
        size: PageSize,
        domain: Domain,
        global: bool,
    ) -> u64 {
        match self {
            PageTableFormat::X86_64_4level | PageTableFormat::X86_64_5level => {
                x86_64::encode_leaf(frame, size, domain, global)
            }
            PageTableFormat::Armv7Short => armv7::encode_leaf(frame, size, domain, global),
            PageTableFormat::Armv8_4k => armv8::encode_leaf(frame, size, domain, global),
        }
    }

    #[inline]
    pub fn decode(self, desc: u64, level: usize) -> Desc {
        let levels = self.levels();
        let last = level + 1 == levels.len();
        match self {
            PageTableFormat::X86_64_4level | PageTableFormat::X86_64_5level => {
                x86_64::decode(desc, &levels[level], last)
            }
            PageTableFormat::Armv7Short => armv7::decode(desc, &levels[level], last),
            PageTableFormat::Armv8_4k => armv8::decode(desc, &levels[level], last),
        }
    }

    /// Size of a table at `level` in 4 KiB frames (ARMv7's L1 table is 16 KiB).
    pub(super) fn table_size(self, level: usize) -> PageSize {
        let l = self.levels()[level];
        if (l.entry_bytes << l.bits) > 4096 {
            PageSize::Size16K
        } else {
            PageSize::Size4K
        }
    }
}
