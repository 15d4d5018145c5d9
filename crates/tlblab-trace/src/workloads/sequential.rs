//! `sequential`: a streaming read of a region, 8 bytes at a time, `rounds` times.
//!
//! The friendliest pattern for a TLB: 512 consecutive references per 4 KiB page, so one miss per
//! page per round at most.

use super::WorkloadInfo;
use crate::record::Record;
use crate::source::RecordSource;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "sequential",
    summary: "streaming 8-byte loads over `bytes`, `rounds` times",
    source: "",
    in_default_set: true,
    params: params! {
        bytes: 4 << 20, "size of the region";
        rounds: 2, "number of passes";
        base: 0x2000_0000, "virtual address of the region";
    },
};

pub struct Sequential {
    words: u64,
    total: u64,
    base: u64,
    next: u64,
}

impl Sequential {
    pub(super) fn from_params(get: impl Fn(&str) -> u64) -> Result<Self, String> {
        let bytes = get("bytes");
        if bytes < 8 {
            return Err(format!(
                "sequential: bytes must be at least 8 (got {bytes})"
            ));
        }
        let rounds = get("rounds");
        // Checked: the product of two valid parameters can pass 2^64 accesses.
        let total = (bytes / 8).checked_mul(rounds).ok_or_else(|| {
            format!(
                "sequential: bytes/8 × rounds = {} × {rounds} accesses exceeds 2^64",
                bytes / 8
            )
        })?;
        let base = get("base");
        super::gen::region_fits("sequential", base, Some(bytes / 8 * 8))?;
        Ok(Sequential {
            words: bytes / 8,
            total,
            base,
            next: 0,
        })
    }
}

impl RecordSource for Sequential {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let n = (self.total - self.next).min(max as u64);
        super::gen::cyclic_loads(out, self.next, n, self.base, self.words, 8);
        self.next += n;
        Ok(n as usize)
    }
    fn len_hint(&self) -> Option<u64> {
        Some(self.total)
    }
    /// Every record is an access at a position given by its number: skipping is a step of it.
    fn skip_accesses(&mut self, n: u64) -> Result<u64, String> {
        let k = (self.total - self.next).min(n);
        self.next += k;
        Ok(k)
    }
}
