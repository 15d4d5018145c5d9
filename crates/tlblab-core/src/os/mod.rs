//! The OS model: address-space identifiers, context switches, shootdowns, schedulers, jobs.
//!
//! Every seed's technique acts at an OS event, so the engine needs the events themselves:
//! - `asid` — a finite ASID space with Linux-style generation rollover (seed 000 §3.3: 8-bit ASIDs).
//! - `switch/` — what a context switch does to TLBs and caches, one file per policy: flush
//!   everything (seed 002 §2's naive StrongARM Linux), ASID-tagged (no flush; flush on rollover),
//!   and `SwitchHook`, the extension point a technique (ARM domains, seed 002) implements.
//! - `migration` — what a thread meets when it moves to another core (`MigrationHook`; the default
//!   is the new core's TLB as it is), the extension point of TLB migration (seed 000).
//! - `rr` — round-robin scheduling with a quantum over N cores, pinning, forced rotation.
//! - `rm` — preemptive fixed-priority rate-monotonic scheduling of periodic task sets on one
//!   core, with statistics per job (seed 003 Figs. 6.2–6.8).
//! - `helper` — helper threads that generate their own access stream at a rate (PT-Baker, seed 001).
//!
//! Trace-driven scheduling (ContextSwitch/Migrate/TaskRelease/JobStart/JobEnd events, and the
//! implicit switch when a core runs an access of a thread other than its current one) is handled
//! in `system/mod.rs` through the same switch and migration policies.

pub mod asid;
pub mod helper;
pub mod migration;
pub mod rm;
pub mod rr;
pub mod switch;

use serde::{Deserialize, Serialize};

pub use asid::AsidAllocator;
pub use migration::MigrationHook;
pub use switch::{SwitchHook, SwitchPolicy};

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
