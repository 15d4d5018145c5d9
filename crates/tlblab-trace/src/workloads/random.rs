//! `random`: independent loads to uniformly random pages of a region (GUPS-like).
//!
//! The access pattern of GUPS / HPCC RandomAccess (seed 001 §5.2) without its read-modify-write:
//! each access picks one of `pages` pages uniformly and a random 8-byte word in it, so nearly
//! every access misses any TLB much smaller than `pages`. With `threads` > 1, thread t uses its
//! own region (`base + t × pages × 4 KiB`) and threads take turns, `slice` accesses each (1:
//! access by access; more: time slices, as a scheduler runs threads that share a core).

use super::WorkloadInfo;
use crate::record::{Access, Record};
use crate::source::RecordSource;
use tlblab_types::{AccessKind, SplitMix64, ThreadId, VirtAddr};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "random",
    summary: "uniformly random 8-byte loads over `pages` 4 KiB pages (GUPS-like)",
    source: "seed 001 §5.2 (GUPS access pattern)",
    in_default_set: true,
    params: params! {
        pages: 65536, "pages in the region (per thread)";
        accesses: 1 << 20, "number of loads (all threads together)";
        threads: 1, "threads, each on its own region, taking turns";
        slice: 1, "accesses a thread makes in its turn (1: access by access; more: time slices)";
        base: 0x4000_0000, "virtual address of the region";
    },
};

pub struct Random {
    words: u64,
    region: u64,
    accesses: u64,
    threads: u64,
    slice: u64,
    base: u64,
    next: u64,
    rng: SplitMix64,
}

impl Random {
    pub(super) fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let (pages, threads, slice) = (get("pages"), get("threads"), get("slice"));
        if pages == 0 || threads == 0 || slice == 0 {
            return Err(format!(
                "random: pages, threads and slice must be positive (got pages={pages}, \
                 threads={threads}, slice={slice})"
            ));
        }
        let base = get("base");
        // Every thread's region below the address space's end, so that `fill`'s arithmetic
        // cannot overflow.
        let span = pages.checked_mul(4096).and_then(|r| r.checked_mul(threads));
        super::gen::region_fits("random", base, span)?;
        Ok(Random {
            words: pages * 512,
            region: pages * 4096,
            accesses: get("accesses"),
            threads,
            slice,
            base,
            next: 0,
            rng: SplitMix64::derive(seed, "workload.random"),
        })
    }
}

impl RecordSource for Random {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let n = (self.accesses - self.next).min(max as u64);
        for i in self.next..self.next + n {
            let t = (i / self.slice) % self.threads;
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
    /// The draws of the skipped accesses are made (the generator's state after them), their
    /// records not written.
    fn skip_accesses(&mut self, n: u64) -> Result<u64, String> {
        let k = (self.accesses - self.next).min(n);
        for _ in 0..k {
            self.rng.below(self.words);
        }
        self.next += k;
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threads_of(threads: u64, slice: u64, n: usize) -> Vec<u32> {
        let get = |k: &str| match k {
            "pages" => 16,
            "accesses" => n as u64,
            "threads" => threads,
            "slice" => slice,
            _ => 0x4000_0000,
        };
        let mut src = Random::from_params(get, 1).unwrap();
        let mut out = Vec::new();
        src.fill(&mut out, n).unwrap();
        out.iter()
            .map(|r| match r {
                Record::Access(a) => a.thread.0,
                Record::Event(_) => unreachable!("random makes accesses only"),
            })
            .collect()
    }

    #[test]
    fn threads_take_turns_a_slice_at_a_time() {
        assert_eq!(threads_of(2, 1, 5), [0, 1, 0, 1, 0]);
        assert_eq!(threads_of(3, 2, 9), [0, 0, 1, 1, 2, 2, 0, 0, 1]);
        // The slice changes which thread makes each access, not the word it draws: the
        // offsets within each access's region are the same sequence for every slice.
        let offsets = |slice: u64| {
            let get = move |k: &str| match k {
                "pages" => 16,
                "accesses" => 12,
                "threads" => 2,
                "slice" => slice,
                _ => 0x4000_0000,
            };
            let mut out = Vec::new();
            Random::from_params(get, 1)
                .unwrap()
                .fill(&mut out, 12)
                .unwrap();
            out.iter()
                .map(|r| match r {
                    Record::Access(a) => (a.vaddr.0 - 0x4000_0000) % (16 * 4096),
                    Record::Event(_) => unreachable!("random makes accesses only"),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(offsets(1), offsets(3));
    }

    #[test]
    fn a_slice_of_zero_is_an_error_naming_it() {
        let get = |k: &str| if k == "slice" { 0 } else { 1 };
        let e = Random::from_params(get, 1).err().unwrap();
        assert!(e.contains("slice=0"), "{e}");
    }
}
