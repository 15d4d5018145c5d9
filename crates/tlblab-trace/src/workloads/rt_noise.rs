//! OS noise (seed 003 §6.0.6): the pages other than a task's heap data that occupy 4 KiB DTLB
//! ways on every job and every preemption — "library calls and OS activities, such as
//! scheduling, interrupts, multi-level page tables" — and that the seed had to keep its colors
//! away from (and which made more than four tasks impossible to isolate, §6.0.9: "we ... lack
//! control for page allocation for code, stack and global variables").
//!
//! What a job of Alg. 4 touches besides its heap data, per release (lines 14-18): the
//! `gettimeofday` of the vDSO reads the kernel's time data in the vsyscall page; the PLT call
//! reads the program's GOT; the loop reads and writes the globals `release`/`period`/
//! `start_time_tN` in `.data`; glibc reads its own data (the mangled vDSO pointer); `nanosleep`
//! is a cancellation point and reads the thread's TCB (`struct pthread`), which glibc keeps at
//! the top of the thread's stack, where the job's frames also are. On every switch-in (a job
//! start or a resumption after a preemption) the task's code works on its stack again.
//!
//! The kernel side of those paths (entry, the timer interrupt, the scheduler, the kernel stack)
//! runs in the kernel's direct map and image, which x86-64 Linux maps with 2 MiB pages: they
//! use the large-page DTLB, not the 4 KiB one the seed colors. `kernel_pages` adds 4 KiB kernel
//! pages to every switch-in for kernels that map them small (none by default).
//!
//! Addresses: a non-PIE x86-64 executable linked by GNU ld (text at 0x400000, its data
//! segment's GOT and `.data` in the first pages above 0x600000), ASLR off as the seed had it
//! for the noisy-set procedure (§6.0.6), the vsyscall page at 0xffffffffff600000 (Linux 2.6.32;
//! simulated at its low-half alias with the same set bits, since the simulated page tables
//! cover the user half), glibc's writable data just below the loader, and 8 MiB thread stacks
//! (the default `RLIMIT_STACK`) mapped one below the other, so **all tasks' stack tops fall in
//! the same TLB set**. The seed gives no addresses; these are the layout of such a process, and
//! the sets they fall in are what the noisy-set procedure finds (`rt_noisy_sets`).

use super::gen::{ev, load, store, Record};
use crate::record::Event;

/// The GOT page of a non-PIE executable (GNU ld's data segment at 0x600000 + file offset).
pub const GOT_PAGE: u64 = 0x60_0000;
/// The `.data`/`.bss` page holding the task globals of Alg. 4.
pub const DATA_PAGE: u64 = 0x60_1000;
/// The vsyscall page (0xffffffffff600000), at its low-half alias (same VPN low bits).
pub const VSYSCALL_PAGE: u64 = 0x7fff_ff60_0000;
/// glibc's writable data page (`.data.rel.ro`/`.bss` of libc-2.12 below ld.so, ASLR off).
pub const LIBC_DATA_PAGE: u64 = 0x7fff_f7dd_3000;
/// The top page of the first thread's stack (TCB and the outer frames).
pub const STACK0_TOP_PAGE: u64 = 0x7fff_f7a0_b000;
/// glibc's default thread stack: `RLIMIT_STACK` = 8 MiB.
pub const STACK_SIZE: u64 = 8 << 20;
/// What one timer tick touches in 4 KiB pages (seed 003 §6.0.6 names "interrupts" among the OS
/// noise): Linux 2.6.32's local APIC timer interrupt (`smp_apic_timer_interrupt`,
/// arch/x86/kernel/apic/apic.c) first acknowledges it, `ack_APIC_irq` → `apic_write(APIC_EOI,
/// 0)`, which in xAPIC mode is `native_apic_mem_write`: a store through the uncached fixmap
/// page `FIX_APIC_BASE`, the page `rt_replay::LOCAL_APIC_EOI` names (its address and set there,
/// set 12 of the Xeon's 16). The tick's work (`hrtimer_interrupt` → `tick_sched_timer` →
/// `update_process_times`, `scheduler_tick`, the timer softirq) runs in the kernel image and the
/// direct map, 2 MiB pages that take no 4 KiB DTLB way, and the next event is programmed by
/// `lapic_next_event` → `apic_write(APIC_TMICT, ...)` through the same page. So a tick takes one
/// way of one set, a global entry that survives the tasks' switches. In x2APIC mode (with
/// interrupt remapping) these writes are MSRs and touch no page: the model is the xAPIC's, as
/// `rt_replay`'s. The page's own miss is the kernel's; it is counted in the job here, where PAPI's
/// default domain (user) counts only the task's misses it causes.
pub fn tick() -> [(u64, bool); 1] {
    [(super::rt_replay::LOCAL_APIC_EOI, true)]
}

/// Where the optional 4 KiB kernel pages of the entry path are simulated.
pub const KERNEL_PAGES: u64 = 0x7fff_fe00_0000;

/// The noise pages of one task set.
#[derive(Clone, Debug, Default)]
pub struct Noise {
    /// Pages every job touches before its data (reads and writes as Alg. 4 does them).
    pub per_job: Vec<(u64, bool)>,
    /// Per task, the pages touched on every switch-in (its stack top, with the TCB).
    pub per_switch: Vec<Vec<u64>>,
}

impl Noise {
    /// The noise of `tasks` tasks with `kernel_pages` small kernel pages on the entry path.
    /// `aslr_shift` moves the mmap-placed pages (libc, the stacks) down by that many bytes.
    pub fn new(tasks: usize, kernel_pages: u64, aslr_shift: u64) -> Self {
        let kernel: Vec<u64> = (0..kernel_pages).map(|k| KERNEL_PAGES + k * 4096).collect();
        let per_switch = (0..tasks)
            .map(|i| {
                let mut v = kernel.clone();
                v.push(stack_top(i) - aslr_shift);
                v
            })
            .collect();
        Noise {
            per_job: vec![
                (VSYSCALL_PAGE, false),
                (GOT_PAGE + 0xfe8, false),
                (DATA_PAGE + 0x40, true),
                (LIBC_DATA_PAGE - aslr_shift + 0x7a0, false),
            ],
            per_switch,
        }
    }
}

/// The top page of task `i`'s stack (threads created in task order).
pub fn stack_top(i: usize) -> u64 {
    STACK0_TOP_PAGE - i as u64 * STACK_SIZE
}

/// libpapi's `.data` page (`_papi_hwd`, the component table, and the perf_event component's
/// vector `_perf_event_vector` whose `read` pointer `_papi_hwi_read` calls). Assumed: the seed
/// gives no address; a shared library's writable segment lies at the top of its mapping, and with
/// randomization off the loader maps the executable's libraries top-down below ld.so, so libpapi's
/// data is taken to be just below libc's data page.
pub const LIBPAPI_DATA_PAGE: u64 = LIBC_DATA_PAGE - 0x2000;
/// libpapi's `.bss` page (`_papi_hwi_system_info`, whose `global_eventset_map` every
/// `PAPI_read` looks its EventSet up in, and `_papi_os_info`, which `bug_sync_read` reads).
pub const LIBPAPI_BSS_PAGE: u64 = LIBC_DATA_PAGE - 0x1000;
/// The main thread's `brk` heap (ASLR off: right after the executable's `.bss`), where
/// `PAPI_library_init` allocated the EventSet map's `dataSlotArray`.
pub const PAPI_MAP_PAGE: u64 = DATA_PAGE + 0x1000;

/// Where `PAPI_read`'s user side goes, for one task, split where the counters stop counting.
///
/// Seed 003 counted each job's DTLB misses with PAPI (§4.0.3, Alg. 3 reads "the PAPI counters"
/// around the measured accesses; §5's tasks the same way), so a job is bracketed by two reads.
/// PAPI 5.3 (papi-5-3-0-t, November 2013, the release of the seed's time) on Linux 2.6.32 reads
/// through its perf_event component: `PAPI_read` (src/papi.c) looks the EventSet up in
/// `_papi_hwi_system_info.global_eventset_map.dataSlotArray` (`_papi_hwi_lookup_EventSet`,
/// src/papi_internal.c), reads the EventSet (`EventSetInfo_t`), takes the thread's context
/// (`_papi_hwi_get_context`: `ESI->master->context[cidx]`) and calls `_papi_hwd[cidx]->read`,
/// `_pe_read` (src/components/perf_event/perf_event.c). On kernels before 2.6.33
/// (`bug_sync_read`) `_pe_read` stops the group leader (`ioctl(PERF_EVENT_IOC_DISABLE)`), reads
/// it with one `read()` into a stack buffer, stores the counts into `pe_ctl->counts`, and starts
/// it again (`PERF_EVENT_IOC_ENABLE`); `_papi_hwi_read` then copies each event's count through
/// `ESI->EventInfoArray[i].pos[0]` into the caller's values. The system calls' kernel side runs in
/// 2 MiB pages (the image and the direct map, as `tick`'s), and PAPI's default domain
/// (`PAPI_DOM_USER`) counts only user-mode misses. So what the counted window sees of a read is
/// its user side in 4 KiB pages: before the stop (`head`, counted at a job's end) and after the
/// start (`tail`, counted at a job's start); the counts' store (`stop`) falls between, uncounted.
#[derive(Clone, Debug, Default)]
pub struct PapiRead {
    /// References from `PAPI_read`'s entry to the counters' stop.
    pub head: Vec<(u64, bool)>,
    /// References while the counters are stopped (`pe_ctl->counts[i]` stored).
    pub stop: Vec<(u64, bool)>,
    /// References after the counters start again, to `PAPI_read`'s return.
    pub tail: Vec<(u64, bool)>,
}

impl PapiRead {
    /// PAPI's per-thread objects, allocated by the task's thread in its glibc arena in PAPI 5.3's
    /// order, and the references one `PAPI_read` of `PAPI_TLB_DM` makes to them. On the
    /// Sandy Bridge Xeon PAPI_TLB_DM is derived from two native events (DTLB_LOAD_MISSES and
    /// DTLB_STORE_MISSES), one group of two counters. Sizes are x86-64's with
    /// `PERF_EVENT_MAX_MPX_COUNTERS` = 64 (the counters' arrays are that long) and 2.6.32's
    /// 72-byte `perf_event_attr`; the two built-in components (perf_event, perf_event_uncore).
    /// `shift`: what address-space randomization moved down (the `mmap` base, libpapi with it)
    /// and up (the `brk` heap), in bytes.
    pub fn allocate(arena: &mut super::rt_glibc::GlibcArena, shift: (u64, u64)) -> Self {
        Self::allocate_at(arena, LIBC_DATA_PAGE - shift.0, PAPI_MAP_PAGE + shift.1)
    }

    /// `allocate` in a given layout: `libc_data`, glibc's writable data page (libpapi's `.bss`
    /// and `.data` are the two pages below it, as `LIBPAPI_BSS_PAGE`/`LIBPAPI_DATA_PAGE` are
    /// below `LIBC_DATA_PAGE`), and `map`, the page of the EventSet map's `dataSlotArray`.
    /// The replays of the captured programs place them in the native run's layout
    /// (`rt_replay::Replay::with_papi`).
    pub fn allocate_at(arena: &mut super::rt_glibc::GlibcArena, libc_data: u64, map: u64) -> Self {
        let (bss, data) = (
            libc_data - (LIBC_DATA_PAGE - LIBPAPI_BSS_PAGE),
            libc_data - (LIBC_DATA_PAGE - LIBPAPI_DATA_PAGE),
        );
        // allocate_thread (src/threads.c): ThreadInfo_t, context[] and running_eventset[] of
        // one pointer per component, then each component's context (pe_context_t, 24 bytes).
        let thread = arena.malloc(136);
        let contexts = arena.malloc(16);
        arena.malloc(16);
        let pe_ctx = arena.malloc(24);
        arena.malloc(24);
        // create_EventSet (src/papi_internal.c): the EventSetInfo_t (about 300 bytes with its
        // domain, overflow, multiplex, attach, cpu, profile and inherit parts).
        let esi = arena.malloc(304);
        // _papi_hwi_assign_eventset: the control state, pe_control_t (10 ints, then
        // events[64] of 120-byte pe_event_info_t, then counts[64]: 8,232 bytes), sw_stop,
        // hw_start, EventInfoArray (64 x 56-byte EventInfo_t), NativeInfoArray.
        let ctl = arena.malloc(8232);
        arena.malloc(512);
        arena.malloc(512);
        let info = arena.malloc(64 * 56);
        arena.malloc(64 * 24);
        let counts = ctl + 40 + 64 * 120;
        PapiRead {
            head: vec![
                (bss + 0x40, false),  // global_eventset_map
                (map + 0x10, false),  // dataSlotArray[EventSet]
                (esi, false),         // state, CmpIdx, master, ctl_state
                (thread + 24, false), // master->context
                (contexts, false),    // context[cidx]
                (data + 0x80, false), // _papi_hwd[cidx]->read
                (pe_ctx, false),      // pe_ctx->state
                (bss + 0x400, false), // _papi_os_info (bug_sync_read)
                (ctl, false),         // num_events, events[0] fds
            ],
            stop: vec![(counts, true), (counts + 8, true)],
            tail: vec![(esi + 8, false), (info, false), (info + 56, false)],
        }
    }

    /// Task `i`'s job boundary `mark` (`JobStart` or `JobEnd`) with its `PAPI_read` around it,
    /// if it has one: a start's read runs to its counters' restart before the job (`head`,
    /// `stop`) and its `tail` in it; an end's read counts its `head` in the job, its `stop` and
    /// `tail` after it (the seed's tasks read the counters before and after each job, §4.0.3).
    pub fn around(read: Option<&Self>, i: usize, mark: Event, out: &mut Vec<Record>) {
        let start = matches!(mark, Event::JobStart { .. });
        if let Some(p) = read {
            push_refs(i, &p.head, out);
            if start {
                push_refs(i, &p.stop, out);
            }
        }
        out.push(ev(mark));
        if let Some(p) = read {
            if !start {
                push_refs(i, &p.stop, out);
            }
            push_refs(i, &p.tail, out);
        }
    }
}

/// Task `i`'s 8-byte loads and stores of `refs` (address, is a store), in order.
pub(crate) fn push_refs(i: usize, refs: &[(u64, bool)], out: &mut Vec<Record>) {
    for &(a, w) in refs {
        out.push(if w {
            store(i as u32, a, 8)
        } else {
            load(i as u32, a, 8)
        });
    }
}
