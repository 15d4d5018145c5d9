//! The host prefetch hint: the run loop's (tlblab-core `simd`) and the workload generators'
//! whose own state is too big for the host's caches (gapbs_bc's BFS over a scale-24 graph).

/// Asks the host to bring the cache line of `x` into its caches (a no-op off x86-64). A hint:
/// it never faults and changes nothing the program can observe.
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    prefetch_at(x as *const T);
}

/// `prefetch` of the host line at `p`, which may be past the end of its allocation (a hint
/// never faults): for a run ahead in a slice.
#[inline(always)]
pub fn prefetch_at<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint and never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
