//! Walking a page table: the entries a walk reads, root first (`walk_from`, `WalkPath`), the
//! last-level entry the fast lane reads directly (`last_entry`, `last_level_entry`), the
//! prefetches of the next walk's entries, and translation without a path (`translate`).

use super::*;

impl PageTable {
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
