//! `uniform`: independent loads to uniformly random 8-byte words of a `bytes`-sized region.
//!
//! The access pattern of GUPS / HPCC RandomAccess (seed 001 §5.2) without its read-modify-write;
//! every access is to a random page, so nearly every access misses any TLB smaller than the
//! region's page count.

use super::WorkloadInfo;
use crate::record::{Access, Record};
use crate::source::RecordSource;
use tlblab_types::{AccessKind, SplitMix64, ThreadId, VirtAddr};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "uniform",
    summary: "uniformly random 8-byte loads over a region (GUPS-like access pattern)",
    source: "seed 001 §5.2 (GUPS access pattern)",
    params: &[
        ("bytes", 256 << 20, "size of the region"),
        ("accesses", 1 << 20, "number of loads"),
        ("base", 0x4000_0000, "virtual address of the region"),
    ],
    in_default_set: true,
};

pub struct Uniform {
    words: u64,
    accesses: u64,
    base: u64,
    next: u64,
    rng: SplitMix64,
}

impl Uniform {
    pub(super) fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let bytes = get("bytes");
        if bytes < 8 {
            return Err(format!("uniform: bytes must be at least 8 (got {bytes})"));
        }
        Ok(Uniform {
            words: bytes / 8,
            accesses: get("accesses"),
            base: get("base"),
            next: 0,
            rng: SplitMix64::derive(seed, "workload.uniform"),
        })
    }
}

impl RecordSource for Uniform {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let n = (self.accesses - self.next).min(max as u64);
        for _ in 0..n {
            let va = self.base + self.rng.below(self.words) * 8;
            out.push(Record::Access(Access::new(
                ThreadId(0),
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
