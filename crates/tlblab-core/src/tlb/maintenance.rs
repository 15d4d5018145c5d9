//! TLB maintenance: invalidation by address, ASID or all (flushes spare locked entries;
//! shootdowns do not), ARM domains, and lockdown's `lock`/`unlock` (seed 004 §III, Cortex-A9
//! TRM §6.2.2).

use super::*;

impl Tlb {
    /// Invalidates every unlocked translation of `va` (all sizes); `asid = None` matches any
    /// ASID. Returns how many entries were removed. O(sizes × ways).
    pub fn invalidate_va(&mut self, va: VirtAddr, asid: Option<Asid>) -> usize {
        self.invalidate_va_inner::<false>(va, asid)
    }

    /// `invalidate_va` for a shootdown of `va`'s range (munmap, mprotect): locked entries go
    /// too, unlocked first. A lock keeps an entry through replacement and flushes, not through
    /// the change of its own mapping (seed 004 §III; ARM's TLB invalidate by MVA). O(sizes × ways).
    pub fn shoot_down_va(&mut self, va: VirtAddr, asid: Option<Asid>) -> usize {
        self.invalidate_va_inner::<true>(va, asid)
    }

    /// Invalidates the entries visible to `req` of another page size than `size` whose pages
    /// overlap `va`'s page of `size`, locked ones too; returns how many. A lock calls it
    /// before it puts its translation in (`System::lock_page`): ARM's lockdown sequence
    /// invalidates the address before the load that locks it (the ARM926EJ-S CP15 c10 TLB
    /// lockdown sample sequence, e.g. the NS9750 Hardware Reference, R10: "invalidate TLB
    /// single entry to ensure that LockAddr is not already in the TLB"), and a larger page is
    /// put in only once the smaller ones it covers are gone (break-before-make), so no
    /// address is left with two translations. On a level
    /// without ASID tags another address space's entries of another page size would otherwise
    /// stay beside the locked one: a TLB conflict (docs/reference-model.md, "What it found").
    /// An entry of `size` itself is refreshed in place by the insert. O(entries).
    pub fn invalidate_overlapping(
        &mut self,
        va: VirtAddr,
        req: Requester,
        size: PageSize,
    ) -> usize {
        self.memo_slot = usize::MAX;
        let (lo, hi) = (va.0 & !(size.bytes() - 1), (va.0 | (size.bytes() - 1)));
        let mut n = 0;
        for slot in 0..self.keys.len() {
            if self.keys.get(slot) == INVALID || !self.tags_match(slot, req) {
                continue;
            }
            let e = self.entry_at(slot);
            let start = e.vpn.0 << e.size.shift();
            let end = start | (e.size.bytes() - 1);
            if e.size != size && start <= hi && lo <= end {
                if slot >= self.array_base {
                    self.array_clear(slot);
                    n += 1;
                    continue;
                }
                if self.payload[slot].locked {
                    self.payload[slot].locked = false;
                    self.locked_count -= 1;
                }
                self.invalidate_slot(slot);
                n += 1;
            }
        }
        n
    }

    fn invalidate_va_inner<const LOCKED: bool>(
        &mut self,
        va: VirtAddr,
        asid: Option<Asid>,
    ) -> usize {
        self.memo_slot = usize::MAX;
        let mut n = 0;
        for i in 0..self.sizes.len() {
            let (base, key) = self.set_of_va(i, va);
            for slot in base..base + self.ways {
                if self.keys.get(slot) == key
                    && (LOCKED || !self.payload[slot].locked)
                    && asid
                        .is_none_or(|a| self.payload[slot].global || self.payload[slot].asid == a)
                {
                    if self.payload[slot].locked {
                        self.payload[slot].locked = false;
                        self.locked_count -= 1;
                    }
                    self.invalidate_slot(slot);
                    n += 1;
                }
            }
        }
        // The array's entries: locked ones by a shootdown only; unlocked ones
        // (`array_holds_unlocked`) by either.
        if LOCKED || self.config.array_holds_unlocked {
            for slot in self.array_base..self.keys.len() {
                if self.array_translates(slot, va)
                    && (LOCKED || !self.payload[slot].locked)
                    && asid
                        .is_none_or(|a| self.payload[slot].global || self.payload[slot].asid == a)
                {
                    self.array_clear(slot);
                    n += 1;
                }
            }
        }
        n
    }

    /// Invalidates every unlocked, non-global entry of `asid`. O(entries).
    pub fn invalidate_asid(&mut self, asid: Asid) -> usize {
        self.invalidate_where(|t, s| !t.payload[s].global && t.payload[s].asid == asid)
    }

    /// Invalidates every non-global entry of `asid`, locked ones too (an address space's
    /// teardown, `System::exit_process`: ARM's TLBIASID(IS) "invalidates the locked entry when
    /// it matches", Cortex-A9 TRM DDI0388I Table 4-26 note b). O(entries).
    pub fn shoot_down_asid(&mut self, asid: Asid) -> usize {
        self.memo_slot = usize::MAX;
        let mut n = 0;
        for slot in 0..self.keys.len() {
            if self.keys.get(slot) == INVALID
                || self.payload[slot].global
                || self.payload[slot].asid != asid
            {
                continue;
            }
            if slot >= self.array_base {
                self.array_clear(slot);
            } else {
                if self.payload[slot].locked {
                    self.payload[slot].locked = false;
                    self.locked_count -= 1;
                }
                self.invalidate_slot(slot);
            }
            n += 1;
        }
        n
    }

    /// The domain of the entry a lookup of `va` for `req` would hit, without touching any
    /// state (seed 002's domain check, `System::reference_domains`).
    pub(crate) fn probe_domain(&self, va: VirtAddr, req: Requester) -> Option<Domain> {
        self.search(va, req)
            .map(|(slot, ..)| self.payload[slot].domain)
    }

    /// Tags the entry a lookup of `va` for `req` hits with `domain` (the CPD's, seed 002
    /// Fig. 1); false when there is none.
    pub(crate) fn set_domain(&mut self, va: VirtAddr, req: Requester, domain: Domain) -> bool {
        match self.search(va, req) {
            Some((slot, ..)) => {
                self.payload[slot].domain = domain;
                true
            }
            None => false,
        }
    }

    /// Whether the entry in `slot` is valid and tagged with `domain`.
    pub fn slot_in_domain(&self, slot: usize, domain: Domain) -> bool {
        self.keys.get(slot) != INVALID && self.payload[slot].domain == domain
    }

    /// Invalidates every unlocked entry (global ones too). O(entries).
    pub fn invalidate_all(&mut self) -> usize {
        self.invalidate_where(|_, _| true)
    }

    /// Invalidates unlocked entries for which `pred(self, slot)` holds. O(entries).
    pub fn invalidate_where(&mut self, pred: impl Fn(&Tlb, usize) -> bool) -> usize {
        self.memo_slot = usize::MAX;
        let mut n = 0;
        for slot in 0..self.keys.len() {
            if self.keys.get(slot) != INVALID && !self.payload[slot].locked && pred(self, slot) {
                // An unlocked entry of the lockable array (`array_holds_unlocked`) is in no set.
                if slot >= self.array_base {
                    self.array_clear(slot);
                } else {
                    self.invalidate_slot(slot);
                }
                n += 1;
            }
        }
        n
    }

    /// Locks the entry translating `va` for `req`, if present and a lock slot is free.
    /// Returns whether it is now locked. O(sizes × ways).
    pub fn lock(&mut self, va: VirtAddr, req: Requester) -> bool {
        self.memo_slot = usize::MAX;
        if self.config.lockable_array {
            // Locking moves the entry from its set into a free slot of the array (or one of an
            // unlocked entry, `array_lock_slot`); an unlocked entry of the array is locked in
            // place.
            if let Some((slot, ..)) = self.array_find(va, req) {
                if !self.payload[slot].locked {
                    self.payload[slot].locked = true;
                    self.locked_count += 1;
                }
                return true;
            }
            let (Some((slot, ..)), Some(free)) =
                (self.search_sets(va, req), self.array_lock_slot())
            else {
                return false;
            };
            let e = self.entry_at(slot);
            self.invalidate_slot(slot);
            if self.keys.get(free) != INVALID {
                self.array_clear(free);
            }
            self.array_put(free, &e, true);
            return true;
        }
        for i in 0..self.sizes.len() {
            let (base, key) = self.set_of_va(i, va);
            for slot in base..base + self.ways {
                if self.keys.get(slot) == key && self.tags_match(slot, req) {
                    if self.payload[slot].locked {
                        return true;
                    }
                    if self.locked_count >= self.config.lockable {
                        return false;
                    }
                    self.payload[slot].locked = true;
                    self.locked_count += 1;
                    return true;
                }
            }
        }
        false
    }

    /// Unlocks every locked entry translating `va` (the entry stays valid). O(sizes × ways).
    pub fn unlock(&mut self, va: VirtAddr) -> usize {
        self.memo_slot = usize::MAX;
        let mut n = 0;
        // An unlocked entry of the array moves into its set (filled there, unlocked), in
        // array slot order.
        for slot in self.array_base..self.keys.len() {
            if self.array_translates(slot, va) && self.payload[slot].locked {
                let mut e = self.entry_at(slot);
                e.locked = false;
                self.array_clear(slot);
                self.insert_reporting::<false, false>(e);
                n += 1;
            }
        }
        for i in 0..self.sizes.len() {
            let (base, key) = self.set_of_va(i, va);
            for slot in base..base + self.ways {
                if self.keys.get(slot) == key && self.payload[slot].locked {
                    self.payload[slot].locked = false;
                    self.locked_count -= 1;
                    n += 1;
                }
            }
        }
        n
    }

    /// Whether the entry in `slot` is global (matches every ASID).
    pub fn is_global(&self, slot: usize) -> bool {
        self.payload[slot].global
    }

    pub fn locked_count(&self) -> usize {
        self.locked_count
    }

    /// Where the level's `i`-th page size puts `va`'s page: the first slot of its set and the
    /// page's key. An entry translating `va` can be in these sets only (one per size), which
    /// is what every maintenance operation by address scans.
    fn set_of_va(&self, i: usize, va: VirtAddr) -> (usize, u64) {
        let size = self.sizes[i];
        let vpn = va.0 >> size.shift();
        (self.index.set_of(vpn) * self.ways, pack(vpn, size))
    }

    /// Whether slot `slot` of the lockable array holds a translation of `va` (of any size).
    fn array_translates(&self, slot: usize, va: VirtAddr) -> bool {
        let key = self.keys.get(slot);
        if key == INVALID {
            return false;
        }
        let size = PageSize::ALL[(key & 7) as usize];
        key == pack(va.0 >> size.shift(), size)
    }
}
