//! The per-access path: a reference's TLB lookups, its walk (in `walk.rs`), its data access
//! through the caches, and the cycles charged. `access` inlines the common case and hands the
//! rest to `access_general`; `reference_first_hit` (by the first TLB level's memo, then by its
//! hint table) settles first-level hits before `reference_full`, the general lookup-walk-fill
//! path (ARCHITECTURE.md, "How the hot path stays fast").

use super::*;

/// A translated reference, as the cache path needs it: its kind, its virtual address, and the
/// frame and page size its translation gave.
#[derive(Clone, Copy)]
pub(crate) struct Translated {
    pub(crate) kind: AccessKind,
    pub(crate) va: VirtAddr,
    pub(crate) pfn: Pfn,
    pub(crate) size: PageSize,
}

impl Translated {
    #[inline(always)]
    pub(crate) fn new(kind: AccessKind, va: VirtAddr, pfn: Pfn, size: PageSize) -> Self {
        Translated {
            kind,
            va,
            pfn,
            size,
        }
    }
}

/// Cache levels per path a `CacheTally` counts (a core with a longer path counts load by load).
pub(crate) const TALLIED_LEVELS: usize = 4;

/// A fast lane's counts of the loads through one cache path: `served[k]`, by its level k
/// (`served[levels]`: by memory); `filled[k]`, misses at level k that filled a free way.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PathTally {
    pub(super) served: [u64; TALLIED_LEVELS + 1],
    pub(super) filled: [u64; TALLIED_LEVELS],
}

/// What `load` counts per load and per level (accesses, hits, misses, evictions, the source),
/// counted by a fast lane per load only, by the level that served it, and added to the
/// statistics when its run ends (`System::settle_cache_tally`). Measured: the statistics
/// updates of `load` were ~150 of ~1,850 instructions per reference of the zen3 full model
/// on a random stream.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CacheTally {
    pub(super) data: PathTally,
    pub(super) instr: PathTally,
    pub(super) walk: PathTally,
}

/// How `System::reference_first_hit` finds a first-level hit: the level's last-hit memo, or
/// its hint table.
pub(super) const BY_MEMO: u8 = 0;
pub(super) const BY_HINT: u8 = 1;

impl System {
    /// Loads `pa` through a cache path; returns (cycles, source index).
    #[inline(always)]
    pub(super) fn load(
        caches: &mut [Cache],
        path: &[CacheRef],
        stats: &mut UnitStats,
        addr: u64,
        write: bool,
        mem_source: usize,
        mem_latency: u64,
    ) -> (u64, usize) {
        for r in path {
            let outcome = caches[r.cache].access_counted(addr, write);
            if Self::count_level(&mut stats.cache[r.stat], outcome) {
                return (caches[r.cache].config.latency, r.stat);
            }
        }
        (mem_latency, mem_source)
    }

    /// Counts one level's access that did `outcome` in its statistics; whether it hit.
    #[inline(always)]
    pub(super) fn count_level(s: &mut crate::stats::LevelStats, outcome: CacheOutcome) -> bool {
        s.accesses += 1;
        if outcome == CacheOutcome::Hit {
            s.hits += 1;
            return true;
        }
        s.misses += 1;
        s.evictions += (outcome == CacheOutcome::Evicted) as u64;
        false
    }

    /// `load`, or on a machine whose DRAM channels take writebacks `load_writing_back`. Off
    /// the per-access path: the general path's data and walk loads test the machine once
    /// (`cold_data`, `load_walk_path`), not per load.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn load_timed(
        caches: &mut [Cache],
        path: &[CacheRef],
        stats: &mut UnitStats,
        addr: u64,
        write: bool,
        mem_source: usize,
        mem_latency: u64,
        dram: &mut Option<dram::DramState>,
    ) -> (u64, usize) {
        match dram {
            Some(d) if d.writebacks || d.rows.is_some() => Self::load_writing_back(
                caches,
                path,
                stats,
                addr,
                write,
                mem_source,
                mem_latency,
                d,
            ),
            _ => Self::load(caches, path, stats, addr, write, mem_source, mem_latency),
        }
    }

    /// `load`, counting into a fast lane's tally of the path (`PathTally`) instead of the
    /// statistics; returns the cycles. The path has at most `TALLIED_LEVELS` levels.
    #[inline(always)]
    pub(super) fn load_tallied(
        caches: &mut [Cache],
        path: &[CacheRef],
        t: &mut PathTally,
        addr: u64,
        write: bool,
        mem_latency: u64,
    ) -> u64 {
        for (k, r) in path.iter().enumerate() {
            let c = &mut caches[r.cache];
            match c.access_counted(addr, write) {
                CacheOutcome::Hit => {
                    t.served[k] += 1;
                    return c.config.latency;
                }
                CacheOutcome::Filled => t.filled[k] += 1,
                CacheOutcome::Evicted => {}
            }
        }
        t.served[path.len()] += 1;
        mem_latency
    }

    /// Whether every cache path of core `core_i` is short enough for a `CacheTally`.
    pub(crate) fn paths_tallied(&self, core_i: usize) -> bool {
        let core = &self.cores[core_i];
        [&core.icache, &core.dcache, &core.wcache]
            .iter()
            .all(|p| p.len() <= TALLIED_LEVELS)
    }

    /// Adds a fast lane's `CacheTally` of hardware thread `cpu` (on core `core_i`) to its
    /// statistics: what `load` would have counted, load by load. A load served by level k of
    /// its path reached levels 0..=k, hit k and missed the ones before; a miss that did not
    /// fill a free way evicted.
    pub(crate) fn settle_cache_tally(&mut self, cpu: usize, core_i: usize, tally: &CacheTally) {
        let core = &self.cores[core_i];
        let cs = &mut self.cpu_stats[cpu];
        let paths = [
            (&tally.data, &core.dcache, false),
            (&tally.instr, &core.icache, false),
            (&tally.walk, &core.wcache, true),
        ];
        for (t, path, walk) in paths {
            let mut reached: u64 = t.served[..=path.len()].iter().sum();
            if reached == 0 {
                continue;
            }
            let by_source = if walk {
                &mut cs.walk_refs_by_source
            } else {
                &mut cs.data_by_source
            };
            by_source[self.mem_source] += t.served[path.len()];
            for (k, r) in path.iter().enumerate() {
                let hits = t.served[k];
                let misses = reached - hits;
                let s = &mut cs.cache[r.stat];
                s.accesses += reached;
                s.hits += hits;
                s.misses += misses;
                s.evictions += misses - t.filled[k];
                by_source[r.stat] += hits;
                reached = misses;
            }
        }
    }

    /// Simulates one access; returns the cycles it cost.
    #[inline(always)]
    pub fn access(&mut self, a: Access) -> Result<u64, SimError> {
        self.access_inline::<false>(a)
    }

    /// `access`, its common case inline: a known thread, already running on its hardware
    /// thread, an access within one page, through the first level's memo and then, with
    /// `HINT_INLINE`, its hint table inline as well (else `reference_past_memo`, a call).
    #[inline(always)]
    pub(super) fn access_inline<const HINT_INLINE: bool>(
        &mut self,
        a: Access,
    ) -> Result<u64, SimError> {
        if let Some(Some(st)) = self.threads.get(a.thread.0 as usize) {
            let st = *st;
            let within_page = a.size <= 1 || (a.vaddr.0 & 0xfff) + a.size as u64 <= 4096;
            if within_page && self.current[st.cpu] == Some(a.thread) {
                let req = self.requester(st);
                if let Some(cycles) = self.reference_first_hit::<BY_MEMO>(st, req, a.kind, a.vaddr)
                {
                    return Ok(cycles);
                }
                if !HINT_INLINE {
                    return self.reference_past_memo(st, req, a.kind, a.vaddr);
                }
                if let Some(cycles) = self.reference_first_hit::<BY_HINT>(st, req, a.kind, a.vaddr)
                {
                    return Ok(cycles);
                }
                return self.reference_full(st, req, a.kind, a.vaddr);
            }
        }
        self.access_general(a)
    }

    /// `access` in general: unknown threads, trace-driven context switches, page crossings.
    #[inline(never)]
    pub(super) fn access_general(&mut self, a: Access) -> Result<u64, SimError> {
        let mut st = match self.threads.get(a.thread.0 as usize) {
            Some(Some(s)) => *s,
            _ => self.thread_state(a.thread)?,
        };
        if self.current[st.cpu] != Some(a.thread) {
            // A core runs another thread's access: that is a context switch (trace-driven
            // scheduling). The switch may re-assign ASIDs, so re-read the state after it.
            self.context_switch(st.cpu, Some(a.thread))?;
            st = self.thread_state(a.thread)?;
        }
        // An access crossing a 4 KiB boundary is two references (Lackey reports such accesses as
        // one line; the hardware translates both pages).
        let off = a.vaddr.0 & 0xfff;
        if a.size > 1 && off + a.size as u64 > 4096 {
            let first = 4096 - off;
            let c1 = self.reference(st, a.kind, a.vaddr)?;
            let c2 = self.reference(st, a.kind, VirtAddr(a.vaddr.0 + first))?;
            return Ok(c1 + c2);
        }
        self.reference(st, a.kind, a.vaddr)
    }

    /// One reference: translate, then access the data. The common case (the page of the
    /// previous reference through this path, so the first TLB level's memo hits) takes a short
    /// path that searches, fills and walks nothing; `reference_full` is the general one.
    #[inline(always)]
    pub(super) fn reference(
        &mut self,
        st: ThreadState,
        kind: AccessKind,
        va: VirtAddr,
    ) -> Result<u64, SimError> {
        let req = self.requester(st);
        match self.reference_first_hit::<BY_MEMO>(st, req, kind, va) {
            Some(cycles) => Ok(cycles),
            None => self.reference_past_memo(st, req, kind, va),
        }
    }

    /// `reference` after a memo miss: a hit in the first TLB level through its hint table takes
    /// `reference_first_hit::<BY_HINT>`; anything else `reference_full`.
    #[inline(never)]
    pub(super) fn reference_past_memo(
        &mut self,
        st: ThreadState,
        req: Requester,
        kind: AccessKind,
        va: VirtAddr,
    ) -> Result<u64, SimError> {
        match self.reference_first_hit::<BY_HINT>(st, req, kind, va) {
            Some(cycles) => Ok(cycles),
            None => self.reference_full(st, req, kind, va),
        }
    }

    /// `reference` when the first TLB level hits, found through its last-hit memo (`BY_MEMO`,
    /// `Tlb::memo_hit`) or through its hint table (`BY_HINT`, `Tlb::lookup_hinted`): the same
    /// effects as `reference_full` for a first-level hit (no fill, no walk), without its
    /// general loop. None, having changed nothing, otherwise. The va-limit check is not
    /// needed: only translations that passed it are ever filled (the memo's too).
    #[inline(always)]
    pub(super) fn reference_first_hit<const BY: u8>(
        &mut self,
        st: ThreadState,
        req: Requester,
        kind: AccessKind,
        va: VirtAddr,
    ) -> Option<u64> {
        let cpu = &self.cpus[st.cpu];
        let core_i = cpu.core;
        let is_instr = kind.is_instr();
        let (t, stat) = cpu.first_tlb[is_instr as usize]?;
        let tlb = &mut self.tlbs[t];
        let hit = if BY == BY_MEMO {
            tlb.memo_hit(va, req)?
        } else {
            tlb.lookup_hinted(va, req)?
        };
        let tlb_latency = tlb.config.latency;
        Some(self.settle_first_level_hit(st, core_i, kind, va, stat, tlb_latency, hit))
    }

    #[inline]
    pub(super) fn requester(&self, st: ThreadState) -> Requester {
        let space = &self.spaces[st.space];
        Requester {
            asid: space.asid,
            vmid: space.vmid,
            hw_thread: self.cpus[st.cpu].hw_thread,
        }
    }

    /// The rest of a reference that hit the first TLB level (stats index `stat`): counters, the
    /// data access, cycles. Returns the cycles.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn settle_first_level_hit(
        &mut self,
        st: ThreadState,
        core_i: usize,
        kind: AccessKind,
        va: VirtAddr,
        stat: usize,
        tlb_latency: u64,
        hit: TlbHit,
    ) -> u64 {
        let is_instr = kind.is_instr();
        let cs = &mut self.cpu_stats[st.cpu];
        cs.references += 1;
        cs.instr_references += is_instr as u64;
        let ls = &mut cs.tlb[stat];
        ls.accesses += 1;
        ls.hits += 1;
        let mut cycles = tlb_latency;
        if self.options.data_accesses {
            let lat = self.data_access_general(
                st.cpu,
                core_i,
                Translated::new(kind, va, hit.pfn, hit.size),
            );
            cycles = if self.config.timing.model == TimingModel::Overlap {
                tlb_latency.max(lat)
            } else {
                tlb_latency + lat
            };
        }
        self.finish_reference(st.cpu, cycles);
        cycles
    }

    /// Accesses the data of a translated reference through the core's cache path; returns its
    /// latency. Counts into the statistics, or into `tally` if given (a fast lane's,
    /// `settle_cache_tally`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn data_access(
        &mut self,
        cpu: usize,
        core_i: usize,
        r: Translated,
        tally: Option<&mut CacheTally>,
    ) -> u64 {
        let kind = r.kind;
        let path = self.cores[core_i].cache_path(kind);
        let addr = Self::cache_address(&self.caches, path, r);
        if let Some(t) = tally {
            let t = if kind.is_instr() {
                &mut t.instr
            } else {
                &mut t.data
            };
            let write = kind == AccessKind::Store;
            return Self::load_tallied(&mut self.caches, path, t, addr, write, self.mem_latency);
        }
        let write = kind == AccessKind::Store;
        let (memory, latency) = (self.mem_source, self.mem_latency);
        let stats = &mut self.cpu_stats[cpu];
        let (lat, src) = Self::load(&mut self.caches, path, stats, addr, write, memory, latency);
        self.cpu_stats[cpu].data_by_source[src] += 1;
        lat
    }

    /// A load (a store if `kind` is one) of `addr` by hardware thread `cpu` through core
    /// `core_i`'s cache path for `kind`, counted in the caches' statistics: (latency, the
    /// index of the source that served it).
    #[inline(always)]
    pub(super) fn load_on_core(
        &mut self,
        cpu: usize,
        core_i: usize,
        kind: AccessKind,
        addr: u64,
    ) -> (u64, usize) {
        let path = self.cores[core_i].cache_path(kind);
        let write = kind == AccessKind::Store;
        let (memory, latency) = (self.mem_source, self.mem_latency);
        let stats = &mut self.cpu_stats[cpu];
        let dram = &mut self.dram;
        let out = Self::load_timed(
            &mut self.caches,
            path,
            stats,
            addr,
            write,
            memory,
            latency,
            dram,
        );
        if self.prefetching {
            self.prefetch_after(core_i, false, kind, addr, out.1);
        }
        out
    }

    /// After a load of `addr` through core `core_i`'s walk path (`walk`) or its path for
    /// `kind`, served by the source `src`: the prefetcher of the path's first level, if it has
    /// one, sees the access (a miss when `src` is not that level), and the lines it asks for
    /// are filled down the path to the first level holding each, free and uncounted
    /// (`cache::prefetch`: "linefills in the background").
    #[cold]
    #[inline(never)]
    pub(super) fn prefetch_after(
        &mut self,
        core_i: usize,
        walk: bool,
        kind: AccessKind,
        addr: u64,
        src: usize,
    ) {
        let core = &self.cores[core_i];
        let path = if walk {
            &core.wcache[..]
        } else {
            core.cache_path(kind)
        };
        let Some(first) = path.first() else {
            return;
        };
        let Some(cfg) = self.caches[first.cache].config.prefetch else {
            return;
        };
        let shift = self.caches[first.cache].config.line.trailing_zeros();
        let mut lines = [0u64; 8];
        let n = self.prefetchers[first.cache].observe(
            &cfg,
            addr >> shift,
            src != first.stat,
            4096 >> shift,
            &mut lines,
        );
        for &line in &lines[..n] {
            for r in path {
                if self.caches[r.cache].access(line << shift, false) {
                    break;
                }
            }
        }
    }

    /// The address `path`'s caches see for `va` in frame `pfn` of a `size` page: virtually
    /// indexed caches see the virtual address, the others the physical one. The path is uniform
    /// in practice (all virtual or all physical), so the first level decides.
    #[inline(always)]
    fn cache_address(caches: &[Cache], path: &[CacheRef], r: Translated) -> u64 {
        match path.first() {
            Some(c) if caches[c.cache].is_virtual() => r.va.0,
            _ => (r.pfn.0 << 12) + (r.va.0 & (r.size.bytes() - 1)),
        }
    }

    /// `data_access` of the general path (no tally): on a machine with a write buffer, through
    /// it. No lane runs on such a machine, so the lanes' calls of `data_access` never look.
    /// On a machine whose DRAM channels take writebacks, through `load_writing_back`. (One
    /// flag for both, `cold_data`, so that the other machines test one.)
    #[inline(always)]
    fn data_access_general(&mut self, cpu: usize, core_i: usize, r: Translated) -> u64 {
        if self.cold_data {
            return self.data_access_cold(cpu, core_i, r);
        }
        self.data_access(cpu, core_i, r, None)
    }

    /// `data_access_general` on a machine with a write buffer or DRAM writebacks.
    #[cold]
    #[inline(never)]
    fn data_access_cold(&mut self, cpu: usize, core_i: usize, r: Translated) -> u64 {
        let path = self.cores[core_i].cache_path(r.kind);
        let addr = Self::cache_address(&self.caches, path, r);
        if !self.write_buffers.is_empty() {
            return self.data_access_buffered(cpu, core_i, r.kind, addr);
        }
        let (lat, src) = self.load_on_core(cpu, core_i, r.kind, addr);
        self.cpu_stats[cpu].data_by_source[src] += 1;
        lat
    }

    /// `data_access` on a machine with a write buffer (`WriteBufferConfig`: its rules and
    /// sources). Only the general path comes here (no lane runs on such a machine), so the
    /// hardware thread's clock is the reference's start.
    #[cold]
    #[inline(never)]
    fn data_access_buffered(
        &mut self,
        cpu: usize,
        core_i: usize,
        kind: AccessKind,
        addr: u64,
    ) -> u64 {
        let Some(wb) = self.config.timing.write_buffer else {
            unreachable!("write_buffers is filled only for a machine with a write buffer")
        };
        let now = self.cpus[cpu].clock;
        let core = &self.cores[core_i];
        let path = if kind.is_instr() {
            &core.icache
        } else {
            &core.dcache
        };
        let state = &mut self.write_buffers[core_i];
        while state.drained_at.front().is_some_and(|&t| t <= now) {
            state.drained_at.pop_front();
        }
        if kind == AccessKind::Store {
            let (first_cache, first_stat) = (path[0].cache, path[0].stat);
            let c = &mut self.caches[first_cache];
            let s = &mut self.cpu_stats[cpu];
            s.cache[first_stat].accesses += 1;
            let latency = c.config.latency;
            if c.access_if_present(addr, true) {
                s.cache[first_stat].hits += 1;
                s.data_by_source[first_stat] += 1;
                return latency;
            }
            // Read-allocate: the line is not filled; the store waits only for room.
            s.cache[first_stat].misses += 1;
            s.data_by_source[self.mem_source] += 1;
            let mut stall = 0;
            if state.drained_at.len() >= wb.entries as usize {
                let oldest = state.drained_at.pop_front().unwrap_or(now);
                stall = oldest.saturating_sub(now);
            }
            let done = state.bus_free.max(now + stall) + wb.drain_cycles;
            state.bus_free = done;
            state.drained_at.push_back(done);
            return latency + stall;
        }
        // Not a store (that returned above): a load or a fetch, through `path`.
        let (lat, src) = self.load_on_core(cpu, core_i, kind, addr);
        self.cpu_stats[cpu].data_by_source[src] += 1;
        if src != self.mem_source {
            return lat;
        }
        // A line from memory: after the buffered writes, on the one bus.
        let state = &mut self.write_buffers[core_i];
        let start = state.bus_free.max(now);
        state.bus_free = start + lat;
        state.drained_at.clear();
        start - now + lat
    }

    #[inline(always)]
    pub(super) fn finish_reference(&mut self, cpu: usize, cycles: u64) {
        self.cpu_stats[cpu].cycles += cycles;
        self.cpus[cpu].clock += cycles;
        self.references += 1;
    }

    /// The general `reference`: look up every TLB level of the path, walk on a miss in all of
    /// them, fill the levels above the one that hit, access the data, charge the cycles.
    #[inline(never)]
    pub(super) fn reference_full(
        &mut self,
        st: ThreadState,
        req: Requester,
        kind: AccessKind,
        va: VirtAddr,
    ) -> Result<u64, SimError> {
        let fmt_limit = self.va_limit;
        if va.0 >= fmt_limit {
            // ARM domains on (a technique's, `domains.rs`) make every reference come here.
            if self.domains.is_some() {
                return self.reference_domains(st, req, kind, va);
            }
            return Err(SimError(format!(
                "virtual address {va} is outside the {}-bit address space of the {} page-table format",
                fmt_limit.trailing_zeros(),
                self.config.page_table.format.name()
            )));
        }
        let core_i = self.cpus[st.cpu].core;
        let hw = req.hw_thread;
        let is_instr = kind.is_instr();
        let ntlb = if is_instr {
            self.cores[core_i].itlb.len()
        } else {
            self.cores[core_i].dtlb.len()
        };

        // Under `timing.mlp` or `timing.dram`, what memory served before this reference
        // (`mlp.rs`, `dram.rs`).
        let served = if self.timed_memory {
            self.timed_memory_before(st.cpu, core_i, kind)
        } else {
            0
        };
        let mut cycles = 0u64;
        // The cycles to the end of the walk (its refill included), if one ran.
        let mut walk_end = 0u64;
        let mut tlb_cycles_first = 0u64;
        let mut found: Option<(usize, TlbHit)> = None;
        {
            let core = &self.cores[core_i];
            let path = if is_instr { &core.itlb } else { &core.dtlb };
            let cs = &mut self.cpu_stats[st.cpu];
            cs.references += 1;
            cs.instr_references += is_instr as u64;
            for (i, &(t, stat)) in path.iter().enumerate() {
                let tlb = &mut self.tlbs[t];
                let lat = tlb.config.latency;
                cycles += lat;
                if i == 0 {
                    tlb_cycles_first = lat;
                } else if !is_instr {
                    // seed 004 §V: a data reference that missed level i-1 stalls for level i's
                    // lookup (the micro TLB's miss stall, when the main TLB answers).
                    cs.data_stall_cycles[path[i - 1].1] += lat;
                }
                cs.tlb[stat].accesses += 1;
                if let Some(h) = tlb.lookup(va, req) {
                    cs.tlb[stat].hits += 1;
                    found = Some((i, h));
                    break;
                }
                cs.tlb[stat].misses += 1;
            }
        }

        let (pfn, size, domain, filled_below) = match found {
            Some((i, h)) => (h.pfn, h.size, h.domain, i),
            None => {
                let (leaf, wc) = if self.options.walks {
                    self.walk(core_i, st, va)?
                } else {
                    self.translate_without_walk(st, va)
                };
                cycles += wc;
                if !is_instr {
                    // ... and one that missed the path's last level stalls for the walk.
                    if let Some(&(_, last)) = self.cores[core_i].dtlb.last() {
                        self.cpu_stats[st.cpu].data_stall_cycles[last] += wc;
                    }
                }
                // Then the levels above the last are refilled from it (`refill_latency`): a
                // stall of the level above, not of the walk (the Cortex-A9's event 0x85).
                let (refill, above) = self.cores[core_i].walk_refill[is_instr as usize];
                if refill != 0 {
                    cycles += refill;
                    if !is_instr {
                        self.cpu_stats[st.cpu].data_stall_cycles[above] += refill;
                    }
                }
                walk_end = cycles;
                (leaf.pfn, leaf.size, leaf.domain, ntlb)
            }
        };
        // Fill the levels above the one that hit (all of them after a walk).
        if filled_below > 0 {
            let vpn = Vpn(va.0 >> size.shift());
            let mut e = TlbEntry::new(vpn, size, pfn, req.asid);
            e.vmid = req.vmid;
            e.domain = domain;
            e.hw_thread = hw;
            'fill: {
                // A global translation stays global in every level it is copied to. Only a
                // machine with a global mapping (`any_global`) has one to copy: the others skip
                // the look. A run that logs its misses (`log_misses`) sets `any_global` too, so
                // that its fills turn off here and a run that does not pays nothing for it.
                if self.any_global {
                    let core = &self.cores[core_i];
                    let path = if is_instr { &core.itlb } else { &core.dtlb };
                    e.global = match found {
                        Some((i, h)) => self.tlbs[path[i].0].is_global(h.slot),
                        None => self.translation_is_global(st.space, va),
                    };
                    if self.miss_log.is_some() {
                        self.fill_logging(st, core_i, is_instr, filled_below, e);
                        break 'fill;
                    }
                }
                // Every level filled here has just missed this page for this requester.
                let core = &self.cores[core_i];
                let path = if is_instr { &core.itlb } else { &core.dtlb };
                for &(t, stat) in &path[..filled_below] {
                    if self.tlbs[t].fill_after_miss(e) {
                        self.cpu_stats[st.cpu].tlb[stat].evictions += 1;
                    }
                }
            }
        }
        if self.track_use {
            self.count_uses(core_i, is_instr, va, req, found.map_or(ntlb, |f| f.0));
        }

        if self.options.data_accesses {
            let lat =
                self.data_access_general(st.cpu, core_i, Translated::new(kind, va, pfn, size));
            if self.config.timing.model == TimingModel::Overlap
                && filled_below == 0
                && found.is_some()
            {
                cycles = cycles - tlb_cycles_first + tlb_cycles_first.max(lat);
            } else {
                cycles += lat;
            }
        }
        if self.timed_memory {
            cycles = self.timed_memory_cycles(
                st,
                (cycles, served),
                found.is_none().then_some(walk_end),
                found.is_some_and(|(i, _)| i == 0),
                kind,
            );
        }
        self.finish_reference(st.cpu, cycles);
        Ok(cycles)
    }

    /// Counts a use of every entry that translated this reference (`track_use`): the level
    /// that hit (`hit_level`; the path's length after a walk) and the levels filled above it.
    /// Only a technique that asked for it runs this (seed 000 §5.2's used bit).
    #[cold]
    #[inline(never)]
    fn count_uses(
        &mut self,
        core_i: usize,
        is_instr: bool,
        va: VirtAddr,
        req: Requester,
        hit_level: usize,
    ) {
        let core = &self.cores[core_i];
        let path = if is_instr { &core.itlb } else { &core.dtlb };
        let now = self.references;
        for &(t, _) in path.iter().take(hit_level + 1) {
            let tlb = &mut self.tlbs[t];
            if let Some(slot) = tlb.slot_of(va, req) {
                if tlb.tracks_use() {
                    tlb.count_use(slot, now);
                }
            }
        }
    }
}
