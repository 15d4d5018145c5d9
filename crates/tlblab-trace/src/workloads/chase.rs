//! `chase`: a dependent pointer chase through a random cyclic permutation of `pages` pages.
//!
//! Each page is visited once per round in a random order fixed by the seed (Sattolo's
//! algorithm gives a single cycle), one load per page at a varying cache-line offset so cache
//! sets are spread — the probe's and seed 001's latency microbenchmark pattern.

use super::WorkloadInfo;
use crate::record::{Access, Record};
use crate::source::RecordSource;
use tlblab_types::{AccessKind, SplitMix64, ThreadId, VirtAddr};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "chase",
    summary: "pointer chase through a random single-cycle permutation of `pages` pages",
    source: "seed 001 Alg. 5 (pattern); tlblab probe's chase",
    in_default_set: true,
    params: params! {
        pages: 4096, "pages in the cycle";
        accesses: 1 << 20, "number of loads";
        stride: 4096, "bytes between page slots";
        base: 0x6000_0000, "virtual address of the region";
    },
};

pub struct Chase {
    next_of: Vec<u32>,
    stride: u64,
    base: u64,
    accesses: u64,
    done: u64,
    cur: u32,
}

impl Chase {
    pub(super) fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let pages = get("pages");
        if pages == 0 || pages > 1 << 31 {
            return Err(format!("chase: pages must be in 1..=2^31 (got {pages})"));
        }
        let stride = get("stride");
        if stride < 64 {
            return Err(format!(
                "chase: stride must be at least 64 bytes (got {stride})"
            ));
        }
        // The permutation and the successor table, a u32 each per page.
        super::memory::need("chase", &[("pages", pages)], pages * 8)?;
        // Sattolo's algorithm: a uniformly random permutation with a single cycle.
        let mut perm: Vec<u32> = (0..pages as u32).collect();
        let mut rng = SplitMix64::derive(seed, "workload.chase");
        for i in (1..perm.len()).rev() {
            let j = rng.below(i as u64) as usize;
            perm.swap(i, j);
        }
        let mut next_of = vec![0u32; pages as usize];
        for i in 0..perm.len() {
            next_of[perm[i] as usize] = perm[(i + 1) % perm.len()];
        }
        Ok(Chase {
            next_of,
            stride,
            base: get("base"),
            accesses: get("accesses"),
            done: 0,
            cur: 0,
        })
    }
}

impl RecordSource for Chase {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let n = (self.accesses - self.done).min(max as u64);
        let line_slots = (self.stride / 64).max(1);
        for _ in 0..n {
            let p = self.cur as u64;
            // A different cache line in each page, so the chase does not hammer one cache set.
            let va = self.base + p * self.stride + (p % line_slots) * 64;
            out.push(Record::Access(Access::new(
                ThreadId(0),
                AccessKind::Load,
                VirtAddr(va),
                8,
            )));
            self.cur = self.next_of[self.cur as usize];
        }
        self.done += n;
        Ok(n as usize)
    }
    fn len_hint(&self) -> Option<u64> {
        Some(self.accesses)
    }
}
