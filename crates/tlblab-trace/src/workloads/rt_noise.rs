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
