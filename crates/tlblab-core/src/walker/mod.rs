//! The page-table walker's page-walk caches (PWCs).
//!
//! A PWC for level L holds entries of page-table level L (root = 0): the pointer to the level-L+1
//! table for a VA prefix, tagged by address space. A hit lets the walk skip levels 0..=L and start
//! by reading level L+1 (Intel's PML4E/PDPTE/PDE caches; AMD's page-directory cache). The walk
//! itself — which entries are read and how each reference travels through the cache hierarchy —
//! is in `system`, because it needs the core's caches.

use crate::replacement::{Replacement, ReplacementKind};
use crate::tags::TagArray;
use lean::LeanPwc;

mod lean;
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
        if self.level.saturating_add(1) >= levels {
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
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct Pwc {
    pub config: PwcConfig,
    entries: Entries,
}

/// A page-walk cache's entries and replacement state, in one of two layouts.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
enum Entries {
    /// LRU, at most 16 ways, a power-of-two number of sets (lean.rs): every preset's.
    Lean(LeanPwc),
    /// Any policy and geometry.
    General(GeneralPwc),
}

impl Pwc {
    pub fn new(config: PwcConfig, seed: u64) -> Pwc {
        let ways = config.ways();
        let sets = config.entries / ways;
        let lean = LeanPwc::fits(sets, ways, config.replacement == ReplacementKind::Lru);
        Pwc::with_layout(config, seed, lean)
    }

    /// `new`, in the lean layout if `lean` (which the geometry and policy must allow), else in
    /// the general one (for tests that compare the two).
    fn with_layout(config: PwcConfig, seed: u64, lean: bool) -> Pwc {
        let ways = config.ways();
        let sets = config.entries / ways;
        let entries = if lean {
            Entries::Lean(LeanPwc::new(sets, ways))
        } else {
            Entries::General(GeneralPwc {
                repl: Replacement::new(
                    config.replacement,
                    sets,
                    ways,
                    seed ^ ((config.level as u64) << 48),
                ),
                sets,
                set_mask: sets.is_power_of_two().then(|| sets as u64 - 1),
                ways,
                keys: TagArray::new(sets * ways, INVALID),
                space: vec![0; sets * ways],
                node: vec![0; sets * ways],
            })
        };
        Pwc { config, entries }
    }

    /// The cached node for `prefix` (VA >> the level's shift) of address space `space`.
    #[inline]
    pub fn lookup(&mut self, space: u32, prefix: u64) -> Option<u32> {
        match &mut self.entries {
            Entries::Lean(l) => l.lookup(space, prefix),
            Entries::General(g) => g.lookup(space, prefix),
        }
    }

    /// Caches `node` for (`space`, `prefix`), refreshing an entry already there.
    #[inline]
    pub fn insert(&mut self, space: u32, prefix: u64, node: u32) {
        match &mut self.entries {
            Entries::Lean(l) => l.insert(space, prefix, node),
            Entries::General(g) => g.insert(space, prefix, node),
        }
    }

    /// `insert` right after `lookup` missed (`space`, `prefix`) with nothing in between
    /// touching this cache (a walk fills the levels it just looked up): the search for a copy
    /// to refresh is skipped, and a full set's victim is chosen and filled in one step.
    #[inline]
    pub(crate) fn insert_after_miss(&mut self, space: u32, prefix: u64, node: u32) {
        match &mut self.entries {
            Entries::Lean(l) => l.fill(space, prefix, node),
            Entries::General(g) => g.insert_after_miss(space, prefix, node),
        }
    }

    /// Drops every entry (e.g. on a full TLB flush without address-space tags).
    pub fn flush(&mut self) {
        match &mut self.entries {
            Entries::Lean(l) => l.flush_where(|_| true),
            Entries::General(g) => g.flush_where(|_| true),
        }
    }

    /// Drops the entries of one address space.
    pub fn flush_space(&mut self, space: u32) {
        match &mut self.entries {
            Entries::Lean(l) => l.flush_where(|s| s == space),
            Entries::General(g) => g.flush_where(|s| s == space),
        }
    }
}

/// The general layout: any policy, any geometry.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
struct GeneralPwc {
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

impl GeneralPwc {
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

    #[inline]
    fn lookup(&mut self, space: u32, prefix: u64) -> Option<u32> {
        let set = self.set_of(prefix);
        let w = self.find(set, space, prefix)?;
        self.repl.on_hit(set, w);
        Some(self.node[set * self.ways + w])
    }

    #[inline]
    fn insert(&mut self, space: u32, prefix: u64, node: u32) {
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

    #[inline]
    fn insert_after_miss(&mut self, space: u32, prefix: u64, node: u32) {
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

    /// Drops every entry for which `drop(space)` holds.
    fn flush_where(&mut self, drop: impl Fn(u32) -> bool) {
        for s in 0..self.keys.len() {
            if self.keys.get(s) != INVALID && drop(self.space[s]) {
                self.keys.set(s, INVALID);
                self.repl.on_invalidate(s / self.ways, s % self.ways);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(entries: usize, ways: usize) -> PwcConfig {
        PwcConfig {
            level: 1,
            entries,
            ways: Some(ways),
            latency: 1,
            replacement: ReplacementKind::Lru,
            source: String::new(),
        }
    }

    /// The lean layout answers every lookup as the general one does, whatever mix of lookups,
    /// refreshes, fills after misses and flushes (of everything or of one address space)
    /// reaches it, on every LRU geometry it takes.
    #[test]
    fn the_lean_layout_behaves_as_the_general_one() {
        let mut rng = tlblab_types::SplitMix64::new(5);
        for (entries, ways) in [(16, 16), (64, 4), (8, 2), (4, 1), (48, 12), (32, 16)] {
            let lean = Pwc::new(config(entries, ways), 1);
            assert!(matches!(lean.entries, Entries::Lean(_)), "{entries}/{ways}");
            let mut pair = [lean, Pwc::with_layout(config(entries, ways), 1, false)];
            let mut last = (0, 0);
            for step in 0..20_000 {
                // Half the operations are on the key of the one before: the lean layout's
                // memo of its last entry (walker/lean.rs) is then looked up and refreshed.
                let (space, prefix) = if rng.below(2) == 0 {
                    last
                } else {
                    (rng.below(3) as u32, rng.below(3 * entries as u64))
                };
                last = (space, prefix);
                let node = rng.next_u64() as u32;
                let what = format!("{entries}/{ways}, step {step}");
                match rng.below(40) {
                    0 => pair.iter_mut().for_each(|p| p.flush()),
                    1..=2 => pair.iter_mut().for_each(|p| p.flush_space(space)),
                    3..=10 => pair.iter_mut().for_each(|p| p.insert(space, prefix, node)),
                    _ => {
                        let [a, b] = &mut pair;
                        let found = a.lookup(space, prefix);
                        assert_eq!(found, b.lookup(space, prefix), "{what}");
                        if found.is_none() {
                            a.insert_after_miss(space, prefix, node);
                            b.insert_after_miss(space, prefix, node);
                        }
                    }
                }
            }
        }
    }
}
