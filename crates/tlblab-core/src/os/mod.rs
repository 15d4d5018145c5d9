//! The OS model's vocabulary: what an OS run is configured with and what it counts.
//!
//! Data only: this module depends on nothing of the engine. The engine applies the OS events
//! (`system/events.rs`), the context-switch policies (`system/switch/`), and the drivers that
//! schedule threads over it live in `sched/`.
//! - `asid` — a finite ASID space with Linux-style generation rollover (seed 000 §3.3: 8-bit ASIDs).
//! - `SwitchPolicy` — what a change of address space does: flush everything (seed 002 §2's naive
//!   StrongARM Linux), ASID-tagged (no flush; flush on rollover), or a technique's hook.
//! - `OsConfig`, `OsStats`, `JobStats` — the parameters, counters and per-job records of a run.

pub mod asid;

use serde::{Deserialize, Serialize};

pub use asid::AsidAllocator;

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SwitchPolicy {
    /// `asid_tagged` when every TLB level carries ASIDs, else `flush_all`.
    #[default]
    Auto,
    /// Invalidate every unlocked TLB entry and page-walk-cache entry of the core and flush its
    /// virtually indexed caches (with their cost) on every address-space change: what Linux did
    /// on the StrongARM (seed 002 §2: 1,000–18,000 cycles direct, then refills as misses).
    FlushAll,
    /// No flush: entries are told apart by ASID; the ASID space rolls over (seed 000 §3.3).
    AsidTagged,
    /// Leave the switch to the technique installed (`Technique::on_space_switch`; ARM domains, seed 002).
    Hook,
}

/// How the kernel keeps the other cores' TLBs coherent when it changes or tears down a
/// mapping (`Munmap`, `Mprotect`, `ProcessExit`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TlbMaintenance {
    /// x86-style shootdown: the initiator invalidates the range (or the address space) on
    /// every core by VA and ASID, and every other core takes an inter-processor interrupt
    /// (`OsConfig::ipi_cycles`). Only the entries named go, in every TLB level.
    #[default]
    Ipi,
    /// ARMv7 broadcast maintenance (the multiprocessing extensions' inner-shareable operations
    /// that Linux uses on the Cortex-A9 MPCore, arch/arm/include/asm/tlbflush.h: `munmap` and
    /// `mprotect` → `flush_tlb_range` → one TLBIMVAIS per page; `exit_mmap` → `flush_tlb_mm` →
    /// TLBIASIDIS). The hardware carries the operation to every core: no interrupt, no cycles
    /// charged (an assumption: no source gives the cost of an operation in flight). For seed
    /// 004's counters 0 is what they would see of the operation itself: the Cortex-A9's stall
    /// events 0x83 and 0x85 count the cycles data requests wait on main- and micro-TLB misses
    /// (TRM DDI0388 Table 11-6), not the cycles the issuing core spends executing the operation
    /// and its DSB, and the misses the operation causes afterwards are simulated as misses; its
    /// execution time is left out of the run's cycles (a few dozen operations a run, against
    /// millions of cycles). What a receiving core's main TLB loses while an operation is in
    /// flight (TRM §6.2.2's "competing requests") is not modelled. On every
    /// core the last TLB level loses the entries named, locked ones too when they match
    /// (Cortex-A9 TRM DDI0388I Table 4-26, note b: TLBIMVAIS and TLBIASIDIS "invalidate the
    /// locked entry when it matches"), and the levels in front of it (the micro TLBs) are
    /// flushed whole, in the Cortex-A9's own words: "All main TLB related operations affect
    /// both the instruction and data micro TLBs, causing them to be flushed" (Cortex-A9 TRM
    /// DDI0388I r4p1, §6.2.1; the Cortex-A7 TRM DDI0464F §5.3.1 and the Cortex-A35 TRM §A6.2
    /// say the same of "maintenance operations"). The same section's Context ID rule and a
    /// lock's flush are `TlbConfig::flush_on_context_change`.
    Broadcast,
}

/// OS parameters of a run (not properties of the hardware).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OsConfig {
    /// Width of the ASID space; ASID 0 is reserved (seed 000 §3.3: ARMv7 Linux uses 8 bits).
    pub asid_bits: u8,
    /// What an address-space switch does.
    pub switch: SwitchPolicy,
    /// Kernel cycles per context switch besides flushing (register save/restore, scheduler):
    /// "of the order of 100 clock cycles" (seed 002 §1).
    pub switch_cycles: u64,
    /// Cycles an inter-processor interrupt costs each remote core in a shootdown.
    pub ipi_cycles: u64,
    /// Kernel pages the switch path touches on every switch to a thread (the scheduler's code
    /// and data, the incoming task's `task_struct` and stack), one load each, through the core's
    /// data TLB levels as global mappings (`System::kernel_touch`): ARM Linux maps the kernel
    /// global, so its entries survive ASID switches and rollovers and compete with the
    /// threads' for the TLB (seed 000 §8.2). They are touched before the technique's switch-in
    /// work (`Technique::on_switch_in`). 0 (and `kernel_return_pages` 0): the kernel's own
    /// translations are not traced.
    pub kernel_pages: u32,
    /// Kernel pages the switch path touches after the technique's switch-in work, on its way
    /// back to the thread: seed 000 restores the TLB in `finish_task_switch` (§7), and the rest
    /// of the path (`schedule()`'s return, the exit to the task) runs after it, so its global
    /// entries are the newest when the thread resumes and displace the restored ones when the
    /// TLB is full (§8.2: "a higher number of TLB entries get replaced by kernel specific
    /// entries because the TLB fits only 64 of them"). Pages distinct from `kernel_pages`'s
    /// (the ones after them, `kernel_switch_page`).
    pub kernel_return_pages: u32,
    /// Kernel pages the page-fault path touches on every demand-paging fault (a walk that
    /// finds the page unmapped, `System::first_touch`): one load each, through the faulting
    /// core's data TLB levels as global mappings (`System::kernel_touch`), before the walk
    /// that follows the fault. Linux enters the kernel on every first touch of a user page
    /// (`do_page_fault` → `handle_mm_fault`) and the handler's data, its stack, the task's
    /// `mm_struct` and VMAs, the page allocator's structures and the page-table page it
    /// writes, all in the kernel's global low-memory mapping, take TLB entries from the
    /// program's (seed 004 §III: the kernel and the program share the main TLB). Pages after
    /// `kernel_pages` and `kernel_return_pages`'s (`kernel_switch_page`). 0: faults touch no
    /// kernel page.
    pub fault_kernel_pages: u32,
    /// Kernel pages the migration path touches on the thread's old hardware thread when it
    /// migrates, before a technique's save (`Technique::on_migrate`): one load each through that
    /// core's data TLB levels as global mappings tagged with the thread's ASID
    /// (`System::kernel_touch`). Linux 4.14 moves a running task from inside the kernel it
    /// entered on the old CPU (`sched_setaffinity` → `stop_one_cpu` → the stopper task's
    /// `migration_cpu_stop` → `move_queued_task`, kernel/sched/core.c), with the task's ASID
    /// still current (the stopper is a kernel thread in lazy TLB mode): the syscall's stack,
    /// the runqueues, the stopper's data, the wake-up IPI to the new CPU. Seed 000 saves the TLB
    /// inside `move_queued_task` (§7), so these entries are the newest the save finds: in a
    /// full TLB they have displaced the thread's oldest ones (§8.2). Pages after
    /// `fault_kernel_pages`'s (`kernel_switch_page`). 0: a migration touches no kernel page.
    pub migrate_kernel_pages: u32,
    /// How `Munmap`, `Mprotect` and `ProcessExit` reach the other cores' TLBs.
    pub tlb_maintenance: TlbMaintenance,
    /// Kernel pages a system call touches (a `KernelEntry` event of path
    /// `kernel_entry::SYSCALL`): one load each through the calling core's data TLB levels as
    /// global mappings (`System::kernel_touch`), charged to the thread as busy time, their
    /// misses counted as data stalls (the PMU counts in every mode). Pages after
    /// `migrate_kernel_pages`'s (`kernel_switch_page`). 0: a system call touches no kernel page.
    pub syscall_kernel_pages: u32,
    /// Kernel pages a timer tick touches (a `KernelEntry` event of path `kernel_entry::TICK`),
    /// as `syscall_kernel_pages`'s. Pages after `syscall_kernel_pages`'s. 0: none.
    pub tick_kernel_pages: u32,
    /// The kernel text a system call runs: a set of the kernel image's 1 MiB sections (bit `k`:
    /// the `k`th section of its text, `kernel_text_section`), each fetched once per call
    /// through the calling core's instruction TLB levels as a global 1 MiB section entry
    /// (`System::kernel_fetch`), before the path's data pages. Linux maps its image with 1 MiB
    /// sections (ARM: arch/arm/mm/mmu.c, `map_lowmem`), so a path's code takes one entry per
    /// section its functions lie in; where the last level is unified (the Cortex-A9's main TLB,
    /// seed 004 §III) those entries compete with the data side's. Instruction-side misses are
    /// not data stalls (`UnitStats::data_stall_cycles`): their cycles are the thread's busy
    /// time. 0: the path's text is not traced.
    pub syscall_text_sections: u32,
    /// The kernel text a timer tick runs, as `syscall_text_sections`.
    pub tick_text_sections: u32,
    /// The kernel text the page-fault path runs, as `syscall_text_sections`, fetched before the
    /// fault's kernel pages; only where those are traced (`fault_kernel_pages` > 0).
    pub fault_text_sections: u32,
    /// The page-fault path's clearing of the frame it allocates, through the kernel's linear
    /// map: Linux zeroes a new anonymous page before mapping it (mm/memory.c
    /// `do_anonymous_page` → `alloc_zeroed_user_highpage_movable` → `clear_user_highpage`,
    /// which on ARMv7 is `v6_clear_user_highpage_nonaliasing`, arch/arm/mm/copypage-v6.c:
    /// `kmap_atomic(page)` then `clear_page`), and `kmap_atomic` of a low-memory page is its
    /// `page_address`, PAGE_OFFSET + (pa − PHYS_OFFSET) (arch/arm/include/asm/memory.h;
    /// PAGE_OFFSET 0xC0000000 with the 3G/1G split). ARM Linux maps low memory with 1 MiB
    /// sections (arch/arm/mm/mmu.c `map_lowmem` → `create_mapping` → `alloc_init_pmd` →
    /// `__map_init_section`), so the clear's stores take one global 1 MiB section entry of the
    /// data TLB levels whose virtual address, hence its set in a set-associative level,
    /// follows the frame's physical address (`linear_section`, `kernel_linear`). Modelled:
    /// that section's translation (`System::kernel_translate`) and the clear's store of the
    /// frame's first byte through the data caches, after the path's pages (the whole 4 KiB
    /// of stores with `fault_clear_lines`). Only for an anonymous page (of
    /// no object: a shared object's page is a file's or shmem's, read from the file or
    /// zeroed by whichever process faults it first, which the model does not tell apart),
    /// the page's first frame, only where the fault path is traced (`fault_kernel_pages` >
    /// 0), not under virtualization. A high-memory frame (above the linear map) is cleared
    /// through a per-CPU `kmap_atomic` fixmap page instead (`fault_highmem`).
    /// false: the clear is not traced.
    pub fault_linear_map: bool,
    /// The page-fault path's clearing of the frame it allocates where that frame is high
    /// memory: the clear of `fault_linear_map`, but through the CPU's `kmap_atomic` fixmap
    /// page instead of the linear map. Linux 4.14, arch/arm/mm/highmem.c `kmap_atomic`: a
    /// page above the linear map (`PageHighMem`) gets the fixmap slot
    /// `FIX_KMAP_BEGIN + type + KM_TYPE_NR * smp_processor_id()` (arch/arm/include/asm/fixmap.h, kmap_types.h:
    /// KM_TYPE_NR 16; `type` 0 outside nested kmaps), whose PTE `set_fixmap_pte` writes
    /// (`set_pte_ext`) and then flushes from the local TLBs (`local_flush_tlb_kernel_page`,
    /// ARMv7 TLBIMVA: the kernel page's global entry, every level of the core); `clear_page`
    /// then stores through it; `kunmap_atomic` leaves the PTE (no CONFIG_DEBUG_HIGHMEM).
    /// `v6_clear_user_highpage_nonaliasing` (arch/arm/mm/copypage-v6.c) is that kmap_atomic,
    /// clear_page and kunmap_atomic. The slot's address, FIXADDR_TOP (0xffeff000) less the
    /// index's pages: 0xffefe000 − cpu × 64 KiB (`kmap_fixmap_page`). Which frames are high
    /// memory: user pages are allocated GFP_HIGHUSER_MOVABLE, whose zonelist starts at
    /// ZONE_HIGHMEM (mm/page_alloc.c, `gfp_zone`), so while high memory has free frames a
    /// fault's anonymous frame is one of them; on the i.MX6 SABRE Lite (1 GiB of DDR3 at
    /// PHYS_OFFSET 0x10000000) with the 3G/1G split low memory ends at VMALLOC_END −
    /// 240 MiB − VMALLOC_OFFSET (arch/arm/mm/mmu.c `vmalloc_min`; VMALLOC_END 0xff800000,
    /// arch/arm/include/asm/pgtable.h), 768 MiB, leaving 256 MiB (65,536 frames) of high
    /// memory, far more than a MiBench run's few hundred faults take. So with this knob
    /// every anonymous frame a traced fault clears is taken as high memory (the frame's
    /// place in the model's memory is not consulted: only the fixmap's address reaches the
    /// TLBs). Modelled: the PTE's store through the data caches (the kernel's table
    /// descriptor of the fixmap page), the flush of the slot's address from every TLB level
    /// of the core (locked entries at it too: none are), then the slot's translation as a
    /// global 4 KiB data-side entry (a miss after the flush: its walk) and the clear's store
    /// of the frame's first byte through the data caches (all 4 KiB: `fault_clear_lines`).
    /// PREEMPT_RT's unmap is `kunmap_flush`; its saving of the slot's PTE across a context
    /// switch is left out (the fault does not switch). Only where the
    /// fault path is traced (`fault_kernel_pages` > 0), not with `fault_linear_map` (one
    /// clear a fault), not under virtualization. false: not traced.
    pub fault_highmem: bool,
    /// The fault's clear (`fault_linear_map` or `fault_highmem`) as the whole 4 KiB of stores
    /// Linux makes: ARM's `clear_page` is `memset(page, 0, PAGE_SIZE)`
    /// (arch/arm/include/asm/page.h), whose loop (arch/arm/lib/memset.S) stores the page with
    /// `stmia` of 16 or 32 bytes, in address order, so every line of the frame is written:
    /// one store per line of the core's first data cache (the Cortex-A9's 32-byte lines, TRM
    /// DDI0388I §7.1: 128 stores a clear), through the data caches, which allocate on a store
    /// miss (the engine's caches are write-allocate; ARM Linux maps all memory Write-Back
    /// Write-Allocate on an SMP kernel: arch/arm/mm/mmu.c `build_mem_type_table`, "Forcing
    /// write-allocate cache policy for SMP", and the Cortex-A9 tells Write-Back Write-Allocate
    /// from Write-Back no Write-Allocate memory on its L2 interface, TRM DDI0388I Tables 8-4
    /// and 8-5). So the clear fills 128 lines of the L1 data cache and of the L2, and may
    /// evict the page-table lines the next walks would have found there. A core with no data
    /// cache stores once (its memory takes the page in one write). false: the clear stores the
    /// frame's first byte only (its translation is what it models).
    pub fault_clear_lines: bool,
    /// PREEMPT_RT's `kunmap_atomic` after the fault's clear through the fixmap
    /// (`fault_highmem`): the RT patch set's "arm/highmem: Flush tlb on unmap"
    /// (arm-highmem-flush-tlb-on-unmap.patch, in the 4.14-rt series seed 004's kernel is
    /// built from, §V.1) makes `__kunmap_atomic` (arch/arm/mm/highmem.c) clear the slot's PTE
    /// unconditionally, `set_fixmap_pte(idx, __pte(0))`, which stores the PTE and flushes the
    /// slot's address from the local TLBs (`local_flush_tlb_kernel_page`, TLBIMVA), where the
    /// mainline kernel leaves the PTE (only CONFIG_DEBUG_HIGHMEM clears it). Modelled as
    /// `kmap_atomic`'s write: the PTE's store through the data caches and the slot's address
    /// invalidated in every TLB level of the core (under `TlbMaintenance::Broadcast` the micro
    /// TLBs flushed whole, Cortex-A9 TRM DDI0388I §6.2.1), after the clear's stores. The same
    /// patch set's `switch_kmaps` (arm-enable-highmem-for-rt.patch: on a context switch the
    /// outgoing task's kmap_atomic PTEs are cleared and the incoming task's restored) acts only
    /// for a task switched out inside a kmap_atomic section, which the model's faults never are
    /// (a fault does not switch), so it is not modelled. Only with `fault_highmem`.
    /// false: the PTE stays (the mainline kernel).
    pub kunmap_flush: bool,
    /// The kernel's data as 1 MiB sections of its linear map: ARM Linux maps low memory —
    /// task_structs, kernel stacks, slab objects, the mm_struct and VMAs, struct pages, page
    /// tables — with global 1 MiB section descriptors (arch/arm/mm/mmu.c `map_lowmem` →
    /// `__map_init_section`), so a kernel path's data references take the section's entry,
    /// not a 4 KiB one. With this knob every kernel data page the model touches through the
    /// linear map (`kernel_touch`: the switch, return, fault, migration, system-call and
    /// tick paths' pages of `kernel_switch_page`, and techniques' kernel work) is translated
    /// as the global 1 MiB section that holds it (`linear_section`); the pages stay where
    /// they are (the same cache lines). The exception vectors' stubs page stays a 4 KiB
    /// entry (it lies in the vectors' 4 KiB mapping, not the linear map), and the fault's
    /// clear keeps its own knobs. false: 4 KiB entries.
    pub kernel_data_sections: bool,
    /// The exception vectors: every kernel entry traced (a `KernelEntry` event's system call
    /// or tick, and the page fault where its path is traced) first runs through the ARM high
    /// vectors' two 4 KiB pages (arch/arm/mm/mmu.c `devicemaps_init`: the vectors page at
    /// 0xffff0000, the stubs page at 0xffff1000 since Linux 3.11, both kernel mappings, hence
    /// global). arch/arm/kernel/entry-armv.S: the vector itself is fetched from the vectors
    /// page (instruction side); a system call's vector is `W(ldr) pc, __vectors_start +
    /// 0x1000`, a data-side load of `vector_swi`'s address from the stubs page; an IRQ's or
    /// abort's is a branch to its `vector_stub` in the stubs page (an instruction-side fetch
    /// there), which loads its mode's handler from the table after it (`ldr lr, [pc, lr, lsl
    /// #2]`, data side). So each entry takes the vectors page on the instruction side and the
    /// stubs page on the data side (a data stall when it misses), an IRQ or abort the stubs
    /// page on the instruction side too (`vectors_pages`: their physical addresses, whose
    /// linear-map addresses are 0xffff0000 and 0xffff1000 where memory fills the top quarter
    /// of the range). The stub's stores to the mode's stack are left out. false: not traced.
    pub vectors_page: bool,
    /// A range's TLB maintenance (`Munmap`, `Mprotect`: Linux's `flush_tlb_range`) also
    /// invalidates every core's instruction-only TLB levels whole. ARM Linux on the SA-110 and
    /// SA-1100 (seed 002's StrongARM): their MMUs have no instruction-TLB entry operation (the
    /// kernel's `v4wb` TLB model, "ARMv4 with write buffer without I TLB flush entry
    /// instruction": `TLB_V4_I_FULL` without `TLB_V4_I_PAGE`, include/asm-arm/tlbflush.h), and
    /// Linux 2.4's `flush_tlb_range(mm, start, end)` passes no VMA flags
    /// (include/asm-arm/proc-armv/tlbflush.h: `cpu_tlb_invalidate_range(start, end)`), so the
    /// SA-1100's range invalidation ends with its one I-TLB operation, invalidate all (c8, c5,
    /// 0). A page's flush (`FlushRange`, `flush_tlb_page`) invalidates the I-TLB only for an
    /// executable VMA, which no `FlushRange` of tlblab's workloads is. false: by page only.
    pub range_flush_whole_itlb: bool,
}

impl Default for OsConfig {
    fn default() -> Self {
        OsConfig {
            asid_bits: 8,
            switch: SwitchPolicy::Auto,
            switch_cycles: 0,
            ipi_cycles: 0,
            kernel_pages: 0,
            kernel_return_pages: 0,
            fault_kernel_pages: 0,
            migrate_kernel_pages: 0,
            tlb_maintenance: TlbMaintenance::Ipi,
            syscall_kernel_pages: 0,
            tick_kernel_pages: 0,
            syscall_text_sections: 0,
            tick_text_sections: 0,
            fault_text_sections: 0,
            fault_linear_map: false,
            fault_highmem: false,
            fault_clear_lines: false,
            kunmap_flush: false,
            kernel_data_sections: false,
            vectors_page: false,
            range_flush_whole_itlb: false,
        }
    }
}

impl OsConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=16).contains(&self.asid_bits) {
            return Err(format!(
                "os.asid_bits: expected 1..=16, found {}",
                self.asid_bits
            ));
        }
        // The kernel's page counts share one budget (the pages `kernel_switch_page` numbers):
        // each is refused beyond the room the ones before it leave.
        let mut room = KERNEL_PAGES_MAX;
        let mut sum = Vec::new();
        for (field, pages) in [
            ("os.kernel_pages", self.kernel_pages),
            ("os.kernel_return_pages", self.kernel_return_pages),
            ("os.fault_kernel_pages", self.fault_kernel_pages),
            ("os.migrate_kernel_pages", self.migrate_kernel_pages),
            ("os.syscall_kernel_pages", self.syscall_kernel_pages),
            ("os.tick_kernel_pages", self.tick_kernel_pages),
        ] {
            sum.push(field);
            if pages > room {
                let shared = if sum.len() > 1 {
                    format!(" ({} at most {KERNEL_PAGES_MAX})", sum.join(" + "))
                } else {
                    String::new()
                };
                return Err(format!(
                    "{field}: expected 0..={room}{shared}, found {pages}"
                ));
            }
            room -= pages;
        }
        if self.fault_text_sections != 0 && self.fault_kernel_pages == 0 {
            return Err(format!(
                "os.fault_text_sections: the fault path's text is traced with its pages; set \
                 os.fault_kernel_pages > 0 or fault_text_sections = 0 (found {:#x})",
                self.fault_text_sections
            ));
        }
        if self.fault_linear_map && self.fault_kernel_pages == 0 {
            return Err(
                "os.fault_linear_map: the fault's clear is traced with the fault path's \
                 pages; set os.fault_kernel_pages > 0 or fault_linear_map = false"
                    .to_string(),
            );
        }
        if self.fault_highmem && self.fault_kernel_pages == 0 {
            return Err(
                "os.fault_highmem: the fault's clear is traced with the fault path's pages; \
                 set os.fault_kernel_pages > 0 or fault_highmem = false"
                    .to_string(),
            );
        }
        if self.fault_clear_lines && !(self.fault_linear_map || self.fault_highmem) {
            return Err(
                "os.fault_clear_lines: the clear's stores are traced with the clear; set \
                 os.fault_highmem or os.fault_linear_map, or fault_clear_lines = false"
                    .to_string(),
            );
        }
        if self.kunmap_flush && !self.fault_highmem {
            return Err(
                "os.kunmap_flush: kunmap_atomic unmaps the fixmap slot the clear used; set \
                 os.fault_highmem = true or kunmap_flush = false"
                    .to_string(),
            );
        }
        if self.fault_highmem && self.fault_linear_map {
            return Err(
                "os.fault_highmem: a fault clears its frame once, through the fixmap \
                 (fault_highmem) or the linear map (fault_linear_map); set one of them"
                    .to_string(),
            );
        }
        Ok(())
    }

    /// The index (`kernel_switch_page`) of the page-fault path's `page`th page: after the
    /// switch path's.
    pub fn fault_kernel_page(&self, page: u32) -> u32 {
        self.kernel_pages + self.kernel_return_pages + page
    }

    /// The index (`kernel_switch_page`) of the migration path's `page`th page: after the fault
    /// path's.
    pub fn migrate_kernel_page(&self, page: u32) -> u32 {
        self.kernel_pages + self.kernel_return_pages + self.fault_kernel_pages + page
    }

    /// The first page (`kernel_switch_page` index) and the number of pages of kernel path
    /// `path` of a `KernelEntry` event (`kernel_entry::SYSCALL`: after the migration path's;
    /// `TICK`: after the system call's); None for a path not defined.
    pub fn entry_kernel_pages(&self, path: u8) -> Option<(u32, u32)> {
        use tlblab_trace::record::kernel_entry;
        let syscall = self.migrate_kernel_page(self.migrate_kernel_pages);
        match path {
            kernel_entry::SYSCALL => Some((syscall, self.syscall_kernel_pages)),
            kernel_entry::TICK => {
                Some((syscall + self.syscall_kernel_pages, self.tick_kernel_pages))
            }
            _ => None,
        }
    }

    /// The kernel text sections (`syscall_text_sections`' bits) of kernel path `path` of a
    /// `KernelEntry` event; 0 for a path not defined.
    pub fn entry_text_sections(&self, path: u8) -> u32 {
        use tlblab_trace::record::kernel_entry;
        match path {
            kernel_entry::SYSCALL => self.syscall_text_sections,
            kernel_entry::TICK => self.tick_text_sections,
            _ => 0,
        }
    }
}

/// The physical address of the `k`th 1 MiB section of the kernel's text
/// (`OsConfig::syscall_text_sections`): 160 MiB below the top of memory, 32 sections below the
/// kernel's data pages (`kernel_switch_page`, 96 MiB below the top, with their descriptor
/// table under them). Its virtual address is the kernel's linear map of it (`kernel_linear`),
/// whose descriptor the walk reads. On a machine of less than 160 MiB the sections start at 0
/// and may share addresses with the kernel's data pages.
pub fn kernel_text_section(memory_bytes: u64, k: u32) -> u64 {
    memory_bytes.saturating_sub(160 << 20) + ((k as u64) << 20)
}

/// The physical addresses of the sections set in `mask` (`kernel_text_section`), lowest first.
pub fn kernel_text_sections(memory_bytes: u64, mask: u32) -> impl Iterator<Item = u64> {
    (0..32)
        .filter(move |k| mask >> k & 1 == 1)
        .map(move |k| kernel_text_section(memory_bytes, k))
}

/// The 1 MiB section of the kernel's linear map that holds physical address `pa`
/// (`OsConfig::fault_linear_map`): its physical base, whose `kernel_linear` address is the
/// section's.
pub fn linear_section(pa: u64) -> u64 {
    pa & !((1 << 20) - 1)
}

/// The physical addresses of the exception vectors' two pages (`OsConfig::vectors_page`):
/// the vectors page and the stubs page after it, placed so that their linear-map addresses
/// (`kernel_linear`) are the ARM high vectors' 0xffff0000 and 0xffff1000 (64 KiB below the
/// top of a 32-bit range; in general 64 KiB below the top of the range `va_limit`) where
/// memory fills the top quarter of the range; on a smaller memory, the same offsets below
/// the top of memory (the physical pages are Linux's `early_alloc`ed pair, anywhere in low
/// memory: only their virtual addresses matter to the TLBs).
pub fn vectors_pages(va_limit: u64, memory_bytes: u64) -> [u64; 2] {
    let quarter = (va_limit / 4).max(4096);
    let room = quarter.min(memory_bytes & !4095);
    let vectors = room.saturating_sub(16 * 4096);
    [vectors, vectors + 4096]
}

/// The physical address whose linear-map address (`kernel_linear`) is hardware thread
/// `cpu`'s `kmap_atomic` fixmap page (`OsConfig::fault_highmem`): Linux 4.14's FIXADDR_TOP
/// 0xffeff000 (FIXADDR_END 0xfff00000 less a page, arch/arm/include/asm/fixmap.h) less
/// `FIX_KMAP_BEGIN` (1) + 16 × `cpu` pages, 0xffefe000 − `cpu` × 64 KiB, on a 32-bit range
/// whose top quarter memory fills (the Cortex-A9's); in general the same offsets below the
/// top of the range `va_limit`, or below the top of a smaller memory (as `vectors_pages`).
/// The page stands for the slot's address only: the frame the slot maps is the fault's.
pub fn kmap_fixmap_page(va_limit: u64, memory_bytes: u64, cpu: usize) -> u64 {
    let quarter = (va_limit / 4).max(4096);
    let room = quarter.min(memory_bytes & !4095);
    room.saturating_sub(0x102000 + ((cpu as u64) << 16))
}

/// Most kernel pages `OsConfig::kernel_pages`, `kernel_return_pages`, `fault_kernel_pages`,
/// `migrate_kernel_pages`, `syscall_kernel_pages` and `tick_kernel_pages` may name together
/// (2 MiB of them).
pub const KERNEL_PAGES_MAX: u32 = 512;

/// The physical address of the `page`th page of the switch path (`OsConfig::kernel_pages`, then
/// `kernel_return_pages`):
/// 96 MiB below the top of memory (above the threads' frames, below seed 000's save areas 64
/// MiB below the top).
pub fn kernel_switch_page(memory_bytes: u64, page: u32) -> u64 {
    memory_bytes.saturating_sub(96 << 20) + page as u64 * 4096
}

/// The physical addresses of the `n` kernel pages from the `first`th (`kernel_switch_page`):
/// one kernel path's pages (`OsConfig::fault_kernel_page`, `migrate_kernel_page`, ...).
pub fn kernel_path_pages(memory_bytes: u64, first: u32, n: u32) -> impl Iterator<Item = u64> {
    (first..first + n).map(move |page| kernel_switch_page(memory_bytes, page))
}

/// The kernel's linear map of physical address `pa` (`System::kernel_touch`, and the
/// reference model's twin of it): as Linux maps its low memory at PAGE_OFFSET + pa in the top
/// quarter of the address space (ARM Linux's 3G/1G split: PAGE_OFFSET = 0xC0000000), here the
/// top quarter of the format's range `va_limit` (the engine's TLB keys hold no more bits);
/// physical addresses past a quarter of the range wrap. 4 KiB pages whose 8-byte descriptors
/// form one table just below the switch path's pages (`kernel_switch_page`). The model does
/// not fault a user access to the kernel's quarter: a trace that touches it shares the
/// kernel's entries.
pub fn kernel_linear(va_limit: u64, memory_bytes: u64, pa: u64) -> KernelPage {
    // (A range too small for a quarter of pages keeps one 4 KiB page's worth.)
    let quarter = (va_limit / 4).max(4096);
    let table = memory_bytes
        .saturating_sub(96 << 20)
        .saturating_sub(memory_bytes.div_ceil(4096) * 8);
    KernelPage {
        va: 3 * quarter + pa % quarter,
        descriptor: table + (pa >> 12) * 8,
    }
}

/// A kernel address and its page's descriptor (`kernel_linear`).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub struct KernelPage {
    pub va: u64,
    pub descriptor: u64,
}

/// Counters of OS events.
#[derive(Clone, Default, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct OsStats {
    pub context_switches: u64,
    /// Switches that changed the address space.
    pub address_space_switches: u64,
    pub asid_rollovers: u64,
    /// Full TLB flushes (per core) done by switches, rollovers and flush events.
    pub tlb_flushes: u64,
    pub cache_flushes: u64,
    pub cache_flush_cycles: u64,
    pub migrations: u64,
    pub shootdowns: u64,
    pub ipis: u64,
    pub switch_cycles: u64,
}

impl OsStats {
    /// The counts of `self` and `other` added (`Stats::then`, the inverse of `since`).
    pub fn plus(&self, other: &OsStats) -> OsStats {
        OsStats {
            context_switches: self.context_switches + other.context_switches,
            address_space_switches: self.address_space_switches + other.address_space_switches,
            asid_rollovers: self.asid_rollovers + other.asid_rollovers,
            tlb_flushes: self.tlb_flushes + other.tlb_flushes,
            cache_flushes: self.cache_flushes + other.cache_flushes,
            cache_flush_cycles: self.cache_flush_cycles + other.cache_flush_cycles,
            migrations: self.migrations + other.migrations,
            shootdowns: self.shootdowns + other.shootdowns,
            ipis: self.ipis + other.ipis,
            switch_cycles: self.switch_cycles + other.switch_cycles,
        }
    }

    /// The counts of `self` less those of `earlier` (a snapshot of the same run).
    pub fn since(&self, earlier: &OsStats) -> OsStats {
        OsStats {
            context_switches: self.context_switches - earlier.context_switches,
            address_space_switches: self.address_space_switches - earlier.address_space_switches,
            asid_rollovers: self.asid_rollovers - earlier.asid_rollovers,
            tlb_flushes: self.tlb_flushes - earlier.tlb_flushes,
            cache_flushes: self.cache_flushes - earlier.cache_flushes,
            cache_flush_cycles: self.cache_flush_cycles - earlier.cache_flush_cycles,
            migrations: self.migrations - earlier.migrations,
            shootdowns: self.shootdowns - earlier.shootdowns,
            ipis: self.ipis - earlier.ipis,
            switch_cycles: self.switch_cycles - earlier.switch_cycles,
        }
    }
}

/// What one job of a periodic task did (seed 003 Figs. 6.2–6.8 plot these per job).
#[derive(Clone, Default, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct JobStats {
    pub task: u32,
    pub job: u32,
    pub release: u64,
    pub start: u64,
    pub end: u64,
    /// Cycles the job executed (excluding preemptions).
    pub cycles: u64,
    pub references: u64,
    /// Misses per TLB level (in `Stats::tlb_levels` order).
    pub tlb_misses: Vec<u64>,
    pub walks: u64,
    pub deadline_missed: bool,
}
