//! Data/instruction caches: set-associative, physically indexed and tagged by default, or
//! virtually indexed and tagged (the StrongARM SA-1100's L1 caches, seed 002 §2), which must be
//! flushed when the address space changes unless something else (domains) keeps them apart.
//!
//! Caches are non-inclusive and write-allocate: a miss fills the line into every level that was
//! looked up. Latencies are load-to-use: a reference served by level k costs `latency` of level k
//! (not the sum of the levels above), which is how vendors quote them.

use crate::replacement::{Replacement, ReplacementKind};
use crate::tags::TagArray;
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
    #[serde(default)]
    pub source: String,
}

fn default_line() -> u64 {
    64
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
        let way_bytes = self.line * self.ways as u64;
        if self.size == 0 || !self.size.is_multiple_of(way_bytes) {
            return f(
                "size",
                format!(
                    "{} bytes is not a multiple of line × ways = {way_bytes}",
                    self.size
                ),
            );
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

const INVALID: u64 = u64::MAX;

/// What one access did to a cache level.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Outcome {
    Hit,
    /// A miss that filled an invalid way.
    Filled,
    /// A miss that replaced a valid line (an eviction; written back if it was dirty).
    Evicted,
}

/// One bit per slot.
#[derive(Clone, Debug)]
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

#[derive(Clone, Debug)]
pub struct Cache {
    pub config: CacheConfig,
    sets: u64,
    ways: usize,
    line_shift: u32,
    tags: TagArray,
    /// One dirty bit per slot (slot s is bit s % 64 of word s / 64). Bits, not a `Vec<bool>`:
    /// a simulated 32 MiB L3 keeps its dirty state in 64 KiB instead of 512 KiB, so a fill's
    /// dirty store stays in the host's L2 on a random footprint.
    dirty: DirtyBits,
    repl: Replacement,
    /// `sets - 1` when the number of sets is a power of two (a mask instead of a division).
    set_mask: Option<u64>,
    /// The line of the last access and its slot (`u64::MAX` = none). Exact, like the TLB memo:
    /// the last line touched is the most recently used of its set under every policy here, so
    /// touching it again changes no replacement state; `flush` clears it.
    memo_line: u64,
    memo_slot: usize,
    /// Slots holding no line. Lines only leave by `flush`, so once this is 0 every set is full
    /// and a miss needs no search for a free way: the set's keys are read only for a hit's
    /// fingerprint candidates (a random footprint keeps a large cache full, and the free-way
    /// check's false candidates cost a host cache miss on the keys each).
    empty_slots: usize,
    /// The sets that have received a line since the last flush (or since the start), each
    /// once: lines only leave by `flush` and a fill takes the lowest free way, so a set
    /// receives its first line exactly when a fill takes its free way 0. `flush` invalidates
    /// these sets only, all others being empty, so a flush costs the host what the cache
    /// held, not its size (the seed 000 migration benchmarks flush a zen3 L3 of 32 MiB holding
    /// a few dozen lines per iteration: 98% of their time was the full scans). Room for every
    /// set is reserved up front: a fill never allocates.
    filled_sets: Vec<u32>,
}

impl Cache {
    pub fn new(config: CacheConfig, seed: u64) -> Cache {
        let sets = config.sets();
        let ways = config.ways;
        let n = sets as usize * ways;
        Cache {
            line_shift: config.line.trailing_zeros(),
            repl: Replacement::new(
                config.replacement,
                sets as usize,
                ways,
                seed ^ ((config.level as u64) << 40),
            ),
            config,
            sets,
            ways,
            tags: TagArray::new(n, INVALID),
            dirty: DirtyBits::new(n),
            set_mask: sets.is_power_of_two().then(|| sets - 1),
            memo_line: INVALID,
            memo_slot: 0,
            empty_slots: n,
            filled_sets: Vec::with_capacity(sets as usize),
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
        let line = addr >> self.line_shift;
        if line == self.memo_line {
            self.dirty.mark(self.memo_slot, write);
            return Outcome::Hit;
        }
        self.access_line(line, write)
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
            self.dirty.mark(self.memo_slot, true);
        }
    }

    /// The set of `line` (a mask when the number of sets is a power of two).
    #[inline(always)]
    fn set_of(&self, line: u64) -> usize {
        match self.set_mask {
            Some(m) => (line & m) as usize,
            None => (line % self.sets) as usize,
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
            self.dirty.mark(self.memo_slot, write);
            return true;
        }
        let set = self.set_of(line);
        let base = set * self.ways;
        // A line is in at most one way: the first match is the one `access_line` finds.
        let found = if self.ways <= 64 {
            self.tags.first(base, self.ways, line)
        } else {
            self.find_wide(base, line)
        };
        let Some(w) = found else {
            return false;
        };
        self.repl.on_hit(set, w);
        self.dirty.mark(base + w, write);
        self.memo_line = line;
        self.memo_slot = base + w;
        true
    }

    // Inlined into `System::load`, its one caller on the hot path: the call cost ~20
    // instructions per level looked up (measured: -4% instructions per reference of a random
    // stream, full model, and -3% on the Lackey capture of `ls`).
    #[inline(always)]
    fn access_line(&mut self, line: u64, write: bool) -> Outcome {
        let set = self.set_of(line);
        let base = set * self.ways;
        let found = if self.empty_slots == 0 && self.ways <= 64 {
            self.tags.first(base, self.ways, line).ok_or(None)
        } else if self.ways <= 64 {
            self.tags.find_or_free(base, self.ways, line, INVALID)
        } else {
            self.find_wide(base, line)
                .ok_or_else(|| self.find_wide(base, INVALID))
        };
        let (w, outcome) = match found {
            Ok(w) => {
                self.repl.on_hit(set, w);
                self.dirty.mark(base + w, write);
                (w, Outcome::Hit)
            }
            Err(free) => {
                let w = self.repl.fill_way(set, free);
                self.tags.set(base + w, line);
                self.dirty.set(base + w, write);
                let outcome = if free.is_some() {
                    self.empty_slots -= 1;
                    if w == 0 {
                        self.filled_sets.push(set as u32);
                    }
                    Outcome::Filled
                } else {
                    Outcome::Evicted
                };
                (w, outcome)
            }
        };
        self.memo_line = line;
        self.memo_slot = base + w;
        outcome
    }

    /// Whether this level's state is large enough that its sets miss in the host's caches on
    /// a random footprint (tags over 1 MiB), so that `prefetch` pays.
    pub(crate) fn worth_prefetching(&self) -> bool {
        self.tags.len() * std::mem::size_of::<u64>() > 1 << 20
    }

    /// Asks the host to bring the state of `addr`'s set (tags, dirty bits, replacement order)
    /// into its caches ahead of an access. A hint to the host only: nothing simulated changes.
    #[inline(always)]
    pub(crate) fn prefetch(&self, addr: u64) {
        let line = addr >> self.line_shift;
        let set = self.set_of(line);
        let base = set * self.ways;
        self.tags.prefetch(base, self.ways);
        self.dirty.prefetch(base);
        self.repl.prefetch(set);
    }

    /// The first way of the set at `base` whose tag is `tag`, by a plain scan: for sets of
    /// more than 64 ways (smaller ones use `TagArray::find_or_free`).
    fn find_wide(&self, base: usize, tag: u64) -> Option<usize> {
        self.tags.as_slice()[base..base + self.ways]
            .iter()
            .position(|&t| t == tag)
    }

    /// Whether the line of `addr` is present, without changing state.
    pub fn contains(&self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        let base = (line % self.sets) as usize * self.ways;
        self.tags.as_slice()[base..base + self.ways].contains(&line)
    }

    /// Invalidates everything (writing back dirty lines) and returns the cycles it costs.
    pub fn flush(&mut self) -> u64 {
        self.memo_line = INVALID;
        self.empty_slots = self.tags.len();
        let mut valid = 0u64;
        let mut dirty = 0u64;
        // Only the sets that received lines hold any (`filled_sets`); each set's ways in
        // order, as a scan of every slot would meet them.
        for i in 0..self.filled_sets.len() {
            let set = self.filled_sets[i] as usize;
            for w in 0..self.ways {
                let slot = set * self.ways + w;
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
        }
        self.filled_sets.clear();
        self.config.flush_cycles_base
            + valid * self.config.flush_cycles_per_line
            + dirty * self.config.flush_cycles_per_dirty_line
    }

    pub fn valid_lines(&self) -> usize {
        self.tags.len() - self.empty_slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(size: u64, ways: usize) -> CacheConfig {
        CacheConfig {
            name: "L1".into(),
            level: 1,
            kind: CacheKind::Data,
            size,
            ways,
            line: 64,
            latency: 4,
            replacement: ReplacementKind::Lru,
            shared: false,
            indexing: Indexing::Physical,
            flush_cycles_base: 1000,
            flush_cycles_per_line: 2,
            flush_cycles_per_dirty_line: 10,
            source: String::new(),
        }
    }

    #[test]
    fn given_a_direct_mapped_cache_when_two_lines_share_a_set_then_they_evict_each_other() {
        let mut c = Cache::new(cfg(4096, 1), 0);
        assert!(!c.access(0, false));
        assert!(c.access(0, false));
        assert!(!c.access(4096, false));
        assert!(!c.access(0, false));
    }

    #[test]
    fn a_miss_into_a_full_set_is_an_eviction_and_a_flush_empties_the_set() {
        let mut c = Cache::new(cfg(128, 2), 0); // one set of two ways
        assert_eq!(c.access_counted(0, false), Outcome::Filled);
        assert_eq!(c.access_counted(64, false), Outcome::Filled);
        assert_eq!(
            c.access_counted(128, false),
            Outcome::Evicted,
            "evicts line 0 (LRU)"
        );
        assert_eq!(c.access_counted(64, false), Outcome::Hit);
        assert_eq!(
            c.access_counted(0, false),
            Outcome::Evicted,
            "evicts line 2"
        );
        c.flush();
        assert_eq!(c.access_counted(64, false), Outcome::Filled);
    }

    #[test]
    fn dirty_bits_of_neighbouring_slots_are_independent() {
        // 64 sets of 2 ways: slots 0..128 span two bit words.
        let mut c = Cache::new(cfg(64 * 128, 2), 0);
        for line in 0..128u64 {
            c.access(line * 64, line % 3 == 0);
        }
        // Each line is alone in its way of its set; 43 of the 128 were written.
        assert_eq!(c.flush(), 1000 + 128 * 2 + 43 * 10);
    }

    #[test]
    fn flush_cost_counts_valid_and_dirty_lines() {
        let mut c = Cache::new(cfg(4096, 2), 0);
        c.access(0, true);
        c.access(64, false);
        assert_eq!(c.flush(), 1000 + 2 * 2 + 10);
        assert_eq!(c.valid_lines(), 0);
    }

    #[test]
    fn the_line_of_the_last_access_misses_after_a_flush() {
        let mut c = Cache::new(cfg(4096, 2), 0);
        assert!(!c.access(128, true));
        assert!(
            c.access(136, false),
            "same line: a hit (through the last-line memo)"
        );
        c.flush();
        assert!(!c.access(136, false), "a flush empties the memo too");
        // A write hit through the memo still dirties the line: the flush pays for it.
        assert!(c.access(140, true));
        assert_eq!(c.flush(), 1000 + 2 + 10);
    }

    /// `flush` as it was before `filled_sets`: every slot scanned.
    fn flush_by_scan(c: &mut Cache) -> u64 {
        c.memo_line = INVALID;
        c.empty_slots = c.tags.len();
        c.filled_sets.clear();
        let (mut valid, mut dirty) = (0u64, 0u64);
        for slot in 0..c.tags.len() {
            if c.tags.get(slot) != INVALID {
                valid += 1;
                dirty += c.dirty.get(slot) as u64;
                c.tags.set(slot, INVALID);
                c.dirty.set(slot, false);
                c.repl.on_invalidate(slot / c.ways, slot % c.ways);
            }
        }
        c.config.flush_cycles_base
            + valid * c.config.flush_cycles_per_line
            + dirty * c.config.flush_cycles_per_dirty_line
    }

    #[test]
    fn a_flush_of_the_filled_sets_only_leaves_what_a_scan_of_every_slot_leaves() {
        // Every policy, a few geometries (up to 80 ways: the wide search), random lines over
        // a footprint from a few sets to many times the cache, flushes in between; after each
        // flush both caches cost the same and then answer every access the same way.
        let mut rng = tlblab_types::SplitMix64::new(7);
        for policy in [
            ReplacementKind::Lru,
            ReplacementKind::Plru,
            ReplacementKind::Fifo,
            ReplacementKind::Random,
        ] {
            for (size, ways) in [
                (4096u64, 2usize),
                (64 * 64 * 8, 8),
                (64 * 80 * 4, 80),
                (128, 1),
            ] {
                if policy == ReplacementKind::Plru && !ways.is_power_of_two() {
                    continue;
                }
                let mut config = cfg(size, ways);
                config.replacement = policy;
                let mut by_sets = Cache::new(config, 3);
                let mut by_scan = by_sets.clone();
                for round in 0..20 {
                    let lines = 1 + rng.below(4 * size / 64);
                    for _ in 0..rng.below(3 * size / 64 + 2) {
                        let addr = rng.below(lines) * 64;
                        let write = rng.below(3) == 0;
                        assert_eq!(
                            by_sets.access_counted(addr, write),
                            by_scan.access_counted(addr, write),
                            "{policy:?} {size}/{ways} round {round}"
                        );
                    }
                    assert_eq!(
                        by_sets.valid_lines(),
                        by_scan
                            .tags
                            .as_slice()
                            .iter()
                            .filter(|&&t| t != INVALID)
                            .count()
                    );
                    assert_eq!(
                        by_sets.flush(),
                        flush_by_scan(&mut by_scan),
                        "{policy:?} {size}/{ways}"
                    );
                    assert_eq!(by_sets.valid_lines(), 0);
                }
            }
        }
    }

    #[test]
    fn impossible_geometry_names_the_field() {
        let e = cfg(1000, 4).validate().unwrap_err();
        assert!(e.starts_with("cache[L1].size"), "{e}");
    }
}
