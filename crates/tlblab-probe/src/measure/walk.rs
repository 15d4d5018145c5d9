//! Latencies: a hit in each data-TLB level, and a full walk (both levels miss) with the leaf
//! page-table entries resident in L1D, L2, L3 or memory.
//!
//! The walk cost is the excess of a chase whose every access misses both TLB levels over its
//! packed control (same data lines). Where the PTEs live is set by the page-table footprint:
//! pages 2 MiB apart (+ a rotating 32 KiB skew so their PTEs fall on different cache lines and L1D
//! sets) give one PTE line per page; the number of pages sets how many PTE lines the walks cycle
//! through: the walker's loads are served by the L1D, L2, L3 or memory (Intel's Haswell PMU
//! events PAGE_WALKER_LOADS.DTLB_L1 / _L2 / _L3 / _MEMORY count them apart), so a walk penalty
//! says where its PTEs lived. On a VM each walk is two-dimensional; the host part is included and cannot be separated.

use super::curve::{measure_n, Instrument};
use crate::analysis::knee::{latency_confidence, Confidence};
use crate::chase::{build, time_chain, Order};
use crate::stats::Summary;
use crate::sys::{Region, Thp, LINE, PAGE};
use serde::{Deserialize, Serialize};

/// A chain with one element per page, page `i` at `i·stride + (i mod 64)·skew` pages.
struct SkewedChains {
    test: Region,
    control: Region,
    n: usize,
    stride: usize,
    skew: usize,
    starts: [Option<*const usize>; 2],
}

impl SkewedChains {
    fn new(n: usize, stride: usize, skew: usize) -> std::io::Result<SkewedChains> {
        let span = (n * stride + 64 * skew + 1) * PAGE;
        let test = Region::new(span, 2 << 20, Thp::Never)?;
        let control = Region::new(n.div_ceil(64) * PAGE + PAGE, 2 << 20, Thp::Never)?;
        Ok(SkewedChains {
            test,
            control,
            n,
            stride,
            skew,
            starts: [None, None],
        })
    }

    fn offset(&self, i: usize) -> usize {
        (i * self.stride + (i % 64) * self.skew) * PAGE + ((i + (i >> 6)) & 63) * LINE
    }

    fn build_test(&self) -> *const usize {
        let order = crate::chase::visit_order(Order::Random(0x7a1c), self.n);
        for k in 0..self.n {
            let here = self.test.at(self.offset(order[k])) as *mut usize;
            let next = self.test.at(self.offset(order[(k + 1) % self.n])) as usize;
            unsafe { here.write_volatile(next) };
        }
        self.test.at(self.offset(order[0])) as *const usize
    }
}

impl Instrument for SkewedChains {
    fn time(&mut self, n: usize, control: bool, window_ns: u64) -> f64 {
        assert_eq!(n, self.n);
        let idx = control as usize;
        if self.starts[idx].is_none() {
            self.starts[idx] = Some(if control {
                build(
                    &self.control,
                    crate::chase::Layout::Packed,
                    Order::Random(0xc0),
                    n,
                )
            } else {
                self.build_test()
            });
        }
        // SAFETY: built in our own regions, which live as long as `self`.
        unsafe { time_chain(self.starts[idx].unwrap(), n, window_ns) }
    }

    fn max_n(&self) -> usize {
        self.n
    }
}

/// One walk-latency configuration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WalkLatency {
    /// Where the leaf PTE lines are expected to be: "L2", "L3", "L3/memory" (8 MiB of PTE lines
    /// against a 32 MiB L3 shared with the neighbours: mostly memory on a busy machine).
    pub pte_in: String,
    pub pages: usize,
    pub stride_pages: usize,
    /// Bytes of distinct leaf-PTE lines the walks cycle through.
    pub pte_bytes: usize,
    /// ns per access above the control (L1 miss + L2 miss + walk).
    pub excess_ns: Summary,
    pub test_ns: Summary,
    pub control_ns: Summary,
    pub confidence: Confidence,
}

/// Measures the walk latency for each PTE residency. `full` adds the memory case: 128 Ki pages
/// 64 KiB apart, one PTE line each (8 MiB of PTE lines, 4 GiB of address space in 1024 page-table
/// pages, 512 MiB touched; a few seconds).
///
/// `l1_entries`: the measured first-level DTLB capacity. The "L2" case uses twice that many
/// pages (at least 96), so its pages cannot all sit in the L1 DTLB (Zen 5's holds exactly 96).
pub fn walk_latencies(
    reps: usize,
    window_ns: u64,
    full: bool,
    l1_entries: Option<usize>,
) -> Vec<WalkLatency> {
    // (label, pages, stride, skew). Stride 512 pages puts every page in its own page-table page
    // and every PTE at offset 0 of it: ≥ 96 PTE lines in one L1D set, so they are served from L2.
    // Stride 8 gives every page its own PTE line: 16384 lines = 1 MiB, beyond L2, in L3.
    // A skew would spread PTE lines over L1D sets but also over L2 DTLB sets (the L2 DTLB would
    // then hit), so an "all PTEs in L1D" case with certain L2 DTLB misses is not attempted.
    let near = l1_entries.map_or(96, |e| (2 * e).max(96));
    let mut cases: Vec<(&str, usize, usize, usize)> =
        vec![("L2", near, 512, 0), ("L3", 16384, 8, 0)];
    if full {
        cases.push(("L3/memory", 131_072, 16, 0));
    }
    let mut out = Vec::new();
    for (label, n, stride, skew) in cases {
        let Ok(mut inst) = SkewedChains::new(n, stride, skew) else {
            continue;
        };
        let row = measure_n(&mut inst, n, reps, window_ns.max(2 * n as u64 * 40));
        let pte_lines = if stride >= 8 { n } else { n / (8 / stride) };
        out.push(WalkLatency {
            pte_in: label.into(),
            pages: n,
            stride_pages: stride,
            pte_bytes: pte_lines * 64,
            confidence: latency_confidence(&row.excess),
            excess_ns: row.excess,
            test_ns: row.test,
            control_ns: row.control,
        });
    }
    out
}
