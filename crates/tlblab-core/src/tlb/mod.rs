//! A TLB level: a set-associative cache of translations, tagged by address space.
//!
//! Storage: the packed keys in a `TagArray` (a set's search is one SIMD compare of one-byte
//! fingerprints, `tags.rs`), everything else of an entry in one 16-byte `Payload`. An entry
//! matches a lookup when its packed key (VPN of its page size, size index) matches and, where the
//! level is so tagged, its ASID matches or it is global, its VMID matches, and (SMT) its hardware
//! thread matches. Locked entries (TLB lockdown, seed 004 §III) are never chosen as victims and
//! survive every flush; only `unlock` releases them.
//!
//! A one-entry memo of the last hit makes repeated hits on the same page (the common case in real
//! traces: consecutive references within a page) skip the search. It is exact, not a heuristic:
//! re-touching the most recently touched way changes no replacement state, and any fill,
//! invalidation or (un)lock clears the memo.

mod config;
mod entry;
mod fast;
mod fill;
mod index;
mod inspect;
mod maintenance;
mod pair;

pub use config::*;
pub use entry::*;

pub(crate) use fast::{SHAPE_ANY, SHAPE_FULLY_ASSOC, SHAPE_SET_ASSOC};
pub(crate) use pair::{
    level_ready, pair_ready, DataPath, Fa, One, PathKind, RandomOrder, Sa, Two, SETTLED_FIRST,
    SETTLED_SECOND, SETTLED_WALK,
};

pub use index::{validate_index, IndexFn};

use crate::replacement::{Replacement, ReplacementKind};
use crate::tags::TagArray;
use index::CompiledIndex;
use serde::{Deserialize, Serialize};
use tlblab_types::{Asid, Domain, PageSize, Pfn, VirtAddr, Vmid, Vpn};

const INVALID: u64 = u64::MAX;

#[inline]
pub(crate) fn pack(vpn: u64, size: PageSize) -> u64 {
    (vpn << 3) | size.index() as u64
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct Tlb {
    pub config: TlbConfig,
    sets: usize,
    ways: usize,
    index: CompiledIndex,
    /// The mask of a low-VPN-bits index (`CompiledIndex::low_mask`), 0 for other indexes.
    low_mask: u64,
    sizes: Vec<PageSize>,
    keys: TagArray,
    /// Everything of an entry but its key, one 16-byte record per slot: a fill writes, and a
    /// hit or a tag check reads, one host cache line instead of one per field.
    payload: Vec<Payload>,
    locked_count: usize,
    /// The first slot of the lockable array (`TlbConfig::lockable_array`): slots
    /// `array_base..keys.len()` are the array, `0..array_base` the sets. No array: `keys.len()`.
    array_base: usize,
    /// Valid entries per page size (lookups skip sizes with none) and per set.
    size_count: [u32; 6],
    /// Bit i set: page size of index i is held by this level (`held_sizes`) / has valid
    /// entries now (`live_sizes`, kept with `size_count`). The per-lookup loops over page
    /// sizes iterate these bits, smallest size first, instead of the configured list.
    held_sizes: u8,
    live_sizes: u8,
    set_valid: Vec<u32>,
    repl: Replacement,
    /// Memo of the last hit: (packed key, requester, slot); `slot == usize::MAX` = empty.
    /// `memo_key` is the hit address's key at `memo_grain`, the smallest page size with
    /// entries when the memo was set (at most `memo_size`, the entry's): an address of another
    /// page of that size may have an entry of its own that the search, smallest size first,
    /// finds before the larger entry. (Found 2026-11-28: a fault's 1 MiB linear-map section
    /// answered the memo for kernel pages whose 4 KiB entries the reference model's twin hit,
    /// so the two aged different entries; `PROPTEST_RNG_SEED=20261125`.) Every fill clears
    /// the memo, so no size becomes live under it.
    memo_key: u64,
    memo_size: PageSize,
    memo_grain: PageSize,
    memo_req: Requester,
    memo_slot: usize,
    /// For highly associative levels: a direct-mapped hint table key → slot + 1, verified on use
    /// (the slot must still hold the key and match the tags), so a hit costs O(1) instead of a
    /// scan of every way. Empty for levels with few ways, where the scan is cheaper.
    hint: Vec<u32>,
    hint_mask: usize,
    /// For levels with many ways: per bucket of `present_hash(key)`, how many valid entries have
    /// a key in that bucket. A zero proves a key absent, so most misses cost O(1) instead of a
    /// scan of every way (and a fill skips the "already present?" scan). Exact bookkeeping,
    /// updated wherever a key is written or cleared; empty for levels with few ways.
    present: Vec<u16>,
    present_mask: usize,
    mask_scratch: Vec<u64>,
    /// Per slot, the uses of the entry since it was filled or its count was last cleared (seed
    /// 000 §3.1/§5.2's "used bit", widened to a count for the selective-restore predictor) and
    /// the engine's reference count at its last use. Empty unless a technique asked for them
    /// (`track_use`): then `System::reference_full` counts every access an entry translates,
    /// and nothing else in the engine reads or writes them.
    uses: Vec<(u32, u64)>,
}

/// Levels with at least this many ways keep the `present` filter (fewer ways: the SIMD scan
/// of one set is cheaper than the filter's extra cache line).
const PRESENT_MIN_WAYS: usize = 32;

/// Levels with at least this many ways keep the `hint` table. A set of up to 16 ways is one
/// fingerprint compare (`tags.rs`), as cheap as a hint check, while the table costs a check on
/// every miss and a write on every fill (measured, zen3: a 16-way L2 with the table took 31 more
/// instructions per all-miss reference and no fewer on a Lackey capture).
const HINT_MIN_WAYS: usize = 32;

/// Whether an entry with payload `p`, in a level whose entries carry the tags `t`, may
/// translate for `req` (its key matching).
#[inline(always)]
fn tags_allow(t: TagConfig, p: &Payload, req: Requester) -> bool {
    (!t.asid || p.global || p.asid == req.asid)
        && (!t.vmid || p.vmid == req.vmid)
        && (!t.hw_thread || p.hw_thread == req.hw_thread)
}

/// The hint table of a level of `n` entries: a power of two, about four slots per entry.
const fn hint_len(n: usize) -> usize {
    (n * 4).next_power_of_two()
}

/// The `present` filter of a level of `n` entries: a power of two, 64 buckets per entry up to
/// `PRESENT_SMALL_BUCKETS`, 16 per entry beyond. An absent key finds its bucket taken one time
/// in 64 in zen3's 64-entry L1D, not 16 (16 per entry before 8f38be8), and so searches the
/// ways that much less often on a stream that misses the level (measured, 2026-11-24, Zen 4
/// host, `profile_run zen3 random:pages=262144` TLB-only: 114.3 → 113.0 instructions per
/// reference, interleaved medians of 7: 94.8 → 98.9 M refs/s), as `all_miss_floor`'s kernel
/// found. A level of thousands of entries keeps 16 per entry (2 bytes each).
const fn present_len(n: usize) -> usize {
    let per_entry = (n * 16).next_power_of_two();
    let small = (n * 64).next_power_of_two();
    let small = if small < PRESENT_SMALL_BUCKETS {
        small
    } else {
        PRESENT_SMALL_BUCKETS
    };
    if per_entry > small {
        per_entry
    } else {
        small
    }
}

/// The most buckets `present_len` gives at 64 per entry (8 KiB of two-byte counts).
const PRESENT_SMALL_BUCKETS: usize = 4096;

/// The product of a key that indexes the hint table (`hint`) and the `present` filter
/// (`present`), and is its fingerprint (`fingerprint`, as `tags::fingerprint`): one
/// multiplication for all three. The tables are independent, so sharing the bits costs nothing
/// in correctness. The pair loops (tlb/pair/) compute it once per reference and pass it to
/// the first level's lookup and fill: computed in each, the compiler narrowed the lookup's
/// multiplier to the bits it reads and then could not share it (measured: 5 instructions per
/// reference fewer on a stream missing both levels).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy)]
pub(crate) struct KeyHash(u64);

impl KeyHash {
    #[inline(always)]
    pub(crate) fn of(key: u64) -> KeyHash {
        KeyHash(key.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    /// The hint-table bucket, before the table's mask.
    #[inline(always)]
    pub(crate) fn hint(self) -> usize {
        (self.0 >> 40) as usize
    }

    /// The `present` bucket, before the filter's mask.
    #[inline(always)]
    pub(crate) fn present(self) -> usize {
        (self.0 >> 40) as usize
    }

    /// `tags::fingerprint` of the key.
    #[inline(always)]
    pub(crate) fn fingerprint(self) -> u8 {
        (self.0 >> 56) as u8
    }
}

#[inline]
fn hint_hash(key: u64) -> usize {
    KeyHash::of(key).hint()
}

#[inline]
fn present_hash(key: u64) -> usize {
    KeyHash::of(key).present()
}

impl Tlb {
    /// Builds an empty TLB. The configuration must have passed `validate`.
    pub fn new(config: TlbConfig, seed: u64) -> Tlb {
        let ways = config.ways();
        let sets = config.sets();
        let n = sets * ways;
        let array = if config.lockable_array {
            config.lockable
        } else {
            0
        };
        let mut sizes = config.page_sizes.clone();
        sizes.sort();
        sizes.dedup();
        let held_sizes = sizes.iter().fold(0u8, |m, s| m | 1 << s.index());
        let index = CompiledIndex::new(&config.index, sets);
        Tlb {
            low_mask: index.low_mask().unwrap_or(0),
            index,
            repl: Replacement::new(
                config.replacement,
                sets,
                ways,
                seed ^ (config.level as u64) << 32,
            ),
            config,
            sets,
            ways,
            sizes,
            keys: TagArray::new(n + array, INVALID),
            payload: vec![Payload::default(); n + array],
            locked_count: 0,
            array_base: n,
            size_count: [0; 6],
            held_sizes,
            live_sizes: 0,
            set_valid: vec![0; sets],
            memo_key: INVALID,
            memo_size: PageSize::Size4K,
            memo_grain: PageSize::Size4K,
            memo_req: Requester::default(),
            memo_slot: usize::MAX,
            hint: if ways >= HINT_MIN_WAYS {
                vec![0; hint_len(n)]
            } else {
                Vec::new()
            },
            hint_mask: if ways >= HINT_MIN_WAYS {
                hint_len(n) - 1
            } else {
                0
            },
            present: if ways >= PRESENT_MIN_WAYS {
                vec![0; present_len(n)]
            } else {
                Vec::new()
            },
            present_mask: present_len(n) - 1,
            mask_scratch: vec![0; ways.div_ceil(64)],
            uses: Vec::new(),
        }
    }

    /// One more (`add`) or one fewer valid entry of the page size of index `i`.
    #[inline(always)]
    fn count_size(&mut self, i: usize, add: bool) {
        if add {
            self.size_count[i] += 1;
            self.live_sizes |= 1 << i;
        } else {
            self.size_count[i] -= 1;
            if self.size_count[i] == 0 {
                self.live_sizes &= !(1 << i);
            }
        }
    }

    /// Points the hint table's bucket of `key` at `slot` (a level with the table).
    #[inline(always)]
    fn point_hint(&mut self, key: u64, slot: usize) {
        self.hint[hint_hash(key) & self.hint_mask] = slot as u32 + 1;
    }

    /// Whether `key` is certainly held by no entry (false: it may be).
    #[inline(always)]
    fn surely_absent(&self, key: u64) -> bool {
        !self.present.is_empty() && self.present[present_hash(key) & self.present_mask] == 0
    }

    /// Writes `key` into `slot` (INVALID clears it), keeping the `present` counts exact.
    #[inline(always)]
    fn write_key(&mut self, slot: usize, key: u64) {
        if !self.present.is_empty() {
            let old = self.keys.get(slot);
            if old != INVALID {
                self.present[present_hash(old) & self.present_mask] -= 1;
            }
            if key != INVALID {
                self.present[present_hash(key) & self.present_mask] += 1;
            }
        }
        self.keys.set(slot, key);
    }

    pub fn sets(&self) -> usize {
        self.sets
    }
    pub fn ways(&self) -> usize {
        self.ways
    }
    pub fn holds_size(&self, size: PageSize) -> bool {
        self.held_sizes >> size.index() & 1 == 1
    }
    pub fn set_of(&self, vpn: Vpn) -> usize {
        self.index.set_of(vpn.0)
    }

    #[inline]
    fn tags_match(&self, slot: usize, req: Requester) -> bool {
        tags_allow(self.config.tags, &self.payload[slot], req)
    }

    /// Looks up `va`; on a hit updates replacement state. O(sizes × ways), O(1) on a memo hit.
    #[inline(always)]
    pub fn lookup(&mut self, va: VirtAddr, req: Requester) -> Option<TlbHit> {
        if let Some(h) = self.memo_hit(va, req) {
            return Some(h);
        }
        if !self.hint.is_empty() {
            if let Some(h) = self.hint_hit(va, req) {
                return Some(h);
            }
        }
        if !self.present.is_empty() && self.surely_absent_all_sizes(va) {
            self.memo_slot = usize::MAX;
            return None;
        }
        self.lookup_search(va, req)
    }

    /// Whether the `present` filter proves `va` absent in every page size with entries: the
    /// common miss of a large fully associative level, settled without a search.
    #[inline(always)]
    fn surely_absent_all_sizes(&self, va: VirtAddr) -> bool {
        let mut live = self.live_sizes;
        while live != 0 {
            let size = PageSize::ALL[live.trailing_zeros() as usize];
            live &= live - 1;
            if !self.surely_absent(pack(va.0 >> size.shift(), size)) {
                return false;
            }
        }
        true
    }

    /// A hit through the hint table (levels of `HINT_MIN_WAYS` ways or more), with the effects of a `lookup`
    /// hit; None, having changed nothing, when the hint does not settle it (it may still hit).
    #[inline(always)]
    pub(crate) fn lookup_hinted(&mut self, va: VirtAddr, req: Requester) -> Option<TlbHit> {
        if self.hint.is_empty() {
            return None;
        }
        self.hint_hit(va, req)
    }

    /// A hit through the hint table for the smallest page size with entries: the first size
    /// `lookup_search` tries, so a verified hint there is the answer the search would give.
    #[inline(always)]
    fn hint_hit(&mut self, va: VirtAddr, req: Requester) -> Option<TlbHit> {
        let (slot, _, size) = self.hint_find(va, req)?;
        Some(self.hit_slot(slot, va.0, size, req))
    }

    /// `hint_hit` without its effects: (slot, key, size).
    #[inline(always)]
    fn hint_find(&self, va: VirtAddr, req: Requester) -> Option<(usize, u64, PageSize)> {
        if self.live_sizes == 0 {
            return None;
        }
        let size = PageSize::ALL[self.live_sizes.trailing_zeros() as usize];
        let key = pack(va.0 >> size.shift(), size);
        let h = self.hint[hint_hash(key) & self.hint_mask] as usize;
        // `then`, not `then_some`: `h - 1` must not be computed for h = 0.
        (h != 0 && self.keys.get(h - 1) == key && self.tags_match(h - 1, req))
            .then(|| (h - 1, key, size))
    }

    /// Where `lookup` would hit, without changing any simulated state, found in the same order
    /// (memo, hint, filter, search): `hit_found` on it then has `lookup`'s effects. For the memo
    /// lane. Like `lookup`, it points the hint table (which only speeds searches up: every use
    /// checks the key) at an entry it had to search for: the lane finds the same pages again
    /// and again as it lets go of them, and its hits never reach `lookup` to do it (measured
    /// on a Lackey capture of `ls -lR`: a third of the lane's peeks searched).
    pub(crate) fn peek(&mut self, va: VirtAddr, req: Requester) -> Option<FoundEntry> {
        let (slot, key, size) = if self.memo_hit(va, req).is_some() {
            let size = self.memo_size;
            (self.memo_slot, pack(va.0 >> size.shift(), size), size)
        } else if let Some(found) = (!self.hint.is_empty())
            .then(|| self.hint_find(va, req))
            .flatten()
        {
            found
        } else if !self.present.is_empty() && self.surely_absent_all_sizes(va) {
            return None;
        } else {
            let (slot, key, size, scanned) = self.search(va, req)?;
            if scanned && !self.hint.is_empty() {
                self.point_hint(key, slot);
            }
            (slot, key, size)
        };
        Some(FoundEntry {
            slot,
            key,
            va: va.0,
            size,
            pfn: self.payload[slot].pfn,
        })
    }

    /// Records a hit on an entry `peek` found (nothing filled or evicted since).
    #[inline]
    pub(crate) fn hit_found(&mut self, f: &FoundEntry, req: Requester) {
        self.hit_slot(f.slot, f.va, f.size, req);
    }

    /// Records a hit on `slot`, the entry of size `size` translating `va`: replacement state,
    /// then the memo.
    #[inline(always)]
    fn hit_slot(&mut self, slot: usize, va: u64, size: PageSize, req: Requester) -> TlbHit {
        // Fully associative levels (one set) are common; spare them two divisions.
        let (set, way) = if self.sets == 1 {
            (0, slot)
        } else {
            (slot / self.ways, slot % self.ways)
        };
        // An entry of the lockable array is in no set: it has no replacement state.
        if slot < self.array_base {
            self.repl.on_hit(set, way);
        }
        // The smallest size with entries (`size` has this one).
        let grain = PageSize::ALL[self.live_sizes.trailing_zeros() as usize];
        self.memo_key = pack(va >> grain.shift(), grain);
        self.memo_grain = grain;
        self.memo_size = size;
        self.memo_req = req;
        self.memo_slot = slot;
        TlbHit {
            slot,
            pfn: self.payload[slot].pfn,
            size,
            domain: self.payload[slot].domain,
        }
    }

    /// A hit on the entry of the last hit, if `va` and `req` match it: the same answer `lookup`
    /// gives, with no state to update (re-touching the most recently used way changes no
    /// policy's state). None says only "not the memo": the entry may still be elsewhere.
    #[inline(always)]
    pub fn memo_hit(&self, va: VirtAddr, req: Requester) -> Option<TlbHit> {
        let grain = self.memo_grain;
        if self.memo_slot != usize::MAX
            && pack(va.0 >> grain.shift(), grain) == self.memo_key
            && self.memo_req == req
        {
            let slot = self.memo_slot;
            return Some(TlbHit {
                slot,
                pfn: self.payload[slot].pfn,
                size: self.memo_size,
                domain: self.payload[slot].domain,
            });
        }
        None
    }

    /// `lookup` past the memo: the search of every page size's set.
    #[inline(never)]
    fn lookup_search(&mut self, va: VirtAddr, req: Requester) -> Option<TlbHit> {
        match self.search(va, req) {
            Some((slot, key, size, scanned)) => {
                if scanned && !self.hint.is_empty() {
                    self.point_hint(key, slot);
                }
                Some(self.hit_slot(slot, va.0, size, req))
            }
            None => {
                self.memo_slot = usize::MAX;
                None
            }
        }
    }

    /// The search of every page size's set, smallest size first, then of the lockable array
    /// (`TlbConfig::lockable_array`) if it holds entries: (slot, key, size, whether the set
    /// was scanned rather than the hint taken).
    #[inline(always)]
    fn search(&self, va: VirtAddr, req: Requester) -> Option<(usize, u64, PageSize, bool)> {
        let found = self.search_sets(va, req);
        // Every entry of a lockable array is locked unless it holds unlocked ones too
        // (`array_holds_unlocked`), so a level without either skips it.
        if found.is_none()
            && (self.locked_count != 0 || self.config.array_holds_unlocked)
            && self.config.lockable_array
        {
            return self
                .array_find(va, req)
                .map(|(slot, key, size)| (slot, key, size, false));
        }
        found
    }

    /// The entry of the lockable array translating `va` for `req`, in slot order: (slot,
    /// key, size).
    #[inline(never)]
    fn array_find(&self, va: VirtAddr, req: Requester) -> Option<(usize, u64, PageSize)> {
        (self.array_base..self.keys.len()).find_map(|slot| {
            let key = self.keys.get(slot);
            if key == INVALID {
                return None;
            }
            let size = PageSize::ALL[(key & 7) as usize];
            (key == pack(va.0 >> size.shift(), size) && self.tags_match(slot, req))
                .then_some((slot, key, size))
        })
    }

    /// A free slot of the lockable array, if the level has one.
    fn array_free_slot(&self) -> Option<usize> {
        (self.array_base..self.keys.len()).find(|&slot| self.keys.get(slot) == INVALID)
    }

    /// Clears the lockable array's `slot` (a locked entry, or an unlocked one where the array
    /// holds those, `array_holds_unlocked`).
    fn array_clear(&mut self, slot: usize) {
        self.count_size((self.keys.get(slot) & 7) as usize, false);
        self.write_key(slot, INVALID);
        if self.payload[slot].locked {
            self.locked_count -= 1;
        }
        self.payload[slot].locked = false;
        self.memo_slot = usize::MAX;
    }

    /// Puts `e` into the lockable array's free `slot`, locked or not (`array_holds_unlocked`).
    fn array_put(&mut self, slot: usize, e: &TlbEntry, locked: bool) {
        let key = pack(e.vpn.0, e.size);
        self.count_size(e.size.index(), true);
        self.write_key(slot, key);
        self.payload[slot] = Payload {
            locked,
            ..Payload::locked_from(e)
        };
        if let Some(u) = self.uses.get_mut(slot) {
            *u = (0, 0);
        }
        self.locked_count += locked as usize;
        self.memo_slot = usize::MAX;
    }

    /// The slot a lock takes in the lockable array: a free one, else (`array_holds_unlocked`)
    /// the first holding an unlocked entry, which the lock replaces (the lockdown register's
    /// victim counts up the slots, Cortex-A9 TRM DDI0388I §4.3.15).
    fn array_lock_slot(&self) -> Option<usize> {
        self.array_free_slot().or_else(|| {
            self.config
                .array_holds_unlocked
                .then(|| (self.array_base..self.keys.len()).find(|&s| !self.payload[s].locked))
                .flatten()
        })
    }

    /// The search of every page size's set, smallest size first (`search` without the
    /// lockable array).
    #[inline(always)]
    fn search_sets(&self, va: VirtAddr, req: Requester) -> Option<(usize, u64, PageSize, bool)> {
        let live = self.live_sizes;
        // Nearly always one page size has entries: search it without the loop over sizes,
        // whose loop-invariant set-up (hoisted by the compiler) cost more than the search.
        if live & live.wrapping_sub(1) == 0 {
            if live == 0 {
                return None;
            }
            return self.search_size(va, req, PageSize::ALL[live.trailing_zeros() as usize]);
        }
        self.search_sizes(va, req)
    }

    /// `search` when several page sizes have entries.
    #[inline(never)]
    fn search_sizes(&self, va: VirtAddr, req: Requester) -> Option<(usize, u64, PageSize, bool)> {
        let mut live = self.live_sizes;
        while live != 0 {
            let size = PageSize::ALL[live.trailing_zeros() as usize];
            live &= live - 1;
            if let Some(found) = self.search_size(va, req, size) {
                return Some(found);
            }
        }
        None
    }

    /// The search of `size`'s set: (slot, key, size, whether the set was scanned rather than
    /// the hint taken).
    #[inline(always)]
    fn search_size(
        &self,
        va: VirtAddr,
        req: Requester,
        size: PageSize,
    ) -> Option<(usize, u64, PageSize, bool)> {
        let vpn = va.0 >> size.shift();
        let key = pack(vpn, size);
        if self.surely_absent(key) {
            return None;
        }
        if !self.hint.is_empty() {
            let h = self.hint[hint_hash(key) & self.hint_mask] as usize;
            if h != 0 && self.keys.get(h - 1) == key && self.tags_match(h - 1, req) {
                return Some((h - 1, key, size, false));
            }
        }
        let base = self.index.set_of(vpn) * self.ways;
        if self.ways <= 64 {
            // Every built-in geometry. A miss (no key matches) returns before the tag checks,
            // whose set-up the compiler would otherwise hoist in front of the search.
            let m = self.keys.matches(base, self.ways, key);
            if m == 0 {
                return None;
            }
            return self
                .first_tag_match(base, m, req)
                .map(|slot| (slot, key, size, true));
        }
        let mut chunk = 0;
        while chunk < self.ways {
            let end = (chunk + 64).min(self.ways);
            let m = self.keys.matches(base + chunk, end - chunk, key);
            if let Some(slot) = self.first_tag_match(base + chunk, m, req) {
                return Some((slot, key, size, true));
            }
            chunk = end;
        }
        None
    }

    /// The first slot `base + w`, for bit w of `matches`, whose tags match `req`.
    #[inline(never)]
    fn first_tag_match(&self, base: usize, mut matches: u64, req: Requester) -> Option<usize> {
        while matches != 0 {
            let slot = base + matches.trailing_zeros() as usize;
            matches &= matches - 1;
            if self.tags_match(slot, req) {
                return Some(slot);
            }
        }
        None
    }

    /// Whether `fast_lookup` and `fast_fill` may serve this level for translations of `size`
    /// (the fast lane, `system/fast_lane.rs`): the level holds `size`, no other size
    /// has entries, no entry is locked, and a set has at most 64 ways. Those two methods keep
    /// it true; anything else that changes the level may not.
    pub(crate) fn fast_ready(&self, size: PageSize) -> bool {
        self.holds_size(size)
            && self.live_sizes & !(1 << size.index()) == 0
            && self.locked_count == 0
            && self.ways <= 64
            && !self.config.array_holds_unlocked
        // A lockable array (`lockable_array`) holds only locked entries, so it is empty here;
        // the lanes borrow the sets' slots, `0..array_base`, and never search it. One that
        // holds unlocked entries too (`array_holds_unlocked`) takes fills the lanes do not
        // make: such a level takes no lane.
    }

    /// `lookup` of the page `vpn` of the size of `key` (`pack(vpn, size)`) on a level that is
    /// `fast_ready(size)`: the slot of the hit, with `lookup`'s effects on a hit (replacement
    /// state, the memo). A miss changes nothing: the memo still names the most recently touched
    /// way of its set, which is all it promises (`lookup` clearing it is only conservative).
    #[inline(always)]
    pub(crate) fn fast_lookup(&mut self, vpn: u64, key: u64, req: Requester) -> Option<usize> {
        if self.memo_key == key && self.memo_slot != usize::MAX && self.memo_req == req {
            return Some(self.memo_slot);
        }
        if self.live_sizes == 0 || self.surely_absent(key) {
            return None;
        }
        let set = self.index.set_of(vpn);
        let base = set * self.ways;
        let m = self.keys.matches(base, self.ways, key);
        if m == 0 {
            return None;
        }
        let slot = self.first_tag_match(base, m, req)?;
        self.repl.on_hit(set, slot - base);
        self.set_memo(key, req, slot);
        Some(slot)
    }

    /// The payload of `slot`.
    #[inline(always)]
    pub(crate) fn payload_at(&self, slot: usize) -> Payload {
        self.payload[slot]
    }

    /// `fill_after_miss` of the page `vpn` (key `pack(vpn, size)`, size index `size_index`)
    /// on a level that is `fast_ready(size)`, just after `fast_lookup` missed it for `req`:
    /// the same entry in the same way, and whether an entry was evicted. It leaves the memo on
    /// the filled way, the most recently touched of its set (`fill` clears it, conservatively).
    #[inline(always)]
    pub(crate) fn fast_fill(
        &mut self,
        vpn: u64,
        key: u64,
        size_index: usize,
        payload: Payload,
        req: Requester,
    ) -> bool {
        let set = self.index.set_of(vpn);
        let base = set * self.ways;
        let (w, evicted) = if (self.set_valid[set] as usize) < self.ways {
            let w = self
                .keys
                .first(base, self.ways, INVALID)
                .expect("a set that is not full has an invalid way");
            self.set_valid[set] += 1;
            self.count_size(size_index, true);
            (w, false)
        } else {
            // The victim is of the same size (`fast_ready`): the size counts stay. Its fill is
            // recorded here (`fill_victim`), a fill into an invalid way below.
            (self.repl.fill_victim(set), true)
        };
        if !evicted {
            self.repl.on_fill(set, w);
        }
        let slot = base + w;
        // The hint table is left as it is: hints are verified before use, and this lane does
        // not read them.
        self.write_key(slot, key);
        self.payload[slot] = payload;
        self.set_memo(key, req, slot);
        evicted
    }

    #[inline(always)]
    fn set_memo(&mut self, key: u64, req: Requester, slot: usize) {
        // The fast lane's levels hold one size (`fast_ready`): the key's is the smallest.
        self.memo_key = key;
        self.memo_size = PageSize::ALL[(key & 7) as usize];
        self.memo_grain = self.memo_size;
        self.memo_req = req;
        self.memo_slot = slot;
    }
}
