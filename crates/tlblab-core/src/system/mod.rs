//! The engine: cores with their TLB paths, walkers and cache paths, on one timeline.
//!
//! What one access costs (DESIGN.md "The engine"):
//! 1. Look up the core's TLB levels in order (instruction or data path); each level looked up
//!    costs its latency.
//! 2. On a miss in every level, walk: probe the page-walk caches (deepest level first), then load
//!    each remaining page-table entry by physical address through the core's cache hierarchy
//!    (entering at `walker.first_cache_level`). Under virtualization every guest entry and the
//!    final guest-physical address are first translated by a host walk (2D walk). Fill every TLB
//!    level of the path that holds the page size.
//! 3. Access the data through the core's caches (unless data accesses are switched off).
//! 4. Charge cycles (in-order sum, or the overlap model) to the issuing hardware thread's clock.
//!
//! Several hardware threads share one timeline: `run` always advances the one with the smallest
//! clock, so contention in shared caches and TLBs happens in time order. All state is owned here
//! in flat vectors and referenced by index, so a shared level is simply the same index in several
//! cores' paths.

mod fast_lane;
mod lane;

use crate::cache::{Cache, CacheKind, Outcome as CacheOutcome};
use crate::machine::{MachineConfig, TimingModel};
use crate::memory::{FrameAllocator, MemoryConfig, OutOfMemory};
use crate::os::{
    AsidAllocator, JobStats, MigrationHook, OsConfig, OsStats, SwitchHook, SwitchPolicy,
};
use crate::page_table::{Leaf, PageTable, PageTableFormat, WalkPath};
use crate::stats::{Stats, UnitStats};
use crate::tlb::{Requester, Tlb, TlbEntry, TlbHit, TlbKind};
use crate::walker::Pwc;
use fast_lane::{FastLane, HAND_BACK};
use lane::Lane;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tlblab_trace::record::{flush, NO_THREAD};
use tlblab_trace::{Access, Event, Record, RecordSource};
use tlblab_types::{
    AccessKind, Asid, Domain, PageSize, Pfn, PhysAddr, ThreadId, VirtAddr, Vmid, Vpn,
};

/// Per-run switches that are not properties of the machine.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunOptions {
    pub seed: u64,
    /// Simulate the caches. Off = a machine without caches: every walk reference is served by
    /// memory (TLB-only studies).
    pub caches: bool,
    /// Access the data itself after translating (off for TLB-only studies).
    pub data_accesses: bool,
    /// Walk the page tables on a miss in every TLB level. Off = a TLB-only study (DESIGN.md
    /// "TLB-only simulation"): such a miss is counted as a walk and charged the walker's fixed
    /// latency (`walker.latency`), but no page table is built or read, nothing is loaded through
    /// the caches, no page-walk cache is consulted and no page fault is counted; the translation
    /// filled is the page's identity frame, of the page size its region maps it with. Needs
    /// `caches` and `data_accesses` off (the frames are not real).
    pub walks: bool,
    /// Stop after this many references (0 = no limit).
    pub max_references: u64,
    /// The OS model's parameters.
    pub os: OsConfig,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seed: 0,
            caches: true,
            data_accesses: true,
            walks: true,
            max_references: 0,
            os: OsConfig::default(),
        }
    }
}

impl RunOptions {
    /// TLB levels only: no page walks, no caches, no data accesses (see `walks`).
    pub fn tlb_only(seed: u64) -> RunOptions {
        RunOptions {
            walks: false,
            ..RunOptions::no_caches(seed)
        }
    }

    /// TLB levels and page walks (with the page-walk caches, every page-table entry read from
    /// memory): no caches, no data accesses.
    pub fn no_caches(seed: u64) -> RunOptions {
        RunOptions {
            seed,
            caches: false,
            data_accesses: false,
            walks: true,
            max_references: 0,
            os: OsConfig::default(),
        }
    }

    /// Checks the combination of switches; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if !self.walks && (self.caches || self.data_accesses) {
            return Err(format!(
                "run options: walks = false (a TLB-only run) needs caches = false and data_accesses = false, found caches = {}, data_accesses = {}",
                self.caches, self.data_accesses
            ));
        }
        self.os.validate()
    }
}

/// An error of a run that is the user's to fix (bad trace, exhausted memory).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SimError(pub String);

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for SimError {}

fn oom(e: OutOfMemory, what: &str) -> SimError {
    SimError(format!(
        "simulated {what} memory is exhausted allocating a {} frame; raise memory.bytes (or guest_memory_bytes)",
        e.size
    ))
}

/// One entry of `System::leaf_tables`: the last-level table of the region `region` (the
/// addresses whose bits above `PageTable::last_table_shift` are `region`) of address space
/// `space` is node `node`.
#[derive(Clone, Copy, Debug)]
struct LeafTableMemo {
    space: usize,
    region: u64,
    node: u32,
}

impl LeafTableMemo {
    const EMPTY: LeafTableMemo = LeafTableMemo {
        space: usize::MAX,
        region: 0,
        node: 0,
    };
}

/// Cache levels per path a `CacheTally` counts (a core with a longer path counts load by load).
pub(crate) const TALLIED_LEVELS: usize = 4;

/// A fast lane's counts of the loads through one cache path: `served[k]`, by its level k
/// (`served[levels]`: by memory); `filled[k]`, misses at level k that filled a free way.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PathTally {
    served: [u64; TALLIED_LEVELS + 1],
    filled: [u64; TALLIED_LEVELS],
}

/// What `load` counts per load and per level (accesses, hits, misses, evictions, the source),
/// counted by a fast lane per load only, by the level that served it, and added to the
/// statistics when its run ends (`System::settle_cache_tally`). Measured: the statistics
/// updates of `load` were ~150 of ~1,850 instructions per reference of the zen3 full model
/// on a random stream.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CacheTally {
    data: PathTally,
    instr: PathTally,
    walk: PathTally,
}

/// A fast lane's answers to what `System::prefetch_ahead` asks per record (`lane_hints`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaneHints {
    thread: ThreadId,
    space: usize,
    core: usize,
    /// Hint the far record's last-level page-table entry: walks are on.
    entries: bool,
    /// Hint the near record's cache sets: walks are on, and `System::cache_hints`.
    sets: bool,
}

/// Entries of `System::leaf_tables` (a power of two). `prefetch_ahead` fills the entry of the
/// record `PREFETCH_AHEAD` ahead and reads it for the one half as far ahead, so the entries of
/// the records in between compete for it (with 64, one of 8 others lands on it 12% of the
/// time). With 512 (12 KiB), the far record of a random stream over up to 1 GiB also finds
/// its table without a descent (measured, random 1M zen3 full: 2620 -> 2542 Ir/ref, 5.5 ->
/// 5.9 M refs/s; no change over 4 GiB or on a pointer chase).
const LEAF_TABLES: usize = 512;

/// A process's address space.
#[derive(Clone, Debug)]
pub struct AddressSpace {
    pub id: u32,
    pub asid: Asid,
    pub vmid: Vmid,
    pub domain: Domain,
    pub pt: PageTable,
    /// Regions mapped with a page size other than the default, or backed by a shared object:
    /// (start, end, size, shared object).
    pub(crate) regions: Vec<(u64, u64, PageSize, Option<u32>)>,
    pub(crate) default_size: PageSize,
}

impl AddressSpace {
    /// The page size and shared object (with the region start) that map `va`.
    fn mapping_for(&self, va: VirtAddr) -> (PageSize, Option<(u32, u64)>) {
        for &(s, e, size, object) in &self.regions {
            if va.0 >= s && va.0 < e {
                return (size, object.map(|o| (o, s)));
            }
        }
        (self.default_size, None)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct CacheRef {
    pub(crate) cache: usize,
    pub(crate) stat: usize,
}

/// A core's private view: its TLB and cache paths (indices into the shared vectors).
#[derive(Clone, Debug)]
pub(crate) struct Core {
    /// (tlb index, stat index) in lookup order.
    pub(crate) itlb: Vec<(usize, usize)>,
    pub(crate) dtlb: Vec<(usize, usize)>,
    pub(crate) icache: Vec<CacheRef>,
    pub(crate) dcache: Vec<CacheRef>,
    /// The cache path walk references take.
    pub(crate) wcache: Vec<CacheRef>,
    /// Page-walk caches, deepest level first.
    pub(crate) pwcs: Vec<PwcRef>,
    pub(crate) host_pwcs: Vec<usize>,
    /// The caches of `wcache`, `dcache` and `icache` whose sets are worth a host prefetch
    /// (`Cache::worth_prefetching`, fixed by the geometry): `System::prefetch_cache_sets`
    /// hints only these, without testing every level of every path per reference.
    pub(crate) big_wcache: Vec<usize>,
    pub(crate) big_dcache: Vec<usize>,
    pub(crate) big_icache: Vec<usize>,
}

/// A page-walk cache as a core's walks use it: which one (`System::pwcs`), the page-table
/// level whose entries it caches, and the shift of the virtual-address prefix that keys them
/// (that level's, in the page-table format every address space of the machine shares), looked
/// up once here instead of per walk.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PwcRef {
    pub(crate) pwc: usize,
    pub(crate) level: usize,
    pub(crate) shift: u32,
}

/// A hardware thread: a clock on the timeline, bound to a core.
#[derive(Clone, Debug)]
pub(crate) struct Cpu {
    pub(crate) core: usize,
    pub(crate) hw_thread: u8,
    pub(crate) clock: u64,
    /// The core's first TLB level for [data, instruction] references as (tlb, stat index), or
    /// None: a copy of `Core::dtlb[0]`/`itlb[0]` one pointer closer to the memo fast path.
    pub(crate) first_tlb: [Option<(usize, usize)>; 2],
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct ThreadState {
    pub(crate) space: usize,
    pub(crate) cpu: usize,
    pub(crate) stat: usize,
}

pub(crate) struct Host {
    pub(crate) pt: PageTable,
    pub(crate) frames: FrameAllocator,
    pub(crate) page_size: PageSize,
    pub(crate) pwcs: Vec<Pwc>,
}

/// How far ahead the run loop and the fast lane hint the host to fetch a walk's entries (and
/// half as far, the cache sets): `prefetch_ahead`, `prefetch_lane`.
pub(crate) const PREFETCH_AHEAD: usize = 16;

/// Records per batch the run loop takes from a source (public for the floors that mimic it,
/// tlblab-floor's `run_batches`).
pub const BATCH: usize = 1 << 14;

/// Records (32 bytes each) beyond which `run_slice` takes its slice to be in host memory rather
/// than in the host's caches (`System::records_in_memory`).
const SLICE_FROM_MEMORY: usize = 1 << 16;

/// How many records ahead the run loops hint the host to fetch the record stream itself
/// (2 KiB: two records a host line). A run over records in memory (`System::run_slice`)
/// otherwise waits on them: 32 bytes a record is the host's memory bandwidth at the rates of
/// the fast cases (ARCHITECTURE.md, "Records from memory").
const RECORD_AHEAD: usize = 64;

/// Hints the host to fetch the record `RECORD_AHEAD` after `records[n]` (past the end is fine:
/// a hint never faults). For the loops of a run with `System::records_in_memory` (and
/// tlblab-floor's `run_records`, which reads records in place as they do).
#[inline(always)]
pub fn hint_record(records: &[Record], n: usize) {
    crate::simd::prefetch_at(records.as_ptr().wrapping_add(n + RECORD_AHEAD));
}

/// How far ahead in a hardware thread's queue the multi-core timeline hints the host to fetch
/// a walk's entries (and half as far, the cache sets): as `run_direct` does in trace order.
const TIMELINE_PREFETCH_AHEAD: usize = 16;

/// Where the run loop's batches of records come from.
trait Batches {
    /// The next batch; empty at the end.
    fn next(&mut self) -> Result<&[Record], SimError>;
}

/// Batches filled from a `RecordSource` into a reused buffer.
struct Filled<'a> {
    source: &'a mut dyn RecordSource,
    buf: Vec<Record>,
}

impl Batches for Filled<'_> {
    fn next(&mut self) -> Result<&[Record], SimError> {
        self.buf.clear();
        self.source.fill(&mut self.buf, BATCH).map_err(SimError)?;
        Ok(&self.buf)
    }
}

/// Batches that are pieces of a slice.
struct Slices<'a> {
    records: &'a [Record],
    pos: usize,
}

impl Batches for Slices<'_> {
    fn next(&mut self) -> Result<&[Record], SimError> {
        let end = (self.pos + BATCH).min(self.records.len());
        let batch = &self.records[self.pos..end];
        self.pos = end;
        Ok(batch)
    }
}

/// One hardware thread's accesses waiting on the multi-core timeline (`Record::Access` only),
/// in trace order: a vector read from `head`, since the timeline takes them from the front one
/// at a time and `run_apart` takes them all at once as one slice; and whether they are all of
/// one software thread (`Sole`), kept as they are queued so that `run_apart` need not read
/// them again to know it (`sole`). Measured against a `VecDeque` and that second reading
/// (callgrind, zen3, `random:pages=262144,accesses=2M,threads=2`, TLB-only): queueing and
/// `run_apart` cost about 62 instructions per reference before (178 in all, against 108 for
/// one thread's stream); see `ARCHITECTURE.md`, "Several hardware threads".
#[derive(Default)]
struct CpuQueue {
    records: Vec<Record>,
    /// The first record not yet taken; `records[..head]` are taken, dropped once they are
    /// more than half (`pop_front`), so the vector stays within twice what is queued.
    head: usize,
    /// The thread of the first access queued since the queue was last empty, and whether a
    /// later one was of another thread (kept without a branch: `push` runs per access).
    first: ThreadId,
    mixed: bool,
}

/// Whose accesses a `CpuQueue` holds (`CpuQueue::sole`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sole {
    /// None.
    Empty,
    /// Only this software thread's.
    One(ThreadId),
    /// Two or more threads'.
    Mixed,
}

impl CpuQueue {
    /// The accesses not yet taken, in trace order.
    #[inline]
    fn pending(&self) -> &[Record] {
        &self.records[self.head..]
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.head == self.records.len()
    }

    /// Queues an access of `thread`.
    #[inline(always)]
    fn push(&mut self, r: Record, thread: ThreadId) {
        if self.is_empty() {
            self.first = thread;
        }
        self.mixed |= thread != self.first;
        self.records.push(r);
    }

    /// Whose accesses are queued.
    fn sole(&self) -> Sole {
        if self.is_empty() {
            Sole::Empty
        } else if self.mixed {
            Sole::Mixed
        } else {
            Sole::One(self.first)
        }
    }

    /// Takes the first access, if any.
    fn pop_front(&mut self) -> Option<Record> {
        let r = *self.records.get(self.head)?;
        self.head += 1;
        if self.head == self.records.len() {
            self.clear();
        } else if self.head > 4096 && 2 * self.head > self.records.len() {
            // Most of the vector is taken: drop that part (amortised: each record moves at most
            // once per halving), so a queue that never empties does not grow without bound.
            self.records.drain(..self.head);
            self.head = 0;
        }
        Some(r)
    }

    fn clear(&mut self) {
        self.records.clear();
        self.head = 0;
        self.mixed = false;
    }
}

/// The accesses waiting on the multi-core timeline: `run_batches`, once a second hardware
/// thread has work.
struct Timeline {
    /// Per hardware thread, its accesses in trace order.
    queues: Vec<CpuQueue>,
    queued: usize,
    /// Per hardware thread: its last access walked (`System::timeline_access`).
    walking: Vec<bool>,
    /// No hardware thread's accesses can change what another's find (`System::independent_cpus`).
    independent: bool,
    /// Records were queued since `System::run_apart` was last tried.
    try_apart: bool,
}

impl Timeline {
    fn new(cpus: usize, independent: bool) -> Timeline {
        Timeline {
            queues: (0..cpus).map(|_| CpuQueue::default()).collect(),
            queued: 0,
            walking: vec![false; cpus],
            independent,
            try_apart: false,
        }
    }
}

/// A simulated machine with its memory, address spaces and statistics.
pub struct System {
    pub config: MachineConfig,
    pub options: RunOptions,
    pub tlbs: Vec<Tlb>,
    pub caches: Vec<Cache>,
    pub pwcs: Vec<Pwc>,
    pub(crate) cores: Vec<Core>,
    pub(crate) cpus: Vec<Cpu>,
    pub frames: FrameAllocator,
    pub spaces: Vec<AddressSpace>,
    pub(crate) host: Option<Host>,
    pub(crate) threads: Vec<Option<ThreadState>>,
    /// Per software thread: its counters up to its last switch-out (see `set_current`).
    pub(crate) thread_stats: Vec<(u32, UnitStats)>,
    /// Per hardware thread: counters of the references it simulated. The hot path counts only
    /// here, once; a software thread's share is the difference between switch-in and switch-out.
    pub(crate) cpu_stats: Vec<UnitStats>,
    /// `cpu_stats` of each hardware thread when its current software thread was switched in.
    pub(crate) cpu_snap: Vec<UnitStats>,
    /// Per core: OS work charged to the core and to no thread (switch costs, invalidations).
    pub(crate) core_os: Vec<UnitStats>,
    pub(crate) tlb_names: Vec<String>,
    pub(crate) cache_names: Vec<String>,
    pub(crate) mem_source: usize,
    pub(crate) mem_latency: u64,
    /// Some cache level's state outgrows the host's caches (`Cache::worth_prefetching`).
    big_caches: bool,
    /// The run reads its records in place from a slice in memory (`run_slice`), not from a
    /// batch buffer just filled (`run`): the lanes' loops then hint the host to fetch the
    /// records `RECORD_AHEAD` ahead (ARCHITECTURE.md, "Records from memory").
    pub(crate) records_in_memory: bool,
    /// The last-level tables `prefetch_ahead` found lately, direct-mapped by region: the
    /// descent for a far record is done once, and read again for it as the near record (and
    /// for later records of the same table, as in strided and sequential streams), so that
    /// each hint reads one entry instead of a whole walk. Tables are never freed and a table
    /// pointer never changes once set (`PageTable::map`), so an entry stays right.
    leaf_tables: Box<[LeafTableMemo; LEAF_TABLES]>,
    /// For the virtual addresses `strided_skip` and the physical (data) addresses
    /// `prefetch_cache_sets` look at: the 64-byte line seen last and the step from the one
    /// before. See `strides_on`.
    hint_strides: [(u64, u64); 2],
    /// How many more records `strided_skip` passes over while their virtual addresses keep
    /// their step (see there).
    hint_skips: u32,
    /// The memo lane's touches to replay at its settle, by path (lane.rs, `LaneTouch`), kept
    /// here so that their room is reserved once, not per lane.
    lane_touches: [Vec<lane::LaneTouch>; 2],
    pub(crate) path: WalkPath,
    pub(crate) references: u64,
    /// First virtual address the page-table format cannot translate.
    pub(crate) va_limit: u64,
    /// The software thread each hardware thread runs (OS model).
    pub(crate) current: Vec<Option<ThreadId>>,
    /// The address space whose translations each hardware thread last loaded.
    pub(crate) last_space: Vec<Option<usize>>,
    pub(crate) asids: AsidAllocator,
    /// ASID generation of each address space's current ASID (0 = never assigned).
    pub(crate) space_generation: Vec<u64>,
    pub(crate) os_stats: OsStats,
    pub(crate) switch_hook: Option<Box<dyn SwitchHook>>,
    pub(crate) migration_hook: Option<Box<dyn MigrationHook>>,
    pub(crate) jobs: Vec<JobStats>,
    /// Jobs started by trace events and not yet ended: (task, job) → stats snapshot at start.
    pub(crate) open_jobs: BTreeMap<(u32, u32), (JobStats, UnitStats)>,
    /// Frames of shared objects: (object, page offset, page size index) → frame.
    pub(crate) shared_frames: std::collections::HashMap<(u32, u64, usize), Pfn>,
}

impl System {
    /// Builds a machine. The configuration is validated first; the error names the field.
    pub fn new(config: MachineConfig, options: RunOptions) -> Result<System, SimError> {
        config.validate().map_err(SimError)?;
        options.validate().map_err(SimError)?;
        let seed = options.seed;
        let ncores = config.cores;

        // TLB levels: one instance per core unless shared. Stats are indexed by config position.
        let mut order: Vec<usize> = (0..config.tlbs.len()).collect();
        order.sort_by_key(|&i| (config.tlbs[i].level, config.tlbs[i].kind as u8));
        let tlb_names: Vec<String> = order.iter().map(|&i| config.tlbs[i].name.clone()).collect();
        let mut tlbs = Vec::new();
        let mut tlb_of: Vec<Vec<usize>> = vec![Vec::new(); config.tlbs.len()]; // per config: per core instance
        for (ci, tc) in config.tlbs.iter().enumerate() {
            if tc.shared {
                tlbs.push(Tlb::new(tc.clone(), seed ^ (ci as u64) << 8));
                tlb_of[ci] = vec![tlbs.len() - 1; ncores];
            } else {
                for core in 0..ncores {
                    tlbs.push(Tlb::new(
                        tc.clone(),
                        seed ^ ((ci as u64) << 8) ^ ((core as u64) << 20),
                    ));
                    tlb_of[ci].push(tlbs.len() - 1);
                }
            }
        }

        let cache_cfgs = if options.caches {
            config.caches.clone()
        } else {
            Vec::new()
        };
        let mut corder: Vec<usize> = (0..cache_cfgs.len()).collect();
        corder.sort_by_key(|&i| (cache_cfgs[i].level, cache_cfgs[i].kind as u8));
        let cache_names: Vec<String> = corder.iter().map(|&i| cache_cfgs[i].name.clone()).collect();
        let mut caches = Vec::new();
        let mut cache_of: Vec<Vec<usize>> = vec![Vec::new(); cache_cfgs.len()];
        for (ci, cc) in cache_cfgs.iter().enumerate() {
            if cc.shared {
                caches.push(Cache::new(cc.clone(), seed ^ (ci as u64) << 8));
                cache_of[ci] = vec![caches.len() - 1; ncores];
            } else {
                for core in 0..ncores {
                    caches.push(Cache::new(
                        cc.clone(),
                        seed ^ ((ci as u64) << 8) ^ ((core as u64) << 20),
                    ));
                    cache_of[ci].push(caches.len() - 1);
                }
            }
        }

        let mut pwcs = Vec::new();
        let mut host_pwc_pool = Vec::new();
        let mut cores = Vec::new();
        for core in 0..ncores {
            let tpath = |want: TlbKind| -> Vec<(usize, usize)> {
                order
                    .iter()
                    .enumerate()
                    .filter(|(_, &ci)| {
                        config.tlbs[ci].kind == want || config.tlbs[ci].kind == TlbKind::Unified
                    })
                    .map(|(stat, &ci)| (tlb_of[ci][core], stat))
                    .collect()
            };
            let cpath = |want: CacheKind, from: u8| -> Vec<CacheRef> {
                corder
                    .iter()
                    .enumerate()
                    .filter(|(_, &ci)| {
                        (cache_cfgs[ci].kind == want || cache_cfgs[ci].kind == CacheKind::Unified)
                            && cache_cfgs[ci].level >= from
                    })
                    .map(|(stat, &ci)| CacheRef {
                        cache: cache_of[ci][core],
                        stat,
                    })
                    .collect()
            };
            let mut my_pwcs: Vec<PwcRef> = Vec::new();
            let levels = config.page_table.format.levels();
            for p in &config.walker.pwcs {
                pwcs.push(Pwc::new(p.clone(), seed ^ ((core as u64) << 24)));
                my_pwcs.push(PwcRef {
                    pwc: pwcs.len() - 1,
                    level: p.level,
                    shift: levels[p.level].shift,
                });
            }
            my_pwcs.sort_by_key(|r| std::cmp::Reverse(r.level));
            let mut my_host = Vec::new();
            if let Some(v) = &config.virtualization {
                for p in &v.host_pwcs {
                    host_pwc_pool.push(Pwc::new(p.clone(), seed ^ ((core as u64) << 28)));
                    my_host.push(host_pwc_pool.len() - 1);
                }
                my_host.sort_by_key(|&i| std::cmp::Reverse(host_pwc_pool[i].config.level));
            }
            let big = |path: &[CacheRef]| -> Vec<usize> {
                path.iter()
                    .map(|r| r.cache)
                    .filter(|&c| caches[c].worth_prefetching())
                    .collect()
            };
            let (icache, dcache) = (cpath(CacheKind::Instr, 0), cpath(CacheKind::Data, 0));
            let wcache = cpath(CacheKind::Data, config.walker.first_cache_level);
            cores.push(Core {
                itlb: tpath(TlbKind::Instr),
                dtlb: tpath(TlbKind::Data),
                big_wcache: big(&wcache),
                big_dcache: big(&dcache),
                big_icache: big(&icache),
                icache,
                dcache,
                wcache,
                pwcs: my_pwcs,
                host_pwcs: my_host,
            });
        }
        let mut cpus = Vec::new();
        for (core, paths) in cores.iter().enumerate() {
            for t in 0..config.threads_per_core {
                cpus.push(Cpu {
                    core,
                    hw_thread: t as u8,
                    clock: 0,
                    first_tlb: [paths.dtlb.first().copied(), paths.itlb.first().copied()],
                });
            }
        }

        let (frames, host) = match &config.virtualization {
            None => (FrameAllocator::new(&config.memory, seed), None),
            Some(v) => {
                let guest_mem = MemoryConfig {
                    bytes: v.guest_memory_bytes,
                    ..config.memory.clone()
                };
                let guest = FrameAllocator::new(&guest_mem, seed ^ 0x6e657374);
                let mut hframes = FrameAllocator::new(&config.memory, seed);
                let pt = PageTable::new(v.host_format, &mut hframes).map_err(|e| oom(e, "host"))?;
                (
                    guest,
                    Some(Host {
                        pt,
                        frames: hframes,
                        page_size: v.host_page_size,
                        pwcs: host_pwc_pool,
                    }),
                )
            }
        };

        let mem_source = cache_names.len();
        let ncpus = cpus.len();
        let va_limit = config.page_table.format.va_limit();
        let unit = UnitStats::new(tlb_names.len(), cache_names.len());
        let big_caches = caches.iter().any(Cache::worth_prefetching);
        Ok(System {
            mem_latency: config.memory.latency,
            big_caches,
            records_in_memory: false,
            leaf_tables: Box::new([LeafTableMemo::EMPTY; LEAF_TABLES]),
            hint_strides: [(0, 0); 2],
            hint_skips: 0,
            lane_touches: [(); 2].map(|_| Vec::with_capacity(lane::TOUCHES_ROOM)),
            config,
            options,
            tlbs,
            caches,
            pwcs,
            cores,
            cpus,
            frames,
            spaces: Vec::new(),
            host,
            threads: Vec::new(),
            thread_stats: Vec::new(),
            cpu_stats: vec![unit.clone(); ncpus],
            cpu_snap: vec![unit.clone(); ncpus],
            core_os: vec![unit; ncores],
            tlb_names,
            cache_names,
            mem_source,
            path: WalkPath::default(),
            references: 0,
            va_limit,
            current: vec![None; ncpus],
            last_space: vec![None; ncpus],
            asids: AsidAllocator::new(options.os.asid_bits),
            space_generation: Vec::new(),
            os_stats: OsStats::default(),
            switch_hook: None,
            migration_hook: None,
            jobs: Vec::new(),
            open_jobs: BTreeMap::new(),
            shared_frames: std::collections::HashMap::new(),
        })
    }

    pub fn cpu_count(&self) -> usize {
        self.cpus.len()
    }

    /// Creates an address space (process) and returns its index. ASIDs are assigned 1, 2, ...
    /// (the OS model's ASID allocator may reassign them).
    pub fn create_space(&mut self) -> Result<usize, SimError> {
        let id = self.spaces.len() as u32;
        let pt = PageTable::new(self.config.page_table.format, &mut self.frames)
            .map_err(|e| oom(e, "physical"))?;
        self.space_generation.push(0);
        self.spaces.push(AddressSpace {
            id,
            // Assigned by the ASID allocator when the space is first scheduled.
            asid: Asid(0),
            vmid: Vmid(if self.host.is_some() { 1 } else { 0 }),
            domain: Domain(0),
            pt,
            regions: Vec::new(),
            default_size: self.config.page_table.page_size,
        });
        Ok(id as usize)
    }

    /// Maps `start..start+len` of `space` with `size` pages from now on (first touch decides).
    pub fn set_region_page_size(
        &mut self,
        space: usize,
        start: VirtAddr,
        len: u64,
        size: PageSize,
    ) -> Result<(), SimError> {
        self.add_region(space, start, len, size, None)
    }

    /// Backs `start..start+len` of `space` by shared object `object`: every address space that
    /// maps the same object (at any address) shares its frames.
    pub fn map_shared(
        &mut self,
        space: usize,
        start: VirtAddr,
        len: u64,
        size: PageSize,
        object: u32,
    ) -> Result<(), SimError> {
        self.add_region(space, start, len, size, Some(object))
    }

    /// Newer regions take precedence over older ones that overlap them.
    fn add_region(
        &mut self,
        space: usize,
        start: VirtAddr,
        len: u64,
        size: PageSize,
        object: Option<u32>,
    ) -> Result<(), SimError> {
        let fmt = self.config.page_table.format;
        if !fmt.supports(size) {
            return Err(SimError(format!(
                "page size {size} is not supported by the {} page-table format",
                fmt.name()
            )));
        }
        self.spaces[space]
            .regions
            .insert(0, (start.0, start.0.saturating_add(len), size, object));
        Ok(())
    }

    /// Binds `thread` to `space`, running on hardware thread `cpu`.
    pub fn bind_thread(&mut self, thread: ThreadId, space: usize, cpu: usize) {
        let t = thread.0 as usize;
        if self.threads.len() <= t {
            self.threads.resize(t + 1, None);
        }
        let stat = match self.threads[t] {
            Some(s) => s.stat,
            None => {
                self.thread_stats.push((
                    thread.0,
                    UnitStats::new(self.tlb_names.len(), self.cache_names.len()),
                ));
                self.thread_stats.len() - 1
            }
        };
        self.threads[t] = Some(ThreadState {
            space,
            cpu: cpu % self.cpus.len(),
            stat,
        });
    }

    /// The state of software thread `thread`; a thread first seen runs in the first address
    /// space, on hardware thread (id mod hardware threads).
    #[inline]
    pub(crate) fn thread_state(&mut self, thread: ThreadId) -> Result<ThreadState, SimError> {
        if let Some(Some(s)) = self.threads.get(thread.0 as usize) {
            return Ok(*s);
        }
        self.new_thread_state(thread)
    }

    /// The hardware thread `thread` runs on (`thread_state`'s, without copying the whole
    /// state: the run loops ask it per record).
    #[inline(always)]
    fn cpu_of(&mut self, thread: ThreadId) -> Result<usize, SimError> {
        match self.threads.get(thread.0 as usize) {
            Some(Some(s)) => Ok(s.cpu),
            _ => Ok(self.new_thread_state(thread)?.cpu),
        }
    }

    /// `thread_state` of a thread not seen before (the multi-core run loop asks for every
    /// queued access's: the known case inline, this one out of the way).
    #[cold]
    #[inline(never)]
    fn new_thread_state(&mut self, thread: ThreadId) -> Result<ThreadState, SimError> {
        if thread.0 > 1 << 20 {
            return Err(SimError(format!(
                "thread id {} is too large (expected < 2^20)",
                thread.0
            )));
        }
        if self.spaces.is_empty() {
            self.create_space()?;
        }
        let cpu = thread.0 as usize % self.cpus.len();
        self.bind_thread(thread, 0, cpu);
        Ok(self.threads[thread.0 as usize].unwrap())
    }

    /// Moves `thread` to hardware thread `cpu`. What it meets there is the new core's TLB
    /// contents, unless a `MigrationHook` (a technique) intervenes.
    pub fn migrate(&mut self, thread: ThreadId, cpu: usize) -> Result<(), SimError> {
        let st = self.thread_state(thread)?;
        let cpu = cpu % self.cpus.len();
        if cpu == st.cpu {
            return Ok(());
        }
        self.os_stats.migrations += 1;
        // The thread cannot run before the time it left its old cpu.
        let t = self.cpus[st.cpu].clock;
        if self.cpus[cpu].clock < t {
            self.cpus[cpu].clock = t;
        }
        if self.current[st.cpu] == Some(thread) {
            self.set_current(st.cpu, None);
        }
        self.threads[thread.0 as usize] = Some(ThreadState { cpu, ..st });
        if let Some(mut hook) = self.migration_hook.take() {
            let r = hook.on_migrate(self, thread, st.space, st.cpu, cpu);
            self.migration_hook = Some(hook);
            let c = r?;
            self.charge(cpu, c);
        }
        Ok(())
    }

    /// Installs a technique's migration behaviour.
    pub fn set_migration_hook(&mut self, hook: Box<dyn MigrationHook>) {
        self.migration_hook = Some(hook);
    }

    /// The OS event counters so far.
    pub fn os_stats(&self) -> &OsStats {
        &self.os_stats
    }

    /// Jobs completed so far.
    pub fn jobs(&self) -> &[JobStats] {
        &self.jobs
    }

    /// Loads `pa` through a cache path; returns (cycles, source index).
    #[inline(always)]
    fn load(
        caches: &mut [Cache],
        path: &[CacheRef],
        stats: &mut UnitStats,
        addr: u64,
        write: bool,
        mem_source: usize,
        mem_latency: u64,
    ) -> (u64, usize) {
        for r in path {
            let outcome = caches[r.cache].access_counted(addr, write);
            let s = &mut stats.cache[r.stat];
            s.accesses += 1;
            if outcome == CacheOutcome::Hit {
                s.hits += 1;
                return (caches[r.cache].config.latency, r.stat);
            }
            s.misses += 1;
            s.evictions += (outcome == CacheOutcome::Evicted) as u64;
        }
        (mem_latency, mem_source)
    }

    /// `load`, counting into a fast lane's tally of the path (`PathTally`) instead of the
    /// statistics; returns the cycles. The path has at most `TALLIED_LEVELS` levels.
    #[inline(always)]
    fn load_tallied(
        caches: &mut [Cache],
        path: &[CacheRef],
        t: &mut PathTally,
        addr: u64,
        write: bool,
        mem_latency: u64,
    ) -> u64 {
        for (k, r) in path.iter().enumerate() {
            let c = &mut caches[r.cache];
            match c.access_counted(addr, write) {
                CacheOutcome::Hit => {
                    t.served[k] += 1;
                    return c.config.latency;
                }
                CacheOutcome::Filled => t.filled[k] += 1,
                CacheOutcome::Evicted => {}
            }
        }
        t.served[path.len()] += 1;
        mem_latency
    }

    /// Whether every cache path of core `core_i` is short enough for a `CacheTally`.
    pub(crate) fn paths_tallied(&self, core_i: usize) -> bool {
        let core = &self.cores[core_i];
        [&core.icache, &core.dcache, &core.wcache]
            .iter()
            .all(|p| p.len() <= TALLIED_LEVELS)
    }

    /// Adds a fast lane's `CacheTally` of hardware thread `cpu` (on core `core_i`) to its
    /// statistics: what `load` would have counted, load by load. A load served by level k of
    /// its path reached levels 0..=k, hit k and missed the ones before; a miss that did not
    /// fill a free way evicted.
    pub(crate) fn settle_cache_tally(&mut self, cpu: usize, core_i: usize, tally: &CacheTally) {
        let core = &self.cores[core_i];
        let cs = &mut self.cpu_stats[cpu];
        let paths = [
            (&tally.data, &core.dcache, false),
            (&tally.instr, &core.icache, false),
            (&tally.walk, &core.wcache, true),
        ];
        for (t, path, walk) in paths {
            let mut reached: u64 = t.served[..=path.len()].iter().sum();
            if reached == 0 {
                continue;
            }
            let by_source = if walk {
                &mut cs.walk_refs_by_source
            } else {
                &mut cs.data_by_source
            };
            by_source[self.mem_source] += t.served[path.len()];
            for (k, r) in path.iter().enumerate() {
                let hits = t.served[k];
                let misses = reached - hits;
                let s = &mut cs.cache[r.stat];
                s.accesses += reached;
                s.hits += hits;
                s.misses += misses;
                s.evictions += misses - t.filled[k];
                by_source[r.stat] += hits;
                reached = misses;
            }
        }
    }

    /// Simulates one access; returns the cycles it cost.
    #[inline(always)]
    pub fn access(&mut self, a: Access) -> Result<u64, SimError> {
        self.access_inline::<false>(a)
    }

    /// `access`, its common case inline: a known thread, already running on its hardware
    /// thread, an access within one page, through the first level's memo and then, with
    /// `HINT_INLINE`, its hint table inline as well (else `reference_past_memo`, a call).
    #[inline(always)]
    fn access_inline<const HINT_INLINE: bool>(&mut self, a: Access) -> Result<u64, SimError> {
        if let Some(Some(st)) = self.threads.get(a.thread.0 as usize) {
            let st = *st;
            let within_page = a.size <= 1 || (a.vaddr.0 & 0xfff) + a.size as u64 <= 4096;
            if within_page && self.current[st.cpu] == Some(a.thread) {
                let req = self.requester(st);
                if let Some(cycles) = self.reference_memo_hit(st, req, a.kind, a.vaddr) {
                    return Ok(cycles);
                }
                if !HINT_INLINE {
                    return self.reference_past_memo(st, req, a.kind, a.vaddr);
                }
                if let Some(cycles) = self.reference_hinted_hit(st, req, a.kind, a.vaddr) {
                    return Ok(cycles);
                }
                return self.reference_full(st, req, a.kind, a.vaddr);
            }
        }
        self.access_general(a)
    }

    /// `access` in general: unknown threads, trace-driven context switches, page crossings.
    #[inline(never)]
    fn access_general(&mut self, a: Access) -> Result<u64, SimError> {
        let mut st = match self.threads.get(a.thread.0 as usize) {
            Some(Some(s)) => *s,
            _ => self.thread_state(a.thread)?,
        };
        if self.current[st.cpu] != Some(a.thread) {
            // A core runs another thread's access: that is a context switch (trace-driven
            // scheduling). The switch may re-assign ASIDs, so re-read the state after it.
            self.context_switch(st.cpu, Some(a.thread))?;
            st = self.thread_state(a.thread)?;
        }
        // An access crossing a 4 KiB boundary is two references (Lackey reports such accesses as
        // one line; the hardware translates both pages).
        let off = a.vaddr.0 & 0xfff;
        if a.size > 1 && off + a.size as u64 > 4096 {
            let first = 4096 - off;
            let c1 = self.reference(st, a.kind, a.vaddr)?;
            let c2 = self.reference(st, a.kind, VirtAddr(a.vaddr.0 + first))?;
            return Ok(c1 + c2);
        }
        self.reference(st, a.kind, a.vaddr)
    }

    /// One reference: translate, then access the data. The common case (the page of the
    /// previous reference through this path, so the first TLB level's memo hits) takes a short
    /// path that searches, fills and walks nothing; `reference_full` is the general one.
    #[inline(always)]
    fn reference(
        &mut self,
        st: ThreadState,
        kind: AccessKind,
        va: VirtAddr,
    ) -> Result<u64, SimError> {
        let req = self.requester(st);
        match self.reference_memo_hit(st, req, kind, va) {
            Some(cycles) => Ok(cycles),
            None => self.reference_past_memo(st, req, kind, va),
        }
    }

    /// `reference` after a memo miss: a hit in the first TLB level through its hint table takes
    /// `reference_hinted_hit`; anything else `reference_full`.
    #[inline(never)]
    fn reference_past_memo(
        &mut self,
        st: ThreadState,
        req: Requester,
        kind: AccessKind,
        va: VirtAddr,
    ) -> Result<u64, SimError> {
        match self.reference_hinted_hit(st, req, kind, va) {
            Some(cycles) => Ok(cycles),
            None => self.reference_full(st, req, kind, va),
        }
    }

    /// `reference` when the first TLB level hits through its hint table (`Tlb::lookup_hinted`):
    /// the same effects as `reference_full` for a first-level hit (no fill, no walk), without
    /// its general loop. None, having changed nothing, otherwise. The va-limit check is not
    /// needed: only translations that passed it are ever filled.
    #[inline(always)]
    fn reference_hinted_hit(
        &mut self,
        st: ThreadState,
        req: Requester,
        kind: AccessKind,
        va: VirtAddr,
    ) -> Option<u64> {
        let cpu = &self.cpus[st.cpu];
        let core_i = cpu.core;
        let is_instr = kind.is_instr();
        let (t, stat) = cpu.first_tlb[is_instr as usize]?;
        let tlb = &mut self.tlbs[t];
        let hit = tlb.lookup_hinted(va, req)?;
        let tlb_latency = tlb.config.latency;
        Some(self.settle_first_level_hit(st, core_i, kind, va, stat, tlb_latency, hit))
    }

    #[inline]
    fn requester(&self, st: ThreadState) -> Requester {
        let space = &self.spaces[st.space];
        Requester {
            asid: space.asid,
            vmid: space.vmid,
            hw_thread: self.cpus[st.cpu].hw_thread,
        }
    }

    /// `reference` when the first TLB level's last-hit memo matches (see `Tlb::memo_hit`); None
    /// otherwise, having changed nothing. The memo only holds translations that passed the
    /// address-limit check, so that check is not repeated here.
    #[inline(always)]
    fn reference_memo_hit(
        &mut self,
        st: ThreadState,
        req: Requester,
        kind: AccessKind,
        va: VirtAddr,
    ) -> Option<u64> {
        let cpu = &self.cpus[st.cpu];
        let core_i = cpu.core;
        let is_instr = kind.is_instr();
        let (t, stat) = cpu.first_tlb[is_instr as usize]?;
        let tlb = &mut self.tlbs[t];
        let hit = tlb.memo_hit(va, req)?;
        let tlb_latency = tlb.config.latency;
        Some(self.settle_first_level_hit(st, core_i, kind, va, stat, tlb_latency, hit))
    }

    /// The rest of a reference that hit the first TLB level (stats index `stat`): counters, the
    /// data access, cycles. Returns the cycles.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn settle_first_level_hit(
        &mut self,
        st: ThreadState,
        core_i: usize,
        kind: AccessKind,
        va: VirtAddr,
        stat: usize,
        tlb_latency: u64,
        hit: TlbHit,
    ) -> u64 {
        let is_instr = kind.is_instr();
        let cs = &mut self.cpu_stats[st.cpu];
        cs.references += 1;
        cs.instr_references += is_instr as u64;
        let ls = &mut cs.tlb[stat];
        ls.accesses += 1;
        ls.hits += 1;
        let mut cycles = tlb_latency;
        if self.options.data_accesses {
            let lat = self.data_access(st.cpu, core_i, kind, va, hit.pfn, hit.size, None);
            cycles = if self.config.timing.model == TimingModel::Overlap {
                tlb_latency.max(lat)
            } else {
                tlb_latency + lat
            };
        }
        self.finish_reference(st.cpu, cycles);
        cycles
    }

    /// Accesses the data of a translated reference through the core's cache path; returns its
    /// latency. Counts into the statistics, or into `tally` if given (a fast lane's,
    /// `settle_cache_tally`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn data_access(
        &mut self,
        cpu: usize,
        core_i: usize,
        kind: AccessKind,
        va: VirtAddr,
        pfn: Pfn,
        size: PageSize,
        tally: Option<&mut CacheTally>,
    ) -> u64 {
        let pa = (pfn.0 << 12) + (va.0 & (size.bytes() - 1));
        let core = &self.cores[core_i];
        let path = if kind.is_instr() {
            &core.icache
        } else {
            &core.dcache
        };
        // Virtually indexed caches see the virtual address; the path is uniform in practice
        // (all virtual or all physical), so we pick by the first level.
        let addr = match path.first() {
            Some(r) if self.caches[r.cache].is_virtual() => va.0,
            _ => pa,
        };
        if let Some(t) = tally {
            let t = if kind.is_instr() {
                &mut t.instr
            } else {
                &mut t.data
            };
            let write = kind == AccessKind::Store;
            return Self::load_tallied(&mut self.caches, path, t, addr, write, self.mem_latency);
        }
        let (lat, src) = Self::load(
            &mut self.caches,
            path,
            &mut self.cpu_stats[cpu],
            addr,
            kind == AccessKind::Store,
            self.mem_source,
            self.mem_latency,
        );
        self.cpu_stats[cpu].data_by_source[src] += 1;
        lat
    }

    #[inline(always)]
    fn finish_reference(&mut self, cpu: usize, cycles: u64) {
        self.cpu_stats[cpu].cycles += cycles;
        self.cpus[cpu].clock += cycles;
        self.references += 1;
    }

    /// The general `reference`: look up every TLB level of the path, walk on a miss in all of
    /// them, fill the levels above the one that hit, access the data, charge the cycles.
    #[inline(never)]
    fn reference_full(
        &mut self,
        st: ThreadState,
        req: Requester,
        kind: AccessKind,
        va: VirtAddr,
    ) -> Result<u64, SimError> {
        let fmt_limit = self.va_limit;
        if va.0 >= fmt_limit {
            return Err(SimError(format!(
                "virtual address {va} is outside the {}-bit address space of the {} page-table format",
                fmt_limit.trailing_zeros(),
                self.config.page_table.format.name()
            )));
        }
        let core_i = self.cpus[st.cpu].core;
        let hw = req.hw_thread;
        let is_instr = kind.is_instr();
        let ntlb = if is_instr {
            self.cores[core_i].itlb.len()
        } else {
            self.cores[core_i].dtlb.len()
        };

        let mut cycles = 0u64;
        let mut tlb_cycles_first = 0u64;
        let mut found: Option<(usize, Pfn, PageSize, Domain)> = None;
        {
            let core = &self.cores[core_i];
            let path = if is_instr { &core.itlb } else { &core.dtlb };
            let cs = &mut self.cpu_stats[st.cpu];
            cs.references += 1;
            cs.instr_references += is_instr as u64;
            for (i, &(t, stat)) in path.iter().enumerate() {
                let tlb = &mut self.tlbs[t];
                let lat = tlb.config.latency;
                cycles += lat;
                if i == 0 {
                    tlb_cycles_first = lat;
                }
                cs.tlb[stat].accesses += 1;
                if let Some(h) = tlb.lookup(va, req) {
                    cs.tlb[stat].hits += 1;
                    found = Some((i, h.pfn, h.size, h.domain));
                    break;
                }
                cs.tlb[stat].misses += 1;
            }
        }

        let (pfn, size, domain, filled_below) = match found {
            Some((i, pfn, size, domain)) => (pfn, size, domain, i),
            None => {
                let (leaf, wc) = if self.options.walks {
                    self.walk(core_i, st, va)?
                } else {
                    self.translate_without_walk(st, va)
                };
                cycles += wc;
                (leaf.pfn, leaf.size, leaf.domain, ntlb)
            }
        };
        // Fill the levels above the one that hit (all of them after a walk).
        if filled_below > 0 {
            let vpn = Vpn(va.0 >> size.shift());
            let mut e = TlbEntry::new(vpn, size, pfn, req.asid);
            e.vmid = req.vmid;
            e.domain = domain;
            e.hw_thread = hw;
            let core = &self.cores[core_i];
            let path = if is_instr { &core.itlb } else { &core.dtlb };
            // Every level filled here has just missed this page for this requester.
            for &(t, stat) in &path[..filled_below] {
                if self.tlbs[t].fill_after_miss(e) {
                    self.cpu_stats[st.cpu].tlb[stat].evictions += 1;
                }
            }
        }

        if self.options.data_accesses {
            let lat = self.data_access(st.cpu, core_i, kind, va, pfn, size, None);
            if self.config.timing.model == TimingModel::Overlap
                && filled_below == 0
                && found.is_some()
            {
                cycles = cycles - tlb_cycles_first + tlb_cycles_first.max(lat);
            } else {
                cycles += lat;
            }
        }
        self.finish_reference(st.cpu, cycles);
        Ok(cycles)
    }

    /// A page walk for `va`, mapping the page on first touch. Returns the leaf and its cycles.
    fn walk(
        &mut self,
        core_i: usize,
        st: ThreadState,
        va: VirtAddr,
    ) -> Result<(Leaf, u64), SimError> {
        self.walk_counted(core_i, st, va, None)
    }

    /// `walk`, counting the loads of its entries into `tally` if given (a fast lane's,
    /// `settle_cache_tally`; not under virtualization, whose loads count as they go).
    pub(crate) fn walk_counted(
        &mut self,
        core_i: usize,
        st: ThreadState,
        va: VirtAddr,
        tally: Option<&mut CacheTally>,
    ) -> Result<(Leaf, u64), SimError> {
        let mut cycles = self.config.walker.latency;
        self.cpu_stats[st.cpu].walks += 1;
        let (start_level, start_node, pwc_cycles) = self.pwc_lookups(core_i, st, va);
        cycles += pwc_cycles;
        let mut leaf =
            self.spaces[st.space]
                .pt
                .walk_from(va, start_level, start_node, &mut self.path);
        if leaf.is_none() {
            self.first_touch(st.space, va)?;
            self.cpu_stats[st.cpu].page_faults += 1;
            leaf = self.spaces[st.space]
                .pt
                .walk_from(va, start_level, start_node, &mut self.path);
        }
        let mut leaf = leaf.expect("a page just mapped translates");
        self.fill_pwcs(core_i, st, va, start_level);

        // Load every entry the walk reads through the caches. `self.path` is read in place,
        // not copied out (nothing in between writes it: a nested walk has its own).
        if self.host.is_none() {
            cycles += self.load_walk_path(core_i, st, tally);
        } else {
            for i in 0..self.path.len {
                let gpa = self.path.refs[i];
                let (hpa, c) = self.host_translate(core_i, st, gpa)?;
                cycles += c + self.walk_ref(core_i, st, hpa.0);
            }
            self.cpu_stats[st.cpu].walk_refs += self.path.len as u64;
            // The TLB caches guest-virtual → host-physical; the page is the smaller of the two.
            let gpa = PhysAddr(leaf.pfn.base().0 + (va.0 & (leaf.size.bytes() - 1)));
            let (hpa, c, hsize) = self.host_translate_sized(core_i, st, gpa)?;
            cycles += c;
            let size = if hsize < leaf.size { hsize } else { leaf.size };
            leaf = Leaf {
                pfn: PhysAddr(hpa.0 & !(size.bytes() - 1)).pfn(),
                size,
                domain: leaf.domain,
            };
        }
        self.cpu_stats[st.cpu].walk_cycles += cycles;
        Ok((leaf, cycles))
    }

    /// A walk's page-walk-cache lookups, deepest level first: the first hit decides where the
    /// walk starts. Returns (start level, start node, the latency of the cache that hit).
    /// The fields are borrowed once, not through `self` per lookup (which reloaded each
    /// vector's pointer and length: ~50 instructions per walk, callgrind, zen3 full model).
    #[inline(always)]
    fn pwc_lookups(&mut self, core_i: usize, st: ThreadState, va: VirtAddr) -> (usize, u32, u64) {
        let space_id = self.spaces[st.space].id;
        let pwcs = &mut self.pwcs;
        for r in &self.cores[core_i].pwcs {
            let pwc = &mut pwcs[r.pwc];
            if let Some(node) = pwc.lookup(space_id, va.0 >> r.shift) {
                self.cpu_stats[st.cpu].pwc_hits += 1;
                return (r.level + 1, node, pwc.config.latency);
            }
        }
        (0, 0, 0)
    }

    /// Fills the page-walk caches with the table pointers the walk in `self.path` read, which
    /// started at `start_level`. Each level filled is below the one that hit (or there was no
    /// hit): its lookup just missed.
    #[inline(always)]
    fn fill_pwcs(&mut self, core_i: usize, st: ThreadState, va: VirtAddr, start_level: usize) {
        let space_id = self.spaces[st.space].id;
        let (pwcs, path) = (&mut self.pwcs, &self.path);
        if path.len == 1 {
            // The walk read only its leaf's entry: nothing above it to cache (the common case
            // of a walk whose deepest page-walk cache hit).
            return;
        }
        let leaf_level = start_level + path.len - 1;
        for r in &self.cores[core_i].pwcs {
            if r.level >= start_level && r.level < leaf_level {
                let child = path.nodes[r.level + 1 - start_level];
                pwcs[r.pwc].insert_after_miss(space_id, va.0 >> r.shift, child);
            }
        }
    }

    /// Loads every entry of `self.path` (physical addresses: no virtualization) through the
    /// core's walk cache path; returns the cycles. Fields borrowed once, as in `pwc_lookups`.
    #[inline(always)]
    fn load_walk_path(
        &mut self,
        core_i: usize,
        st: ThreadState,
        tally: Option<&mut CacheTally>,
    ) -> u64 {
        let (path, caches) = (&self.path, &mut self.caches);
        let wcache = &self.cores[core_i].wcache;
        let stats = &mut self.cpu_stats[st.cpu];
        let mut cycles = 0;
        if let Some(t) = tally {
            for &pa in &path.refs[..path.len] {
                cycles +=
                    Self::load_tallied(caches, wcache, &mut t.walk, pa.0, false, self.mem_latency);
            }
            stats.walk_refs += path.len as u64;
            return cycles;
        }
        for &pa in &path.refs[..path.len] {
            let (lat, src) = Self::load(
                caches,
                wcache,
                stats,
                pa.0,
                false,
                self.mem_source,
                self.mem_latency,
            );
            stats.walk_refs_by_source[src] += 1;
            cycles += lat;
        }
        stats.walk_refs += path.len as u64;
        cycles
    }

    /// A miss in every TLB level of a TLB-only run (`RunOptions::walks` off): counted as a walk
    /// of the walker's fixed latency; the translation is the identity frame of the page, of
    /// the size the address space maps `va` with, and the address space's domain.
    #[inline]
    fn translate_without_walk(&mut self, st: ThreadState, va: VirtAddr) -> (Leaf, u64) {
        let cycles = self.config.walker.latency;
        let cs = &mut self.cpu_stats[st.cpu];
        cs.walks += 1;
        cs.walk_cycles += cycles;
        let space = &self.spaces[st.space];
        let (size, _) = space.mapping_for(va);
        let leaf = Leaf {
            pfn: Pfn(va.align_down(size).0 >> 12),
            size,
            domain: space.domain,
        };
        (leaf, cycles)
    }

    #[inline]
    fn walk_ref(&mut self, core_i: usize, st: ThreadState, pa: u64) -> u64 {
        let (lat, src) = Self::load(
            &mut self.caches,
            &self.cores[core_i].wcache,
            &mut self.cpu_stats[st.cpu],
            pa,
            false,
            self.mem_source,
            self.mem_latency,
        );
        self.cpu_stats[st.cpu].walk_refs_by_source[src] += 1;
        lat
    }

    fn host_translate(
        &mut self,
        core_i: usize,
        st: ThreadState,
        gpa: PhysAddr,
    ) -> Result<(PhysAddr, u64), SimError> {
        let (hpa, c, _) = self.host_translate_sized(core_i, st, gpa)?;
        Ok((hpa, c))
    }

    /// The second dimension of a nested walk: guest-physical → host-physical through the host
    /// page table (with its own page-walk caches), every host entry loaded through the caches.
    fn host_translate_sized(
        &mut self,
        core_i: usize,
        st: ThreadState,
        gpa: PhysAddr,
    ) -> Result<(PhysAddr, u64, PageSize), SimError> {
        let host = self
            .host
            .as_mut()
            .expect("called only under virtualization");
        let levels = host.pt.levels();
        let gva = VirtAddr(gpa.0);
        let mut cycles = 0;
        let (mut start_level, mut start_node) = (0usize, 0u32);
        for &p in &self.cores[core_i].host_pwcs {
            let pwc = &mut host.pwcs[p];
            let lvl = pwc.config.level;
            if let Some(node) = pwc.lookup(u32::MAX, gva.0 >> levels[lvl].shift) {
                start_level = lvl + 1;
                start_node = node;
                cycles += pwc.config.latency;
                break;
            }
        }
        let mut path = WalkPath::default();
        let mut leaf = host.pt.walk_from(gva, start_level, start_node, &mut path);
        if leaf.is_none() {
            let size = host.page_size;
            let pfn = host.frames.alloc(size).map_err(|e| oom(e, "host"))?;
            host.pt
                .map(gva.align_down(size), size, pfn, Domain(0), &mut host.frames)
                .map_err(|e| oom(e, "host"))?;
            leaf = host.pt.walk_from(gva, start_level, start_node, &mut path);
        }
        let leaf = leaf.expect("a host page just mapped translates");
        let leaf_level = start_level + path.len - 1;
        for &p in &self.cores[core_i].host_pwcs {
            let lvl = host.pwcs[p].config.level;
            if lvl >= start_level && lvl < leaf_level {
                // Looked up above and missed, as in `walk`.
                host.pwcs[p].insert_after_miss(
                    u32::MAX,
                    gva.0 >> levels[lvl].shift,
                    path.nodes[lvl + 1 - start_level],
                );
            }
        }
        for i in 0..path.len {
            cycles += self.walk_ref(core_i, st, path.refs[i].0);
        }
        self.cpu_stats[st.cpu].walk_refs += path.len as u64;
        let hpa = PhysAddr(leaf.pfn.base().0 + (gpa.0 & (leaf.size.bytes() - 1)));
        Ok((hpa, cycles, leaf.size))
    }

    /// Demand paging: allocate a frame of the region's page size and map it; pages of a shared
    /// object reuse the object's frame. A huge-page allocation that fails (fragmented memory)
    /// falls back to base pages, as Linux THP does.
    fn first_touch(&mut self, space: usize, va: VirtAddr) -> Result<(), SimError> {
        let (mut size, object) = self.spaces[space].mapping_for(va);
        let key = object.map(|(o, start)| (o, (va.0 - start) >> size.shift(), size.index()));
        let pfn = match key.and_then(|k| self.shared_frames.get(&k).copied()) {
            Some(p) => p,
            None => {
                let p = match self.frames.alloc(size) {
                    Ok(p) => p,
                    Err(_) if size != PageSize::Size4K && key.is_none() => {
                        size = PageSize::Size4K;
                        self.frames.alloc(size).map_err(|e| oom(e, "physical"))?
                    }
                    Err(e) => return Err(oom(e, "physical")),
                };
                if let Some(k) = key {
                    self.shared_frames.insert(k, p);
                }
                p
            }
        };
        let s = &mut self.spaces[space];
        let domain = s.domain;
        s.pt.map(va.align_down(size), size, pfn, domain, &mut self.frames)
            .map_err(|e| oom(e, "physical"))
    }

    /// Charges `cycles` of OS work to hardware thread `cpu`.
    pub(crate) fn charge(&mut self, cpu: usize, cycles: u64) {
        self.cpus[cpu].clock += cycles;
        self.core_os[self.cpus[cpu].core].cycles += cycles;
    }

    /// Unmaps `start..start+len` in `space` and shoots the range down: every core's TLBs lose
    /// the range's entries of that address space, the space's page-walk-cache entries are dropped,
    /// and every core but the initiator (`cpu`) takes an inter-processor interrupt
    /// (`os.ipi_cycles`). Returns the number of TLB entries invalidated.
    pub fn unmap_range(&mut self, space: usize, start: VirtAddr, len: u64, cpu: usize) -> usize {
        let end = start.0.saturating_add(len);
        let mut va = start.align_down(PageSize::Size4K).0;
        while va < end {
            self.spaces[space].pt.unmap(VirtAddr(va));
            va += 4096;
        }
        // Page-walk caches may point at tables of the range; drop this space's entries.
        let id = self.spaces[space].id;
        for p in &mut self.pwcs {
            p.flush_space(id);
        }
        self.shootdown(space, start, len, cpu)
    }

    /// The thread's hardware thread, for events that name a process rather than a core.
    fn cpu_of_process(&self, process: u32) -> usize {
        self.threads
            .iter()
            .flatten()
            .find(|s| s.space == process as usize)
            .map(|s| s.cpu)
            .unwrap_or(0)
    }

    fn ensure_space(&mut self, process: u32) -> Result<usize, SimError> {
        if process > 1 << 16 {
            return Err(SimError(format!(
                "process id {process} is too large (expected < 65536)"
            )));
        }
        while self.spaces.len() <= process as usize {
            self.create_space()?;
        }
        Ok(process as usize)
    }

    fn page_size_of_shift(shift: u8) -> Result<PageSize, SimError> {
        PageSize::ALL
            .into_iter()
            .find(|s| s.shift() == shift as u32)
            .ok_or_else(|| SimError(format!("mapping event: page_shift {shift} is not a supported page size (12, 14, 16, 20, 21, 30)")))
    }

    /// Starts recording a job's statistics (trace `JobStart`, or the RM scheduler).
    pub(crate) fn job_start(&mut self, task: u32, job: u32, release: u64) -> Result<(), SimError> {
        let st = self.thread_state(ThreadId(task))?;
        let snapshot = self.thread_stats_now(ThreadId(task), st);
        let js = JobStats {
            task,
            job,
            release,
            start: self.cpus[st.cpu].clock,
            ..JobStats::default()
        };
        self.open_jobs.insert((task, job), (js, snapshot));
        Ok(())
    }

    /// Finishes a job's statistics: what its thread did since `job_start`.
    pub(crate) fn job_end(
        &mut self,
        task: u32,
        job: u32,
        deadline: Option<u64>,
    ) -> Result<(), SimError> {
        let st = self.thread_state(ThreadId(task))?;
        let Some((mut js, before)) = self.open_jobs.remove(&(task, job)) else {
            return Err(SimError(format!(
                "JobEnd for task {task} job {job} without a JobStart"
            )));
        };
        let now = &self.thread_stats_now(ThreadId(task), st);
        js.end = self.cpus[st.cpu].clock;
        js.cycles = now.cycles - before.cycles;
        js.references = now.references - before.references;
        js.tlb_misses = now
            .tlb
            .iter()
            .zip(&before.tlb)
            .map(|(a, b)| a.misses - b.misses)
            .collect();
        js.walks = now.walks - before.walks;
        js.deadline_missed = deadline.is_some_and(|d| js.end > d);
        self.jobs.push(js);
        Ok(())
    }

    /// Handles an event record (conventions: docs/formats/trace.md §6).
    pub fn event(&mut self, e: Event) -> Result<(), SimError> {
        match e {
            Event::ThreadStart { thread, process } => {
                let space = self.ensure_space(process)?;
                let cpu = thread.0 as usize % self.cpus.len();
                self.bind_thread(thread, space, cpu);
            }
            Event::ThreadExit { thread } => {
                for c in 0..self.cpus.len() {
                    if self.current[c] == Some(thread) {
                        self.set_current(c, None);
                    }
                }
            }
            Event::ContextSwitch { core, to, .. } => {
                let cpu = core.0 as usize % self.cpus.len();
                if to == NO_THREAD {
                    self.context_switch(cpu, None)?;
                } else {
                    // The thread now runs on this hardware thread.
                    let st = self.thread_state(to)?;
                    if st.cpu != cpu {
                        self.threads[to.0 as usize] = Some(ThreadState { cpu, ..st });
                    }
                    self.context_switch(cpu, Some(to))?;
                }
            }
            Event::Migrate { thread, core } => self.migrate(thread, core.0 as usize)?,
            Event::Mmap {
                process,
                start,
                len,
                page_shift,
                ..
            } => {
                let space = self.ensure_space(process)?;
                let size = Self::page_size_of_shift(page_shift)?;
                self.set_region_page_size(space, start, len, size)?;
            }
            Event::MapShared {
                process,
                start,
                len,
                page_shift,
                object,
                ..
            } => {
                let space = self.ensure_space(process)?;
                let size = Self::page_size_of_shift(page_shift)?;
                self.map_shared(space, start, len, size, object)?;
            }
            Event::Munmap {
                process,
                start,
                len,
            } => {
                if (process as usize) < self.spaces.len() {
                    let cpu = self.cpu_of_process(process);
                    self.unmap_range(process as usize, start, len, cpu);
                }
            }
            Event::Mprotect {
                process,
                start,
                len,
                ..
            } => {
                // Permissions are not modelled, but changing them invalidates the cached
                // translations everywhere: the same shootdown as munmap, without unmapping.
                if (process as usize) < self.spaces.len() {
                    let cpu = self.cpu_of_process(process);
                    self.shootdown(process as usize, start, len, cpu);
                }
            }
            Event::Flush { core, what } => {
                let cpu = core.0 as usize % self.cpus.len();
                if what & flush::TLB != 0 {
                    crate::os::switch::flush_core(self, cpu, false);
                }
                if what & flush::CACHES != 0 {
                    let c = self.cpus[cpu].core;
                    let mut caches: Vec<usize> = self.cores[c]
                        .icache
                        .iter()
                        .chain(&self.cores[c].dcache)
                        .map(|r| r.cache)
                        .collect();
                    caches.sort_unstable();
                    caches.dedup();
                    for i in caches {
                        let cost = self.caches[i].flush();
                        self.os_stats.cache_flushes += 1;
                        self.os_stats.cache_flush_cycles += cost;
                    }
                }
            }
            Event::TaskRelease { .. } => {}
            Event::JobStart { task, job } => {
                let st = self.thread_state(ThreadId(task))?;
                let now = self.cpus[st.cpu].clock;
                self.job_start(task, job, now)?;
            }
            Event::JobEnd { task, job } => self.job_end(task, job, None)?,
            Event::Region { .. } | Event::PhaseBegin { .. } | Event::PhaseEnd { .. } => {}
        }
        Ok(())
    }

    /// Invalidates a range's translations of `space` on every core (with IPIs), keeping the
    /// mappings.
    pub fn shootdown(&mut self, space: usize, start: VirtAddr, len: u64, cpu: usize) -> usize {
        let asid = self.spaces[space].asid;
        let end = start.0.saturating_add(len);
        let mut total = 0;
        for core in 0..self.cores.len() {
            let mut tlbs: Vec<usize> = self.cores[core]
                .itlb
                .iter()
                .chain(&self.cores[core].dtlb)
                .map(|&(t, _)| t)
                .collect();
            tlbs.sort_unstable();
            tlbs.dedup();
            let mut n = 0;
            let mut va = start.align_down(PageSize::Size4K).0;
            while va < end {
                for &t in &tlbs {
                    n += self.tlbs[t].invalidate_va(VirtAddr(va), Some(asid));
                }
                va += 4096;
            }
            self.core_os[core].invalidations += n as u64;
            total += n;
        }
        self.os_stats.shootdowns += 1;
        let ipi = self.options.os.ipi_cycles;
        for c in 0..self.cpus.len() {
            if c != cpu % self.cpus.len() {
                self.os_stats.ipis += 1;
                self.charge(c, ipi);
            }
        }
        total
    }

    /// Runs a record source to the end (or `max_references`).
    ///
    /// With one hardware thread, records are simulated in trace order. With several, the engine
    /// reads ahead a bounded window of records (at most `LOOKAHEAD`), queues each access on the
    /// hardware thread its software thread runs on, and always advances the hardware thread with
    /// the smallest clock that has work queued; so within the window, contention happens in
    /// simulated-time order, and memory stays bounded for traces of any length. Events take
    /// effect in trace order: the queues are drained before an event is applied.
    pub fn run(&mut self, source: &mut dyn RecordSource) -> Result<(), SimError> {
        self.run_batches(&mut Filled {
            source,
            buf: Vec::with_capacity(BATCH),
        })
    }

    /// `run` on records already in memory, read in place (no copy into a batch buffer).
    pub fn run_slice(&mut self, records: &[Record]) -> Result<(), SimError> {
        // A slice past 2 MiB (the host's L2, where the records of a small one stay after
        // whoever wrote them) is read from memory: hinted ahead. A small one would pay for
        // hints it does not need (measured with the hints on in every run: sequential
        // TLB-only from 16K-record slices, 465 → 428 M refs/s).
        self.records_in_memory = records.len() > SLICE_FROM_MEMORY;
        let done = self.run_batches(&mut Slices { records, pos: 0 });
        self.records_in_memory = false;
        done
    }

    fn run_batches(&mut self, batches: &mut impl Batches) -> Result<(), SimError> {
        const LOOKAHEAD: usize = 1 << 16;
        // While only one hardware thread has had work (a single-threaded trace), there is nothing
        // to interleave: simulate in trace order without queueing.
        let single = self.cpus.len() == 1;
        let mut first_cpu: Option<usize> = None;
        let mut multi = false;
        let mut exhausted = false;
        let limit = if self.options.max_references == 0 {
            u64::MAX
        } else {
            self.options.max_references
        };
        let mut tl = Timeline::new(self.cpus.len(), self.independent_cpus());
        while self.references < limit {
            if !exhausted && tl.queued < LOOKAHEAD / 2 {
                let buf = batches.next()?;
                if buf.is_empty() {
                    exhausted = true;
                }
                let mut i = 0;
                if !multi && tl.queued == 0 {
                    i = self.run_direct(buf, single, &mut first_cpu, limit)?;
                    if self.references >= limit {
                        return Ok(());
                    }
                    // Stopped early: a second hardware thread has work from here on.
                    multi = i < buf.len();
                }
                let prefetch_records = self.records_in_memory;
                for (n, r) in buf.iter().enumerate().skip(i) {
                    if prefetch_records {
                        hint_record(buf, n);
                    }
                    match *r {
                        Record::Access(a) => {
                            let cpu = self.cpu_of(a.thread)?;
                            tl.queues[cpu].push(*r, a.thread);
                            tl.queued += 1;
                        }
                        Record::Event(e) => {
                            if tl.queued > 0 {
                                self.drain(&mut tl, limit)?;
                            }
                            // Nothing after the limit's reference runs, events included (as
                            // `run_direct` stops there).
                            if self.references >= limit {
                                return Ok(());
                            }
                            self.event(e)?;
                        }
                    }
                }
                tl.try_apart = true;
                continue;
            }
            if tl.queued == 0 {
                return Ok(());
            }
            if std::mem::take(&mut tl.try_apart) && self.run_apart(&mut tl, limit)? {
                continue;
            }
            self.timeline_step(&mut tl)?;
        }
        Ok(())
    }

    /// Runs the next access of the timeline (`next_on_timeline`); false when none is queued.
    fn timeline_step(&mut self, tl: &mut Timeline) -> Result<bool, SimError> {
        let Some(cpu) = self.next_on_timeline(&tl.queues) else {
            return Ok(false);
        };
        let Some(Record::Access(a)) = tl.queues[cpu].pop_front() else {
            unreachable!("the queues hold accesses")
        };
        tl.queued -= 1;
        self.timeline_access(cpu, a, tl.queues[cpu].pending(), &mut tl.walking)?;
        Ok(true)
    }

    /// Whether, in this run, no hardware thread's accesses can change what another's find,
    /// so that the timeline may run each hardware thread's queue on its own
    /// (`run_apart`): no TLB level is on two hardware threads' paths (no SMT siblings, no
    /// level shared by cores; the page-walk caches are per core), and either a TLB-only run
    /// (no page tables: a reference reads and changes only the TLB levels of its path) or one
    /// with walks but no caches and no nested translation, where a walk reads its address
    /// space's page table and changes its core's page-walk caches only. What such a walk may
    /// still share is the frame allocator, on a first touch: `run_apart` checks that none
    /// comes (`all_mapped`).
    fn independent_cpus(&self) -> bool {
        if self.options.walks && (self.options.caches || self.host.is_some()) {
            return false;
        }
        let mut owner: Vec<Option<usize>> = vec![None; self.tlbs.len()];
        for (cpu, c) in self.cpus.iter().enumerate() {
            let core = &self.cores[c.core];
            for &(t, _) in core.itlb.iter().chain(&core.dtlb) {
                if owner[t].is_some_and(|o| o != cpu) {
                    return false;
                }
                owner[t] = Some(cpu);
            }
        }
        true
    }

    /// Runs every queued access, each hardware thread's queue on its own through
    /// `run_direct` (the memo lane and the fast lane, as for one thread), when the hardware
    /// threads are independent (`Timeline::independent`), every queued access is of the
    /// thread its hardware thread runs now or of one whose switch is independent too
    /// (`switch_apart`: not a new ASID, whose number would depend on the order, nor a
    /// switch hook), and the reference limit, if any, cannot fall among them; returns
    /// whether it did. Exact: each hardware
    /// thread's references, in their order, meet the same TLB state as on the interleaved
    /// timeline, its clock is the sum of their costs either way, and nothing else is shared.
    /// Two threads' random streams over 1 GiB each on zen3's two cores, TLB-only: 5.7-6.6 →
    /// 35-38 M refs/s (`profile_run`, three interleaved runs, 2026-11-24).
    /// `tests/reference_parity.rs` checks it against the timeline spelled out access by
    /// access.
    fn run_apart(&mut self, tl: &mut Timeline, limit: u64) -> Result<bool, SimError> {
        // A reference limit that may fall among the queued accesses cuts them off where the
        // interleaving puts it, so those go access by access; one that cannot (an access is at
        // most two references, one per page it touches) leaves them all to run.
        if !tl.independent || self.references.saturating_add(2 * tl.queued as u64) > limit {
            return Ok(false);
        }
        let policy = self.switch_policy();
        for (cpu, q) in tl.queues.iter().enumerate() {
            let current = self.current[cpu];
            // Accesses all of one thread need one look, not one each, unless walks must find
            // each page mapped.
            if let Sole::One(t) = q.sole() {
                if Some(t) != current && !self.switch_apart(policy, t) {
                    return Ok(false);
                }
                if !self.options.walks {
                    continue;
                }
            }
            for r in q.pending() {
                let Record::Access(a) = r else {
                    return Ok(false);
                };
                if Some(a.thread) != current && !self.switch_apart(policy, a.thread) {
                    return Ok(false);
                }
                if self.options.walks && !self.all_mapped(a) {
                    return Ok(false);
                }
            }
        }
        for cpu in 0..tl.queues.len() {
            let records = tl.queues[cpu].pending();
            let taken = self.run_direct(records, false, &mut Some(cpu), u64::MAX)?;
            // (`run_direct` takes all of them: every one is an access of `cpu`.)
            for r in &records[taken..] {
                if let Record::Access(a) = *r {
                    self.access(a)?;
                }
            }
            tl.queues[cpu].clear();
        }
        tl.queued = 0;
        Ok(true)
    }

    /// Whether every page access `a` touches (two when it crosses a page) is mapped in its
    /// thread's address space: its walk then allocates nothing. A first touch takes frames
    /// from the allocator all address spaces share, so the frames each page gets, and what
    /// the TLB levels then hold, follow the timeline's order of first touches.
    fn all_mapped(&self, a: &Access) -> bool {
        let Some(Some(st)) = self.threads.get(a.thread.0 as usize) else {
            return false;
        };
        let pt = &self.spaces[st.space].pt;
        let va = a.vaddr.0;
        let last = va + (a.size.max(1) as u64 - 1);
        va < self.va_limit
            && last < self.va_limit
            && pt.translate(VirtAddr(va)).is_some()
            && (last >> 12 == va >> 12 || pt.translate(VirtAddr(last)).is_some())
    }

    /// Whether a switch to `thread` under `policy` (the run's, `switch_policy`; on the
    /// thread's hardware thread, in a run whose hardware threads are independent) changes
    /// nothing but that hardware thread's own state, whenever it comes: under `flush_all` it
    /// flushes only that core's TLB levels and page-walk caches (private here; the caches of
    /// such a run hold nothing, so their flush costs its fixed part whatever the order) and
    /// charges that hardware thread; under `asid_tagged` when the thread's address space
    /// holds an ASID of the current generation (the allocator then keeps it and does nothing;
    /// a new ASID would be numbered in the timeline's order, a rollover flushes every core).
    /// A switch hook may do anything: no.
    fn switch_apart(&self, policy: SwitchPolicy, thread: ThreadId) -> bool {
        match policy {
            SwitchPolicy::FlushAll => true,
            SwitchPolicy::AsidTagged => match self.threads.get(thread.0 as usize) {
                Some(Some(st)) => self.space_generation[st.space] == self.asids.generation(),
                _ => false,
            },
            SwitchPolicy::Auto | SwitchPolicy::Hook => false,
        }
    }

    /// One access of the multi-core timeline, of hardware thread `cpu` (`queue`: its accesses
    /// after this one), through the general path: several hardware threads' accesses
    /// interleave one by one, and the fast lane's per-call cost made runs of first-level hits
    /// 1.6-2.5x slower than `access` (measured 2026-11-24; ARCHITECTURE.md). It is `access`
    /// with the hint-table hit inline too (`access_inline::<true>`): there such hits are the
    /// common case of streams with locality, and the call to `reference_past_memo` was a good
    /// part of their cost (two SMT siblings over 4 pages, full model: 730 → 666 instructions
    /// per reference).
    ///
    /// While the hardware thread's accesses keep walking (`walking`, per hardware thread; a
    /// TLB-only run has no walks to hint), the host is hinted to fetch what accesses further
    /// down its queue will walk and touch, as `run_direct` does in trace order: 1.0 → 1.5 M
    /// refs/s on two threads' random streams over 1 GiB each (zen3, full model). Hinting
    /// every access cost streams of first-level hits a third of their rate.
    fn timeline_access(
        &mut self,
        cpu: usize,
        a: Access,
        queue: &[Record],
        walking: &mut [bool],
    ) -> Result<(), SimError> {
        if !self.options.walks {
            self.access_inline::<true>(a)?;
            return Ok(());
        }
        if walking[cpu] {
            let access = |i: usize| match queue.get(i) {
                Some(Record::Access(a)) => Some(*a),
                _ => None,
            };
            self.prefetch_for(
                access(TIMELINE_PREFETCH_AHEAD - 1),
                access(TIMELINE_PREFETCH_AHEAD / 2 - 1),
            );
        }
        let walks = self.cpu_stats[cpu].walks;
        self.access_inline::<true>(a)?;
        walking[cpu] = self.cpu_stats[cpu].walks != walks;
        Ok(())
    }

    /// The hardware thread the timeline advances next: of those with work queued, the one
    /// with the smallest clock (the lowest index among equals).
    fn next_on_timeline(&self, queues: &[CpuQueue]) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, q) in queues.iter().enumerate() {
            if !q.is_empty() && best.is_none_or(|b| self.cpus[i].clock < self.cpus[b].clock) {
                best = Some(i);
            }
        }
        best
    }

    /// Simulates `records` in trace order while every access runs on one hardware thread (with
    /// one, nothing needs interleaving). Returns how many records it consumed: all of them, or
    /// up to the first access of a second hardware thread, or up to the reference limit.
    fn run_direct(
        &mut self,
        records: &[Record],
        single: bool,
        first_cpu: &mut Option<usize>,
        limit: u64,
    ) -> Result<usize, SimError> {
        // Runs of references that hit their path's memos go through the memo lane (lane.rs);
        // the lane is rebuilt after every record that took the general path, which may have
        // changed a memo.
        //
        // Streams that rarely hit a memo (random, strided, pointer chases) would pay for a lane
        // build on every reference, so after a failed try the next `skip` accesses go straight
        // to the general path, `skip` doubling with each consecutive failure up to
        // LANE_MAX_BACKOFF and resetting on a success. The lane only ever changes speed, never
        // a result (tests/reference_parity.rs compares runs with access-by-access).
        //
        // What the memo lane does not take goes to the fast lane (fast_lane.rs), which takes any
        // reference of its thread, hit or miss, and hands back after a run of first-level hits
        // for the memo lane to try; what neither takes, to the general path.
        //
        // The memo lane pays for every page new to it (`Tlb::peek`, and a let-go once its
        // eight pages per path are taken): a stream of first-level hits over more pages than
        // it holds, in no order it follows (a random walk over 12..60 pages), made it 3x
        // slower than the fast lane (zen3, TLB-only: 22-44 against 70-79 M refs/s). A memo-lane
        // run of at least `MEMO_JUDGED` references that met a new page more often than one
        // time in `MEMO_PAGES_PER_NEW` is `poor`: the fast lane then takes the next stretch and
        // hands back only after `hand_back` first-level hits in a row, which grows fourfold
        // (from `LONG_HAND_BACK_MIN` up to `LONG_HAND_BACK_MAX`) while the memo lane's tries
        // between stretches stay poor, and drops back to `HAND_BACK` after one that is not.
        // (A Lackey capture of `ls -lR` meets a new page about one time in 12.)
        //
        // A memo-lane run shorter than `MEMO_SHORT` references counts as a failed try, not a
        // success: a program fetching on one code page between data references that miss the
        // first level (a large random footprint) gives the memo lane one fetch at a time, and
        // the lane was built twice per data reference and the fast lane never tried
        // (ARCHITECTURE.md, "Fetches in the walking pair loop").
        const LANE_MAX_BACKOFF: u32 = 64;
        const MEMO_SHORT: usize = 4;
        const MEMO_JUDGED: usize = 64;
        const MEMO_PAGES_PER_NEW: usize = 8;
        const LONG_HAND_BACK_MIN: u32 = 1024;
        const LONG_HAND_BACK_MAX: u32 = 1 << 16;
        let mut fast: Option<FastLane> = None;
        let mut lane: Option<Lane> = None;
        let mut lane_stale = true;
        let mut backoff = 0u32;
        let mut skip = 0u32;
        let mut hand_back = HAND_BACK;
        let mut i = 0;
        while i < records.len() {
            if self.records_in_memory {
                hint_record(records, i);
            }
            let r = records[i];
            if let Record::Access(a) = r {
                if skip > 0 {
                    skip -= 1;
                } else {
                    if lane_stale || lane.as_ref().is_some_and(|l| l.thread != a.thread) {
                        lane = Lane::build(self, a.thread);
                        lane_stale = false;
                    }
                    let (mut took, mut new_pages) = (0, 0);
                    if let Some(l) = &mut lane {
                        if !single && *first_cpu.get_or_insert(l.cpu) != l.cpu {
                            return Ok(i);
                        }
                        // Each lane record is one reference: stop at the limit.
                        let budget = (limit - self.references).min((records.len() - i) as u64);
                        took = l.run(self, &records[i..i + budget as usize]);
                        new_pages = l.new_pages;
                    }
                    if took > 0 {
                        if took < MEMO_SHORT {
                            // A failed try, as below.
                            backoff = (backoff * 2).clamp(1, LANE_MAX_BACKOFF);
                            skip = backoff - 1;
                        } else {
                            backoff = 0;
                        }
                        i += took;
                        if self.references >= limit {
                            return Ok(i);
                        }
                        if took >= MEMO_JUDGED {
                            if new_pages * MEMO_PAGES_PER_NEW > took {
                                // Poor: the fast lane takes the next stretch, a longer one.
                                hand_back =
                                    (hand_back * 4).clamp(LONG_HAND_BACK_MIN, LONG_HAND_BACK_MAX);
                                skip = 1;
                            } else {
                                hand_back = HAND_BACK;
                            }
                        }
                        continue;
                    }
                    backoff = (backoff * 2).clamp(1, LANE_MAX_BACKOFF);
                    skip = backoff - 1;
                }
                // With walks, only once the memo lane keeps failing (a stream that misses the
                // first level): on traces that mostly hit it, short stretches of the fast lane
                // between memo-lane runs cost more than the general path (measured: +12% on a
                // Lackey capture of `ls`, full model).
                let fast_worth_it =
                    !self.options.walks || backoff == LANE_MAX_BACKOFF || hand_back > HAND_BACK;
                if fast_worth_it && fast.as_ref().is_none_or(|l| l.thread != a.thread) {
                    fast = FastLane::build(self, a.thread);
                }
                if let (true, Some(l)) = (fast_worth_it, &fast) {
                    if !single && *first_cpu.get_or_insert(l.cpu) != l.cpu {
                        return Ok(i);
                    }
                    // Each lane record is one reference: stop at the limit.
                    let budget = (limit - self.references).min((records.len() - i) as u64);
                    let (took, fast_stale) =
                        l.run(self, &records[i..i + budget as usize], hand_back)?;
                    if took > 0 {
                        // It filled and evicted: the memo lane's pages may be gone.
                        lane_stale = true;
                        i += took;
                        if self.references >= limit {
                            return Ok(i);
                        }
                        if fast_stale {
                            fast = None;
                        }
                        continue;
                    }
                }
            }
            // An access of the memo lane's thread that misses neither path's first TLB level
            // fills, evicts and invalidates nothing in any level (a fill follows a miss in
            // every level above it): the lanes' pages and what the fast lane relies on stay
            // as they were, and only the cache line memos the memo lane copied may move.
            // Anything else through the general path may change them (fills, page sizes,
            // locks): both lanes are built again. (Measured on a Lackey capture of `ls -lR`,
            // whose page-crossing accesses take the general path: 3,000 lane builds of
            // ~5,000 host instructions each, mostly finding the pages again.)
            let misses_before = match (&r, &lane) {
                (Record::Access(a), Some(l)) if a.thread == l.thread => {
                    Some((l.cpu, self.first_level_misses(l.cpu)))
                }
                _ => None,
            };
            self.prefetch_ahead(records, i, PREFETCH_AHEAD);
            if !self.direct_record(r, single, first_cpu)? {
                return Ok(i);
            }
            match (misses_before, &mut lane) {
                (Some((cpu, before)), Some(l)) if self.first_level_misses(cpu) == before => {
                    l.keep_after_general_access(self);
                }
                _ => {
                    lane_stale = true;
                    fast = None;
                }
            }
            i += 1;
            if self.references >= limit {
                return Ok(i);
            }
        }
        Ok(records.len())
    }

    /// The misses so far of hardware thread `cpu`'s first TLB levels (both paths'), as counted
    /// in its statistics.
    fn first_level_misses(&self, cpu: usize) -> u64 {
        let stats = &self.cpu_stats[cpu].tlb;
        self.cpus[cpu]
            .first_tlb
            .iter()
            .flatten()
            .map(|&(_, stat)| stats[stat].misses)
            .sum()
    }

    /// One record of `run_direct` through the general path; false (nothing done) when it is
    /// an access of a second hardware thread.
    fn direct_record(
        &mut self,
        r: Record,
        single: bool,
        first_cpu: &mut Option<usize>,
    ) -> Result<bool, SimError> {
        match r {
            Record::Access(a) => {
                if !single {
                    let cpu = self.cpu_of(a.thread)?;
                    if *first_cpu.get_or_insert(cpu) != cpu {
                        return Ok(false);
                    }
                }
                self.access(a)?;
            }
            Record::Event(e) => self.event(e)?,
        }
        Ok(true)
    }

    /// Host prefetch hints for the record `ahead` records after `records[i]` (its walk's last
    /// entry) and the one `ahead / 2` after it (the cache sets it will touch): a record about to
    /// take a path that may walk does this first, since random footprints are host-memory
    /// bound. Changes nothing simulated.
    #[inline]
    pub(crate) fn prefetch_ahead(&mut self, records: &[Record], i: usize, ahead: usize) {
        let access = |r: Option<&Record>| match r {
            Some(Record::Access(a)) => Some(*a),
            _ => None,
        };
        self.prefetch_for(
            access(records.get(i + ahead)),
            access(records.get(i + ahead / 2)),
        );
    }

    /// `prefetch_ahead`'s hints: the walk of access `far`, the cache sets of access `near`.
    #[inline]
    fn prefetch_for(&mut self, far: Option<Access>, near: Option<Access>) {
        if !self.options.walks {
            return;
        }
        // A strided stream (`strided_skip`) is hinted nothing: neither its cache sets nor its
        // page-table entries, which its walks read in order, a pattern the host's own
        // prefetchers follow.
        let cache_hints = self.cache_hints();
        if let Some(near) = &near {
            if cache_hints && self.strided_skip(near.vaddr.0) {
                return;
            }
        }
        if let Some(far) = far {
            if let Some(Some(st)) = self.threads.get(far.thread.0 as usize) {
                self.prefetch_entry_of(st.space, far.vaddr);
            }
        }
        if let Some(near) = near.filter(|_| cache_hints) {
            self.prefetch_cache_sets(&near);
        }
    }

    /// Host prefetch hint for the last-level page-table entry of `va` in address space `space`
    /// (through `leaf_tables`). Only for a table that outgrows the host's caches: with a
    /// smaller one, the lookup alone costs more than the near record's own (measured: +3% on
    /// a strided stream whose records share their last-level table).
    #[inline(always)]
    fn prefetch_entry_of(&mut self, space: usize, va: VirtAddr) {
        let pt = &self.spaces[space].pt;
        if pt.worth_prefetching() {
            if let Some(node) = Self::leaf_table(&mut self.leaf_tables, pt, space, va) {
                pt.prefetch_entry(node, va);
            }
        }
    }

    /// Whether `prefetch_cache_sets` hints anything: with caches whose state outgrows the
    /// host's, and a page table read directly (not under virtualization).
    #[inline]
    fn cache_hints(&self) -> bool {
        self.options.caches && self.host.is_none() && self.big_caches
    }

    /// The last-level table on the path of `va` in `pt`, the page table of address space
    /// `space` (through the memo `leaf_tables`, filling it), or None if the table pointers end
    /// above that level. The fields, not `self`: the callers borrow the page table once.
    #[inline(always)]
    fn leaf_table(
        leaf_tables: &mut [LeafTableMemo; LEAF_TABLES],
        pt: &PageTable,
        space: usize,
        va: VirtAddr,
    ) -> Option<u32> {
        let region = va.0 >> pt.last_table_shift();
        let m = &mut leaf_tables[(region ^ space as u64) as usize % LEAF_TABLES];
        if m.space == space && m.region == region {
            return Some(m.node);
        }
        let node = pt.last_table(va)?;
        *m = LeafTableMemo {
            space,
            region,
            node,
        };
        Some(node)
    }

    /// Host prefetch hints for the simulated cache sets a coming access will touch: its leaf
    /// page-table entry's (through the walker's caches) and its data's, in cache levels whose
    /// state outgrows the host's caches. The run loop calls it for a record some way ahead,
    /// after `prefetch_ahead` has hinted the entry it reads here, and only with
    /// `cache_hints`. Reads only: nothing simulated changes.
    fn prefetch_cache_sets(&mut self, a: &Access) {
        let Some(Some(st)) = self.threads.get(a.thread.0 as usize) else {
            return;
        };
        let (space, core) = (st.space, self.cpus[st.cpu].core);
        self.prefetch_sets_of(space, core, a.kind, a.vaddr);
    }

    /// `prefetch_cache_sets` of an access of `kind` to `va` in address space `space` on core
    /// `core`.
    #[inline(always)]
    fn prefetch_sets_of(&mut self, space: usize, core: usize, kind: AccessKind, va: VirtAddr) {
        let pt = &self.spaces[space].pt;
        let last = match Self::leaf_table(&mut self.leaf_tables, pt, space, va) {
            Some(node) => pt.last_level_entry(node, va),
            // A page mapped above the last level (or no page): the whole descent.
            None => pt.last_entry(va, 0, 0),
        };
        let Some((pfn, size)) = last.leaf else {
            return;
        };
        let pte = last.entry.0;
        let pa = (pfn.0 << 12) + (va.0 & (size.bytes() - 1));
        if self.strides_on(1, pa) {
            self.hint_skips = Self::HINT_SKIPS;
        }
        let core = &self.cores[core];
        Self::hint_sets(&self.caches, &core.big_wcache, pte, pte);
        if self.options.data_accesses {
            let caches = if kind.is_instr() {
                &core.big_icache
            } else {
                &core.big_dcache
            };
            Self::hint_sets(&self.caches, caches, pa, va.0);
        }
    }

    /// What `prefetch_ahead` looks up per record, looked up once for a fast lane's thread
    /// (`prefetch_lane`).
    pub(crate) fn lane_hints(&self, thread: ThreadId, st: ThreadState) -> LaneHints {
        LaneHints {
            thread,
            space: st.space,
            core: self.cpus[st.cpu].core,
            entries: self.options.walks,
            sets: self.options.walks && self.cache_hints(),
        }
    }

    /// `prefetch_ahead` for a fast lane's thread, `PREFETCH_AHEAD` records ahead: the same
    /// hints, for the records of that thread, with what `prefetch_ahead` looks up per record
    /// (the thread's address space and core, the run's switches) taken from `h`. Measured
    /// (zen3 full model, random:pages=262144): 1,886 → 1,854 instructions per reference
    /// (callgrind, 1M), 6.0 → 6.2 M refs/s (interleaved medians of 5, 4M).
    #[inline(always)]
    pub(crate) fn prefetch_lane(&mut self, h: &LaneHints, records: &[Record], i: usize) {
        let ours = |r: Option<&Record>| match r {
            Some(Record::Access(a)) if a.thread == h.thread => Some((a.kind, a.vaddr)),
            _ => None,
        };
        let near = ours(records.get(i + PREFETCH_AHEAD / 2));
        if let Some((_, va)) = near {
            if h.sets && self.strided_skip(va.0) {
                return;
            }
        }
        if let Some((_, va)) = ours(records.get(i + PREFETCH_AHEAD)).filter(|_| h.entries) {
            self.prefetch_entry_of(h.space, va);
        }
        if let Some((kind, va)) = near.filter(|_| h.sets) {
            self.prefetch_sets_of(h.space, h.core, kind, va);
        }
    }

    /// Records `strided_skip` passes over before it looks at a strided stream again.
    const HINT_SKIPS: u32 = 64;

    /// Whether the record of virtual address `va`, `prefetch_ahead`'s near record, is to be
    /// hinted nothing. A stream whose virtual and physical addresses both moved by constant
    /// steps last time (`prefetch_cache_sets` sets `hint_skips`) is hinted nothing while its
    /// virtual addresses keep their step, for up to HINT_SKIPS records; then it is looked at
    /// again, in case its physical addresses stopped following (frames are not allocated in
    /// virtual order in general). The cache sets of such a stream are regular too, few or in
    /// a pattern the host's own prefetchers follow, and hints only cost instructions
    /// (measured: a strided stream, zen3 full model, 8% faster skipping the cache-set hints,
    /// and 5% more skipping the page-table entries' as well, 12.5 → 13.2 M refs/s
    /// (interleaved medians of 5, 2026-11-25);
    /// random and pointer-chase streams, whose hints make them 40-70% faster, pay ~20
    /// instructions per reference for the two `strides_on`).
    #[inline(always)]
    fn strided_skip(&mut self, va: u64) -> bool {
        if self.strides_on(0, va) && self.hint_skips > 0 {
            self.hint_skips -= 1;
            return true;
        }
        self.hint_skips = 0;
        false
    }

    /// Whether the addresses of kind `k` (`hint_strides`: 0 virtual, 1 physical) move by a
    /// constant step: the 64-byte line of `addr` is as far from the last one as that was from
    /// the one before.
    #[inline(always)]
    fn strides_on(&mut self, k: usize, addr: u64) -> bool {
        let line = addr >> 6;
        let (last, step) = &mut self.hint_strides[k];
        let d = line.wrapping_sub(*last);
        let same = d == *step;
        (*last, *step) = (line, d);
        same
    }

    /// `Cache::prefetch` of physical address `pa` (virtual address `va` in a virtually indexed
    /// cache) in each of `which`. Inlined: as a closure it was a call with its own prologue
    /// per use (measured: 16 instructions per reference of a random stream).
    #[inline(always)]
    fn hint_sets(caches: &[Cache], which: &[usize], pa: u64, va: u64) {
        for &c in which {
            let c = &caches[c];
            c.prefetch(if c.is_virtual() { va } else { pa });
        }
    }

    /// Runs every access of the timeline (before an event), up to the reference limit.
    fn drain(&mut self, tl: &mut Timeline, limit: u64) -> Result<(), SimError> {
        if !self.run_apart(tl, limit)? {
            while self.references < limit && self.timeline_step(tl)? {}
        }
        // (Past the limit, what is left is never run.)
        tl.queues.iter_mut().for_each(CpuQueue::clear);
        tl.queued = 0;
        Ok(())
    }

    /// Makes `to` the software thread hardware thread `cpu` runs, folding what the outgoing
    /// thread did there (the change of `cpu_stats` since it was switched in) into its counters.
    /// Every change of `current` goes through here, so per-thread counters cost the hot path
    /// nothing.
    pub(crate) fn set_current(&mut self, cpu: usize, to: Option<ThreadId>) {
        if let Some(from) = self.current[cpu] {
            if let Some(Some(st)) = self.threads.get(from.0 as usize) {
                let unit = &mut self.thread_stats[st.stat].1;
                unit.add(&self.cpu_stats[cpu]);
                unit.sub(&self.cpu_snap[cpu]);
            }
        }
        self.cpu_snap[cpu].clone_from(&self.cpu_stats[cpu]);
        self.current[cpu] = to;
    }

    /// A software thread's counters including what it has done since it was last switched in.
    fn thread_stats_now(&self, thread: ThreadId, st: ThreadState) -> UnitStats {
        let mut unit = self.thread_stats[st.stat].1.clone();
        for cpu in 0..self.cpus.len() {
            if self.current[cpu] == Some(thread) {
                unit.add(&self.cpu_stats[cpu]);
                unit.sub(&self.cpu_snap[cpu]);
            }
        }
        unit
    }

    /// Per core: its hardware threads' references plus the OS work charged to it.
    fn core_stats(&self) -> Vec<UnitStats> {
        let mut cores = self.core_os.clone();
        for (cpu, c) in self.cpus.iter().enumerate() {
            cores[c.core].add(&self.cpu_stats[cpu]);
        }
        cores
    }

    /// The statistics so far.
    pub fn stats(&self) -> Stats {
        let cores = self.core_stats();
        let mut total = UnitStats::new(self.tlb_names.len(), self.cache_names.len());
        for c in &cores {
            total.add(c);
        }
        let mut sources = self.cache_names.clone();
        sources.push("memory".into());
        let threads: BTreeMap<u32, UnitStats> = self
            .threads
            .iter()
            .enumerate()
            .filter_map(|(t, st)| {
                st.map(|st| (t as u32, self.thread_stats_now(ThreadId(t as u32), st)))
            })
            .collect();
        let mut processes: BTreeMap<u32, UnitStats> = BTreeMap::new();
        for (t, unit) in &threads {
            let space = self.threads[*t as usize].expect("listed thread").space as u32;
            processes
                .entry(space)
                .or_insert_with(|| UnitStats::new(self.tlb_names.len(), self.cache_names.len()))
                .add(unit);
        }
        Stats {
            machine: self.config.name.clone(),
            tlb_levels: self.tlb_names.clone(),
            cache_levels: self.cache_names.clone(),
            sources,
            cores,
            threads,
            processes,
            total,
            os: self.os_stats.clone(),
            jobs: self.jobs.clone(),
            cycles: self.cpus.iter().map(|c| c.clock).max().unwrap_or(0),
        }
    }

    /// The TLB instances of a core's data path, first level first (for techniques and tests).
    pub fn data_tlbs_of(&self, core: usize) -> Vec<usize> {
        self.cores[core].dtlb.iter().map(|&(t, _)| t).collect()
    }

    pub fn instr_tlbs_of(&self, core: usize) -> Vec<usize> {
        self.cores[core].itlb.iter().map(|&(t, _)| t).collect()
    }

    pub fn clock(&self, cpu: usize) -> u64 {
        self.cpus[cpu].clock
    }

    pub fn page_table_format(&self) -> PageTableFormat {
        self.config.page_table.format
    }
}

impl System {
    /// The hardware thread `thread` runs on (binding unknown threads as `access` would).
    pub fn thread_cpu(&mut self, thread: ThreadId) -> Result<usize, SimError> {
        Ok(self.thread_state(thread)?.cpu)
    }

    /// Places `thread` on hardware thread `cpu` without the migration policy (first placement).
    pub fn bind_thread_cpu(&mut self, thread: ThreadId, cpu: usize) -> Result<(), SimError> {
        let st = self.thread_state(thread)?;
        self.threads[thread.0 as usize] = Some(ThreadState {
            cpu: cpu % self.cpus.len(),
            ..st
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{CpuQueue, Sole};
    use std::collections::VecDeque;
    use tlblab_trace::{Access, Record};
    use tlblab_types::{AccessKind, SplitMix64, ThreadId, VirtAddr};

    fn access(thread: u32, n: u64) -> Record {
        Record::Access(Access::new(
            ThreadId(thread),
            AccessKind::Load,
            VirtAddr(n * 8),
            8,
        ))
    }

    /// Given a queue fed and drained in random bursts (some long enough to make it drop the
    /// part already taken), when compared with a `VecDeque` after every step, then it holds
    /// the same accesses in the same order, and says whose they are as the model does.
    #[test]
    fn given_random_bursts_of_pushes_and_pops_then_the_queue_matches_a_deque() {
        let mut rng = SplitMix64::derive(7, "cpu-queue");
        let mut q = CpuQueue::default();
        let mut model: VecDeque<Record> = VecDeque::new();
        let mut n = 0u64;
        for _ in 0..400 {
            // Mostly one thread, sometimes a second: both `Sole::One` and `Sole::Mixed` occur.
            let burst = rng.below(12_000) as usize;
            if rng.below(2) == 0 {
                for _ in 0..burst {
                    let thread = (rng.below(50) == 0) as u32;
                    q.push(access(thread, n), ThreadId(thread));
                    model.push_back(access(thread, n));
                    n += 1;
                }
            } else {
                for _ in 0..burst {
                    assert_eq!(q.pop_front(), model.pop_front());
                }
            }
            assert_eq!(
                q.pending(),
                model.iter().copied().collect::<Vec<_>>().as_slice()
            );
            assert_eq!(q.is_empty(), model.is_empty());
            // The taken part is dropped once it is most of the vector.
            assert!(q.records.len() <= 2 * model.len() + 4097);
            let threads: Vec<u32> = model
                .iter()
                .map(|r| match r {
                    Record::Access(a) => a.thread.0,
                    Record::Event(_) => unreachable!(),
                })
                .collect();
            let expected = match threads.first() {
                None => Sole::Empty,
                Some(&t) if threads.iter().all(|&u| u == t) => Sole::One(ThreadId(t)),
                Some(_) => Sole::Mixed,
            };
            // `sole` may say `Mixed` of accesses left from a mixed past (conservative), never
            // `One` of a mix.
            match (q.sole(), expected) {
                (Sole::Mixed, Sole::One(_)) => {}
                (got, want) => assert_eq!(got, want),
            }
            if rng.below(20) == 0 {
                q.clear();
                model.clear();
                assert_eq!(q.sole(), Sole::Empty);
            }
        }
    }
}
