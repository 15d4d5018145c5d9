//! A TLB level's configuration as a machine file gives it (`TlbConfig`: kind, level, entries,
//! ways, set index, tags, page sizes, lockable entries, latency) and its checks.

use super::*;

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
    /// Whether the lockable array (`lockable_array`) also takes ordinary, unlocked entries while
    /// it holds no locked one: "As long as the lockable region does not contain any locked
    /// entries, it can be allocated with non-locked entries to increase overall main TLB
    /// storage size" (Cortex-A9 TRM DDI0388I §6.2.2 Main TLB). The TRM does not say how a fill
    /// chooses between a set's ways and the array, so the model extends the level's random
    /// replacement (the A9's, seed 004 §V.1) over both: a fill into a full set takes a free
    /// array slot if there is one, else its victim is drawn uniformly among the set's ways and
    /// the array's slots. Once an entry is locked the array takes no new unlocked entry; a lock
    /// takes a free slot, else the first slot holding an unlocked entry (the lockdown register's
    /// victim field counts up the four slots, TRM §4.3.15). Unlocked entries of the array are
    /// maintained as any unlocked entry is (flushes take them). Random replacement only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub array_holds_unlocked: bool,
    /// Whether this level is flushed whole (a) whenever the core's address space changes, the
    /// Context ID register's write in Linux's `switch_mm`, even though its entries carry ASIDs,
    /// and (b) whenever an entry is locked into a lockable level below it on its core. The
    /// Cortex-A9's micro TLBs: "All main TLB related operations affect both the instruction
    /// and data micro TLBs, causing them to be flushed. In the same way, any change of the
    /// Context ID Register causes the micro TLBs to be flushed" (Cortex-A9 TRM DDI0388I r4p1,
    /// §6.2.1 Micro TLB); a lock is a main-TLB operation (the c10 lockdown register, §4.3.15).
    #[serde(default, skip_serializing_if = "is_false")]
    pub flush_on_context_change: bool,
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
            array_holds_unlocked: false,
            flush_on_context_change: false,
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
        if self.array_holds_unlocked
            && !(self.lockable_array
                && self.lockable > 0
                && self.replacement == ReplacementKind::Random)
        {
            return f(
                "array_holds_unlocked",
                "needs a lockable array (lockable > 0, lockable_array = true) and replacement = \"random\"".into(),
            );
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
