//! The reference's own frame allocator, written from the placement policies' specification
//! (`docs/reference-model.md`, "Frames"; the policies are those `memory.placement` names), not
//! from `memory/`: a `Vec<bool>` of used frames and a linear search.
//!
//! - Frame 0 is never handed out (a zero frame number in a descriptor means "none").
//! - `fragmented { f }`: first, `floor(frames × f)` distinct frames are held, drawn one at a
//!   time uniformly from all frames (a draw of a frame already held is drawn again).
//! - `sequential` and `fragmented`: the lowest free run of `size / 4 KiB` frames aligned to
//!   its own size.
//! - `random`: 64 uniform draws of an aligned run, the first free one taken; then a linear
//!   scan, wrapping, from one more uniform draw.
//! - `clustered { p }`: a 4 KiB page first draws u uniform in [0, 1); when u < p and the frame
//!   after the previous 4 KiB page's is free, that frame; else as `random`. Larger pages as
//!   `random` (no draw of u, and the previous 4 KiB page stays what it was).
//! - Every draw is `below(n)` of one generator, `SplitMix64::derive(seed, "memory.frames")`.
//! - Nothing is ever freed.

use crate::memory::{MemoryConfig, Placement};
use tlblab_types::{PageSize, SplitMix64};

pub(super) struct RefFrames {
    used: Vec<bool>,
    random: bool,
    /// `clustered`'s p, and the frame after the previous 4 KiB page's.
    follow: Option<f64>,
    next_4k: usize,
    rng: SplitMix64,
}

impl RefFrames {
    pub(super) fn new(config: &MemoryConfig, seed: u64) -> RefFrames {
        let frames = (config.bytes / 4096) as usize;
        let mut used = vec![false; frames];
        used[0] = true;
        let mut rng = SplitMix64::derive(seed, "memory.frames");
        if let Placement::Fragmented { fragmentation } = config.placement {
            let held = (frames as f64 * fragmentation) as usize;
            let mut n = 0;
            while n < held {
                let f = rng.below(frames as u64) as usize;
                if !used[f] {
                    used[f] = true;
                    n += 1;
                }
            }
        }
        RefFrames {
            used,
            random: matches!(
                config.placement,
                Placement::Random | Placement::Clustered { .. }
            ),
            follow: match config.placement {
                Placement::Clustered { consecutive } => Some(consecutive),
                _ => None,
            },
            next_4k: 0,
            rng,
        }
    }

    fn free(&self, run: usize, n: usize) -> bool {
        (run * n..(run + 1) * n).all(|f| f < self.used.len() && !self.used[f])
    }

    fn take(&mut self, run: usize, n: usize) -> u64 {
        for f in run * n..(run + 1) * n {
            self.used[f] = true;
        }
        (run * n) as u64
    }

    /// The first frame of a free, aligned run for a page of `size`, now used; None when there
    /// is none.
    pub(super) fn alloc(&mut self, size: PageSize) -> Option<u64> {
        let n = (size.bytes() / 4096) as usize;
        if let (Some(p), 1) = (self.follow, n) {
            let f = self.next_4k;
            let got = if self.rng.next_f64() < p && self.free(f, 1) {
                Some(self.take(f, 1))
            } else {
                self.alloc_random(1)
            };
            if let Some(g) = got {
                self.next_4k = g as usize + 1;
            }
            return got;
        }
        let runs = self.used.len() / n;
        if !self.random {
            let run = (0..runs).find(|&r| self.free(r, n))?;
            return Some(self.take(run, n));
        }
        self.alloc_random(n)
    }

    /// `random`'s choice of a free, aligned run of `n` frames.
    fn alloc_random(&mut self, n: usize) -> Option<u64> {
        let runs = self.used.len() / n;
        for _ in 0..64 {
            let r = self.rng.below(runs as u64) as usize;
            if self.free(r, n) {
                return Some(self.take(r, n));
            }
        }
        let start = self.rng.below(runs as u64) as usize;
        let run = (0..runs)
            .map(|i| (start + i) % runs)
            .find(|&r| self.free(r, n))?;
        Some(self.take(run, n))
    }
}
