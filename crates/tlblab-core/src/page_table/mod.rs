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
mod x86_64;

use crate::memory::{FrameAllocator, OutOfMemory};
use serde::{Deserialize, Serialize};
use tlblab_types::{Domain, PageSize, Pfn, PhysAddr, VirtAddr};

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

    fn encode_table(self, child: PhysAddr, domain: Domain) -> u64 {
        match self {
            PageTableFormat::X86_64_4level | PageTableFormat::X86_64_5level => {
                x86_64::encode_table(child, domain)
            }
            PageTableFormat::Armv7Short => armv7::encode_table(child, domain),
            PageTableFormat::Armv8_4k => armv8::encode_table(child, domain),
        }
    }

    fn encode_leaf(self, frame: PhysAddr, size: PageSize, domain: Domain, global: bool) -> u64 {
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
    fn table_size(self, level: usize) -> PageSize {
        let l = self.levels()[level];
        if (l.entry_bytes << l.bits) > 4096 {
            PageSize::Size16K
        } else {
            PageSize::Size4K
        }
    }
}

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

/// One address space's page table.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct PageTable {
    format: PageTableFormat,
    /// The format's geometry (`PageTableFormat::levels`): a static table, not saved in a
    /// checkpoint but set again from `format` (`after_restore`).
    #[serde(skip)]
    levels: &'static [LevelGeom],
    nodes: Vec<Node>,
    /// The entries of every node, node after node (`Node::first_slot`).
    slots: Vec<Slot>,
    mapped_pages: u64,
}

impl PageTable {
    /// Sets what a checkpoint does not hold (`levels`) from what it does.
    pub(crate) fn after_restore(&mut self) {
        self.levels = self.format.levels();
    }

    /// An empty table: just the root, allocated from `frames`.
    pub fn new(
        format: PageTableFormat,
        frames: &mut FrameAllocator,
    ) -> Result<PageTable, OutOfMemory> {
        let mut t = PageTable {
            format,
            levels: format.levels(),
            nodes: Vec::new(),
            slots: Vec::new(),
            mapped_pages: 0,
        };
        t.new_node(0, frames)?;
        Ok(t)
    }

    fn new_node(&mut self, level: usize, frames: &mut FrameAllocator) -> Result<u32, OutOfMemory> {
        let pfn = frames.alloc(self.format.table_size(level))?;
        let n = 1usize << self.levels[level].bits;
        let first_slot = u32::try_from(self.slots.len()).map_err(|_| OutOfMemory {
            size: self.format.table_size(level),
        })?;
        self.slots.resize(self.slots.len() + n, Slot::default());
        self.nodes.push(Node {
            base: pfn.base(),
            first_slot,
        });
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
    pub fn leaf_level(&self, size: PageSize) -> Option<usize> {
        self.levels
            .iter()
            .position(|l| l.leaf_sizes.contains(&size))
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
                let child = self.new_node(level + 1, frames)?;
                let base = self.nodes[child as usize].base;
                let desc = self.format.encode_table(base, domain);
                *self.slot_mut(node, i) = Slot {
                    desc,
                    child: child + 1,
                };
                child
            };
        }
        let desc = self.format.encode_leaf(pfn.base(), size, domain, GLOBAL);
        let i = self.index(leaf_level, va);
        // A 64 KiB page at a 4 KiB-indexed level occupies 16 replicated entries.
        let span = 1usize << (size.shift() - self.levels[leaf_level].shift);
        let first = i & !(span - 1);
        self.set_descs(node, first..first + span, desc);
        self.mapped_pages += 1;
        Ok(())
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

    /// Walks from `start_node` at `start_level`, recording every entry read. Returns the leaf,
    /// or None if the address is unmapped (the path then ends at the invalid entry).
    /// Always inlined: as a call it cost each walk its prologue, the format dispatch through a
    /// jump table and the path's stores through memory (callgrind, zen3 full model, instructions
    /// per reference: strided 988 → 945, random 1,667 → 1,637).
    #[inline(always)]
    pub fn walk_from(
        &self,
        va: VirtAddr,
        start_level: usize,
        start_node: u32,
        path: &mut WalkPath,
    ) -> Option<Leaf> {
        // One dispatch on the format per walk, so that each format's walk has its geometry and
        // descriptor decoding inlined, instead of `PageTableFormat::decode`'s dispatch and
        // geometry lookup per level (measured: -3% instructions per reference of a random
        // stream, zen3 full model).
        let (va, sl, sn) = (va, start_level, start_node);
        match self.format {
            PageTableFormat::X86_64_4level => {
                self.walk_with(x86_64::LEVELS_4, x86_64::decode, false, va, sl, sn, path)
            }
            PageTableFormat::X86_64_5level => {
                self.walk_with(x86_64::LEVELS_5, x86_64::decode, false, va, sl, sn, path)
            }
            PageTableFormat::Armv7Short => {
                self.walk_with(armv7::LEVELS, armv7::decode, true, va, sl, sn, path)
            }
            PageTableFormat::Armv8_4k => {
                self.walk_with(armv8::LEVELS, armv8::decode, false, va, sl, sn, path)
            }
        }
    }

    /// `walk_from` for a format of geometry `levels` (the same as `self.levels`) and decoder
    /// `decode`; `armv7`: first-level table descriptors carry the domain.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn walk_with(
        &self,
        levels: &'static [LevelGeom],
        decode: fn(u64, &LevelGeom, bool) -> Desc,
        armv7: bool,
        va: VirtAddr,
        start_level: usize,
        start_node: u32,
        path: &mut WalkPath,
    ) -> Option<Leaf> {
        debug_assert!(levels == self.levels);
        // An ARMv7 leaf below the first level has the domain of the first-level descriptor
        // above it (armv7.rs). A walk that starts below that level (a page-walk cache hit)
        // does not read it, but the cache that let it skip the read holds what it said, the
        // domain with the table pointer: taken here from the table, with no simulated
        // reference. (Before 2026-11-25 such a walk gave domain 0; no preset has an ARMv7
        // page-walk cache.)
        let first_domain = if armv7 && start_level > 0 {
            let i = levels[0].index_of(va);
            let desc = self.slots[self.nodes[0].first_slot as usize + i].desc;
            Domain(((desc >> 5) & 0xf) as u8)
        } else {
            Domain(0)
        };
        // From one of the last two levels (a page-walk cache hit), in straight code rather
        // than the loop, whose set-up cost more than the entries (callgrind, zen3 full model,
        // instructions per reference: strided, from the last level, 871 → 843; random, from
        // the one above, 1,585 → 1,528).
        let below_first = |(pfn, size)| Leaf {
            pfn,
            size,
            domain: first_domain,
        };
        if start_level > 0 && start_level + 1 == levels.len() {
            let last = self.last_level_entry_with(levels, decode, start_node, va);
            path.refs[0] = last.entry;
            path.nodes[0] = start_node;
            path.len = 1;
            return last.leaf.map(below_first);
        }
        if start_level > 0 && start_level + 2 == levels.len() {
            let l = &levels[start_level];
            let i = l.index_of(va);
            let n = self.nodes[start_node as usize];
            let slot = self.slots[n.first_slot as usize + i];
            path.refs[0] = PhysAddr(n.base.0 + i as u64 * l.entry_bytes);
            path.nodes[0] = start_node;
            path.len = 1;
            return match decode(slot.desc, l, false) {
                Desc::Invalid => None,
                Desc::Leaf { frame, size, .. } => Some(below_first((frame.pfn(), size))),
                Desc::Table { .. } => {
                    let child = slot.child - 1;
                    let last = self.last_level_entry_with(levels, decode, child, va);
                    path.refs[1] = last.entry;
                    path.nodes[1] = child;
                    path.len = 2;
                    last.leaf.map(below_first)
                }
            };
        }
        path.len = 0;
        let mut node = start_node;
        let mut domain = first_domain;
        for (level, l) in levels.iter().enumerate().skip(start_level) {
            let i = l.index_of(va);
            let n = self.nodes[node as usize];
            let slot = self.slots[n.first_slot as usize + i];
            path.refs[path.len] = PhysAddr(n.base.0 + i as u64 * l.entry_bytes);
            path.nodes[path.len] = node;
            path.len += 1;
            match decode(slot.desc, l, level + 1 == levels.len()) {
                Desc::Invalid => return None,
                Desc::Table { .. } => {
                    if level == 0 && armv7 {
                        domain = Domain(((slot.desc >> 5) & 0xf) as u8);
                    }
                    node = slot.child - 1;
                }
                Desc::Leaf {
                    frame,
                    size,
                    domain: d,
                    ..
                } => {
                    let d = if level == 0 { d } else { domain };
                    return Some(Leaf {
                        pfn: frame.pfn(),
                        size,
                        domain: d,
                    });
                }
            }
        }
        None
    }

    /// Whether the page mapping `va` is global (its leaf descriptor's nG bit clear, or G
    /// set: the TLB entries filled from it match every ASID), or `None` when `va` is not
    /// mapped. A descent of its own, off the walks' path: the walks' `Leaf` does not carry
    /// the bit, since decoding and carrying it there cost the technique-free path ~1% of its
    /// instructions (callgrind, zen3 full model, random 65,536 pages: 298.6M → 302.9M with
    /// the map's share), and only a machine with a global mapping (`System::any_global`) asks.
    #[cold]
    pub fn is_global(&self, va: VirtAddr) -> Option<bool> {
        let mut node = 0u32;
        for (level, l) in self.levels.iter().enumerate() {
            let n = self.nodes[node as usize];
            let slot = self.slots[n.first_slot as usize + l.index_of(va)];
            match self.format.decode(slot.desc, level) {
                Desc::Invalid => return None,
                Desc::Leaf { global, .. } => return Some(global),
                Desc::Table { .. } => node = slot.child - 1,
            }
        }
        None
    }

    /// Where the child links lead a walk of `va` from `start_node` at `start_level`: the last
    /// entry on the way, and its translation if it maps a page. The same entry and leaf as
    /// `walk_from` reaches, except where a page was mapped over an existing table (the links
    /// still lead down there); for host prefetch hints, which only need a likely answer, at a
    /// fraction of `walk_from`'s cost: one descriptor decoded instead of one per level, and no
    /// path recorded (measured: `walk_from` from the root was ~390 instructions per reference
    /// of a random stream in `System::prefetch_cache_sets`).
    #[inline]
    pub(crate) fn last_entry(
        &self,
        va: VirtAddr,
        start_level: usize,
        start_node: u32,
    ) -> LastEntry {
        let mut node = start_node;
        let mut level = start_level;
        loop {
            let l = &self.levels[level];
            let i = l.index_of(va);
            let n = self.nodes[node as usize];
            let slot = self.slots[n.first_slot as usize + i];
            if slot.child == 0 || level + 1 == self.levels.len() {
                let leaf = match self.format.decode(slot.desc, level) {
                    Desc::Leaf { frame, size, .. } => Some((frame.pfn(), size)),
                    _ => None,
                };
                return LastEntry {
                    entry: PhysAddr(n.base.0 + i as u64 * l.entry_bytes),
                    leaf,
                };
            }
            node = slot.child - 1;
            level += 1;
        }
    }

    /// Whether the entries outgrow the host's caches (over 2 MiB). Smaller tables stay cached,
    /// where a prefetch only costs (measured: strided and pointer-chase workloads with 0.25-1
    /// MiB of entries ran 8-12% slower with it, a 4 MiB random one 40-70% faster).
    #[inline]
    pub fn worth_prefetching(&self) -> bool {
        self.slots.len() * std::mem::size_of::<Slot>() > 2 << 20
    }

    /// The VA shift of the regions one last-level table maps (2 MiB on x86-64): the key of
    /// `System`'s memo of last-level tables.
    #[inline]
    pub(crate) fn last_table_shift(&self) -> u32 {
        self.levels[self.levels.len() - 2].shift
    }

    /// Asks the host to bring the entry of `va` in last-level table `node` into its caches.
    /// The run loop calls it for a record some way ahead (`System::prefetch_ahead`), since in a
    /// large random footprint that entry is the miss worth hiding (the upper levels are few
    /// and stay cached). A hint to the host only: nothing simulated changes. See
    /// `worth_prefetching`.
    #[inline(always)]
    pub(crate) fn prefetch_entry(&self, node: u32, va: VirtAddr) {
        let last = self.levels.len() - 1;
        let first = self.nodes[node as usize].first_slot as usize;
        crate::simd::prefetch(&self.slots[first + self.index(last, va)]);
    }

    /// `last_entry` from last-level table `node` (which is on the path of `va`).
    #[inline(always)]
    pub(crate) fn last_level_entry(&self, node: u32, va: VirtAddr) -> LastEntry {
        // As in `walk_from`: the format's geometry and decoder constant in each arm.
        match self.format {
            PageTableFormat::X86_64_4level => {
                self.last_level_entry_with(x86_64::LEVELS_4, x86_64::decode, node, va)
            }
            PageTableFormat::X86_64_5level => {
                self.last_level_entry_with(x86_64::LEVELS_5, x86_64::decode, node, va)
            }
            PageTableFormat::Armv7Short => {
                self.last_level_entry_with(armv7::LEVELS, armv7::decode, node, va)
            }
            PageTableFormat::Armv8_4k => {
                self.last_level_entry_with(armv8::LEVELS, armv8::decode, node, va)
            }
        }
    }

    /// `last_level_entry` for a format of geometry `levels` and decoder `decode`.
    #[inline(always)]
    fn last_level_entry_with(
        &self,
        levels: &'static [LevelGeom],
        decode: fn(u64, &LevelGeom, bool) -> Desc,
        node: u32,
        va: VirtAddr,
    ) -> LastEntry {
        let l = &levels[levels.len() - 1];
        let i = l.index_of(va);
        let n = self.nodes[node as usize];
        let slot = self.slots[n.first_slot as usize + i];
        let leaf = match decode(slot.desc, l, true) {
            Desc::Leaf { frame, size, .. } => Some((frame.pfn(), size)),
            _ => None,
        };
        LastEntry {
            entry: PhysAddr(n.base.0 + i as u64 * l.entry_bytes),
            leaf,
        }
    }

    /// The node of the last-level table on the path of `va`, if the table pointers reach it:
    /// `node_at` for that level, with the format's geometry constant (for host prefetch hints;
    /// measured: 130 instructions per call through `node_at` on x86-64).
    #[inline]
    pub(crate) fn last_table(&self, va: VirtAddr) -> Option<u32> {
        match self.format {
            PageTableFormat::X86_64_4level => self.last_table_with(x86_64::LEVELS_4, va),
            PageTableFormat::X86_64_5level => self.last_table_with(x86_64::LEVELS_5, va),
            PageTableFormat::Armv7Short => self.last_table_with(armv7::LEVELS, va),
            PageTableFormat::Armv8_4k => self.last_table_with(armv8::LEVELS, va),
        }
    }

    /// `last_table` for a format of geometry `levels`.
    #[inline(always)]
    fn last_table_with(&self, levels: &'static [LevelGeom], va: VirtAddr) -> Option<u32> {
        let mut node = 0u32;
        for l in &levels[..levels.len() - 1] {
            let i = l.index_of(va);
            let c = self.slots[self.nodes[node as usize].first_slot as usize + i].child;
            if c == 0 {
                return None;
            }
            node = c - 1;
        }
        Some(node)
    }

    /// Translation without recording the path.
    pub fn translate(&self, va: VirtAddr) -> Option<Leaf> {
        let mut p = WalkPath::default();
        self.walk_from(va, 0, 0, &mut p)
    }

    /// The node index of the table at `level` on the path of `va`, if it exists.
    pub fn node_at(&self, va: VirtAddr, level: usize) -> Option<u32> {
        let mut node = 0u32;
        for l in 0..level {
            let c = self.slot(node, self.index(l, va)).child;
            if c == 0 {
                return None;
            }
            node = c - 1;
        }
        Some(node)
    }

    pub fn levels(&self) -> &'static [LevelGeom] {
        self.levels
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemoryConfig, Placement};

    fn frames() -> FrameAllocator {
        let cfg = MemoryConfig {
            bytes: 8 << 30,
            latency: 100,
            placement: Placement::default(),
            source: String::new(),
        };
        FrameAllocator::new(&cfg, 1)
    }

    /// `walk_from` (one copy per format) and the prefetch helpers (`last_table`,
    /// `last_level_entry`, `last_entry`) agree with each other and with what was mapped, for
    /// every format and page size, global or not (the leaf descriptor's nG or G bit),
    /// including the ARMv7 domain of a first-level descriptor (which no engine test sets to
    /// anything but 0).
    #[test]
    fn walks_and_prefetch_descents_find_what_was_mapped() {
        for format in [
            PageTableFormat::X86_64_4level,
            PageTableFormat::X86_64_5level,
            PageTableFormat::Armv7Short,
            PageTableFormat::Armv8_4k,
        ] {
            let mut fr = frames();
            let mut pt = PageTable::new(format, &mut fr).unwrap();
            let domain = Domain(if format == PageTableFormat::Armv7Short {
                5
            } else {
                0
            });
            let mut va = 1u64 << 30;
            for (size, global) in format
                .page_sizes()
                .into_iter()
                .flat_map(|s| [(s, false), (s, true)])
            {
                let pfn = fr.alloc(size).unwrap();
                let page = VirtAddr(va);
                pt.map(page, size, pfn, domain, global, &mut fr).unwrap();
                let probe = VirtAddr(va + size.bytes() / 2 + 8);
                let mut path = WalkPath::default();
                let leaf = pt.walk_from(probe, 0, 0, &mut path).expect("mapped");
                assert_eq!(leaf.pfn, pfn, "{format:?} {size}");
                assert_eq!(leaf.size, size, "{format:?} {size}");
                assert_eq!(leaf.domain, domain, "{format:?} {size}");
                assert_eq!(pt.is_global(probe), Some(global), "{format:?} {size}");
                let last = pt.last_entry(probe, 0, 0);
                assert_eq!(last.entry, path.refs[path.len - 1], "{format:?} {size}");
                assert_eq!(last.leaf, Some((pfn, size)), "{format:?} {size}");
                let leaf_level = pt.leaf_level(size).unwrap();
                if leaf_level + 1 == pt.levels().len() {
                    let node = pt.last_table(probe).expect("tables reach the last level");
                    assert_eq!(node, path.nodes[path.len - 1], "{format:?} {size}");
                    let e = pt.last_level_entry(node, probe);
                    assert_eq!(e.entry, last.entry, "{format:?} {size}");
                    assert_eq!(e.leaf, last.leaf, "{format:?} {size}");
                } else {
                    assert_eq!(pt.last_table(probe), None, "{format:?} {size}");
                }
                // Starting below the root (a page-walk-cache hit) reads the rest of the path
                // (from the last two levels, in `walk_with`'s straight code), and finds the
                // same leaf: an ARMv7 one with the domain of the first-level descriptor it
                // did not read.
                for start in 1..path.len {
                    let mut rest = WalkPath::default();
                    let again = pt.walk_from(probe, start, path.nodes[start], &mut rest);
                    let expected = Leaf { pfn, size, domain };
                    assert_eq!(again, Some(expected), "{format:?} {size} from {start}");
                    assert_eq!(&rest.refs[..rest.len], &path.refs[start..path.len]);
                    assert_eq!(&rest.nodes[..rest.len], &path.nodes[start..path.len]);
                }
                if leaf_level > 0 && leaf_level + 1 == pt.levels().len() {
                    // The next page of the same last-level table is unmapped: from any level
                    // below the root, no leaf, and the rest of the path to its invalid entry.
                    let next = VirtAddr(probe.0 + size.bytes());
                    let mut full = WalkPath::default();
                    assert_eq!(pt.walk_from(next, 0, 0, &mut full), None, "{format:?}");
                    assert_eq!(full.nodes[full.len - 1], path.nodes[path.len - 1]);
                    for start in 1..full.len {
                        let mut rest = WalkPath::default();
                        let node = full.nodes[start];
                        assert_eq!(pt.walk_from(next, start, node, &mut rest), None);
                        assert_eq!(&rest.refs[..rest.len], &full.refs[start..full.len]);
                        assert_eq!(&rest.nodes[..rest.len], &full.nodes[start..full.len]);
                    }
                }
                // 256 MiB apart on ARMv7, whose 4 GiB hold six pages 1 GiB apart only just not.
                va += if format == PageTableFormat::Armv7Short {
                    1 << 28
                } else {
                    1 << 30
                };
            }
            // Unmapped: no leaf, the path ends at the invalid entry.
            let mut path = WalkPath::default();
            assert_eq!(pt.walk_from(VirtAddr(va), 0, 0, &mut path), None);
            assert_eq!(pt.last_entry(VirtAddr(va), 0, 0).leaf, None);
        }
    }
}
