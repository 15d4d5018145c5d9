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
//! - Every draw is `below(n)` of one generator, `SplitMix64::derive(seed, "memory.frames")`.
//! - Nothing is ever freed.

use crate::memory::{MemoryConfig, Placement};
use tlblab_types::{PageSize, SplitMix64};

pub(super) struct RefFrames {
    used: Vec<bool>,
    random: bool,
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
            random: config.placement == Placement::Random,
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
        let runs = self.used.len() / n;
        if !self.random {
            let run = (0..runs).find(|&r| self.free(r, n))?;
            return Some(self.take(run, n));
        }
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
