//! The twin of `pt_baker`, from seed 001 (Chatzopoulos 2024): "a helper thread that
//! periodically iterates and accesses the workload's page table entries to preserve them
//! within the cache hierarchy" (Abstract, §4.1). The helper is spawned once the application
//! has allocated its region (Alg. 1: `init_workload`, then `create_pt_baker_thread`) and runs
//! on a hardware thread of its own beside the application (§4.4.5), forever:
//!
//! - `user` (§4.2, Alg. 2): for i = 0, stride, 2·stride, … pages of the region, a one-byte load
//!   (`access_byte = workload_array[i]`): through the helper's own TLB levels, a walk on a miss,
//!   then its data caches. `prefetch` (§4.4.2-4.4.3, §6.3.2): the same walk, fill and line, but
//!   non-blocking: the helper waits for a part of it only.
//! - `kernel` (§4.3, Algs. 3-4): one system call per sweep walks the range's page table as
//!   Linux's `walk_page_range` does: each upper-level entry once (PGD → PUD → PMD), then, in
//!   each last-level table, the PTEs from the table's first address in the range, `stride`
//!   apart, up to the table's end ("after accessing all the PTEs of a specific PT index, it
//!   moves to the next PT structure index"; Alg. 3 lines 12-16 stop at the table's `end`). An
//!   empty upper entry, or one mapping a huge page (§4.3: the walk "recognize[s] and
//!   iterate[s] over transparent huge pages"), ends at that entry: the walk moves to the next
//!   entry of its level. Every entry is read as data through the helper core's caches: no TLB,
//!   no page-walk cache, no data line.
//! - After every PTE read (kernel, Alg. 3 lines 9-11) or every visited page (user, Alg. 2 lines
//!   13-15), `nops` NOP iterations; after every sweep, `sleep_us` of sleep (Alg. 2 line 17,
//!   Alg. 4 line 6) plus the timer slack the catalog names.
//! - Placement (§4.4.5, Figs. 4.4-4.5): `ccx`, the first other core sharing a cache level's
//!   instance with core 0; `smt`, core 0's second hardware thread; `other_ccx`, the first core
//!   sharing none. Pressure (§5.1, §3.2): stress-ng `cache` (1 thread: a read and a write of a
//!   random line of an L3-sized buffer) or `stream` (2 threads: the triad a = b + s·c line by
//!   line over three arrays of 4 × the L3), each on a further core sharing a cache with core 0,
//!   its accesses `stressor_mlp` in flight at once.
//!
//! Naively: the helper and the stressors are agents on the reference's timeline; before each
//! access of the records, the agent with the smallest clock (the helper first among equals)
//! takes a step, until every agent's clock has reached that access's time. Their accesses go
//! through `ReferenceModel::step` (context switches included) and are not counted among the
//! records' references (`max_references` and warm-ups count the records only). The constants the
//! seed does not give are the catalog's (docs/technique-pt_baker.md): a loop iteration's 1 cycle
//! besides its load and NOPs; a system call's entry and exit, 168.7 ns (the engine's `SYSCALL_NS`); a
//! prefetch's wait, 165/280 of a load's cycles (the engine's `PREFETCH_COST`); the stressors' buffers at
//! 0x6000_0000_0000, 1 TiB apart. What the helper reads stays present in the shared cache levels
//! of its path (Zen 3's L3 serves a line held in another core's L2, seed 001 Table 5.3, event
//! 0x5B mask 0x12): each line it reads is looked up there again, counting nothing.

use super::{param, Twin};
use crate::machine::{MachineConfig, TechniqueSpec};
use crate::reference::ReferenceModel;
use tlblab_trace::record::WINDOW_REGION;
use tlblab_trace::{Access, Event};
use tlblab_types::{AccessKind, PageSize, SplitMix64, ThreadId, VirtAddr};

/// The helper's and the stressors' software threads (the catalog's: 0xF000, 0xF001 + k).
const HELPER: u32 = 0xF000;
const FIRST_STRESSOR: u32 = 0xF001;

struct Stressor {
    cpu: usize,
    thread: u32,
    base: u64,
    bytes: u64,
    next_line: u64,
    rng: SplitMix64,
}

pub(crate) struct PtBakerTwin {
    // The helper (§4.2-4.3, Algs. 2-4): what it reads, over which range, where it runs.
    /// "none", "user", "prefetch" or "kernel".
    mode: String,
    stride: u64,
    /// The range given (start, length), else the region named ("auto": the largest).
    range_given: Option<(u64, u64)>,
    region: String,
    helper_cpu: usize,
    /// A placement the machine cannot give: refused.
    stress_cache: bool,
    // Its pace: NOPs after each read or page, sleep and a system call per sweep (Alg. 2 lines
    // 13-17, Alg. 3 lines 9-11, Alg. 4 line 6), a loop iteration at the L1's latency.
    nops: u64,
    nop_cycles: u64,
    sleep: u64,
    syscall: u64,
    l1_latency: u64,
    // Pressure (§5.1): the stressors, their accesses in flight, the L3 their buffers cover.
    stressors: Vec<Stressor>,
    mlp: u64,
    l3_bytes: u64,
    /// `in_windows`: which companions run only inside window phases (1: both, 2: the
    /// stressors, 3: the helper).
    in_windows: u64,
    // The run: regions announced ((start, length), in order), the range swept ([start, end),
    // from the helper's spawn on), the next virtual address the helper visits, and in kernel
    // mode the upper-level entries read in this sweep.
    started: bool,
    /// Inside a window phase of the records.
    in_window: bool,
    regions: Vec<(u64, u64)>,
    range: Option<(u64, u64)>,
    at: u64,
    upper_read: Vec<u64>,
    space: usize,
    sources: Vec<String>,
    // Counters.
    sweeps: u64,
    touched: u64,
    skipped: u64,
    pte_reads: u64,
    pte_reads_by_source: Vec<u64>,
    busy: u64,
    slept: u64,
    stressor_accesses: u64,
}

/// A number as the catalog writes them: decimal, `0x` hexadecimal, or with k/M/G (2^10, 2^20,
/// 2^30).
fn parse(text: &str) -> Option<u64> {
    let t = text.trim();
    if let Some(h) = t.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok();
    }
    for (suffix, shift) in [
        ("k", 10),
        ("K", 10),
        ("m", 20),
        ("M", 20),
        ("g", 30),
        ("G", 30),
    ] {
        if let Some(d) = t.strip_suffix(suffix) {
            return d.parse::<u64>().ok()?.checked_mul(1 << shift);
        }
    }
    t.parse().ok()
}

fn int(spec: &TechniqueSpec, name: &str, default: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let text = param(spec, name, default);
    match parse(text) {
        Some(v) if v >= lo && v <= hi => Ok(v),
        _ => Err(format!("twin pt_baker: parameter {name}: '{text}'")),
    }
}

/// Whether cores `a` and `b` share an instance of a cache level of `m`.
fn share(m: &MachineConfig, a: usize, b: usize) -> bool {
    if a == b {
        return true;
    }
    for c in &m.caches {
        if c.shared
            && (c.cores_per_instance == 0 || a / c.cores_per_instance == b / c.cores_per_instance)
        {
            return true;
        }
    }
    false
}

impl PtBakerTwin {
    fn helper_runs(&self) -> bool {
        self.mode != "none"
    }

    /// The first call: the application's address space (its thread 0's), the helper and the
    /// stressors bound to their hardware threads and switched in.
    fn start(&mut self, r: &mut ReferenceModel) -> Result<(), String> {
        self.started = true;
        let (space, app_cpu) = r.thread(ThreadId(0))?;
        if app_cpu == self.helper_cpu || self.stressors.iter().any(|s| s.cpu == app_cpu) {
            return Err(format!(
                "twin pt_baker: the application runs on hardware thread {app_cpu}, the helper's or a stressor's"
            ));
        }
        self.space = space;
        self.sources = r
            .cache_names
            .iter()
            .map(|n| n.to_ascii_lowercase())
            .collect();
        self.sources.push("memory".into());
        self.pte_reads_by_source = vec![0; self.sources.len()];
        let mut agents = Vec::new();
        if self.helper_runs() {
            agents.push((HELPER, self.helper_cpu));
        }
        for s in &self.stressors {
            agents.push((s.thread, s.cpu));
        }
        for (thread, cpu) in agents {
            r.bind_thread(ThreadId(thread), space, cpu);
            r.context_switch(cpu, Some(thread))?;
        }
        if r.config.timing.mlp.is_some() {
            // The helper's loop takes each address from a counter (Alg. 2 line 4, Alg. 3
            // lines 15-16), as the stressors' do: their references are independent (the
            // machine's slots overlap them).
            if self.helper_runs() {
                r.event(Event::Independent {
                    thread: ThreadId(HELPER),
                    begin: true,
                })?;
            }
            for s in &self.stressors {
                r.event(Event::Independent {
                    thread: ThreadId(s.thread),
                    begin: true,
                })?;
            }
        }
        Ok(())
    }

    // ---- the reference's machine, as the helper's work touches it ----

    fn charge(r: &mut ReferenceModel, cpu: usize, cycles: u64) {
        r.counters[cpu].cycles += cycles;
        r.cpus[cpu].clock += cycles;
    }

    /// The part of the last access's `cycles` the agent did not wait for.
    fn give_back(r: &mut ReferenceModel, cpu: usize, cycles: u64) {
        let c = cycles.min(r.cpus[cpu].clock).min(r.counters[cpu].cycles);
        r.counters[cpu].cycles -= c;
        r.cpus[cpu].clock -= c;
    }

    /// One access of an agent's thread; not one of the records' references.
    fn agent_access(
        r: &mut ReferenceModel,
        thread: u32,
        kind: AccessKind,
        va: u64,
        size: u32,
    ) -> Result<u64, String> {
        let c = r.step(Access::new(ThreadId(thread), kind, VirtAddr(va), size))?;
        r.references = r.references.saturating_sub(1);
        Ok(c)
    }

    /// Guest-physical `gpa` as the host maps it (itself without virtualization).
    fn host_address(r: &ReferenceModel, gpa: u64) -> Option<u64> {
        match &r.host {
            None => Some(gpa),
            Some(h) => h
                .tables
                .mapping(gpa)
                .map(|(size, frame)| frame + (gpa & (size.bytes() - 1))),
        }
    }

    /// The line of `hpa` looked up again in the shared levels of `cpu`'s data path, counted
    /// nowhere.
    fn stays_shared(r: &mut ReferenceModel, cpu: usize, hpa: u64) {
        let path = r.cores[r.cpus[cpu].core].dcache.clone();
        for (at, &(k, stat)) in path.iter().enumerate() {
            let name = &r.cache_names[stat];
            if r.config.caches.iter().any(|c| &c.name == name && c.shared) {
                let (_, victim) = r.caches[k].access_victim(hpa, false);
                let writebacks = r.dram.as_ref().is_some_and(|d| d.writebacks);
                if let (Some(v), true) = (victim, writebacks) {
                    // Written back as a load's dirty victim is: below, else to memory.
                    if !path[at + 1..]
                        .iter()
                        .any(|&(b, _)| r.caches[b].mark_dirty(v))
                    {
                        r.dram.as_mut().expect("dram").pending.push((0, v));
                    }
                }
            }
        }
        r.settle_writebacks(cpu, 0);
    }

    /// A software walk of `va` in `space`: the entries read, root first, up to the leaf or the
    /// first empty entry, and the page mapped (its size, its frame's address), if any.
    fn soft_walk(r: &ReferenceModel, space: usize, va: u64) -> (Vec<u64>, Option<(PageSize, u64)>) {
        let levels = r.levels;
        let tables = &r.spaces[space].tables;
        let mut read = Vec::new();
        let mut table = tables.tables[&(0, 0)];
        for (l, lv) in levels.iter().enumerate() {
            read.push(table + ((va >> lv.shift) % (1 << lv.bits)) * lv.entry_bytes);
            for &s in lv.leaves {
                if let Some(&frame) = tables.pages.get(&(va >> s.shift(), s)) {
                    return (read, Some((s, frame)));
                }
            }
            match tables.tables.get(&(l + 1, va >> lv.shift)) {
                Some(&t) if l + 1 < levels.len() => table = t,
                _ => break,
            }
        }
        (read, None)
    }

    // ---- the helper ----

    fn helper_step(&mut self, r: &mut ReferenceModel, until: u64) -> Result<(), String> {
        let cpu = self.helper_cpu;
        if self.range.is_none() {
            // Spawned once the region it sweeps is known (Alg. 1): the range given, or the
            // largest region announced (the first of equals).
            self.range = match self.range_given {
                Some((s, l)) => Some((s, s + l)),
                None if self.region == "auto" => {
                    let mut best: Option<(u64, u64)> = None;
                    for &(s, l) in &self.regions {
                        if best.is_none_or(|(_, bl)| l > bl) {
                            best = Some((s, l));
                        }
                    }
                    best.map(|(s, l)| (s, s + l))
                }
                // The reference's records carry no region names: a named region never comes.
                None => None,
            };
            match self.range {
                Some((s, _)) => self.at = s,
                None => {
                    // Not spawned yet: the hardware thread idles up to `until`.
                    r.cpus[cpu].clock = r.cpus[cpu].clock.max(until);
                    return Ok(());
                }
            }
        }
        let (start, end) = self.range.expect("spawned");
        let va = self.at;
        if va >= end {
            // The sweep's end: the system call returns (kernel), the thread sleeps.
            self.sweeps += 1;
            self.at = start;
            self.upper_read.clear();
            let mut cycles = 1;
            if self.mode == "kernel" {
                cycles += self.syscall;
            }
            if self.sleep > 0 {
                cycles += self.syscall;
            }
            Self::charge(r, cpu, cycles);
            self.busy += cycles;
            if self.sleep > 0 {
                r.cpus[cpu].clock += self.sleep;
                self.slept += self.sleep;
            }
            return Ok(());
        }
        let mut cycles = 1;
        // Whether the NOPs run after this step (a PTE read, a visited page).
        let mut nopped = false;
        if self.mode == "kernel" {
            let (read, leaf) = Self::soft_walk(r, self.space, va);
            let last = r.levels.len() - 1;
            for (l, &pa) in read.iter().enumerate() {
                if l < last {
                    if self.upper_read.contains(&pa) {
                        continue;
                    }
                    self.upper_read.push(pa);
                }
                let Some(hpa) = Self::host_address(r, pa) else {
                    continue;
                };
                let path = r.cores[r.cpus[cpu].core].dcache.clone();
                let (mut lat, src) = r.load(cpu, &path, hpa, false);
                let long = src == r.cache_names.len();
                let now = r.cpus[cpu].clock;
                if r.config.timing.mlp.is_some() {
                    // A load of the helper's thread: in flight when it is marked and from
                    // memory. An upper entry is the next table's address: the reads after it
                    // wait for its line (and only its).
                    let marked = r.cpus[cpu]
                        .current
                        .is_some_and(|t| r.independent.contains(&t));
                    lat = r.overlapped(cpu, lat, long as u64, None, false, false);
                    if l < last && marked && long {
                        lat = r.in_flight[cpu].0.last().expect("in flight").0 - now;
                    }
                } else {
                    // From memory: on the DRAM channels (`timing.dram`) at the read's start,
                    // and so are its evictions' writebacks.
                    lat += r.dram_queue(now, long as u64);
                }
                Self::charge(r, cpu, lat);
                Self::stays_shared(r, cpu, hpa);
                self.busy += lat;
                self.pte_reads += 1;
                self.pte_reads_by_source[src] += 1;
            }
            let stop = read.len() - 1;
            if stop < last {
                // An empty or huge entry above the PTEs: on to the next entry of its level.
                let span = 1u64 << r.levels[stop].shift;
                self.at = (va & !(span - 1)) + span;
            } else {
                cycles += self.nops * self.nop_cycles;
                nopped = true;
                let table_span = 1u64 << r.levels[last - 1].shift;
                let table_end = (va & !(table_span - 1)) + table_span;
                self.at = (va + self.stride * 4096).min(table_end);
            }
            if leaf.is_some() {
                self.touched += 1;
            } else {
                self.skipped += 1;
            }
        } else {
            cycles += self.nops * self.nop_cycles;
            nopped = true;
            let top = &r.levels[0];
            let inside = va >> (top.shift + top.bits) == 0;
            let leaf = if inside {
                r.spaces[self.space].tables.mapping(va)
            } else {
                None
            };
            if let Some((size, frame)) = leaf {
                let c = Self::agent_access(r, HELPER, AccessKind::Load, va, 1)?;
                let (read, _) = Self::soft_walk(r, self.space, va);
                for pa in read {
                    if let Some(hpa) = Self::host_address(r, pa) {
                        Self::stays_shared(r, cpu, hpa);
                    }
                }
                if let Some(hpa) = Self::host_address(r, frame + (va & (size.bytes() - 1))) {
                    Self::stays_shared(r, cpu, hpa);
                }
                let waited = if self.mode == "prefetch" {
                    let w = (c as f64 * (165.0 / 280.0)).round() as u64;
                    Self::give_back(r, cpu, c - w);
                    w
                } else {
                    c
                };
                self.busy += waited;
                self.touched += 1;
            } else {
                // A page the application has not touched: not loaded (§4.2: the helper starts
                // after the region is populated).
                self.skipped += 1;
            }
            self.at = va + self.stride * 4096;
        }
        if nopped && self.nops > 0 && r.config.timing.mlp.is_some() && self.mode != "prefetch" {
            // The NOP loop fills the reorder buffer behind a load not yet returned: the helper
            // waits for its loads before its NOPs (a prefetch retires without its line).
            let before = r.cpus[cpu].clock;
            r.wait_in_flight(cpu);
            self.busy += r.cpus[cpu].clock - before;
        }
        Self::charge(r, cpu, cycles);
        self.busy += cycles;
        Ok(())
    }

    // ---- the stressors ----

    fn stressor_step(&mut self, r: &mut ReferenceModel, k: usize) -> Result<(), String> {
        let mlp = self.mlp;
        let s = &mut self.stressors[k];
        let lines = s.bytes / 64;
        let mut touches: Vec<(AccessKind, u64)> = Vec::new();
        let extra = if self.stress_cache {
            let line = s.rng.next_u64() % lines;
            touches.push((AccessKind::Load, s.base + line * 64));
            touches.push((AccessKind::Store, s.base + line * 64));
            1
        } else {
            let line = s.next_line % lines;
            s.next_line += 1;
            // a = b + s·c: b's line, c's line, then a's.
            touches.push((AccessKind::Load, s.base + s.bytes + line * 64));
            touches.push((AccessKind::Load, s.base + 2 * s.bytes + line * 64));
            touches.push((AccessKind::Store, s.base + line * 64));
            // The line's 7 other elements: one a cycle, at least the L1's latency.
            self.l1_latency.max(7)
        };
        let (cpu, thread) = (s.cpu, s.thread);
        for (kind, va) in touches {
            let c = Self::agent_access(r, thread, kind, va, 8)?;
            if r.config.timing.mlp.is_none() {
                Self::give_back(r, cpu, c - c / mlp);
            }
            self.stressor_accesses += 1;
        }
        Self::charge(r, cpu, extra);
        Ok(())
    }
}

impl Twin for PtBakerTwin {
    fn new(spec: &TechniqueSpec, m: &MachineConfig, seed: u64) -> Result<PtBakerTwin, String> {
        let mode = param(spec, "mode", "kernel").to_string();
        if !["none", "user", "prefetch", "kernel"].contains(&mode.as_str()) {
            return Err(format!("twin pt_baker: mode '{mode}'"));
        }
        let stride = int(spec, "stride", "8", 1, 1 << 30)?;
        let range_text = param(spec, "range", "");
        let range_given = if range_text.is_empty() {
            None
        } else {
            let (a, b) = range_text
                .split_once(':')
                .ok_or_else(|| format!("twin pt_baker: range '{range_text}'"))?;
            match (parse(a), parse(b)) {
                (Some(s), Some(l)) if l > 0 => Some((s, l)),
                _ => return Err(format!("twin pt_baker: range '{range_text}'")),
            }
        };
        let mhz = m.frequency_mhz;
        let sleep_us = int(spec, "sleep_us", "0", 0, 10_000_000)?;
        let slack_us = int(spec, "timer_slack_us", "50", 0, 1_000_000)?;
        // The catalog: a sleep lasts sleep_us plus the timer slack; none when sleep_us is 0.
        let sleep = if sleep_us == 0 {
            0
        } else {
            ((sleep_us + slack_us) as f64 * mhz).round() as u64
        };
        let pressure = param(spec, "pressure", "none");
        let wanted = int(spec, "stressors", "0", 0, 64)?;
        let n_stress = match pressure {
            "none" => 0,
            // §3.2: "one stressor thread and the cache parameter", "two ... stream".
            "cache" if wanted == 0 => 1,
            "stream" if wanted == 0 => 2,
            "cache" | "stream" => wanted as usize,
            other => return Err(format!("twin pt_baker: pressure '{other}'")),
        };
        let nops = int(spec, "nops", "0", 0, 1 << 20)?;
        let nop_cycles = int(spec, "nop_cycles", "1", 0, 1000)?;
        let mlp = int(spec, "stressor_mlp", "24", 1, 1024)?;
        let in_windows = int(spec, "in_windows", "0", 0, 3)?;
        // Placement: the application runs on core 0's first hardware thread.
        let tpc = m.threads_per_core;
        let place = param(spec, "place", "ccx");
        let helper_core = match place {
            "smt" if tpc >= 2 => 0,
            "smt" => {
                return Err("twin pt_baker: place=smt needs two hardware threads a core".into())
            }
            "other_ccx" => (1..m.cores)
                .find(|&c| !share(m, 0, c))
                .ok_or("twin pt_baker: no core shares no cache with core 0")?,
            "ccx" => (1..m.cores)
                .find(|&c| share(m, 0, c))
                .ok_or("twin pt_baker: no other core shares a cache with core 0")?,
            other => return Err(format!("twin pt_baker: place '{other}'")),
        };
        let helper_cpu = helper_core * tpc + if place == "smt" { 1 } else { 0 };
        let mut stress_cpus = Vec::new();
        for c in 1..m.cores {
            if stress_cpus.len() < n_stress && c != helper_core && share(m, 0, c) {
                stress_cpus.push(c * tpc);
            }
        }
        if stress_cpus.len() < n_stress {
            return Err(
                "twin pt_baker: too few cores sharing a cache with core 0 for the stressors".into(),
            );
        }
        let (l3_bytes, l1_latency) = m.stressor_targets();
        let mut rng = SplitMix64::derive(seed, "technique.pt_baker");
        let stress_cache = pressure == "cache";
        let mut stressors = Vec::new();
        for (k, &cpu) in stress_cpus.iter().enumerate() {
            stressors.push(Stressor {
                cpu,
                thread: FIRST_STRESSOR + k as u32,
                base: 0x6000_0000_0000 + ((k as u64) << 40),
                // stress-ng `cache`: one L3-sized buffer; `stream`: arrays of 4 x the L3.
                bytes: if stress_cache { l3_bytes } else { 4 * l3_bytes },
                next_line: 0,
                rng: SplitMix64::new(rng.next_u64()),
            });
        }
        Ok(PtBakerTwin {
            mode,
            stride,
            range_given,
            region: param(spec, "region", "auto").to_string(),
            nops,
            nop_cycles,
            sleep,
            syscall: (168.7 * mhz / 1000.0).round() as u64,
            helper_cpu,
            stress_cache,
            stressors,
            mlp,
            l3_bytes,
            l1_latency,
            in_windows,
            started: false,
            in_window: false,
            space: 0,
            regions: Vec::new(),
            range: None,
            at: 0,
            upper_read: Vec::new(),
            sources: Vec::new(),
            sweeps: 0,
            touched: 0,
            skipped: 0,
            pte_reads: 0,
            pte_reads_by_source: Vec::new(),
            busy: 0,
            slept: 0,
            stressor_accesses: 0,
        })
    }

    fn on_event(&mut self, _r: &mut ReferenceModel, e: &Event) -> Result<(), String> {
        match *e {
            Event::Region { start, len, .. } => self.regions.push((start.0, len)),
            Event::PhaseBegin { region } if region == WINDOW_REGION => self.in_window = true,
            Event::PhaseEnd { region } if region == WINDOW_REGION => self.in_window = false,
            _ => {}
        }
        Ok(())
    }

    fn on_clock(&mut self, r: &mut ReferenceModel, until: u64) -> Result<(), String> {
        if !self.helper_runs() && self.stressors.is_empty() {
            return Ok(());
        }
        if !self.started {
            self.start(r)?;
        }
        // Outside the records' window phases the agents `in_windows` holds idle up to
        // `until`, and the others run.
        let helper_held = !self.in_window && (self.in_windows == 1 || self.in_windows == 3);
        let stressors_held = !self.in_window && (self.in_windows == 1 || self.in_windows == 2);
        let mut held: Vec<usize> = Vec::new();
        if stressors_held {
            held.extend(self.stressors.iter().map(|s| s.cpu));
        }
        if helper_held && self.helper_runs() {
            held.push(self.helper_cpu);
        }
        for cpu in held {
            r.cpus[cpu].clock = r.cpus[cpu].clock.max(until);
        }
        loop {
            // The agent with the smallest clock below `until`; the helper first among equals.
            let mut next: Option<(u64, usize)> = None;
            if self.helper_runs() && !helper_held && r.cpus[self.helper_cpu].clock < until {
                next = Some((r.cpus[self.helper_cpu].clock, 0));
            }
            for (k, s) in self.stressors.iter().enumerate() {
                if stressors_held {
                    break;
                }
                let t = r.cpus[s.cpu].clock;
                if t < until && next.is_none_or(|(best, _)| t < best) {
                    next = Some((t, k + 1));
                }
            }
            match next {
                None => return Ok(()),
                Some((_, 0)) => self.helper_step(r, until)?,
                Some((_, k)) => self.stressor_step(r, k - 1)?,
            }
        }
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let (start, end) = self.range.unwrap_or((0, 0));
        let mut c: Vec<(String, u64)> = [
            ("helper_cpu", self.helper_cpu as u64),
            ("range_start", start),
            ("range_pages", (end - start) / 4096),
            ("sweeps", self.sweeps),
            ("pages_touched", self.touched),
            ("pages_skipped_unmapped", self.skipped),
            ("pte_reads", self.pte_reads),
            ("helper_busy_cycles", self.busy),
            ("helper_sleep_cycles", self.slept),
            ("stressors", self.stressors.len() as u64),
            ("stressor_accesses", self.stressor_accesses),
            ("l3_bytes", self.l3_bytes),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        for (name, n) in self.sources.iter().zip(&self.pte_reads_by_source) {
            c.push((format!("pte_reads_from_{name}"), *n));
        }
        c
    }
}
