//! The reference's walks: each page-table entry by its physical address (through the caches
//! unless uncached), nested under virtualization, demand paging on first touch.

use super::*;

impl ReferenceModel {
    /// The translation of `va` after a miss in every TLB level: (frame number, page size,
    /// cycles). A walk: the walker's latency; the page-walk caches looked up deepest level
    /// first, the first hit (its latency) deciding the level the walk starts at; the page
    /// mapped on first touch; the page-walk caches of the levels below the hit filled; every
    /// entry read loaded through the walk path (under virtualization each one, and the page's
    /// guest-physical address, translated by a host walk first; the translation is then of the
    /// smaller page). A TLB-only run: the walker's latency and the page's identity frame.
    pub(super) fn translate(
        &mut self,
        cpu: usize,
        space: usize,
        va: u64,
        out: &mut RefOutcome,
    ) -> Result<(u64, PageSize, u64), String> {
        let mut cycles = self.config.walker.latency;
        self.counters[cpu].walks += 1;
        if !self.opts.walks {
            self.counters[cpu].walk_cycles += cycles;
            let size = self.page_size_for(space, va);
            return Ok(((va >> size.shift()) << (size.shift() - 12), size, cycles));
        }
        let core = self.cpus[cpu].core;
        let id = self.spaces[space].id;
        // A hit in the cache of level L starts the walk at L + 1 (the entry it holds points at
        // that table: Intel SDM Vol. 3A §4.10.3.2), or at L itself under ChampSim's rule,
        // whose `handle_read` reads the level of the hit again (docs/champsim.md); the
        // caches of the levels read are filled below, the one that hit refreshed.
        // Under ChampSim's rule every cache is looked up and each one that hits is made most
        // recent (its `handle_read` calls `check_hit` on every PSCL, src/ptw.cc:76-79 at
        // 2ff2501), the deepest hit deciding the start; Intel's stops at the first (deepest)
        // hit.
        let again = self.config.walker.pwc_restart == PwcRestart::AtHitLevel;
        let mut start = None;
        for &p in &self.cores[core].pwcs {
            let lvl = self.pwcs[p].level;
            if start.is_some() && !again {
                break;
            }
            if self.pwcs[p].lookup(id, va >> self.levels[lvl].shift) && start.is_none() {
                self.counters[cpu].pwc_hits += 1;
                cycles += self.pwcs[p].latency;
                start = Some(if again { lvl } else { lvl + 1 });
            }
        }
        let start = start.unwrap_or(0);
        let mut written = None;
        if self.spaces[space].tables.mapping(va).is_none() {
            // The fault writes the entry of the deepest table that exists (invalid until now)
            // and every entry below it, in the tables the mapping adds.
            let tables = &self.spaces[space].tables;
            let levels = self.levels;
            written = Some(
                (0..levels.len())
                    .find(|&l| {
                        l + 1 == levels.len()
                            || !tables.tables.contains_key(&(l + 1, va >> levels[l].shift))
                    })
                    .expect("the last level ends the search"),
            );
            self.first_touch(space, va)?;
            self.counters[cpu].page_faults += 1;
            // The kernel's fault handler (`OsConfig::fault_kernel_pages`), before the walk is
            // retried: busy time of the thread, not the walk's. It enters through the vectors
            // as an abort (`OsConfig::vectors_page`), and clears an anonymous page's frame
            // through its linear-map section after its pages (`OsConfig::fault_linear_map`),
            // or a high-memory frame through the CPU's fixmap page (`OsConfig::fault_highmem`).
            let (os, bytes) = (self.opts.os, self.config.memory.bytes);
            let mut kernel = 0;
            if os.fault_kernel_pages > 0 {
                if os.vectors_page {
                    kernel += self.kernel_vectors_in(cpu, space, true);
                }
                for pa in kernel_text_sections(bytes, os.fault_text_sections) {
                    kernel += self.kernel_fetch_in(cpu, space, pa);
                }
            }
            for pa in kernel_path_pages(bytes, os.fault_kernel_page(0), os.fault_kernel_pages) {
                kernel += self.kernel_touch_in(cpu, space, pa, false);
            }
            // Only an anonymous page (of no object) is a fresh frame; its first frame.
            let anonymous = self.region_of(space, va).and_then(|r| r.3).is_none();
            let clear = os.fault_linear_map || os.fault_highmem;
            if os.fault_kernel_pages > 0 && clear && self.host.is_none() && anonymous {
                let (_, pa) = self.spaces[space].tables.mapping(va).expect("mapped");
                if os.fault_linear_map {
                    let section = crate::os::linear_section(pa);
                    kernel +=
                        self.kernel_translate_in(cpu, space, section, PageSize::Size1M, false);
                } else {
                    kernel += self.kmap_atomic_in(cpu, space);
                }
                // `clear_page`: the frame's first byte, or (`fault_clear_lines`) every line
                // of the first data cache over the 4 KiB page.
                let first = self.cores[self.cpus[cpu].core].dcache.first();
                let line = match (os.fault_clear_lines, first) {
                    (true, Some(&(c, _))) => self.caches[c].line,
                    _ => 4096,
                };
                let mut at = pa;
                while at < pa + 4096 {
                    kernel += self.kernel_store_in(cpu, at);
                    at += line;
                }
                // PREEMPT_RT's `kunmap_atomic` clears the slot's PTE (`OsConfig::kunmap_flush`).
                if os.fault_highmem && os.kunmap_flush {
                    kernel += self.fixmap_set_pte_in(cpu, space);
                }
            }
            self.counters[cpu].cycles += kernel;
            self.cpus[cpu].clock += kernel;
        }
        let (size, frame) = self.spaces[space].tables.mapping(va).expect("mapped");
        // The handler's stores of the entries the fault wrote, through the data caches (busy
        // time), before the walk is retried: where a traced handler runs and the entries are
        // host-physical (`System::fault_stores`).
        if let Some(from) = written.filter(|_| self.opts.os.fault_kernel_pages > 0) {
            if self.host.is_none() {
                let dcache = self.cores[self.cpus[cpu].core].dcache.clone();
                let mut kernel = 0;
                let leaf = leaf_level(self.levels, size);
                let path = self.spaces[space].tables.path(self.levels, 0, va, size);
                // In Linux's ARMv7 layout a new table's first-level entries are written as a
                // pair, and each PTE's Linux copy 2048 bytes below it first.
                let linux = self.spaces[space].tables.linux_armv7();
                let mut stores = Vec::new();
                for (level, &pa) in path.iter().enumerate().skip(from.min(leaf + 1)) {
                    match (linux, level) {
                        (true, 0) if level < leaf => stores.extend([pa & !7, (pa & !7) + 4]),
                        (true, 1) => stores.extend([pa - 2048, pa]),
                        _ => stores.push(pa),
                    }
                }
                for pa in stores {
                    let (lat, src) = self.load(cpu, &dcache, pa, true);
                    self.counters[cpu].data_by_source[src] += 1;
                    kernel += lat;
                }
                self.counters[cpu].cycles += kernel;
                self.cpus[cpu].clock += kernel;
            }
        }
        let leaf = leaf_level(self.levels, size);
        for &p in &self.cores[core].pwcs {
            let lvl = self.pwcs[p].level;
            if lvl >= start && lvl < leaf {
                self.pwcs[p].insert(id, va >> self.levels[lvl].shift);
            }
        }
        let refs = self.spaces[space].tables.path(self.levels, start, va, size);
        self.counters[cpu].walk_refs += refs.len() as u64;
        let (pfn, size) = if self.host.is_none() {
            for pa in refs {
                cycles += self.walk_load(cpu, pa, out);
            }
            (frame >> 12, size)
        } else {
            for gpa in refs {
                let (hpa, c, _) = self.host_translate(cpu, gpa, out)?;
                cycles += c + self.walk_load(cpu, hpa, out);
            }
            let gpa = frame + (va & (size.bytes() - 1));
            let (hpa, c, hsize) = self.host_translate(cpu, gpa, out)?;
            cycles += c;
            let size = size.min(hsize);
            ((hpa & !(size.bytes() - 1)) >> 12, size)
        };
        self.counters[cpu].walk_cycles += cycles;
        Ok((pfn, size, cycles))
    }

    /// The second dimension of a nested walk: guest-physical `gpa` through the host's page
    /// table (its own page-walk caches, keyed by no address space; a host page mapped on
    /// first touch, of the host page size), each entry loaded through the walk path. Returns
    /// (host-physical address, cycles, host page size).
    pub(super) fn host_translate(
        &mut self,
        cpu: usize,
        gpa: u64,
        out: &mut RefOutcome,
    ) -> Result<(u64, u64, PageSize), String> {
        let core = self.cpus[cpu].core;
        let host = self.host.as_mut().expect("virtualization");
        let levels = host.levels;
        let mut cycles = 0;
        let mut start = 0;
        for &p in &self.cores[core].host_pwcs {
            let lvl = self.host_pwcs[p].level;
            if self.host_pwcs[p].lookup(u32::MAX, gpa >> levels[lvl].shift) {
                cycles += self.host_pwcs[p].latency;
                start = lvl + 1;
                break;
            }
        }
        if host.tables.mapping(gpa).is_none() {
            let size = host.page_size;
            let frame = host.frames.alloc(size).ok_or("host memory is exhausted")? << 12;
            host.tables
                .map(levels, gpa, size, frame, false, &mut host.frames)
                .ok_or("host memory is exhausted")?;
        }
        let (size, frame) = host.tables.mapping(gpa).expect("mapped");
        let leaf = leaf_level(levels, size);
        for &p in &self.cores[core].host_pwcs {
            let lvl = self.host_pwcs[p].level;
            if lvl >= start && lvl < leaf {
                self.host_pwcs[p].insert(u32::MAX, gpa >> levels[lvl].shift);
            }
        }
        let refs = host.tables.path(levels, start, gpa, size);
        self.counters[cpu].walk_refs += refs.len() as u64;
        for pa in refs {
            cycles += self.walk_load(cpu, pa, out);
        }
        Ok((frame + (gpa & (size.bytes() - 1)), cycles, size))
    }

    pub(super) fn page_size_for(&self, space: usize, va: u64) -> PageSize {
        self.region_of(space, va)
            .map_or(self.config.page_table.page_size, |r| r.2)
    }

    /// Whether the translation a walk of `va` in `space` just found is global: the kernel's
    /// page, mapped so at its first touch; in a TLB-only run (no tables), its region's.
    pub(super) fn walked_global(&self, space: usize, va: u64) -> bool {
        if self.opts.walks {
            self.spaces[space].tables.is_global(va)
        } else {
            self.region_of(space, va).is_some_and(|r| r.4)
        }
    }

    /// The newest region of `space` holding `va`: (start, end, page size, shared object,
    /// global).
    pub(super) fn region_of(
        &self,
        space: usize,
        va: u64,
    ) -> Option<(u64, u64, PageSize, Option<u32>, bool)> {
        self.spaces[space]
            .regions
            .iter()
            .find(|r| va >= r.0 && va < r.1)
            .copied()
    }

    /// Demand paging: a frame of the region's page size (4 KiB when no aligned run of that
    /// size is free, as Linux's THP falls back), then the missing tables, top down. A page of
    /// a shared object takes the object's frame when a mapper touched it already.
    pub(super) fn first_touch(&mut self, space: usize, va: u64) -> Result<(), String> {
        let region = self.region_of(space, va);
        let global = region.is_some_and(|r| r.4);
        let mut size = region.map_or(self.config.page_table.page_size, |r| r.2);
        // A larger page only where its range holds no page and no table yet (Linux maps a
        // huge page only over an empty page-middle directory entry, `pmd_none`).
        if size != PageSize::Size4K && !self.spaces[space].tables.room_for(self.levels, va, size) {
            size = PageSize::Size4K;
        }
        // The object's page: counted from the mapping's start (which maps the object's
        // first byte), in pages of the size mapped.
        let object = region.and_then(|r| r.3.map(|o| (o, r.0)));
        let key = |size: PageSize| object.map(|(o, start)| (o, (va - start) >> size.shift(), size));
        let shared = |r: &ReferenceModel, size: PageSize| {
            key(size).and_then(|k| r.shared_frames.get(&k).map(|&f| f >> 12))
        };
        let frame = match shared(self, size) {
            Some(f) => f,
            None => match self.frames.alloc(size) {
                Some(f) => f,
                None if size != PageSize::Size4K => {
                    size = PageSize::Size4K;
                    match shared(self, size) {
                        Some(f) => f,
                        None => self
                            .frames
                            .alloc(size)
                            .ok_or("physical memory is exhausted")?,
                    }
                }
                None => return Err("physical memory is exhausted".into()),
            },
        };
        if let Some(k) = key(size) {
            self.shared_frames.entry(k).or_insert(frame << 12);
        }
        let va = va & !(size.bytes() - 1);
        self.spaces[space]
            .tables
            .map(self.levels, va, size, frame << 12, global, &mut self.frames)
            .ok_or_else(|| "physical memory is exhausted".to_string())
    }
}
