//! Seed 000 §4.3: the 4k- and 68k-benchmarks of TLB migration.
//!
//! Steps, per iteration (seed 000 §4.3, numbered as there): (1) flush all caches including the
//! TLB; (2) access N pages with the given stride; (3)–(5) the thread migrates — here a real
//! `Migrate` to the next core, whose TLB and caches were flushed, so a TLB-migration technique
//! under test can save the entries at step 3 and restore them at step 5; (6) access the same N
//! pages again. Step 2 and step 6 are marked as phases `first_access` / `second_access`, so the
//! speedup is phase(first) − phase(second), as in seed Fig. 4.9. The 4k variant uses a 4 KiB
//! stride (descriptors of 16 consecutive pages share a cache line); the 68k variant uses 17 pages
//! = 68 KiB, so every page needs its own second-level descriptor line and TLB indices are spread
//! (seed §4.3: 64 KiB would hit the same 8 of 128 indices).

use super::gen::*;
use super::WorkloadInfo;
use crate::record::{flush, Event};
use tlblab_types::{CoreId, ThreadId};

const PARAMS: &[(&str, u64, &str)] = params! {
    pages: 32, "N, the number of pages accessed (seed figures: 1..64)";
    stride: 4096, "bytes between accessed pages (4096 = 4k-benchmark, 69632 = 68k-benchmark)";
    offset: 64, "byte offset of each access inside its page (the seed's pld warmed the first 64 B)";
    iterations: 1000, "repetitions of steps 1-6";
    cores: 2, "cores the thread alternates between (migration target = next core)";
};

pub const INFO_4K: WorkloadInfo = WorkloadInfo {
    name: "migration_4k",
    summary: "4k-benchmark: flush, touch N consecutive pages, migrate to a flushed core, touch them again",
    source: "seed 000 §4.3 (4k-benchmark, Figs. 4.6-4.9)",
    in_default_set: true,
    params: PARAMS,
};

pub const INFO_68K: WorkloadInfo = WorkloadInfo {
    name: "migration_68k",
    summary: "68k-benchmark: as migration_4k with a 68 KiB stride (no shared descriptor lines)",
    source: "seed 000 §4.3 (68k-benchmark, Figs. 4.6-4.11)",
    in_default_set: true,
    params: params! {
        pages: 32, "N, the number of pages accessed (seed figures: 1..64)";
        stride: 69632, "bytes between accessed pages (17 pages)";
        offset: 64, "byte offset of each access inside its page";
        iterations: 1000, "repetitions of steps 1-6";
        cores: 2, "cores the thread alternates between";
    },
};

pub struct MigrationBench {
    pages: u64,
    stride: u64,
    offset: u64,
    iterations: u64,
    cores: u64,
    base: u64,
    layout: Layout,
    first: u32,
    second: u32,
    core: u64,
}

impl MigrationBench {
    pub fn from_params(name: &str, get: impl Fn(&str) -> u64) -> Result<Self, String> {
        let pages = positive(name, "pages", get("pages"))?;
        let stride = positive(name, "stride", get("stride"))?;
        let cores = get("cores");
        if cores < 2 {
            return Err(format!(
                "{name}: cores must be at least 2 (got {cores}): the benchmark migrates"
            ));
        }
        let mut layout = Layout::new(0x2000_0000);
        let (_, base) = layout.alloc("data", pages * stride, 1 << 21);
        let first = layout.phase("first_access");
        let second = layout.phase("second_access");
        Ok(MigrationBench {
            pages,
            stride,
            offset: get("offset") % 4096,
            iterations: get("iterations"),
            cores,
            base,
            layout,
            first,
            second,
            core: 0,
        })
    }
}

impl Rounds for MigrationBench {
    fn plan(&self) -> (&Layout, u64) {
        (&self.layout, self.iterations)
    }
    fn round(&mut self, out: &mut Vec<Record>) {
        let core = CoreId(self.core as u16);
        let next = ((self.core + 1) % self.cores) as u16;
        // (1) flush everything on the current core.
        out.push(ev(Event::Flush {
            core,
            what: flush::TLB | flush::CACHES,
        }));
        // (2) first access.
        out.push(ev(Event::PhaseBegin { region: self.first }));
        for i in 0..self.pages {
            out.push(load(0, self.base + i * self.stride + self.offset, 4));
        }
        out.push(ev(Event::PhaseEnd { region: self.first }));
        // (3)-(5) migrate to a cold core: the migration (where a technique saves, step 3), then
        // the flush of the new core's TLB and caches, the shared level included (step 4), then
        // the switch-in (where it restores, step 5).
        out.push(ev(Event::Migrate {
            thread: ThreadId(0),
            core: CoreId(next),
        }));
        out.push(ev(Event::Flush {
            core: CoreId(next),
            what: flush::TLB | flush::CACHES,
        }));
        // Linux switches the migrated task in on its new core (`finish_task_switch`, where a
        // TLB-migration technique restores, seed 000 §7) before it runs step 6: the switch
        // comes before the phase's clock starts, as the benchmark's own timer does.
        out.push(switch(next, None, Some(0)));
        // (6) second access.
        out.push(ev(Event::PhaseBegin {
            region: self.second,
        }));
        for i in 0..self.pages {
            out.push(load(0, self.base + i * self.stride + self.offset, 4));
        }
        out.push(ev(Event::PhaseEnd {
            region: self.second,
        }));
        self.core = next as u64;
    }
}
