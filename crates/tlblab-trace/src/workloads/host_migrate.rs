//! `tlblab host migrate`'s benchmark (runtime/bench/migrate_bench.c) as a workload, so the model
//! can predict the host's numbers step for step: the seed 000 migration benchmark (§4.3, Tables
//! A.3/A.4) as it runs on a host with a shared last-level cache, where the migration evicts only
//! the destination's private state and nothing flushes the shared level.
//!
//! Per iteration, as migrate_bench does it (two cores, A = 0 and B = 1):
//!   1. on B: touch `evict` other pages (one line each) and `evict_lines` more lines, which
//!      evicts B's TLBs and private caches (the shared level keeps what fits);
//!   2. on A: chase the N pages `passes` times (element i at page i * stride, line
//!      (i + (i >> 4)) & 63, in a random cyclic order);
//!   3. migrate to B;
//!   4. with `rewarm=1`, the phase `rewarm`: one load of each registered line (what libtlbmig's
//!      prefetch of the N lines leaves behind: the TLB filled, the lines cached; its cost on
//!      the host is measured, not this phase's in-order sum); then the phase `retouch`: the
//!      dependent chase over the N pages (`dep` in migrate_bench, timed).

use super::gen::*;
use super::WorkloadInfo;
use crate::record::Event;
use tlblab_types::{CoreId, SplitMix64, ThreadId};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "host_migrate",
    summary: "tlblab host migrate's benchmark: evict on B, chase N pages on A, migrate to B, (re-warm,) chase again",
    source: "seed 000 §4.3 as runtime/bench/migrate_bench.c runs it on a host",
    in_default_set: false,
    params: params! {
        pages: 16, "N, the pages chased";
        stride: 4096, "bytes between the chased pages";
        evict: 4096, "pages touched on B before each trial (migrate_bench's --evict-pages)";
        evict_lines: 16384, "further lines touched on B (migrate_bench's evict_bytes / 64: twice B's L2 from sysfs; 16384 is its 1 MiB fallback)";
        passes: 3, "chases on A before the migration";
        rewarm: 0, "1: load every registered line after the migration (phase rewarm) before the re-touch";
        iterations: 3, "trials";
    },
};

pub struct HostMigrate {
    pages: u64,
    stride: u64,
    evict: u64,
    evict_lines: u64,
    passes: u64,
    rewarm: bool,
    iterations: u64,
    data: u64,
    evict_base: u64,
    order: Vec<u64>,
    layout: Layout,
    rewarm_phase: u32,
    retouch_phase: u32,
}

impl HostMigrate {
    pub fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let name = "host_migrate";
        let pages = positive(name, "pages", get("pages"))?;
        let stride = positive(name, "stride", get("stride"))?;
        if stride % 64 != 0 {
            return Err(format!(
                "{name}: parameter stride must be a multiple of 64 bytes (a line), found {stride}"
            ));
        }
        let rewarm = get("rewarm");
        if rewarm > 1 {
            return Err(format!(
                "{name}: parameter rewarm expects 0 or 1, found {rewarm}"
            ));
        }
        let evict = get("evict");
        let evict_lines = get("evict_lines");
        // The visiting order, a u64 a page.
        super::memory::need(name, &[("pages", pages)], pages.saturating_mul(8))?;
        let mut layout = Layout::new(0x2000_0000);
        let (_, data) = layout.alloc("data", pages * stride + 4096, 1 << 21);
        let (_, evict_base) = layout.alloc("evict", evict * 4096 + evict_lines * 64, 1 << 21);
        let rewarm_phase = layout.phase("rewarm");
        let retouch_phase = layout.phase("retouch");
        // migrate_bench's random cyclic order (its own xorshift; any random cycle is the same
        // benchmark: every element is visited once per pass, dependent on the last).
        let mut order: Vec<u64> = (0..pages).collect();
        SplitMix64::derive(seed, "host_migrate").shuffle(&mut order);
        Ok(HostMigrate {
            pages,
            stride,
            evict,
            evict_lines,
            passes: get("passes"),
            rewarm: rewarm == 1,
            iterations: get("iterations"),
            data,
            evict_base,
            order,
            layout,
            rewarm_phase,
            retouch_phase,
        })
    }

    /// Element i's address: page i * stride, line (i + (i >> 4)) & 63 (migrate_bench.c).
    fn element(&self, i: u64) -> u64 {
        self.data + i * self.stride + ((i + (i >> 4)) & 63) * 64
    }

    fn chase(&self, out: &mut Vec<Record>) {
        for &i in &self.order {
            out.push(load(0, self.element(i), 8));
        }
    }

    fn move_to(core: u16, out: &mut Vec<Record>) {
        out.push(ev(Event::Migrate {
            thread: ThreadId(0),
            core: CoreId(core),
        }));
        out.push(switch(core, None, Some(0)));
    }
}

impl Rounds for HostMigrate {
    fn plan(&self) -> (&Layout, u64) {
        (&self.layout, self.iterations)
    }
    fn round(&mut self, out: &mut Vec<Record>) {
        // 1. evict on B.
        Self::move_to(1, out);
        for p in 0..self.evict {
            out.push(load(0, self.evict_base + p * 4096 + (p & 63) * 64, 8));
        }
        let lines = self.evict_base + self.evict * 4096;
        for l in 0..self.evict_lines {
            out.push(load(0, lines + l * 64, 8));
        }
        // 2. hot on A.
        Self::move_to(0, out);
        for _ in 0..self.passes {
            self.chase(out);
        }
        // 3. migrate to B.
        Self::move_to(1, out);
        // 4. (re-warm,) re-touch.
        if self.rewarm {
            out.push(ev(Event::PhaseBegin {
                region: self.rewarm_phase,
            }));
            for i in 0..self.pages {
                out.push(load(0, self.element(i), 8));
            }
            out.push(ev(Event::PhaseEnd {
                region: self.rewarm_phase,
            }));
        }
        out.push(ev(Event::PhaseBegin {
            region: self.retouch_phase,
        }));
        self.chase(out);
        out.push(ev(Event::PhaseEnd {
            region: self.retouch_phase,
        }));
    }
}
