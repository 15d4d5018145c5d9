//! The small amount of Linux the probe needs: anonymous mappings with THP control, CPU pinning,
//! a monotonic clock, and the x86 time-stamp counter. Everything unsafe about memory lives here.

use std::io;
use std::time::Instant;

pub const PAGE: usize = 4096;
pub const LINE: usize = 64;

/// An anonymous private mapping, unmapped on drop. Pages are faulted in only when touched, so a
/// large virtual span with few touched pages (strided chains) costs little memory.
pub struct Region {
    ptr: *mut u8,
    len: usize,
}

// The region is plain memory owned by one thread at a time.
unsafe impl Send for Region {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Thp {
    /// `MADV_NOHUGEPAGE`: every page is a 4 KiB page (what the capacity chases need).
    Never,
    /// `MADV_HUGEPAGE`: ask for transparent huge pages.
    Always,
}

impl Region {
    /// Maps `len` bytes (rounded up to pages), aligned to `align` bytes (a power of two ≥ 4096).
    pub fn new(len: usize, align: usize, thp: Thp) -> io::Result<Region> {
        // A huge page needs a whole aligned 2 MiB.
        let len = if thp == Thp::Always {
            len.div_ceil(2 << 20) * (2 << 20)
        } else {
            len.div_ceil(PAGE) * PAGE
        };
        let align = align.max(PAGE);
        let total = len + align;
        // SAFETY: anonymous mapping with no fixed address; checked for MAP_FAILED.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let addr = raw as usize;
        let aligned = (addr + align - 1) & !(align - 1);
        // Trim the slack so the region is exactly [aligned, aligned + len).
        unsafe {
            if aligned > addr {
                libc::munmap(raw, aligned - addr);
            }
            let end = aligned + len;
            let slack = addr + total - end;
            if slack > 0 {
                libc::munmap(end as *mut libc::c_void, slack);
            }
            let advice = match thp {
                Thp::Never => libc::MADV_NOHUGEPAGE,
                Thp::Always => libc::MADV_HUGEPAGE,
            };
            libc::madvise(aligned as *mut libc::c_void, len, advice);
        }
        Ok(Region {
            ptr: aligned as *mut u8,
            len,
        })
    }

    pub fn base(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Address of byte `off` (panics when outside: a probe bug, never user input).
    pub fn at(&self, off: usize) -> *mut u8 {
        assert!(
            off < self.len,
            "offset {off} outside region of {} bytes",
            self.len
        );
        // SAFETY: in bounds by the assert.
        unsafe { self.ptr.add(off) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: we own the mapping.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

/// CPUs this thread may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: plain sched_getaffinity into a zeroed set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins the calling thread to one CPU.
pub fn pin_to(cpu: usize) -> io::Result<()> {
    // SAFETY: plain sched_setaffinity with a set holding one CPU.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Restores an affinity mask.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPU the calling thread runs on right now.
pub fn current_cpu() -> usize {
    // SAFETY: no arguments.
    let c = unsafe { libc::sched_getcpu() };
    c.max(0) as usize
}

/// Monotonic nanoseconds since an arbitrary process-wide origin.
pub fn now_ns() -> u64 {
    thread_local! {
        static ORIGIN: Instant = Instant::now();
    }
    ORIGIN.with(|o| o.elapsed().as_nanos() as u64)
}

/// Time-stamp counter. On x86-64 the `rdtsc` instruction; elsewhere the monotonic clock in ns.
#[inline(always)]
pub fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        now_ns()
    }
}

/// Average load over the last minute, from /proc/loadavg (None when unreadable).
pub fn loadavg1() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Reads a small sysfs/procfs text file, trimmed.
pub fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Voluntary plus involuntary context switches of the calling thread so far.
pub fn context_switches() -> u64 {
    // SAFETY: getrusage fills a zeroed struct.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) != 0 {
            return 0;
        }
        (ru.ru_nvcsw + ru.ru_nivcsw) as u64
    }
}

use std::sync::atomic::{AtomicU64, Ordering};
static WINDOWS: AtomicU64 = AtomicU64::new(0);
static DISTURBED: AtomicU64 = AtomicU64::new(0);

/// Counts a timed window and whether it ran undisturbed (for the report's load note).
pub fn note_window(clean: bool) {
    WINDOWS.fetch_add(1, Ordering::Relaxed);
    if !clean {
        DISTURBED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs the timed window `measure` until one runs without the thread being switched out (a
/// window during which another process ran on this CPU measures the neighbour, not the TLB, and
/// comes back cold), up to 8 times; then keeps the fastest attempt. Counts every window.
pub fn undisturbed_window(mut measure: impl FnMut() -> f64) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..8 {
        let before = context_switches();
        let v = measure();
        let clean = context_switches() == before;
        note_window(clean);
        if clean {
            return v;
        }
        best = best.min(v);
    }
    best
}

/// (timed windows, windows re-run because the thread was switched out) since the last reset.
pub fn window_counts() -> (u64, u64) {
    (
        WINDOWS.load(Ordering::Relaxed),
        DISTURBED.load(Ordering::Relaxed),
    )
}

pub fn reset_window_counts() {
    WINDOWS.store(0, Ordering::Relaxed);
    DISTURBED.store(0, Ordering::Relaxed);
}

/// Best effort: raise this thread's scheduling priority (nice −10) so a neighbour's build
/// interrupts fewer timing windows. Returns whether it worked (needs CAP_SYS_NICE).
pub fn raise_priority() -> bool {
    // SAFETY: setpriority on our own thread id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, -10) == 0
    }
}

/// The set-up of a one-off measurement (the examples): pinned to the first CPU this thread may
/// run on, its priority raised where allowed (returned: whether it was).
pub fn pin_and_raise() -> io::Result<bool> {
    pin_to(allowed_cpus()[0])?;
    Ok(raise_priority())
}

/// Restores normal priority.
pub fn normal_priority() {
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 0);
    }
}
