//! `Sampled`: an approximate fully associative curve from a spatially hashed sample of pages.
//!
//! Waldspurger, Park, Garthwaite and Ahmad, "Efficient MRC construction with SHARDS", FAST
//! 2015, §3: a page is in the sample when `hash(page) mod P < T` (rate `R = T / P`), so every
//! reference to a sampled page is seen and none to the others; stack depths among the sampled
//! pages, scaled by `1 / R`, estimate the full depths, and the miss ratio at each size is the
//! sampled references' (which normalizes by the sampled references actually seen, as SHARDS'
//! adjustment does, §4.2). Hash: MurmurHash3's 64-bit finalizer (the paper uses MurmurHash3),
//! `P = 2^24`.
//!
//! One departure: SHARDS scales the depth `d` to `d / R`. A depth counts the page itself, which
//! is not a sample of anything, so this scales only the other pages: `1 + (d - 1) / R`. Depth
//! 1 (no sampled page in between) stays 1, where `d / R` would put every immediate reuse at
//! `1 / R` entries and make every TLB smaller than that miss; TLB curves start at a few entries.
//! `docs/curves.md` gives the error measured against the exact curve.

use crate::fully::Tree;
use crate::head::{Head, HEAD};

pub const MODULUS_BITS: u32 = 24;

/// MurmurHash3's `fmix64` (Appleby, 2011).
#[inline(always)]
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

#[derive(Clone)]
pub struct Sampled {
    /// The top of the stack, every page, exact.
    head: Head,
    /// The sampled pages below the head.
    tree: Tree,
    threshold: u64,
    /// `1 / R`.
    scale: f64,
    /// References by their depth in the head (`head_hits[d - 1]`), exact.
    pub head_hits: [u64; HEAD],
    /// References below the head (or new), all pages; and those of sampled pages.
    pub head_misses: u64,
    pub sampled: u64,
    /// Sampled references below the head by estimated depth (`hist[d - 1]`), up to
    /// `hist.len()`; deeper or new ones are not counted.
    pub hist: Vec<u64>,
}

impl Sampled {
    pub fn new(rate: f64, max_entries: usize) -> Self {
        let threshold = (rate * (1u64 << MODULUS_BITS) as f64).round().max(1.0) as u64;
        Sampled {
            head: Head::new(),
            tree: Tree::new(),
            threshold,
            scale: (1u64 << MODULUS_BITS) as f64 / threshold as f64,
            head_hits: [0; HEAD],
            head_misses: 0,
            sampled: 0,
            hist: vec![0; max_entries],
        }
    }

    /// The rate actually used (`T / P`).
    pub fn rate(&self) -> f64 {
        1.0 / self.scale
    }

    #[inline(always)]
    fn in_sample(&self, key: u64) -> bool {
        fmix64(key) & ((1 << MODULUS_BITS) - 1) < self.threshold
    }

    #[inline(always)]
    pub fn access(&mut self, key: u64) {
        if let Some(i) = self.head.find(key) {
            self.head.promote(i);
            self.head_hits[i] += 1;
            return;
        }
        self.below_head(key);
    }

    /// The four most recent pages (`EMPTY` where the head is shorter), for a caller that
    /// keeps them in registers over a run of references (`Run::feed_lean_sampled`).
    #[inline(always)]
    pub fn top_four(&self) -> [u64; 4] {
        self.head.top_four()
    }

    /// Takes back the top four after the caller reordered them (the same four pages).
    #[inline(always)]
    pub fn set_top_four(&mut self, top: [u64; 4]) {
        self.head.set_top_four(top);
    }

    #[inline(never)]
    fn below_head(&mut self, key: u64) {
        self.head_misses += 1;
        let above = self.head.len();
        if self.in_sample(key) {
            self.sampled += 1;
            let d = self.tree.take(key);
            if d > 0 {
                let est = above as f64 + 1.0 + (d - 1) as f64 * self.scale;
                if let Some(h) = self.hist.get_mut(est.round() as usize - 1) {
                    *h += 1;
                }
            }
        }
        if let Some(out) = self.head.push(key) {
            if self.in_sample(out) {
                self.tree.put(out);
            }
        }
    }

    /// References seen (not counted per reference: the head's hits and misses add up to it).
    pub fn references(&self) -> u64 {
        self.head_hits.iter().sum::<u64>() + self.head_misses
    }

    /// Misses of a fully associative TLB of `entries` (1..=`hist.len()`): exact up to the
    /// head's size, estimated beyond.
    pub fn misses(&self, entries: usize) -> u64 {
        if entries <= HEAD {
            return self.references() - self.head_hits[..entries].iter().sum::<u64>();
        }
        if self.sampled == 0 {
            return self.head_misses;
        }
        let hits: u64 = self.hist[..entries].iter().sum();
        let ratio = 1.0 - hits as f64 / self.sampled as f64;
        (ratio * self.head_misses as f64).round() as u64
    }

    /// `misses` of every size 1..=`hist.len()`, in one pass.
    pub fn curve(&self) -> Vec<u64> {
        let refs = self.references();
        let mut out = Vec::with_capacity(self.hist.len());
        let (mut head, mut tail) = (0u64, 0u64);
        for c in 1..=self.hist.len() {
            tail += self.hist[c - 1];
            if c <= HEAD {
                head += self.head_hits[c - 1];
                out.push(refs - head);
            } else if self.sampled == 0 {
                out.push(self.head_misses);
            } else {
                let ratio = 1.0 - tail as f64 / self.sampled as f64;
                out.push((ratio * self.head_misses as f64).round() as u64);
            }
        }
        out
    }

    /// Moves the head's sampled pages into the tree (holes live in the tree only).
    fn spill(&mut self) {
        let keys: Vec<u64> = self.head.drain_oldest_first().collect();
        for k in keys {
            if self.in_sample(k) {
                self.tree.put(k);
            }
        }
    }

    /// Empties the stack (a TLB flush); the sample's counts stay.
    pub fn flush(&mut self) {
        self.head.clear();
        self.tree.flush();
    }

    pub fn invalidate(&mut self, key: u64) {
        self.spill();
        self.tree.invalidate(key);
    }

    pub fn invalidate_where(&mut self, pred: impl Fn(u64) -> bool) {
        self.spill();
        self.tree.invalidate_where(pred);
    }
}
