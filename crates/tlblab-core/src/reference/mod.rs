//! A deliberately naive reference model of the whole machine, for differential testing
//! (ARCHITECTURE.md "Correctness tiers"; what it covers: `docs/reference-model.md`).
//!
//! It implements the same specification as `system` — TLB levels with their tags and locks,
//! page-walk caches, walks whose references go through the caches (nested under
//! virtualization), demand paging, caches with dirty lines and flush costs, several cores and
//! SMT hardware threads on one timeline, address spaces with ASIDs and the context-switch
//! policies, shootdowns, flushes, both timing models — with the simplest data structures that
//! could work: each set is a `Vec` of entries in recency order, a page table is a `HashMap`
//! from (level, VA prefix) to a table's physical address, a lookup is a linear search, the
//! timeline is a queue per hardware thread and a search for the smallest clock. Nothing here
//! is optimized, and nothing of the engine is called: the frame allocator (`frames.rs`) and
//! each format's level geometry (`formats.rs`) are the reference's own; from the engine's
//! crate it reads only the configuration (`MachineConfig`, `RunOptions`) and the record types.
//! Property tests check that the engine agrees with it (`tests/reference_parity/`,
//! `tests/reference_machine.rs`).

mod access;
mod caches;
mod counters;
mod domains;
mod events;
mod formats;
mod frames;
mod kernel;
mod lock;
mod parts;
mod switch;
mod tables;
mod timeline;
mod timing;
pub(crate) mod twins;
mod walk;

pub use counters::{RefCounters, RefEntry, RefOsCounters, RefOutcome};
pub use domains::Fault;
pub use twins::{Twin, TwinCycles};

use crate::cache::CacheKind;
use crate::machine::{MachineConfig, PwcRestart, TimingModel};
use crate::options::RunOptions;
use crate::os::{kernel_path_pages, kernel_text_sections, SwitchPolicy};
use crate::page_table::TableLayout;
use crate::tlb::TlbKind;
use caches::{CacheOutcome, NaiveCache, NaivePwc};
use formats::RefLevel;
use frames::RefFrames;
use parts::{Entry, NaiveTlb, Who};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use tables::{leaf_level, page_size_of_shift, Tables};
use timing::RefDram;
use tlblab_trace::record::{flush, ALL_CORES, NO_THREAD};
use tlblab_trace::{Access, Event, Record};
use tlblab_types::{AccessKind, PageSize, ThreadId, VirtAddr};

/// What the counters were when the region of interest began (`set_warmup`).
#[derive(Clone)]
struct Roi {
    cores: Vec<RefCounters>,
    os: RefOsCounters,
    references: u64,
}

struct Space {
    id: u32,
    asid: u16,
    generation: u64,
    tables: Tables,
    /// (start, end, page size, shared object, global), newest first.
    regions: Vec<(u64, u64, PageSize, Option<u32>, bool)>,
}

struct Host {
    levels: &'static [RefLevel],
    frames: RefFrames,
    tables: Tables,
    page_size: PageSize,
}

struct Core {
    /// (TLB instance, stats index) in lookup order.
    itlb: Vec<(usize, usize)>,
    dtlb: Vec<(usize, usize)>,
    /// (cache instance, stats index) in lookup order.
    icache: Vec<(usize, usize)>,
    dcache: Vec<(usize, usize)>,
    wcache: Vec<(usize, usize)>,
    /// Page-walk caches (indices into `pwcs` / `host_pwcs`), deepest level first.
    pwcs: Vec<usize>,
    host_pwcs: Vec<usize>,
}

struct Cpu {
    core: usize,
    hw_thread: u8,
    clock: u64,
    current: Option<u32>,
    last_space: Option<usize>,
}

/// A long miss in flight under `timing.mlp`: (its completion, its thread's count of marked
/// references at its issue, its walk's end or 0).
type MissInFlight = (u64, u64, u64);

/// The naive machine.
pub struct ReferenceModel {
    config: MachineConfig,
    opts: RunOptions,
    policy: SwitchPolicy,
    levels: &'static [RefLevel],
    frames: RefFrames,
    host: Option<Host>,
    spaces: Vec<Space>,
    tlbs: Vec<NaiveTlb>,
    caches: Vec<NaiveCache>,
    cache_names: Vec<String>,
    pwcs: Vec<NaivePwc>,
    host_pwcs: Vec<NaivePwc>,
    cores: Vec<Core>,
    cpus: Vec<Cpu>,
    /// Software thread → (address space, hardware thread).
    threads: BTreeMap<u32, (usize, usize)>,
    counters: Vec<RefCounters>,
    core_os: Vec<RefCounters>,
    os: RefOsCounters,
    asid_next: u16,
    asid_max: u16,
    generation: u64,
    references: u64,
    /// References of warm-up (`set_warmup`; 0: none) and the counters when it ended.
    warmup: u64,
    roi: Option<Roi>,
    /// Whether the statistics carry the data TLB stall cycles.
    stall_reported: bool,
    /// Per core, with a write buffer (`timing.write_buffer`): the times its buffered stores
    /// will have drained, oldest first, and when the memory bus is next free.
    write_buffers: Vec<(Vec<u64>, u64)>,
    /// Per hardware thread, with `timing.mlp`: its long misses in flight, and its count of
    /// marked references.
    in_flight: Vec<(Vec<MissInFlight>, u64)>,
    /// Per hardware thread, with `timing.mlp`: when each of its marked references completed,
    /// the n-th at [n - 1], and the next record reference's producer, references back
    /// (`Event::Depends`; 0: none).
    completions: Vec<(Vec<u64>, u32)>,
    /// Per hardware thread, whether a marked reference has had a producer (`Event::Depends`):
    /// from then on the reorder window and a wait for the misses in flight also wait for
    /// every marked reference's completion (`overlapped`).
    waited: Vec<bool>,
    /// Per hardware thread, with `timing.mlp.issue_instructions`: the records' references it
    /// has issued (the instructions before the n-th end at cycle floor(n * instructions /
    /// width) of its work).
    issued: Vec<u64>,
    /// A record's access is being stepped (`run`), not a twin's agent's.
    stepping_record: bool,
    /// With `timing.dram`: when each channel is free again (in 1/2^DRAM_FRACTION_BITS
    /// cycles), a line's time on one, and the lines transferred, waited, and cycles waited.
    dram: Option<RefDram>,
    /// Software threads whose references are marked independent (`Event::Independent`).
    independent: BTreeSet<u32>,
    /// The technique's naive twin, if one is installed (`twins/`).
    twin: Option<Box<dyn Twin>>,
    /// ARM domains, when a twin turns them on (seed 002, `domains.rs`).
    domains: Option<domains::RefDomains>,
    /// Whether TLB entries count their uses (`Entry::uses`): a twin that filters by them
    /// (tlb_migration's `used` filter and predictors, seed 000 §5.2, §9).
    track_uses: bool,
    /// The frames of shared objects (`MapShared`, docs/formats/trace.md §6: "every process
    /// that maps the same object shares its frames"): (object, the page's index counted from
    /// the mapping's start, page size) → frame address, taken at the first touch by any
    /// mapper. Nothing is freed, so a page unmapped and touched again gets its frame back.
    shared_frames: HashMap<(u32, u64, PageSize), u64>,
}

impl ReferenceModel {
    /// The reference of one thread (0) in one address space on the first hardware thread of
    /// `config`: `caches`/`data_accesses` as in `RunOptions`.
    pub fn new(
        config: &MachineConfig,
        seed: u64,
        caches_on: bool,
        data_accesses: bool,
    ) -> ReferenceModel {
        let opts = RunOptions {
            seed,
            caches: caches_on,
            data_accesses,
            ..RunOptions::default()
        };
        let mut r = ReferenceModel::machine(config, opts);
        let space = r.create_space().expect("memory for a root table");
        r.bind_thread(ThreadId(0), space, 0);
        r
    }

    /// The model of a TLB-only run (`RunOptions::walks` off) of `new`'s thread: a miss in
    /// every level costs the walker's latency and fills the page's identity frame; no table
    /// is read.
    pub fn without_walks(self) -> ReferenceModel {
        let mut r = ReferenceModel::machine(&self.config, RunOptions::tlb_only(self.opts.seed));
        let space = r.create_space().expect("memory for a root table");
        r.bind_thread(ThreadId(0), space, 0);
        for (from, to) in self.spaces.iter().zip(r.spaces.iter_mut()) {
            to.regions.clone_from(&from.regions);
        }
        r
    }

    /// The reference of `config` run with `opts`, before any address space exists (as
    /// `System::new`).
    pub fn machine(config: &MachineConfig, opts: RunOptions) -> ReferenceModel {
        let seed = opts.seed;
        let ncores = config.cores;
        let mut order: Vec<usize> = (0..config.tlbs.len()).collect();
        order.sort_by_key(|&i| (config.tlbs[i].level, config.tlbs[i].kind as u8));
        // One instance per core unless shared; the random policy's generator is seeded per
        // instance as the engine seeds it (seed ^ config index << 8 ^ core << 20).
        let mut tlbs = Vec::new();
        let mut tlb_of = vec![Vec::new(); config.tlbs.len()];
        for (ci, t) in config.tlbs.iter().enumerate() {
            let base = seed ^ (ci as u64) << 8;
            if t.shared {
                tlbs.push(NaiveTlb::new(t, base));
                tlb_of[ci] = vec![tlbs.len() - 1; ncores];
            } else {
                for core in 0..ncores {
                    tlbs.push(NaiveTlb::new(t, base ^ (core as u64) << 20));
                    tlb_of[ci].push(tlbs.len() - 1);
                }
            }
        }
        let cache_cfgs = if opts.caches {
            config.caches.clone()
        } else {
            Vec::new()
        };
        let mut corder: Vec<usize> = (0..cache_cfgs.len()).collect();
        corder.sort_by_key(|&i| (cache_cfgs[i].level, cache_cfgs[i].kind as u8));
        let cache_names = corder.iter().map(|&i| cache_cfgs[i].name.clone()).collect();
        let mut caches = Vec::new();
        let mut cache_of = vec![Vec::new(); cache_cfgs.len()];
        for (ci, c) in cache_cfgs.iter().enumerate() {
            let base = seed ^ (ci as u64) << 8;
            // A shared level: one instance per group of `cores_per_instance` cores (0: all).
            let group = match (c.shared, c.cores_per_instance) {
                (false, _) => 1,
                (true, 0) => ncores,
                (true, n) => n,
            };
            for core in 0..ncores {
                if core % group == 0 {
                    let salt = if c.shared { core / group } else { core };
                    caches.push(NaiveCache::new(c, base ^ (salt as u64) << 20));
                }
                cache_of[ci].push(caches.len() - 1);
            }
        }
        let levels = formats::levels(config.page_table.format);
        let mut pwcs = Vec::new();
        let mut host_pwcs = Vec::new();
        let mut cores = Vec::new();
        for core in 0..ncores {
            let tpath = |want: TlbKind| -> Vec<(usize, usize)> {
                order
                    .iter()
                    .enumerate()
                    .filter(|(_, &ci)| matches!(config.tlbs[ci].kind, k if k == want || k == TlbKind::Unified))
                    .map(|(stat, &ci)| (tlb_of[ci][core], stat))
                    .collect()
            };
            let cpath = |want: CacheKind, from: u8| -> Vec<(usize, usize)> {
                corder
                    .iter()
                    .enumerate()
                    .filter(|(_, &ci)| {
                        let c = &cache_cfgs[ci];
                        (c.kind == want || c.kind == CacheKind::Unified) && c.level >= from
                    })
                    .map(|(stat, &ci)| (cache_of[ci][core], stat))
                    .collect()
            };
            let mut mine: Vec<usize> = Vec::new();
            for p in &config.walker.pwcs {
                pwcs.push(NaivePwc::new(p, seed ^ (core as u64) << 24));
                mine.push(pwcs.len() - 1);
            }
            mine.sort_by_key(|&i| std::cmp::Reverse(pwcs[i].level));
            let mut mine_host: Vec<usize> = Vec::new();
            if let Some(v) = &config.virtualization {
                for p in &v.host_pwcs {
                    host_pwcs.push(NaivePwc::new(p, seed ^ (core as u64) << 28));
                    mine_host.push(host_pwcs.len() - 1);
                }
                mine_host.sort_by_key(|&i| std::cmp::Reverse(host_pwcs[i].level));
            }
            cores.push(Core {
                itlb: tpath(TlbKind::Instr),
                dtlb: tpath(TlbKind::Data),
                icache: cpath(CacheKind::Instr, 0),
                dcache: cpath(CacheKind::Data, 0),
                // An uncached walker (ARMv4/v5) reads memory directly: no cache on its path.
                wcache: if config.walker.uncached {
                    Vec::new()
                } else {
                    cpath(CacheKind::Data, config.walker.first_cache_level)
                },
                pwcs: mine,
                host_pwcs: mine_host,
            });
        }
        let cpus: Vec<Cpu> = (0..ncores * config.threads_per_core)
            .map(|i| Cpu {
                core: i / config.threads_per_core,
                hw_thread: (i % config.threads_per_core) as u8,
                clock: 0,
                current: None,
                last_space: None,
            })
            .collect();
        // Under virtualization the guest's frames come from guest-physical memory (its own
        // generator), the host's tables and frames from the machine's memory.
        let (frames, host) = match &config.virtualization {
            None => (RefFrames::new(&config.memory, seed), None),
            Some(v) => {
                let guest = v.guest_memory(&config.memory);
                let hlevels = formats::levels(v.host_format);
                let mut hframes = RefFrames::new(&config.memory, seed);
                let tables = Tables::new(hlevels, TableLayout::OwnFrame, &mut hframes)
                    .expect("memory for the host root");
                (
                    RefFrames::new(&guest, seed ^ 0x6e65_7374),
                    Some(Host {
                        levels: hlevels,
                        frames: hframes,
                        tables,
                        page_size: v.host_page_size,
                    }),
                )
            }
        };
        let policy = match opts.os.switch {
            SwitchPolicy::Auto if config.tlbs.iter().all(|t| t.tags.asid) => {
                SwitchPolicy::AsidTagged
            }
            SwitchPolicy::Auto => SwitchPolicy::FlushAll,
            p => p,
        };
        // Statistics list every configured level (no cache level when caches are off).
        let (nt, nc) = (config.tlbs.len(), cache_cfgs.len());
        ReferenceModel {
            counters: vec![RefCounters::new(nt, nc); cpus.len()],
            core_os: vec![RefCounters::new(nt, nc); ncores],
            config: config.clone(),
            opts,
            policy,
            levels,
            frames,
            host,
            spaces: Vec::new(),
            tlbs,
            caches,
            cache_names,
            pwcs,
            host_pwcs,
            cores,
            cpus,
            threads: BTreeMap::new(),
            os: RefOsCounters::default(),
            asid_next: 1,
            asid_max: ((1u32 << opts.os.asid_bits) - 1) as u16,
            generation: 1,
            references: 0,
            warmup: 0,
            roi: None,
            stall_reported: opts.stall_cycles,
            write_buffers: vec![(Vec::new(), 0); ncores],
            in_flight: vec![(Vec::new(), 0); ncores * config.threads_per_core],
            completions: vec![(Vec::new(), 0); ncores * config.threads_per_core],
            waited: vec![false; ncores * config.threads_per_core],
            issued: vec![0; ncores * config.threads_per_core],
            stepping_record: false,
            dram: config.timing.dram.map(|d| RefDram {
                given: vec![Vec::new(); d.channels as usize],
                line: d.line_cycles_fixed(config.frequency_mhz),
                counts: [0; 5],
                writebacks: d.writebacks,
                pending: Vec::new(),
                reads: 0,
                read_addrs: Vec::new(),
                rows: d.rows(config.frequency_mhz).map(|r| {
                    let ranks = (d.channels * r.ranks) as usize;
                    let banks = ranks * r.banks as usize;
                    (
                        r,
                        d.line_bytes as u64,
                        vec![None; banks],
                        vec![Vec::new(); ranks],
                    )
                }),
            }),
            independent: BTreeSet::new(),
            twin: None,
            domains: None,
            track_uses: false,
            shared_frames: HashMap::new(),
        }
    }

    // ---- set-up, as `System` offers it ----

    /// Creates an address space (its root table allocated now); returns its index.
    pub fn create_space(&mut self) -> Result<usize, String> {
        let layout = self.config.page_table.layout;
        let tables = Tables::new(self.levels, layout, &mut self.frames).ok_or("out of memory")?;
        self.spaces.push(Space {
            id: self.spaces.len() as u32,
            asid: 0,
            generation: 0,
            tables,
            regions: Vec::new(),
        });
        Ok(self.spaces.len() - 1)
    }

    pub fn bind_thread(&mut self, thread: ThreadId, space: usize, cpu: usize) {
        self.threads
            .insert(thread.0, (space, cpu % self.cpus.len()));
    }

    /// Pages of `start..start+len` of `space` are `size` from now on (the newest region wins).
    pub fn set_region_page_size(&mut self, space: usize, start: u64, len: u64, size: PageSize) {
        self.spaces[space]
            .regions
            .insert(0, (start, start.saturating_add(len), size, None, false));
    }

    /// `start..start+len` of `space` maps shared object `object` with `size` pages from now
    /// on (the newest region wins): its pages' frames are the object's (`shared_frames`).
    /// `global`: the kernel's mapping (`prot::GLOBAL`): every TLB entry of its pages is global
    /// (matches every ASID, survives a rollover).
    pub fn map_shared(
        &mut self,
        space: usize,
        start: u64,
        len: u64,
        size: PageSize,
        object: u32,
        global: bool,
    ) {
        self.spaces[space].regions.insert(
            0,
            (start, start.saturating_add(len), size, Some(object), global),
        );
    }

    /// `set_region_page_size` of `new`'s address space.
    pub fn set_region(&mut self, start: u64, len: u64, size: PageSize) {
        self.set_region_page_size(0, start, len, size);
    }

    // ---- what tests read ----

    /// Each cache level's name and its counters so far, summed over the hardware threads:
    /// accesses, hits, misses, evictions.
    pub fn cache_counts(&self) -> Vec<(String, [u64; 4])> {
        let total = self.total();
        self.cache_names
            .iter()
            .cloned()
            .zip(total.cache.iter().copied())
            .collect()
    }

    /// Per core: its hardware threads' counters plus the OS work charged to it.
    /// After a warm-up, what was counted since it ended (the region of interest).
    pub fn core_counters(&self) -> Vec<RefCounters> {
        let mut cores = self.whole_core_counters();
        for (i, c) in cores.iter_mut().enumerate() {
            if let Some(roi) = &self.roi {
                c.sub(&roi.cores[i]);
            }
            if !self.stall_reported {
                c.data_stall_cycles.clear();
            }
        }
        cores
    }

    fn whole_core_counters(&self) -> Vec<RefCounters> {
        let mut cores = self.core_os.clone();
        for (cpu, c) in self.cpus.iter().enumerate() {
            cores[c.core].add(&self.counters[cpu]);
        }
        cores
    }

    /// The sum of `core_counters`.
    pub fn total(&self) -> RefCounters {
        let cores = self.core_counters();
        let mut t = cores[0].clone();
        for c in &cores[1..] {
            t.add(c);
        }
        t
    }

    /// References the warm-up counted, once the region of interest has begun.
    pub fn warmup_references(&self) -> Option<u64> {
        self.roi.as_ref().map(|r| r.references)
    }

    pub fn clocks(&self) -> Vec<u64> {
        self.cpus.iter().map(|c| c.clock).collect()
    }

    /// The OS counters (after a warm-up, since it ended).
    pub fn os_counters(&self) -> RefOsCounters {
        match &self.roi {
            Some(roi) => self.os.since(&roi.os),
            None => self.os.clone(),
        }
    }

    /// Warms the machine up with the first `references` references of the next `run`: the
    /// counters then cover what follows only. The warm-up ends exactly where a run limited to
    /// `references` would have stopped (after the access that reached the count, before any
    /// record after it); none begins when the run's own limit comes first (`System::set_warmup`).
    pub fn set_warmup(&mut self, references: u64) {
        self.warmup = references;
    }

    /// Ends the warm-up if its count is reached: the counters as they are now are what the
    /// region of interest is measured from.
    fn check_warmup(&mut self) {
        if self.warmup > 0 && self.roi.is_none() && self.references >= self.warmup {
            let limit = self.opts.max_references;
            if limit == 0 || self.warmup < limit {
                self.roi = Some(Roi {
                    cores: self.whole_core_counters(),
                    os: self.os.clone(),
                    references: self.references,
                });
            }
            self.warmup = 0;
        }
    }

    /// Each TLB instance's valid entries in slot order (instances as `System::tlbs` lists
    /// them: configuration order, one per core unless shared).
    pub fn tlb_contents(&self) -> Vec<Vec<RefEntry>> {
        self.tlbs
            .iter()
            .map(|t| {
                t.entries()
                    .map(|e| RefEntry {
                        vpn: e.vpn,
                        size: e.size,
                        pfn: e.pfn,
                        asid: e.asid,
                        hw_thread: e.hw_thread,
                        locked: e.locked,
                        global: e.global,
                    })
                    .collect()
            })
            .collect()
    }

    pub fn references(&self) -> u64 {
        self.references
    }
}
