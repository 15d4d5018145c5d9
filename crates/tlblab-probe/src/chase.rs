//! Dependent pointer chases: the one instrument behind every data-TLB number.
//!
//! A chain has one element per page (each on a different cache line, rotating through the 64
//! lines of a page so the L1D sets are evenly used; lmbench `tlb_initialize` and the Chips and Cheese
//! TLB test do the same) or, as the *control*, the same number of elements packed 64 to a page.
//! Both have the same data footprint; the control's TLB footprint is 64× smaller, so the difference
//! between the two is the translation cost (as lmbench 3's `tlb.c` times a chase over one line of each page against the same lines in few pages,
//! `compute_times`). Each load's address depends on
//! the previous load, so the out-of-order core cannot overlap misses and ns/access is a latency.

use crate::sys::{now_ns, Region, Thp, LINE, PAGE};
use std::hint::black_box;
use tlblab_types::rng::SplitMix64;

/// Visiting order of the elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Element 0, 1, 2, … cyclically: exact LRU-style cliffs at a level's capacity.
    Sequential,
    /// A random cyclic permutation (seeded): defeats next-page prefetchers.
    Random(u64),
    /// Windows of `window` consecutive elements, each visited whole in a random order before
    /// the next, the windows in a random order (seeded): with [`Layout::Packed`], a page is
    /// entered once for its 64 lines (`measure::memory`).
    Windowed { seed: u64, window: usize },
}

/// Where the elements of a chain live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One element per page, pages `stride` pages apart.
    PerPage { stride: usize },
    /// The control: 64 elements per page, consecutive pages.
    Packed,
}

/// Byte offset of element `i` in the region.
pub fn element_offset(layout: Layout, i: usize) -> usize {
    match layout {
        Layout::PerPage { stride } => i * stride * PAGE + ((i + (i >> 6)) & 63) * LINE,
        Layout::Packed => (i / 64) * PAGE + (i % 64) * LINE,
    }
}

/// Bytes a chain of `n` elements spans.
pub fn span_bytes(layout: Layout, n: usize) -> usize {
    if n == 0 {
        return PAGE;
    }
    element_offset(layout, n - 1) / PAGE * PAGE + PAGE
}

/// The visiting sequence of `n` elements.
pub fn visit_order(order: Order, n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    match order {
        Order::Sequential => {}
        Order::Random(seed) => {
            if n > 2 {
                // Keep element 0 first; shuffle the rest: a uniformly random cycle through all n.
                let mut rng =
                    SplitMix64::new(seed ^ (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                rng.shuffle(&mut v[1..]);
            }
        }
        Order::Windowed { seed, window } => {
            let window = window.max(1);
            let mut rng = SplitMix64::new(seed ^ (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut windows: Vec<usize> = (0..n.div_ceil(window)).collect();
            rng.shuffle(&mut windows);
            v.clear();
            for w in windows {
                let start = v.len();
                v.extend(w * window..((w + 1) * window).min(n));
                rng.shuffle(&mut v[start..]);
            }
        }
    }
    v
}

/// Writes the next-pointers of a chain into `region` and returns the address of its first element.
/// Writing faults in every page the chain touches.
pub fn build(region: &Region, layout: Layout, order: Order, n: usize) -> *const usize {
    assert!(n >= 1);
    assert!(
        span_bytes(layout, n) <= region.len(),
        "chain does not fit its region"
    );
    let seq = visit_order(order, n);
    for k in 0..n {
        let here = region.at(element_offset(layout, seq[k])) as *mut usize;
        let next = region.at(element_offset(layout, seq[(k + 1) % n])) as usize;
        // SAFETY: in bounds (checked by `at`), aligned to 64 bytes.
        unsafe { here.write_volatile(next) };
    }
    region.at(element_offset(layout, seq[0])) as *const usize
}

/// Writes a chain with one element on each of `pages` (page numbers within `region`; element `i`
/// on line `(i + i/64) mod 64` of its page, as [`Layout::PerPage`] does) in a random cyclic
/// order, and returns its first element.
pub fn build_on_pages(region: &Region, pages: &[usize], seed: u64) -> *const usize {
    assert!(!pages.is_empty());
    let at = |i: usize| region.at(pages[i] * PAGE + ((i + (i >> 6)) & 63) * LINE);
    let seq = visit_order(Order::Random(seed), pages.len());
    for k in 0..seq.len() {
        let here = at(seq[k]) as *mut usize;
        let next = at(seq[(k + 1) % seq.len()]) as usize;
        // SAFETY: in bounds (checked by `at`), aligned to 64 bytes.
        unsafe { here.write_volatile(next) };
    }
    at(seq[0]) as *const usize
}

/// Writes `lanes` independent cyclic chains that together hold the `n` elements, and returns
/// their first elements. Lane `j` takes every `lanes`-th element of the visiting sequence from
/// the `j`-th on, so following all lanes in lockstep ([`time_lanes`]) visits the elements in the
/// same cyclic order as one chain would (exactly when `lanes` divides `n`; otherwise each
/// element's reuse distance is within `lanes` of `n`), only `lanes` loads at a time.
pub fn build_lanes(
    region: &Region,
    layout: Layout,
    order: Order,
    n: usize,
    lanes: usize,
) -> Vec<*const usize> {
    let lanes = lanes.clamp(1, n.max(1));
    if lanes == 1 {
        return vec![build(region, layout, order, n)];
    }
    assert!(
        span_bytes(layout, n) <= region.len(),
        "chain does not fit its region"
    );
    let seq = visit_order(order, n);
    (0..lanes)
        .map(|j| {
            let mine: Vec<usize> = seq.iter().copied().skip(j).step_by(lanes).collect();
            for k in 0..mine.len() {
                let here = region.at(element_offset(layout, mine[k])) as *mut usize;
                let next = region.at(element_offset(layout, mine[(k + 1) % mine.len()])) as usize;
                // SAFETY: in bounds (checked by `at`), aligned to 64 bytes.
                unsafe { here.write_volatile(next) };
            }
            region.at(element_offset(layout, mine[0])) as *const usize
        })
        .collect()
}

/// Follows `steps` next-pointers in each of `L` independent chains, in lockstep; returns where
/// each stopped. The lanes' loads do not depend on each other, so up to `L` translations (and
/// walks) are in flight at once.
///
/// # Safety
/// Each of `ps` must start a cyclic chain built by [`build_lanes`] in a live region.
#[inline(never)]
unsafe fn follow_lanes<const L: usize>(mut ps: [*const usize; L], steps: u64) -> [*const usize; L] {
    for _ in 0..steps.div_ceil(4) {
        for _ in 0..4 {
            for p in ps.iter_mut() {
                *p = p.read_volatile() as *const usize;
            }
        }
    }
    ps
}

/// Times lanes built by [`build_lanes`] like [`time_chain`] times one chain (warm-up of two
/// cycles, windows switched out re-run): ns per access over all lanes, a throughput, not a
/// latency. Why lanes: a pass over N pages then takes a fraction of the time, so fewer foreign
/// entries (another hardware thread's, the kernel's) enter the TLB between two visits of a page.
///
/// # Safety
/// `starts` must come from [`build_lanes`] with `n` elements in a region that is still mapped.
pub unsafe fn time_lanes(starts: &[*const usize], n: usize, window_ns: u64) -> f64 {
    match starts.len() {
        // SAFETY: the caller's contract.
        1 => unsafe { time_chain(starts[0], n, window_ns) },
        2 => unsafe { time_lanes_k::<2>(starts, n, window_ns) },
        4 => unsafe { time_lanes_k::<4>(starts, n, window_ns) },
        8 => unsafe { time_lanes_k::<8>(starts, n, window_ns) },
        // `measure::mlp`'s counts, up to where any core's miss buffers are full.
        12 => unsafe { time_lanes_k::<12>(starts, n, window_ns) },
        16 => unsafe { time_lanes_k::<16>(starts, n, window_ns) },
        24 => unsafe { time_lanes_k::<24>(starts, n, window_ns) },
        32 => unsafe { time_lanes_k::<32>(starts, n, window_ns) },
        k => panic!("time_lanes: {k} lanes (1, 2, 4, 8, 12, 16, 24 or 32 supported)"),
    }
}

unsafe fn time_lanes_k<const L: usize>(starts: &[*const usize], n: usize, window_ns: u64) -> f64 {
    crate::sys::undisturbed_window(|| {
        let mut ps = [std::ptr::null::<usize>(); L];
        ps.copy_from_slice(starts);
        // Two cycles of warm-up, then chunks of at least 16 Ki accesses until the window is over.
        let per_lane = (n as u64).div_ceil(L as u64);
        // SAFETY: the caller's contract.
        ps = unsafe { follow_lanes(ps, (2 * per_lane).max(4096 / L as u64)) };
        let chunk = per_lane.max(16_384 / L as u64);
        let mut total = 0u64;
        let t0 = now_ns();
        let mut t1;
        loop {
            // SAFETY: the caller's contract.
            ps = unsafe { follow_lanes(ps, chunk) };
            total += chunk.div_ceil(4) * 4 * L as u64;
            t1 = now_ns();
            if t1 - t0 >= window_ns {
                break;
            }
        }
        black_box(ps);
        (t1 - t0) as f64 / total as f64
    })
}

/// Follows `count` (rounded up to 16) next-pointers from `p`; returns where it stopped.
///
/// # Safety
/// `p` must start a cyclic chain built by [`build`] in a live region.
#[inline(never)]
pub unsafe fn follow(mut p: *const usize, count: u64) -> *const usize {
    let mut left = count.div_ceil(16);
    while left > 0 {
        // 16 dependent loads per trip keep the loop overhead off the measured latency.
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        p = p.read_volatile() as *const usize;
        left -= 1;
    }
    p
}

/// Times a chain: warms it up (two full cycles), then follows it in chunks until `window_ns` have
/// passed. Returns ns per access.
///
/// A window during which the thread was switched out (another process ran on this CPU) measures
/// the neighbour, not the TLB, and comes back cold; such windows are detected with the thread's
/// context-switch counters and re-run, up to 8 times (then the fastest attempt is kept).
///
/// # Safety
/// `start` must start a cyclic chain of `n` elements built by [`build`] in a region that is still
/// mapped.
pub unsafe fn time_chain(start: *const usize, n: usize, window_ns: u64) -> f64 {
    // SAFETY: the caller's contract.
    crate::sys::undisturbed_window(|| unsafe { time_window(start, n, window_ns) })
}

unsafe fn time_window(start: *const usize, n: usize, window_ns: u64) -> f64 {
    let mut p = follow(start, (2 * n as u64).max(4096));
    let chunk = (n as u64).max(16_384).div_ceil(16) * 16;
    let mut total = 0u64;
    let t0 = now_ns();
    let mut t1;
    loop {
        p = follow(p, chunk);
        total += chunk;
        t1 = now_ns();
        if t1 - t0 >= window_ns {
            break;
        }
    }
    black_box(p);
    (t1 - t0) as f64 / total as f64
}

/// A chain with its own memory, for one-off measurements.
pub struct OwnedChain {
    region: Region,
    start: *const usize,
    pub n: usize,
}

impl OwnedChain {
    pub fn new(layout: Layout, order: Order, n: usize, thp: Thp) -> std::io::Result<OwnedChain> {
        let region = Region::new(span_bytes(layout, n), 2 << 20, thp)?;
        let start = build(&region, layout, order, n);
        Ok(OwnedChain { region, start, n })
    }

    pub fn time(&self, window_ns: u64) -> f64 {
        // SAFETY: the chain lives in `self.region`.
        unsafe { time_chain(self.start, self.n, window_ns) }
    }

    pub fn start(&self) -> *const usize {
        self.start
    }

    pub fn region(&self) -> &Region {
        &self.region
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_page_elements_rotate_through_all_lines() {
        let lines: std::collections::HashSet<usize> = (0..64)
            .map(|i| element_offset(Layout::PerPage { stride: 1 }, i) % PAGE / LINE)
            .collect();
        assert_eq!(lines.len(), 64);
        assert_eq!(element_offset(Layout::PerPage { stride: 3 }, 2) / PAGE, 6);
    }

    #[test]
    fn packed_control_uses_n_over_64_pages() {
        assert_eq!(span_bytes(Layout::Packed, 128), 2 * PAGE);
        assert_eq!(span_bytes(Layout::Packed, 129), 3 * PAGE);
    }

    #[test]
    fn random_order_is_one_cycle_through_every_element() {
        let v = visit_order(Order::Random(7), 1000);
        let mut s = v.clone();
        s.sort();
        assert_eq!(s, (0..1000).collect::<Vec<_>>());
        assert_eq!(v[0], 0);
        assert_ne!(v, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_built_chain_visits_every_element_and_returns() {
        let c = OwnedChain::new(
            Layout::PerPage { stride: 2 },
            Order::Random(1),
            100,
            Thp::Never,
        )
        .unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut p = c.start();
        for _ in 0..100 {
            seen.insert(p as usize);
            p = unsafe { p.read() as *const usize };
        }
        assert_eq!(p, c.start());
        assert_eq!(seen.len(), 100);
        assert!(c.time(100_000) > 0.0);
    }
}
