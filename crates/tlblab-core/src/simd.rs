//! The host prefetch hint the run loop uses. (The set search is in `tags`.)

/// Asks the host to bring the cache line of `x` into its caches (a no-op off x86-64). A hint:
/// it never faults and changes nothing the program can observe.
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint and never faults; `x` is a valid reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch(
            (x as *const T).cast::<i8>(),
            std::arch::x86_64::_MM_HINT_T0,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
