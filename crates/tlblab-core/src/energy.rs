//! A machine's energy parameters (`[energy]` in a machine file): the per-event energies and
//! static powers that `tlblab.energy` (python/tlblab/energy.py) turns a run's counters into
//! joules and watts (docs/energy.md). Data only: the engine never reads it, so a run with or
//! without it simulates the same instructions; the model is post-processing of `Stats`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Per-event energies and static powers of a machine, each a number its file cites.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnergyConfig {
    /// Picojoules per lookup of each TLB level, by the level's `name`: every `[[tlb]]` level.
    pub tlb_pj: BTreeMap<String, f64>,
    /// Picojoules per access of each cache level, by the level's `name`: every `[[cache]]`
    /// level (walks' page-table reads included, as `LevelStats::accesses` counts them).
    #[serde(default)]
    pub cache_pj: BTreeMap<String, f64>,
    /// Picojoules per page walk besides its page-table reads (the walker's own logic and its
    /// page-walk caches' lookups); 0 where no source gives it.
    #[serde(default)]
    pub walk_pj: f64,
    /// Nanojoules per 64-byte line read from memory (or written back, where a run counts
    /// writebacks: `timing.dram`).
    pub dram_line_nj: f64,
    /// Watts of a core while one of its hardware threads is busy (simulated cycles of work).
    pub core_active_w: f64,
    /// Watts of a core while none of its hardware threads is busy, over the run's time.
    #[serde(default)]
    pub core_idle_w: f64,
    /// Watts of the rest of the package (the uncore: I/O die, fabric, memory controller's
    /// static part), over the run's time.
    #[serde(default)]
    pub uncore_w: f64,
    #[serde(default)]
    pub source: String,
}

impl EnergyConfig {
    /// Every number finite and not negative, and one energy per TLB and cache level of the
    /// machine (`tlbs`, `caches`: their names), no more: a level without its energy would
    /// count as free.
    pub fn validate(&self, tlbs: &[&str], caches: &[&str]) -> Result<(), String> {
        for (field, v) in [
            ("walk_pj", self.walk_pj),
            ("dram_line_nj", self.dram_line_nj),
            ("core_active_w", self.core_active_w),
            ("core_idle_w", self.core_idle_w),
            ("uncore_w", self.uncore_w),
        ] {
            non_negative(&format!("energy.{field}"), v)?;
        }
        for (table, map, levels) in [
            ("tlb_pj", &self.tlb_pj, tlbs),
            ("cache_pj", &self.cache_pj, caches),
        ] {
            for (name, v) in map {
                if !levels.contains(&name.as_str()) {
                    return Err(format!(
                        "energy.{table}.{name}: no level of that name (expected one of: {})",
                        levels.join(", ")
                    ));
                }
                non_negative(&format!("energy.{table}.{name}"), *v)?;
            }
            if let Some(missing) = levels.iter().find(|l| !map.contains_key(**l)) {
                return Err(format!(
                    "energy.{table}: expected an energy for every level, found none for {missing}"
                ));
            }
        }
        Ok(())
    }
}

fn non_negative(field: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!("{field}: expected a finite number >= 0, found {v}"))
    }
}
