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
//!
//! With `loop_instr` = k > 0 each access is also the loop's k instructions, fetched from one code
//! page: the load's own fetch before its data access, the other k - 1 after it, as a CPU that
//! fetches every instruction (gem5's TimingSimpleCPU, seed 000 Listing 6.1) runs the loop. gcc -O2
//! compiles the loop (N reads at the stride) for ARMv7 to four: `ldr`, `add`, `cmp`, `bne`, in ARM
//! and in Thumb-2 (docs/lab/2026-12-01-issue87-gem5-loop-fetches.md). Each access step also
//! fetches the loop once outside its phase, just before it: the benchmark module's code that runs
//! before the clock starts (its call of `ktime_get`, §6) sits on the same page, so the timed loop
//! finds its page in the I-TLB and its line in the L1I after each flush. The code page lies in a
//! 16 MiB of its own (a kernel module's code is in the module area, away from its data), so its
//! walks share no descriptor line with the data's.

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
    + LOOP_INSTR;
};

/// The loop's instructions fetched per access (0: the data accesses alone, as before).
const LOOP_INSTR: (&str, u64, &str) = (
    "loop_instr",
    0,
    "instructions of the access loop fetched per page from one code page (0: none; 4: gcc -O2's ldr, add, cmp, bne for ARMv7); each access step first fetches the loop once outside its phase",
);

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
        + LOOP_INSTR;
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
    /// The loop's code page and its instructions per access (`loop_instr` > 0), else None.
    code: Option<(u64, u64)>,
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
        // Allocated after the phases, so that with loop_instr = 0 the layout is as before.
        let code = match get("loop_instr") {
            0 => None,
            k if k <= 1024 => Some((layout.alloc("code", 4096, 1 << 24).1, k)),
            k => {
                return Err(format!(
                    "{name}: loop_instr must be at most 1024 (one code page), got {k}"
                ))
            }
        };
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
            code,
        })
    }
}

impl MigrationBench {
    /// Steps 2 and 6: the N pages, each with the loop's fetches when `loop_instr` > 0.
    fn access_pages(&self, out: &mut Vec<Record>) {
        for i in 0..self.pages {
            let at = self.base + i * self.stride + self.offset;
            match self.code {
                None => out.push(load(0, at, 4)),
                Some((code, k)) => {
                    out.push(fetch(0, code, 4)); // ldr
                    out.push(load(0, at, 4));
                    for j in 1..k {
                        out.push(fetch(0, code + 4 * j, 4)); // add, cmp, bne
                    }
                }
            }
        }
    }
    /// The module's code before the clock starts, on the loop's page and line.
    fn warm_code(&self, out: &mut Vec<Record>) {
        if let Some((code, _)) = self.code {
            out.push(fetch(0, code, 4));
        }
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
        self.warm_code(out);
        out.push(ev(Event::PhaseBegin { region: self.first }));
        self.access_pages(out);
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
        self.warm_code(out);
        out.push(ev(Event::PhaseBegin {
            region: self.second,
        }));
        self.access_pages(out);
        out.push(ev(Event::PhaseEnd {
            region: self.second,
        }));
        self.core = next as u64;
    }
}
