//! The description of a simulated machine: cores, TLB levels, walker, caches, memory, timing.
//!
//! This is data (serde), validated with messages that name the offending field. Machine presets
//! in `presets/*.toml` deserialize into it (see tlblab-config for loading and the preset list).

use crate::cache::{CacheConfig, CacheKind, Indexing};
use crate::memory::MemoryConfig;
use crate::page_table::PageTableFormat;
use crate::tlb::{TlbConfig, TlbKind};
use crate::walker::PwcConfig;
use serde::{Deserialize, Serialize};
use tlblab_types::PageSize;

#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Number of cores (each with its private TLBs and caches).
    pub cores: usize,
    /// SMT hardware threads per core; siblings share the core's TLBs and caches.
    #[serde(default = "one")]
    pub threads_per_core: usize,
    /// Clock, to convert cycles to nanoseconds in reports.
    pub frequency_mhz: f64,
    pub page_table: PageTableConfig,
    #[serde(rename = "tlb")]
    pub tlbs: Vec<TlbConfig>,
    #[serde(default)]
    pub walker: WalkerConfig,
    #[serde(rename = "cache", default)]
    pub caches: Vec<CacheConfig>,
    pub memory: MemoryConfig,
    #[serde(default)]
    pub timing: TimingConfig,
    /// Present when the simulated software runs as a guest: walks become two-dimensional.
    #[serde(default)]
    pub virtualization: Option<VirtualizationConfig>,
    #[serde(default)]
    pub source: String,
    /// The technique under test in runs of this machine (`[technique]`, `tlblab techniques`);
    /// `--technique` / `technique=` override it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub technique: Option<TechniqueSpec>,
    /// Per-event energies and static powers (`[energy]`, docs/energy.md): read by the energy
    /// model after a run (`tlblab.energy`), never by the engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<crate::energy::EnergyConfig>,
}

fn one() -> usize {
    1
}

#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageTableConfig {
    pub format: PageTableFormat,
    /// The page size a first touch maps, unless a region or mmap event says otherwise.
    #[serde(default = "default_page_size")]
    pub page_size: PageSize,
}

fn default_page_size() -> PageSize {
    PageSize::Size4K
}

#[derive(Clone, PartialEq, Debug, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WalkerConfig {
    /// Fixed cycles a walk costs besides its memory references (walker start-up, fill).
    #[serde(default)]
    pub latency: u64,
    /// Which cache level (by `level` number) page-table loads enter the hierarchy at
    /// (1 = through the L1 data cache, 2 = straight to L2, as on some cores).
    #[serde(default = "one_u8")]
    pub first_cache_level: u8,
    /// Page-table loads bypass the caches and read memory directly (`first_cache_level` then
    /// plays no part). ARMv4/v5 walkers do: ARM Linux 2.4 cleans the data-cache line of every
    /// page-table entry it writes on the StrongARM (`cpu_sa1100_set_pte`, "clean D entry",
    /// arch/arm/mm/proc-sa110.S) because the SA-1100's walker does not look in the cache; ARMv6
    /// added the translation table base's cacheability bits.
    #[serde(default, skip_serializing_if = "is_false")]
    pub uncached: bool,
    /// Cycles one page-table load served by memory costs; 0 = `memory.latency` (a line fill).
    /// An uncached walker reads one word, not a line (seed 002 §2: "≈ 45 cycles" per TLB entry
    /// on the SA-1100, against ≈ 70 per cache line).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub memory_latency: u64,
    #[serde(default, rename = "pwc")]
    pub pwcs: Vec<PwcConfig>,
    /// Where a walk starts after a page-walk-cache hit (`PwcRestart`).
    #[serde(default, skip_serializing_if = "PwcRestart::is_below_hit")]
    pub pwc_restart: PwcRestart,
}

/// Where a walk starts after a hit in the page-walk cache of page-table level L.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PwcRestart {
    /// At level L+1: the cached entry of level L points at the next table, so the walk reads
    /// the entries below it (Intel's paging-structure caches, SDM Vol. 3A §4.10.3.2).
    #[default]
    BelowHit,
    /// At level L: the walk reads level L's entry again, then the ones below it, one
    /// reference more per hit. ChampSim's `PageTableWalker` does this: `handle_read` restarts
    /// at the level stored with the PSCL entry that hit and reads that level's entry
    /// (`src/ptw.cc`, commit 2ff2501; docs/champsim.md). Its lookup also refreshes every
    /// PSCL that hits, not only the deepest (`src/ptw.cc:76-79`), and so does this option.
    AtHitLevel,
}

impl PwcRestart {
    fn is_below_hit(&self) -> bool {
        *self == PwcRestart::BelowHit
    }
}

fn one_u8() -> u8 {
    1
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl WalkerConfig {
    /// What one page-table load served by memory costs on a machine whose memory answers a
    /// line fill in `memory_latency` cycles.
    pub fn memory_load_cycles(&self, memory_latency: u64) -> u64 {
        if self.memory_latency > 0 {
            self.memory_latency
        } else {
            memory_latency
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TimingModel {
    /// Every latency adds up, in order (the seeds' in-order cores).
    #[default]
    InOrder,
    /// A first-level TLB hit overlaps with the L1 cache access (virtually indexed, physically
    /// tagged L1s look up both at once); walks and misses still serialize. Documented in
    /// ARCHITECTURE.md "Timing".
    Overlap,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TimingConfig {
    #[serde(default)]
    pub model: TimingModel,
    /// A write buffer between each core's first data cache and memory (`[timing.write_buffer]`),
    /// with the memory bus it drains over; absent on machines whose stores allocate in the cache
    /// and whose memory is a latency only. Costs nothing when absent (ARCHITECTURE.md "Timing").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_buffer: Option<WriteBufferConfig>,
    /// Memory-level parallelism of an out-of-order core (`[timing.mlp]`): references a trace
    /// marks independent (`Event::Independent`) overlap their long misses. Absent: every
    /// latency stalls the core, as it always did (ARCHITECTURE.md "Timing").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mlp: Option<MlpConfig>,
    /// The DRAM channels every agent's line transfers share (`[timing.dram]`): a line from
    /// memory that finds them busy waits. Absent: memory is a latency only, however many
    /// misses are in flight (ARCHITECTURE.md "Timing").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram: Option<DramConfig>,
}

/// Memory-level parallelism for independent references, first-order interval analysis
/// (Karkhanis & Smith, "A first-order superscalar processor model", ISCA 2004; Eyerman et al.,
/// "A mechanistic performance model for superscalar out-of-order processors", ACM TOCS 2009):
/// an out-of-order core hides a long miss behind the independent work after it, up to the
/// limits of its buffers; a load whose address comes from a miss in flight waits for it.
///
/// A reference is *long* when it took memory (DRAM) for its data or for any page-table entry
/// of its walk. Per hardware thread, a reference of a thread marked independent
/// (`Event::Independent`) that is long does not stall the core for its latency: it occupies
/// one of `miss_slots` slots until its completion (its start plus its in-order latency), and
/// one of `walkers` until its walk ends if it missed every TLB level. The core stalls only
/// - when no slot (or, for a reference that walks, no walker) is free: until the earliest
///   of them is free again;
/// - when `window` references have issued since the oldest outstanding one (the reorder
///   window fills behind it): until that one completes;
/// - at a reference of a thread not marked independent, and at `Independent` with `begin`
///   false: until every outstanding miss completes.
///
/// Independent references that are not long are charged their latency in order, as before.
/// Not modelled: a bandwidth limit of the memory (each miss takes its full latency however
/// many are in flight) and the work between references (a long miss overlaps only the
/// references after it, none of the instructions). A machine with it runs every reference on
/// the general path (no lane).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MlpConfig {
    /// Long misses in flight at once (the first data cache's miss buffers).
    pub miss_slots: u32,
    /// Of those, references that walk the page table at once (the page-table walkers).
    pub walkers: u32,
    /// References that may issue from the oldest outstanding long miss on (itself included).
    pub window: u32,
}

/// The most miss slots `MlpConfig` takes (each hardware thread keeps them in a fixed array).
pub const MLP_MAX_SLOTS: u32 = 64;

/// `field`'s `value` checked against 1..=`max` (`u32::MAX`: at least 1), with the error that
/// names the field.
fn one_to(field: &str, value: u32, max: u32) -> Result<(), String> {
    match value {
        0 if max == u32::MAX => Err(format!("{field}: expected at least 1, found 0")),
        v if v == 0 || v > max => Err(format!("{field}: expected 1..={max}, found {v}")),
        _ => Ok(()),
    }
}

impl MlpConfig {
    pub fn validate(&self) -> Result<(), String> {
        one_to("timing.mlp.miss_slots", self.miss_slots, MLP_MAX_SLOTS)?;
        if self.walkers == 0 || self.walkers > self.miss_slots {
            return Err(format!(
                "timing.mlp.walkers: expected 1..=miss_slots ({}), found {}",
                self.miss_slots, self.walkers
            ));
        }
        one_to("timing.mlp.window", self.window, u32::MAX)
    }
}

/// The DRAM channels behind the last cache level, shared by every hardware thread of the
/// machine (the application's, a technique's helper, stressors): a bandwidth limit with
/// queueing, deterministic, in the style of a first-order queueing model (one server per
/// channel, first come first served).
///
/// Every line memory serves (a data line, a page-table entry's line of a hardware walk or of a
/// technique's software walk) occupies one channel for `line_bytes / bus_bytes` transfers at
/// `mega_transfers` MT/s: `line_cycles()` core cycles. It takes the channel where it can begin
/// first (the controller's address interleaving is not modelled: the channels are a pool), at
/// its arrival if that channel is free then, else at the first gap after it that holds a line;
/// the wait is added to the reference's latency (and, under `timing.mlp`, to its time in
/// flight). The lines of one reference depend on each other (a walk's entries, then its data):
/// the first arrives when the reference issues, each next one when the one before is answered
/// (`memory.latency` after it began); they are placed when the reference is simulated, so a
/// channel holds reservations ahead of the time, and a later reference's line may take the gap
/// before them.
///
/// With `writebacks` (the default) dirty lines leave the caches over the same channels: a
/// store dirties the first level of its path only; a level that evicts a dirty line marks the
/// line dirty in the first level below it on the path that holds it (no fill, no replacement
/// change) or, if none does, writes it to memory: one line, arriving when the line whose fill
/// evicted it is answered (the reference's start if no line came from memory before it),
/// placed after the reference's reads in the first gap that holds it. No reference waits for
/// a write (the controller buffers them) but every later read finds the channel taken. A
/// shared level's eviction is the evicting reference's, whoever dirtied the line; a flush's
/// dirty lines go to memory at the flushing thread's clock.
///
/// With row activations (`ranks`, `banks`, `row_bytes`, `t_rrd_ps`, `t_faw_ps`, all or none) a
/// line's physical address picks its channel, rank, bank and row (rows of `row_bytes` go to
/// channel 0, 1, ..., then to the next rank, then to the next bank: an assumed mapping, not a
/// controller's); each bank keeps the row it last opened; a line to another row first takes
/// an activation at the earliest time at or after its arrival that its rank allows (no two of
/// its activations closer than tRRD, at most four in any tFAW), which opens the row, and its
/// transfer then takes the first gap on its channel from that time. The activation's own
/// latency (tRP, tRCD) stays inside `memory.latency`: what is modelled is the rate a rank
/// takes activations at, which bounds random lines. Not modelled: tRRD_L's bank groups (one
/// tRRD for the rank), a bank's tRC, read/write turnarounds, refresh; a miss that finds its
/// channel free (and, with activations, its rank ready) costs `memory.latency` as before. A channel forgets what ended more than
/// `DRAM_HORIZON` (2^16) cycles before an arrival (arrivals meet the channels in simulation
/// order, time order to within one reference per hardware thread). A machine with it runs
/// every reference on the general path (no lane, no first-level memo).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramConfig {
    /// Independent channels.
    pub channels: u32,
    /// Transfers per second of one channel, in millions (DDR4-4000: 4000).
    pub mega_transfers: u32,
    /// Bytes per transfer of one channel (a DDR4 channel is 64 bits wide: 8).
    #[serde(default = "eight")]
    pub bus_bytes: u32,
    /// Bytes of the line a miss transfers.
    #[serde(default = "sixty_four")]
    pub line_bytes: u32,
    /// Whether dirty lines leaving the caches are written to memory over the channels
    /// (default true; false: reads only, the model before 2026-11-28).
    #[serde(default = "yes")]
    pub writebacks: bool,
    /// Row activations (all of the next five, or none: without them every line is served at
    /// the channels' peak, as before). Ranks on one channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<u32>,
    /// Banks in one rank (DDR4 x8: 4 bank groups of 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub banks: Option<u32>,
    /// Bytes of one rank's row (a DDR4 x8 chip's 1 KiB page times the 8 chips of a 64-bit rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_bytes: Option<u64>,
    /// The least time between two activations of one rank, in picoseconds (tRRD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_rrd_ps: Option<u32>,
    /// The window in which one rank takes at most four activations, in picoseconds (tFAW).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_faw_ps: Option<u32>,
}

/// `DramConfig`'s row activations, checked and in the channels' fixed-point cycles.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct DramRows {
    pub ranks: u32,
    pub banks: u32,
    /// Lines in one row.
    pub row_lines: u64,
    /// tRRD and tFAW in 1/2^DRAM_FRACTION_BITS core cycles.
    pub rrd: u64,
    pub faw: u64,
}

fn yes() -> bool {
    true
}

fn eight() -> u32 {
    8
}

fn sixty_four() -> u32 {
    64
}

/// Cycles before a line's arrival beyond which a channel forgets the lines it was given
/// (`DramConfig`): arrivals meet the channels in simulation order, which is time order to
/// within about one reference per hardware thread; a line arriving further back than this
/// behind one already placed finds the channel free (an approximation, bounded memory).
pub const DRAM_HORIZON: u64 = 1 << 16;

/// The most channels `DramConfig` takes.
pub const DRAM_MAX_CHANNELS: u32 = 16;

/// `DramConfig::line_cycles_fixed`'s fraction bits: the channels keep time in 1/256 cycles,
/// so that a line's 7.4 cycles (DDR4-4000 at 3.7 GHz) do not round to 7.
pub const DRAM_FRACTION_BITS: u32 = 8;

impl DramConfig {
    /// `channels` channels of `mega_transfers` MT/s with the defaults of every other field
    /// (a DDR4 channel's 8-byte bus, 64-byte lines, writebacks on).
    pub fn new(channels: u32, mega_transfers: u32) -> DramConfig {
        DramConfig {
            channels,
            mega_transfers,
            bus_bytes: eight(),
            line_bytes: sixty_four(),
            writebacks: yes(),
            ranks: None,
            banks: None,
            row_bytes: None,
            t_rrd_ps: None,
            t_faw_ps: None,
        }
    }

    /// The row activations at `frequency_mhz` (None: not modelled). `validate` first.
    pub fn rows(&self, frequency_mhz: f64) -> Option<DramRows> {
        let fixed = |ps: u32| {
            let cycles = ps as f64 * frequency_mhz / 1e6;
            ((cycles * (1u64 << DRAM_FRACTION_BITS) as f64).round() as u64).max(1)
        };
        Some(DramRows {
            ranks: self.ranks?,
            banks: self.banks?,
            row_lines: self.row_bytes? / self.line_bytes as u64,
            rrd: fixed(self.t_rrd_ps?),
            faw: fixed(self.t_faw_ps?),
        })
    }

    pub fn validate(&self) -> Result<(), String> {
        one_to("timing.dram.channels", self.channels, DRAM_MAX_CHANNELS)?;
        one_to("timing.dram.mega_transfers", self.mega_transfers, u32::MAX)?;
        one_to("timing.dram.bus_bytes", self.bus_bytes, u32::MAX)?;
        one_to("timing.dram.line_bytes", self.line_bytes, u32::MAX)?;
        let given = [
            ("ranks", self.ranks.is_some()),
            ("banks", self.banks.is_some()),
            ("row_bytes", self.row_bytes.is_some()),
            ("t_rrd_ps", self.t_rrd_ps.is_some()),
            ("t_faw_ps", self.t_faw_ps.is_some()),
        ];
        if given.iter().any(|g| g.1) {
            if let Some((name, _)) = given.iter().find(|g| !g.1) {
                return Err(format!(
                    "timing.dram.{name}: row activations need ranks, banks, row_bytes, t_rrd_ps and t_faw_ps together; {name} is missing"
                ));
            }
        }
        let (Some(ranks), Some(banks), Some(row), Some(rrd), Some(faw)) = (
            self.ranks,
            self.banks,
            self.row_bytes,
            self.t_rrd_ps,
            self.t_faw_ps,
        ) else {
            return Ok(());
        };
        one_to("timing.dram.ranks", ranks, 64)?;
        one_to("timing.dram.banks", banks, 64)?;
        one_to("timing.dram.t_rrd_ps", rrd, u32::MAX)?;
        if row == 0 || !row.is_multiple_of(self.line_bytes as u64) {
            return Err(format!(
                "timing.dram.row_bytes: expected a positive multiple of line_bytes ({}), found {row}",
                self.line_bytes
            ));
        }
        if faw < rrd {
            return Err(format!(
                "timing.dram.t_faw_ps: four activations cannot fit in less than one tRRD: t_faw_ps {faw} < t_rrd_ps {rrd}"
            ));
        }
        Ok(())
    }

    /// Core cycles one line occupies a channel at `frequency_mhz`: its transfers over the
    /// transfer rate.
    pub fn line_cycles(&self, frequency_mhz: f64) -> f64 {
        let transfers = (self.line_bytes as f64 / self.bus_bytes as f64).ceil();
        transfers * frequency_mhz / self.mega_transfers as f64
    }

    /// `line_cycles` in fixed point (`DRAM_FRACTION_BITS`), at least 1.
    pub fn line_cycles_fixed(&self, frequency_mhz: f64) -> u64 {
        let f = self.line_cycles(frequency_mhz) * (1u64 << DRAM_FRACTION_BITS) as f64;
        (f.round() as u64).max(1)
    }

    /// The peak bandwidth of all channels, bytes per second.
    pub fn peak_bytes_per_second(&self) -> f64 {
        self.channels as f64 * self.bus_bytes as f64 * self.mega_transfers as f64 * 1e6
    }
}

/// A write buffer and the memory bus behind it, as the StrongARM SA-1100 has them (SA-1100
/// Developer's Manual §6.2-6.3):
/// - a store that hits the first data cache completes there; one that misses does not allocate
///   a line (the cache is read-allocate) and goes into the buffer, and the core goes on;
/// - the buffer holds `entries` stores (the SA-1100: "up to 8 blocks of data of 1 to 16 bytes,
///   at independent addresses"; stores do not merge, except a store multiple's words, so a
///   store of the trace, one instruction's, takes one entry); a store that finds it full waits
///   for its oldest entry to drain;
/// - the entries drain in order over one memory bus, `drain_cycles` each;
/// - a read served by memory (a line fill, an instruction fetch's line) uses the same bus
///   after the writes queued before it (reads do not overtake buffered writes, so a load sees
///   its own earlier stores), `memory.latency` cycles from when the bus is free.
///
/// The buffer's clock is the hardware thread's at the start of the reference.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteBufferConfig {
    /// Stores the buffer holds.
    pub entries: u32,
    /// Bus cycles to write one entry to memory.
    pub drain_cycles: u64,
}

impl WriteBufferConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.entries == 0 || self.entries > 64 {
            return Err(format!(
                "timing.write_buffer.entries: expected 1..=64, found {}",
                self.entries
            ));
        }
        if self.drain_cycles == 0 {
            return Err("timing.write_buffer.drain_cycles: expected at least 1, found 0".into());
        }
        Ok(())
    }
}

#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VirtualizationConfig {
    pub host_format: PageTableFormat,
    #[serde(default = "default_page_size")]
    pub host_page_size: PageSize,
    /// Page-walk caches of the host (second-dimension) walk.
    #[serde(default, rename = "host_pwc")]
    pub host_pwcs: Vec<PwcConfig>,
    /// Guest-physical memory size.
    #[serde(default = "default_guest_bytes")]
    pub guest_memory_bytes: u64,
}

fn default_guest_bytes() -> u64 {
    16 << 30
}

impl MachineConfig {
    /// What a cache-pressure stressor is sized and timed by (seed 001 §5.1's stress-ng
    /// `cache` and `stream`): the L3's bytes (the largest shared level, else the largest
    /// level, else the seed's 32 MiB) and the fastest L1 latency (else 4 cycles). A property
    /// of the machine, so pt_baker's model and its twin both read it here.
    pub fn stressor_targets(&self) -> (u64, u64) {
        let l3_bytes = self
            .caches
            .iter()
            .filter(|c| c.shared)
            .map(|c| c.size)
            .max()
            .or_else(|| self.caches.iter().map(|c| c.size).max())
            .unwrap_or(32 << 20);
        let l1_latency = self
            .caches
            .iter()
            .filter(|c| c.level == 1)
            .map(|c| c.latency)
            .min()
            .unwrap_or(4);
        (l3_bytes, l1_latency)
    }

    /// A machine of one core and one hardware thread at 1 GHz with `tlbs` over `format`'s
    /// 4 KiB pages, a walker of default costs, no caches and 8 GiB of memory (100 cycles,
    /// frames in order): the base that tests and examples change what they need of
    /// (`..MachineConfig::minimal(..)`).
    pub fn minimal(name: &str, format: PageTableFormat, tlbs: Vec<TlbConfig>) -> MachineConfig {
        MachineConfig {
            name: name.into(),
            description: String::new(),
            cores: 1,
            threads_per_core: 1,
            frequency_mhz: 1000.0,
            page_table: PageTableConfig {
                format,
                page_size: PageSize::Size4K,
            },
            tlbs,
            walker: WalkerConfig::default(),
            caches: vec![],
            memory: MemoryConfig {
                bytes: 8 << 30,
                latency: 100,
                placement: crate::memory::Placement::Sequential,
                source: String::new(),
            },
            timing: TimingConfig::default(),
            virtualization: None,
            technique: None,
            energy: None,
            source: String::new(),
        }
    }

    /// Checks every component; the error names the field ("tlb[L1D].ways: ...").
    pub fn validate(&self) -> Result<(), String> {
        if self.cores == 0 || self.cores > 1024 {
            return Err(format!("cores: expected 1..=1024, found {}", self.cores));
        }
        if self.threads_per_core == 0 || self.threads_per_core > 8 {
            return Err(format!(
                "threads_per_core: expected 1..=8, found {}",
                self.threads_per_core
            ));
        }
        // NaN fails too: the comparison is false for it.
        if self.frequency_mhz.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return Err(format!(
                "frequency_mhz: expected a positive number, found {}",
                self.frequency_mhz
            ));
        }
        let fmt = self.page_table.format;
        if !fmt.supports(self.page_table.page_size) {
            return Err(format!(
                "page_table.page_size: {} is not a page size of {} (expected one of {})",
                self.page_table.page_size,
                fmt.name(),
                names(&fmt.page_sizes())
            ));
        }
        if self.tlbs.is_empty() {
            return Err("tlb: a machine needs at least one TLB level".into());
        }
        for t in &self.tlbs {
            t.validate()?;
        }
        for kind in [TlbKind::Instr, TlbKind::Data] {
            let path: Vec<_> = self
                .tlbs
                .iter()
                .filter(|t| t.kind == kind || t.kind == TlbKind::Unified)
                .collect();
            if path.is_empty() {
                return Err(format!(
                    "tlb: no TLB level translates {} references",
                    if kind == TlbKind::Instr {
                        "instruction"
                    } else {
                        "data"
                    }
                ));
            }
            let mut levels: Vec<_> = path.iter().map(|t| t.level).collect();
            levels.sort();
            if levels.windows(2).any(|w| w[0] == w[1]) {
                return Err(format!("tlb: two levels with the same `level` on the {kind:?} path; give each a distinct level"));
            }
        }
        let mut names_seen = std::collections::BTreeSet::new();
        for t in &self.tlbs {
            if !names_seen.insert(&t.name) {
                return Err(format!("tlb[{}].name: names must be unique", t.name));
            }
        }
        for c in &self.caches {
            c.validate()?;
        }
        for kind in [CacheKind::Instr, CacheKind::Data] {
            let mut levels: Vec<_> = self
                .caches
                .iter()
                .filter(|c| c.kind == kind || c.kind == CacheKind::Unified)
                .map(|c| c.level)
                .collect();
            levels.sort();
            if levels.windows(2).any(|w| w[0] == w[1]) {
                return Err(format!(
                    "cache: two levels with the same `level` on the {kind:?} path"
                ));
            }
        }
        if !self.caches.is_empty()
            && !self
                .caches
                .iter()
                .any(|c| c.level == self.walker.first_cache_level && c.kind != CacheKind::Instr)
        {
            return Err(format!(
                "walker.first_cache_level: no data or unified cache has level {}",
                self.walker.first_cache_level
            ));
        }
        let nlevels = fmt.levels().len();
        for p in &self.walker.pwcs {
            p.validate(nlevels)?;
        }
        self.memory.validate()?;
        self.check_state_size()?;
        if let Some(wb) = &self.timing.write_buffer {
            wb.validate()?;
            // The reference model's random machines found the engine and the reference
            // disagreeing with two hardware threads sharing a buffer (issue 60): until that is
            // settled, one hardware thread only (the SA-1100 is one core, one thread).
            if self.cores * self.threads_per_core != 1 {
                return Err(format!(
                    "timing.write_buffer: modelled for one hardware thread only (cores = 1, threads_per_core = 1), found {} x {}",
                    self.cores, self.threads_per_core
                ));
            }
            if !self
                .caches
                .iter()
                .any(|c| c.level == 1 && c.kind != CacheKind::Instr)
            {
                return Err(
                    "timing.write_buffer: a write buffer sits behind a first-level data cache; this machine has none"
                        .into(),
                );
            }
        }
        if let Some(d) = &self.timing.dram {
            d.validate()?;
            if self.timing.write_buffer.is_some() {
                return Err("timing.dram: not modelled together with timing.write_buffer (its bus is the memory's)".into());
            }
            if d.ranks.is_some() && self.caches.iter().any(|c| c.indexing == Indexing::Virtual) {
                return Err("timing.dram.ranks: row activations map physical addresses to banks; this machine has a virtually indexed cache".into());
            }
        }
        if let Some(m) = &self.timing.mlp {
            m.validate()?;
            if self.timing.write_buffer.is_some() {
                return Err("timing.mlp: not modelled together with timing.write_buffer".into());
            }
        }
        if let Some(v) = &self.virtualization {
            if !v.host_format.supports(v.host_page_size) {
                return Err(format!(
                    "virtualization.host_page_size: {} is not a page size of {}",
                    v.host_page_size,
                    v.host_format.name()
                ));
            }
            for p in &v.host_pwcs {
                p.validate(v.host_format.levels().len())?;
            }
            if v.guest_memory_bytes < (4 << 20) || v.guest_memory_bytes > self.memory.bytes {
                return Err(format!(
                    "virtualization.guest_memory_bytes: expected 4 MiB ..= memory.bytes ({}), found {}",
                    self.memory.bytes, v.guest_memory_bytes
                ));
            }
        }
        if let Some(e) = &self.energy {
            let tlbs: Vec<&str> = self.tlbs.iter().map(|t| t.name.as_str()).collect();
            let caches: Vec<&str> = self.caches.iter().map(|c| c.name.as_str()).collect();
            e.validate(&tlbs, &caches)?;
        }
        Ok(())
    }

    /// Refuses a machine whose simulated structures would not fit the host, before anything is
    /// allocated: `entries = 1000000000000` once aborted the process (and a Python kernel with
    /// it) on a failed allocation. Each TLB level, cache level and page-walk cache is costed at
    /// an upper bound of its bytes per entry (`state_bytes`), times its instances, and so is the
    /// frame bitmap; one over `MAX_STATE_BYTES` is named with the bytes it would take.
    fn check_state_size(&self) -> Result<(), String> {
        let mut items: Vec<(String, u128)> = Vec::new();
        for t in &self.tlbs {
            let per = if t.ways() >= 32 {
                TLB_ENTRY_BYTES + TLB_FILTER_BYTES
            } else {
                TLB_ENTRY_BYTES
            };
            let copies = if t.shared { 1 } else { self.cores as u128 };
            let bytes = (t.entries as u128)
                .saturating_add(t.lockable as u128)
                .saturating_mul(per)
                .saturating_mul(copies);
            items.push((format!("tlb[{}].entries", t.name), bytes));
        }
        for c in &self.caches {
            let lines = (c.size / c.line) as u128;
            let copies = match (c.shared, c.cores_per_instance) {
                (false, _) => self.cores as u128,
                (true, 0) => 1,
                (true, k) => self.cores.div_ceil(k) as u128,
            };
            let bytes = lines
                .saturating_mul(CACHE_LINE_STATE_BYTES)
                .saturating_mul(copies);
            items.push((format!("cache[{}].size", c.name), bytes));
        }
        let pwcs = self.walker.pwcs.iter().map(|p| ("walker.pwc", p)).chain(
            self.virtualization
                .iter()
                .flat_map(|v| v.host_pwcs.iter().map(|p| ("virtualization.host_pwc", p))),
        );
        for (what, p) in pwcs {
            let bytes = (p.entries as u128)
                .saturating_mul(PWC_ENTRY_BYTES)
                .saturating_mul(self.cores as u128);
            items.push((format!("{what}[level {}].entries", p.level), bytes));
        }
        // One bit per 4 KiB frame (`FrameAllocator`).
        items.push((
            "memory.bytes".into(),
            (self.memory.bytes as u128) / 4096 / 8,
        ));
        let total: u128 = items.iter().map(|i| i.1).fold(0, u128::saturating_add);
        if total <= MAX_STATE_BYTES {
            return Ok(());
        }
        let (field, bytes) = items
            .iter()
            .max_by_key(|i| i.1)
            .expect("a machine has a TLB");
        Err(format!(
            "{field}: the simulator would need {bytes} bytes for it ({total} for the whole machine), more than the {} GiB a machine may take; expected a size a real machine has",
            MAX_STATE_BYTES >> 30
        ))
    }

    pub fn ns_per_cycle(&self) -> f64 {
        1000.0 / self.frequency_mhz
    }
}

/// The most bytes the engine's structures for one machine may take (`check_state_size`): far
/// beyond any real machine's (zen3's take about 20 MB, its 32 MiB L3 most of it), and within
/// what a developer's host holds.
pub const MAX_STATE_BYTES: u128 = 8 << 30;

/// Upper bounds of the engine's bytes per entry, from its layouts: a TLB entry's key (8) and
/// payload (16, `tlb::Payload`) and its replacement order (8); a level of 32 ways or more adds
/// its `hint` (4 u32 per entry) and `present` (16 u16 per entry) tables, each rounded up to a
/// power of two (so up to twice that). A cache line's key, fingerprint, order and dirty bit,
/// and a page-walk-cache entry's key, address space and node, fit in 32.
const TLB_ENTRY_BYTES: u128 = 32;
const TLB_FILTER_BYTES: u128 = 2 * (4 * 4 + 16 * 2);
const CACHE_LINE_STATE_BYTES: u128 = 32;
const PWC_ENTRY_BYTES: u128 = 32;

fn names(s: &[PageSize]) -> String {
    s.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
}

/// A technique selected for a run: its name and its parameters as the user gave them (a
/// `[technique]` table, `--technique NAME:key=value,...`, `technique=` in Python). Values are
/// kept as text; the technique reads and checks them (`techniques::build`).
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct TechniqueSpec {
    pub name: String,
    #[serde(flatten, deserialize_with = "scalars_as_text")]
    pub params: std::collections::BTreeMap<String, String>,
}

/// A `[technique]` table's values as text: TOML and JSON give integers, floats and booleans
/// their own types, and a parameter may be any of them.
fn scalars_as_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scalar {
        Bool(bool),
        Int(i64),
        Float(f64),
        Text(String),
    }
    let raw = std::collections::BTreeMap::<String, Scalar>::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                Scalar::Bool(b) => b.to_string(),
                Scalar::Int(i) => i.to_string(),
                Scalar::Float(f) => f.to_string(),
                Scalar::Text(t) => t,
            };
            (k, text)
        })
        .collect())
}
