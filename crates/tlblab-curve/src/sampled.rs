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

use crate::fully::Fully;
use crate::keymap::EMPTY;

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
    stack: Fully,
    threshold: u64,
    /// `1 / R`.
    scale: f64,
    /// The previous page and whether it is sampled: a repeat is depth 1 if it is.
    last: u64,
    last_in: bool,
    /// References seen (sampled or not) and sampled.
    pub references: u64,
    pub sampled: u64,
    /// Sampled references by scaled depth (`hist[d - 1]`), up to `hist.len()`; `beyond`: deeper
    /// or new.
    pub hist: Vec<u64>,
    pub beyond: u64,
}

impl Sampled {
    pub fn new(rate: f64, max_entries: usize) -> Self {
        let threshold = (rate * (1u64 << MODULUS_BITS) as f64).round().max(1.0) as u64;
        Sampled {
            stack: Fully::new(),
            threshold,
            scale: (1u64 << MODULUS_BITS) as f64 / threshold as f64,
            last: EMPTY,
            last_in: false,
            references: 0,
            sampled: 0,
            hist: vec![0; max_entries],
            beyond: 0,
        }
    }

    /// The rate actually used (`T / P`).
    pub fn rate(&self) -> f64 {
        1.0 / self.scale
    }

    #[inline(always)]
    pub fn access(&mut self, key: u64) {
        self.references += 1;
        if key == self.last {
            if self.last_in {
                self.sampled += 1;
                self.hist[0] += 1;
            }
            return;
        }
        self.last = key;
        self.last_in = fmix64(key) & ((1 << MODULUS_BITS) - 1) < self.threshold;
        if self.last_in {
            self.sample(key);
        }
    }

    #[inline(never)]
    fn sample(&mut self, key: u64) {
        self.sampled += 1;
        let d = self.stack.access(key);
        if d == 0 {
            self.beyond += 1;
            return;
        }
        let scaled = 1.0 + (d - 1) as f64 * self.scale;
        let i = scaled.round() as usize - 1;
        match self.hist.get_mut(i) {
            Some(h) => *h += 1,
            None => self.beyond += 1,
        }
    }

    pub fn invalidate(&mut self, key: u64) {
        self.stack.invalidate(key);
        self.last = EMPTY;
    }

    pub fn invalidate_where(&mut self, pred: impl Fn(u64) -> bool) {
        self.stack.invalidate_where(pred);
        self.last = EMPTY;
    }

    pub fn flush(&mut self) {
        self.stack.flush();
        self.last = EMPTY;
    }
}
