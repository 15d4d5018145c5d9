//! `random`: independent loads to uniformly random pages of a region (GUPS-like).
//!
//! The access pattern of GUPS / HPCC RandomAccess (seed 001 §5.2) without its read-modify-write:
//! each access picks one of `pages` pages uniformly and a random 8-byte word in it, so nearly
//! every access misses any TLB much smaller than `pages`. With `threads` > 1, thread t uses its
//! own region (`base + t × pages × 4 KiB`) and threads take turns access by access.

use super::WorkloadInfo;
use crate::record::{Access, Record};
use crate::source::RecordSource;
use tlblab_types::{AccessKind, SplitMix64, ThreadId, VirtAddr};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "random",
    summary: "uniformly random 8-byte loads over `pages` 4 KiB pages (GUPS-like)",
    source: "seed 001 §5.2 (GUPS access pattern)",
    params: &[
        ("pages", 65536, "pages in the region (per thread)"),
        (
            "accesses",
            1 << 20,
            "number of loads (all threads together)",
        ),
        (
            "threads",
            1,
            "threads, each on its own region, interleaved access by access",
        ),
        ("base", 0x4000_0000, "virtual address of the region"),
    ],
    in_default_set: true,
};

pub struct Random {
    words: u64,
    region: u64,
    accesses: u64,
    threads: u64,
    base: u64,
    next: u64,
    rng: SplitMix64,
}

impl Random {
    pub(super) fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let (pages, threads) = (get("pages"), get("threads"));
        if pages == 0 || threads == 0 {
            return Err(format!(
                "random: pages and threads must be positive (got pages={pages}, threads={threads})"
            ));
        }
        Ok(Random {
            words: pages * 512,
            region: pages * 4096,
            accesses: get("accesses"),
            threads,
            base: get("base"),
            next: 0,
            rng: SplitMix64::derive(seed, "workload.random"),
        })
    }
}

impl RecordSource for Random {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let n = (self.accesses - self.next).min(max as u64);
        for i in self.next..self.next + n {
            let t = i % self.threads;
            let va = self.base + t * self.region + self.rng.below(self.words) * 8;
            out.push(Record::Access(Access::new(
                ThreadId(t as u32),
                AccessKind::Load,
                VirtAddr(va),
                8,
            )));
        }
        self.next += n;
        Ok(n as usize)
    }
    fn len_hint(&self) -> Option<u64> {
        Some(self.accesses)
    }
}
