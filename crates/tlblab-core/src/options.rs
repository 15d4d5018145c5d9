//! The switches of one run that are not properties of the machine (`RunOptions`): what the
//! engine (`system/`) and the reference model (`reference/`) both take, kept apart from either so
//! the reference reads its configuration without importing the engine it checks.

use crate::os::OsConfig;
use serde::{Deserialize, Serialize};

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
    /// Walk the page tables on a miss in every TLB level. Off = a TLB-only study (ARCHITECTURE.md
    /// glossary, *TLB-only*): such a miss is counted as a walk and charged the walker's fixed
    /// latency (`walker.latency`), but no page table is built or read, nothing is loaded through
    /// the caches, no page-walk cache is consulted and no page fault is counted; the translation
    /// filled is the page's identity frame, of the page size its region maps it with. Needs
    /// `caches` and `data_accesses` off (the frames are not real).
    pub walks: bool,
    /// Stop after this many references (0 = no limit).
    pub max_references: u64,
    /// The OS model's parameters.
    pub os: OsConfig,
    /// Count the per-level data TLB stall cycles (`UnitStats::data_stall_cycles`, seed 004
    /// Tables 2-3): every reference takes the general path (the lanes step aside, as for a
    /// technique), which counts them; the result is the same in every other counter.
    pub stall_cycles: bool,
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
            stall_cycles: false,
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
            stall_cycles: false,
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
