//! The page-table walker's page-walk caches (PWCs).
//!
//! A PWC for level L holds entries of page-table level L (root = 0): the pointer to the level-L+1
//! table for a VA prefix, tagged by address space. A hit lets the walk skip levels 0..=L and start
//! by reading level L+1 (Intel's PML4E/PDPTE/PDE caches; AMD's page-directory cache). The walk
//! itself — which entries are read and how each reference travels through the cache hierarchy —
//! is in `system`, because it needs the core's caches.

use crate::replacement::{Replacement, ReplacementKind};
use crate::tags::TagArray;
use serde::{Deserialize, Serialize};

#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PwcConfig {
    /// The page-table level (root = 0) whose entries this cache holds.
    pub level: usize,
    pub entries: usize,
    /// Ways; omitted = fully associative.
    #[serde(default)]
    pub ways: Option<usize>,
    /// Cycles for a lookup that hits.
    #[serde(default)]
    pub latency: u64,
    #[serde(default)]
    pub replacement: ReplacementKind,
    #[serde(default)]
    pub source: String,
}

impl PwcConfig {
    pub fn ways(&self) -> usize {
        self.ways.unwrap_or(self.entries)
    }

    pub fn validate(&self, levels: usize) -> Result<(), String> {
        let f = |field: &str, msg: String| {
            Err(format!("walker.pwc[level {}].{field}: {msg}", self.level))
        };
        if self.level + 1 >= levels {
            return f(
                "level",
                format!(
                    "the page table has levels 0..{}; a PWC can cache levels 0..{} (found {})",
                    levels,
                    levels.saturating_sub(2),
                    self.level
                ),
            );
        }
        if self.entries == 0 {
            return f("entries", "must be positive, found 0".into());
        }
        let w = self.ways();
        if w == 0 || w > self.entries || !self.entries.is_multiple_of(w) {
            return f(
                "ways",
                format!(
                    "{} entries are not divisible into sets of {w} ways",
                    self.entries
                ),
            );
        }
        if self.replacement == ReplacementKind::Plru && !w.is_power_of_two() {
            return f(
                "replacement",
                format!("plru needs a power-of-two number of ways, found {w}"),
            );
        }
        Ok(())
    }
}

const INVALID: u64 = u64::MAX;

/// A page-walk cache: (address-space id, VA prefix) → table node index.
#[derive(Clone, Debug)]
pub struct Pwc {
    pub config: PwcConfig,
    sets: usize,
    /// `sets - 1` when the number of sets is a power of two (the usual case): a mask instead
    /// of a division, and no test of the power per lookup.
    set_mask: Option<u64>,
    ways: usize,
    keys: TagArray,
    space: Vec<u32>,
    node: Vec<u32>,
    repl: Replacement,
}

impl Pwc {
    pub fn new(config: PwcConfig, seed: u64) -> Pwc {
        let ways = config.ways();
        let sets = config.entries / ways;
        Pwc {
            repl: Replacement::new(
                config.replacement,
                sets,
                ways,
                seed ^ ((config.level as u64) << 48),
            ),
            config,
            sets,
            set_mask: sets.is_power_of_two().then(|| sets as u64 - 1),
            ways,
            keys: TagArray::new(sets * ways, INVALID),
            space: vec![0; sets * ways],
            node: vec![0; sets * ways],
        }
    }

    /// The set of `prefix`: a mask when the number of sets is a power of two (the usual case),
    /// sparing a division per walk level.
    #[inline]
    fn set_of(&self, prefix: u64) -> usize {
        match self.set_mask {
            Some(m) => (prefix & m) as usize,
            None => (prefix % self.sets as u64) as usize,
        }
    }

    /// The way of `set` holding (`space`, `prefix`), if any. The keys are compared with the
    /// SIMD tag search rather than a loop that exits at the match: which way holds a prefix is
    /// random, so an early-exit loop mispredicts on most walks.
    #[inline]
    fn find(&self, set: usize, space: u32, prefix: u64) -> Option<usize> {
        let base = set * self.ways;
        if self.ways <= 64 {
            // The usual geometry: no chunk loop, and one pass over the fingerprint candidates
            // checking key and address space together (measured: ~10 instructions per lookup
            // fewer than verifying every candidate's key first, then the spaces).
            let mut m = self.keys.candidates(base, self.ways, prefix);
            while m != 0 {
                let w = m.trailing_zeros() as usize;
                m &= m - 1;
                if self.keys.get(base + w) == prefix && self.space[base + w] == space {
                    return Some(w);
                }
            }
            return None;
        }
        let mut chunk = 0;
        while chunk < self.ways {
            let end = (chunk + 64).min(self.ways);
            let mut m = self.keys.matches(base + chunk, end - chunk, prefix);
            while m != 0 {
                let w = chunk + m.trailing_zeros() as usize;
                m &= m - 1;
                if self.space[base + w] == space {
                    return Some(w);
                }
            }
            chunk = end;
        }
        None
    }

    /// The cached node for `prefix` (VA >> the level's shift) of address space `space`.
    #[inline]
    pub fn lookup(&mut self, space: u32, prefix: u64) -> Option<u32> {
        let set = self.set_of(prefix);
        let w = self.find(set, space, prefix)?;
        self.repl.on_hit(set, w);
        Some(self.node[set * self.ways + w])
    }

    #[inline]
    pub fn insert(&mut self, space: u32, prefix: u64, node: u32) {
        let set = self.set_of(prefix);
        let base = set * self.ways;
        if let Some(w) = self.find(set, space, prefix) {
            self.node[base + w] = node;
            self.repl.on_hit(set, w);
            return;
        }
        let free = if self.ways <= 64 {
            self.keys.first(base, self.ways, INVALID)
        } else {
            (0..self.ways).find(|&w| self.keys.get(base + w) == INVALID)
        };
        let w = free.unwrap_or_else(|| self.repl.victim_any(set));
        self.keys.set(base + w, prefix);
        self.space[base + w] = space;
        self.node[base + w] = node;
        self.repl.on_fill(set, w);
    }

    /// `insert` right after `lookup` missed (`space`, `prefix`) with nothing in between
    /// touching this cache (a walk fills the levels it just looked up): the search for a copy
    /// to refresh is skipped, and a full set's victim is chosen and filled in one step.
    #[inline]
    pub(crate) fn insert_after_miss(&mut self, space: u32, prefix: u64, node: u32) {
        let set = self.set_of(prefix);
        let base = set * self.ways;
        let free = if self.ways <= 64 {
            self.keys.first(base, self.ways, INVALID)
        } else {
            (0..self.ways).find(|&w| self.keys.get(base + w) == INVALID)
        };
        let w = self.repl.fill_way(set, free);
        self.keys.set(base + w, prefix);
        self.space[base + w] = space;
        self.node[base + w] = node;
    }

    /// Drops every entry (e.g. on a full TLB flush without address-space tags).
    pub fn flush(&mut self) {
        for s in 0..self.keys.len() {
            if self.keys.get(s) != INVALID {
                self.keys.set(s, INVALID);
                self.repl.on_invalidate(s / self.ways, s % self.ways);
            }
        }
    }

    /// Drops the entries of one address space.
    pub fn flush_space(&mut self, space: u32) {
        for s in 0..self.keys.len() {
            if self.keys.get(s) != INVALID && self.space[s] == space {
                self.keys.set(s, INVALID);
                self.repl.on_invalidate(s / self.ways, s % self.ways);
            }
        }
    }
}
