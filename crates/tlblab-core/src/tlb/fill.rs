//! Filling a TLB level: `probe` (no state changed), `insert`/`fill` and the fills after a
//! miss, each choosing its victim under the level's replacement policy and never a locked
//! entry (seed 004 §III); the lockable array of the Cortex-A9 (`array_insert`).

use super::*;

impl Tlb {
    /// Looks up without changing any state (for techniques and tests): the entry in
    /// `slot_of`'s slot.
    pub fn probe(&self, va: VirtAddr, req: Requester) -> Option<TlbEntry> {
        self.slot_of(va, req).map(|slot| self.entry_at(slot))
    }

    pub(super) fn entry_at(&self, slot: usize) -> TlbEntry {
        let key = self.keys.get(slot);
        let p = &self.payload[slot];
        TlbEntry {
            vpn: Vpn(key >> 3),
            size: PageSize::from_index((key & 7) as usize).unwrap(),
            pfn: p.pfn,
            asid: p.asid,
            vmid: p.vmid,
            global: p.global,
            domain: p.domain,
            hw_thread: p.hw_thread,
            locked: p.locked,
        }
    }

    /// Inserts a translation, evicting the replacement victim if the set is full. Returns the
    /// evicted entry, if any. If the same translation is already present it is refreshed in place.
    /// Does nothing (returns None) when the level does not hold `e.size` or every way of the set
    /// is locked. O(ways).
    pub fn insert(&mut self, e: TlbEntry) -> Option<TlbEntry> {
        self.insert_reporting::<true, false>(e).1
    }

    /// `insert` for the simulator's fills: says only whether an entry was evicted, without
    /// building it.
    #[inline]
    pub fn fill(&mut self, e: TlbEntry) -> bool {
        self.insert_reporting::<false, false>(e).0
    }

    /// `fill` right after a `lookup` by the same requester missed `e`'s page (nothing in
    /// between touched this level): the translation is known absent, so the search for a copy
    /// to refresh is skipped.
    #[inline]
    pub(crate) fn fill_after_miss(&mut self, e: TlbEntry) -> bool {
        self.insert_reporting::<false, true>(e).0
    }

    /// `fill_after_miss` that also returns the entry evicted, if any (the miss log's fills,
    /// `System::log_misses`): the same fill, the victim built from its slot before it is
    /// overwritten.
    pub(crate) fn fill_after_miss_reporting(&mut self, e: TlbEntry) -> Option<TlbEntry> {
        self.insert_reporting::<true, true>(e).1
    }

    /// `insert`, returning (whether an entry was evicted, the evicted entry if `REPORT`).
    /// `ABSENT`: the caller knows no entry holds the translation (see `fill_after_miss`).
    pub(super) fn insert_reporting<const REPORT: bool, const ABSENT: bool>(
        &mut self,
        e: TlbEntry,
    ) -> (bool, Option<TlbEntry>) {
        if !self.holds_size(e.size) {
            return (false, None);
        }
        self.memo_slot = usize::MAX;
        if self.config.lockable_array
            && (e.locked
                || (!ABSENT && (self.locked_count != 0 || self.config.array_holds_unlocked)))
        {
            if let Some(done) = self.array_insert(&e) {
                return (done, None);
            }
        }
        let key = pack(e.vpn.0, e.size);
        let set = self.index.set_of(e.vpn.0);
        let base = set * self.ways;
        let req = Requester {
            asid: e.asid,
            vmid: e.vmid,
            hw_thread: e.hw_thread,
        };
        // Same translation already present (e.g. a technique restoring what survived): refresh.
        let mut way = None;
        let mut m = if ABSENT || self.surely_absent(key) {
            0
        } else {
            self.keys.matches(base, self.ways.min(64), key)
        };
        while m != 0 {
            let w = m.trailing_zeros() as usize;
            m &= m - 1;
            if self.tags_match(base + w, req) {
                way = Some(w);
                break;
            }
        }
        if !ABSENT && way.is_none() && self.ways > 64 && !self.surely_absent(key) {
            way = (64..self.ways)
                .find(|&w| self.keys.get(base + w) == key && self.tags_match(base + w, req));
        }
        let mut evicted = (false, None);
        let mut filled = false;
        let w = match way {
            Some(w) => w,
            None if (self.set_valid[set] as usize) < self.ways => {
                let w = (0..self.ways)
                    .find(|&w| self.keys.get(base + w) == INVALID)
                    .expect("set not full");
                self.set_valid[set] += 1;
                self.count_size(e.size.index(), true);
                w
            }
            None if self.config.array_holds_unlocked && self.locked_count == 0 => {
                // The lockable array holds no lock, so it takes unlocked entries (Cortex-A9 TRM
                // DDI0388I §6.2.2): a free slot, else a victim drawn among the set's ways and
                // the array's slots (`TlbConfig::array_holds_unlocked`).
                if let Some(slot) = self.array_free_slot() {
                    self.array_put(slot, &e, false);
                    return (false, None);
                }
                let k = self.repl.random_draw(self.ways + self.config.lockable);
                if k >= self.ways {
                    let slot = self.array_base + (k - self.ways);
                    let old = REPORT.then(|| self.entry_at(slot));
                    self.array_clear(slot);
                    self.array_put(slot, &e, false);
                    return (true, old);
                }
                // Random replacement keeps no state: nothing to record of the fill.
                filled = true;
                self.count_size((self.keys.get(base + k) & 7) as usize, false);
                self.count_size(e.size.index(), true);
                evicted = (true, REPORT.then(|| self.entry_at(base + k)));
                k
            }
            None => {
                let w = if self.locked_count == 0 {
                    // The victim's choice and its fill in one step (one rotation for LRU).
                    filled = true;
                    self.repl.fill_victim(set)
                } else {
                    let mut any = false;
                    for (i, m) in self.mask_scratch.iter_mut().enumerate() {
                        *m = 0;
                        for b in 0..64 {
                            let w = i * 64 + b;
                            if w < self.ways && !self.payload[base + w].locked {
                                *m |= 1 << b;
                                any = true;
                            }
                        }
                    }
                    if !any {
                        return (false, None);
                    }
                    self.repl.victim(set, &self.mask_scratch)
                };
                self.count_size((self.keys.get(base + w) & 7) as usize, false);
                self.count_size(e.size.index(), true);
                evicted = (true, REPORT.then(|| self.entry_at(base + w)));
                w
            }
        };
        let slot = base + w;
        if !self.hint.is_empty() {
            self.point_hint(key, slot);
        }
        self.write_key(slot, key);
        if way.is_none() && !self.uses.is_empty() {
            // A new entry: its uses count from its fill (seed 000 §5.2's used bit is clear in
            // an entry just filled), not from the slot's last occupant's.
            self.uses[slot] = (0, 0);
        }
        let was_locked = self.payload[slot].locked;
        self.payload[slot] = Payload {
            locked: was_locked,
            ..Payload::locked_from(&e)
        };
        if was_locked && !e.locked {
            // Refreshing a locked entry keeps it locked.
        } else if e.locked
            && !was_locked
            && !self.config.lockable_array
            && self.locked_count < self.config.lockable
        {
            self.payload[slot].locked = true;
            self.locked_count += 1;
        }
        if !filled {
            self.repl.on_fill(set, w);
        }
        evicted
    }

    /// `insert` of `e` on a level with a lockable array, where the array decides it: a
    /// translation the array holds is refreshed there (staying locked); a locked `e` goes
    /// into a free array slot, out of its set if it was there. Some(whether an entry was
    /// evicted: never) when done; None: an ordinary fill of the sets (a locked `e` with the
    /// array full fills its set unlocked, as a lock with no lockable entry left does).
    fn array_insert(&mut self, e: &TlbEntry) -> Option<bool> {
        let req = Requester {
            asid: e.asid,
            vmid: e.vmid,
            hw_thread: e.hw_thread,
        };
        let va = VirtAddr(e.vpn.0 << e.size.shift());
        let key = pack(e.vpn.0, e.size);
        if let Some((slot, ..)) = self.array_find(va, req).filter(|&(_, k, _)| k == key) {
            // A refresh keeps a lock; an unlocked entry (`array_holds_unlocked`) is locked by a
            // locked `e`.
            let locked = self.payload[slot].locked || e.locked;
            self.locked_count += (locked && !self.payload[slot].locked) as usize;
            self.payload[slot] = Payload {
                locked,
                ..Payload::locked_from(e)
            };
            return Some(false);
        }
        if !e.locked {
            return None;
        }
        let slot = self.array_lock_slot()?;
        // A lock over an unlocked entry of the array replaces it.
        let replaced = self.keys.get(slot) != INVALID;
        if replaced {
            self.array_clear(slot);
        }
        // The same translation in its set moves into the array.
        let base = self.index.set_of(e.vpn.0) * self.ways;
        if let Some(in_set) =
            (base..base + self.ways).find(|&s| self.keys.get(s) == key && self.tags_match(s, req))
        {
            self.invalidate_slot(in_set);
        }
        self.array_put(slot, e, true);
        Some(replaced)
    }

    pub(super) fn invalidate_slot(&mut self, slot: usize) {
        let (set, way) = (slot / self.ways, slot % self.ways);
        self.count_size((self.keys.get(slot) & 7) as usize, false);
        self.set_valid[set] -= 1;
        self.write_key(slot, INVALID);
        // LRU keeps a set's invalid ways its oldest (`forget` moves the way there), in
        // ascending order from the oldest: the lower invalid ways of the set go behind it
        // again, highest first. The general fill takes the lowest invalid way and never asks
        // the order while the set has room, so this changes nothing it does; it lets the fast
        // lane's pair loops fill a set with room as they fill a full one, with its oldest way
        // (`fills_oldest_first`). O(ways) per invalidation.
        self.repl.on_invalidate(set, way);
        if matches!(self.repl, Replacement::Lru(_)) {
            let base = set * self.ways;
            for lower in (0..way).rev() {
                if self.keys.get(base + lower) == INVALID {
                    self.repl.on_invalidate(set, lower);
                }
            }
        }
    }

    /// A fill of a set with room takes the set's oldest way, as the fill of a full set does:
    /// under LRU, whose invalid ways are always the oldest, the lowest of them the oldest
    /// (`invalidate_slot`), and the general fill takes the lowest. Then the fast lane's pair
    /// loops need not wait for the level to fill (tlb/pair/).
    pub(crate) fn fills_oldest_first(&self) -> bool {
        matches!(self.repl, Replacement::Lru(_))
    }
}
