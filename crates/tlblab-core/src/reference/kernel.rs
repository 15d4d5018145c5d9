//! The reference's kernel accesses: the kernel's own loads, stores and text fetches through
//! the global kernel mappings (switch-in pages, fault paths, kmap_atomic, the vectors page).

use super::*;

impl ReferenceModel {
    /// A kernel load (or store) of physical `pa` through the kernel's linear map
    /// (`os::kernel_linear`) by hardware thread `cpu` for `thread`: the core's data TLB levels
    /// in order, each its latency, until one holds the page; after a miss in all, the
    /// descriptor loaded through the data caches; the levels above the hit (all after a miss)
    /// filled with a global 4 KiB entry tagged with `thread`'s ASID, VMID and hardware thread;
    /// then `pa` through the data caches. Returns the cycles.
    pub(crate) fn kernel_touch(
        &mut self,
        cpu: usize,
        thread: u32,
        pa: u64,
        write: bool,
    ) -> Result<u64, String> {
        let space = self.thread(ThreadId(thread))?.0;
        Ok(self.kernel_touch_in(cpu, space, pa, write))
    }

    /// `kernel_touch` on behalf of a thread of address space `space`. Its TLB misses are data
    /// stalls as a reference's are (the Cortex-A9's PMU counts in every mode): the lookups
    /// after a miss, the descriptor's load after a miss in all, the refill of the levels above
    /// the last after it.
    /// With `OsConfig::kernel_data_sections`, translated as the global 1 MiB section of the
    /// linear map holding `pa`.
    pub(super) fn kernel_touch_in(
        &mut self,
        cpu: usize,
        space: usize,
        pa: u64,
        write: bool,
    ) -> u64 {
        let cycles = if self.opts.os.kernel_data_sections {
            let section = crate::os::linear_section(pa);
            self.kernel_translate_in(cpu, space, section, PageSize::Size1M, false)
        } else {
            self.kernel_translate_in(cpu, space, pa, PageSize::Size4K, false)
        };
        cycles + self.kernel_access_in(cpu, pa, write)
    }

    /// A kernel load (or, `write`, store) of physical `pa` through `cpu`'s core's data caches.
    pub(super) fn kernel_access_in(&mut self, cpu: usize, pa: u64, write: bool) -> u64 {
        let dcache = self.cores[self.cpus[cpu].core].dcache.clone();
        let (lat, src) = self.load(cpu, &dcache, pa, write);
        self.counters[cpu].data_by_source[src] += 1;
        lat
    }

    /// A kernel store of physical `pa` through `cpu`'s core's data caches.
    pub(super) fn kernel_store_in(&mut self, cpu: usize, pa: u64) -> u64 {
        self.kernel_access_in(cpu, pa, true)
    }

    /// `kmap_atomic` of a high-memory frame by `cpu` for a thread of `space`
    /// (`OsConfig::fault_highmem`): the fixmap slot's PTE written (`fixmap_set_pte_in`), then
    /// the slot translated as a global 4 KiB data-side entry. Returns the cycles (the clear's
    /// stores are the caller's).
    pub(super) fn kmap_atomic_in(&mut self, cpu: usize, space: usize) -> u64 {
        let top = &self.levels[0];
        let va_limit = 1u64 << (top.shift + top.bits);
        let slot = crate::os::kmap_fixmap_page(va_limit, self.config.memory.bytes, cpu);
        let cycles = self.fixmap_set_pte_in(cpu, space);
        cycles + self.kernel_translate_in(cpu, space, slot, PageSize::Size4K, false)
    }

    /// `set_fixmap_pte` of `cpu`'s kmap_atomic slot for a thread of `space`: its PTE stored
    /// through the data caches, then the slot's address invalidated in the core's TLB levels
    /// (TLBIMVA: the global entry; under broadcast maintenance the micro TLBs flushed whole).
    /// Returns the cycles.
    pub(super) fn fixmap_set_pte_in(&mut self, cpu: usize, space: usize) -> u64 {
        let top = &self.levels[0];
        let va_limit = 1u64 << (top.shift + top.bits);
        let bytes = self.config.memory.bytes;
        let slot = crate::os::kmap_fixmap_page(va_limit, bytes, cpu);
        let k = crate::os::kernel_linear(va_limit, bytes, slot);
        let cycles = self.kernel_store_in(cpu, k.descriptor);
        let asid = self.spaces[space].asid;
        let broadcast = self.opts.os.tlb_maintenance == crate::os::TlbMaintenance::Broadcast;
        let core = self.cpus[cpu].core;
        let mut n = 0;
        for (t, micro) in self.tlbs_of(core) {
            n += if broadcast && micro {
                self.tlbs[t].invalidate_unlocked()
            } else {
                self.tlbs[t].shoot_down(k.va, asid)
            };
        }
        self.core_os[core].invalidations += n;
        cycles
    }

    /// An exception entry through the high vectors (`OsConfig::vectors_page`) on behalf of a
    /// thread of `space`: the vectors page fetched (instruction side, a global 4 KiB entry),
    /// the stubs page fetched if `stub_fetch` (an IRQ, an abort), then loaded from (data side,
    /// through the caches). Returns the cycles.
    pub(super) fn kernel_vectors_in(&mut self, cpu: usize, space: usize, stub_fetch: bool) -> u64 {
        let top = &self.levels[0];
        let [vectors, stubs] =
            crate::os::vectors_pages(1u64 << (top.shift + top.bits), self.config.memory.bytes);
        let mut cycles = self.kernel_translate_in(cpu, space, vectors, PageSize::Size4K, true);
        if stub_fetch {
            cycles += self.kernel_translate_in(cpu, space, stubs, PageSize::Size4K, true);
        }
        // The stubs page is the vectors' 4 KiB mapping, not the linear map's: 4 KiB always.
        cycles += self.kernel_translate_in(cpu, space, stubs, PageSize::Size4K, false);
        cycles + self.kernel_access_in(cpu, stubs, false)
    }

    /// A fetch of the kernel text section at physical `pa` (`os::kernel_text_section`) on
    /// behalf of a thread of `space`: its translation through the core's instruction TLB
    /// levels as a global 1 MiB entry, no stall counted, no fetch through the caches.
    pub(super) fn kernel_fetch_in(&mut self, cpu: usize, space: usize, pa: u64) -> u64 {
        self.kernel_translate_in(cpu, space, pa, PageSize::Size1M, true)
    }

    /// The translation of a kernel reference to physical `pa` as a global `size` page through
    /// `cpu`'s core's data (or, `instr`, instruction) TLB levels in order, each its latency,
    /// until one holds it; after a miss in all, the descriptor loaded through the data caches
    /// and the refill of the level above the last; the levels above the hit (all after a miss)
    /// filled. Data-side lookups after a miss, the descriptor and the refill are data stalls;
    /// instruction-side ones are not counted. Returns the cycles.
    pub(super) fn kernel_translate_in(
        &mut self,
        cpu: usize,
        space: usize,
        pa: u64,
        size: PageSize,
        instr: bool,
    ) -> u64 {
        let top = &self.levels[0];
        let k =
            crate::os::kernel_linear(1u64 << (top.shift + top.bits), self.config.memory.bytes, pa);
        let who = Who {
            asid: self.spaces[space].asid,
            vmid: self.vmid(),
            hw_thread: self.cpus[cpu].hw_thread,
        };
        let core = self.cpus[cpu].core;
        let path = if instr {
            self.cores[core].itlb.clone()
        } else {
            self.cores[core].dtlb.clone()
        };
        let mut stalls = vec![0u64; self.counters[cpu].data_stall_cycles.len()];
        let mut cycles = 0;
        let mut hit_at = path.len();
        for (i, &(t, _)) in path.iter().enumerate() {
            cycles += self.tlbs[t].latency;
            if i > 0 {
                stalls[path[i - 1].1] += self.tlbs[t].latency;
            }
            if self.tlbs[t].lookup(k.va, who).is_some() {
                hit_at = i;
                break;
            }
        }
        let dcache = self.cores[core].dcache.clone();
        if hit_at == path.len() {
            let (lat, src) = self.load(cpu, &dcache, k.descriptor, false);
            self.counters[cpu].data_by_source[src] += 1;
            cycles += lat;
            if let Some(&(_, last)) = path.last() {
                stalls[last] += lat;
            }
            if path.len() > 1 {
                let refill = self.tlbs[path[path.len() - 1].0].refill_latency;
                cycles += refill;
                stalls[path[path.len() - 2].1] += refill;
            }
        }
        if !instr {
            for (c, s) in self.counters[cpu].data_stall_cycles.iter_mut().zip(stalls) {
                *c += s;
            }
        }
        for &(t, _) in &path[..hit_at] {
            self.tlbs[t].insert(Entry {
                global: true,
                ..Entry::filled(k.va >> size.shift(), size, pa >> 12, who)
            });
        }
        cycles
    }
}
