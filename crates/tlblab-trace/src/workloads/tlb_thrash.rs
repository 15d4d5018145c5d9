//! Seed 001 Alg. 5: the TLB-thrashing microbenchmark.
//!
//! `for i in 0..N: access array[page_index mod array_size]; page_index += page_size*page_step`
//! — one byte-load per iteration, `page_step` pages apart, wrapping in an array of
//! `array_pages` pages. The seed sweeps array_pages across the L1 DTLB (64) and L2 DTLB (2048)
//! sizes of Zen 3 (Fig. 4.2) and uses 2112 pages to probe SMT sharing (§4.4.3).

use super::gen::*;
use super::WorkloadInfo;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "tlb_thrash",
    summary: "one byte-load per page, page_step pages apart, cycling through an array of array_pages pages",
    source: "seed 001 §4.4, Alg. 5 (Fig. 4.2)",
    in_default_set: true,
    params: populated_params! {
        array_pages: 2112, "array size in pages (seed: 64 thrashes the L1 DTLB, 2048-2560 the L2)";
        page_step: 1, "pages between consecutive accesses";
        n: 1 << 20, "N, the number of accesses";
        page_size: 4096, "bytes per page";
    },
};

pub struct TlbThrash {
    size: u64,
    offset: u64,
    n: u64,
    i: u64,
    index: u64,
    base: u64,
    layout: Layout,
}

impl TlbThrash {
    pub fn from_params(get: impl Fn(&str) -> u64) -> Result<Self, String> {
        let page = positive("tlb_thrash", "page_size", get("page_size"))?;
        let size = positive("tlb_thrash", "array_pages", get("array_pages"))? * page;
        let offset = page * positive("tlb_thrash", "page_step", get("page_step"))?;
        let mut layout = Layout::new(0x1000_0000);
        let (_, base) = layout.alloc("array", size, 1 << 21);
        Ok(TlbThrash {
            size,
            offset,
            n: get("n"),
            i: 0,
            index: 0,
            base,
            layout,
        })
    }
}

impl Generator for TlbThrash {
    fn regions(&self) -> Vec<String> {
        self.layout.names.clone()
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if self.i == self.n {
            return false;
        }
        if self.i == 0 {
            self.layout.start_one_thread(out);
        }
        let end = (self.i + 65536).min(self.n);
        for _ in self.i..end {
            out.push(load(0, self.base + self.index % self.size, 1));
            self.index = self.index.wrapping_add(self.offset);
        }
        self.i = end;
        true
    }
}
