//! The OS model's vocabulary: what an OS run is configured with and what it counts.
//!
//! Data only: this module depends on nothing of the engine. The engine applies the OS events
//! (`system/events.rs`), the context-switch policies (`system/switch/`), and the drivers that
//! schedule threads over it live in `sched/`.
//! - `asid` — a finite ASID space with Linux-style generation rollover (seed 000 §3.3: 8-bit ASIDs).
//! - `SwitchPolicy` — what a change of address space does: flush everything (seed 002 §2's naive
//!   StrongARM Linux), ASID-tagged (no flush; flush on rollover), or a technique's hook.
//! - `OsConfig`, `OsStats`, `JobStats` — the parameters, counters and per-job records of a run.

pub mod asid;

use serde::{Deserialize, Serialize};

pub use asid::AsidAllocator;

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SwitchPolicy {
    /// `asid_tagged` when every TLB level carries ASIDs, else `flush_all`.
    #[default]
    Auto,
    /// Invalidate every unlocked TLB entry and page-walk-cache entry of the core and flush its
    /// virtually indexed caches (with their cost) on every address-space change: what Linux did
    /// on the StrongARM (seed 002 §2: 1,000–18,000 cycles direct, then refills as misses).
    FlushAll,
    /// No flush: entries are told apart by ASID; the ASID space rolls over (seed 000 §3.3).
    AsidTagged,
    /// Leave the switch to the technique installed (`Technique::on_switch`; ARM domains, seed 002).
    Hook,
}

/// OS parameters of a run (not properties of the hardware).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OsConfig {
    /// Width of the ASID space; ASID 0 is reserved (seed 000 §3.3: ARMv7 Linux uses 8 bits).
    pub asid_bits: u8,
    /// What an address-space switch does.
    pub switch: SwitchPolicy,
    /// Kernel cycles per context switch besides flushing (register save/restore, scheduler):
    /// "of the order of 100 clock cycles" (seed 002 §1).
    pub switch_cycles: u64,
    /// Cycles an inter-processor interrupt costs each remote core in a shootdown.
    pub ipi_cycles: u64,
}

impl Default for OsConfig {
    fn default() -> Self {
        OsConfig {
            asid_bits: 8,
            switch: SwitchPolicy::Auto,
            switch_cycles: 0,
            ipi_cycles: 0,
        }
    }
}

impl OsConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=16).contains(&self.asid_bits) {
            return Err(format!(
                "os.asid_bits: expected 1..=16, found {}",
                self.asid_bits
            ));
        }
        Ok(())
    }
}

/// Counters of OS events.
#[derive(Clone, Default, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct OsStats {
    pub context_switches: u64,
    /// Switches that changed the address space.
    pub address_space_switches: u64,
    pub asid_rollovers: u64,
    /// Full TLB flushes (per core) done by switches, rollovers and flush events.
    pub tlb_flushes: u64,
    pub cache_flushes: u64,
    pub cache_flush_cycles: u64,
    pub migrations: u64,
    pub shootdowns: u64,
    pub ipis: u64,
    pub switch_cycles: u64,
}

impl OsStats {
    /// The counts of `self` less those of `earlier` (a snapshot of the same run).
    pub fn since(&self, earlier: &OsStats) -> OsStats {
        OsStats {
            context_switches: self.context_switches - earlier.context_switches,
            address_space_switches: self.address_space_switches - earlier.address_space_switches,
            asid_rollovers: self.asid_rollovers - earlier.asid_rollovers,
            tlb_flushes: self.tlb_flushes - earlier.tlb_flushes,
            cache_flushes: self.cache_flushes - earlier.cache_flushes,
            cache_flush_cycles: self.cache_flush_cycles - earlier.cache_flush_cycles,
            migrations: self.migrations - earlier.migrations,
            shootdowns: self.shootdowns - earlier.shootdowns,
            ipis: self.ipis - earlier.ipis,
            switch_cycles: self.switch_cycles - earlier.switch_cycles,
        }
    }
}

/// What one job of a periodic task did (seed 003 Figs. 6.2–6.8 plot these per job).
#[derive(Clone, Default, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct JobStats {
    pub task: u32,
    pub job: u32,
    pub release: u64,
    pub start: u64,
    pub end: u64,
    /// Cycles the job executed (excluding preemptions).
    pub cycles: u64,
    pub references: u64,
    /// Misses per TLB level (in `Stats::tlb_levels` order).
    pub tlb_misses: Vec<u64>,
    pub walks: u64,
    pub deadline_missed: bool,
}
