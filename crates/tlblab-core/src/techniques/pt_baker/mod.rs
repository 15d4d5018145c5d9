//! PT-Baker (seed 001, Chatzopoulos 2024): a helper thread that keeps the application's
//! page-table entries in the shared caches, so that its page walks stop going to DRAM.
//!
//! The helper is a second software thread on another hardware thread of the same machine,
//! on the engine's timeline (`Technique::on_clock`): before each access of the records,
//! it runs while its clock is behind that access's, so its loads meet the shared caches in
//! time order with the application's. It sweeps one range of the application (a `Region` of
//! the workload, by default the largest: seed 001 §5.2, "PT-Baker thread only touches one
//! memory region"), `stride` pages at a time (§4.4.1: 8 pages = the 8 PTEs of one 64-byte
//! line; 512 pages = one PTE per last-level table), forever, in one of three modes:
//!
//! - `user` (§4.2, Alg. 2): a one-byte load of each visited page, through the helper's own
//!   TLBs (a miss walks and fills them, on its core) and then its data caches: the walk brings
//!   the PTE lines in, the load brings the application's data in too.
//! - `prefetch` (§4.4.2-4.4.3, §6.3.2): the same walk, fill and line fetch (§4.4.3.1 found that
//!   Zen 3's prefetch instruction walks and fills the TLB), but non-blocking: the helper is
//!   charged `PREFETCH_COST` of the access's cycles.
//! - `kernel` (§4.3, Algs. 3-4): a system call walks the range's page table in software,
//!   reading each upper-level entry once per table and each visited PTE, as data through the
//!   helper core's caches: no TLB lookup, no TLB fill, no page-walk cache, no data line
//!   (`System::read_page_table_line`). An unmapped upper level skips its whole span, as
//!   `walk_page_range` does.
//! - `none`: no helper (the pressure-only baseline of §6.1.2).
//!
//! Throttling (§4.4.4, Figs. 6.10-6.11): `nops` NOP iterations after each visited page, and a
//! `sleep_us` sleep after each sweep (plus Linux's timer slack). Placement (§4.4.5, Figs. 4.4,
//! 4.5): another core sharing the L3 (`ccx`, the seed's default, §6.1.1), the SMT sibling
//! (`smt`: L1, L2 and the core's TLB capacity shared; Zen 3 tags TLB entries with the hardware
//! thread, §4.4.5.1, which the zen3 preset's `hw_thread` tag models), or a core that shares no
//! cache (`other_ccx`: the helper warms a cache the application never reads). Memory pressure
//! (§5.1, §6.1.2, Fig. 3.3): stress-ng `cache` (1 thread) or `stream` (2 threads) stressors on
//! further cores sharing the L3, as companions too.
//!
//! On a machine with `timing.mlp` (seed 001's Zen 3 is out of order) the helper's references
//! are marked independent, as the stressors' are: Alg. 2's and Alg. 3's loops take each address
//! from a counter, so its loads and walks (user, prefetch) and its system call's PTE reads
//! (kernel) overlap in the miss slots; an upper-level entry is awaited (the next table's PTE
//! reads index it), and with NOPs the helper waits for its loads before each NOP loop (a loop
//! of 100 or more iterations fills the reorder buffer behind a load that has not returned).
//!
//! The application is taken to run on hardware thread 0 (its thread 0, as the engine places
//! it); the helper and the stressors are threads `HELPER_THREAD` and `STRESSOR_THREAD + k` (the
//! statistics' `threads` keep them apart from the application's).

mod helper;

use super::{Model, ParamInfo, Params, TechniqueInfo};
use crate::machine::MachineConfig;
use crate::system::{Declaration, SimError, System, Technique};
use tlblab_trace::record::WINDOW_REGION;
use tlblab_trace::{Access, Event};
use tlblab_types::{AccessKind, PhysAddr, SplitMix64, ThreadId, VirtAddr};

pub const INFO: TechniqueInfo = TechniqueInfo {
    name: "pt_baker",
    summary: "a helper thread sweeps the application's range to keep its page-table entries in the shared caches",
    seed: "seed 001 §4.2-4.3 (Algs. 2-4), §4.4.1 (stride), §4.4.4 (NOP/sleep), §4.4.5 (placement), §5.1/§6.1.2 (stress-ng pressure), §6.2 (virtualized)",
    params: &[
        ParamInfo {
            name: "mode",
            default: "kernel",
            meaning: "kernel: a system call reads the range's page-table entries (§4.3); user: one-byte loads (§4.2); prefetch: prefetch instructions (§6.3.2); none: no helper",
        },
        ParamInfo {
            name: "stride",
            default: "8",
            meaning: "pages between the helper's touches (§4.4.1: 8 = one PTE line, 512 = one PTE per table)",
        },
        ParamInfo {
            name: "region",
            default: "auto",
            meaning: "the workload region the helper sweeps (auto: the largest Region the records announce)",
        },
        ParamInfo {
            name: "range",
            default: "",
            meaning: "START:LEN, a virtual range to sweep instead of a region (hex or with k/M/G)",
        },
        ParamInfo {
            name: "nops",
            default: "0",
            meaning: "NOP iterations after each touched page (§4.4.4, Alg. 2 line 13, Alg. 3 line 9)",
        },
        ParamInfo {
            name: "nop_cycles",
            default: "1",
            meaning: "cycles per NOP iteration (assumed: one taken loop branch per cycle)",
        },
        ParamInfo {
            name: "sleep_us",
            default: "0",
            meaning: "microseconds slept after each sweep (§4.4.4, Alg. 2 line 17, Alg. 4 line 6)",
        },
        ParamInfo {
            name: "timer_slack_us",
            default: "50",
            meaning: "added to every sleep: Linux's default timer slack of a normal thread, 50 us (prctl(2) PR_SET_TIMERSLACK)",
        },
        ParamInfo {
            name: "place",
            default: "ccx",
            meaning: "ccx: another core sharing the L3 (§6.1.1); smt: the SMT sibling (§6.3.1); other_ccx: a core sharing no cache (Fig. 4.5)",
        },
        ParamInfo {
            name: "pressure",
            default: "none",
            meaning: "none, cache or stream: stress-ng stressors on further cores sharing the L3 (§5.1, §6.1.2)",
        },
        ParamInfo {
            name: "stressors",
            default: "0",
            meaning: "stressor threads (0: the seed's, 1 cache or 2 stream, §3.2)",
        },
        ParamInfo {
            name: "stressor_mlp",
            default: "24",
            meaning: "misses a stressor keeps in flight (its accesses are independent): its in-order cycles are divided by this; on a machine with timing.mlp its miss slots take this one's place",
        },
        ParamInfo {
            name: "in_windows",
            default: "0",
            meaning: "1: the helper and the stressors run only inside the records' window phases (a sampled run's window_phase: each window's companion warm-up and measured part), idle between them; 2: the stressors only (the helper throughout); 3: the helper only (the stressors throughout)",
        },
    ],
};

/// The helper's software thread id (apart from any workload's threads, below 2^20 as the
/// engine requires, small enough that its per-thread vector stays small).
pub const HELPER_THREAD: ThreadId = ThreadId(0xF000);
/// The first stressor's thread id; the k-th is this + k.
pub const STRESSOR_THREAD: u32 = 0xF001;

/// Share of a load's cycles a prefetch costs the helper: measured on a Zen 3 (AMD EPYC family
/// 25 model 1, "Milan") KVM guest while tlblab was planned, with a scratch program that was not
/// kept (not reproducible from this repository), over 8 GiB, 115-215 sweeps/s for a one-byte load every 8 pages (touch8) and
/// 220-340/s for prefetcht0 (prefetch8): midpoints 165 and 280, 165/280 = 0.59.
const PREFETCH_COST: f64 = 165.0 / 280.0;

/// One system call's entry and exit: `syscall(SYS_getcpu)` in a loop, 168.7 ns, measured on the same
/// Zen 3 KVM guest as `PREFETCH_COST` (a scratch program that was not kept).
const SYSCALL_NS: f64 = 168.7;

/// One iteration of the helper's loop besides its load and its NOPs (index update, compare,
/// branch): one cycle (assumed; the loop is a few instructions with no dependence on the load).
const LOOP_CYCLES: u64 = 1;

/// Virtual base of the stressors' buffers: far from every workload's layout (they start at
/// 256 MiB), in a top-level page-table entry of their own (seed 001 ran stress-ng as its own
/// process; sharing the application's address space shares only the root table's page).
const STRESS_BASE: u64 = 0x6000_0000_0000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    None,
    User,
    Prefetch,
    Kernel,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pressure {
    None,
    Cache,
    Stream,
}

/// Which range the helper sweeps.
#[derive(Clone, Debug)]
enum Target {
    /// The largest region announced.
    Largest,
    Named(String),
    Range(u64, u64),
}

/// One stress-ng stressor: its hardware thread, thread, buffer and position.
struct Stressor {
    cpu: usize,
    thread: ThreadId,
    /// Start of its buffer (cache) or of its three arrays (stream: a, b, c, each `bytes`).
    base: u64,
    bytes: u64,
    /// Next line (stream) / random state (cache).
    pos: u64,
    rng: SplitMix64,
}

pub struct PtBaker {
    mode: Mode,
    stride_pages: u64,
    target: Target,
    nops: u64,
    nop_cycles: u64,
    sleep_cycles: u64,
    syscall_cycles: u64,
    helper_cpu: usize,
    placement_error: Option<String>,
    pressure: Pressure,
    stressor_cpus: Vec<usize>,
    stressor_mlp: u64,
    /// The machine has `timing.mlp`: the stressors' accesses are marked independent and
    /// overlap in its miss slots, in place of `stressor_mlp`.
    machine_mlp: bool,
    l3_bytes: u64,
    l1_latency: u64,
    /// `in_windows` 1 or 3: the helper runs only inside window phases.
    helper_in_windows: bool,
    /// `in_windows` 1 or 2: the stressors run only inside window phases.
    stressors_in_windows: bool,
    // Run state.
    started: bool,
    /// Inside a window phase (`WINDOW_REGION`) of the records.
    in_window: bool,
    space: usize,
    /// The range being swept: [start, end), once known.
    range: Option<(u64, u64)>,
    /// Largest (or named) region seen: (start, len).
    best_region: Option<(u64, u64)>,
    cursor: u64,
    /// Kernel mode: the upper-level entry last read at each level (each is read once per
    /// table it points to, Alg. 3).
    last_upper: [u64; 5],
    stressors: Vec<Stressor>,
    sources: Vec<String>,
    // Counters.
    sweeps: u64,
    touches: u64,
    skipped_unmapped: u64,
    pte_reads: u64,
    pte_reads_by_source: Vec<u64>,
    busy_cycles: u64,
    sleep_cycles_total: u64,
    stressor_accesses: u64,
}

fn parse_range(text: &str) -> Option<(u64, u64)> {
    let (a, b) = text.split_once(':')?;
    let start = tlblab_trace::workloads::parse_number(a.trim())?;
    let len = tlblab_trace::workloads::parse_number(b.trim())?;
    Some((start, len))
}

/// Whether cores `a` and `b` of `m` share an instance of some cache level.
fn cores_share(m: &MachineConfig, a: usize, b: usize) -> bool {
    a == b
        || m.caches.iter().any(|c| {
            c.shared
                && (c.cores_per_instance == 0
                    || a / c.cores_per_instance == b / c.cores_per_instance)
        })
}

impl Model for PtBaker {
    fn build(p: &Params, machine: &MachineConfig, seed: u64) -> Result<Self, String> {
        let bad = |msg: String| format!("technique pt_baker: {msg}");
        let mode = match p.choice("mode", &["kernel", "user", "prefetch", "none"])? {
            "user" => Mode::User,
            "prefetch" => Mode::Prefetch,
            "none" => Mode::None,
            _ => Mode::Kernel,
        };
        let stride_pages = p.u64_in("stride", 1, 1 << 30)?;
        let target = if !p.text("range").is_empty() {
            let (s, l) = parse_range(p.text("range")).ok_or_else(|| {
                bad(format!(
                    "parameter 'range' expects START:LEN (e.g. 0x10000000:64M), found '{}'",
                    p.text("range")
                ))
            })?;
            if l == 0 {
                return Err(bad("parameter 'range' has length 0".into()));
            }
            Target::Range(s, l)
        } else if p.text("region") == "auto" {
            Target::Largest
        } else {
            Target::Named(p.text("region").to_string())
        };
        let mhz = machine.frequency_mhz;
        let us = |v: u64| (v as f64 * mhz).round() as u64;
        let sleep_us = p.u64_in("sleep_us", 0, 10_000_000)?;
        let slack_us = p.u64_in("timer_slack_us", 0, 1_000_000)?;
        let sleep_cycles = if sleep_us == 0 {
            0
        } else {
            us(sleep_us + slack_us)
        };
        let pressure = match p.choice("pressure", &["none", "cache", "stream"])? {
            "cache" => Pressure::Cache,
            "stream" => Pressure::Stream,
            _ => Pressure::None,
        };
        let nstress = match (p.u64_in("stressors", 0, 64)?, pressure) {
            (_, Pressure::None) => 0,
            (0, Pressure::Cache) => 1, // seed 001 §3.2: "one stressor thread and the cache parameter"
            (0, Pressure::Stream) => 2, // seed 001 §3.2: "two stressor threads and the stream parameter"
            (n, _) => n as usize,
        };
        // Placement, relative to the application on core 0's first hardware thread.
        let tpc = machine.threads_per_core;
        let place = p.choice("place", &["ccx", "smt", "other_ccx"])?;
        let placement = (|| -> Result<(usize, Vec<usize>), String> {
            let helper_core = match place {
            "smt" => {
                if tpc < 2 {
                    return Err(bad(format!(
                        "place=smt needs threads_per_core >= 2, the machine has {tpc}"
                    )));
                }
                0
            }
            "other_ccx" => (1..machine.cores)
                .find(|&c| !cores_share(machine, 0, c))
                .ok_or_else(|| {
                    bad("place=other_ccx needs a core that shares no cache with core 0 (give the shared L3 cores_per_instance)".into())
                })?,
            _ => (1..machine.cores)
                .find(|&c| cores_share(machine, 0, c))
                .ok_or_else(|| {
                    bad(format!(
                        "place=ccx needs a second core sharing a cache with core 0, the machine has {} core(s)",
                        machine.cores
                    ))
                })?,
        };
            let helper_cpu = helper_core * tpc + usize::from(place == "smt");
            let stressor_cpus: Vec<usize> = (1..machine.cores)
                .filter(|&c| c != helper_core && cores_share(machine, 0, c))
                .map(|c| c * tpc)
                .take(nstress)
                .collect();
            if stressor_cpus.len() < nstress {
                return Err(bad(format!(
                "pressure={} needs {nstress} more core(s) sharing the L3 with core 0 besides the helper's; the machine has {} core(s) (raise cores)",
                p.text("pressure"),
                machine.cores
            )));
            }
            Ok((helper_cpu, stressor_cpus))
        })();
        // A machine the placement does not fit is refused at install (`Technique::on_install`),
        // so that the catalog's defaults still build on any machine.
        let (helper_cpu, stressor_cpus, placement_error) = match placement {
            Ok((h, s)) => (h, s, None),
            Err(e) => (0, Vec::new(), Some(e)),
        };
        let (l3_bytes, l1_latency) = machine.stressor_targets();
        let stressor_mlp = p.u64_in("stressor_mlp", 1, 1024)?;
        let in_windows = p.u64_in("in_windows", 0, 3)?;
        let mut rng = SplitMix64::derive(seed, "technique.pt_baker");
        let stressors = stressor_cpus
            .iter()
            .enumerate()
            .map(|(k, &cpu)| Stressor {
                cpu,
                thread: ThreadId(STRESSOR_THREAD + k as u32),
                // Each stressor's buffers 1 TiB apart.
                base: STRESS_BASE + ((k as u64) << 40),
                bytes: match pressure {
                    // stress-ng `cache`: a buffer the size of the L3 (--cache-level 3, default).
                    Pressure::Cache => l3_bytes,
                    // stress-ng `stream`: three arrays of 4 x the L3 each (STREAM's rule).
                    _ => 4 * l3_bytes,
                },
                pos: 0,
                rng: SplitMix64::new(rng.next_u64()),
            })
            .collect();
        Ok(PtBaker {
            mode,
            stride_pages,
            target,
            nops: p.u64_in("nops", 0, 1 << 20)?,
            nop_cycles: p.u64_in("nop_cycles", 0, 1000)?,
            sleep_cycles,
            syscall_cycles: (SYSCALL_NS * mhz / 1000.0).round() as u64,
            helper_cpu,
            placement_error,
            pressure,
            stressor_cpus,
            stressor_mlp,
            machine_mlp: machine.timing.mlp.is_some(),
            l3_bytes,
            l1_latency,
            helper_in_windows: matches!(in_windows, 1 | 3),
            stressors_in_windows: matches!(in_windows, 1 | 2),
            started: false,
            in_window: false,
            space: 0,
            range: None,
            best_region: None,
            cursor: 0,
            last_upper: [u64::MAX; 5],
            stressors,
            sources: Vec::new(),
            sweeps: 0,
            touches: 0,
            skipped_unmapped: 0,
            pte_reads: 0,
            pte_reads_by_source: Vec::new(),
            busy_cycles: 0,
            sleep_cycles_total: 0,
            stressor_accesses: 0,
        })
    }
}

impl PtBaker {
    /// Set-up at the first call, when the system is known: the application's address space,
    /// the helper's and stressors' threads bound to their hardware threads.
    fn start(&mut self, sys: &mut System) -> Result<(), SimError> {
        self.started = true;
        for &cpu in std::iter::once(&self.helper_cpu).chain(&self.stressor_cpus) {
            if cpu >= sys.cpu_count() {
                return Err(SimError(format!(
                    "technique pt_baker: hardware thread {cpu} does not exist (the machine has {})",
                    sys.cpu_count()
                )));
            }
        }
        let app_cpu = sys.thread_cpu(ThreadId(0))?;
        if app_cpu == self.helper_cpu || self.stressor_cpus.contains(&app_cpu) {
            return Err(SimError(format!(
                "technique pt_baker: the application's thread 0 runs on hardware thread {app_cpu}, which the helper or a stressor needs"
            )));
        }
        self.space = sys.space_of(ThreadId(0)).unwrap_or(0);
        let mut sources = sys.stats().sources;
        sources.iter_mut().for_each(|s| *s = s.to_ascii_lowercase());
        self.pte_reads_by_source = vec![0; sources.len()];
        self.sources = sources;
        if self.mode != Mode::None {
            sys.bind_thread(HELPER_THREAD, self.space, self.helper_cpu);
            sys.context_switch(self.helper_cpu, Some(HELPER_THREAD))?;
            if self.machine_mlp {
                // Alg. 2's loop (user, prefetch) and Alg. 3's (kernel) take each address from
                // a loop counter, as the stressors' triad does: on an out-of-order core their
                // misses overlap (in user mode the loads and their walks, in kernel mode the
                // system call's PTE reads: `read_page_table_line`).
                sys.event(Event::Independent {
                    thread: HELPER_THREAD,
                    begin: true,
                })?;
            }
        }
        for s in &self.stressors {
            sys.bind_thread(s.thread, self.space, s.cpu);
            sys.context_switch(s.cpu, Some(s.thread))?;
            if self.machine_mlp {
                // stress-ng's stream triad and cache loop take their addresses from loop
                // counters and an RNG in registers: independent references.
                sys.event(Event::Independent {
                    thread: s.thread,
                    begin: true,
                })?;
            }
        }
        Ok(())
    }

    /// The range to sweep, once the records announced it.
    fn resolve_range(&mut self) {
        if self.range.is_none() {
            self.range = match &self.target {
                Target::Range(s, l) => Some((*s, s + l)),
                _ => self.best_region.map(|(s, l)| (s, s + l)),
            };
        }
    }
}

impl Technique for PtBaker {
    fn declaration(&self) -> Declaration {
        Declaration {
            name: INFO.name,
            levels: &[
                "helper_cpu",
                "range_start",
                "range_pages",
                "stressors",
                "l3_bytes",
            ],
            has_companion: self.mode != Mode::None || !self.stressors.is_empty(),
            ..Declaration::named(INFO.name)
        }
    }

    fn on_install(&mut self, sys: &mut System) -> Result<(), SimError> {
        if let Some(e) = &self.placement_error {
            return Err(SimError(e.clone()));
        }
        // Installed on a machine restored from a checkpoint (the helper is created after the
        // workload's initialisation, seed 001 §4.1 Alg. 1), the helper and the stressors begin
        // at the application's time, not at 0. Installed at a run's start, every clock is 0.
        if let Ok(app_cpu) = sys.thread_cpu(ThreadId(0)) {
            let now = sys.clock(app_cpu);
            for &cpu in std::iter::once(&self.helper_cpu).chain(&self.stressor_cpus) {
                if cpu < sys.cpu_count() {
                    sys.idle_until(cpu, now);
                }
            }
        }
        Ok(())
    }

    fn on_event(&mut self, sys: &mut System, _cpu: usize, event: &Event) -> Result<u64, SimError> {
        match *event {
            Event::PhaseBegin {
                region: WINDOW_REGION,
            } => self.in_window = true,
            Event::PhaseEnd {
                region: WINDOW_REGION,
            } => self.in_window = false,
            _ => {}
        }
        if let Event::Region { region, start, len } = *event {
            let wanted = match &self.target {
                Target::Largest => self.best_region.is_none_or(|(_, l)| len > l),
                Target::Named(n) => sys
                    .region_names()
                    .get(region as usize)
                    .is_some_and(|name| name == n),
                Target::Range(..) => false,
            };
            if wanted && self.range.is_none() {
                self.best_region = Some((start.0, len));
            }
        }
        Ok(0)
    }

    fn on_clock(&mut self, sys: &mut System, until: u64) -> Result<(), SimError> {
        if !self.started {
            self.start(sys)?;
        }
        // Between a sampled run's windows (and before the first), the companions `in_windows`
        // holds idle up to the application's time, and begin from it at the next window
        // phase, their own detailed warm-up (fast_forward.rs `window_phase`; SMARTS, Wunderlich
        // et al. ISCA 2003 §4). Their state (the helper's position, a stressor's) carries over.
        let helper_held = self.helper_in_windows && !self.in_window;
        let stressors_held = self.stressors_in_windows && !self.in_window;
        if helper_held && self.mode != Mode::None {
            sys.idle_until(self.helper_cpu, until);
        }
        if stressors_held {
            for &cpu in &self.stressor_cpus {
                sys.idle_until(cpu, until);
            }
        }
        if helper_held && stressors_held {
            return Ok(());
        }
        // A companion held idles to `until` above: the loop below, which steps those behind
        // it, passes it over.
        loop {
            // The agent furthest behind goes next (the helper first among equals).
            let mut best: Option<(u64, usize)> = None;
            if self.mode != Mode::None {
                let t = sys.clock(self.helper_cpu);
                if t < until {
                    best = Some((t, usize::MAX));
                }
            }
            for (k, s) in self.stressors.iter().enumerate() {
                let t = sys.clock(s.cpu);
                if t < until && best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, k));
                }
            }
            let Some((_, who)) = best else {
                return Ok(());
            };
            if who != usize::MAX {
                self.stressor_step(sys, who)?;
                continue;
            }
            self.resolve_range();
            if self.range.is_none() {
                // Not spawned yet: the application has not announced its region (seed 001
                // Alg. 1 creates the helper after init_workload).
                sys.idle_until(self.helper_cpu, until);
                continue;
            }
            self.helper_step(sys)?;
        }
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let (start, end) = self.range.unwrap_or((0, 0));
        let mut c = vec![
            ("helper_cpu".to_string(), self.helper_cpu as u64),
            ("range_start".to_string(), start),
            ("range_pages".to_string(), (end - start) / 4096),
            ("sweeps".to_string(), self.sweeps),
            ("pages_touched".to_string(), self.touches),
            ("pages_skipped_unmapped".to_string(), self.skipped_unmapped),
            ("pte_reads".to_string(), self.pte_reads),
            ("helper_busy_cycles".to_string(), self.busy_cycles),
            ("helper_sleep_cycles".to_string(), self.sleep_cycles_total),
            ("stressors".to_string(), self.stressors.len() as u64),
            ("stressor_accesses".to_string(), self.stressor_accesses),
            ("l3_bytes".to_string(), self.l3_bytes),
        ];
        for (name, n) in self.sources.iter().zip(&self.pte_reads_by_source) {
            c.push((format!("pte_reads_from_{name}"), *n));
        }
        c
    }
}
