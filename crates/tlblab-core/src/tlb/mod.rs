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

mod fast;
mod index;
mod pair;

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

/// Which references a TLB level translates.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TlbKind {
    Instr,
    Data,
    #[default]
    Unified,
}

/// Associativity: a number of ways, or `"full"`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Ways {
    N(usize),
    Named(FullyAssociative),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FullyAssociative {
    Full,
}

impl Ways {
    pub fn resolve(self, entries: usize) -> usize {
        match self {
            Ways::N(n) => n,
            Ways::Named(_) => entries,
        }
    }
}

/// Which tags a TLB level's entries carry.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TagConfig {
    /// Entries carry an ASID (no flush needed on an address-space switch).
    pub asid: bool,
    /// Entries carry a VMID.
    pub vmid: bool,
    /// Entries carry the ARM domain of their L1 descriptor (seed 002 §2).
    pub domain: bool,
    /// Entries are private to the SMT hardware thread that filled them (Zen 3, seed 001 §4.4.5.1).
    pub hw_thread: bool,
}

impl Default for TagConfig {
    fn default() -> Self {
        TagConfig {
            asid: true,
            vmid: true,
            domain: false,
            hw_thread: false,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Configuration of one TLB level.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbConfig {
    /// Name shown in statistics ("L1D", "uTLB-I", "main").
    pub name: String,
    /// Lookup order within a core: 1 is searched first.
    pub level: u8,
    #[serde(default)]
    pub kind: TlbKind,
    pub entries: usize,
    pub ways: Ways,
    #[serde(default)]
    pub index: IndexFn,
    #[serde(default)]
    pub replacement: ReplacementKind,
    /// Page sizes this level holds; a translation of another size is not filled here.
    pub page_sizes: Vec<PageSize>,
    /// Cycles charged for a hit in this level (in-order sum, see `system`).
    #[serde(default)]
    pub latency: u64,
    /// Cycles a reference waits, after a walk has filled this level, while the levels above
    /// it on its path are refilled from it (one more access of this level; 0: the walk's
    /// result reaches every level at once). Charged only by a level below another, once per
    /// walk; for data references it is a stall of the level above
    /// (`UnitStats::data_stall_cycles`), not of the walk: the Cortex-A9's data micro-TLB miss
    /// stall event (0x85) leaves out only the main TLB miss stall cycles event 0x83 counts
    /// (TRM DDI0388F, PMU events), and the refill is an access of the main TLB, not its miss.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refill_latency: u64,
    /// One instance shared by all cores instead of one per core.
    #[serde(default)]
    pub shared: bool,
    /// How many entries may be locked at once (0 = no lockdown support).
    #[serde(default)]
    pub lockable: usize,
    /// Whether the `lockable` entries are a fully associative array of their own beside the
    /// level's `entries` (true), or ways of its sets (false). The Cortex-A9's main TLB is "a
    /// fully-associative, lockable array of four elements" and "a 2-way associative structure
    /// of 2x32, 2x64, 2x128 or 2x256 entries" (Cortex-A9 TRM DDI0388, §6.2.2 Main TLB): a
    /// locked page takes no way of a set, and only locked entries live in the array (one that
    /// is unlocked moves into its set). Lookups search the sets, then the array.
    #[serde(default, skip_serializing_if = "is_false")]
    pub lockable_array: bool,
    #[serde(default)]
    pub tags: TagConfig,
    /// The ways the hardware builds each set with, when `ways` models fewer: `tlblab probe --out`
    /// writes the ways a random chain over every set keeps (the Zen 4's 3072-entry, 24-way L2
    /// DTLB keeps about 18.7 a set; docs/probe.md), so the simulator shows the capacity a program
    /// sees, and records the structure's ways here. The sets are `entries / ways` either way. The
    /// engine never reads it; the tools that place pages by set (`tlblab host coloring`,
    /// `tlb_geometry_from_machine` in libtlblab) color for these ways.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_ways: Option<usize>,
    /// Where the numbers come from.
    #[serde(default)]
    pub source: String,
}

impl TlbConfig {
    /// A unified level `name` of `entries` entries in sets of `ways`, low-bit indexed, LRU,
    /// holding 4 KiB pages, 1 cycle a hit, untagged and unlockable: the base that tests and
    /// examples change what they need of (`..TlbConfig::plain(..)`).
    pub fn plain(name: &str, level: u8, entries: usize, ways: Ways) -> TlbConfig {
        TlbConfig {
            name: name.into(),
            level,
            kind: TlbKind::Unified,
            entries,
            ways,
            index: IndexFn::LowBits,
            replacement: ReplacementKind::Lru,
            page_sizes: vec![PageSize::Size4K],
            latency: 1,
            refill_latency: 0,
            shared: false,
            lockable: 0,
            lockable_array: false,
            tags: TagConfig::default(),
            hardware_ways: None,
            source: String::new(),
        }
    }

    pub fn ways(&self) -> usize {
        self.ways.resolve(self.entries)
    }
    pub fn sets(&self) -> usize {
        self.entries / self.ways().max(1)
    }

    /// Checks the geometry; errors name the field (`tlb[L1D].ways: ...`).
    pub fn validate(&self) -> Result<(), String> {
        let f = |field: &str, msg: String| Err(format!("tlb[{}].{field}: {msg}", self.name));
        if self.entries == 0 {
            return f("entries", "must be positive, found 0".into());
        }
        let ways = self.ways();
        if ways == 0 || ways > self.entries {
            return f(
                "ways",
                format!("expected 1..={} (or \"full\"), found {ways}", self.entries),
            );
        }
        if !self.entries.is_multiple_of(ways) {
            return f(
                "ways",
                format!("{} entries are not divisible by {ways} ways", self.entries),
            );
        }
        if self.replacement == ReplacementKind::Plru && !ways.is_power_of_two() {
            return f(
                "replacement",
                format!("plru needs a power-of-two number of ways, found {ways}"),
            );
        }
        if self.page_sizes.is_empty() {
            return f("page_sizes", "must list at least one page size".into());
        }
        if self.lockable > self.entries && !self.lockable_array {
            return f(
                "lockable",
                format!(
                    "at most {} entries can be locked, found {}",
                    self.entries, self.lockable
                ),
            );
        }
        if let Some(hw) = self.hardware_ways {
            if matches!(self.ways, Ways::Named(_)) || hw < ways {
                return f(
                    "hardware_ways",
                    format!(
                        "expected at least the level's {ways} ways on a set-associative level, found {hw}"
                    ),
                );
            }
        }
        validate_index(&self.index, self.sets()).or_else(|m| f("index", m))
    }
}

/// One translation as the techniques see it (iterate, insert, save/restore).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct TlbEntry {
    /// VPN counted in `size` units.
    pub vpn: Vpn,
    pub size: PageSize,
    /// First 4 KiB frame of the page.
    pub pfn: Pfn,
    pub asid: Asid,
    pub vmid: Vmid,
    pub global: bool,
    pub domain: Domain,
    pub hw_thread: u8,
    pub locked: bool,
}

impl TlbEntry {
    pub fn new(vpn: Vpn, size: PageSize, pfn: Pfn, asid: Asid) -> TlbEntry {
        TlbEntry {
            vpn,
            size,
            pfn,
            asid,
            vmid: Vmid(0),
            global: false,
            domain: Domain(0),
            hw_thread: 0,
            locked: false,
        }
    }
}

/// The fields of a TLB slot besides its key (see `Tlb::payload`). `repr(C)`: 16 bytes without
/// padding, the frame and then the tags, so the fast lane's pair loops build it from two
/// words and store it as two (`Payload::from_words`).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, Default)]
#[repr(C)]
pub(crate) struct Payload {
    pub(crate) pfn: Pfn,
    pub(crate) asid: Asid,
    pub(crate) vmid: Vmid,
    pub(crate) domain: Domain,
    pub(crate) hw_thread: u8,
    pub(crate) global: bool,
    pub(crate) locked: bool,
}

const _: () = assert!(std::mem::size_of::<Payload>() == 16);
const _: () = assert!(std::mem::align_of::<Payload>() == 8);

impl Payload {
    /// The word of everything but the frame (`from_words`).
    #[inline(always)]
    pub(crate) fn tags_word(self) -> u64 {
        // SAFETY: `Payload` is `repr(C)`, 16 bytes of fields without padding (asserted above),
        // so it reads as two initialised words.
        let [_, tags]: [u64; 2] = unsafe { std::mem::transmute(self) };
        tags
    }

    /// The payload of frame `pfn` and the tags of `tags`, a `tags_word`. Built once per
    /// stretch, the word keeps the compiler from storing the tags field by field (measured:
    /// the pair loops, which fill two levels per reference on a stream missing both, stored
    /// a payload built from fields in up to six stores).
    #[inline(always)]
    pub(crate) fn from_words(pfn: Pfn, tags: u64) -> Payload {
        // SAFETY: `tags` is the second word of a valid `Payload` (`tags_word`), and any frame
        // number is a valid first word.
        unsafe { std::mem::transmute([pfn.0, tags]) }
    }

    /// The payload of `e` with every tag of the entry, locked (as the lockable array holds it).
    fn locked_from(e: &TlbEntry) -> Payload {
        Payload {
            pfn: e.pfn,
            asid: e.asid,
            vmid: e.vmid,
            domain: e.domain,
            hw_thread: e.hw_thread,
            global: e.global,
            locked: true,
        }
    }

    /// What a level fills for `req` from `found`, the entry of a level below that hit: `req`'s
    /// entry of `found`'s frame and domain, global if `found` is (a kernel entry stays global
    /// in every level it is copied to, as `System::access`'s fills keep it).
    #[inline(always)]
    pub(crate) fn copied_for(found: Payload, req: Requester) -> Payload {
        Payload {
            global: found.global,
            ..Payload::filled(found.pfn, found.domain, req)
        }
    }

    /// What the simulator fills for `req`: an entry of its ASID, VMID and hardware thread,
    /// neither global nor locked (as `System::reference_full` builds it).
    #[inline(always)]
    pub(crate) fn filled(pfn: Pfn, domain: Domain, req: Requester) -> Payload {
        Payload {
            pfn,
            asid: req.asid,
            vmid: req.vmid,
            domain,
            hw_thread: req.hw_thread,
            global: false,
            locked: false,
        }
    }
}

/// Who is asking: the tags a lookup must match.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Requester {
    pub asid: Asid,
    pub vmid: Vmid,
    pub hw_thread: u8,
}

/// An entry `Tlb::peek` found: where it is, its key and page size, its frame.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug)]
pub(crate) struct FoundEntry {
    pub slot: usize,
    pub key: u64,
    /// The address looked up (the memo's, `Tlb::hit_slot`).
    pub va: u64,
    pub size: PageSize,
    pub pfn: Pfn,
}

/// The result of a hit.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub struct TlbHit {
    pub slot: usize,
    pub pfn: Pfn,
    pub size: PageSize,
    pub domain: Domain,
}

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
/// in correctness. The pair loops (tlb/pair.rs) compute it once per reference and pass it to
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
        // Every entry of a lockable array is locked, so a level without locks skips it.
        if found.is_none() && self.locked_count != 0 && self.config.lockable_array {
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

    /// Clears the lockable array's `slot` (a locked entry).
    fn array_clear(&mut self, slot: usize) {
        self.count_size((self.keys.get(slot) & 7) as usize, false);
        self.write_key(slot, INVALID);
        self.payload[slot].locked = false;
        self.locked_count -= 1;
        self.memo_slot = usize::MAX;
    }

    /// Puts `e` into the lockable array's free `slot`, locked.
    fn array_put(&mut self, slot: usize, e: &TlbEntry) {
        let key = pack(e.vpn.0, e.size);
        self.count_size(e.size.index(), true);
        self.write_key(slot, key);
        self.payload[slot] = Payload::locked_from(e);
        if let Some(u) = self.uses.get_mut(slot) {
            *u = (0, 0);
        }
        self.locked_count += 1;
        self.memo_slot = usize::MAX;
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
        // A lockable array (`lockable_array`) holds only locked entries, so it is empty here;
        // the lanes borrow the sets' slots, `0..array_base`, and never search it.
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

    /// Looks up without changing any state (for techniques and tests).
    pub fn probe(&self, va: VirtAddr, req: Requester) -> Option<TlbEntry> {
        for &size in &self.sizes {
            let vpn = va.0 >> size.shift();
            let key = pack(vpn, size);
            let base = self.index.set_of(vpn) * self.ways;
            for slot in base..base + self.ways {
                if self.keys.get(slot) == key && self.tags_match(slot, req) {
                    return Some(self.entry_at(slot));
                }
            }
        }
        self.array_find(va, req)
            .map(|(slot, ..)| self.entry_at(slot))
    }

    fn entry_at(&self, slot: usize) -> TlbEntry {
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
    fn insert_reporting<const REPORT: bool, const ABSENT: bool>(
        &mut self,
        e: TlbEntry,
    ) -> (bool, Option<TlbEntry>) {
        if !self.holds_size(e.size) {
            return (false, None);
        }
        self.memo_slot = usize::MAX;
        if self.config.lockable_array && (e.locked || (!ABSENT && self.locked_count != 0)) {
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
            self.payload[slot] = Payload::locked_from(e);
            return Some(false);
        }
        if !e.locked {
            return None;
        }
        let slot = self.array_free_slot()?;
        // The same translation in its set moves into the array.
        let base = self.index.set_of(e.vpn.0) * self.ways;
        if let Some(in_set) =
            (base..base + self.ways).find(|&s| self.keys.get(s) == key && self.tags_match(s, req))
        {
            self.invalidate_slot(in_set);
        }
        self.array_put(slot, e);
        Some(false)
    }

    fn invalidate_slot(&mut self, slot: usize) {
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
    /// loops need not wait for the level to fill (tlb/pair.rs).
    pub(crate) fn fills_oldest_first(&self) -> bool {
        matches!(self.repl, Replacement::Lru(_))
    }

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
            let size = self.sizes[i];
            let vpn = va.0 >> size.shift();
            let key = pack(vpn, size);
            let base = self.index.set_of(vpn) * self.ways;
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
        if LOCKED {
            for slot in self.array_base..self.keys.len() {
                let key = self.keys.get(slot);
                if key == INVALID {
                    continue;
                }
                let size = PageSize::ALL[(key & 7) as usize];
                if key == pack(va.0 >> size.shift(), size)
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
                self.invalidate_slot(slot);
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
            // Locking moves the entry from its set into a free slot of the array.
            if self.array_find(va, req).is_some() {
                return true;
            }
            let (Some((slot, ..)), Some(free)) =
                (self.search_sets(va, req), self.array_free_slot())
            else {
                return false;
            };
            let e = self.entry_at(slot);
            self.invalidate_slot(slot);
            self.array_put(free, &e);
            return true;
        }
        for i in 0..self.sizes.len() {
            let size = self.sizes[i];
            let vpn = va.0 >> size.shift();
            let key = pack(vpn, size);
            let base = self.index.set_of(vpn) * self.ways;
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
            let key = self.keys.get(slot);
            if key == INVALID {
                continue;
            }
            let size = PageSize::ALL[(key & 7) as usize];
            if key == pack(va.0 >> size.shift(), size) {
                let mut e = self.entry_at(slot);
                e.locked = false;
                self.array_clear(slot);
                self.insert_reporting::<false, false>(e);
                n += 1;
            }
        }
        for i in 0..self.sizes.len() {
            let size = self.sizes[i];
            let vpn = va.0 >> size.shift();
            let key = pack(vpn, size);
            let base = self.index.set_of(vpn) * self.ways;
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
