//! Page tables as real data in simulated physical memory.
//!
//! A `PageTable` is a radix tree whose nodes occupy frames from the `FrameAllocator`; each node
//! holds the format's real descriptors, so the physical address of every entry a walk reads is
//! known (and goes through the caches). One file per format supplies the geometry and the
//! descriptor encoding; adding a format means one file and one enum arm here.
//!
//! Tables are built on first touch: `map` allocates missing intermediate tables. Beside each
//! descriptor we keep the index of its child node, so following a pointer costs a vector index
//! instead of a physical-address lookup. Descriptor and child index share one 16-byte `Slot`,
//! and every node's slots are one run of a single vector: a walk step touches one host cache
//! line, which is what bounds random-access workloads whose tables outgrow the host's caches.

mod armv7;
mod armv8;
mod format;
#[cfg(test)]
mod tests;
mod walk;
mod x86_64;

pub use format::*;

use crate::memory::{FrameAllocator, OutOfMemory};
use serde::{Deserialize, Serialize};
use tlblab_types::{Domain, PageSize, Pfn, PhysAddr, VirtAddr};

/// One table node: its frame and where its entries start in `PageTable::slots`.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug)]
struct Node {
    base: PhysAddr,
    first_slot: u32,
}

/// One page-table entry: the format's descriptor and, for a table descriptor, the node index
/// + 1 of the child table (0 = none).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, Default)]
#[repr(C, align(16))]
struct Slot {
    desc: u64,
    child: u32,
}

/// The translation a walk found.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub struct Leaf {
    /// First 4 KiB frame of the page.
    pub pfn: Pfn,
    pub size: PageSize,
    pub domain: Domain,
}

/// The physical addresses a walk reads, root first, and the node reached at each level.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, Default)]
pub struct WalkPath {
    pub refs: [PhysAddr; 5],
    /// Node index of the table read at each level (for page-walk-cache fills).
    pub nodes: [u32; 5],
    /// Number of levels read.
    pub len: usize,
}

/// What `PageTable::last_entry` found.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug)]
pub(crate) struct LastEntry {
    /// The entry's physical address.
    pub(crate) entry: PhysAddr,
    /// The page it maps (first frame, size), if it is a leaf.
    pub(crate) leaf: Option<(Pfn, PageSize)>,
}

/// `PageTable::leaf_of`'s mark of a page size the format cannot map.
const NO_LEAF: u8 = u8::MAX;

/// The level (root = 0) at which a page of each size is a leaf in a format of `levels`, by
/// `PageSize::index` (`NO_LEAF`: none), the first level that lists the size.
fn leaf_levels(levels: &[LevelGeom]) -> [u8; 6] {
    PageSize::ALL.map(|size| {
        levels
            .iter()
            .position(|l| l.leaf_sizes.contains(&size))
            .map_or(NO_LEAF, |l| l as u8)
    })
}

/// One address space's page table.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct PageTable {
    format: PageTableFormat,
    /// Where the tables sit in their frames (`TableLayout`); absent from checkpoints written
    /// before it existed, whose tables each started a frame.
    #[serde(default)]
    layout: TableLayout,
    /// The format's geometry (`PageTableFormat::levels`): a static table, not saved in a
    /// checkpoint but set again from `format` (`after_restore`).
    #[serde(skip)]
    levels: &'static [LevelGeom],
    /// The level at which a page of each size (`PageSize::index`) is a leaf, `NO_LEAF` where
    /// the format maps no such page: `levels` searched once, not on every first touch (the
    /// search was ~70 of the ~280 instructions of `map_leaf`, callgrind, zen3 full model on a
    /// random stream). Set with `levels`, so not saved either.
    #[serde(skip)]
    leaf_of: [u8; 6],
    nodes: Vec<Node>,
    /// The entries of every node, node after node (`Node::first_slot`).
    slots: Vec<Slot>,
    mapped_pages: u64,
}

impl PageTable {
    /// Sets what a checkpoint does not hold (`levels`) from what it does.
    pub(crate) fn after_restore(&mut self) {
        self.levels = self.format.levels();
        self.leaf_of = leaf_levels(self.levels);
    }

    /// An empty table: just the root, allocated from `frames`; every table at the start of a
    /// frame of its own (`TableLayout::OwnFrame`).
    pub fn new(
        format: PageTableFormat,
        frames: &mut FrameAllocator,
    ) -> Result<PageTable, OutOfMemory> {
        Self::with_layout(format, TableLayout::OwnFrame, frames)
    }

    /// An empty table whose tables sit in their frames as `layout` says (a layout other than
    /// `OwnFrame` only with the format it is for: `MachineConfig::validate` checks).
    pub fn with_layout(
        format: PageTableFormat,
        layout: TableLayout,
        frames: &mut FrameAllocator,
    ) -> Result<PageTable, OutOfMemory> {
        debug_assert!(layout.is_own_frame() || format == PageTableFormat::Armv7Short);
        let mut t = PageTable {
            format,
            layout,
            levels: format.levels(),
            leaf_of: leaf_levels(format.levels()),
            nodes: Vec::new(),
            slots: Vec::new(),
            mapped_pages: 0,
        };
        t.new_node(0, VirtAddr(0), frames)?;
        Ok(t)
    }

    /// A new table of `level` for `va`, in a frame of its own or (Linux's ARMv7 layout, the
    /// second level) in the page of the table of the other MiB of `va`'s 2 MiB, allocated by
    /// whichever of the two comes first.
    fn new_node(
        &mut self,
        level: usize,
        va: VirtAddr,
        frames: &mut FrameAllocator,
    ) -> Result<u32, OutOfMemory> {
        let base = if level == 1 && self.layout == TableLayout::LinuxArmv7 {
            // The page of the other MiB's table, if that came first (`populate_pair` makes
            // the two together; a section beside it leaves this one alone in its page).
            let other = self.slot(0, self.index(0, va) ^ 1).child;
            let page = if other != 0 {
                PhysAddr(self.nodes[other as usize - 1].base.0 & !0xfff)
            } else {
                frames.alloc(PageSize::Size4K)?.base()
            };
            armv7::linux_table(page, va)
        } else {
            frames.alloc(self.format.table_size(level))?.base()
        };
        let n = 1usize << self.levels[level].bits;
        let first_slot = u32::try_from(self.slots.len()).map_err(|_| OutOfMemory {
            size: self.format.table_size(level),
        })?;
        self.slots.resize(self.slots.len() + n, Slot::default());
        self.nodes.push(Node { base, first_slot });
        Ok((self.nodes.len() - 1) as u32)
    }

    /// Entry `i` of `node`.
    #[inline]
    fn slot(&self, node: u32, i: usize) -> Slot {
        self.slots[self.nodes[node as usize].first_slot as usize + i]
    }

    #[inline]
    fn slot_mut(&mut self, node: u32, i: usize) -> &mut Slot {
        let first = self.nodes[node as usize].first_slot as usize;
        &mut self.slots[first + i]
    }

    /// Sets the descriptors of entries `range` of `node` (a page's replicas) to `desc`.
    fn set_descs(&mut self, node: u32, range: std::ops::Range<usize>, desc: u64) {
        let first = self.nodes[node as usize].first_slot as usize;
        for s in &mut self.slots[first + range.start..first + range.end] {
            s.desc = desc;
        }
    }

    pub fn format(&self) -> PageTableFormat {
        self.format
    }

    pub fn layout(&self) -> TableLayout {
        self.layout
    }

    /// Number of table nodes (frames used by the page table).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn mapped_pages(&self) -> u64 {
        self.mapped_pages
    }

    /// Physical address of the root table (CR3 / TTBR).
    pub fn root(&self) -> PhysAddr {
        self.nodes[0].base
    }

    pub fn node_base(&self, node: u32) -> PhysAddr {
        self.nodes[node as usize].base
    }

    #[inline]
    fn index(&self, level: usize, va: VirtAddr) -> usize {
        self.levels[level].index_of(va)
    }

    /// Level (root = 0) at which a page of `size` is a leaf.
    #[inline]
    pub fn leaf_level(&self, size: PageSize) -> Option<usize> {
        match self.leaf_of[size.index()] {
            NO_LEAF => None,
            l => Some(l as usize),
        }
    }

    /// Maps the page of `size` containing `va` to the frame run starting at `pfn`, creating
    /// intermediate tables. `domain` is recorded in ARMv7 first-level descriptors; `global`
    /// in the leaf descriptor (the kernel's mappings).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn map(
        &mut self,
        va: VirtAddr,
        size: PageSize,
        pfn: Pfn,
        domain: Domain,
        global: bool,
        frames: &mut FrameAllocator,
    ) -> Result<(), OutOfMemory> {
        // One copy per globalness, each with the flag constant: a seventh argument and the
        // bit's choice cost every page's first touch ~13 instructions (callgrind, zen3 full
        // model, random 65,536 pages: +0.8M of 299M), on machines that map nothing global.
        if global {
            self.map_leaf::<true>(va, size, pfn, domain, frames)
        } else {
            self.map_leaf::<false>(va, size, pfn, domain, frames)
        }
    }

    #[inline(never)]
    fn map_leaf<const GLOBAL: bool>(
        &mut self,
        va: VirtAddr,
        size: PageSize,
        pfn: Pfn,
        domain: Domain,
        frames: &mut FrameAllocator,
    ) -> Result<(), OutOfMemory> {
        let leaf_level = self
            .leaf_level(size)
            .expect("page size validated against the format");
        let mut node = 0u32;
        for level in 0..leaf_level {
            let i = self.index(level, va);
            let c = self.slot(node, i).child;
            node = if c != 0 {
                c - 1
            } else {
                let child = self.new_node(level + 1, va, frames)?;
                let base = self.nodes[child as usize].base;
                let desc = self.format.encode_table(base, domain);
                *self.slot_mut(node, i) = Slot {
                    desc,
                    child: child + 1,
                };
                if level == 0 && self.layout == TableLayout::LinuxArmv7 {
                    self.populate_pair(i ^ 1, VirtAddr(va.0 ^ (1 << 20)), domain, frames)?;
                }
                child
            };
        }
        self.map_in(node, leaf_level, va, size, pfn, domain, GLOBAL);
        Ok(())
    }

    /// Linux's ARMv7 layout: the first-level entry `i` of the other MiB (`va` in it) of a pair
    /// whose first table was just made, pointed at its own table in the same page. ARM
    /// Linux's `__pmd_populate` (arch/arm/include/asm/pgalloc.h) writes both entries of the
    /// pair when it allocates the page (`pmdp[0]`, `pmdp[1] = pmdval + 256 * sizeof(pte_t)`),
    /// so a later fault in the other MiB finds its first-level entry written and its
    /// second-level one invalid (`System::fault_stores` stores only what a fault wrote). An
    /// entry already in use (a section) is left as it is.
    #[cold]
    fn populate_pair(
        &mut self,
        i: usize,
        va: VirtAddr,
        domain: Domain,
        frames: &mut FrameAllocator,
    ) -> Result<(), OutOfMemory> {
        let s = self.slot(0, i);
        if s.child != 0 || self.format.decode(s.desc, 0) != Desc::Invalid {
            return Ok(());
        }
        let child = self.new_node(1, va, frames)?;
        let desc = self
            .format
            .encode_table(self.nodes[child as usize].base, domain);
        *self.slot_mut(0, i) = Slot {
            desc,
            child: child + 1,
        };
        Ok(())
    }

    /// `map` of a page of `size` whose table at its leaf level `leaf_level` exists and is node
    /// `node` (all its replicas; the page counted), as a walk that just read the page's
    /// invalid entry there found it (`System::first_touch`), or `map_leaf`'s descent reached
    /// it: nothing is allocated. Returns the leaf a walk of `va` now finds, as `walk_from`
    /// gives it: in every format but ARMv7's the frame and size just mapped with domain 0
    /// (their decoders' domain); None on ARMv7, whose leaves below the first level take the
    /// domain of the first-level descriptor above them (a walk tells).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn map_in(
        &mut self,
        node: u32,
        leaf_level: usize,
        va: VirtAddr,
        size: PageSize,
        pfn: Pfn,
        domain: Domain,
        global: bool,
    ) -> Option<Leaf> {
        debug_assert_eq!(self.leaf_level(size), Some(leaf_level));
        let desc = self.format.encode_leaf(pfn.base(), size, domain, global);
        let i = self.index(leaf_level, va);
        // A 64 KiB page at a 4 KiB-indexed level occupies 16 replicated entries.
        let span = 1usize << (size.shift() - self.levels[leaf_level].shift);
        if span == 1 {
            // Nearly every page (one entry): no loop to set up.
            self.slot_mut(node, i).desc = desc;
        } else {
            let first = i & !(span - 1);
            self.set_descs(node, first..first + span, desc);
        }
        self.mapped_pages += 1;
        (self.format != PageTableFormat::Armv7Short).then_some(Leaf {
            pfn,
            size,
            domain: Domain(0),
        })
    }

    /// Whether a page of `size` could be mapped at `va` without touching a mapping already
    /// there: on its way down no entry has a table below it, and the entries it would take
    /// (a 64 KiB page's 16 replicas) are empty with no table below. Linux maps a huge page
    /// only where the page-middle directory entry is empty (`pmd_none`, mm/memory.c), and
    /// otherwise faults in a base page.
    pub fn room_for(&self, va: VirtAddr, size: PageSize) -> bool {
        let Some(leaf_level) = self.leaf_level(size) else {
            return false;
        };
        let mut node = 0u32;
        for level in 0..leaf_level {
            match self.slot(node, self.index(level, va)).child {
                0 => return true,
                c => node = c - 1,
            }
        }
        let span = 1usize << (size.shift() - self.levels[leaf_level].shift);
        let first = self.index(leaf_level, va) & !(span - 1);
        (first..first + span).all(|i| {
            let slot = self.slot(node, i);
            slot.child == 0 && self.format.decode(slot.desc, leaf_level) == Desc::Invalid
        })
    }

    /// Removes the mapping of the page containing `va` (all replicas). Returns whether one existed.
    pub fn unmap(&mut self, va: VirtAddr) -> bool {
        let mut node = 0u32;
        for level in 0..self.levels.len() {
            let i = self.index(level, va);
            let slot = self.slot(node, i);
            match self.format.decode(slot.desc, level) {
                Desc::Invalid => return false,
                Desc::Table { .. } => node = slot.child - 1,
                Desc::Leaf { size, .. } => {
                    let span = 1usize << (size.shift() - self.levels[level].shift);
                    let first = i & !(span - 1);
                    self.set_descs(node, first..first + span, 0);
                    self.mapped_pages -= 1;
                    return true;
                }
            }
        }
        false
    }
}
