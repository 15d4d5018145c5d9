//! The engine: cores with their TLB paths, walkers and cache paths, on one timeline.
//!
//! What one access costs (ARCHITECTURE.md "The engine in one paragraph"):
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

mod access;
mod apart;
mod checkpoint;
mod direct;
mod domains;
mod dram;
mod events;
mod fast_lane;
mod hints;
mod kernel;
mod lane;
mod lock;
mod miss_log;
mod mlp;
mod report;
mod sample;
mod switch;
mod technique;
mod threads;
mod timeline;
mod walk;

pub use crate::options::RunOptions;
pub use crate::stats::{MissLog, MissRecord, KERNEL_THREAD};
pub use checkpoint::{SystemState, SystemStateRef};
pub use domains::{dacr_allows, DomainFault, DomainState, SECTIONS};
pub use hints::hint_record;
pub use technique::{Declaration, Technique};
pub use timeline::{PausedLoop, ReadAhead, BATCH};

use access::CacheTally;
use hints::{LaneHints, LeafTableMemo, LEAF_TABLES, PREFETCH_AHEAD};

use crate::cache::{Cache, CacheKind, Outcome as CacheOutcome};
use crate::machine::{MachineConfig, TimingModel};
use crate::memory::{FrameAllocator, OutOfMemory};
use crate::os::{AsidAllocator, JobStats, OsStats, SwitchPolicy};
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

/// A process's address space.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct AddressSpace {
    pub id: u32,
    pub asid: Asid,
    pub vmid: Vmid,
    pub domain: Domain,
    pub pt: PageTable,
    /// Regions mapped with a page size other than the default, or backed by a shared object:
    /// (start, end, size, shared object, global: the kernel's, mapped with the nG bit clear).
    pub(crate) regions: Vec<(u64, u64, PageSize, Option<u32>, bool)>,
    pub(crate) default_size: PageSize,
}

impl AddressSpace {
    /// The page size and shared object (with the region start) that map `va`.
    fn mapping_for(&self, va: VirtAddr) -> (PageSize, Option<(u32, u64)>) {
        for &(s, e, size, object, _) in &self.regions {
            if va.0 >= s && va.0 < e {
                return (size, object.map(|o| (o, s)));
            }
        }
        (self.default_size, None)
    }

    /// Whether the region that maps `va` is global (the kernel's). Apart from `mapping_for`,
    /// which every first touch asks: only a machine with a global mapping
    /// (`System::any_global`) asks this.
    fn region_is_global(&self, va: VirtAddr) -> bool {
        for &(s, e, _, _, global) in &self.regions {
            if va.0 >= s && va.0 < e {
                return global;
            }
        }
        false
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
    /// Per path (`[data, instruction]`): the cycles a walk's refill of the levels above the
    /// last takes (`TlbConfig::refill_latency` of the last level; 0 for a path of one level)
    /// and the statistics index of the level above the last, whose data stall they are.
    /// Looked up once here, not per walk.
    pub(crate) walk_refill: [(u64, usize); 2],
}

impl Core {
    /// The TLB levels (tlb index, stat index) an access of `kind` looks up, in order.
    pub(crate) fn tlb_path(&self, kind: AccessKind) -> &[(usize, usize)] {
        if kind.is_instr() {
            &self.itlb
        } else {
            &self.dtlb
        }
    }

    /// The caches an access of `kind` goes through, first level first.
    #[inline(always)]
    pub(crate) fn cache_path(&self, kind: AccessKind) -> &[CacheRef] {
        if kind.is_instr() {
            &self.icache
        } else {
            &self.dcache
        }
    }
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
    /// The page-table level a walk starts at when this cache hits, whose table's node the
    /// cache holds: `level + 1` (the next table), or `level` under `PwcRestart::AtHitLevel`
    /// (the level's own table, whose entry the walk reads again).
    pub(crate) start: usize,
    /// ChampSim's rule (`PwcRestart::AtHitLevel`): a hit here refreshes the caches above it
    /// (`System::refresh_pwcs`).
    pub(crate) refresh_above: bool,
}

/// A hardware thread: a clock on the timeline, bound to a core.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub(crate) struct Cpu {
    pub(crate) core: usize,
    pub(crate) hw_thread: u8,
    pub(crate) clock: u64,
    /// The core's first TLB level for [data, instruction] references as (tlb, stat index), or
    /// None: a copy of `Core::dtlb[0]`/`itlb[0]` one pointer closer to the memo fast path.
    pub(crate) first_tlb: [Option<(usize, usize)>; 2],
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug)]
pub(crate) struct ThreadState {
    pub(crate) space: usize,
    pub(crate) cpu: usize,
    pub(crate) stat: usize,
}

#[derive(Serialize, Deserialize)]
pub(crate) struct Host {
    pub(crate) pt: PageTable,
    pub(crate) frames: FrameAllocator,
    pub(crate) page_size: PageSize,
    pub(crate) pwcs: Vec<Pwc>,
}

/// A core's write buffer (`WriteBufferConfig`) and the memory bus it drains over: when each
/// buffered store will have been written (oldest first) and when the bus is next free.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub(crate) struct WriteBufferState {
    pub(crate) drained_at: std::collections::VecDeque<u64>,
    pub(crate) bus_free: u64,
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
    /// What a page-table load served by memory costs (`WalkerConfig::memory_load_cycles`).
    pub(crate) walk_mem_latency: u64,
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
    /// Names of the regions phases refer to (`RecordSource::region_names`, set by `run`).
    pub(crate) region_names: Vec<String>,
    /// Phases begun and not yet ended: (region, occurrence, time, counters, OS counters then).
    pub(crate) open_phases: Vec<(u32, u32, u64, UnitStats, OsStats)>,
    pub(crate) phases: Vec<crate::stats::PhaseStats>,
    /// Phases begun so far per region: (region, count), for each phase's `occurrence`.
    pub(crate) phase_counts: Vec<(u32, u32)>,
    /// References of warm-up before the region of interest begins (`set_warmup`; 0: none, or
    /// begun). The run loop stops at this count as at a reference limit, then goes on.
    pub(crate) warmup: u64,
    /// The whole run's statistics when the region of interest began (`begin_roi`): `stats`
    /// reports the difference.
    pub(crate) roi_begin: Option<Box<Stats>>,
    /// A systematic sample's plan and measured units (`sample.rs`, `set_sample`): not part
    /// of a checkpoint (a sampled run is not saved).
    pub(crate) sample: Option<Box<sample::Sampler>>,
    /// The parameters the technique was selected with (`Stats::technique`).
    pub(crate) technique_params: BTreeMap<String, String>,
    /// The technique under test (`technique.rs`), if any.
    pub(crate) technique: Option<Box<dyn Technique>>,
    /// The lanes may serve this run: no technique, or one the parity tests cover, and no
    /// write buffer (whose stores' cost depends on the clock, which the lanes settle late).
    pub(crate) lanes_allowed: bool,
    /// Per core, its write buffer's state, when the machine has one (`timing.write_buffer`);
    /// empty otherwise, and `data_access` never looks at it.
    pub(crate) write_buffers: Vec<WriteBufferState>,
    /// A write buffer (`write_buffers`), DRAM writebacks (`DramConfig::writebacks`) or a
    /// prefetcher (`prefetching`): the general path's data accesses take `data_access_cold`.
    pub(crate) cold_data: bool,
    /// A cache level with a stride prefetcher (`CacheConfig::prefetch`): every load through
    /// a path whose first level has one trains it (`System::prefetch_after`), on the general
    /// path only (no lanes). `prefetchers` holds each cache instance's state (empty without).
    pub(crate) prefetching: bool,
    pub(crate) prefetchers: Vec<crate::cache::prefetch::StrideState>,
    /// DRAM channels or a prefetcher: walks take `load_walk_path_cold` (one flag for both).
    pub(crate) walk_cold: bool,
    /// Per hardware thread, its long misses in flight, when the machine has `timing.mlp`
    /// (`mlp.rs`); empty otherwise, and nothing looks at it.
    pub(crate) mlp: Vec<mlp::MlpState>,
    /// The reference under way's first cache's count before it (`timed_memory_before`), for
    /// `timed_memory_cycles` to tell a first-level hit (`MlpConfig::steady_state`); kept here,
    /// not in `reference_full`, whose fast code need not carry it.
    pub(crate) first_hits_before: u64,
    /// Per software thread (by its statistics index), whether its references are marked
    /// independent (`Event::Independent`); a thread past the end is not.
    pub(crate) independent: Vec<bool>,
    /// A thread has been marked independent on a machine with `timing.mlp`: from then on
    /// every reference takes the general path (`mlp.rs`). Not in a checkpoint: set again
    /// from `independent` (`restore_state`).
    pub(crate) mlp_marked: bool,
    /// The DRAM channels, when the machine has `timing.dram` (`dram.rs`).
    pub(crate) dram: Option<dram::DramState>,
    /// The machine has `timing.mlp` or `timing.dram`: `reference_full` hands each
    /// reference's cycles to `timed_memory_cycles`. One flag, so that a machine with neither
    /// tests one thing per reference.
    pub(crate) timed_memory: bool,
    /// A technique counts the uses of TLB entries (`System::track_tlb_use`): the general
    /// path's `reference_full` counts each access an entry translates.
    pub(crate) track_use: bool,
    /// Per-set miss attribution of one TLB level (`log_misses`, `miss_log.rs`): off (`None`)
    /// unless asked; a run that logs takes the general path throughout. Not part of a
    /// checkpoint.
    pub(crate) miss_log: Option<Box<miss_log::MissLogState>>,
    /// Some address space has mapped a global region (`map_shared` with `global`, the
    /// kernel's) or a kernel touch filled a global entry (`kernel_touch`): only then can a
    /// TLB entry be global, and only then do the fills look (`translation_is_global`).
    /// Never cleared; not in a checkpoint but set again from the regions and the TLBs'
    /// entries (`restore_state`). The miss log (`log_misses`) sets it too: its fills branch
    /// off behind this look.
    pub(crate) any_global: bool,
    /// The technique runs a companion (`Declaration::has_companion`): `timeline_step` lets it
    /// catch up before each access.
    pub(crate) companion: bool,
    /// The technique is at work (installing, or in a hook: `with_technique`): a reference made
    /// now is its own, not one of the records' (`MlpConfig::issue_instructions`).
    pub(crate) in_technique: bool,
    /// ARM domain checks (`domains.rs`), on only when a technique turns them on.
    pub(crate) domains: Option<Box<DomainState>>,
    pub(crate) jobs: Vec<JobStats>,
    /// Jobs started by trace events and not yet ended: (task, job) → stats snapshot at start.
    pub(crate) open_jobs: BTreeMap<(u32, u32), (JobStats, UnitStats)>,
    /// Frames of shared objects: (object, page offset, page size index) → frame.
    pub(crate) shared_frames: std::collections::HashMap<(u32, u64, usize), Pfn>,
    /// Where the run loop pauses for a checkpoint (`System::pause_at`): not part of the
    /// state, each run sets its own.
    pub(crate) pause: timeline::Pause,
    /// The run loop's own state where it paused (read-ahead queues and all), which the next
    /// `run` picks up: saved in a checkpoint (`checkpoint.rs`).
    pub(crate) paused: Option<timeline::PausedLoop>,
    /// Records taken from the run's sources so far (every batch, queued or run): where a
    /// restored run's source resumes.
    pub(crate) records_read: u64,
    /// The regions the records announced (`Event::Region`: region, start, length), in order:
    /// a technique installed later (at a checkpoint's restore) learns them
    /// (`install_technique`).
    pub(crate) regions: Vec<(u32, u64, u64)>,
    /// Records per batch and the timeline's read-ahead window (`timeline.rs`): fixed for a
    /// run; tests shrink them (`set_read_ahead`) so that short traces pause mid-window.
    pub(crate) read_ahead: timeline::ReadAhead,
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
                // One instance per group of `cores_per_instance` cores (0: one for all).
                let group = match cc.cores_per_instance {
                    0 => ncores,
                    n => n,
                };
                for core in 0..ncores {
                    if core % group == 0 {
                        let salt = ((core / group) as u64) << 20;
                        caches.push(Cache::new(cc.clone(), seed ^ (ci as u64) << 8 ^ salt));
                    }
                    cache_of[ci].push(caches.len() - 1);
                }
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
                let restart_at_hit =
                    config.walker.pwc_restart == crate::machine::PwcRestart::AtHitLevel;
                my_pwcs.push(PwcRef {
                    pwc: pwcs.len() - 1,
                    level: p.level,
                    shift: levels[p.level].shift,
                    start: p.level + usize::from(!restart_at_hit),
                    refresh_above: restart_at_hit,
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
            let wcache = if config.walker.uncached {
                Vec::new()
            } else {
                cpath(CacheKind::Data, config.walker.first_cache_level)
            };
            let (itlb, dtlb) = (tpath(TlbKind::Instr), tpath(TlbKind::Data));
            let refill = |path: &[(usize, usize)]| match path {
                [.., (_, above), (last, _)] => (tlbs[*last].config.refill_latency, *above),
                _ => (0, 0),
            };
            cores.push(Core {
                walk_refill: [refill(&dtlb), refill(&itlb)],
                itlb,
                dtlb,
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
                let guest = FrameAllocator::new(&v.guest_memory(&config.memory), seed ^ 0x6e657374);
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
        let buffered = config.timing.write_buffer.is_some();
        let mlp_config = config.timing.mlp;
        let dram_timed = config.timing.dram.is_some();
        let prefetching = caches.iter().any(|c| c.config.prefetch.is_some());
        let prefetch_slots = if prefetching { caches.len() } else { 0 };
        // `timing.mlp.issue_instructions` is charged on `reference_full` only, as the DRAM
        // channels are: every reference takes it from the start.
        let full_path = dram_timed || mlp_config.is_some_and(|m| m.issue_instructions != 0);
        // Writebacks, or row activations (which need each line's address): `load_writing_back`.
        let writebacks = config
            .timing
            .dram
            .is_some_and(|d| d.writebacks || d.ranks.is_some());
        let dram_state = config
            .timing
            .dram
            .map(|d| dram::DramState::new(&d, config.frequency_mhz));
        if full_path {
            // Every reference takes `reference_full`, which queues its lines (`dram.rs`) and
            // charges the instructions before it.
            for c in &mut cpus {
                c.first_tlb = [None, None];
            }
        }
        Ok(System {
            mem_latency: config.memory.latency,
            walk_mem_latency: config.walker.memory_load_cycles(config.memory.latency),
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
            region_names: Vec::new(),
            open_phases: Vec::new(),
            phases: Vec::new(),
            phase_counts: Vec::new(),
            warmup: 0,
            roi_begin: None,
            sample: None,
            technique_params: BTreeMap::new(),
            technique: None,
            // A write buffer is modelled on the general path only (and memory-level
            // parallelism too, from a trace's first `Independent` mark on: `mlp.rs`).
            // The DRAM channels on every reference's: `dram.rs`.
            lanes_allowed: Self::lanes_permitted(&options)
                && !buffered
                && !full_path
                && !prefetching,
            first_hits_before: 0,
            mlp: match &mlp_config {
                Some(m) => vec![mlp::MlpState::new(m); ncpus],
                None => Vec::new(),
            },
            independent: Vec::new(),
            mlp_marked: false,
            dram: dram_state,
            timed_memory: mlp_config.is_some() || full_path,
            cold_data: buffered || writebacks || prefetching,
            prefetching,
            prefetchers: vec![Default::default(); prefetch_slots],
            walk_cold: dram_timed || prefetching,
            write_buffers: if buffered {
                vec![WriteBufferState::default(); ncores]
            } else {
                Vec::new()
            },
            track_use: false,
            miss_log: None,
            any_global: false,
            companion: false,
            in_technique: false,
            domains: None,
            jobs: Vec::new(),
            open_jobs: BTreeMap::new(),
            shared_frames: std::collections::HashMap::new(),
            pause: timeline::Pause::default(),
            paused: None,
            records_read: 0,
            regions: Vec::new(),
            read_ahead: timeline::ReadAhead::default(),
        })
    }

    /// Whether the run options let the lanes run: not when stall cycles are counted (only the
    /// general path counts them) nor when page faults enter the kernel
    /// (`OsConfig::fault_kernel_pages`: the fault path fills TLB levels a lane may hold).
    pub(crate) fn lanes_permitted(options: &RunOptions) -> bool {
        !options.stall_cycles && options.os.fault_kernel_pages == 0
    }

    /// Charges `cycles` of OS work to hardware thread `cpu`.
    pub(crate) fn charge(&mut self, cpu: usize, cycles: u64) {
        self.cpus[cpu].clock += cycles;
        self.core_os[self.cpus[cpu].core].cycles += cycles;
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

    /// The machine's time: the largest hardware-thread clock.
    pub fn now(&self) -> u64 {
        self.cpus.iter().map(|c| c.clock).max().unwrap_or(0)
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
