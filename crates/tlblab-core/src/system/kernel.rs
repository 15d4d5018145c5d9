//! The kernel's own translations: global mappings (ARM's nG bit clear, x86's G bit set without
//! page-table isolation). ARM Linux maps the kernel global, so its TLB entries translate for every
//! ASID, survive ASID switches and rollovers, and take TLB room from the threads' entries (seed
//! 000 §8.2: "a higher number of TLB entries get replaced by kernel specific entries because the
//! TLB fits only 64 of them"). Not on the per-access path: the switch path calls it
//! (`OsConfig::kernel_pages`) and techniques whose kernel work is traced (seed 000's save and
//! restore).

use crate::os::kernel_linear;
use crate::system::{SimError, System};
use crate::tlb::TlbEntry;
use tlblab_types::{PageSize, Pfn, ThreadId, VirtAddr, Vpn};

impl System {
    /// Whether the kernel's own translations are traced (`OsConfig::kernel_pages`,
    /// `kernel_return_pages` or `migrate_kernel_pages` > 0): then techniques' kernel work goes
    /// through `kernel_touch`, else through `kernel_access`.
    pub fn kernel_traced(&self) -> bool {
        let os = &self.options.os;
        os.kernel_pages > 0 || os.kernel_return_pages > 0 || os.migrate_kernel_pages > 0
    }

    /// One kernel load (or store) of physical address `pa` through the kernel's linear map
    /// (`os::kernel_linear`) by hardware thread `cpu`, on behalf of `thread` (whose ASID,
    /// VMID and hardware thread tag the entry; a global entry translates for all). The core's
    /// data TLB levels are looked up in order, each costing its latency; after a miss in all,
    /// the page's descriptor is loaded through the data caches (the kernel's one-level table)
    /// and the levels above the last refilled from it (`TlbConfig::refill_latency`); the
    /// levels above the one that hit (all after a miss) are filled with a global 4 KiB
    /// entry; then `pa` is loaded through the data caches. Returns the cycles.
    ///
    /// The stalls are counted as a program's data reference's are
    /// (`UnitStats::data_stall_cycles`): the Cortex-A9's PMU counts in every mode, so the
    /// kernel's own micro- and main-TLB misses on the data side are in its events 0x85 and 0x83
    /// (seed 004 §V.1 reads them over the real-time program's run, kernel entries included).
    pub fn kernel_touch(
        &mut self,
        cpu: usize,
        thread: ThreadId,
        pa: u64,
        write: bool,
    ) -> Result<u64, SimError> {
        let st = self.thread_state(thread)?;
        let st = super::ThreadState { cpu, ..st };
        Ok(self.kernel_touch_as(st, pa, write))
    }

    /// `kernel_touch` for the thread whose state is `st` (its `cpu` the hardware thread).
    /// With `OsConfig::kernel_data_sections` the page is translated as the global 1 MiB
    /// section of the linear map that holds it.
    pub(super) fn kernel_touch_as(&mut self, st: super::ThreadState, pa: u64, write: bool) -> u64 {
        let cycles = if self.options.os.kernel_data_sections {
            let section = crate::os::linear_section(pa);
            self.kernel_translate(st, section, PageSize::Size1M, false)
        } else {
            self.kernel_translate(st, pa, PageSize::Size4K, false)
        };
        cycles + self.kernel_access(st.cpu, pa, write)
    }

    /// One fetch of kernel text in the 1 MiB section at physical `pa` (`os::kernel_text_section`)
    /// by the thread whose state is `st`: the translation of `kernel_translate` through the
    /// core's instruction TLB levels, a global 1 MiB entry (Linux's sections, arch/arm/mm/mmu.c
    /// `map_lowmem`). The code's own fetches through the caches are not modelled. Returns the
    /// cycles.
    pub(super) fn kernel_fetch_as(&mut self, st: super::ThreadState, pa: u64) -> u64 {
        self.kernel_translate(st, pa, PageSize::Size1M, true)
    }

    /// The translation of a kernel reference to physical `pa` through the kernel's linear map
    /// (`os::kernel_linear`) as a global `size` page, by the thread whose state is `st`: the
    /// core's data (or, `instr`, instruction) TLB levels looked up in order, each costing its
    /// latency; after a miss in all, the page's descriptor is loaded through the data caches
    /// (the kernel's one-level table) and the levels above the last refilled from it
    /// (`TlbConfig::refill_latency`); the levels above the one that hit (all after a miss) are
    /// filled with the global entry. Data-side misses are counted as stalls
    /// (`kernel_touch`), instruction-side ones are not. Returns the cycles.
    fn kernel_translate(
        &mut self,
        st: super::ThreadState,
        pa: u64,
        size: PageSize,
        instr: bool,
    ) -> u64 {
        let cpu = st.cpu;
        let req = self.requester(st);
        let k = kernel_linear(self.va_limit, self.config.memory.bytes, pa);
        let va = VirtAddr(k.va);
        let core_i = self.cpus[cpu].core;
        let path = if instr {
            self.cores[core_i].itlb.clone()
        } else {
            self.cores[core_i].dtlb.clone()
        };
        let data = !instr;
        let mut cycles = 0;
        let mut hit_at = path.len();
        for (i, &(t, _)) in path.iter().enumerate() {
            let lat = self.tlbs[t].config.latency;
            cycles += lat;
            if i > 0 && data {
                self.cpu_stats[cpu].data_stall_cycles[path[i - 1].1] += lat;
            }
            if self.tlbs[t].lookup(va, req).is_some() {
                hit_at = i;
                break;
            }
        }
        if hit_at == path.len() {
            let c = self.kernel_access(cpu, k.descriptor, false);
            cycles += c;
            if let (Some(&(_, last)), true) = (path.last(), data) {
                self.cpu_stats[cpu].data_stall_cycles[last] += c;
            }
            let (refill, above) = self.cores[core_i].walk_refill[instr as usize];
            if refill != 0 {
                cycles += refill;
                if data {
                    self.cpu_stats[cpu].data_stall_cycles[above] += refill;
                }
            }
        }
        let mut e = TlbEntry::new(Vpn(k.va >> size.shift()), size, Pfn(pa >> 12), req.asid);
        e.vmid = req.vmid;
        e.hw_thread = req.hw_thread;
        e.global = true;
        self.any_global = true;
        for &(t, stat) in &path[..hit_at] {
            if self.miss_log.is_some() {
                self.kernel_fill_logging(t, stat, e);
            } else {
                self.tlbs[t].fill(e);
            }
        }
        cycles
    }

    /// The page-fault path's kernel pages (`OsConfig::fault_kernel_pages`), touched by the
    /// thread whose state is `st` on a demand-paging fault of `va`, whose walk (from
    /// `start_level`, `start_node`) found its page unmapped and left its entries in
    /// `self.path`, the invalid one last; the page is mapped already (`first_touch`). Their
    /// cycles are charged to it as busy time (the handler runs;
    /// no TLB stall of the faulting reference's), their TLB misses counted as stalls
    /// (`kernel_touch_as`). The path enters through the exception vectors as an abort
    /// (`OsConfig::vectors_page`). Then, off virtualization, the clear of an anonymous page's
    /// frame through the kernel's linear map (`OsConfig::fault_linear_map`) or, a high-memory
    /// frame, through the CPU's kmap_atomic fixmap page (`OsConfig::fault_highmem`), and the
    /// handler's stores of the descriptors the fault wrote (`fault_stores`). The four fixed pages stay
    /// beside the linear map's section: they are other kernel objects the handler touches
    /// (its stack, the mm_struct and VMAs, struct pages, the page-table page), not the frame
    /// it clears. Out of the walk's line, with the fault's other work: inline, the stores'
    /// set-up cost the technique-free walk ~6 instructions (callgrind, zen3 full model,
    /// 299.2 M → 300.4 M).
    #[cold]
    #[inline(never)]
    pub(super) fn fault_kernel_path(
        &mut self,
        st: super::ThreadState,
        va: tlblab_types::VirtAddr,
        start_level: usize,
        start_node: u32,
    ) {
        // The failed walk read its entries up to the invalid one: the fault wrote that entry
        // and every one below it.
        let invalid_at = self.path.len.saturating_sub(1);
        let os = self.options.os;
        self.kernel_path(
            st,
            true,
            os.fault_text_sections,
            os.fault_kernel_page(0),
            os.fault_kernel_pages,
        );
        if self.host.is_none() {
            let leaf =
                self.spaces[st.space]
                    .pt
                    .walk_from(va, start_level, start_node, &mut self.path);
            // An anonymous page's frame (a page of no object) is fresh: the fault allocated it.
            let anonymous = self.spaces[st.space].mapping_for(va).1.is_none();
            if let (true, Some(leaf)) = (anonymous, leaf) {
                let pa = leaf.pfn.base().0;
                if os.fault_linear_map {
                    let section = crate::os::linear_section(pa);
                    let cycles = self.kernel_translate(st, section, PageSize::Size1M, false)
                        + self.clear_stores(st.cpu, pa);
                    self.charge_busy(st.cpu, cycles);
                } else if os.fault_highmem {
                    let cycles = self.kmap_atomic_clear(st, pa);
                    self.charge_busy(st.cpu, cycles);
                }
            }
            self.fault_stores(st, invalid_at, start_level);
        }
    }

    /// The fault handler's stores of the descriptors the fault wrote: `self.path` holds the
    /// walk's entries after the fault (from level `start_level`), and those from index
    /// `invalid_at` on (the entry the failed walk found invalid and every one below it) are the
    /// ones the kernel wrote, each stored through the faulting core's data caches
    /// (`kernel_access`, a write), the cycles charged as busy time. Linux writes the new PTE
    /// with `set_pte_at` (ARMv7: `cpu_v7_set_pte_ext`, arch/arm/mm/proc-v7-2level.S) and a new
    /// table's first-level entry with `pmd_populate` at the end of the fault; on an SMP kernel
    /// neither is cleaned from the L1 data cache (`flush_pte` and `flush_pmd_entry` are
    /// `ALT_SMP(nop)`), since the table walks are inner write-back cacheable (`TTB_FLAGS_SMP`:
    /// `TTB_IRGN_WBWA`) and the Cortex-A9's walks then look the L1 data cache up (TRM DDI0388
    /// §6.1, the preset's `walker.first_cache_level = 1`). So the walk that follows the fault
    /// finds the line the handler just wrote. In Linux's ARMv7 layout
    /// (`TableLayout::LinuxArmv7`) the kernel also keeps its own copy of every PTE 2048 bytes
    /// below the hardware one, and `cpu_v7_set_pte_ext` stores it first (`str r1, [r0]`, then
    /// the hardware PTE at `[r0, #2048]`); and `__pmd_populate` writes both first-level entries
    /// of the pair (`pmdp[0]`, `pmdp[1]`; `PageTable::populate_pair`). The TLB side of the
    /// store is the fault path's page-table page (`OsConfig::fault_kernel_pages`). Not under
    /// virtualization: the guest's descriptors are guest-physical (left out there).
    #[cold]
    #[inline(never)]
    pub(super) fn fault_stores(
        &mut self,
        st: super::ThreadState,
        invalid_at: usize,
        start_level: usize,
    ) {
        let (refs, len) = (self.path.refs, self.path.len);
        let linux = self.spaces[st.space].pt.layout() == crate::page_table::TableLayout::LinuxArmv7;
        let mut cycles = 0;
        for (j, pa) in refs.iter().enumerate().take(len).skip(invalid_at) {
            let level = start_level + j;
            if linux && level == 0 && j + 1 < len {
                let pair = pa.0 & !7;
                cycles += self.kernel_access(st.cpu, pair, true);
                cycles += self.kernel_access(st.cpu, pair + 4, true);
                continue;
            }
            if linux && level == 1 {
                cycles += self.kernel_access(st.cpu, pa.0 - 2048, true);
            }
            cycles += self.kernel_access(st.cpu, pa.0, true);
        }
        self.charge_busy(st.cpu, cycles);
    }

    /// A kernel path: the exception vectors it enters through (`OsConfig::vectors_page`;
    /// `stub_fetch`: an IRQ or abort, whose stub runs from the stubs page, not a system call),
    /// its text, the sections set in `text` (`OsConfig::syscall_text_sections`), fetched in
    /// order (`kernel_fetch_as`), then its `pages` pages from `kernel_switch_page` index
    /// `first`, touched in order (`kernel_touch_as`), by the thread whose state is `st`, the
    /// cycles charged as busy time: the page-fault path (`fault_kernel_path`) and a
    /// `KernelEntry` event's.
    pub(super) fn kernel_path(
        &mut self,
        st: super::ThreadState,
        stub_fetch: bool,
        text: u32,
        first: u32,
        pages: u32,
    ) {
        let mut cycles = 0;
        if self.options.os.vectors_page {
            cycles += self.kernel_vectors(st, stub_fetch);
        }
        for pa in crate::os::kernel_text_sections(self.config.memory.bytes, text) {
            cycles += self.kernel_fetch_as(st, pa);
        }
        for pa in crate::os::kernel_path_pages(self.config.memory.bytes, first, pages) {
            cycles += self.kernel_touch_as(st, pa, false);
        }
        self.charge_busy(st.cpu, cycles);
    }

    /// An exception entry through the high vectors (`OsConfig::vectors_page`,
    /// `os::vectors_pages`) by the thread whose state is `st`: the vector's fetch from the
    /// vectors page (instruction side, a global 4 KiB entry), the stub's fetch from the stubs
    /// page if `stub_fetch` (an IRQ's or abort's), then the load from the stubs page
    /// (`vector_swi`'s address, or the stub's handler table: data side, its misses stalls).
    /// Returns the cycles.
    fn kernel_vectors(&mut self, st: super::ThreadState, stub_fetch: bool) -> u64 {
        let [vectors, stubs] = crate::os::vectors_pages(self.va_limit, self.config.memory.bytes);
        let mut cycles = self.kernel_translate(st, vectors, PageSize::Size4K, true);
        if stub_fetch {
            cycles += self.kernel_translate(st, stubs, PageSize::Size4K, true);
        }
        // The stubs page is the vectors' 4 KiB mapping, not the linear map's: 4 KiB always.
        cycles += self.kernel_translate(st, stubs, PageSize::Size4K, false);
        cycles + self.kernel_access(st.cpu, stubs, false)
    }

    /// A fault's clear of the high-memory frame at physical `pa` through hardware thread
    /// `st.cpu`'s `kmap_atomic` fixmap page (`OsConfig::fault_highmem`,
    /// `os::kmap_fixmap_page`): the slot's PTE written (`fixmap_pte_write`), then its
    /// translation as a global 4 KiB data-side entry (`kernel_translate`, its misses stalls)
    /// and the clear's stores (`clear_stores`); under PREEMPT_RT's `kunmap_atomic`
    /// (`OsConfig::kunmap_flush`) the PTE written again, cleared. Returns the cycles.
    fn kmap_atomic_clear(&mut self, st: super::ThreadState, pa: u64) -> u64 {
        let slot = crate::os::kmap_fixmap_page(self.va_limit, self.config.memory.bytes, st.cpu);
        let mut cycles = self.fixmap_pte_write(st, slot);
        cycles += self.kernel_translate(st, slot, PageSize::Size4K, false);
        cycles += self.clear_stores(st.cpu, pa);
        if self.options.os.kunmap_flush {
            cycles += self.fixmap_pte_write(st, slot);
        }
        cycles
    }

    /// `set_fixmap_pte` of the fixmap page at physical `slot` (its linear-map address the
    /// slot's, `os::kmap_fixmap_page`) by the thread whose state is `st`: the PTE stored
    /// through the data caches (`set_pte_ext`), then the slot's address invalidated in every
    /// TLB level of the core (`local_flush_tlb_kernel_page`, TLBIMVA: the global entry, as a
    /// shootdown of the address does on one core; under `TlbMaintenance::Broadcast` the levels
    /// in front of the last flushed whole, ARM's micro TLBs). Returns the cycles.
    fn fixmap_pte_write(&mut self, st: super::ThreadState, slot: u64) -> u64 {
        let k = kernel_linear(self.va_limit, self.config.memory.bytes, slot);
        let cycles = self.kernel_access(st.cpu, k.descriptor, true);
        let asid = self.requester(st).asid;
        let core = self.cpus[st.cpu].core;
        let broadcast = self.broadcast_maintenance();
        let mut n = 0;
        for (t, front) in self.core_tlbs(core) {
            n += if broadcast && front {
                // ARM: a main-TLB maintenance operation flushes the micro TLBs whole
                // (`TlbMaintenance::Broadcast`, as `shootdown`).
                self.tlbs[t].invalidate_all()
            } else {
                self.tlbs[t].shoot_down_va(VirtAddr(k.va), Some(asid))
            };
        }
        self.core_os[core].invalidations += n as u64;
        cycles
    }

    /// The clear of the frame at physical `pa` (a fault's, `fault_kernel_path`): a store of
    /// its first byte through hardware thread `cpu`'s data caches, or with
    /// `OsConfig::fault_clear_lines` one store per line of the core's first data cache over
    /// the 4 KiB (Linux's `clear_page`, a memset). Returns the cycles.
    fn clear_stores(&mut self, cpu: usize, pa: u64) -> u64 {
        let core = self.cpus[cpu].core;
        let line = match (
            self.options.os.fault_clear_lines,
            self.cores[core].dcache.first(),
        ) {
            (true, Some(r)) => self.caches[r.cache].config.line,
            _ => 4096,
        };
        (pa..pa + 4096)
            .step_by(line as usize)
            .map(|a| self.kernel_access(cpu, a, true))
            .sum()
    }
}
