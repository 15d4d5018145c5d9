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
//! Property tests check that the engine agrees with it (`tests/reference_parity.rs`,
//! `tests/reference_machine.rs`).

mod domains;
mod formats;
mod frames;
mod parts;
pub(crate) mod twins;

pub use domains::Fault;
pub use twins::{Twin, TwinCycles};

use crate::cache::CacheKind;
use crate::machine::{MachineConfig, PwcRestart, TimingModel};
use crate::options::RunOptions;
use crate::os::{kernel_path_pages, kernel_text_sections, SwitchPolicy};
use crate::tlb::TlbKind;
use formats::RefLevel;
use frames::RefFrames;
use parts::{CacheOutcome, Entry, NaiveCache, NaivePwc, NaiveTlb, Who};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use tlblab_trace::record::{flush, ALL_CORES, NO_THREAD};
use tlblab_trace::{Access, Event, Record};
use tlblab_types::{AccessKind, PageSize, ThreadId, VirtAddr};

/// What the reference model says one reference did.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct RefOutcome {
    /// Index of the TLB level (along the path) that hit, or None after a walk.
    pub tlb_hit: Option<usize>,
    /// Where each walk reference was served (cache position in `Stats::sources` order, the
    /// last being memory).
    pub walk_sources: Vec<usize>,
    pub cycles: u64,
}

/// The counters the reference keeps, as `UnitStats` names them (per core: its hardware
/// threads' references and the OS work charged to it). TLB and cache levels are
/// (accesses, hits, misses, evictions) in `Stats::tlb_levels`/`cache_levels` order.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct RefCounters {
    pub references: u64,
    pub instr_references: u64,
    pub tlb: Vec<[u64; 4]>,
    pub walks: u64,
    pub walk_refs: u64,
    pub walk_refs_by_source: Vec<u64>,
    pub pwc_hits: u64,
    pub walk_cycles: u64,
    pub data_by_source: Vec<u64>,
    pub cache: Vec<[u64; 4]>,
    pub page_faults: u64,
    pub invalidations: u64,
    pub cycles: u64,
    /// Per TLB level, the cycles data references stalled because they missed it (seed 004
    /// §V): the next level's lookup, or the walk after the path's last level. Empty unless
    /// the run reports them (`RunOptions::stall_cycles`, or lockdown's twin).
    pub data_stall_cycles: Vec<u64>,
}

impl RefCounters {
    fn new(tlbs: usize, caches: usize) -> RefCounters {
        RefCounters {
            tlb: vec![[0; 4]; tlbs],
            cache: vec![[0; 4]; caches],
            walk_refs_by_source: vec![0; caches + 1],
            data_by_source: vec![0; caches + 1],
            data_stall_cycles: vec![0; tlbs],
            ..RefCounters::default()
        }
    }

    fn add(&mut self, o: &RefCounters) {
        let sum = |a: &mut Vec<u64>, b: &Vec<u64>| a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        let sum4 = |a: &mut Vec<[u64; 4]>, b: &Vec<[u64; 4]>| {
            for (x, y) in a.iter_mut().zip(b) {
                for k in 0..4 {
                    x[k] += y[k];
                }
            }
        };
        self.references += o.references;
        self.instr_references += o.instr_references;
        sum4(&mut self.tlb, &o.tlb);
        self.walks += o.walks;
        self.walk_refs += o.walk_refs;
        sum(&mut self.walk_refs_by_source, &o.walk_refs_by_source);
        self.pwc_hits += o.pwc_hits;
        self.walk_cycles += o.walk_cycles;
        sum(&mut self.data_by_source, &o.data_by_source);
        sum4(&mut self.cache, &o.cache);
        self.page_faults += o.page_faults;
        self.invalidations += o.invalidations;
        self.cycles += o.cycles;
        sum(&mut self.data_stall_cycles, &o.data_stall_cycles);
    }

    /// These counters less `o` (what a warm-up counted), field by field.
    fn sub(&mut self, o: &RefCounters) {
        let less = |a: &mut Vec<u64>, b: &Vec<u64>| a.iter_mut().zip(b).for_each(|(x, y)| *x -= y);
        let less4 = |a: &mut Vec<[u64; 4]>, b: &Vec<[u64; 4]>| {
            for (x, y) in a.iter_mut().zip(b) {
                for k in 0..4 {
                    x[k] -= y[k];
                }
            }
        };
        self.references -= o.references;
        self.instr_references -= o.instr_references;
        less4(&mut self.tlb, &o.tlb);
        self.walks -= o.walks;
        self.walk_refs -= o.walk_refs;
        less(&mut self.walk_refs_by_source, &o.walk_refs_by_source);
        self.pwc_hits -= o.pwc_hits;
        self.walk_cycles -= o.walk_cycles;
        less(&mut self.data_by_source, &o.data_by_source);
        less4(&mut self.cache, &o.cache);
        self.page_faults -= o.page_faults;
        self.invalidations -= o.invalidations;
        self.cycles -= o.cycles;
        less(&mut self.data_stall_cycles, &o.data_stall_cycles);
    }
}

/// The OS counters, as `OsStats` names them.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct RefOsCounters {
    pub context_switches: u64,
    pub address_space_switches: u64,
    pub asid_rollovers: u64,
    pub tlb_flushes: u64,
    pub cache_flushes: u64,
    pub cache_flush_cycles: u64,
    pub migrations: u64,
    pub shootdowns: u64,
    pub ipis: u64,
    pub switch_cycles: u64,
}

impl RefOsCounters {
    fn since(&self, o: &RefOsCounters) -> RefOsCounters {
        RefOsCounters {
            context_switches: self.context_switches - o.context_switches,
            address_space_switches: self.address_space_switches - o.address_space_switches,
            asid_rollovers: self.asid_rollovers - o.asid_rollovers,
            tlb_flushes: self.tlb_flushes - o.tlb_flushes,
            cache_flushes: self.cache_flushes - o.cache_flushes,
            cache_flush_cycles: self.cache_flush_cycles - o.cache_flush_cycles,
            migrations: self.migrations - o.migrations,
            shootdowns: self.shootdowns - o.shootdowns,
            ipis: self.ipis - o.ipis,
            switch_cycles: self.switch_cycles - o.switch_cycles,
        }
    }
}

/// What the counters were when the region of interest began (`set_warmup`).
#[derive(Clone)]
struct Roi {
    cores: Vec<RefCounters>,
    os: RefOsCounters,
    references: u64,
}

/// One TLB entry as tests compare it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RefEntry {
    pub vpn: u64,
    pub size: PageSize,
    pub pfn: u64,
    pub asid: u16,
    pub hw_thread: u8,
    pub locked: bool,
    /// A global mapping (the kernel's: `kernel_touch`).
    pub global: bool,
}

/// A page table: (level, VA >> the shift of the level above) → the table's physical address
/// (the root is (0, 0)); and the pages mapped: (VA >> size's shift, size) → frame address;
/// those of them mapped global (the kernel's: a `MapShared` with `prot::GLOBAL`, as the page
/// was when first touched).
struct Tables {
    tables: HashMap<(usize, u64), u64>,
    pages: HashMap<(u64, PageSize), u64>,
    global: std::collections::HashSet<(u64, PageSize)>,
}

impl Tables {
    fn new(levels: &[RefLevel], frames: &mut RefFrames) -> Option<Tables> {
        let root = frames.alloc(formats::table_page(&levels[0]))? << 12;
        Some(Tables {
            tables: HashMap::from([((0, 0), root)]),
            pages: HashMap::new(),
            global: Default::default(),
        })
    }

    fn table(&self, levels: &[RefLevel], level: usize, va: u64) -> u64 {
        let key = if level == 0 {
            0
        } else {
            va >> levels[level - 1].shift
        };
        self.tables[&(level, key)]
    }

    fn mapping(&self, va: u64) -> Option<(PageSize, u64)> {
        PageSize::ALL
            .into_iter()
            .find_map(|s| self.pages.get(&(va >> s.shift(), s)).map(|&f| (s, f)))
    }

    /// Whether `va`'s page is mapped global (as it was when first touched).
    fn is_global(&self, va: u64) -> bool {
        self.mapping(va)
            .is_some_and(|(s, _)| self.global.contains(&(va >> s.shift(), s)))
    }

    /// Unmaps `va`'s page, if mapped.
    fn unmap(&mut self, va: u64) {
        if let Some((size, _)) = self.mapping(va) {
            self.pages.remove(&(va >> size.shift(), size));
            self.global.remove(&(va >> size.shift(), size));
        }
    }

    /// Maps `va`'s page of `size` to `frame` (`global`: the kernel's), allocating the missing
    /// tables below the root, top down.
    fn map(
        &mut self,
        levels: &[RefLevel],
        va: u64,
        size: PageSize,
        frame: u64,
        global: bool,
        frames: &mut RefFrames,
    ) -> Option<()> {
        let leaf = leaf_level(levels, size);
        for level in 1..=leaf {
            let key = (level, va >> levels[level - 1].shift);
            if let std::collections::hash_map::Entry::Vacant(e) = self.tables.entry(key) {
                e.insert(frames.alloc(formats::table_page(&levels[level]))? << 12);
            }
        }
        self.pages.insert((va >> size.shift(), size), frame);
        if global {
            self.global.insert((va >> size.shift(), size));
        } else {
            self.global.remove(&(va >> size.shift(), size));
        }
        Some(())
    }

    /// Whether `va`'s page of `size` would cover no page mapped already and no table below
    /// its level.
    fn room_for(&self, levels: &[RefLevel], va: u64, size: PageSize) -> bool {
        let start = va & !(size.bytes() - 1);
        let leaf = leaf_level(levels, size);
        let no_table = (leaf + 1 >= levels.len())
            || !self
                .tables
                .contains_key(&(leaf + 1, start >> levels[leaf].shift));
        let no_page = PageSize::ALL.into_iter().filter(|&s| s < size).all(|s| {
            (0..size.bytes() / s.bytes())
                .all(|i| !self.pages.contains_key(&((start >> s.shift()) + i, s)))
        });
        no_table && no_page
    }

    /// The physical addresses of the entries a walk of `va` reads from `start` to its leaf.
    fn path(&self, levels: &[RefLevel], start: usize, va: u64, size: PageSize) -> Vec<u64> {
        (start..=leaf_level(levels, size))
            .map(|level| {
                let l = &levels[level];
                self.table(levels, level, va) + ((va >> l.shift) % (1 << l.bits)) * l.entry_bytes
            })
            .collect()
    }
}

/// The page size an event's `page_shift` names; `what` names the event in the error.
fn page_size_of_shift(page_shift: u8, what: &str) -> Result<PageSize, String> {
    PageSize::ALL
        .into_iter()
        .find(|s| s.shift() == page_shift as u32)
        .ok_or(format!("{what}: page_shift"))
}

fn leaf_level(levels: &[RefLevel], size: PageSize) -> usize {
    levels
        .iter()
        .position(|l| l.leaves.contains(&size))
        .expect("page size of the format")
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

/// The DRAM channels under `timing.dram` (`DramConfig`'s rules): per channel, every line it
/// was ever given, as (start, end) in 1/2^DRAM_FRACTION_BITS cycles, in no order.
#[derive(Clone, Debug)]
struct RefDram {
    given: Vec<Vec<(u64, u64)>>,
    line: u64,
    /// Lines read, lines that waited, cycles waited, lines written back, row activations.
    counts: [u64; 5],
    /// `DramConfig::writebacks`.
    writebacks: bool,
    /// The writebacks not placed yet, each as the count of lines read from memory when its
    /// eviction happened, and that count (`DramConfig`'s writeback rules).
    pending: Vec<(u64, u64)>,
    reads: u64,
    /// The addresses of the lines read from memory not placed yet, in order.
    read_addrs: Vec<u64>,
    /// Row activations (`DramConfig::rows`): the configuration, the bytes of a line, each
    /// bank's open row (by channel, rank, bank), each rank's activations (by channel, rank).
    rows: Option<RefRows>,
}

/// `RefDram::rows`: the configuration, the bytes of a line, each bank's open row (by channel,
/// rank, bank), each rank's activations (by channel, rank).
type RefRows = (
    crate::machine::DramRows,
    u64,
    Vec<Option<u64>>,
    Vec<Vec<u64>>,
);

impl RefDram {
    /// One line arriving at `arrive`: without row activations (or its address) on the
    /// channel where it can begin first (the lowest of equals); with them on its address's
    /// channel, after an activation if its bank has another row open. Its start is the first
    /// at which it overlaps no line that channel was given.
    fn place(&mut self, arrive: u64, addr: Option<u64>) -> u64 {
        let channels = self.given.len() as u64;
        let mut from = arrive;
        let mut only = None;
        if let (Some((r, line_bytes, open, acts)), Some(addr)) = (&mut self.rows, addr) {
            // Rows of `row_lines` lines go to channel 0, 1, ..., then the next rank, then the
            // next bank.
            let chunk = addr / *line_bytes / r.row_lines;
            let ch = chunk % channels;
            let rank = ch * r.ranks as u64 + (chunk / channels) % r.ranks as u64;
            let bank = rank * r.banks as u64 + (chunk / channels / r.ranks as u64) % r.banks as u64;
            let row = chunk / channels / r.ranks as u64 / r.banks as u64;
            if open[bank as usize] != Some(row) {
                from = naive_activation(&acts[rank as usize], arrive, r.rrd, r.faw);
                acts[rank as usize].push(from);
                open[bank as usize] = Some(row);
                self.counts[4] += 1;
            }
            only = Some(ch as usize);
        }
        let mut best: Option<(u64, usize)> = None;
        for (ch, given) in self.given.iter().enumerate() {
            if only.is_some_and(|o| o != ch) {
                continue;
            }
            let mut start = from;
            while let Some(&(_, end)) = given
                .iter()
                .find(|&&(s, e)| s < start + self.line && e > start)
            {
                start = end;
            }
            if best.is_none_or(|(b, _)| start < b) {
                best = Some((start, ch));
            }
        }
        let (start, ch) = best.expect("a channel");
        self.given[ch].push((start, start + self.line));
        start
    }
}

/// The first time at or after `arrive` at which a rank that took activations `acts` can take
/// another: none closer than `rrd` to it, and no five, it included, within less than `faw`.
/// Tried at `arrive`, then at every activation's time plus `rrd` or `faw` after it, in order.
fn naive_activation(acts: &[u64], arrive: u64, rrd: u64, faw: u64) -> u64 {
    let ok = |t: u64| {
        let mut all: Vec<u64> = acts.to_vec();
        all.push(t);
        all.sort_unstable();
        acts.iter().all(|&x| x.abs_diff(t) >= rrd) && all.windows(5).all(|w| w[4] - w[0] >= faw)
    };
    let mut tries: Vec<u64> = acts
        .iter()
        .flat_map(|&x| [x + rrd, x + faw])
        .filter(|&c| c > arrive)
        .collect();
    tries.push(arrive);
    tries.sort_unstable();
    tries
        .into_iter()
        .find(|&t| ok(t))
        .expect("past every activation, a time is free")
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
                let guest = crate::memory::MemoryConfig {
                    bytes: v.guest_memory_bytes,
                    ..config.memory.clone()
                };
                let hlevels = formats::levels(v.host_format);
                let mut hframes = RefFrames::new(&config.memory, seed);
                let tables = Tables::new(hlevels, &mut hframes).expect("memory for the host root");
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
        let tables = Tables::new(self.levels, &mut self.frames).ok_or("out of memory")?;
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

    // ---- the records ----

    /// `access(kind, va)` of thread 0 (the one `new` binds), one reference within a page.
    pub fn access(&mut self, kind: AccessKind, va: u64) -> RefOutcome {
        let mut out = RefOutcome::default();
        self.step_with(Access::new(ThreadId(0), kind, VirtAddr(va), 1), &mut out)
            .expect("the reference's access");
        out
    }

    /// One access of any thread, as `System::access`: a thread not running on its hardware
    /// thread is switched in first; an access crossing a 4 KiB boundary is two references.
    /// Returns the cycles of its references.
    pub fn step(&mut self, a: Access) -> Result<u64, String> {
        self.step_with(a, &mut RefOutcome::default())
    }

    fn step_with(&mut self, a: Access, out: &mut RefOutcome) -> Result<u64, String> {
        let (mut space, cpu) = self.thread(a.thread)?;
        if self.cpus[cpu].current != Some(a.thread.0) {
            self.context_switch(cpu, Some(a.thread.0))?;
            space = self.thread(a.thread)?.0;
        }
        let off = a.vaddr.0 % 4096;
        if a.size > 1 && off + a.size as u64 > 4096 {
            let c1 = self.reference(cpu, space, a.kind, a.vaddr.0, out)?;
            *out = RefOutcome::default();
            let c2 = self.reference(cpu, space, a.kind, a.vaddr.0 + 4096 - off, out)?;
            return Ok(c1 + c2);
        }
        self.reference(cpu, space, a.kind, a.vaddr.0, out)
    }

    /// Runs `records` as `System::run` does (ARCHITECTURE.md "The engine in one paragraph", the multi-core timeline): in trace
    /// order while only the first hardware thread to have work has had any; from the first
    /// access of another on, every access waits in its hardware thread's queue and the one
    /// with the smallest clock (the lowest index among equals) runs its oldest; an event
    /// first runs every queued access. Nothing runs once `max_references` references have.
    /// (`run`'s look-ahead is a window of 64 Ki records: longer traces drain more often there.)
    pub fn run(&mut self, records: &[Record]) -> Result<(), String> {
        let limit = match self.opts.max_references {
            0 => u64::MAX,
            n => n,
        };
        // A technique's twin rewrites the records first, as its allocator would have placed
        // them (`Technique::on_batch`).
        let transformed;
        let records = match self.twin.as_mut() {
            Some(t) => {
                transformed = t.on_records(records)?;
                &transformed[..]
            }
            None => records,
        };
        self.check_warmup();
        let mut queues: Vec<VecDeque<Access>> = vec![VecDeque::new(); self.cpus.len()];
        let mut first_cpu = None;
        let mut multi = false;
        for &r in records {
            match r {
                Record::Access(a) => {
                    let cpu = self.thread(a.thread)?.1;
                    if !multi && *first_cpu.get_or_insert(cpu) != cpu {
                        multi = true;
                    }
                    if multi {
                        queues[cpu].push_back(a);
                    } else if self.references < limit {
                        self.companion_before(cpu)?;
                        self.step(a)?;
                        self.check_warmup();
                    }
                }
                Record::Event(e) => {
                    self.drain(&mut queues, limit)?;
                    if self.references >= limit {
                        return Ok(());
                    }
                    self.event(e)?;
                }
            }
        }
        self.drain(&mut queues, limit)
    }

    fn drain(&mut self, queues: &mut [VecDeque<Access>], limit: u64) -> Result<(), String> {
        while self.references < limit {
            let next = (0..queues.len())
                .filter(|&c| !queues[c].is_empty())
                .min_by_key(|&c| (self.cpus[c].clock, c));
            let Some(c) = next else { break };
            let a = queues[c].pop_front().expect("not empty");
            self.companion_before(c)?;
            self.step(a)?;
            self.check_warmup();
        }
        Ok(())
    }

    /// An event record (docs/formats/trace.md §6). Jobs, phases and regions change nothing the reference keeps.
    pub fn event(&mut self, e: Event) -> Result<(), String> {
        let n = self.cpus.len();
        match e {
            Event::ThreadStart { thread, process } => {
                let space = self.ensure_space(process)?;
                self.bind_thread(thread, space, thread.0 as usize % n);
            }
            Event::Independent { thread, begin } => {
                let cpu = self.thread(thread)?.1;
                self.wait_in_flight(cpu);
                if begin {
                    self.independent.insert(thread.0);
                } else {
                    self.independent.remove(&thread.0);
                }
            }
            Event::ThreadExit { thread } => {
                for c in &mut self.cpus {
                    if c.current == Some(thread.0) {
                        c.current = None;
                    }
                }
            }
            Event::ContextSwitch { core, to, .. } => {
                let cpu = core.0 as usize % n;
                if to == NO_THREAD {
                    self.context_switch(cpu, None)?;
                } else {
                    let (space, _) = self.thread(to)?;
                    self.threads.insert(to.0, (space, cpu));
                    self.context_switch(cpu, Some(to.0))?;
                }
            }
            Event::Migrate { thread, core } => {
                let (space, from) = self.thread(thread)?;
                let to = core.0 as usize % n;
                if to != from {
                    self.os.migrations += 1;
                    // The migration path's kernel pages on the old core, before the save.
                    let (os, bytes) = (self.opts.os, self.config.memory.bytes);
                    let mut path = 0;
                    let first = os.migrate_kernel_page(0);
                    for pa in kernel_path_pages(bytes, first, os.migrate_kernel_pages) {
                        path += self.kernel_touch(from, thread.0, pa, false)?;
                    }
                    self.charge(from, path);
                    // The thread cannot run before the time it left.
                    self.cpus[to].clock = self.cpus[to].clock.max(self.cpus[from].clock);
                    if self.cpus[from].current == Some(thread.0) {
                        self.cpus[from].current = None;
                    }
                    self.threads.insert(thread.0, (space, to));
                    if let Some(mut twin) = self.twin.take() {
                        // Linux's move_queued_task (seed 000 §7): charged to the new core.
                        let r = twin.on_migrate(self, thread.0, from, to);
                        self.twin = Some(twin);
                        let cycles = r?;
                        self.charge(to, cycles);
                    }
                }
            }
            Event::Mmap {
                process,
                start,
                len,
                page_shift,
                ..
            } => {
                let space = self.ensure_space(process)?;
                let size = page_size_of_shift(page_shift, "mmap")?;
                self.set_region_page_size(space, start.0, len, size);
            }
            Event::MapShared {
                process,
                start,
                len,
                prot,
                page_shift,
                object,
            } => {
                let space = self.ensure_space(process)?;
                let size = page_size_of_shift(page_shift, "map_shared")?;
                let global = prot & tlblab_trace::record::prot::GLOBAL != 0;
                self.map_shared(space, start.0, len, size, object, global);
            }
            Event::Munmap {
                process,
                start,
                len,
            } => {
                if (process as usize) < self.spaces.len() {
                    let space = process as usize;
                    let end = start.0.saturating_add(len);
                    let mut va = start.0 & !0xfff;
                    while va < end {
                        self.spaces[space].tables.unmap(va);
                        va += 4096;
                    }
                    let id = self.spaces[space].id;
                    for p in &mut self.pwcs {
                        p.flush_where(|s| s == id);
                    }
                    let cpu = self.cpu_of_process(process);
                    self.shootdown(space, start.0, len, cpu);
                }
            }
            Event::Mprotect {
                process,
                start,
                len,
                ..
            } => {
                if (process as usize) < self.spaces.len() {
                    let cpu = self.cpu_of_process(process);
                    self.shootdown(process as usize, start.0, len, cpu);
                }
            }
            Event::ProcessExit { process } => {
                if (process as usize) < self.spaces.len() {
                    let cpu = self.cpu_of_process(process);
                    self.exit_process(process as usize, cpu);
                }
            }
            Event::Flush { core, what } if what & flush::ADDRESS_SPACE != 0 => {
                self.flush_address_space(core.0 as usize % n, what);
            }
            Event::FlushRange { .. } => self.flush_part_of_space(e)?,
            Event::Flush { what, .. } if what & flush::INSTR_CACHES != 0 => {
                return Err(format!(
                    "Flush: INSTR_CACHES without ADDRESS_SPACE (what = {what})"
                ));
            }
            Event::Flush { core, what } => {
                let cpu = core.0 as usize % n;
                if what & flush::TLB != 0 {
                    self.flush_core(cpu, false);
                }
                if what & flush::CACHES != 0 {
                    let c = &self.cores[self.cpus[cpu].core];
                    let mut ids: Vec<usize> =
                        c.icache.iter().chain(&c.dcache).map(|&(k, _)| k).collect();
                    ids.sort_unstable();
                    ids.dedup();
                    for k in ids {
                        // Counted, and charged to no clock.
                        let (cost, dirty) = self.caches[k].flush();
                        self.settle_writebacks(cpu, dirty);
                        self.os.cache_flush_cycles += cost;
                        self.os.cache_flushes += 1;
                    }
                }
            }
            Event::TlbLock {
                process,
                page,
                core,
                lock,
            } => self.tlb_lock(process, page.0, core, lock)?,
            Event::KernelEntry { process, path } => {
                // The kernel entered on the process's (first) thread's hardware thread: its
                // path's kernel pages in order, busy time of the thread, as a fault's.
                let os = self.opts.os;
                let Some((first, pages)) = os.entry_kernel_pages(path) else {
                    return Err(format!(
                        "KernelEntry event: path {path} is not a kernel path"
                    ));
                };
                let thread = self
                    .threads
                    .values()
                    .find(|&&(s, _)| s == process as usize)
                    .copied();
                let text = os.entry_text_sections(path);
                let traced = pages > 0 || text != 0 || os.vectors_page;
                if let (Some((space, cpu)), true) = (thread, traced) {
                    let mut kernel = 0;
                    if os.vectors_page {
                        // A tick enters as an IRQ, through its stub's page; a call as an SVC.
                        let irq = path == tlblab_trace::record::kernel_entry::TICK;
                        kernel += self.kernel_vectors_in(cpu, space, irq);
                    }
                    for pa in kernel_text_sections(self.config.memory.bytes, text) {
                        kernel += self.kernel_fetch_in(cpu, space, pa);
                    }
                    for pa in kernel_path_pages(self.config.memory.bytes, first, pages) {
                        kernel += self.kernel_touch_in(cpu, space, pa, false);
                    }
                    self.counters[cpu].cycles += kernel;
                    self.cpus[cpu].clock += kernel;
                }
            }
            Event::TaskRelease { .. }
            | Event::JobStart { .. }
            | Event::JobEnd { .. }
            | Event::Region { .. }
            | Event::PhaseBegin { .. }
            | Event::PhaseEnd { .. } => {}
        }
        if let Some(mut twin) = self.twin.take() {
            // The technique sees every event after it was applied (`Technique::on_event`).
            let r = twin.on_event(self, &e);
            self.twin = Some(twin);
            r?;
        }
        Ok(())
    }

    /// A technique's own hardware threads (pt_baker's helper, seed 001 §4.1) run up to the
    /// time of hardware thread `cpu`, whose access runs next, so that their loads and the
    /// records' meet the shared caches in time order (`Technique::on_clock`).
    fn companion_before(&mut self, cpu: usize) -> Result<(), String> {
        if let Some(mut twin) = self.twin.take() {
            let until = self.cpus[cpu].clock;
            let r = twin.on_clock(self, until);
            self.twin = Some(twin);
            r?;
        }
        Ok(())
    }

    // ---- threads, switches, ASIDs ----

    /// (address space, hardware thread) of `thread`; a thread first seen runs in the first
    /// address space (made if there is none) on hardware thread (id mod hardware threads).
    fn thread(&mut self, thread: ThreadId) -> Result<(usize, usize), String> {
        if let Some(&s) = self.threads.get(&thread.0) {
            return Ok(s);
        }
        if thread.0 > 1 << 20 {
            return Err(format!("thread id {} is too large", thread.0));
        }
        if self.spaces.is_empty() {
            self.create_space()?;
        }
        let cpu = thread.0 as usize % self.cpus.len();
        self.bind_thread(thread, 0, cpu);
        Ok((0, cpu))
    }

    fn ensure_space(&mut self, process: u32) -> Result<usize, String> {
        if process > 1 << 16 {
            return Err(format!("process id {process} is too large"));
        }
        while self.spaces.len() <= process as usize {
            self.create_space()?;
        }
        Ok(process as usize)
    }

    /// The hardware thread of the lowest-numbered thread of `process`, else 0.
    fn cpu_of_process(&self, process: u32) -> usize {
        self.threads
            .values()
            .find(|&&(s, _)| s == process as usize)
            .map_or(0, |&(_, c)| c)
    }

    fn charge(&mut self, cpu: usize, cycles: u64) {
        self.cpus[cpu].clock += cycles;
        self.core_os[self.cpus[cpu].core].cycles += cycles;
    }

    /// Hardware thread `cpu` now runs `to` (None: idle). Every switch costs
    /// `os.switch_cycles`; one that changes the address space whose translations the core
    /// holds (the last one that ran there, lazy TLB) also applies the policy: `flush_all`
    /// invalidates the core's unlocked TLB entries and page-walk caches and flushes its
    /// virtually indexed caches at their cost (nothing on a core that never ran anything);
    /// `asid_tagged` gives the space a valid ASID (seed 002 §2; seed 000 §3.3).
    fn context_switch(&mut self, cpu: usize, to: Option<u32>) -> Result<u64, String> {
        if self.cpus[cpu].current == to {
            return Ok(0);
        }
        let from_space = self.cpus[cpu].last_space;
        let mut cycles = self.opts.os.switch_cycles;
        self.os.context_switches += 1;
        let mut space = None;
        if let Some(t) = to {
            let s = self.thread(ThreadId(t))?.0;
            space = Some(s);
            if from_space != Some(s) {
                self.os.address_space_switches += 1;
                // A twin that replaces the switch policy answers first (seed 002's DACR reload).
                let by_twin = self.twin_switch(cpu, from_space, s)?;
                cycles += match self.policy {
                    _ if by_twin.is_some() => by_twin.unwrap_or(0),
                    SwitchPolicy::FlushAll if from_space.is_none() => 0,
                    SwitchPolicy::FlushAll => self.flush_core(cpu, true),
                    SwitchPolicy::AsidTagged => {
                        self.assign_asid(cpu, s);
                        0
                    }
                    _ => return Err("the reference models no switch hook".into()),
                };
            }
        }
        self.cpus[cpu].current = to;
        if space.is_some() {
            self.cpus[cpu].last_space = space;
        }
        if let Some(t) = to {
            let (os, bytes) = (self.opts.os, self.config.memory.bytes);
            for pa in kernel_path_pages(bytes, 0, os.kernel_pages) {
                cycles += self.kernel_touch(cpu, t, pa, false)?;
            }
            if let Some(mut twin) = self.twin.take() {
                // Linux's finish_task_switch: the thread is in, before its first access.
                let r = twin.on_switch_in(self, cpu, t);
                self.twin = Some(twin);
                cycles += r?;
            }
            // The kernel's way back to the thread, after finish_task_switch's work.
            for pa in kernel_path_pages(bytes, os.kernel_pages, os.kernel_return_pages) {
                cycles += self.kernel_touch(cpu, t, pa, false)?;
            }
        }
        self.os.switch_cycles += cycles;
        self.charge(cpu, cycles);
        Ok(cycles)
    }

    /// A kernel load (or store) of physical `pa` through the kernel's linear map
    /// (`os::kernel_linear`) by hardware thread `cpu` for `thread`: the core's data TLB levels
    /// in order, each its latency, until one holds the page; after a miss in all, the
    /// descriptor loaded through the data caches; the levels above the hit (all after a miss)
    /// filled with a global 4 KiB entry tagged with `thread`'s ASID, VMID and hardware thread;
    /// then `pa` through the data caches. Returns the cycles.
    pub(crate) fn kernel_touch(
        &mut self,
        cpu: usize,
        thread: u32,
        pa: u64,
        write: bool,
    ) -> Result<u64, String> {
        let space = self.thread(ThreadId(thread))?.0;
        Ok(self.kernel_touch_in(cpu, space, pa, write))
    }

    /// `kernel_touch` on behalf of a thread of address space `space`. Its TLB misses are data
    /// stalls as a reference's are (the Cortex-A9's PMU counts in every mode): the lookups
    /// after a miss, the descriptor's load after a miss in all, the refill of the levels above
    /// the last after it.
    /// With `OsConfig::kernel_data_sections`, translated as the global 1 MiB section of the
    /// linear map holding `pa`.
    fn kernel_touch_in(&mut self, cpu: usize, space: usize, pa: u64, write: bool) -> u64 {
        let cycles = if self.opts.os.kernel_data_sections {
            let section = crate::os::linear_section(pa);
            self.kernel_translate_in(cpu, space, section, PageSize::Size1M, false)
        } else {
            self.kernel_translate_in(cpu, space, pa, PageSize::Size4K, false)
        };
        cycles + self.kernel_access_in(cpu, pa, write)
    }

    /// A kernel load (or, `write`, store) of physical `pa` through `cpu`'s core's data caches.
    fn kernel_access_in(&mut self, cpu: usize, pa: u64, write: bool) -> u64 {
        let dcache = self.cores[self.cpus[cpu].core].dcache.clone();
        let (lat, src) = self.load(cpu, &dcache, pa, write);
        self.counters[cpu].data_by_source[src] += 1;
        lat
    }

    /// A kernel store of physical `pa` through `cpu`'s core's data caches.
    fn kernel_store_in(&mut self, cpu: usize, pa: u64) -> u64 {
        self.kernel_access_in(cpu, pa, true)
    }

    /// `kmap_atomic` of a high-memory frame by `cpu` for a thread of `space`
    /// (`OsConfig::fault_highmem`): the fixmap slot's PTE stored through the data caches, the
    /// slot's address invalidated in the core's TLB levels (TLBIMVA: the global entry; under
    /// broadcast maintenance the micro TLBs flushed whole), then the slot translated as a
    /// global 4 KiB data-side entry. Returns the cycles (the clear's store is the caller's).
    fn kmap_atomic_in(&mut self, cpu: usize, space: usize) -> u64 {
        let top = &self.levels[0];
        let va_limit = 1u64 << (top.shift + top.bits);
        let bytes = self.config.memory.bytes;
        let slot = crate::os::kmap_fixmap_page(va_limit, bytes, cpu);
        let k = crate::os::kernel_linear(va_limit, bytes, slot);
        let mut cycles = self.kernel_store_in(cpu, k.descriptor);
        let asid = self.spaces[space].asid;
        let broadcast = self.opts.os.tlb_maintenance == crate::os::TlbMaintenance::Broadcast;
        let core = self.cpus[cpu].core;
        let mut n = 0;
        for (t, micro) in self.tlbs_of(core) {
            n += if broadcast && micro {
                self.tlbs[t].invalidate_unlocked()
            } else {
                self.tlbs[t].shoot_down(k.va, asid)
            };
        }
        self.core_os[core].invalidations += n;
        cycles += self.kernel_translate_in(cpu, space, slot, PageSize::Size4K, false);
        cycles
    }

    /// An exception entry through the high vectors (`OsConfig::vectors_page`) on behalf of a
    /// thread of `space`: the vectors page fetched (instruction side, a global 4 KiB entry),
    /// the stubs page fetched if `stub_fetch` (an IRQ, an abort), then loaded from (data side,
    /// through the caches). Returns the cycles.
    fn kernel_vectors_in(&mut self, cpu: usize, space: usize, stub_fetch: bool) -> u64 {
        let top = &self.levels[0];
        let [vectors, stubs] =
            crate::os::vectors_pages(1u64 << (top.shift + top.bits), self.config.memory.bytes);
        let mut cycles = self.kernel_translate_in(cpu, space, vectors, PageSize::Size4K, true);
        if stub_fetch {
            cycles += self.kernel_translate_in(cpu, space, stubs, PageSize::Size4K, true);
        }
        // The stubs page is the vectors' 4 KiB mapping, not the linear map's: 4 KiB always.
        cycles += self.kernel_translate_in(cpu, space, stubs, PageSize::Size4K, false);
        cycles + self.kernel_access_in(cpu, stubs, false)
    }

    /// A fetch of the kernel text section at physical `pa` (`os::kernel_text_section`) on
    /// behalf of a thread of `space`: its translation through the core's instruction TLB
    /// levels as a global 1 MiB entry, no stall counted, no fetch through the caches.
    fn kernel_fetch_in(&mut self, cpu: usize, space: usize, pa: u64) -> u64 {
        self.kernel_translate_in(cpu, space, pa, PageSize::Size1M, true)
    }

    /// The translation of a kernel reference to physical `pa` as a global `size` page through
    /// `cpu`'s core's data (or, `instr`, instruction) TLB levels in order, each its latency,
    /// until one holds it; after a miss in all, the descriptor loaded through the data caches
    /// and the refill of the level above the last; the levels above the hit (all after a miss)
    /// filled. Data-side lookups after a miss, the descriptor and the refill are data stalls;
    /// instruction-side ones are not counted. Returns the cycles.
    fn kernel_translate_in(
        &mut self,
        cpu: usize,
        space: usize,
        pa: u64,
        size: PageSize,
        instr: bool,
    ) -> u64 {
        let top = &self.levels[0];
        let k =
            crate::os::kernel_linear(1u64 << (top.shift + top.bits), self.config.memory.bytes, pa);
        let who = Who {
            asid: self.spaces[space].asid,
            vmid: self.vmid(),
            hw_thread: self.cpus[cpu].hw_thread,
        };
        let core = self.cpus[cpu].core;
        let path = if instr {
            self.cores[core].itlb.clone()
        } else {
            self.cores[core].dtlb.clone()
        };
        let mut stalls = vec![0u64; self.counters[cpu].data_stall_cycles.len()];
        let mut cycles = 0;
        let mut hit_at = path.len();
        for (i, &(t, _)) in path.iter().enumerate() {
            cycles += self.tlbs[t].latency;
            if i > 0 {
                stalls[path[i - 1].1] += self.tlbs[t].latency;
            }
            if self.tlbs[t].lookup(k.va, who).is_some() {
                hit_at = i;
                break;
            }
        }
        let dcache = self.cores[core].dcache.clone();
        if hit_at == path.len() {
            let (lat, src) = self.load(cpu, &dcache, k.descriptor, false);
            self.counters[cpu].data_by_source[src] += 1;
            cycles += lat;
            if let Some(&(_, last)) = path.last() {
                stalls[last] += lat;
            }
            if path.len() > 1 {
                let refill = self.tlbs[path[path.len() - 1].0].refill_latency;
                cycles += refill;
                stalls[path[path.len() - 2].1] += refill;
            }
        }
        if !instr {
            for (c, s) in self.counters[cpu].data_stall_cycles.iter_mut().zip(stalls) {
                *c += s;
            }
        }
        for &(t, _) in &path[..hit_at] {
            self.tlbs[t].insert(Entry {
                global: true,
                ..Entry::filled(k.va >> size.shift(), size, pa >> 12, who)
            });
        }
        cycles
    }

    /// Flushes the TLB levels (each once) and page-walk caches of `cpu`'s core, and its
    /// virtually indexed caches if `virtual_caches`; returns the cache flushes' cost.
    fn flush_core(&mut self, cpu: usize, virtual_caches: bool) -> u64 {
        let core = self.cpus[cpu].core;
        let c = &self.cores[core];
        let mut tlbs: Vec<usize> = c.itlb.iter().chain(&c.dtlb).map(|&(t, _)| t).collect();
        tlbs.sort_unstable();
        tlbs.dedup();
        let n: u64 = tlbs
            .iter()
            .map(|&t| self.tlbs[t].invalidate_unlocked())
            .sum();
        for &p in &c.pwcs {
            self.pwcs[p].flush_where(|_| true);
        }
        self.core_os[core].invalidations += n;
        self.os.tlb_flushes += 1;
        if !virtual_caches {
            return 0;
        }
        self.flush_virtual_caches(cpu, false)
    }

    /// Flushes the virtually indexed caches of `cpu`'s core, each once; with `instr_only`
    /// only those on its instruction path and not on its data path. Returns their cost.
    fn flush_virtual_caches(&mut self, cpu: usize, instr_only: bool) -> u64 {
        let c = &self.cores[self.cpus[cpu].core];
        let data: Vec<usize> = c.dcache.iter().map(|&(k, _)| k).collect();
        let mut ids: Vec<usize> = c.icache.iter().map(|&(k, _)| k).collect();
        if instr_only {
            ids.retain(|k| !data.contains(k));
        } else {
            ids.extend(&data);
        }
        ids.sort_unstable();
        ids.dedup();
        let (mut cycles, mut written) = (0, 0);
        for k in ids {
            if self.caches[k].virtual_indexed {
                let (cost, dirty) = self.caches[k].flush();
                cycles += cost;
                written += dirty;
                self.os.cache_flushes += 1;
            }
        }
        self.settle_writebacks(cpu, written);
        self.os.cache_flush_cycles += cycles;
        cycles
    }

    /// ASIDs as ARM Linux hands them out (seed 000 §3.3): a space keeps its ASID while its
    /// generation is current; else it takes the next free one; when none is left the
    /// generation advances, every core's TLB levels lose their unlocked entries and every
    /// page-walk cache empties, the space takes ASID 1, and the spaces the other hardware
    /// threads run take the next ones, in hardware-thread order.
    fn assign_asid(&mut self, cpu: usize, space: usize) {
        if self.spaces[space].generation == self.generation {
            return;
        }
        if self.asid_next <= self.asid_max {
            self.set_asid(space);
            return;
        }
        self.generation += 1;
        self.asid_next = 1;
        self.os.asid_rollovers += 1;
        for core in 0..self.cores.len() {
            let c = &self.cores[core];
            let tlbs: Vec<usize> = c.itlb.iter().chain(&c.dtlb).map(|&(t, _)| t).collect();
            let n: u64 = tlbs
                .iter()
                .map(|&t| self.tlbs[t].invalidate_unlocked_non_global())
                .sum();
            self.core_os[core].invalidations += n;
            self.os.tlb_flushes += 1;
        }
        for p in &mut self.pwcs {
            p.flush_where(|_| true);
        }
        self.set_asid(space);
        for c in 0..self.cpus.len() {
            let Some(t) = self.cpus[c].current else {
                continue;
            };
            let Some(&(s, _)) = self.threads.get(&t) else {
                continue;
            };
            if c != cpu && s != space && self.spaces[s].generation != self.generation {
                self.set_asid(s);
            }
        }
    }

    fn set_asid(&mut self, space: usize) {
        self.spaces[space].asid = self.asid_next;
        self.spaces[space].generation = self.generation;
        self.asid_next += 1;
    }

    /// The kernel's flush for an address space (seed 002's flush_cache_mm), on hardware thread
    /// `cpu`'s clock: the TLBs, and with CACHES the virtually indexed caches. Without TLB:
    /// flush_cache_range, the caches alone (CACHES) or the instruction caches alone
    /// (INSTR_CACHES).
    fn flush_address_space(&mut self, cpu: usize, what: u8) {
        let caches = what & flush::CACHES != 0;
        let mut cycles = 0;
        if what & flush::TLB != 0 {
            cycles += self.flush_core(cpu, caches);
        } else if caches {
            cycles += self.flush_virtual_caches(cpu, false);
        }
        if what & flush::INSTR_CACHES != 0 && !caches {
            cycles += self.flush_virtual_caches(cpu, true);
        }
        self.cpus[cpu].clock += cycles;
    }

    /// The kernel's flush of part of an address space (seed 002's flush_cache_page,
    /// flush_tlb_page, a short flush_cache_range), on hardware thread `cpu`'s clock: the
    /// range's TLB entries (TLB), the range's lines of the virtually indexed data caches one
    /// line address at a time (CACHES), the virtually indexed instruction caches whole
    /// (INSTR_CACHES).
    fn flush_part_of_space(&mut self, e: Event) -> Result<(), String> {
        let Event::FlushRange {
            process,
            start: VirtAddr(start),
            len,
            what,
        } = e
        else {
            unreachable!("flush_part_of_space is given FlushRange events")
        };
        let space = self.ensure_space(process)?;
        let cpu = self.cpu_of_process(process);
        if what & flush::TLB != 0 {
            self.shootdown(space, start, len, cpu);
        }
        let mut cycles = 0;
        if what & flush::CACHES != 0 {
            let data: Vec<usize> = self.cores[self.cpus[cpu].core]
                .dcache
                .iter()
                .map(|&(k, _)| k)
                .collect();
            for k in data {
                if self.caches[k].virtual_indexed {
                    let (cost, dirty) = self.caches[k].flush_range(start, len);
                    cycles += cost;
                    self.settle_writebacks(cpu, dirty);
                }
            }
            self.os.cache_flush_cycles += cycles;
        }
        if what & flush::INSTR_CACHES != 0 {
            cycles += self.flush_virtual_caches(cpu, true);
        }
        self.cpus[cpu].clock += cycles;
        Ok(())
    }

    /// Invalidates `start..start+len` of `space` (its current ASID) in every core's TLB
    /// levels, locked entries included, 4 KiB at a time; every hardware thread but `cpu`
    /// takes an inter-processor interrupt (`os.ipi_cycles`).
    fn shootdown(&mut self, space: usize, start: u64, len: u64, cpu: usize) {
        let asid = self.spaces[space].asid;
        let end = start.saturating_add(len);
        let broadcast = self.opts.os.tlb_maintenance == crate::os::TlbMaintenance::Broadcast;
        for core in 0..self.cores.len() {
            let mut n = 0;
            for (t, micro) in self.tlbs_of(core) {
                if broadcast && micro {
                    // ARM: a main-TLB maintenance operation flushes the micro TLBs whole.
                    if (start & !0xfff) < end {
                        n += self.tlbs[t].invalidate_unlocked();
                    }
                    continue;
                }
                let mut va = start & !0xfff;
                while va < end {
                    n += self.tlbs[t].shoot_down(va, asid);
                    va += 4096;
                }
            }
            self.core_os[core].invalidations += n;
        }
        self.maintenance_reaches_all(cpu);
    }

    /// The TLBs of `core`'s paths, each once, each with whether its level is below the
    /// deepest of them (a micro TLB in front of the main TLB).
    fn tlbs_of(&self, core: usize) -> Vec<(usize, bool)> {
        let c = &self.cores[core];
        let mut tlbs: Vec<usize> = c.itlb.iter().chain(&c.dtlb).map(|&(t, _)| t).collect();
        tlbs.sort_unstable();
        tlbs.dedup();
        let deepest = tlbs.iter().map(|&t| self.tlbs[t].level).max().unwrap_or(0);
        tlbs.into_iter()
            .map(|t| (t, self.tlbs[t].level < deepest))
            .collect()
    }

    /// A maintenance operation has reached every core: one shootdown; x86-style, an IPI on
    /// every core but `cpu`; ARM broadcast, none.
    fn maintenance_reaches_all(&mut self, cpu: usize) {
        self.os.shootdowns += 1;
        if self.opts.os.tlb_maintenance == crate::os::TlbMaintenance::Broadcast {
            return;
        }
        let (ipi, n) = (self.opts.os.ipi_cycles, self.cpus.len());
        for c in (0..n).filter(|&c| c != cpu % n) {
            self.os.ipis += 1;
            self.charge(c, ipi);
        }
    }

    /// A `ProcessExit`: the space's non-global entries leave every core's TLBs, locked ones
    /// too; its page-walk-cache entries go; broadcast, the micro TLBs are flushed whole.
    fn exit_process(&mut self, space: usize, cpu: usize) {
        let asid = self.spaces[space].asid;
        let id = self.spaces[space].id;
        for p in &mut self.pwcs {
            p.flush_where(|s| s == id);
        }
        let broadcast = self.opts.os.tlb_maintenance == crate::os::TlbMaintenance::Broadcast;
        for core in 0..self.cores.len() {
            let tlbs = self.tlbs_of(core);
            let dropped = tlbs.into_iter().map(|(t, micro)| match broadcast && micro {
                true => self.tlbs[t].invalidate_unlocked(),
                false => self.tlbs[t].shoot_down_asid(asid),
            });
            self.core_os[core].invalidations += dropped.sum::<u64>();
        }
        self.maintenance_reaches_all(cpu);
    }

    /// A `TlbLock` event (seed 004): the page is translated (a walk, paid by the process's
    /// hardware thread) and put, locked, into the first lockable level of the data path of
    /// each core named; an unlock leaves the entries valid and replaceable.
    fn tlb_lock(
        &mut self,
        process: u32,
        page: u64,
        core: tlblab_types::CoreId,
        lock: bool,
    ) -> Result<(), String> {
        let space = self.ensure_space(process)?;
        let cores: Vec<usize> = if core == ALL_CORES {
            (0..self.cores.len()).collect()
        } else if (core.0 as usize) < self.cores.len() {
            vec![core.0 as usize]
        } else {
            return Err(format!("TlbLock event: core {} does not exist", core.0));
        };
        if !lock {
            for c in cores {
                let t = self.lockable_level(c, "")?;
                self.tlbs[t].unlock(page);
            }
            return Ok(());
        }
        let cpu = self.cpu_of_process(process);
        let (cycles, _) = self.lock_page(space, page, cpu, &cores, "")?;
        self.charge(cpu, cycles);
        Ok(())
    }

    /// The TLB instance of core `c`'s data path with lockable entries named `level` (empty:
    /// the first on the path).
    fn lockable_level(&self, c: usize, level: &str) -> Result<usize, String> {
        self.cores[c]
            .dtlb
            .iter()
            .map(|&(t, _)| t)
            .find(|&t| {
                self.tlbs[t].lockable > 0 && (level.is_empty() || self.tlbs[t].name == level)
            })
            .ok_or_else(|| format!("core {c} has no lockable data TLB level"))
    }

    /// Translates `page` of `space` on hardware thread `cpu` (its counters; a walk, or the
    /// walker's latency in a TLB-only run) and puts the translation, locked, into the lockable
    /// level of each of `cores`, the entry tagged with the core's first hardware thread (0).
    /// Returns (the translation's cycles, not charged; how many entries took a new lock).
    fn lock_page(
        &mut self,
        space: usize,
        page: u64,
        cpu: usize,
        cores: &[usize],
        level: &str,
    ) -> Result<(u64, usize), String> {
        let mut out = RefOutcome::default();
        let (pfn, size, cycles) = self.translate(cpu, space, page, &mut out)?;
        let mut n = 0;
        for &c in cores {
            let t = self.lockable_level(c, level)?;
            let who = Who {
                asid: self.spaces[space].asid,
                vmid: self.vmid(),
                hw_thread: 0,
            };
            // Seed 004's lockdown on ARM: the address is invalidated before the entry is
            // loaded and locked, so no entry of another page size over the page stays beside
            // it (on a level without ASID tags, another address space's).
            let dropped = self.tlbs[t].drop_overlapping(page, who, size);
            self.core_os[c].invalidations += dropped;
            let before = self.tlbs[t].locked_count();
            self.tlbs[t].insert(Entry {
                hw_thread: 0,
                locked: true,
                ..Entry::filled(page >> size.shift(), size, pfn, who)
            });
            if !self.tlbs[t].lock(page, who) {
                return Err(format!(
                    "cannot lock page {page:#x} into {} of core {c}",
                    self.tlbs[t].name
                ));
            }
            n += (self.tlbs[t].locked_count() > before) as usize;
        }
        Ok((cycles, n))
    }

    fn vmid(&self) -> u16 {
        self.host.is_some() as u16
    }

    // ---- one reference ----

    /// One reference of hardware thread `cpu` in `space`: the TLB levels of the path in order
    /// (each costs its latency), a walk after a miss in all, the fill of every level above
    /// the one that hit, the data access through the caches, the cycles (in order; under the
    /// overlap model a first-level hit costs the larger of its latency and the data access's).
    fn reference(
        &mut self,
        cpu: usize,
        space: usize,
        kind: AccessKind,
        va: u64,
        out: &mut RefOutcome,
    ) -> Result<u64, String> {
        let top = &self.levels[0];
        if va >> (top.shift + top.bits) != 0 {
            return Err(format!("virtual address {va:#x} is outside the format's"));
        }
        let core = self.cpus[cpu].core;
        let instr = kind == AccessKind::Instr;
        let path = if instr {
            self.cores[core].itlb.clone()
        } else {
            self.cores[core].dtlb.clone()
        };
        let who = Who {
            asid: self.spaces[space].asid,
            vmid: self.vmid(),
            hw_thread: self.cpus[cpu].hw_thread,
        };
        // ARM domains (seed 002, `domains.rs`): checked before the reference runs.
        let walked_domain = self.domain_check(cpu, space, va, &path, who)?;
        // Writebacks a technique's loads left unplaced go first, from this reference's start.
        if self
            .dram
            .as_ref()
            .is_some_and(|d| d.reads != 0 || !d.pending.is_empty())
        {
            self.settle_writebacks(cpu, 0);
        }
        let memory = self.cache_names.len();
        let served = |cs: &RefCounters| cs.data_by_source[memory] + cs.walk_refs_by_source[memory];
        let served_before = served(&self.counters[cpu]);
        let cs = &mut self.counters[cpu];
        cs.references += 1;
        cs.instr_references += instr as u64;
        let mut cycles = 0;
        let mut walk_end = 0;
        let mut found = None;
        for (i, &(t, stat)) in path.iter().enumerate() {
            cycles += self.tlbs[t].latency;
            if i > 0 && !instr {
                // seed 004 §V: a data reference that missed the level before stalls for this
                // one's lookup (the Cortex-A9's micro-TLB miss stall).
                cs.data_stall_cycles[path[i - 1].1] += self.tlbs[t].latency;
            }
            cs.tlb[stat][0] += 1;
            if let Some(e) = self.tlbs[t].lookup(va, who) {
                cs.tlb[stat][1] += 1;
                found = Some((i, e.pfn, e.size, e.global));
                break;
            }
            cs.tlb[stat][2] += 1;
        }
        let (pfn, size, global, filled_below) = match found {
            Some((i, pfn, size, global)) => (pfn, size, global, i),
            None => {
                let (pfn, size, c) = self.translate(cpu, space, va, out)?;
                let global = self.walked_global(space, va);
                cycles += c;
                if let (false, Some(&(_, last))) = (instr, path.last()) {
                    // ... and one that missed the last level stalls for the walk (the main
                    // TLB's miss stall).
                    self.counters[cpu].data_stall_cycles[last] += c;
                }
                // The levels above the last are refilled from it after the walk: more cycles,
                // a data stall of the level above (the Cortex-A9's micro-TLB event 0x85).
                if path.len() > 1 {
                    let refill = self.tlbs[path[path.len() - 1].0].refill_latency;
                    cycles += refill;
                    if !instr {
                        self.counters[cpu].data_stall_cycles[path[path.len() - 2].1] += refill;
                    }
                }
                walk_end = cycles;
                (pfn, size, global, path.len())
            }
        };
        out.tlb_hit = found.map(|f| f.0);
        for &(t, stat) in &path[..filled_below] {
            let mut e = Entry::filled(va >> size.shift(), size, pfn, who);
            e.global = global;
            if self.tlbs[t].insert(e) {
                self.counters[cpu].tlb[stat][3] += 1;
            }
        }
        self.tag_fills(&path, out.tlb_hit, filled_below, va, who, walked_domain);
        if self.track_uses {
            // Seed 000 §5.2's used bit (a count here): every entry that translated this
            // reference, the level that hit and those filled above it (all after a walk).
            for &(t, _) in path.iter().take(filled_below + 1) {
                if let Some(e) = self.tlbs[t].held_mut(va, who) {
                    e.uses = e.uses.saturating_add(1);
                    e.last_use = self.references;
                }
            }
        }
        if self.opts.data_accesses {
            let c = &self.cores[core];
            let cpath = if instr {
                c.icache.clone()
            } else {
                c.dcache.clone()
            };
            let pa = (pfn << 12) + (va & (size.bytes() - 1));
            // A virtually indexed first level: the path is looked up with the virtual address.
            let addr = match cpath.first() {
                Some(&(k, _)) if self.caches[k].virtual_indexed => va,
                _ => pa,
            };
            let (lat, src) = if self.config.timing.write_buffer.is_some() {
                self.buffered_load(cpu, core, &cpath, addr, kind == AccessKind::Store)
            } else {
                self.load(cpu, &cpath, addr, kind == AccessKind::Store)
            };
            self.counters[cpu].data_by_source[src] += 1;
            let first = path.first().map_or(0, |&(t, _)| self.tlbs[t].latency);
            cycles = if self.config.timing.model == TimingModel::Overlap
                && found.map(|f| f.0) == Some(0)
            {
                cycles - first + first.max(lat)
            } else {
                cycles + lat
            };
        }
        // Its lines from memory, which queue for the DRAM channels (`timing.dram`).
        let lines = served(&self.counters[cpu]) - served_before;
        if self.config.timing.mlp.is_some() {
            let walk = found.is_none().then_some(walk_end);
            cycles = self.overlapped(cpu, cycles, lines, walk);
        } else {
            let now = self.cpus[cpu].clock;
            cycles += self.dram_queue(now, lines);
        }
        self.counters[cpu].cycles += cycles;
        self.cpus[cpu].clock += cycles;
        self.references += 1;
        out.cycles += cycles;
        Ok(cycles)
    }

    /// The cycles a reference of in-order latency `lat` costs hardware thread `cpu` under
    /// `timing.mlp` (`MlpConfig`'s rules): a reference of a thread not marked independent
    /// waits for every miss in flight, then takes its latency; a marked one waits while the
    /// oldest miss in flight is `window` references back, and, if it is long, while no slot
    /// (and, if it walked, no walker: one is held for the `walk` cycles to its walk's end) is
    /// free, each time until the earliest that frees it; a long one then goes in flight and
    /// costs only the waits.
    fn overlapped(&mut self, cpu: usize, lat: u64, lines: u64, walk: Option<u64>) -> u64 {
        let m = self.config.timing.mlp.expect("timing.mlp");
        let long = lines > 0;
        let marked = self.cpus[cpu]
            .current
            .is_some_and(|t| self.independent.contains(&t));
        let now = self.cpus[cpu].clock;
        let (flight, refs) = &mut self.in_flight[cpu];
        if !marked {
            let t = flight.iter().fold(now, |t, f| t.max(f.0));
            flight.clear();
            return t - now + lat + self.dram_queue(t, lines);
        }
        *refs += 1;
        let refs = *refs;
        let mut t = now;
        loop {
            flight.retain(|f| f.0 > t);
            let oldest = flight.iter().min_by_key(|f| f.1).copied();
            if let Some(o) = oldest.filter(|o| refs - o.1 >= m.window as u64) {
                t = t.max(o.0);
                continue;
            }
            if long && flight.len() >= m.miss_slots as usize {
                t = t.max(flight.iter().map(|f| f.0).min().expect("full"));
                continue;
            }
            let walking: Vec<u64> = flight.iter().map(|f| f.2).filter(|&w| w > t).collect();
            if long && walk.is_some() && walking.len() >= m.walkers as usize {
                t = t.max(*walking.iter().min().expect("walkers busy"));
                continue;
            }
            break;
        }
        // Its lines queue from when it issues; the wait lengthens its time in flight.
        let wait = self.dram_queue(t, lines);
        if !long {
            return t - now + lat + wait;
        }
        self.in_flight[cpu]
            .0
            .push((t + lat + wait, refs, walk.map_or(0, |w| t + w + wait)));
        t - now
    }

    /// `lines` dependent lines from memory, the first arriving at cycle `at`, each next one
    /// `memory.latency` after the one before began, on the DRAM channels (`timing.dram`):
    /// each where it can begin first over every line the channels were given (the lowest
    /// channel of equals); returns the cycles they waited, rounded up. 0 without
    /// `timing.dram`.
    pub(crate) fn dram_queue(&mut self, at: u64, lines: u64) -> u64 {
        let latency = self.config.memory.latency;
        let Some(d) = &mut self.dram else {
            return 0;
        };
        if lines == 0 && d.pending.is_empty() {
            // Nothing to place: nothing placed and nothing forgotten.
            d.reads = 0;
            d.read_addrs.clear();
            return 0;
        }
        let unit = 1u64 << crate::machine::DRAM_FRACTION_BITS;
        let mut arrive = at * unit;
        let mut waited = 0;
        // What ended more than the horizon before this arrival is forgotten, as the engine
        // forgets it (`DRAM_HORIZON`): a late arrival from further back finds it free.
        let horizon = crate::machine::DRAM_HORIZON * unit;
        for given in &mut d.given {
            given.retain(|&(_, e)| e + horizon >= arrive);
        }
        if let Some((_, _, _, acts)) = &mut d.rows {
            for a in acts {
                a.retain(|&x| x + horizon >= arrive);
            }
        }
        // When each read line is answered: [0] is the reference's start.
        let mut answered = vec![arrive];
        let addrs = std::mem::take(&mut d.read_addrs);
        for i in 0..lines as usize {
            let start = d.place(arrive, addrs.get(i).copied());
            if start > arrive {
                d.counts[1] += 1;
                waited += start - arrive;
            }
            arrive = start + latency * unit;
            answered.push(arrive);
            d.counts[0] += 1;
        }
        let cycles = waited.div_ceil(unit);
        d.counts[2] += cycles;
        // Then the writebacks, after every read: each from the answer of the line whose
        // fill evicted it (a count past the reads placed here: from the last one).
        for (k, addr) in std::mem::take(&mut d.pending) {
            d.place(answered[(k as usize).min(lines as usize)], Some(addr));
            d.counts[3] += 1;
        }
        d.reads = 0;
        cycles
    }

    /// Writebacks of a technique's operation or an event on hardware thread `cpu`, and
    /// `flushed` dirty lines a flush wrote, placed from its clock on.
    pub(crate) fn settle_writebacks(&mut self, cpu: usize, flushed: u64) {
        let now = self.cpus[cpu].clock;
        if let Some(d) = &mut self.dram {
            if d.writebacks {
                d.pending
                    .extend(std::iter::repeat_n((0, 0), flushed as usize));
                self.dram_queue(now, 0);
            }
        }
    }

    /// The DRAM channels' counts since the run began (`Stats::dram`: lines, lines that
    /// waited, cycles waited, lines written back, row activations), with `timing.dram`.
    pub fn dram_counts(&self) -> Option<[u64; 5]> {
        self.dram.as_ref().map(|d| d.counts)
    }

    /// Hardware thread `cpu` waits for every miss it has in flight (`timing.mlp`).
    fn wait_in_flight(&mut self, cpu: usize) {
        let now = self.cpus[cpu].clock;
        let (flight, _) = &mut self.in_flight[cpu];
        let t = flight.iter().fold(now, |t, f| t.max(f.0));
        flight.clear();
        self.counters[cpu].cycles += t - now;
        self.cpus[cpu].clock = t;
    }

    /// Loads `addr` through a cache path; returns (cycles, source index).
    fn load(
        &mut self,
        cpu: usize,
        path: &[(usize, usize)],
        addr: u64,
        write: bool,
    ) -> (u64, usize) {
        let writebacks = self.dram.as_ref().is_some_and(|d| d.writebacks);
        let cs = &mut self.counters[cpu];
        let mut evicted_dirty = Vec::new();
        for (i, &(k, stat)) in path.iter().enumerate() {
            // With writebacks a store dirties the first level only.
            let w = write && (i == 0 || !writebacks);
            let (outcome, victim) = self.caches[k].access_victim(addr, w);
            cs.cache[stat][0] += 1;
            if outcome == CacheOutcome::Hit {
                cs.cache[stat][1] += 1;
                if let Some(d) = self.dram.as_mut() {
                    // Its writebacks, after the lines it read from memory before.
                    d.pending
                        .extend(evicted_dirty.iter().map(|&v| (d.reads, v)));
                }
                return (self.caches[k].latency, stat);
            }
            cs.cache[stat][2] += 1;
            cs.cache[stat][3] += (outcome == CacheOutcome::Evicted) as u64;
            // A dirty victim goes to the first level below on the path that holds it, else
            // to memory.
            if let (Some(v), true) = (victim, writebacks) {
                let held = path[i + 1..]
                    .iter()
                    .any(|&(b, _)| self.caches[b].mark_dirty(v));
                if !held {
                    evicted_dirty.push(v);
                }
            }
        }
        if let Some(d) = self.dram.as_mut() {
            // Served by memory: its address for the row activations; its evictions wait for
            // its line.
            d.reads += 1;
            d.read_addrs.push(addr);
            d.pending
                .extend(evicted_dirty.iter().map(|&v| (d.reads, v)));
        }
        (self.config.memory.latency, self.cache_names.len())
    }

    /// `load` on a machine with a write buffer (`WriteBufferConfig`'s rules), at the hardware
    /// thread's clock: a store that misses the first level takes an entry of the buffer (after
    /// waiting for the oldest to drain if all are taken), which drains on the bus after the
    /// ones before it; a read served by memory takes the bus once every buffered store has
    /// drained.
    fn buffered_load(
        &mut self,
        cpu: usize,
        core: usize,
        path: &[(usize, usize)],
        addr: u64,
        write: bool,
    ) -> (u64, usize) {
        let wb = self.config.timing.write_buffer.expect("a write buffer");
        let now = self.cpus[cpu].clock;
        let memory = self.cache_names.len();
        let (pending, bus_free) = &mut self.write_buffers[core];
        pending.retain(|&t| t > now);
        if write {
            let (k, stat) = path[0];
            let cs = &mut self.counters[cpu];
            cs.cache[stat][0] += 1;
            let line = addr / self.caches[k].line;
            let set = (line % self.caches[k].nsets) as usize;
            if self.caches[k].sets.find(set, |&(t, _)| t == line).is_some() {
                self.caches[k].access(addr, true);
                cs.cache[stat][1] += 1;
                return (self.caches[k].latency, stat);
            }
            cs.cache[stat][2] += 1;
            let mut start = now;
            if pending.len() >= wb.entries as usize {
                start = pending.remove(0).max(now);
            }
            let done = (*bus_free).max(start) + wb.drain_cycles;
            *bus_free = done;
            pending.push(done);
            return (self.caches[k].latency + start - now, memory);
        }
        let (lat, src) = self.load(cpu, path, addr, false);
        if src != memory {
            return (lat, src);
        }
        let (pending, bus_free) = &mut self.write_buffers[core];
        let start = (*bus_free).max(now);
        *bus_free = start + lat;
        pending.clear();
        (start - now + lat, src)
    }

    /// A walk-reference load through the core's walk path; returns its cycles.
    fn walk_load(&mut self, cpu: usize, pa: u64, out: &mut RefOutcome) -> u64 {
        let path = self.cores[self.cpus[cpu].core].wcache.clone();
        let (mut lat, src) = self.load(cpu, &path, pa, false);
        if src == self.cache_names.len() {
            // Served by memory: a page-table load's own cost (one word, when the walker says).
            lat = self
                .config
                .walker
                .memory_load_cycles(self.config.memory.latency);
        }
        self.counters[cpu].walk_refs_by_source[src] += 1;
        out.walk_sources.push(src);
        lat
    }

    /// The translation of `va` after a miss in every TLB level: (frame number, page size,
    /// cycles). A walk: the walker's latency; the page-walk caches looked up deepest level
    /// first, the first hit (its latency) deciding the level the walk starts at; the page
    /// mapped on first touch; the page-walk caches of the levels below the hit filled; every
    /// entry read loaded through the walk path (under virtualization each one, and the page's
    /// guest-physical address, translated by a host walk first; the translation is then of the
    /// smaller page). A TLB-only run: the walker's latency and the page's identity frame.
    fn translate(
        &mut self,
        cpu: usize,
        space: usize,
        va: u64,
        out: &mut RefOutcome,
    ) -> Result<(u64, PageSize, u64), String> {
        let mut cycles = self.config.walker.latency;
        self.counters[cpu].walks += 1;
        if !self.opts.walks {
            self.counters[cpu].walk_cycles += cycles;
            let size = self.page_size_for(space, va);
            return Ok(((va >> size.shift()) << (size.shift() - 12), size, cycles));
        }
        let core = self.cpus[cpu].core;
        let id = self.spaces[space].id;
        // A hit in the cache of level L starts the walk at L + 1 (the entry it holds points at
        // that table: Intel SDM Vol. 3A §4.10.3.2), or at L itself under ChampSim's rule,
        // whose `handle_read` reads the level of the hit again (docs/champsim.md); the
        // caches of the levels read are filled below, the one that hit refreshed.
        // Under ChampSim's rule every cache is looked up and each one that hits is made most
        // recent (its `handle_read` calls `check_hit` on every PSCL, src/ptw.cc:76-79 at
        // 2ff2501), the deepest hit deciding the start; Intel's stops at the first (deepest)
        // hit.
        let again = self.config.walker.pwc_restart == PwcRestart::AtHitLevel;
        let mut start = None;
        for &p in &self.cores[core].pwcs {
            let lvl = self.pwcs[p].level;
            if start.is_some() && !again {
                break;
            }
            if self.pwcs[p].lookup(id, va >> self.levels[lvl].shift) && start.is_none() {
                self.counters[cpu].pwc_hits += 1;
                cycles += self.pwcs[p].latency;
                start = Some(if again { lvl } else { lvl + 1 });
            }
        }
        let start = start.unwrap_or(0);
        let mut written = None;
        if self.spaces[space].tables.mapping(va).is_none() {
            // The fault writes the entry of the deepest table that exists (invalid until now)
            // and every entry below it, in the tables the mapping adds.
            let tables = &self.spaces[space].tables;
            let levels = self.levels;
            written = Some(
                (0..levels.len())
                    .find(|&l| {
                        l + 1 == levels.len()
                            || !tables.tables.contains_key(&(l + 1, va >> levels[l].shift))
                    })
                    .expect("the last level ends the search"),
            );
            self.first_touch(space, va)?;
            self.counters[cpu].page_faults += 1;
            // The kernel's fault handler (`OsConfig::fault_kernel_pages`), before the walk is
            // retried: busy time of the thread, not the walk's. It enters through the vectors
            // as an abort (`OsConfig::vectors_page`), and clears an anonymous page's frame
            // through its linear-map section after its pages (`OsConfig::fault_linear_map`),
            // or a high-memory frame through the CPU's fixmap page (`OsConfig::fault_highmem`).
            let (os, bytes) = (self.opts.os, self.config.memory.bytes);
            let mut kernel = 0;
            if os.fault_kernel_pages > 0 {
                if os.vectors_page {
                    kernel += self.kernel_vectors_in(cpu, space, true);
                }
                for pa in kernel_text_sections(bytes, os.fault_text_sections) {
                    kernel += self.kernel_fetch_in(cpu, space, pa);
                }
            }
            for pa in kernel_path_pages(bytes, os.fault_kernel_page(0), os.fault_kernel_pages) {
                kernel += self.kernel_touch_in(cpu, space, pa, false);
            }
            // Only an anonymous page (of no object) is a fresh frame; its first frame.
            let anonymous = self.region_of(space, va).and_then(|r| r.3).is_none();
            let clear = os.fault_linear_map || os.fault_highmem;
            if os.fault_kernel_pages > 0 && clear && self.host.is_none() && anonymous {
                let (_, pa) = self.spaces[space].tables.mapping(va).expect("mapped");
                if os.fault_linear_map {
                    let section = crate::os::linear_section(pa);
                    kernel +=
                        self.kernel_translate_in(cpu, space, section, PageSize::Size1M, false);
                } else {
                    kernel += self.kmap_atomic_in(cpu, space);
                }
                kernel += self.kernel_store_in(cpu, pa);
            }
            self.counters[cpu].cycles += kernel;
            self.cpus[cpu].clock += kernel;
        }
        let (size, frame) = self.spaces[space].tables.mapping(va).expect("mapped");
        // The handler's stores of the entries the fault wrote, through the data caches (busy
        // time), before the walk is retried: where a traced handler runs and the entries are
        // host-physical (`System::fault_stores`).
        if let Some(from) = written.filter(|_| self.opts.os.fault_kernel_pages > 0) {
            if self.host.is_none() {
                let dcache = self.cores[self.cpus[cpu].core].dcache.clone();
                let mut kernel = 0;
                let leaf = leaf_level(self.levels, size);
                let path = self.spaces[space].tables.path(self.levels, 0, va, size);
                for &pa in &path[from.min(leaf + 1)..] {
                    let (lat, src) = self.load(cpu, &dcache, pa, true);
                    self.counters[cpu].data_by_source[src] += 1;
                    kernel += lat;
                }
                self.counters[cpu].cycles += kernel;
                self.cpus[cpu].clock += kernel;
            }
        }
        let leaf = leaf_level(self.levels, size);
        for &p in &self.cores[core].pwcs {
            let lvl = self.pwcs[p].level;
            if lvl >= start && lvl < leaf {
                self.pwcs[p].insert(id, va >> self.levels[lvl].shift);
            }
        }
        let refs = self.spaces[space].tables.path(self.levels, start, va, size);
        self.counters[cpu].walk_refs += refs.len() as u64;
        let (pfn, size) = if self.host.is_none() {
            for pa in refs {
                cycles += self.walk_load(cpu, pa, out);
            }
            (frame >> 12, size)
        } else {
            for gpa in refs {
                let (hpa, c, _) = self.host_translate(cpu, gpa, out)?;
                cycles += c + self.walk_load(cpu, hpa, out);
            }
            let gpa = frame + (va & (size.bytes() - 1));
            let (hpa, c, hsize) = self.host_translate(cpu, gpa, out)?;
            cycles += c;
            let size = size.min(hsize);
            ((hpa & !(size.bytes() - 1)) >> 12, size)
        };
        self.counters[cpu].walk_cycles += cycles;
        Ok((pfn, size, cycles))
    }

    /// The second dimension of a nested walk: guest-physical `gpa` through the host's page
    /// table (its own page-walk caches, keyed by no address space; a host page mapped on
    /// first touch, of the host page size), each entry loaded through the walk path. Returns
    /// (host-physical address, cycles, host page size).
    fn host_translate(
        &mut self,
        cpu: usize,
        gpa: u64,
        out: &mut RefOutcome,
    ) -> Result<(u64, u64, PageSize), String> {
        let core = self.cpus[cpu].core;
        let host = self.host.as_mut().expect("virtualization");
        let levels = host.levels;
        let mut cycles = 0;
        let mut start = 0;
        for &p in &self.cores[core].host_pwcs {
            let lvl = self.host_pwcs[p].level;
            if self.host_pwcs[p].lookup(u32::MAX, gpa >> levels[lvl].shift) {
                cycles += self.host_pwcs[p].latency;
                start = lvl + 1;
                break;
            }
        }
        if host.tables.mapping(gpa).is_none() {
            let size = host.page_size;
            let frame = host.frames.alloc(size).ok_or("host memory is exhausted")? << 12;
            host.tables
                .map(levels, gpa, size, frame, false, &mut host.frames)
                .ok_or("host memory is exhausted")?;
        }
        let (size, frame) = host.tables.mapping(gpa).expect("mapped");
        let leaf = leaf_level(levels, size);
        for &p in &self.cores[core].host_pwcs {
            let lvl = self.host_pwcs[p].level;
            if lvl >= start && lvl < leaf {
                self.host_pwcs[p].insert(u32::MAX, gpa >> levels[lvl].shift);
            }
        }
        let refs = host.tables.path(levels, start, gpa, size);
        self.counters[cpu].walk_refs += refs.len() as u64;
        for pa in refs {
            cycles += self.walk_load(cpu, pa, out);
        }
        Ok((frame + (gpa & (size.bytes() - 1)), cycles, size))
    }

    fn page_size_for(&self, space: usize, va: u64) -> PageSize {
        self.region_of(space, va)
            .map_or(self.config.page_table.page_size, |r| r.2)
    }

    /// Whether the translation a walk of `va` in `space` just found is global: the kernel's
    /// page, mapped so at its first touch; in a TLB-only run (no tables), its region's.
    fn walked_global(&self, space: usize, va: u64) -> bool {
        if self.opts.walks {
            self.spaces[space].tables.is_global(va)
        } else {
            self.region_of(space, va).is_some_and(|r| r.4)
        }
    }

    /// The newest region of `space` holding `va`: (start, end, page size, shared object,
    /// global).
    fn region_of(&self, space: usize, va: u64) -> Option<(u64, u64, PageSize, Option<u32>, bool)> {
        self.spaces[space]
            .regions
            .iter()
            .find(|r| va >= r.0 && va < r.1)
            .copied()
    }

    /// Demand paging: a frame of the region's page size (4 KiB when no aligned run of that
    /// size is free, as Linux's THP falls back), then the missing tables, top down. A page of
    /// a shared object takes the object's frame when a mapper touched it already.
    fn first_touch(&mut self, space: usize, va: u64) -> Result<(), String> {
        let region = self.region_of(space, va);
        let global = region.is_some_and(|r| r.4);
        let mut size = region.map_or(self.config.page_table.page_size, |r| r.2);
        // A larger page only where its range holds no page and no table yet (Linux maps a
        // huge page only over an empty page-middle directory entry, `pmd_none`).
        if size != PageSize::Size4K && !self.spaces[space].tables.room_for(self.levels, va, size) {
            size = PageSize::Size4K;
        }
        // The object's page: counted from the mapping's start (which maps the object's
        // first byte), in pages of the size mapped.
        let object = region.and_then(|r| r.3.map(|o| (o, r.0)));
        let key = |size: PageSize| object.map(|(o, start)| (o, (va - start) >> size.shift(), size));
        let shared = |r: &ReferenceModel, size: PageSize| {
            key(size).and_then(|k| r.shared_frames.get(&k).map(|&f| f >> 12))
        };
        let frame = match shared(self, size) {
            Some(f) => f,
            None => match self.frames.alloc(size) {
                Some(f) => f,
                None if size != PageSize::Size4K => {
                    size = PageSize::Size4K;
                    match shared(self, size) {
                        Some(f) => f,
                        None => self
                            .frames
                            .alloc(size)
                            .ok_or("physical memory is exhausted")?,
                    }
                }
                None => return Err("physical memory is exhausted".into()),
            },
        };
        if let Some(k) = key(size) {
            self.shared_frames.entry(k).or_insert(frame << 12);
        }
        let va = va & !(size.bytes() - 1);
        self.spaces[space]
            .tables
            .map(self.levels, va, size, frame << 12, global, &mut self.frames)
            .ok_or_else(|| "physical memory is exhausted".to_string())
    }
}
