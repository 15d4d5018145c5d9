//! The clock the throughput benchmarks read (trace decoding, the engine).

/// CPU time of the calling thread, in seconds. Unlike wall-clock time it leaves out time the
/// thread spent descheduled, which on a shared machine is the fairer basis for a rate.
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own and nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
