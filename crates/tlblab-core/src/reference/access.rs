//! One reference through the reference model: the TLB levels in order, a walk on a miss in
//! all, the fills, the data through the caches, the cycles (in-order sum or overlap).

use super::*;

impl ReferenceModel {
    /// One reference of hardware thread `cpu` in `space`: the TLB levels of the path in order
    /// (each costs its latency), a walk after a miss in all, the fill of every level above
    /// the one that hit, the data access through the caches, the cycles (in order; under the
    /// overlap model a first-level hit costs the larger of its latency and the data access's).
    pub(super) fn reference(
        &mut self,
        cpu: usize,
        space: usize,
        kind: AccessKind,
        va: u64,
        out: &mut RefOutcome,
    ) -> Result<u64, String> {
        let top = &self.levels[0];
        if va >> (top.shift + top.bits) != 0 {
            return Err(format!("virtual address {va:#x} is outside the format's"));
        }
        let core = self.cpus[cpu].core;
        let instr = kind == AccessKind::Instr;
        let path = if instr {
            self.cores[core].itlb.clone()
        } else {
            self.cores[core].dtlb.clone()
        };
        let who = Who {
            asid: self.spaces[space].asid,
            vmid: self.vmid(),
            hw_thread: self.cpus[cpu].hw_thread,
        };
        // ARM domains (seed 002, `domains.rs`): checked before the reference runs.
        let walked_domain = self.domain_check(cpu, space, va, &path, who)?;
        // Writebacks a technique's loads left unplaced go first, from this reference's start.
        if self
            .dram
            .as_ref()
            .is_some_and(|d| d.reads != 0 || !d.pending.is_empty())
        {
            self.settle_writebacks(cpu, 0);
        }
        let memory = self.cache_names.len();
        let served = |cs: &RefCounters| cs.data_by_source[memory] + cs.walk_refs_by_source[memory];
        let served_before = served(&self.counters[cpu]);
        let cs = &mut self.counters[cpu];
        cs.references += 1;
        cs.instr_references += instr as u64;
        let mut cycles = 0;
        let mut walk_end = 0;
        let mut found = None;
        for (i, &(t, stat)) in path.iter().enumerate() {
            cycles += self.tlbs[t].latency;
            if i > 0 && !instr {
                // seed 004 §V: a data reference that missed the level before stalls for this
                // one's lookup (the Cortex-A9's micro-TLB miss stall).
                cs.data_stall_cycles[path[i - 1].1] += self.tlbs[t].latency;
            }
            cs.tlb[stat][0] += 1;
            if let Some(e) = self.tlbs[t].lookup(va, who) {
                cs.tlb[stat][1] += 1;
                found = Some((i, e.pfn, e.size, e.global));
                break;
            }
            cs.tlb[stat][2] += 1;
        }
        let (pfn, size, global, filled_below) = match found {
            Some((i, pfn, size, global)) => (pfn, size, global, i),
            None => {
                let (pfn, size, c) = self.translate(cpu, space, va, out)?;
                let global = self.walked_global(space, va);
                cycles += c;
                if let (false, Some(&(_, last))) = (instr, path.last()) {
                    // ... and one that missed the last level stalls for the walk (the main
                    // TLB's miss stall).
                    self.counters[cpu].data_stall_cycles[last] += c;
                }
                // The levels above the last are refilled from it after the walk: more cycles,
                // a data stall of the level above (the Cortex-A9's micro-TLB event 0x85).
                if path.len() > 1 {
                    let refill = self.tlbs[path[path.len() - 1].0].refill_latency;
                    cycles += refill;
                    if !instr {
                        self.counters[cpu].data_stall_cycles[path[path.len() - 2].1] += refill;
                    }
                }
                walk_end = cycles;
                (pfn, size, global, path.len())
            }
        };
        out.tlb_hit = found.map(|f| f.0);
        for &(t, stat) in &path[..filled_below] {
            let mut e = Entry::filled(va >> size.shift(), size, pfn, who);
            e.global = global;
            if self.tlbs[t].insert(e) {
                self.counters[cpu].tlb[stat][3] += 1;
            }
        }
        self.tag_fills(&path, out.tlb_hit, filled_below, va, who, walked_domain);
        if self.track_uses {
            // Seed 000 §5.2's used bit (a count here): every entry that translated this
            // reference, the level that hit and those filled above it (all after a walk).
            for &(t, _) in path.iter().take(filled_below + 1) {
                if let Some(e) = self.tlbs[t].held_mut(va, who) {
                    e.uses = e.uses.saturating_add(1);
                    e.last_use = self.references;
                }
            }
        }
        // A first-level hit (`MlpConfig::steady_state`): the first TLB and, where the data is
        // simulated, the first cache of the path.
        let mut first_level = found.is_some_and(|f| f.0 == 0);
        if self.opts.data_accesses {
            let c = &self.cores[core];
            let cpath = if instr {
                c.icache.clone()
            } else {
                c.dcache.clone()
            };
            let pa = (pfn << 12) + (va & (size.bytes() - 1));
            // A virtually indexed first level: the path is looked up with the virtual address.
            let addr = match cpath.first() {
                Some(&(k, _)) if self.caches[k].virtual_indexed => va,
                _ => pa,
            };
            let (lat, src) = if self.config.timing.write_buffer.is_some() {
                self.buffered_load(cpu, core, &cpath, addr, kind == AccessKind::Store)
            } else {
                self.load(cpu, &cpath, addr, kind == AccessKind::Store)
            };
            self.counters[cpu].data_by_source[src] += 1;
            first_level &= cpath.first().is_some_and(|&(_, stat)| stat == src);
            let first = path.first().map_or(0, |&(t, _)| self.tlbs[t].latency);
            cycles = if self.config.timing.model == TimingModel::Overlap
                && found.map(|f| f.0) == Some(0)
            {
                cycles - first + first.max(lat)
            } else {
                cycles + lat
            };
        }
        // Its lines from memory, which queue for the DRAM channels (`timing.dram`).
        let lines = served(&self.counters[cpu]) - served_before;
        if self.config.timing.mlp.is_some() {
            let walk = found.is_none().then_some(walk_end);
            cycles = self.overlapped(cpu, cycles, lines, walk, first_level && lines == 0, instr);
        } else {
            let now = self.cpus[cpu].clock;
            cycles += self.dram_queue(now, lines);
        }
        self.counters[cpu].cycles += cycles;
        self.cpus[cpu].clock += cycles;
        self.references += 1;
        out.cycles += cycles;
        Ok(cycles)
    }

    /// Loads `addr` through a cache path; returns (cycles, source index). The path's first
    /// level's prefetcher, if it has one, sees the access (a miss unless that level served
    /// it) and its lines are filled down the path to the first level holding each, at no cost
    /// and uncounted (`NaivePrefetcher`).
    pub(super) fn load(
        &mut self,
        cpu: usize,
        path: &[(usize, usize)],
        addr: u64,
        write: bool,
    ) -> (u64, usize) {
        let out = self.load_through(cpu, path, addr, write);
        if let Some(&(k, stat)) = path.first() {
            if let Some(cfg) = self.caches[k].prefetch {
                let bytes = self.caches[k].line;
                let lines = self.caches[k].prefetcher.lines_after(
                    &cfg,
                    addr / bytes,
                    out.1 != stat,
                    4096 / bytes,
                );
                for l in lines {
                    for &(b, _) in path {
                        if self.caches[b].access(l * bytes, false) == CacheOutcome::Hit {
                            break;
                        }
                    }
                }
            }
        }
        out
    }

    /// `load` but the prefetcher.
    fn load_through(
        &mut self,
        cpu: usize,
        path: &[(usize, usize)],
        addr: u64,
        write: bool,
    ) -> (u64, usize) {
        let writebacks = self.dram.as_ref().is_some_and(|d| d.writebacks);
        let cs = &mut self.counters[cpu];
        let mut evicted_dirty = Vec::new();
        for (i, &(k, stat)) in path.iter().enumerate() {
            // With writebacks a store dirties the first level only.
            let w = write && (i == 0 || !writebacks);
            let (outcome, victim) = self.caches[k].access_victim(addr, w);
            cs.cache[stat][0] += 1;
            if outcome == CacheOutcome::Hit {
                cs.cache[stat][1] += 1;
                if let Some(d) = self.dram.as_mut() {
                    // Its writebacks, after the lines it read from memory before.
                    d.pending
                        .extend(evicted_dirty.iter().map(|&v| (d.reads, v)));
                }
                return (self.caches[k].latency, stat);
            }
            cs.cache[stat][2] += 1;
            cs.cache[stat][3] += (outcome == CacheOutcome::Evicted) as u64;
            // A dirty victim goes to the first level below on the path that holds it, else
            // to memory.
            if let (Some(v), true) = (victim, writebacks) {
                let held = path[i + 1..]
                    .iter()
                    .any(|&(b, _)| self.caches[b].mark_dirty(v));
                if !held {
                    evicted_dirty.push(v);
                }
            }
        }
        if let Some(d) = self.dram.as_mut() {
            // Served by memory: its address for the row activations; its evictions wait for
            // its line.
            d.reads += 1;
            d.read_addrs.push(addr);
            d.pending
                .extend(evicted_dirty.iter().map(|&v| (d.reads, v)));
        }
        (self.config.memory.latency, self.cache_names.len())
    }

    /// `load` on a machine with a write buffer (`WriteBufferConfig`'s rules), at the hardware
    /// thread's clock: a store that misses the first level takes an entry of the buffer (after
    /// waiting for the oldest to drain if all are taken), which drains on the bus after the
    /// ones before it; a read served by memory takes the bus once every buffered store has
    /// drained.
    pub(super) fn buffered_load(
        &mut self,
        cpu: usize,
        core: usize,
        path: &[(usize, usize)],
        addr: u64,
        write: bool,
    ) -> (u64, usize) {
        let wb = self.config.timing.write_buffer.expect("a write buffer");
        let now = self.cpus[cpu].clock;
        let memory = self.cache_names.len();
        let (pending, bus_free) = &mut self.write_buffers[core];
        pending.retain(|&t| t > now);
        if write {
            let (k, stat) = path[0];
            let cs = &mut self.counters[cpu];
            cs.cache[stat][0] += 1;
            let line = addr / self.caches[k].line;
            let set = (line % self.caches[k].nsets) as usize;
            if self.caches[k].sets.find(set, |&(t, _)| t == line).is_some() {
                self.caches[k].access(addr, true);
                cs.cache[stat][1] += 1;
                return (self.caches[k].latency, stat);
            }
            cs.cache[stat][2] += 1;
            let mut start = now;
            if pending.len() >= wb.entries as usize {
                start = pending.remove(0).max(now);
            }
            let done = (*bus_free).max(start) + wb.drain_cycles;
            *bus_free = done;
            pending.push(done);
            return (self.caches[k].latency + start - now, memory);
        }
        let (lat, src) = self.load(cpu, path, addr, false);
        if src != memory {
            return (lat, src);
        }
        let (pending, bus_free) = &mut self.write_buffers[core];
        let start = (*bus_free).max(now);
        *bus_free = start + lat;
        pending.clear();
        (start - now + lat, src)
    }

    /// A walk-reference load through the core's walk path; returns its cycles.
    pub(super) fn walk_load(&mut self, cpu: usize, pa: u64, out: &mut RefOutcome) -> u64 {
        let path = self.cores[self.cpus[cpu].core].wcache.clone();
        let (mut lat, src) = self.load(cpu, &path, pa, false);
        if src == self.cache_names.len() {
            // Served by memory: a page-table load's own cost (one word, when the walker says).
            lat = self
                .config
                .walker
                .memory_load_cycles(self.config.memory.latency);
        }
        self.counters[cpu].walk_refs_by_source[src] += 1;
        out.walk_sources.push(src);
        lat
    }
}
