//! The reference's page tables: a map from (level, VA prefix) to a table's physical address
//! and from each page mapped to its frame, built on first touch with the format's own level
//! geometry (`formats.rs`), never the engine's descriptors.

use super::formats::{self, RefLevel};
use super::frames::RefFrames;
use crate::page_table::TableLayout;
use std::collections::HashMap;
use tlblab_types::PageSize;

/// A page table: (level, VA >> the shift of the level above) → the table's physical address
/// (the root is (0, 0)); and the pages mapped: (VA >> size's shift, size) → frame address;
/// those of them mapped global (the kernel's: a `MapShared` with `prot::GLOBAL`, as the page
/// was when first touched).
/// `linux_armv7`: the second-level tables placed as ARM Linux places them
/// (`formats::linux_armv7_table`), the two of a 2 MiB in one page.
pub(super) struct Tables {
    pub(super) tables: HashMap<(usize, u64), u64>,
    pub(super) pages: HashMap<(u64, PageSize), u64>,
    pub(super) global: std::collections::HashSet<(u64, PageSize)>,
    linux_armv7: bool,
}

impl Tables {
    pub(super) fn new(
        levels: &[RefLevel],
        layout: TableLayout,
        frames: &mut RefFrames,
    ) -> Option<Tables> {
        let root = frames.alloc(formats::table_page(&levels[0]))? << 12;
        Some(Tables {
            tables: HashMap::from([((0, 0), root)]),
            pages: HashMap::new(),
            global: Default::default(),
            linux_armv7: layout == TableLayout::LinuxArmv7,
        })
    }

    /// The address of a new table of `level` for `va`: a frame of its own, or under Linux's
    /// ARMv7 layout a second-level table in the page of the other MiB's table of the same
    /// 2 MiB if that one exists, else in a new page.
    fn place(
        &self,
        levels: &[RefLevel],
        level: usize,
        va: u64,
        frames: &mut RefFrames,
    ) -> Option<u64> {
        if self.linux_armv7 && level == 1 {
            let other_mib = (va >> 20) ^ 1;
            let page = match self.tables.get(&(1, other_mib)) {
                Some(&t) => t / 4096 * 4096,
                None => frames.alloc(PageSize::Size4K)? << 12,
            };
            return Some(formats::linux_armv7_table(page, va));
        }
        Some(frames.alloc(formats::table_page(&levels[level]))? << 12)
    }

    /// Whether the tables are in Linux's ARMv7 layout.
    pub(super) fn linux_armv7(&self) -> bool {
        self.linux_armv7
    }

    pub(super) fn table(&self, levels: &[RefLevel], level: usize, va: u64) -> u64 {
        let key = if level == 0 {
            0
        } else {
            va >> levels[level - 1].shift
        };
        self.tables[&(level, key)]
    }

    pub(super) fn mapping(&self, va: u64) -> Option<(PageSize, u64)> {
        PageSize::ALL
            .into_iter()
            .find_map(|s| self.pages.get(&(va >> s.shift(), s)).map(|&f| (s, f)))
    }

    /// Whether `va`'s page is mapped global (as it was when first touched).
    pub(super) fn is_global(&self, va: u64) -> bool {
        self.mapping(va)
            .is_some_and(|(s, _)| self.global.contains(&(va >> s.shift(), s)))
    }

    /// Unmaps `va`'s page, if mapped.
    pub(super) fn unmap(&mut self, va: u64) {
        if let Some((size, _)) = self.mapping(va) {
            self.pages.remove(&(va >> size.shift(), size));
            self.global.remove(&(va >> size.shift(), size));
        }
    }

    /// Maps `va`'s page of `size` to `frame` (`global`: the kernel's), allocating the missing
    /// tables below the root, top down.
    pub(super) fn map(
        &mut self,
        levels: &[RefLevel],
        va: u64,
        size: PageSize,
        frame: u64,
        global: bool,
        frames: &mut RefFrames,
    ) -> Option<()> {
        let leaf = leaf_level(levels, size);
        for level in 1..=leaf {
            let key = (level, va >> levels[level - 1].shift);
            if !self.tables.contains_key(&key) {
                let table = self.place(levels, level, va, frames)?;
                self.tables.insert(key, table);
                // ARM Linux's `__pmd_populate` writes both first-level entries of the pair
                // when it allocates the page: the other MiB's table is there from now on,
                // unless that MiB is a section.
                let other = (1, key.1 ^ 1);
                if self.linux_armv7
                    && level == 1
                    && !self.tables.contains_key(&other)
                    && !self.pages.contains_key(&(other.1, PageSize::Size1M))
                {
                    let other_va = va ^ (1 << 20);
                    let table = self.place(levels, 1, other_va, frames)?;
                    self.tables.insert(other, table);
                }
            }
        }
        self.pages.insert((va >> size.shift(), size), frame);
        if global {
            self.global.insert((va >> size.shift(), size));
        } else {
            self.global.remove(&(va >> size.shift(), size));
        }
        Some(())
    }

    /// Whether `va`'s page of `size` would cover no page mapped already and no table below
    /// its level.
    pub(super) fn room_for(&self, levels: &[RefLevel], va: u64, size: PageSize) -> bool {
        let start = va & !(size.bytes() - 1);
        let leaf = leaf_level(levels, size);
        let no_table = (leaf + 1 >= levels.len())
            || !self
                .tables
                .contains_key(&(leaf + 1, start >> levels[leaf].shift));
        let no_page = PageSize::ALL.into_iter().filter(|&s| s < size).all(|s| {
            (0..size.bytes() / s.bytes())
                .all(|i| !self.pages.contains_key(&((start >> s.shift()) + i, s)))
        });
        no_table && no_page
    }

    /// The physical addresses of the entries a walk of `va` reads from `start` to its leaf.
    pub(super) fn path(
        &self,
        levels: &[RefLevel],
        start: usize,
        va: u64,
        size: PageSize,
    ) -> Vec<u64> {
        (start..=leaf_level(levels, size))
            .map(|level| {
                let l = &levels[level];
                self.table(levels, level, va) + ((va >> l.shift) % (1 << l.bits)) * l.entry_bytes
            })
            .collect()
    }
}

/// The page size an event's `page_shift` names; `what` names the event in the error.
pub(super) fn page_size_of_shift(page_shift: u8, what: &str) -> Result<PageSize, String> {
    PageSize::ALL
        .into_iter()
        .find(|s| s.shift() == page_shift as u32)
        .ok_or(format!("{what}: page_shift"))
}

pub(super) fn leaf_level(levels: &[RefLevel], size: PageSize) -> usize {
    levels
        .iter()
        .position(|l| l.leaves.contains(&size))
        .expect("page size of the format")
}
