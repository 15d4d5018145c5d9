//! Simulated physical memory: a frame allocator with a placement policy.
//!
//! Data pages and page-table pages both come from here, so where the OS puts page tables decides
//! which cache sets their entries compete for — the effect PT-Baker (seed 001) works on.
//!
//! Policies (all seeded, deterministic):
//! - `sequential`: the lowest free frame run of the right alignment (a freshly booted machine).
//! - `random`: a uniformly random free, aligned frame (an aged machine with shuffled free lists).
//! - `fragmented`: like `sequential`, but a `fragmentation` fraction of memory is held by others
//!   in random 4 KiB frames, so large aligned runs are scarce and huge-page allocations can fail
//!   (the system-aging scenario of seed 001 §5.1).
//! - `clustered`: a 4 KiB frame is the one after the previous 4 KiB frame handed out with
//!   probability `consecutive` (when free), else placed as `random` places it; larger pages as
//!   `random`. A guest OS hours after boot, whose free lists hand a program runs of
//!   consecutive frames scattered over its memory (Linux's buddy allocator and per-CPU lists;
//!   measured from `/proc/self/pagemap`: docs/host-predict.md, "A gap in the model").

pub mod colored;

use serde::{Deserialize, Serialize};
use tlblab_types::{PageSize, Pfn, SplitMix64};

#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize, Default)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Placement {
    #[default]
    Sequential,
    Random,
    Fragmented {
        /// Fraction (0..1) of frames held by other users.
        fragmentation: f64,
    },
    Clustered {
        /// Probability (0..=1) that a 4 KiB frame follows the previous one.
        consecutive: f64,
    },
}

#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Size of simulated physical memory in bytes.
    #[serde(default = "default_memory_bytes")]
    pub bytes: u64,
    /// Cycles for a reference served by main memory.
    pub latency: u64,
    #[serde(default)]
    pub placement: Placement,
    #[serde(default)]
    pub source: String,
}

fn default_memory_bytes() -> u64 {
    64 << 30
}

impl MemoryConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.bytes < (4 << 20) || !self.bytes.is_multiple_of(4 << 10) {
            return Err(format!(
                "memory.bytes: expected a multiple of 4096 of at least 4 MiB, found {}",
                self.bytes
            ));
        }
        if let Placement::Fragmented { fragmentation } = self.placement {
            if !(0.0..0.95).contains(&fragmentation) {
                return Err(format!(
                    "memory.placement.fragmentation: expected 0 ≤ f < 0.95, found {fragmentation}"
                ));
            }
        }
        if let Placement::Clustered { consecutive } = self.placement {
            if !(0.0..=1.0).contains(&consecutive) {
                return Err(format!(
                    "memory.placement.consecutive: expected 0 ≤ p ≤ 1, found {consecutive}"
                ));
            }
        }
        Ok(())
    }
}

/// Hands out 4 KiB frames and aligned runs of them. A bitmap tracks used frames.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct FrameAllocator {
    frames: u64,
    used: Vec<u64>,
    placement: Placement,
    rng: SplitMix64,
    /// Next frame to try for sequential placement, per page size (clustered: `cursor[0]`, the
    /// frame after the last 4 KiB frame handed out).
    cursor: [u64; 6],
    allocated: u64,
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub struct OutOfMemory {
    pub size: PageSize,
}

impl FrameAllocator {
    pub fn new(config: &MemoryConfig, seed: u64) -> FrameAllocator {
        let frames = config.bytes >> 12;
        let mut a = FrameAllocator {
            frames,
            used: vec![0; frames.div_ceil(64) as usize],
            placement: config.placement,
            rng: SplitMix64::derive(seed, "memory.frames"),
            cursor: [0; 6],
            allocated: 0,
        };
        // Frame 0 is never handed out: a zero PFN in a descriptor then always means "none".
        a.mark(0, 1);
        if let Placement::Fragmented { fragmentation } = config.placement {
            let held = (frames as f64 * fragmentation) as u64;
            let mut n = 0;
            while n < held {
                let f = a.rng.below(frames);
                if !a.is_used(f) {
                    a.mark(f, 1);
                    n += 1;
                }
            }
        }
        a.allocated = 0;
        a
    }

    #[inline]
    fn is_used(&self, f: u64) -> bool {
        self.used[(f / 64) as usize] >> (f % 64) & 1 == 1
    }

    fn mark(&mut self, f: u64, n: u64) {
        for x in f..f + n {
            self.used[(x / 64) as usize] |= 1 << (x % 64);
        }
        self.allocated += n;
    }

    fn run_free(&self, f: u64, n: u64) -> bool {
        f + n <= self.frames && (f..f + n).all(|x| !self.is_used(x))
    }

    /// Allocates one page of `size` (an aligned run of `size.frames()` frames).
    #[inline]
    pub fn alloc(&mut self, size: PageSize) -> Result<Pfn, OutOfMemory> {
        // Nearly every allocation (a 4 KiB page's first touch, a table) under sequential
        // placement takes the frame at the cursor, free: taken here as the loop below takes
        // it (`run_free` of one frame, `mark`), without its division and loops (~75
        // instructions a first touch before, callgrind, zen3 full model on a random stream).
        if size == PageSize::Size4K
            && !matches!(
                self.placement,
                Placement::Random | Placement::Clustered { .. }
            )
        {
            let f = self.cursor[0];
            if f < self.frames && !self.is_used(f) {
                self.cursor[0] = f + 1;
                self.used[(f / 64) as usize] |= 1 << (f % 64);
                self.allocated += 1;
                return Ok(Pfn(f));
            }
        }
        self.alloc_searching(size)
    }

    /// `alloc` by the placement's search.
    fn alloc_searching(&mut self, size: PageSize) -> Result<Pfn, OutOfMemory> {
        let n = size.frames();
        let runs = self.frames / n;
        match self.placement {
            Placement::Sequential | Placement::Fragmented { .. } => {
                let c = &mut self.cursor[size.index()];
                let start = *c;
                let mut r = start;
                while r < runs {
                    if self.run_free(r * n, n) {
                        self.cursor[size.index()] = r + 1;
                        self.mark(r * n, n);
                        return Ok(Pfn(r * n));
                    }
                    r += 1;
                }
                // Wrap around once (frames freed below the cursor are not tracked; we never free).
                for r in 0..start.min(runs) {
                    if self.run_free(r * n, n) {
                        self.cursor[size.index()] = r + 1;
                        self.mark(r * n, n);
                        return Ok(Pfn(r * n));
                    }
                }
                Err(OutOfMemory { size })
            }
            Placement::Clustered { consecutive } => {
                // One draw a 4 KiB frame decides whether it follows the previous one.
                if size == PageSize::Size4K && self.rng.next_f64() < consecutive {
                    let f = self.cursor[0];
                    if self.run_free(f, 1) {
                        self.mark(f, 1);
                        self.cursor[0] = f + 1;
                        return Ok(Pfn(f));
                    }
                }
                let got = self.alloc_random(size)?;
                if size == PageSize::Size4K {
                    self.cursor[0] = got.0 + 1;
                }
                Ok(got)
            }
            Placement::Random => self.alloc_random(size),
        }
    }

    /// A uniformly random free, aligned run for a page of `size`.
    fn alloc_random(&mut self, size: PageSize) -> Result<Pfn, OutOfMemory> {
        let n = size.frames();
        let runs = self.frames / n;
        // Random probing, then a linear scan from a random start as a fallback, so a nearly
        // full memory still finds its last free runs deterministically.
        for _ in 0..64 {
            let r = self.rng.below(runs);
            if self.run_free(r * n, n) {
                self.mark(r * n, n);
                return Ok(Pfn(r * n));
            }
        }
        let start = self.rng.below(runs);
        for i in 0..runs {
            let r = (start + i) % runs;
            if self.run_free(r * n, n) {
                self.mark(r * n, n);
                return Ok(Pfn(r * n));
            }
        }
        Err(OutOfMemory { size })
    }

    /// Frames handed out so far (4 KiB units).
    pub fn allocated_frames(&self) -> u64 {
        self.allocated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(placement: Placement) -> MemoryConfig {
        MemoryConfig {
            bytes: 64 << 20,
            latency: 100,
            placement,
            source: String::new(),
        }
    }

    #[test]
    fn sequential_hands_out_consecutive_frames_after_frame_zero() {
        let mut a = FrameAllocator::new(&cfg(Placement::Sequential), 1);
        assert_eq!(a.alloc(PageSize::Size4K).unwrap(), Pfn(1));
        assert_eq!(a.alloc(PageSize::Size4K).unwrap(), Pfn(2));
        assert_eq!(a.alloc(PageSize::Size2M).unwrap(), Pfn(512));
    }

    #[test]
    fn given_any_placement_the_cursor_fast_path_hands_out_what_the_search_does() {
        // `alloc` takes a free frame at the 4 KiB cursor itself; `alloc_searching` is the
        // placement's search alone. Mixed sizes move the cursors past each other, fragmented
        // memory makes the cursor's frame taken, and 64 MiB runs out: every answer the same.
        for placement in [
            Placement::Sequential,
            Placement::Fragmented { fragmentation: 0.3 },
            Placement::Random,
            Placement::Clustered { consecutive: 0.75 },
        ] {
            let mut fast = FrameAllocator::new(&cfg(placement), 5);
            let mut search = FrameAllocator::new(&cfg(placement), 5);
            let mut rng = tlblab_types::SplitMix64::new(11);
            for i in 0..20_000 {
                let size = match rng.below(16) {
                    0 => PageSize::Size2M,
                    1 | 2 => PageSize::Size64K,
                    _ => PageSize::Size4K,
                };
                let (a, b) = (fast.alloc(size), search.alloc_searching(size));
                assert_eq!(
                    a.as_ref().ok(),
                    b.as_ref().ok(),
                    "{placement:?}: allocation {i} of {size:?}"
                );
                assert_eq!(fast.allocated_frames(), search.allocated_frames());
            }
        }
    }

    #[test]
    fn random_frames_are_distinct_and_reproducible() {
        let mut a = FrameAllocator::new(&cfg(Placement::Random), 9);
        let mut b = FrameAllocator::new(&cfg(Placement::Random), 9);
        let xs: Vec<_> = (0..1000)
            .map(|_| a.alloc(PageSize::Size4K).unwrap())
            .collect();
        let ys: Vec<_> = (0..1000)
            .map(|_| b.alloc(PageSize::Size4K).unwrap())
            .collect();
        assert_eq!(xs, ys);
        let mut s = xs.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), 1000);
    }

    #[test]
    fn clustered_frames_follow_their_predecessor_as_often_as_the_probability_says() {
        // n allocations of 4 KiB in 8 GiB (2^21 frames, so that the frame after the previous
        // one is taken already only 1 time in 256 at most): each after the first follows its
        // predecessor with probability p (the draw), or by chance when the random frame lands
        // there (1 in 2^21: negligible). Binomial: mean (n-1) p, standard deviation
        // sqrt((n-1) p (1-p)) ~ 39 at n = 8192, p = 0.25; bounds at 5 deviations and the
        // taken followers (at most (n-1) p / 256).
        for p in [0.0, 0.25, 0.75, 1.0] {
            let config = MemoryConfig {
                bytes: 8 << 30,
                ..cfg(Placement::Clustered { consecutive: p })
            };
            let mut a = FrameAllocator::new(&config, 7);
            let n = 8192;
            let xs: Vec<u64> = (0..n)
                .map(|_| a.alloc(PageSize::Size4K).unwrap().0)
                .collect();
            let follow = xs.windows(2).filter(|w| w[1] == w[0] + 1).count() as f64;
            let mean = (n - 1) as f64 * p;
            let sd = ((n - 1) as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (follow - mean).abs() <= 5.0 * sd + mean / 256.0 + 1.0,
                "p = {p}: {follow} of {} followed, expected {mean:.0} ± {sd:.0}",
                n - 1
            );
        }
    }

    #[test]
    fn heavily_fragmented_memory_runs_out_of_huge_frames_first() {
        let mut a = FrameAllocator::new(&cfg(Placement::Fragmented { fragmentation: 0.5 }), 3);
        assert!(
            a.alloc(PageSize::Size2M).is_err(),
            "half the frames held at random leaves no free 2 MiB run"
        );
        assert!(a.alloc(PageSize::Size4K).is_ok());
    }

    #[test]
    fn exhausting_memory_is_an_error_not_a_panic() {
        let mut a = FrameAllocator::new(&cfg(Placement::Sequential), 1);
        let n = (64 << 20) / 4096 - 1;
        for _ in 0..n {
            a.alloc(PageSize::Size4K).unwrap();
        }
        assert!(a.alloc(PageSize::Size4K).is_err());
    }
}
