//! Looking at a TLB level from outside the lookups: the bookkeeping check (tests), per-entry
//! use counts (`tlblab profile`, miss logs), and iterating its entries.

use super::*;

impl Tlb {
    /// Checks the bookkeeping kept beside the entries against the entries themselves: the
    /// valid ways per set, the entries per page size, the `present` counts. For tests: the
    /// fast paths keep these in step by hand, and a wrong count may only show much later
    /// (an overcounted `present` bucket, say, only costs searches until it wraps).
    pub fn check_bookkeeping(&self) -> Result<(), String> {
        let keys = self.keys.as_slice();
        for set in 0..self.sets {
            let valid = keys[set * self.ways..(set + 1) * self.ways]
                .iter()
                .filter(|&&k| k != INVALID)
                .count();
            if valid != self.set_valid[set] as usize {
                return Err(format!(
                    "{}: set {set} has {valid} valid ways, counted {}",
                    self.config.name, self.set_valid[set]
                ));
            }
        }
        let mut by_size = [0u32; 6];
        let mut present = vec![0u16; self.present.len()];
        for &k in keys.iter().filter(|&&k| k != INVALID) {
            by_size[(k & 7) as usize] += 1;
            if !present.is_empty() {
                present[present_hash(k) & self.present_mask] += 1;
            }
        }
        if by_size != self.size_count {
            return Err(format!(
                "{}: entries per page size {by_size:?}, counted {:?}",
                self.config.name, self.size_count
            ));
        }
        if present != self.present {
            return Err(format!(
                "{}: present counts differ from the keys",
                self.config.name
            ));
        }
        let locked = (0..keys.len())
            .filter(|&s| keys[s] != INVALID && self.payload[s].locked)
            .count();
        if locked != self.locked_count {
            return Err(format!(
                "{}: {locked} entries locked, counted {}",
                self.config.name, self.locked_count
            ));
        }
        Ok(())
    }

    /// Starts counting the uses of each entry (`uses`), for a technique that filters by them
    /// (seed 000 §5.2's used bit). Every lookup must then reach the general path, where the
    /// counting is: the hint table goes (it only ever sped searches up) and the last-hit memo
    /// is forgotten, and `System::reference_full` forgets it after each hit it counts.
    pub fn track_use(&mut self) {
        if self.uses.is_empty() {
            self.uses = vec![(0, 0); self.keys.len()];
        }
        self.hint = Vec::new();
        self.hint_mask = 0;
        self.memo_slot = usize::MAX;
    }

    /// Whether `track_use` is on.
    pub fn tracks_use(&self) -> bool {
        !self.uses.is_empty()
    }

    /// Counts a use of the entry in `slot` at reference `now` (use tracking on), and forgets
    /// the memo so that the next access to it is counted too.
    pub(crate) fn count_use(&mut self, slot: usize, now: u64) {
        let u = &mut self.uses[slot];
        u.0 = u.0.saturating_add(1);
        u.1 = now;
        self.memo_slot = usize::MAX;
    }

    /// (uses since filled or cleared, reference count at the last use) of `slot`; (0, 0)
    /// without use tracking.
    pub fn uses_of(&self, slot: usize) -> (u32, u64) {
        self.uses.get(slot).copied().unwrap_or((0, 0))
    }

    /// Clears the use count of `slot` (a technique's own fill, or a save that read it), and
    /// forgets the memo: a technique's `lookup` (a preload's) may have pointed it at the slot,
    /// and the next access to the entry must reach the general path to be counted.
    pub fn clear_uses(&mut self, slot: usize) {
        if let Some(u) = self.uses.get_mut(slot) {
            *u = (0, 0);
            self.memo_slot = usize::MAX;
        }
    }

    /// The slot holding the translation of `va` for `req`, without changing any state.
    pub fn slot_of(&self, va: VirtAddr, req: Requester) -> Option<usize> {
        for &size in &self.sizes {
            let vpn = va.0 >> size.shift();
            let key = pack(vpn, size);
            let base = self.index.set_of(vpn) * self.ways;
            for slot in base..base + self.ways {
                if self.keys.get(slot) == key && self.tags_match(slot, req) {
                    return Some(slot);
                }
            }
        }
        self.array_find(va, req).map(|(slot, ..)| slot)
    }

    /// Every valid entry with its slot, in slot order (a TLB read interface, seed 000 §3.3).
    pub fn entries_with_slots(&self) -> impl Iterator<Item = (usize, TlbEntry)> + '_ {
        (0..self.keys.len())
            .filter(|&s| self.keys.get(s) != INVALID)
            .map(|s| (s, self.entry_at(s)))
    }

    /// Every valid entry with its slot, set by set, each set's most recently used first under
    /// LRU (in slot order under other policies): the order of a table kept in recency order, as
    /// gem5's ARM TLB keeps its (`insert` puts an entry at index 0, a hit moves it there: gem5
    /// src/arch/arm/tlb.cc), read by index.
    pub fn entries_newest_first(&self) -> Vec<(usize, TlbEntry)> {
        let Some(order) = self.repl.lru_order_ref() else {
            return self.entries_with_slots().collect();
        };
        let mut out = Vec::new();
        for set in 0..self.sets {
            for way in order.newest_first(set) {
                let s = set * self.ways + way;
                if self.keys.get(s) != INVALID {
                    out.push((s, self.entry_at(s)));
                }
            }
        }
        out.extend(
            (self.array_base..self.keys.len())
                .filter(|&s| self.keys.get(s) != INVALID)
                .map(|s| (s, self.entry_at(s))),
        );
        out
    }

    /// The number of slots (entries) of the level.
    pub fn capacity(&self) -> usize {
        self.keys.len()
    }

    /// Every valid entry, in slot order.
    pub fn entries(&self) -> impl Iterator<Item = TlbEntry> + '_ {
        (0..self.keys.len())
            .filter(|&s| self.keys.get(s) != INVALID)
            .map(|s| self.entry_at(s))
    }

    pub fn valid_count(&self) -> usize {
        self.keys
            .as_slice()
            .iter()
            .filter(|&&k| k != INVALID)
            .count()
    }
}
