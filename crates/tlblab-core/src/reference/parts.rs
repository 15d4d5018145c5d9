//! The reference's structures: a set-associative store with naive replacement bookkeeping
//! (each set a `Vec` of slots and a `Vec` of ways in recency order), and on it the TLB levels,
//! caches and page-walk caches. A lookup is a linear search.

use crate::replacement::ReplacementKind;
use crate::tlb::IndexFn;
use tlblab_types::{PageSize, SplitMix64};

/// A set-associative store with naive replacement bookkeeping.
pub(super) struct NaiveSets<K: PartialEq + Clone> {
    pub(super) ways: usize,
    /// Per set: slots (None = invalid).
    pub(super) slots: Vec<Vec<Option<K>>>,
    /// Per set: valid ways in recency order, most recent last (LRU) or fill order, newest
    /// last (FIFO).
    order: Vec<Vec<usize>>,
    /// Per set: tree-PLRU bits, node 1.. (true = victim in upper half).
    plru: Vec<Vec<bool>>,
    kind: ReplacementKind,
    rng: SplitMix64,
}

impl<K: PartialEq + Clone> NaiveSets<K> {
    pub(super) fn new(sets: usize, ways: usize, kind: ReplacementKind, seed: u64) -> Self {
        NaiveSets {
            ways,
            slots: vec![vec![None; ways]; sets],
            order: vec![Vec::new(); sets],
            plru: vec![vec![false; ways.max(2)]; sets],
            kind,
            rng: SplitMix64::derive(seed, "replacement.random"),
        }
    }

    /// The valid ways of `set` most recently used first under LRU, else in way order (the order
    /// a table kept by recency is read in by index: gem5's ARM TLB, seed 000's interfaces).
    pub(super) fn valid_ways_newest_first(&self, set: usize) -> Vec<usize> {
        if self.kind == ReplacementKind::Lru {
            self.order[set].iter().rev().copied().collect()
        } else {
            (0..self.ways)
                .filter(|&w| self.slots[set][w].is_some())
                .collect()
        }
    }

    pub(super) fn touch(&mut self, set: usize, way: usize, fill: bool) {
        match self.kind {
            ReplacementKind::Lru => {
                self.order[set].retain(|&w| w != way);
                self.order[set].push(way);
            }
            ReplacementKind::Fifo if fill => {
                self.order[set].retain(|&w| w != way);
                self.order[set].push(way);
            }
            ReplacementKind::Plru => {
                // Walk the implicit tree from the root, pointing each node away from `way`.
                let (mut node, mut lo, mut hi) = (1, 0, self.ways);
                while hi - lo > 1 {
                    let mid = (lo + hi) / 2;
                    if way < mid {
                        self.plru[set][node] = true;
                        node *= 2;
                        hi = mid;
                    } else {
                        self.plru[set][node] = false;
                        node = node * 2 + 1;
                        lo = mid;
                    }
                }
            }
            _ => {}
        }
    }

    /// The lowest way of `set` holding an entry for which `pred` holds.
    pub(super) fn find(&self, set: usize, pred: impl Fn(&K) -> bool) -> Option<usize> {
        (0..self.ways).find(|&w| self.slots[set][w].as_ref().is_some_and(&pred))
    }

    /// Empties a way: it leaves the recency order (LRU, FIFO); tree-PLRU bits and the random
    /// generator are not changed by an invalidation.
    pub(super) fn invalidate(&mut self, set: usize, way: usize) {
        self.slots[set][way] = None;
        self.order[set].retain(|&w| w != way);
    }

    pub(super) fn full(&self, set: usize) -> bool {
        self.slots[set].iter().all(|s| s.is_some())
    }

    /// A uniform draw of 0..n from the random policy's generator (the victim among a set's ways
    /// and a lockable array's slots, `NaiveTlb::holds_unlocked`).
    pub(super) fn draw(&mut self, n: usize) -> usize {
        self.rng.below(n as u64) as usize
    }

    /// Where a new entry goes: the lowest invalid way, else the policy's victim among
    /// `allowed` (None when nothing is allowed).
    pub(super) fn victim(&mut self, set: usize, allowed: &[bool]) -> Option<usize> {
        if let Some(w) = (0..self.ways).find(|&w| self.slots[set][w].is_none()) {
            return Some(w);
        }
        if !allowed.iter().any(|&a| a) {
            return None;
        }
        Some(match self.kind {
            ReplacementKind::Lru | ReplacementKind::Fifo => {
                *self.order[set].iter().find(|&&w| allowed[w]).unwrap()
            }
            ReplacementKind::Random => {
                let candidates: Vec<usize> = (0..self.ways).filter(|&w| allowed[w]).collect();
                candidates[self.rng.below(candidates.len() as u64) as usize]
            }
            ReplacementKind::Plru => {
                let (mut node, mut lo, mut hi) = (1, 0, self.ways);
                while hi - lo > 1 {
                    let mid = (lo + hi) / 2;
                    let upper_ok = (mid..hi).any(|w| allowed[w]);
                    let lower_ok = (lo..mid).any(|w| allowed[w]);
                    if (self.plru[set][node] && upper_ok) || !lower_ok {
                        node = node * 2 + 1;
                        lo = mid;
                    } else {
                        node *= 2;
                        hi = mid;
                    }
                }
                lo
            }
        })
    }

    /// Puts `k` in `set` (the lowest invalid way, else the victim among every way); returns
    /// whether a valid entry was replaced.
    pub(super) fn fill(&mut self, set: usize, k: K) -> bool {
        self.fill_replacing(set, k).is_some()
    }

    /// `fill`, returning the entry it replaced (None: it took an invalid way).
    pub(super) fn fill_replacing(&mut self, set: usize, k: K) -> Option<K> {
        let all = vec![true; self.ways];
        let w = self.victim(set, &all).expect("every way allowed");
        let old = self.slots[set][w].replace(k);
        self.touch(set, w, true);
        old
    }
}

/// One TLB entry as the reference keeps it.
#[derive(Clone, PartialEq, Debug)]
pub(super) struct Entry {
    pub(super) vpn: u64,
    pub(super) size: PageSize,
    pub(super) pfn: u64,
    pub(super) asid: u16,
    pub(super) vmid: u16,
    pub(super) hw_thread: u8,
    pub(super) locked: bool,
    /// A global mapping (ARM's nG clear, x86's G set): it translates for every ASID and
    /// survives an ASID rollover. The kernel's mappings are global (`ReferenceModel::kernel_touch`).
    pub(super) global: bool,
    /// Uses since the entry was filled or a technique cleared them, and the reference count at
    /// the last use: seed 000 §3.1/§5.2's used bit, widened to a count (kept only while a
    /// technique's twin asks for it, `ReferenceModel::track_uses`; 0 otherwise).
    pub(super) uses: u32,
    pub(super) last_use: u64,
}

impl Entry {
    /// A fresh, unlocked entry for `who`'s translation of page number `vpn` (a fill).
    pub(super) fn filled(vpn: u64, size: PageSize, pfn: u64, who: Who) -> Entry {
        Entry {
            vpn,
            size,
            pfn,
            asid: who.asid,
            vmid: who.vmid,
            hw_thread: who.hw_thread,
            locked: false,
            global: false,
            uses: 0,
            last_use: 0,
        }
    }
}

/// Who looks a translation up: the tags a hit must match.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) struct Who {
    pub(super) asid: u16,
    pub(super) vmid: u16,
    pub(super) hw_thread: u8,
}

pub(super) struct NaiveTlb {
    pub(super) sets: NaiveSets<Entry>,
    nsets: usize,
    index: IndexFn,
    /// The page sizes held, smallest first.
    sizes: Vec<PageSize>,
    pub(super) latency: u64,
    /// `TlbConfig::refill_latency`: after a walk, the levels above wait this long to be
    /// refilled from this one.
    pub(super) refill_latency: u64,
    tag_asid: bool,
    tag_vmid: bool,
    tag_hw: bool,
    pub(super) lockable: usize,
    /// `TlbConfig::lockable_array`: the locked entries, in a fully associative array of
    /// `lockable` slots beside the sets (the Cortex-A9's main TLB, TRM §6.2.2); empty when the
    /// locks take ways of the sets.
    pub(super) array: Vec<Option<Entry>>,
    /// `TlbConfig::array_holds_unlocked`: while the array holds no locked entry, it takes
    /// ordinary ones too, "to increase overall main TLB storage size" (Cortex-A9 TRM DDI0388I
    /// §6.2.2): a fill that finds its set full goes to an empty slot of the array, else
    /// replaces a victim drawn at random among the set's ways and the array's slots. A lock
    /// takes an empty slot, else the first slot of an unlocked entry.
    pub(super) holds_unlocked: bool,
    /// `TlbConfig::flush_on_context_change`: emptied on every change of address space and on
    /// every lock into the core's lockable level (the Cortex-A9's micro TLBs, TRM §6.2.1).
    pub(super) flush_on_context: bool,
    pub(super) name: String,
    /// `TlbConfig::level`.
    pub(super) level: u8,
}

impl NaiveTlb {
    pub(super) fn new(t: &crate::tlb::TlbConfig, seed: u64) -> NaiveTlb {
        let ways = match t.ways {
            crate::tlb::Ways::N(n) => n,
            crate::tlb::Ways::Named(_) => t.entries,
        };
        let mut sizes = t.page_sizes.clone();
        sizes.sort();
        sizes.dedup();
        NaiveTlb {
            sets: NaiveSets::new(
                t.entries / ways,
                ways,
                t.replacement,
                seed ^ (t.level as u64) << 32,
            ),
            nsets: t.entries / ways,
            index: t.index.clone(),
            sizes,
            latency: t.latency,
            refill_latency: t.refill_latency,
            tag_asid: t.tags.asid,
            tag_vmid: t.tags.vmid,
            tag_hw: t.tags.hw_thread,
            lockable: t.lockable,
            array: if t.lockable_array {
                vec![None; t.lockable]
            } else {
                Vec::new()
            },
            holds_unlocked: t.array_holds_unlocked,
            flush_on_context: t.flush_on_context_change,
            name: t.name.clone(),
            level: t.level,
        }
    }

    fn set_of(&self, vpn: u64) -> usize {
        if self.nsets == 1 {
            return 0;
        }
        match &self.index {
            IndexFn::LowBits => (vpn % self.nsets as u64) as usize,
            IndexFn::Bits { bits } => {
                let mut s = 0;
                for (i, b) in bits.iter().enumerate() {
                    if vpn & (1 << (b - 12)) != 0 {
                        s += 1 << i;
                    }
                }
                s
            }
            IndexFn::Xor { a, b } => {
                let w = a.1 - a.0 + 1;
                let ra = (vpn >> (a.0 - 12)) % (1 << w);
                let rb = (vpn >> (b.0 - 12)) % (1 << w);
                (ra ^ rb) as usize
            }
        }
    }

    pub(super) fn holds(&self, size: PageSize) -> bool {
        self.sizes.contains(&size)
    }

    fn allows(&self, e: &Entry, who: Who) -> bool {
        (!self.tag_asid || e.global || e.asid == who.asid)
            && (!self.tag_vmid || e.vmid == who.vmid)
            && (!self.tag_hw || e.hw_thread == who.hw_thread)
    }

    /// (set, way) of the entry translating `va` for `who`, smallest page size first.
    pub(super) fn position(&self, va: u64, who: Who) -> Option<(usize, usize)> {
        for &size in &self.sizes {
            let vpn = va >> size.shift();
            let set = self.set_of(vpn);
            if let Some(w) = self.sets.find(set, |e| {
                e.vpn == vpn && e.size == size && self.allows(e, who)
            }) {
                return Some((set, w));
            }
        }
        None
    }

    /// The slot of the lockable array holding the entry translating `va` for `who` (each
    /// entry matched at its own page size), first slot first.
    fn array_position(&self, va: u64, who: Who) -> Option<usize> {
        self.array.iter().position(|s| {
            s.as_ref()
                .is_some_and(|e| e.vpn == va >> e.size.shift() && self.allows(e, who))
        })
    }

    /// The entry a lookup of `va` for `who` would hit, touching nothing (seed 002's domain
    /// check reads the entry's domain before the reference runs).
    pub(super) fn peek(&self, va: u64, who: Who) -> Option<&Entry> {
        match self.position(va, who) {
            Some((set, w)) => self.sets.slots[set][w].as_ref(),
            None => self.array[self.array_position(va, who)?].as_ref(),
        }
    }

    /// The entry a lookup of `va` for `who` hits, to change (the uses count).
    pub(super) fn held_mut(&mut self, va: u64, who: Who) -> Option<&mut Entry> {
        match self.position(va, who) {
            Some((set, w)) => self.sets.slots[set][w].as_mut(),
            None => {
                let i = self.array_position(va, who)?;
                self.array[i].as_mut()
            }
        }
    }

    /// A lookup: the sets (a hit touches its way), then the lockable array (no replacement
    /// state).
    pub(super) fn lookup(&mut self, va: u64, who: Who) -> Option<Entry> {
        let Some((set, w)) = self.position(va, who) else {
            return self.array[self.array_position(va, who)?].clone();
        };
        self.sets.touch(set, w, false);
        self.sets.slots[set][w].clone()
    }

    pub(super) fn locked_count(&self) -> usize {
        self.entries().filter(|e| e.locked).count()
    }

    /// `insert` where the level has a lockable array: a translation the array holds is
    /// refreshed there; a locked `e` goes into the first free array slot, out of its set if
    /// there. Some(false) when done; None: an ordinary fill of the sets, unlocked.
    fn array_insert(&mut self, e: &Entry) -> Option<bool> {
        let who = Who {
            asid: e.asid,
            vmid: e.vmid,
            hw_thread: e.hw_thread,
        };
        let same = |x: &Entry| x.vpn == e.vpn && x.size == e.size;
        if let Some(i) = self
            .array_position(e.vpn << e.size.shift(), who)
            .filter(|&i| self.array[i].as_ref().is_some_and(same))
        {
            let x = self.array[i].as_ref().unwrap();
            self.array[i] = Some(Entry {
                // A lock stays; an unlocked entry is locked by a locked `e`.
                locked: x.locked || e.locked,
                uses: x.uses,
                last_use: x.last_use,
                ..e.clone()
            });
            return Some(false);
        }
        if !e.locked {
            return None;
        }
        let free = self.lock_slot()?;
        let replaced = self.array[free].is_some();
        let set = self.set_of(e.vpn);
        if let Some(w) = self.sets.find(set, |x| same(x) && self.allows(x, who)) {
            self.sets.invalidate(set, w);
        }
        self.array[free] = Some(Entry {
            locked: true,
            uses: 0,
            last_use: 0,
            ..e.clone()
        });
        Some(replaced)
    }

    /// The array slot a lock takes: the first empty one, else, where the array holds unlocked
    /// entries, the first of those (the lockdown register's victim counts up the slots,
    /// Cortex-A9 TRM DDI0388I §4.3.15).
    fn lock_slot(&self) -> Option<usize> {
        self.array.iter().position(Option::is_none).or_else(|| {
            if self.holds_unlocked {
                self.array
                    .iter()
                    .position(|s| s.as_ref().is_some_and(|x| !x.locked))
            } else {
                None
            }
        })
    }

    /// Puts `e` in: an entry already translating it for its tags is refreshed in place (a lock
    /// stays), else the lowest invalid way, else the victim among the unlocked ways (nothing
    /// when every way is locked). A locked `e` takes a lock if one of `lockable` is free.
    /// Returns whether a valid entry was replaced.
    pub(super) fn insert(&mut self, e: Entry) -> bool {
        if !self.holds(e.size) {
            return false;
        }
        if !self.array.is_empty() {
            if let Some(evicted) = self.array_insert(&e) {
                return evicted;
            }
        }
        let set = self.set_of(e.vpn);
        let who = Who {
            asid: e.asid,
            vmid: e.vmid,
            hw_thread: e.hw_thread,
        };
        let same = self.sets.find(set, |x| {
            x.vpn == e.vpn && x.size == e.size && self.allows(x, who)
        });
        let locks_free = self.array.is_empty() && self.locked_count() < self.lockable;
        let (w, evicted) = match same {
            Some(w) => (w, false),
            None if self.holds_unlocked && self.sets.full(set) && self.locked_count() == 0 => {
                // No lock in the array: it takes the entry, in an empty slot, or over a victim
                // drawn among the set's ways and its slots.
                let fresh = Entry {
                    locked: false,
                    uses: 0,
                    last_use: 0,
                    ..e.clone()
                };
                if let Some(i) = self.array.iter().position(Option::is_none) {
                    self.array[i] = Some(fresh);
                    return false;
                }
                let k = self.sets.draw(self.sets.ways + self.array.len());
                if k >= self.sets.ways {
                    self.array[k - self.sets.ways] = Some(fresh);
                    return true;
                }
                (k, true)
            }
            None => {
                let evicting = self.sets.full(set);
                let allowed: Vec<bool> = self.sets.slots[set]
                    .iter()
                    .map(|s| s.as_ref().is_none_or(|x| !x.locked))
                    .collect();
                match self.sets.victim(set, &allowed) {
                    Some(w) => (w, evicting),
                    None => return false,
                }
            }
        };
        let was_locked = self.sets.slots[set][w].as_ref().is_some_and(|x| x.locked);
        let locked = was_locked || (e.locked && locks_free);
        // A refresh in place is no new fill: the entry keeps its uses.
        let (uses, last_use) = match (same, &self.sets.slots[set][w]) {
            (Some(_), Some(x)) => (x.uses, x.last_use),
            _ => (e.uses, e.last_use),
        };
        self.sets.slots[set][w] = Some(Entry {
            locked,
            uses,
            last_use,
            ..e
        });
        self.sets.touch(set, w, true);
        evicted
    }

    /// Locks the entry translating `va` for `who` if there is one and a lock is free (or it
    /// is locked already): whether it is locked now.
    pub(super) fn lock(&mut self, va: u64, who: Who) -> bool {
        if !self.array.is_empty() {
            // Locking moves the entry from its set into a free slot of the array (or over an
            // unlocked entry there); an unlocked entry of the array is locked where it is.
            if let Some(i) = self.array_position(va, who) {
                self.array[i].as_mut().expect("held").locked = true;
                return true;
            }
            let (Some((set, w)), Some(free)) = (self.position(va, who), self.lock_slot()) else {
                return false;
            };
            let e = self.sets.slots[set][w].clone().expect("held");
            self.sets.invalidate(set, w);
            self.array[free] = Some(Entry {
                locked: true,
                uses: 0,
                last_use: 0,
                ..e
            });
            return true;
        }
        let Some((set, w)) = self.position(va, who) else {
            return false;
        };
        let free = self.locked_count() < self.lockable;
        let e = self.sets.slots[set][w].as_mut().unwrap();
        if !e.locked && free {
            e.locked = true;
        }
        e.locked
    }

    /// Drops the entries `who` sees, locked or not, of another page size than `size` whose
    /// pages overlap `va`'s page of `size`: a lock invalidates its address before it loads
    /// the entry it locks (ARM's lockdown sequence), and a larger page goes in only once the
    /// smaller ones under it are gone, so no address has two translations. Returns how many.
    pub(super) fn drop_overlapping(&mut self, va: u64, who: Who, size: PageSize) -> u64 {
        let lo = va / size.bytes() * size.bytes();
        let hi = lo + size.bytes() - 1;
        let mut n = 0;
        for set in 0..self.nsets {
            for w in 0..self.sets.ways {
                let overlaps = self.sets.slots[set][w].as_ref().is_some_and(|e| {
                    // A page whose first address is past 2^64 (a foreign entry's, seed 003)
                    // overlaps no page a lock names.
                    let Some(start) = e.vpn.checked_mul(e.size.bytes()) else {
                        return false;
                    };
                    let end = start + (e.size.bytes() - 1);
                    e.size != size && self.allows(e, who) && start <= hi && lo <= end
                });
                if overlaps {
                    self.sets.invalidate(set, w);
                    n += 1;
                }
            }
        }
        for slot in &mut self.array {
            let overlaps = slot.as_ref().is_some_and(|e| {
                let Some(start) = e.vpn.checked_mul(e.size.bytes()) else {
                    return false;
                };
                let end = start + (e.size.bytes() - 1);
                let allows = (!self.tag_asid || e.global || e.asid == who.asid)
                    && (!self.tag_vmid || e.vmid == who.vmid)
                    && (!self.tag_hw || e.hw_thread == who.hw_thread);
                e.size != size && allows && start <= hi && lo <= end
            });
            if overlaps {
                *slot = None;
                n += 1;
            }
        }
        n
    }

    /// Unlocks every entry of `va`'s pages (any tags). An entry of the lockable array moves
    /// into its set (an ordinary fill there), in array slot order.
    pub(super) fn unlock(&mut self, va: u64) {
        for i in 0..self.array.len() {
            if self.array[i]
                .as_ref()
                .is_some_and(|e| e.locked && e.vpn == va >> e.size.shift())
            {
                let e = self.array[i].take().expect("held");
                // A new entry of its set: its uses count from this fill.
                self.insert(Entry {
                    locked: false,
                    uses: 0,
                    last_use: 0,
                    ..e
                });
            }
        }
        for &size in &self.sizes {
            let vpn = va >> size.shift();
            let set = self.set_of(vpn);
            for e in self.sets.slots[set].iter_mut().flatten() {
                if e.vpn == vpn && e.size == size {
                    e.locked = false;
                }
            }
        }
    }

    /// Invalidates every unlocked entry; returns how many.
    pub(super) fn invalidate_unlocked(&mut self) -> u64 {
        self.invalidate_unlocked_where(|_| true)
    }

    /// Invalidates every unlocked, non-global entry (an ASID rollover: the retired ASIDs'
    /// entries go, the kernel's global ones stay); returns how many.
    pub(super) fn invalidate_unlocked_non_global(&mut self) -> u64 {
        self.invalidate_unlocked_where(|e| !e.global)
    }

    fn invalidate_unlocked_where(&mut self, drop: impl Fn(&Entry) -> bool) -> u64 {
        let mut n = 0;
        for set in 0..self.nsets {
            for w in 0..self.sets.ways {
                if self.sets.slots[set][w]
                    .as_ref()
                    .is_some_and(|e| !e.locked && drop(e))
                {
                    self.sets.invalidate(set, w);
                    n += 1;
                }
            }
        }
        for slot in &mut self.array {
            if slot.as_ref().is_some_and(|e| !e.locked && drop(e)) {
                *slot = None;
                n += 1;
            }
        }
        n
    }

    /// A shootdown of `va`'s pages of ASID `asid`: locked entries go too (a lock holds through
    /// replacement and flushes, not through a change of the mapping, seed 004 §III).
    pub(super) fn shoot_down(&mut self, va: u64, asid: u16) -> u64 {
        let mut n = 0;
        for i in 0..self.sizes.len() {
            let size = self.sizes[i];
            let vpn = va >> size.shift();
            let set = self.set_of(vpn);
            for w in 0..self.sets.ways {
                let hit = self.sets.slots[set][w].as_ref().is_some_and(|e| {
                    e.vpn == vpn && e.size == size && (e.global || e.asid == asid)
                });
                if hit {
                    self.sets.invalidate(set, w);
                    n += 1;
                }
            }
        }
        for slot in &mut self.array {
            if slot
                .as_ref()
                .is_some_and(|e| e.vpn == va >> e.size.shift() && (e.global || e.asid == asid))
            {
                *slot = None;
                n += 1;
            }
        }
        n
    }

    /// The teardown of ASID `asid`'s address space: its non-global entries go, locked ones
    /// too (ARM's TLBIASID, Cortex-A9 TRM Table 4-26 note b).
    pub(super) fn shoot_down_asid(&mut self, asid: u16) -> u64 {
        let mut n = 0;
        for set in 0..self.nsets {
            for w in 0..self.sets.ways {
                if self.sets.slots[set][w]
                    .as_ref()
                    .is_some_and(|e| !e.global && e.asid == asid)
                {
                    self.sets.invalidate(set, w);
                    n += 1;
                }
            }
        }
        for slot in &mut self.array {
            if slot.as_ref().is_some_and(|e| !e.global && e.asid == asid) {
                *slot = None;
                n += 1;
            }
        }
        n
    }

    /// The valid entries in slot order (set by set, way by way).
    pub(super) fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.sets
            .slots
            .iter()
            .flatten()
            .flatten()
            .chain(self.array.iter().flatten())
    }
}
