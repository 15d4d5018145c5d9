//! Data/instruction caches: set-associative, physically indexed and tagged by default, or
//! virtually indexed and tagged (the StrongARM SA-1100's L1 caches, seed 002 §2), which must be
//! flushed when the address space changes unless something else (domains) keeps them apart.
//!
//! Caches are non-inclusive and write-allocate: a miss fills the line into every level that was
//! looked up. Latencies are load-to-use: a reference served by level k costs `latency` of level k
//! (not the sum of the levels above), which is how vendors quote them.

mod config;
mod lean;
pub mod prefetch;
#[cfg(test)]
mod tests;

pub use config::*;

use crate::replacement::{Replacement, ReplacementKind};
use crate::tags::TagArray;
use lean::LeanSets;

const INVALID: u64 = u64::MAX;

/// What one access did to a cache level.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Outcome {
    Hit,
    /// A miss that filled an invalid way.
    Filled,
    /// A miss that replaced a valid line (an eviction; written back if it was dirty).
    Evicted,
}

/// One bit per slot.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
struct DirtyBits(Vec<u64>);

impl DirtyBits {
    fn new(slots: usize) -> DirtyBits {
        DirtyBits(vec![0; slots.div_ceil(64)])
    }

    #[inline(always)]
    fn get(&self, slot: usize) -> bool {
        self.0[slot / 64] >> (slot % 64) & 1 == 1
    }

    /// Sets the bit of `slot` to `dirty`. (Branches on `dirty`, which is nearly always the
    /// same from one access to the next, rather than merging it into the word: measured, 8
    /// fewer instructions per fill.)
    #[inline(always)]
    fn set(&mut self, slot: usize, dirty: bool) {
        let (w, bit) = (&mut self.0[slot / 64], 1u64 << (slot % 64));
        if dirty {
            *w |= bit;
        } else {
            *w &= !bit;
        }
    }

    /// Sets the bit of `slot` if `write` (a hit by a store dirties the line, a load leaves it
    /// and writes nothing).
    #[inline(always)]
    fn mark(&mut self, slot: usize, write: bool) {
        if write {
            self.0[slot / 64] |= 1 << (slot % 64);
        }
    }

    #[inline(always)]
    fn prefetch(&self, slot: usize) {
        crate::simd::prefetch(&self.0[slot / 64]);
    }
}

/// A cache's lines, dirty bits and replacement state, in one of two layouts.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
enum Lines {
    /// LRU, at most 16 ways, a power-of-two number of sets: each set's state in one place
    /// (lean.rs), the layout of nearly every cache, which the hot path takes without
    /// dispatching on the policy.
    Lean(LeanSets),
    /// Any policy and geometry.
    General(GeneralLines),
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
struct GeneralLines {
    tags: TagArray,
    /// One dirty bit per slot (slot s is bit s % 64 of word s / 64). Bits, not a `Vec<bool>`:
    /// a simulated 32 MiB L3 keeps its dirty state in 64 KiB instead of 512 KiB, so a fill's
    /// dirty store stays in the host's L2 on a random footprint.
    dirty: DirtyBits,
    repl: Replacement,
    /// `sets - 1` when the number of sets is a power of two (a mask instead of a division).
    set_mask: Option<u64>,
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct Cache {
    pub config: CacheConfig,
    sets: u64,
    ways: usize,
    line_shift: u32,
    lines: Lines,
    /// Slots in all (sets × ways).
    slots: usize,
    /// The line of the last access and its slot (`u64::MAX` = none; the slot as the layout
    /// names it: set × ways + way in the general one, `lean::slot` in the lean one). Exact, like the TLB memo:
    /// the last line touched is the most recently used of its set under every policy here, so
    /// touching it again changes no replacement state; `flush` clears it.
    memo_line: u64,
    memo_slot: usize,
    /// Slots holding no line. Lines only leave by `flush` and `flush_range` (which count them
    /// back), so once this is 0 every set is full
    /// and a miss needs no search for a free way: the set's keys are read only for a hit's
    /// fingerprint candidates (a random footprint keeps a large cache full, and the free-way
    /// check's false candidates cost a host cache miss on the keys each).
    empty_slots: usize,
    /// The sets that have received a line since the last flush (or since the start), each
    /// once: lines only leave by `flush` and a fill takes the lowest free way, so a set
    /// receives its first line exactly when a fill takes its free way 0. `flush` invalidates
    /// these sets only, all others being empty, so a flush costs the host what the cache
    /// held, not its size (the seed 000 migration benchmarks flush a zen3 L3 of 32 MiB holding
    /// a few dozen lines per iteration: 98% of their time was the full scans). A `flush_range`
    /// that empties way 0 of a set lets a later fill list the set again: `flush_range`
    /// removes such repeats before it invalidates, so at most one range's worth (a set each)
    /// is ever listed twice. Room for every set twice is reserved up front: a fill never
    /// allocates.
    filled_sets: Vec<u32>,
}

impl Cache {
    pub fn new(config: CacheConfig, seed: u64) -> Cache {
        let lean = LeanSets::fits(
            config.sets() as usize,
            config.ways,
            config.replacement == ReplacementKind::Lru,
        );
        Cache::with_layout(config, seed, lean)
    }

    /// `new`, in the lean layout if `lean` (which the geometry and policy must allow), else in
    /// the general one (for tests that compare the two).
    fn with_layout(config: CacheConfig, seed: u64, lean: bool) -> Cache {
        let sets = config.sets();
        let ways = config.ways;
        let n = sets as usize * ways;
        let lines = if lean {
            Lines::Lean(LeanSets::new(sets as usize, ways))
        } else {
            Lines::General(GeneralLines {
                tags: TagArray::new(n, INVALID),
                dirty: DirtyBits::new(n),
                repl: Replacement::new(
                    config.replacement,
                    sets as usize,
                    ways,
                    seed ^ ((config.level as u64) << 40),
                ),
                set_mask: sets.is_power_of_two().then(|| sets - 1),
            })
        };
        Cache {
            line_shift: config.line.trailing_zeros(),
            config,
            sets,
            ways,
            lines,
            slots: n,
            memo_line: INVALID,
            memo_slot: 0,
            empty_slots: n,
            filled_sets: Vec::with_capacity(2 * sets as usize),
        }
    }

    pub fn is_virtual(&self) -> bool {
        self.config.indexing == Indexing::Virtual
    }

    /// Looks up the line of `addr`; fills it on a miss. Returns whether it hit. O(ways), O(1)
    /// when it is the line of the previous access.
    #[inline]
    pub fn access(&mut self, addr: u64, write: bool) -> bool {
        self.access_counted(addr, write) == Outcome::Hit
    }

    /// `access`, telling a miss that filled a free way from one that evicted a valid line
    /// (`LevelStats::evictions` of a cache level).
    #[inline(always)]
    pub(crate) fn access_counted(&mut self, addr: u64, write: bool) -> Outcome {
        self.access_line::<false>(addr, write).0
    }

    /// `access_counted`, and the address of the line an eviction replaced if that line was
    /// dirty (a writeback, `System::load_writing_back`).
    #[inline(always)]
    pub(crate) fn access_victim(&mut self, addr: u64, write: bool) -> (Outcome, Option<u64>) {
        let (outcome, victim) = self.access_line::<true>(addr, write);
        (
            outcome,
            (victim != INVALID).then_some(victim << self.line_shift),
        )
    }

    /// `access_counted`; with `VICTIM`, also the line (not its address) an eviction replaced
    /// if it was dirty, else `INVALID` (always `INVALID` without `VICTIM`, at no cost).
    #[inline(always)]
    fn access_line<const VICTIM: bool>(&mut self, addr: u64, write: bool) -> (Outcome, u64) {
        let line = addr >> self.line_shift;
        if line == self.memo_line {
            self.mark_memo(write);
            return (Outcome::Hit, INVALID);
        }
        let (outcome, set, w, slot, victim) = match &mut self.lines {
            Lines::Lean(l) => {
                let (outcome, set, w, victim) = l.access::<VICTIM>(line, write);
                (outcome, set, w, LeanSets::slot(set, w), victim)
            }
            Lines::General(g) => {
                let full = self.empty_slots == 0;
                g.access::<VICTIM>(line, write, full, self.sets, self.ways)
            }
        };
        if outcome == Outcome::Filled {
            self.empty_slots -= 1;
            if w == 0 {
                self.filled_sets.push(set as u32);
            }
        }
        self.memo_line = line;
        self.memo_slot = slot;
        (outcome, victim)
    }

    /// Marks the line of `addr` dirty if this level holds it, and says whether it did: a
    /// dirty line the level above evicted is written back here (`System::load_writing_back`).
    /// No allocation and no replacement-state change (a writeback is not a use), the memo
    /// unchanged.
    pub(crate) fn mark_dirty_if_present(&mut self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        match &mut self.lines {
            Lines::Lean(l) => l.mark_if_present(line),
            Lines::General(g) => {
                let base = g.set_of(line, self.sets) * self.ways;
                match (0..self.ways).find(|&w| g.tags.get(base + w) == line) {
                    Some(w) => {
                        g.dirty.set(base + w, true);
                        true
                    }
                    None => false,
                }
            }
        }
    }

    /// Marks the memo's line dirty if `write`.
    #[inline(always)]
    fn mark_memo(&mut self, write: bool) {
        match &mut self.lines {
            Lines::Lean(l) => l.mark(self.memo_slot, write),
            Lines::General(g) => g.dirty.mark(self.memo_slot, write),
        }
    }

    /// The line of the previous access (the one `access` hits without a search), if any, and
    /// log2 of the line size: for the system's memo lane.
    #[inline]
    pub(crate) fn memo_line(&self) -> (Option<u64>, u32) {
        (
            (self.memo_line != INVALID).then_some(self.memo_line),
            self.line_shift,
        )
    }

    /// What `access(addr, true)` does to a line that is the memo: marks it dirty.
    #[inline]
    pub(crate) fn write_memo_line(&mut self) {
        if self.memo_line != INVALID {
            self.mark_memo(true);
        }
    }

    /// `access(addr, write)` for a line the level holds: its effects (replacement, dirty bit,
    /// memo), and true; for any other line, false and nothing changed (the caller then makes
    /// the access that misses). For the memo lane (system/lane.rs), whose first-level data
    /// accesses mostly hit: a hit is then a few instructions instead of `System::load`'s walk
    /// down the cache path.
    #[inline(always)]
    pub(crate) fn access_if_present(&mut self, addr: u64, write: bool) -> bool {
        let line = addr >> self.line_shift;
        if line == self.memo_line {
            self.mark_memo(write);
            return true;
        }
        let slot = match &mut self.lines {
            Lines::Lean(l) => l
                .access_if_present(line, write)
                .map(|(set, w)| LeanSets::slot(set, w)),
            Lines::General(g) => g.access_if_present(line, write, self.sets, self.ways),
        };
        let Some(slot) = slot else {
            return false;
        };
        self.memo_line = line;
        self.memo_slot = slot;
        true
    }

    /// Whether this level's state is large enough that its sets miss in the host's caches on
    /// a random footprint (tags over 1 MiB), so that `prefetch` pays.
    pub(crate) fn worth_prefetching(&self) -> bool {
        self.slots * std::mem::size_of::<u64>() > 1 << 20
    }

    /// Asks the host to bring the state of `addr`'s set (tags, dirty bits, replacement order)
    /// into its caches ahead of an access. A hint to the host only: nothing simulated changes.
    #[inline(always)]
    pub(crate) fn prefetch(&self, addr: u64) {
        let line = addr >> self.line_shift;
        match &self.lines {
            Lines::Lean(l) => l.prefetch(line),
            Lines::General(g) => {
                let set = g.set_of(line, self.sets);
                let base = set * self.ways;
                g.tags.prefetch(base, self.ways);
                g.dirty.prefetch(base);
                g.repl.prefetch(set);
            }
        }
    }

    /// Whether the line of `addr` is present, without changing state.
    pub fn contains(&self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        match &self.lines {
            Lines::Lean(l) => l.contains(line),
            Lines::General(g) => {
                let base = (line % self.sets) as usize * self.ways;
                g.tags.as_slice()[base..base + self.ways].contains(&line)
            }
        }
    }

    /// Invalidates everything (writing back dirty lines) and returns the cycles it costs.
    pub fn flush(&mut self) -> u64 {
        self.flush_counted().0
    }

    /// `flush`: (the cycles it costs, the dirty lines it wrote back).
    pub(crate) fn flush_counted(&mut self) -> (u64, u64) {
        self.memo_line = INVALID;
        self.empty_slots = self.slots;
        let mut valid = 0u64;
        let mut dirty = 0u64;
        // Only the sets that received lines hold any (`filled_sets`).
        for i in 0..self.filled_sets.len() {
            let set = self.filled_sets[i] as usize;
            let (v, d) = match &mut self.lines {
                Lines::Lean(l) => l.flush_set(set),
                Lines::General(g) => g.flush_set(set, self.ways),
            };
            valid += v;
            dirty += d;
        }
        self.filled_sets.clear();
        let cycles = self.config.flush_cycles_base
            + valid * self.config.flush_cycles_per_line
            + dirty * self.config.flush_cycles_per_dirty_line;
        (cycles, dirty)
    }

    /// Cleans and invalidates the lines of `start..start+len` (addresses as the cache is
    /// indexed), one line address at a time; returns the cycles: `range_flush_cycles_per_line`
    /// per line of the range, `flush_cycles_per_dirty_line` per dirty line written back.
    pub fn flush_range(&mut self, start: u64, len: u64) -> u64 {
        self.flush_range_counted(start, len).0
    }

    /// `flush_range`: (the cycles it costs, the dirty lines it wrote back).
    pub(crate) fn flush_range_counted(&mut self, start: u64, len: u64) -> (u64, u64) {
        if len == 0 {
            return (0, 0);
        }
        // Repeats from the previous range's way-0 invalidations (`filled_sets`), in place.
        self.filled_sets.sort_unstable();
        self.filled_sets.dedup();
        let first = start >> self.line_shift;
        let last = start.saturating_add(len - 1) >> self.line_shift;
        let mut dirty = 0u64;
        for line in first..=last {
            if let Some(d) = self.invalidate_line(line) {
                dirty += d as u64;
            }
        }
        let cycles = (last - first + 1) * self.config.range_flush_cycles_per_line
            + dirty * self.config.flush_cycles_per_dirty_line;
        (cycles, dirty)
    }

    /// Invalidates `line` if present: Some(whether it was dirty). The way becomes the set's
    /// next to fill among its invalid ones as a flush leaves them (lowest invalid way first).
    fn invalidate_line(&mut self, line: u64) -> Option<bool> {
        let (sets, ways) = (self.sets, self.ways);
        let dirty = match &mut self.lines {
            Lines::Lean(l) => l.invalidate(line)?,
            Lines::General(g) => {
                let set = g.set_of(line, sets);
                let base = set * ways;
                let w = (0..ways).find(|&w| g.tags.get(base + w) == line)?;
                let d = g.dirty.get(base + w);
                g.tags.set(base + w, INVALID);
                g.dirty.set(base + w, false);
                g.repl.on_invalidate(set, w);
                d
            }
        };
        if self.memo_line == line {
            self.memo_line = INVALID;
        }
        self.empty_slots += 1;
        Some(dirty)
    }

    pub fn valid_lines(&self) -> usize {
        self.slots - self.empty_slots
    }
}

impl GeneralLines {
    /// The set of `line` (a mask when the number of sets is a power of two).
    #[inline(always)]
    fn set_of(&self, line: u64, sets: u64) -> usize {
        match self.set_mask {
            Some(m) => (line & m) as usize,
            None => (line % sets) as usize,
        }
    }

    /// `LeanSets::access` in this layout, under any policy: (what happened, the set, the way,
    /// the slot).
    // Inlined into `System::load`, its one caller on the hot path: the call cost ~20
    // instructions per level looked up (measured: -4% instructions per reference of a random
    // stream, full model, and -3% on the Lackey capture of `ls`).
    #[inline(always)]
    fn access<const VICTIM: bool>(
        &mut self,
        line: u64,
        write: bool,
        full: bool,
        sets: u64,
        ways: usize,
    ) -> (Outcome, usize, usize, usize, u64) {
        let set = self.set_of(line, sets);
        let base = set * ways;
        let found = if full && ways <= 64 {
            self.tags.first(base, ways, line).ok_or(None)
        } else if ways <= 64 {
            self.tags.find_or_free(base, ways, line, INVALID)
        } else {
            self.find_wide(base, ways, line)
                .ok_or_else(|| self.find_wide(base, ways, INVALID))
        };
        match found {
            Ok(w) => {
                self.repl.on_hit(set, w);
                self.dirty.mark(base + w, write);
                (Outcome::Hit, set, w, base + w, INVALID)
            }
            Err(free) => {
                let w = self.repl.fill_way(set, free);
                // An invalid way's dirty bit is clear: only a valid dirty line is a victim.
                let victim = if VICTIM && self.dirty.get(base + w) {
                    self.tags.get(base + w)
                } else {
                    INVALID
                };
                self.tags.set(base + w, line);
                self.dirty.set(base + w, write);
                let outcome = match free {
                    Some(_) => Outcome::Filled,
                    None => Outcome::Evicted,
                };
                (outcome, set, w, base + w, victim)
            }
        }
    }

    /// `LeanSets::access_if_present` in this layout: the slot of a hit.
    #[inline(always)]
    fn access_if_present(
        &mut self,
        line: u64,
        write: bool,
        sets: u64,
        ways: usize,
    ) -> Option<usize> {
        let set = self.set_of(line, sets);
        let base = set * ways;
        // A line is in at most one way: the first match is the one `access` finds.
        let w = if ways <= 64 {
            self.tags.first(base, ways, line)
        } else {
            self.find_wide(base, ways, line)
        }?;
        self.repl.on_hit(set, w);
        self.dirty.mark(base + w, write);
        Some(base + w)
    }

    /// The first way of the set at `base` whose tag is `tag`, by a plain scan: for sets of
    /// more than 64 ways (smaller ones use `TagArray::find_or_free`).
    fn find_wide(&self, base: usize, ways: usize, tag: u64) -> Option<usize> {
        self.tags.as_slice()[base..base + ways]
            .iter()
            .position(|&t| t == tag)
    }

    /// Invalidates set `set`, its ways in order: (valid lines, dirty lines) it held.
    fn flush_set(&mut self, set: usize, ways: usize) -> (u64, u64) {
        let (mut valid, mut dirty) = (0, 0);
        for w in 0..ways {
            let slot = set * ways + w;
            if self.tags.get(slot) != INVALID {
                valid += 1;
                if self.dirty.get(slot) {
                    dirty += 1;
                }
                self.tags.set(slot, INVALID);
                self.dirty.set(slot, false);
                self.repl.on_invalidate(set, w);
            }
        }
        (valid, dirty)
    }
}
