//! The records of a memory trace: accesses and the OS/program events between them.
//!
//! `Record` is `Copy` and carries no heap data (region names live in the trace header and are
//! referred to by index), so sources can fill reusable buffers with no allocation per record.

use serde::{Deserialize, Serialize};
use tlblab_types::{AccessKind, CoreId, ThreadId, VirtAddr};

/// One memory reference by one thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Access {
    pub thread: ThreadId,
    pub kind: AccessKind,
    pub vaddr: VirtAddr,
    /// Bytes referenced (1..=4096 in practice; an access may cross a page boundary).
    pub size: u32,
}

impl Access {
    #[inline]
    pub const fn new(thread: ThreadId, kind: AccessKind, vaddr: VirtAddr, size: u32) -> Self {
        Access {
            thread,
            kind,
            vaddr,
            size,
        }
    }
    #[inline]
    pub const fn load(vaddr: u64) -> Self {
        Access {
            thread: ThreadId(0),
            kind: AccessKind::Load,
            vaddr: VirtAddr(vaddr),
            size: 8,
        }
    }
}

/// The `from` of a `ContextSwitch` onto an idle core (the first time a thread is scheduled),
/// and the `to` of a switch that leaves the core idle.
pub const NO_THREAD: ThreadId = ThreadId(u32::MAX);

/// The kernel paths of a `KernelEntry` event.
pub mod kernel_entry {
    /// A system call (on ARM Linux the SVC exception: `vector_swi`, arch/arm/kernel/entry-common.S).
    pub const SYSCALL: u8 = 0;
    /// A timer tick (the local timer's interrupt: `__irq_usr`/`__irq_svc`, arch/arm/kernel/entry-armv.S).
    pub const TICK: u8 = 1;
    /// The largest `path` defined.
    pub const MAX: u8 = TICK;
}

/// Memory-protection bits of an mmap/mprotect event.
pub mod prot {
    pub const READ: u8 = 1;
    pub const WRITE: u8 = 2;
    pub const EXEC: u8 = 4;
    /// A global mapping (the kernel's): its TLB entries translate for every address space and
    /// survive ASID switches and rollovers. ARM Linux maps the kernel global (the nG bit clear,
    /// ARM ARM B3.9.1); x86 Linux without page-table isolation does too (the G bit set,
    /// Intel SDM Vol. 3A §4.10.2.4). `Mmap` and `MapShared` only.
    pub const GLOBAL: u8 = 8;
}

/// What a `Flush` event empties (bit set).
pub mod flush {
    /// Every TLB of the core (seed 000 §4.3 step 1: "flushing all data caches, including the TLB").
    pub const TLB: u8 = 1;
    /// The data caches of the core and the levels it shares (seed 000 §8.1 step 3 flushes caches
    /// but keeps the TLB).
    pub const CACHES: u8 = 2;
    /// The kernel's own flush for an address space it changes, on the thread's time: ARM Linux
    /// 2.4's `flush_cache_mm`/`flush_tlb_mm` at fork (`dup_mmap`), exec and exit (`exit_mmap`)
    /// on a machine with untagged TLBs and virtually indexed caches (seed 002 §2, §4.2). With
    /// this bit, `TLB` empties the core's TLBs and page-walk caches, `CACHES` only its virtually
    /// indexed caches, and the cycles are charged to the core. A technique that tags address
    /// spaces may defer it (fass: lazy cache flushing, seed 002 §4.2). `TLB` is optional:
    /// `flush_cache_range` over more than 32 KiB (munmap, mprotect, a `MAP_FIXED` mapping over
    /// another) cleans and invalidates the whole caches with `cpu_cache_clean_invalidate_all`
    /// (`MAX_AREA_SIZE`, arch/arm/mm/proc-sa110.S) and leaves the TLB to `flush_tlb_range`,
    /// which the `Munmap`/`Mprotect` event's own shootdown does. With no other bit it is no
    /// flush (what a technique leaves of a flush it defers).
    pub const ADDRESS_SPACE: u8 = 4;
    /// With `ADDRESS_SPACE` only: the core's virtually indexed instruction caches (a unified
    /// level on the data path too is not one), its data caches kept: the I-cache half of ARM
    /// Linux 2.4's `flush_cache_range` on a range of at most 32 KiB, whose data-cache half is
    /// a loop cleaning and invalidating the range's lines one by one (`flush_cache_range`
    /// passes the I-cache flag always: include/asm-arm/proc-armv/cache.h;
    /// `cpu_sa1100_cache_clean_invalidate_range` then invalidates the whole I-cache).
    pub const INSTR_CACHES: u8 = 8;
}

/// The region a `PhaseBegin` names to end the warm-up and begin the region of interest: the
/// engine snapshots every counter there and reports the difference (`System::begin_roi`).
/// Readers of instruction traces mark it after their warm-up instructions (ChampSim's
/// `--warmup-instructions`, `champsim::ChampSimOptions`); it is no phase of its own.
pub const ROI_REGION: u32 = u32::MAX;

/// The region of a sampled window's phase (`workloads::fast_forward`'s `window_phase`): the
/// last accesses of its warm-up and its measured part, inside which a technique's companion
/// threads may be asked to run (pt_baker's `in_windows`). Reported as the phase `window`.
pub const WINDOW_REGION: u32 = u32::MAX - 1;

/// Something that happened between accesses.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A thread begins, in the address space of `process`.
    ThreadStart {
        thread: ThreadId,
        process: u32,
    },
    ThreadExit {
        thread: ThreadId,
    },
    /// `process`'s address space is torn down (Linux's `exit_mmap` when its last thread
    /// exits): its translations are flushed from every core's TLBs (`flush_tlb_mm`; on ARMv7
    /// SMP one broadcast invalidate-by-ASID, TLBIASIDIS, `OsConfig::tlb_maintenance`). Its
    /// threads should have exited before (`ThreadExit`).
    ProcessExit {
        process: u32,
    },
    /// The kernel is entered on `process`'s hardware thread for something other than a
    /// demand-paging fault (the engine adds those itself, `OsConfig::fault_kernel_pages`):
    /// `path` says what for (`kernel_entry::SYSCALL`, `kernel_entry::TICK`). The path's kernel
    /// pages (`OsConfig::syscall_kernel_pages`, `tick_kernel_pages`) are touched through the
    /// core's data TLB levels as global mappings; with none configured it changes nothing.
    /// What a user-space capture leaves out (Lackey sees no kernel), added by its composer
    /// (`workloads::corun`) from the program's traced system calls and the timer.
    KernelEntry {
        process: u32,
        path: u8,
    },
    /// The scheduler switches core `core` from thread `from` to thread `to`.
    ContextSwitch {
        core: CoreId,
        from: ThreadId,
        to: ThreadId,
    },
    /// `thread` moves to `core`.
    Migrate {
        thread: ThreadId,
        core: CoreId,
    },
    /// `len` bytes at `start` become mapped in `process`'s address space; `page_shift` is the
    /// page size the mapping uses (12 = 4 KiB, 21 = 2 MiB, ...).
    Mmap {
        process: u32,
        start: VirtAddr,
        len: u64,
        prot: u8,
        page_shift: u8,
    },
    Munmap {
        process: u32,
        start: VirtAddr,
        len: u64,
    },
    Mprotect {
        process: u32,
        start: VirtAddr,
        len: u64,
        prot: u8,
    },
    /// A periodic task releases job `job` (real-time task sets, seed 003 §6).
    TaskRelease {
        task: u32,
        job: u32,
    },
    JobStart {
        task: u32,
        job: u32,
    },
    JobEnd {
        task: u32,
        job: u32,
    },
    /// A named region (name = header's region table entry `region`) spans `start..start+len`.
    Region {
        region: u32,
        start: VirtAddr,
        len: u64,
    },
    /// The program enters / leaves an annotated phase.
    PhaseBegin {
        region: u32,
    },
    PhaseEnd {
        region: u32,
    },
    /// Like `Mmap`, but the range maps shared object `object`: every process that maps the same
    /// object shares its frames (fork-shared text, `MAP_SHARED` memory; seed 002 §4.1 *extreme*).
    MapShared {
        process: u32,
        start: VirtAddr,
        len: u64,
        prot: u8,
        page_shift: u8,
        object: u32,
    },
    /// The program empties the TLBs and/or caches of `core` (`what` is a set of `flush::*` bits);
    /// the benchmarks of seed 000 (§4.3, §8.1, §8.2) do this between their steps.
    Flush {
        core: CoreId,
        what: u8,
    },
    /// The kernel's flush of part of `process`'s address space, `start..start+len`, on the
    /// thread's time: ARM Linux 2.4's `flush_cache_page`/`flush_tlb_page` at a copy-on-write
    /// fault (mm/memory.c `do_wp_page`, `break_cow`) and a short `flush_cache_range` at munmap
    /// and mprotect (`zap_page_range`, `change_protection`) on a machine with virtually indexed
    /// caches (seed 002 §2, §4.2). `what` (`flush::*` bits): `CACHES` cleans and invalidates the
    /// range's lines in the process's core's virtually indexed data caches one by one (the
    /// SA-1100's `cpu_sa1100_cache_clean_invalidate_range` below 32 KiB, arch/arm/mm/proc-sa110.S),
    /// `INSTR_CACHES` invalidates its virtually indexed instruction caches whole, `TLB`
    /// invalidates the range's TLB entries of that address space (`cpu_sa1100_tlb_invalidate_page`).
    /// The cycles are charged to the process's core. A technique that tags address spaces may
    /// defer the cache part (fass: lazy flushing, seed 002 §4.2).
    FlushRange {
        process: u32,
        start: VirtAddr,
        len: u64,
        what: u8,
    },
    /// `lock`: the translation of `page` in `process`'s address space is loaded and locked
    /// into the lockable TLB level of core `core` (`ALL_CORES`: of every core), as seed 004's
    /// lockdown does at the real-time program's start (§IV-V); otherwise it is unlocked there
    /// (it stays cached, now replaceable).
    TlbLock {
        process: u32,
        page: VirtAddr,
        core: CoreId,
        lock: bool,
    },
    /// `begin`: `thread`'s following references are independent of its outstanding loads
    /// (their addresses come from registers, not from a load still in flight: HPCC
    /// RandomAccess's `Table[ran & (TableSize-1)] ^= ran`, ran from its LFSR), so on a machine
    /// with memory-level parallelism (`timing.mlp`) a long miss among them occupies a miss slot
    /// instead of stalling the core; otherwise (the default, and what a capture carries:
    /// Lackey sees no dependences) they depend on them: the core first waits for every
    /// outstanding miss of its hardware thread, as it does at this event with `begin` false.
    /// On a machine without `timing.mlp` it changes nothing.
    Independent {
        thread: ThreadId,
        begin: bool,
    },
    /// `thread`'s next reference takes its address from the value its reference `back`
    /// references before it loaded (1: the reference just before; a register dataflow path
    /// from that load to this address, as tlblab's Valgrind tool tracks it with
    /// `--dependence=yes`). On a machine with `timing.mlp`, while the thread is marked
    /// independent, the reference issues no earlier than that load completes: the first-order
    /// model's "a load whose address comes from a miss in flight waits for it" for that one
    /// miss, where `Independent` with `begin` false waits for all of them. Otherwise it changes
    /// nothing.
    Depends {
        thread: ThreadId,
        back: u32,
    },
}

/// The `core` of a `TlbLock` event that means every core.
pub const ALL_CORES: CoreId = CoreId(u16::MAX);

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Record {
    Access(Access),
    Event(Event),
}

impl From<Access> for Record {
    #[inline]
    fn from(a: Access) -> Self {
        Record::Access(a)
    }
}
impl From<Event> for Record {
    #[inline]
    fn from(e: Event) -> Self {
        Record::Event(e)
    }
}
