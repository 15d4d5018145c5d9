//! Host prefetch hints: the run loops tell the host to fetch, a few records ahead, the page-table
//! entries and cache sets a reference will touch and the records themselves. They change no
//! simulated state (ARCHITECTURE.md, "How the hot path stays fast").

use super::*;

/// How far ahead the run loop and the fast lane hint the host to fetch a walk's entries (and
/// half as far, the cache sets): `prefetch_ahead`, `prefetch_lane`.
pub(crate) const PREFETCH_AHEAD: usize = 16;

/// How many records ahead the run loops hint the host to fetch the record stream itself
/// (2 KiB: two records a host line). A run over records in memory (`System::run_slice`)
/// otherwise waits on them: 32 bytes a record is the host's memory bandwidth at the rates of
/// the fast cases (ARCHITECTURE.md, "Records from memory").
pub(super) const RECORD_AHEAD: usize = 64;

/// Hints the host to fetch the record `RECORD_AHEAD` after `records[n]` (past the end is fine:
/// a hint never faults). For the loops of a run with `System::records_in_memory` (and
/// tlblab-floor's `run_records`, which reads records in place as they do).
#[inline(always)]
pub fn hint_record(records: &[Record], n: usize) {
    crate::simd::prefetch_at(records.as_ptr().wrapping_add(n + RECORD_AHEAD));
}

/// Entries of `System::leaf_tables` (a power of two). `prefetch_ahead` fills the entry of the
/// record `PREFETCH_AHEAD` ahead and reads it for the one half as far ahead, so the entries of
/// the records in between compete for it (with 64, one of 8 others lands on it 12% of the
/// time). With 512 (12 KiB), the far record of a random stream over up to 1 GiB also finds
/// its table without a descent (measured, random 1M zen3 full: 2620 -> 2542 Ir/ref, 5.5 ->
/// 5.9 M refs/s; no change over 4 GiB or on a pointer chase).
pub(super) const LEAF_TABLES: usize = 512;

/// One entry of `System::leaf_tables`: the last-level table of the region `region` (the
/// addresses whose bits above `PageTable::last_table_shift` are `region`) of address space
/// `space` is node `node`.
#[derive(Clone, Copy, Debug)]
pub(super) struct LeafTableMemo {
    space: usize,
    region: u64,
    node: u32,
}

impl LeafTableMemo {
    pub(super) const EMPTY: LeafTableMemo = LeafTableMemo {
        space: usize::MAX,
        region: 0,
        node: 0,
    };
}

/// A fast lane's answers to what `System::prefetch_ahead` asks per record (`lane_hints`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaneHints {
    thread: ThreadId,
    space: usize,
    core: usize,
    /// Hint the far record's last-level page-table entry: walks are on.
    entries: bool,
    /// Hint the near record's cache sets: walks are on, and `System::cache_hints`.
    sets: bool,
}

impl System {
    /// Host prefetch hints for the record `ahead` records after `records[i]` (its walk's last
    /// entry) and the one `ahead / 2` after it (the cache sets it will touch): a record about to
    /// take a path that may walk does this first, since random footprints are host-memory
    /// bound. Changes nothing simulated.
    #[inline]
    pub(crate) fn prefetch_ahead(&mut self, records: &[Record], i: usize, ahead: usize) {
        let access = |r: Option<&Record>| match r {
            Some(Record::Access(a)) => Some(*a),
            _ => None,
        };
        self.prefetch_for(
            access(records.get(i + ahead)),
            access(records.get(i + ahead / 2)),
        );
    }

    /// `prefetch_ahead`'s hints: the walk of access `far`, the cache sets of access `near`.
    #[inline]
    pub(super) fn prefetch_for(&mut self, far: Option<Access>, near: Option<Access>) {
        if !self.options.walks {
            return;
        }
        // A strided stream (`strided_skip`) is hinted nothing: neither its cache sets nor its
        // page-table entries, which its walks read in order, a pattern the host's own
        // prefetchers follow.
        let cache_hints = self.cache_hints();
        if let Some(near) = &near {
            if cache_hints && self.strided_skip(near.vaddr.0) {
                return;
            }
        }
        if let Some(far) = far {
            if let Some(Some(st)) = self.threads.get(far.thread.0 as usize) {
                self.prefetch_entry_of(st.space, far.vaddr);
            }
        }
        if let Some(near) = near.filter(|_| cache_hints) {
            self.prefetch_cache_sets(&near);
        }
    }

    /// Host prefetch hint for the last-level page-table entry of `va` in address space `space`
    /// (through `leaf_tables`). Only for a table that outgrows the host's caches: with a
    /// smaller one, the lookup alone costs more than the near record's own (measured: +3% on
    /// a strided stream whose records share their last-level table).
    #[inline(always)]
    pub(super) fn prefetch_entry_of(&mut self, space: usize, va: VirtAddr) {
        let pt = &self.spaces[space].pt;
        if pt.worth_prefetching() {
            if let Some(node) = Self::leaf_table(&mut self.leaf_tables, pt, space, va) {
                pt.prefetch_entry(node, va);
            }
        }
    }

    /// Whether `prefetch_cache_sets` hints anything: with caches whose state outgrows the
    /// host's, and a page table read directly (not under virtualization).
    #[inline]
    pub(super) fn cache_hints(&self) -> bool {
        self.options.caches && self.host.is_none() && self.big_caches
    }

    /// The last-level table on the path of `va` in `pt`, the page table of address space
    /// `space` (through the memo `leaf_tables`, filling it), or None if the table pointers end
    /// above that level. The fields, not `self`: the callers borrow the page table once.
    #[inline(always)]
    pub(super) fn leaf_table(
        leaf_tables: &mut [LeafTableMemo; LEAF_TABLES],
        pt: &PageTable,
        space: usize,
        va: VirtAddr,
    ) -> Option<u32> {
        let region = va.0 >> pt.last_table_shift();
        let m = &mut leaf_tables[(region ^ space as u64) as usize % LEAF_TABLES];
        if m.space == space && m.region == region {
            return Some(m.node);
        }
        let node = pt.last_table(va)?;
        *m = LeafTableMemo {
            space,
            region,
            node,
        };
        Some(node)
    }

    /// Host prefetch hints for the simulated cache sets a coming access will touch: its leaf
    /// page-table entry's (through the walker's caches) and its data's, in cache levels whose
    /// state outgrows the host's caches. The run loop calls it for a record some way ahead,
    /// after `prefetch_ahead` has hinted the entry it reads here, and only with
    /// `cache_hints`. Reads only: nothing simulated changes.
    pub(super) fn prefetch_cache_sets(&mut self, a: &Access) {
        let Some(Some(st)) = self.threads.get(a.thread.0 as usize) else {
            return;
        };
        let (space, core) = (st.space, self.cpus[st.cpu].core);
        self.prefetch_sets_of(space, core, a.kind, a.vaddr);
    }

    /// `prefetch_cache_sets` of an access of `kind` to `va` in address space `space` on core
    /// `core`.
    #[inline(always)]
    pub(super) fn prefetch_sets_of(
        &mut self,
        space: usize,
        core: usize,
        kind: AccessKind,
        va: VirtAddr,
    ) {
        let pt = &self.spaces[space].pt;
        let last = match Self::leaf_table(&mut self.leaf_tables, pt, space, va) {
            Some(node) => pt.last_level_entry(node, va),
            // A page mapped above the last level (or no page): the whole descent.
            None => pt.last_entry(va, 0, 0),
        };
        let Some((pfn, size)) = last.leaf else {
            return;
        };
        let pte = last.entry.0;
        let pa = (pfn.0 << 12) + (va.0 & (size.bytes() - 1));
        if self.strides_on(1, pa) {
            self.hint_skips = Self::HINT_SKIPS;
        }
        let core = &self.cores[core];
        Self::hint_sets(&self.caches, &core.big_wcache, pte, pte);
        if self.options.data_accesses {
            let caches = if kind.is_instr() {
                &core.big_icache
            } else {
                &core.big_dcache
            };
            Self::hint_sets(&self.caches, caches, pa, va.0);
        }
    }

    /// What `prefetch_ahead` looks up per record, looked up once for a fast lane's thread
    /// (`prefetch_lane`).
    pub(crate) fn lane_hints(&self, thread: ThreadId, st: ThreadState) -> LaneHints {
        LaneHints {
            thread,
            space: st.space,
            core: self.cpus[st.cpu].core,
            entries: self.options.walks,
            sets: self.options.walks && self.cache_hints(),
        }
    }

    /// `prefetch_ahead` for a fast lane's thread, `PREFETCH_AHEAD` records ahead: the same
    /// hints, for the records of that thread, with what `prefetch_ahead` looks up per record
    /// (the thread's address space and core, the run's switches) taken from `h`. Measured
    /// (zen3 full model, random:pages=262144): 1,886 → 1,854 instructions per reference
    /// (callgrind, 1M), 6.0 → 6.2 M refs/s (interleaved medians of 5, 4M).
    #[inline(always)]
    pub(crate) fn prefetch_lane(&mut self, h: &LaneHints, records: &[Record], i: usize) {
        let ours = |r: Option<&Record>| match r {
            Some(Record::Access(a)) if a.thread == h.thread => Some((a.kind, a.vaddr)),
            _ => None,
        };
        let near = ours(records.get(i + PREFETCH_AHEAD / 2));
        if let Some((_, va)) = near {
            if h.sets && self.strided_skip(va.0) {
                return;
            }
        }
        if let Some((_, va)) = ours(records.get(i + PREFETCH_AHEAD)).filter(|_| h.entries) {
            self.prefetch_entry_of(h.space, va);
        }
        if let Some((kind, va)) = near.filter(|_| h.sets) {
            self.prefetch_sets_of(h.space, h.core, kind, va);
        }
    }

    /// Records `strided_skip` passes over before it looks at a strided stream again.
    pub(super) const HINT_SKIPS: u32 = 64;

    /// Whether the record of virtual address `va`, `prefetch_ahead`'s near record, is to be
    /// hinted nothing. A stream whose virtual and physical addresses both moved by constant
    /// steps last time (`prefetch_cache_sets` sets `hint_skips`) is hinted nothing while its
    /// virtual addresses keep their step, for up to HINT_SKIPS records; then it is looked at
    /// again, in case its physical addresses stopped following (frames are not allocated in
    /// virtual order in general). The cache sets of such a stream are regular too, few or in
    /// a pattern the host's own prefetchers follow, and hints only cost instructions
    /// (measured: a strided stream, zen3 full model, 8% faster skipping the cache-set hints,
    /// and 5% more skipping the page-table entries' as well, 12.5 → 13.2 M refs/s
    /// (interleaved medians of 5, 2026-11-25);
    /// random and pointer-chase streams, whose hints make them 40-70% faster, pay ~20
    /// instructions per reference for the two `strides_on`).
    #[inline(always)]
    pub(super) fn strided_skip(&mut self, va: u64) -> bool {
        if self.strides_on(0, va) && self.hint_skips > 0 {
            self.hint_skips -= 1;
            return true;
        }
        self.hint_skips = 0;
        false
    }

    /// Whether the addresses of kind `k` (`hint_strides`: 0 virtual, 1 physical) move by a
    /// constant step: the 64-byte line of `addr` is as far from the last one as that was from
    /// the one before.
    #[inline(always)]
    pub(super) fn strides_on(&mut self, k: usize, addr: u64) -> bool {
        let line = addr >> 6;
        let (last, step) = &mut self.hint_strides[k];
        let d = line.wrapping_sub(*last);
        let same = d == *step;
        (*last, *step) = (line, d);
        same
    }

    /// `Cache::prefetch` of physical address `pa` (virtual address `va` in a virtually indexed
    /// cache) in each of `which`. Inlined: as a closure it was a call with its own prologue
    /// per use (measured: 16 instructions per reference of a random stream).
    #[inline(always)]
    pub(super) fn hint_sets(caches: &[Cache], which: &[usize], pa: u64, va: u64) {
        for &c in which {
            let c = &caches[c];
            c.prefetch(if c.is_virtual() { va } else { pa });
        }
    }
}
