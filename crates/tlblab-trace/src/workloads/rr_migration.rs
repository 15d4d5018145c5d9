//! Seed 000 §8.1/§8.2: round-robin migration over all cores.
//!
//! §8.1 (validation): flush everything once, then per run: access one page, flush the data
//! caches but not the TLB ("other tasks trashing the shared caches"), migrate to the next core;
//! it ends after running on every core twice. §8.2 (end-to-end): the same with N pages at a
//! 68 KiB stride, once per core, the whole procedure repeated `iterations` times (the seed ran
//! 1000). Each run is a phase `run` so per-run times can be read off as in seed Figs. 8.1/8.2.
//! With `code=1` each run fetches the program's loop first (outside the phase), from a page in
//! the data's 16 MiB span, so the data's first-level descriptor line is cached as §8.1 found it.

use super::gen::*;
use super::WorkloadInfo;
use crate::record::{flush, Event};
use tlblab_types::{CoreId, ThreadId};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "rr_migration",
    summary:
        "round-robin migration: access N pages, flush caches (not TLB), migrate to the next core",
    source: "seed 000 §8.1 (pages=1, visits=2) and §8.2 (pages=56, stride 68 KiB, visits=1)",
    in_default_set: true,
    params: params! {
        pages: 56, "pages accessed per run (§8.1: 1; §8.2: up to 64)";
        stride: 69632, "bytes between pages (68 KiB)";
        cores: 4, "cores visited in round-robin order";
        visits: 1, "runs on each core per iteration (§8.1: 2)";
        iterations: 1000, "repetitions of the whole procedure";
        code: 0, "1: an instruction fetch of the program's loop before each run, on a page in the same 16 MiB as the data";
    },
};

pub struct RrMigration {
    pages: u64,
    stride: u64,
    cores: u64,
    visits: u64,
    iterations: u64,
    base: u64,
    /// The loop's code (`code=1`), else None.
    code: Option<u64>,
    layout: Layout,
    run_phase: u32,
    /// The core the thread is on (an iteration starts where the last one ended).
    core: u64,
}

impl RrMigration {
    pub fn from_params(get: impl Fn(&str) -> u64) -> Result<Self, String> {
        let pages = positive("rr_migration", "pages", get("pages"))?;
        let stride = positive("rr_migration", "stride", get("stride"))?;
        let cores = positive("rr_migration", "cores", get("cores"))?;
        let mut layout = Layout::new(0x2000_0000);
        // A small program's text and its data lie in one 16 MiB span, whose first-level
        // descriptors share a 64-byte line (16 of 4 bytes, ARMv7 short format): the walk for
        // the code's page leaves the line the data's walks start from in the cache (seed 000
        // §8.1: "most of the time the top-level descriptor is already cached").
        let code = match get("code") {
            0 => None,
            1 => Some(layout.alloc("code", 4096, 4096).1),
            v => {
                return Err(format!(
                    "workload rr_migration: parameter 'code' expects 0 or 1, found {v}"
                ))
            }
        };
        let (_, base) = layout.alloc("data", pages * stride, 1 << 21);
        let run_phase = layout.phase("run");
        Ok(RrMigration {
            pages,
            stride,
            cores,
            visits: positive("rr_migration", "visits", get("visits"))?,
            iterations: get("iterations"),
            base,
            code,
            layout,
            run_phase,
            core: 0,
        })
    }
}

impl Rounds for RrMigration {
    fn plan(&self) -> (&Layout, u64) {
        (&self.layout, self.iterations)
    }
    fn round(&mut self, out: &mut Vec<Record>) {
        // (1) a clean slate on every core.
        for c in 0..self.cores {
            out.push(ev(Event::Flush {
                core: CoreId(c as u16),
                what: flush::TLB | flush::CACHES,
            }));
        }
        // The seed's process runs `cores * visits` times and migrates between runs, not after
        // the last (§8.2: "four runs are performed in total", three migrations).
        let runs = self.cores * self.visits;
        for r in 0..runs {
            let core = self.core as u16;
            // The loop's instructions, fetched before its timed part (`code=1`).
            if let Some(code) = self.code {
                out.push(fetch(0, code, 4));
            }
            out.push(ev(Event::PhaseBegin {
                region: self.run_phase,
            }));
            for i in 0..self.pages {
                out.push(load(0, self.base + i * self.stride, 4));
            }
            out.push(ev(Event::PhaseEnd {
                region: self.run_phase,
            }));
            if r + 1 == runs {
                break;
            }
            // (3) other tasks trash the caches, the TLB survives.
            out.push(ev(Event::Flush {
                core: CoreId(core),
                what: flush::CACHES,
            }));
            // (4) migrate to the next core.
            let next = ((self.core + 1) % self.cores) as u16;
            out.push(ev(Event::Migrate {
                thread: ThreadId(0),
                core: CoreId(next),
            }));
            // Switched in on the next core (`finish_task_switch`, seed 000 §7) before its run.
            out.push(switch(next, None, Some(0)));
            self.core = next as u64;
        }
    }
}
