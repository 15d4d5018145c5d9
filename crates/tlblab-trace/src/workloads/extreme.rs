//! Seed 002 §4.1: the *extreme* benchmark (best case for TLB entry sharing, seed Fig. 4).
//!
//! "It forks n child processes all running the same executable. Each child mmap()-s the same p
//! pages, either private or shared. The child then executes a loop where it reads a byte from
//! each page and then performs a yield()." Shared pages are one `MapShared` object mapped by
//! every child at the same address; private pages are a `Mmap` per child. The executable's text
//! is fork-shared (object 0); library code is *not* shared in the seed's run (§4.2), so each
//! child also fetches from a private library page on its way to `yield`. With `kernel` on (the
//! default) the kernel's `sched_yield` path is traced around each switch (`kernel_path.rs`,
//! `YIELD_INSTRS`).

use super::gen::*;
use super::kernel_path::{self, KernelPath};
use super::lat_ctx::{process_start, DATA, TEXT};
use super::WorkloadInfo;
use crate::record::prot;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "extreme",
    summary: "n children each read one byte of each of p shared or private pages, then yield",
    source: "seed 002 §4.1-4.2 (extreme benchmark, Fig. 4)",
    in_default_set: true,
    params: params! {
        procs: 4, "n, the number of children (seed Fig. 4: 2, 4, 16)";
        pages: 16, "p, the pages each child reads per loop (seed: 1..40; ARM D-TLB holds 32)";
        shared: 1, "1 = the p pages are one shared mapping, 0 = private per child";
        rounds: 200, "loop iterations per child";
        kernel: 1, "1 = trace the kernel's yield path around each switch";
    },
};

const LIB: u64 = 0x0400_0000;

/// Instructions of the kernel's `sched_yield` path (system call entry and exit and the
/// scheduler): "a few hundred instructions" for a switch (seed 002 §1). Not calibrated: Fig. 4
/// is read for its ratios only.
pub const YIELD_INSTRS: u64 = 400;

pub struct Extreme {
    procs: u32,
    pages: u64,
    shared: bool,
    rounds: u64,
    turn: u64,
    paths: Option<(KernelPath, KernelPath)>,
}

impl Extreme {
    pub fn from_params(get: impl Fn(&str) -> u64) -> Result<Self, String> {
        let procs = positive("extreme", "procs", get("procs"))?.min(65536) as u32;
        Ok(Extreme {
            procs,
            pages: get("pages"),
            shared: get("shared") != 0,
            rounds: get("rounds"),
            turn: 0,
            paths: (get("kernel") != 0).then(|| {
                let half = |i: u64| KernelPath {
                    text: kernel_path::text_slot(12 + i),
                    instrs: YIELD_INSTRS / 2,
                    loop_lines: 0,
                    data: kernel_path::data_slot(12 + i),
                };
                (half(0), half(1))
            }),
        })
    }
}

impl Generator for Extreme {
    fn regions(&self) -> Vec<String> {
        vec!["text".into(), "pages".into(), "lib".into()]
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        let total = self.rounds * self.procs as u64;
        if self.turn == 0 {
            let len = self.pages.max(1) * 4096;
            for p in 0..self.procs {
                process_start(out, p, 4096);
                if self.paths.is_some() {
                    kernel_path::map_kernel(out, p);
                }
                out.push(ev(map_private(p, LIB, 4096, prot::READ | prot::EXEC)));
                let e = if self.shared {
                    map_shared(p, DATA, len, prot::READ, 1)
                } else {
                    map_private(p, DATA, len, prot::READ)
                };
                out.push(ev(e));
            }
            regions(out, &[(TEXT, 4096), (DATA, len), (LIB, 4096)]);
            if total > 0 {
                out.push(switch(0, None, Some(0)));
            }
        }
        if self.turn == total {
            return false;
        }
        let c = (self.turn % self.procs as u64) as u32;
        if let Some((back, _)) = &self.paths {
            back.run(out, c);
        }
        for i in 0..self.pages {
            out.push(fetch(c, TEXT + 0x200 + (i % 4) * 4, 4));
            out.push(load(c, DATA + i * 4096, 1));
        }
        for k in 0..8 {
            out.push(fetch(c, LIB + 0x40 + k * 4, 4)); // yield() in the private library
        }
        if let Some((_, into)) = &self.paths {
            into.run(out, c);
        }
        pass_token(out, &mut self.turn, total, self.procs, c);
        true
    }
}
