//! Page walks: the page-walk caches, each page-table entry loaded by physical address through
//! the core's cache path, nested (2D) walks under virtualization, and demand paging (first touch).

use super::*;

impl System {
    /// A page walk for `va`, mapping the page on first touch. Returns the leaf and its cycles.
    pub(crate) fn walk(
        &mut self,
        core_i: usize,
        st: ThreadState,
        va: VirtAddr,
    ) -> Result<(Leaf, u64), SimError> {
        self.walk_counted(core_i, st, va, None)
    }

    /// `walk`, counting the loads of its entries into `tally` if given (a fast lane's,
    /// `settle_cache_tally`; not under virtualization, whose loads count as they go).
    pub(crate) fn walk_counted(
        &mut self,
        core_i: usize,
        st: ThreadState,
        va: VirtAddr,
        tally: Option<&mut CacheTally>,
    ) -> Result<(Leaf, u64), SimError> {
        let mut cycles = self.config.walker.latency;
        self.cpu_stats[st.cpu].walks += 1;
        let (start_level, start_node, pwc_cycles) = self.pwc_lookups(core_i, st, va);
        cycles += pwc_cycles;
        let mut leaf =
            self.spaces[st.space]
                .pt
                .walk_from(va, start_level, start_node, &mut self.path);
        if leaf.is_none() {
            // The walk stopped at the invalid entry it read last.
            let len = self.path.len;
            let stop = (start_level + len - 1, self.path.nodes[len - 1]);
            let mapped = self.first_touch(st.space, va, stop)?;
            self.cpu_stats[st.cpu].page_faults += 1;
            // The kernel's fault handler runs before the walk is retried (only on machines
            // that trace it; the lanes step aside then, `System::lanes_permitted`).
            let kernel = self.options.os.fault_kernel_pages > 0;
            if kernel {
                self.fault_kernel_path(st, va, start_level, start_node);
            }
            leaf = match mapped {
                // Mapped in the table the walk stopped at: the retried walk would read the
                // same entries (`self.path` as it is) and find the leaf just written.
                Some(l) if !kernel => {
                    debug_assert_eq!(
                        Some(l),
                        self.spaces[st.space].pt.walk_from(
                            va,
                            start_level,
                            start_node,
                            &mut WalkPath::default()
                        )
                    );
                    Some(l)
                }
                _ => {
                    self.spaces[st.space]
                        .pt
                        .walk_from(va, start_level, start_node, &mut self.path)
                }
            };
        }
        let mut leaf = leaf.expect("a page just mapped translates");
        self.fill_pwcs(core_i, st, va, start_level);

        // Load every entry the walk reads through the caches. `self.path` is read in place,
        // not copied out (nothing in between writes it: a nested walk has its own).
        if self.host.is_none() {
            cycles += self.load_walk_path(core_i, st, tally);
        } else {
            for i in 0..self.path.len {
                let gpa = self.path.refs[i];
                let (hpa, c) = self.host_translate(core_i, st, gpa)?;
                cycles += c + self.walk_ref(core_i, st, hpa.0);
            }
            self.cpu_stats[st.cpu].walk_refs += self.path.len as u64;
            // The TLB caches guest-virtual → host-physical; the page is the smaller of the two.
            let gpa = PhysAddr(leaf.pfn.base().0 + (va.0 & (leaf.size.bytes() - 1)));
            let (hpa, c, hsize) = self.host_translate_sized(core_i, st, gpa)?;
            cycles += c;
            let size = if hsize < leaf.size { hsize } else { leaf.size };
            leaf = Leaf {
                pfn: PhysAddr(hpa.0 & !(size.bytes() - 1)).pfn(),
                size,
                domain: leaf.domain,
            };
        }
        self.cpu_stats[st.cpu].walk_cycles += cycles;
        Ok((leaf, cycles))
    }

    /// A walk's page-walk-cache lookups, deepest level first: the first hit decides where the
    /// walk starts. Returns (start level, start node, the latency of the cache that hit).
    /// Intel's rule (`PwcRestart::BelowHit`): the lookups stop at the first hit. ChampSim's
    /// (`AtHitLevel`, `PwcRef::refresh_above`): the caches above the hit are looked up too,
    /// out of line, so the other presets' walks run the loop they ran before it existed
    /// (callgrind, zen3: tested once per walk instead, the rule cost technique-free walks
    /// 0.7-0.8% more instructions).
    /// The fields are borrowed once, not through `self` per lookup (which reloaded each
    /// vector's pointer and length: ~50 instructions per walk, callgrind, zen3 full model).
    #[inline(always)]
    pub(super) fn pwc_lookups(
        &mut self,
        core_i: usize,
        st: ThreadState,
        va: VirtAddr,
    ) -> (usize, u32, u64) {
        let space_id = self.spaces[st.space].id;
        let pwcs = &mut self.pwcs;
        let mut refs = self.cores[core_i].pwcs.iter();
        while let Some(r) = refs.next() {
            let pwc = &mut pwcs[r.pwc];
            if let Some(node) = pwc.lookup(space_id, va.0 >> r.shift) {
                self.cpu_stats[st.cpu].pwc_hits += 1;
                let latency = pwc.config.latency;
                if r.refresh_above {
                    Self::refresh_pwcs(pwcs, refs.as_slice(), space_id, va);
                }
                return (r.start, node, latency);
            }
        }
        (0, 0, 0)
    }

    /// ChampSim's walker (`PwcRestart::AtHitLevel`): every page-structure cache above the
    /// deepest hit is looked up too, so each one that hits is refreshed: ChampSim's
    /// `handle_read` calls `check_hit` on every PSCL (src/ptw.cc:76-77 at 2ff2501) and
    /// `lru_table::check_hit` makes a hit most recent (inc/msl/lru_table.h:128-139); the
    /// deepest hit is the one the walk starts from (the `std::accumulate` of src/ptw.cc:78-79
    /// keeps the last hit of the PSCLs sorted from pscl5 down to pscl2). Their hits are not
    /// counted: `pwc_hits` counts walks that hit.
    #[cold]
    #[inline(never)]
    fn refresh_pwcs(pwcs: &mut [Pwc], above: &[PwcRef], space_id: u32, va: VirtAddr) {
        for r in above {
            pwcs[r.pwc].lookup(space_id, va.0 >> r.shift);
        }
    }

    /// Fills the page-walk caches with the table pointers the walk in `self.path` read, which
    /// started at `start_level`. Each level filled is below the one that hit (or there was no
    /// hit): its lookup just missed. Under `PwcRestart::AtHitLevel` a cache holds the node of
    /// its own level's table (`PwcRef::start`), and the level that hit, read again, is
    /// refreshed (ChampSim's `handle_fill` fills the PSCL of every level it reads).
    #[inline(always)]
    pub(super) fn fill_pwcs(
        &mut self,
        core_i: usize,
        st: ThreadState,
        va: VirtAddr,
        start_level: usize,
    ) {
        let space_id = self.spaces[st.space].id;
        let (pwcs, path) = (&mut self.pwcs, &self.path);
        if path.len == 1 {
            // The walk read only its leaf's entry: nothing above it to cache (the common case
            // of a walk whose deepest page-walk cache hit).
            return;
        }
        let leaf_level = start_level + path.len - 1;
        for r in &self.cores[core_i].pwcs {
            if r.level >= start_level && r.level < leaf_level {
                let node = path.nodes[r.start - start_level];
                if r.start == start_level {
                    // (`AtHitLevel` only: this level hit, or none did and it is the root's.)
                    pwcs[r.pwc].insert(space_id, va.0 >> r.shift, node);
                } else {
                    pwcs[r.pwc].insert_after_miss(space_id, va.0 >> r.shift, node);
                }
            }
        }
    }

    /// Loads every entry of `self.path` (physical addresses: no virtualization) through the
    /// core's walk cache path; returns the cycles. Fields borrowed once, as in `pwc_lookups`.
    #[inline(always)]
    pub(super) fn load_walk_path(
        &mut self,
        core_i: usize,
        st: ThreadState,
        tally: Option<&mut CacheTally>,
    ) -> u64 {
        let (path, caches) = (&self.path, &mut self.caches);
        let wcache = &self.cores[core_i].wcache;
        let stats = &mut self.cpu_stats[st.cpu];
        let mut cycles = 0;
        if let Some(t) = tally {
            for &pa in &path.refs[..path.len] {
                cycles += Self::load_tallied(
                    caches,
                    wcache,
                    &mut t.walk,
                    pa.0,
                    false,
                    self.walk_mem_latency,
                );
            }
            stats.walk_refs += path.len as u64;
            return cycles;
        }
        if self.walk_cold {
            return self.load_walk_path_timed(core_i, st);
        }
        for &pa in &path.refs[..path.len] {
            let (lat, src) = Self::load(
                caches,
                wcache,
                stats,
                pa.0,
                false,
                self.mem_source,
                self.walk_mem_latency,
            );
            stats.walk_refs_by_source[src] += 1;
            cycles += lat;
        }
        stats.walk_refs += path.len as u64;
        cycles
    }

    /// `load_walk_path` without a tally on a machine with `timing.dram` (whose writebacks
    /// `load_timed` takes) or a cache prefetcher (which sees each reference through the walk
    /// path's first level, `walk_ref`; the Cortex-A7's walks read through its L1 data cache,
    /// TRM §5.2), out of the common path.
    #[cold]
    #[inline(never)]
    fn load_walk_path_timed(&mut self, core_i: usize, st: ThreadState) -> u64 {
        let mut cycles = 0;
        for i in 0..self.path.len {
            cycles += self.walk_ref(core_i, st, self.path.refs[i].0);
        }
        self.cpu_stats[st.cpu].walk_refs += self.path.len as u64;
        cycles
    }

    /// A miss in every TLB level of a TLB-only run (`RunOptions::walks` off): counted as a walk
    /// of the walker's fixed latency; the translation is the identity frame of the page, of
    /// the size the address space maps `va` with, and the address space's domain.
    #[inline]
    pub(crate) fn translate_without_walk(&mut self, st: ThreadState, va: VirtAddr) -> (Leaf, u64) {
        let cycles = self.config.walker.latency;
        let cs = &mut self.cpu_stats[st.cpu];
        cs.walks += 1;
        cs.walk_cycles += cycles;
        let space = &self.spaces[st.space];
        let (size, _) = space.mapping_for(va);
        let leaf = Leaf {
            pfn: Pfn(va.align_down(size).0 >> 12),
            size,
            domain: space.domain,
        };
        (leaf, cycles)
    }

    /// Whether the translation of `va` that a walk (or, in a TLB-only run, the region map)
    /// just gave `space` is global: false on a machine with no global mapping
    /// (`any_global`), which never looks. Off the walks' path (`PageTable::is_global`). In a
    /// nested machine the guest's leaf says (as a walk's leaf kept it before 2026-11-27).
    #[inline]
    pub(crate) fn translation_is_global(&self, space: usize, va: VirtAddr) -> bool {
        self.any_global && self.global_translation(space, va)
    }

    #[cold]
    #[inline(never)]
    fn global_translation(&self, space: usize, va: VirtAddr) -> bool {
        let space = &self.spaces[space];
        if self.options.walks {
            space.pt.is_global(va).unwrap_or(false)
        } else {
            space.region_is_global(va)
        }
    }

    #[inline]
    pub(super) fn walk_ref(&mut self, core_i: usize, st: ThreadState, pa: u64) -> u64 {
        let (lat, src) = Self::load_timed(
            &mut self.caches,
            &self.cores[core_i].wcache,
            &mut self.cpu_stats[st.cpu],
            pa,
            false,
            self.mem_source,
            self.walk_mem_latency,
            &mut self.dram,
        );
        self.cpu_stats[st.cpu].walk_refs_by_source[src] += 1;
        if self.prefetching {
            self.prefetch_after(core_i, true, AccessKind::Load, pa, src);
        }
        lat
    }

    pub(super) fn host_translate(
        &mut self,
        core_i: usize,
        st: ThreadState,
        gpa: PhysAddr,
    ) -> Result<(PhysAddr, u64), SimError> {
        let (hpa, c, _) = self.host_translate_sized(core_i, st, gpa)?;
        Ok((hpa, c))
    }

    /// The second dimension of a nested walk: guest-physical → host-physical through the host
    /// page table (with its own page-walk caches), every host entry loaded through the caches.
    pub(super) fn host_translate_sized(
        &mut self,
        core_i: usize,
        st: ThreadState,
        gpa: PhysAddr,
    ) -> Result<(PhysAddr, u64, PageSize), SimError> {
        let host = self
            .host
            .as_mut()
            .expect("called only under virtualization");
        let levels = host.pt.levels();
        let gva = VirtAddr(gpa.0);
        let mut cycles = 0;
        let (mut start_level, mut start_node) = (0usize, 0u32);
        for &p in &self.cores[core_i].host_pwcs {
            let pwc = &mut host.pwcs[p];
            let lvl = pwc.config.level;
            if let Some(node) = pwc.lookup(u32::MAX, gva.0 >> levels[lvl].shift) {
                start_level = lvl + 1;
                start_node = node;
                cycles += pwc.config.latency;
                break;
            }
        }
        let mut path = WalkPath::default();
        let mut leaf = host.pt.walk_from(gva, start_level, start_node, &mut path);
        if leaf.is_none() {
            let size = host.page_size;
            let pfn = host.frames.alloc(size).map_err(|e| oom(e, "host"))?;
            host.pt
                .map(
                    gva.align_down(size),
                    size,
                    pfn,
                    Domain(0),
                    false,
                    &mut host.frames,
                )
                .map_err(|e| oom(e, "host"))?;
            leaf = host.pt.walk_from(gva, start_level, start_node, &mut path);
        }
        let leaf = leaf.expect("a host page just mapped translates");
        let leaf_level = start_level + path.len - 1;
        for &p in &self.cores[core_i].host_pwcs {
            let lvl = host.pwcs[p].config.level;
            if lvl >= start_level && lvl < leaf_level {
                // Looked up above and missed, as in `walk`.
                host.pwcs[p].insert_after_miss(
                    u32::MAX,
                    gva.0 >> levels[lvl].shift,
                    path.nodes[lvl + 1 - start_level],
                );
            }
        }
        for i in 0..path.len {
            cycles += self.walk_ref(core_i, st, path.refs[i].0);
        }
        self.cpu_stats[st.cpu].walk_refs += path.len as u64;
        let hpa = PhysAddr(leaf.pfn.base().0 + (gpa.0 & (leaf.size.bytes() - 1)));
        Ok((hpa, cycles, leaf.size))
    }

    /// Demand paging: allocate a frame of the region's page size and map it; pages of a shared
    /// object reuse the object's frame. A huge-page allocation that fails (fragmented memory)
    /// falls back to base pages, as Linux THP does. `stop` is where the walk that faulted
    /// stopped: the level and table node of the invalid entry it read last. When that is the
    /// page's leaf level, the page is mapped there (`PageTable::map_in`) without `map`'s
    /// descent from the root, and the leaf a walk now finds is returned (None where the page
    /// was mapped by `map`, or `map_in` cannot say): the walk need not be retried. Measured
    /// (callgrind, zen3 full model, random:pages=262144,accesses=500k, 44% of its references
    /// a first touch): 1,571 → 1,514 instructions per reference for the descent, → 1,475
    /// for the retried walk.
    pub(super) fn first_touch(
        &mut self,
        space: usize,
        va: VirtAddr,
        stop: (usize, u32),
    ) -> Result<Option<Leaf>, SimError> {
        let (mut size, object) = self.spaces[space].mapping_for(va);
        // A page larger than 4 KiB only where nothing is mapped in its range yet (a region
        // made huge after some of its pages were touched keeps them; before 2026-11-25 the
        // huge page replaced their table, and a later walk of one of them found the huge
        // page: `tests/reference_machine.rs`, `a_huge_page_is_not_mapped_over_small_ones`).
        if size != PageSize::Size4K
            && object.is_none()
            && !self.spaces[space].pt.room_for(va.align_down(size), size)
        {
            size = PageSize::Size4K;
        }
        let pfn = match object {
            None => match self.frames.alloc(size) {
                Ok(p) => p,
                Err(_) if size != PageSize::Size4K => {
                    size = PageSize::Size4K;
                    self.frames.alloc(size).map_err(|e| oom(e, "physical"))?
                }
                Err(e) => return Err(oom(e, "physical")),
            },
            Some((o, start)) => {
                self.shared_frame((o, (va.0 - start) >> size.shift(), size.index()), size)?
            }
        };
        let global = self.any_global && self.spaces[space].region_is_global(va);
        let s = &mut self.spaces[space];
        let domain = s.domain;
        let (stop_level, stop_node) = stop;
        if s.pt.leaf_level(size) == Some(stop_level) {
            let va = va.align_down(size);
            return Ok(s
                .pt
                .map_in(stop_node, stop_level, va, size, pfn, domain, global));
        }
        s.pt.map(
            va.align_down(size),
            size,
            pfn,
            domain,
            global,
            &mut self.frames,
        )
        .map(|()| None)
        .map_err(|e| oom(e, "physical"))
    }

    /// The frame of a shared object's page (`key`: the object, the page's index in it, its
    /// size's index), the one its first toucher got, or a new one. Out of `first_touch`'s
    /// line: most pages are anonymous, and with the object's hash-map lookup inline the first
    /// touch of every page cost about 5 instructions more (callgrind, zen3 full model,
    /// `random:pages=65536,accesses=200k`: 266,211,177 → 266,523,805 when unrelated cold code
    /// of the fault path grew, 2026-11-29).
    #[cold]
    #[inline(never)]
    fn shared_frame(&mut self, key: (u32, u64, usize), size: PageSize) -> Result<Pfn, SimError> {
        if let Some(&p) = self.shared_frames.get(&key) {
            return Ok(p);
        }
        let p = self.frames.alloc(size).map_err(|e| oom(e, "physical"))?;
        self.shared_frames.insert(key, p);
        Ok(p)
    }
}
