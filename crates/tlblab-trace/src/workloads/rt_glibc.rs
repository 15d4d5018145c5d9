//! Where glibc's `malloc` puts a thread's buffers: the placement seed 003's `malloc` runs had
//! (§6.0.5, §6.0.8, §6.0.9), as a model of the allocator rather than of its results.
//!
//! The seed's tasks are pthreads that allocate in their own init (Alg. 4, line 12), so each
//! task's `malloc` calls are served by a *thread arena* (glibc `arena.c`: `arena_get2` creates a
//! new arena per thread while there are fewer than 8 × cores; the seed's Xeon has 16 cores).
//! A thread arena's first heap is an `mmap` aligned to `HEAP_MAX_SIZE` = 2 ×
//! `DEFAULT_MMAP_THRESHOLD_MAX` = 64 MiB on 64-bit (`new_heap`), so **every task's arena starts
//! at the same TLB set**: with a 16-set DTLB (set = VPN mod 16) two tasks' n-th buffers land in
//! the same set, which is why `malloc` gives inter-task conflicts the seed saw vary run to run
//! only through which pages each task chose.
//!
//! Inside a heap: a `heap_info` and the arena's `malloc_state` come first, then the chunks in
//! call order. A chunk is the request plus an 8-byte size field rounded up to 16
//! (`request2size`, `SIZE_SZ` = 8, `MALLOC_ALIGNMENT` = 16), so `malloc(4096)` calls land
//! 4112 bytes apart and a 4 KiB buffer straddles two pages. Requests of at least the `mmap`
//! threshold (`DEFAULT_MMAP_THRESHOLD_MIN` = 128 KiB) get a mapping of their own, page-aligned,
//! with the user pointer 16 bytes in (`sysmalloc`). The main thread's `brk` heap is not used by
//! the seed's tasks (they allocate in their threads).

/// 64 MiB: glibc `HEAP_MAX_SIZE` on 64-bit (`2 * DEFAULT_MMAP_THRESHOLD_MAX`, 2 × 32 MiB).
pub const HEAP_MAX_SIZE: u64 = 64 << 20;
/// 128 KiB: glibc `DEFAULT_MMAP_THRESHOLD_MIN`, the initial `M_MMAP_THRESHOLD`.
pub const MMAP_THRESHOLD: u64 = 128 << 10;
/// Offset of the first chunk's user pointer in a thread arena's heap: `sizeof(heap_info)` (32)
/// + `sizeof(struct malloc_state)` (2192 on x86-64 glibc 2.12, the seed's 2014 RHEL 6 era:
///   mutex, flags, 10 fastbins, top, last_remainder, 254 bin pointers, binmap, next, next_free,
///   system_mem, max_system_mem), rounded to 16, + the 16-byte chunk header. Later glibc
///   versions put the tcache (0x290 bytes) first; the seed's did not have one.
pub const FIRST_USER_OFFSET: u64 = 0x8c0;

/// `request2size`: the chunk a request of `n` bytes takes (at least `MINSIZE` = 32).
pub fn chunk_size(n: u64) -> u64 {
    ((n + 8 + 15) & !15).max(32)
}

/// One thread arena (and the thread's large `mmap`ed chunks), placing requests in call order.
pub struct GlibcArena {
    /// Next chunk's user pointer in the arena heap.
    next: u64,
    /// Where the next `mmap`ed chunk ends (they are handed out top-down, as the kernel does).
    mmap_top: u64,
}

impl GlibcArena {
    /// The arena of the `index`-th thread to allocate: heaps are 64 MiB-aligned and handed out
    /// top-down below `top` (the kernel's top-down `mmap`; `new_heap` maps 2 × HEAP_MAX and
    /// trims it to an aligned HEAP_MAX). Large chunks come from `mmap_top`.
    pub fn new(top: u64, index: u64, mmap_top: u64) -> Self {
        let heap = (top & !(HEAP_MAX_SIZE - 1)) - (index + 1) * HEAP_MAX_SIZE;
        GlibcArena {
            next: heap + FIRST_USER_OFFSET,
            mmap_top,
        }
    }

    /// The user pointer `malloc(n)` returns.
    pub fn malloc(&mut self, n: u64) -> u64 {
        if n >= MMAP_THRESHOLD {
            let len = (n + 16).div_ceil(4096) * 4096;
            self.mmap_top -= len + 4096; // the kernel leaves no gap; one guard page keeps mappings apart here
            return self.mmap_top + 16;
        }
        let p = self.next;
        self.next += chunk_size(n);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sized_requests_land_4112_bytes_apart_from_the_arena_start() {
        let mut a = GlibcArena::new(0x7fff_f000_0000, 0, 0x7fff_0000_0000);
        let p0 = a.malloc(4096);
        let p1 = a.malloc(4096);
        assert_eq!(p0 % HEAP_MAX_SIZE, FIRST_USER_OFFSET);
        assert_eq!(p1 - p0, 4112);
        assert_eq!(chunk_size(24), 32);
        assert_eq!(chunk_size(1), 32);
    }

    #[test]
    fn two_threads_arenas_start_in_the_same_tlb_set() {
        let a = GlibcArena::new(0x7fff_f000_0000, 0, 0).next;
        let b = GlibcArena::new(0x7fff_f000_0000, 1, 0).next;
        assert_ne!(a, b);
        assert_eq!((a >> 12) % 16, (b >> 12) % 16);
    }

    #[test]
    fn large_requests_get_their_own_page_aligned_mapping() {
        let mut a = GlibcArena::new(0x7fff_f000_0000, 0, 0x7fff_0000_0000);
        let p = a.malloc(256 << 10);
        assert_eq!(p % 4096, 16);
        let q = a.malloc(100);
        assert_eq!(q % HEAP_MAX_SIZE, FIRST_USER_OFFSET);
    }
}
