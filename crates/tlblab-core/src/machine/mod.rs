//! The description of a simulated machine: cores, TLB levels, walker, caches, memory, timing.
//!
//! This is data (serde), validated with messages that name the offending field. Machine presets
//! in `presets/*.toml` deserialize into it (see tlblab-config for loading and the preset list).

use crate::cache::{CacheConfig, CacheKind, Indexing};
use crate::memory::{MemoryConfig, Placement};
use crate::page_table::{PageTableFormat, TableLayout};
use crate::tlb::{TlbConfig, TlbKind};
use crate::walker::PwcConfig;
use serde::{Deserialize, Serialize};
use tlblab_types::PageSize;

mod timing;
pub use timing::*;

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
    /// Where the tables sit in their frames: `own_frame` (the default: each table at the start
    /// of a frame of its own) or `linux_armv7` (`armv7_short` only: ARM Linux's page of two
    /// 1 MiB halves' second-level tables, the hardware tables at +2048 and +3072;
    /// `page_table::armv7::linux_table`).
    #[serde(default, skip_serializing_if = "TableLayout::is_own_frame")]
    pub layout: TableLayout,
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
    /// How the guest OS places its frames in guest-physical memory; none: `memory.placement`,
    /// which then places both the guest's frames and the host's. A guest's allocator after hours
    /// of uptime scatters a program's pages (read from `/proc/self/pagemap`:
    /// docs/host-predict.md, "A gap in the model"), where the host's placement of guest memory
    /// in host-physical memory cannot be seen from inside the guest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_placement: Option<Placement>,
    /// Where `guest_placement` comes from (what was measured, when, how).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub guest_placement_source: String,
}

impl VirtualizationConfig {
    /// The guest-physical memory: the machine's `memory` (its latency, and its placement unless
    /// the guest has its own) sized `guest_memory_bytes`. Engine and reference both build the
    /// guest's frame allocator from it.
    pub fn guest_memory(&self, memory: &MemoryConfig) -> MemoryConfig {
        MemoryConfig {
            bytes: self.guest_memory_bytes,
            placement: self.guest_placement.unwrap_or(memory.placement),
            ..memory.clone()
        }
    }
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
                layout: TableLayout::OwnFrame,
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
        if self.page_table.layout == TableLayout::LinuxArmv7 && fmt != PageTableFormat::Armv7Short {
            return Err(format!(
                "page_table.layout: linux_armv7 is where ARM Linux puts the second-level tables \
                 of the armv7_short format, and this machine's format is {} (expected \
                 layout = \"own_frame\" or format = \"armv7_short\")",
                fmt.name()
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
        if let Some(c) = self.caches.iter().find(|c| c.prefetch.is_some()) {
            let t = &self.timing;
            if t.write_buffer.is_some() || t.dram.is_some() {
                return Err(format!(
                    "cache[{}].prefetch: not modelled together with timing.write_buffer or timing.dram",
                    c.name
                ));
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
            v.guest_memory(&self.memory)
                .validate()
                .map_err(|e| e.replace("memory.placement", "virtualization.guest_placement"))?;
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
/// kept as text; the technique reads and checks them (`registry::build`).
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
