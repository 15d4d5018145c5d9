//! `strided`: touch `pages` pages at a fixed `stride`, in order, `rounds` times.
//!
//! The closed-form workhorse of the behaviour tests (a cyclic sweep of 65 pages over a 64-entry
//! fully associative LRU TLB misses every time) and the access pattern of seed 000's 4k- and
//! 68k-benchmarks (§4.3) without their flush/migrate steps.

use super::WorkloadInfo;
use crate::record::Record;
use crate::source::RecordSource;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "strided",
    summary:
        "cyclic sweep: one load per page over `pages` pages `stride` bytes apart, `rounds` times",
    source: "seed 000 §4.3 (access pattern of the 4k/68k-benchmarks)",
    in_default_set: true,
    params: params! {
        pages: 1024, "number of pages touched per round";
        stride: 4096, "bytes between consecutive touches";
        rounds: 64, "number of passes";
        base: 0x1000_0000, "virtual address of the first touch";
    },
};

pub struct Strided {
    pages: u64,
    stride: u64,
    rounds: u64,
    base: u64,
    next: u64,
}

impl Strided {
    pub fn new(pages: u64, stride: u64, rounds: u64, base: u64) -> Self {
        Strided {
            pages,
            stride,
            rounds,
            base,
            next: 0,
        }
    }

    pub(super) fn from_params(get: impl Fn(&str) -> u64) -> Result<Self, String> {
        let (pages, stride) = (get("pages"), get("stride"));
        if pages == 0 || stride == 0 {
            return Err(format!(
                "strided: pages and stride must be positive (got pages={pages}, stride={stride})"
            ));
        }
        let (rounds, base) = (get("rounds"), get("base"));
        if pages.checked_mul(rounds).is_none() {
            return Err(format!(
                "strided: pages × rounds = {pages} × {rounds} accesses exceeds 2^64"
            ));
        }
        let span = (pages - 1)
            .checked_mul(stride)
            .and_then(|s| s.checked_add(8));
        super::gen::region_fits("strided", base, span)?;
        Ok(Strided::new(pages, stride, rounds, base))
    }
}

impl RecordSource for Strided {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let total = self.pages * self.rounds;
        let n = (total - self.next).min(max as u64);
        super::gen::cyclic_loads(out, self.next, n, self.base, self.pages, self.stride);
        self.next += n;
        Ok(n as usize)
    }
    fn len_hint(&self) -> Option<u64> {
        Some(self.pages * self.rounds)
    }
    /// Every record is an access at a position given by its number: skipping is a step of it.
    fn skip_accesses(&mut self, n: u64) -> Result<u64, String> {
        let k = (self.pages * self.rounds - self.next).min(n);
        self.next += k;
        Ok(k)
    }
}
