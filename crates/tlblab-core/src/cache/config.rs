//! A cache level's configuration as a machine file gives it (`CacheConfig`) and its checks.

use crate::replacement::ReplacementKind;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    Instr,
    Data,
    #[default]
    Unified,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Indexing {
    #[default]
    Physical,
    /// Virtually indexed and tagged: looked up with the virtual address, flushed on switches.
    Virtual,
}

#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    pub name: String,
    /// Lookup order within a core: 1 first.
    pub level: u8,
    #[serde(default)]
    pub kind: CacheKind,
    pub size: u64,
    pub ways: usize,
    #[serde(default = "default_line")]
    pub line: u64,
    /// Load-to-use cycles when a reference is served here.
    pub latency: u64,
    #[serde(default)]
    pub replacement: ReplacementKind,
    #[serde(default)]
    pub shared: bool,
    /// For a shared level: how many consecutive cores share one instance (0 = all of them).
    /// Zen 3's L3 is one per CCX (seed 001 §4.4.5, Fig. 4.5: 6 cores share 32 MB), so a
    /// machine of two CCXs has `cores_per_instance` = cores / 2.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cores_per_instance: usize,
    #[serde(default)]
    pub indexing: Indexing,
    /// Cost of a full flush: fixed cycles, plus cycles per valid line and per dirty line written
    /// back (seed 002 §2: 1,000–18,000 cycles on the SA-1100 depending on contents).
    #[serde(default)]
    pub flush_cycles_base: u64,
    #[serde(default)]
    pub flush_cycles_per_line: u64,
    #[serde(default)]
    pub flush_cycles_per_dirty_line: u64,
    /// Cost of a ranged clean-and-invalidate (`System`'s `FlushRange` event): cycles per line
    /// of the range, present or not (the kernel's loop issues one clean and one invalidate per
    /// line address: ARM Linux 2.4's `cpu_sa1100_cache_clean_invalidate_range`), plus
    /// `flush_cycles_per_dirty_line` per dirty line written back.
    #[serde(default)]
    pub range_flush_cycles_per_line: u64,
    /// A stride prefetcher on this level (`[cache.prefetch]`, `prefetch.rs`: the Cortex-A7's,
    /// TRM DDI 0464D §6.5.2, or with `streams` one stream per 4 KiB page, Intel's streamer's
    /// rule); a private level-1 data cache only. Absent: none, as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch: Option<super::prefetch::PrefetchConfig>,
    #[serde(default)]
    pub source: String,
}

fn default_line() -> u64 {
    64
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl CacheConfig {
    pub fn sets(&self) -> u64 {
        self.size / (self.line * self.ways as u64).max(1)
    }

    pub fn validate(&self) -> Result<(), String> {
        let f = |field: &str, msg: String| Err(format!("cache[{}].{field}: {msg}", self.name));
        if !self.line.is_power_of_two() || self.line < 4 {
            return f(
                "line",
                format!("expected a power of two ≥ 4, found {}", self.line),
            );
        }
        if self.ways == 0 {
            return f("ways", "must be positive, found 0".into());
        }
        // Checked: a line and a way count each valid alone can multiply past 64 bits (a machine
        // file's u64::MAX ways), which would wrap in release and panic with overflow checks on.
        let Some(way_bytes) = self.line.checked_mul(self.ways as u64) else {
            return f(
                "ways",
                format!(
                    "line × ways = {} × {} exceeds 2^64 bytes",
                    self.line, self.ways
                ),
            );
        };
        if self.size == 0 || !self.size.is_multiple_of(way_bytes) {
            return f(
                "size",
                format!(
                    "{} bytes is not a multiple of line × ways = {way_bytes}",
                    self.size
                ),
            );
        }
        if self.cores_per_instance != 0 && !self.shared {
            return f(
                "cores_per_instance",
                format!(
                    "applies to a shared level only (shared = true), found {} on a private one",
                    self.cores_per_instance
                ),
            );
        }
        if let Some(p) = &self.prefetch {
            if self.level != 1 || self.kind != CacheKind::Data || self.shared {
                return f(
                    "prefetch",
                    "a prefetcher sits on a private level-1 data cache (kind = \"data\", level = 1, not shared)".into(),
                );
            }
            if self.line > 4096 {
                return f(
                    "prefetch",
                    format!("needs lines of at most 4096 bytes, found {}", self.line),
                );
            }
            p.validate().or_else(|e| f("prefetch", e))?;
        }
        if self.replacement == ReplacementKind::Plru && !self.ways.is_power_of_two() {
            return f(
                "replacement",
                format!(
                    "plru needs a power-of-two number of ways, found {}",
                    self.ways
                ),
            );
        }
        Ok(())
    }
}
