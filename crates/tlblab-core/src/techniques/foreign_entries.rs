//! Foreign occupants of a TLB level: entries for pages no thread of the run uses, inserted into
//! one level at a fixed rate, as another tenant of a shared TLB would insert them (the sibling
//! hardware thread of an SMT core, a hypervisor, the host kernel). Not one of the seeds'
//! techniques: a model of the host, for machines the probe measures (docs/probe.md,
//! "--validate"; issue 49). The Intel VM's STLB (16 ways) starts missing under the probe's chain
//! at 8 pages a set, which no replacement policy of a 16-way set can do on its own: something
//! outside the chain occupies its ways.
//!
//! The model: after every `every` references of the run (the engine's count, all hardware
//! threads together: `System::references_so_far`), one entry is inserted into the level named
//! `level` of every core (one insertion if the level is shared). Its page is drawn from a
//! `SplitMix64` of the run's seed, a fresh virtual page number at or above 2^52, which no
//! 64-bit virtual address of 4 KiB pages reaches, so no thread's lookup can ever hit it; its set
//! is the one the level's own index function gives that number (uniform over the sets for
//! the low-bit, bit-list and XOR indexes). It evicts by the level's replacement policy, as a
//! fill does (`Tlb::insert`). The insertion is a companion (`Technique::on_clock`): it
//! runs before each access on the general path only, so a run with it takes no lane, and a run
//! without it executes what it did before.
//!
//! Closed form (the unit tests check it): on an LRU level of W ways, a page re-referenced after
//! D distinct other entries of its set hits iff D < W. A cyclic chain of k pages in one set
//! re-references each page after k − 1 chain pages and F foreign entries, F the insertions in
//! that window of k references: ⌊k/N⌋ or ⌈k/N⌉. So it never misses if k + ⌈k/N⌉ ≤ W, always
//! misses if k + ⌊k/N⌋ > W, and in between misses in the fraction of windows that hold ⌈k/N⌉
//! insertions, (k mod N)/N. Over S sets with sets drawn at random, a chain of n = kS pages
//! (one lap of n references between a page's uses) gives each set F ~ Binomial(n/N, 1/S)
//! foreign entries per lap, and a page misses iff F ≥ W − k + 1 (`python/tlblab/probe.py`
//! inverts this for N).

use super::{Model, ParamInfo, Params, TechniqueInfo};
use crate::machine::MachineConfig;
use crate::system::{Declaration, SimError, System, Technique};
use crate::tlb::{TlbEntry, TlbKind};
use tlblab_types::{Asid, PageSize, Pfn, SplitMix64, Vpn};

pub const INFO: TechniqueInfo = TechniqueInfo {
    name: "foreign_entries",
    summary: "a host model: one entry for a page no thread uses inserted into a TLB level every N references (a shared TLB's other tenants)",
    seed: "none (a host model for tlblab probe --validate, docs/probe.md; issue 49)",
    params: &[
        ParamInfo {
            name: "every",
            default: "0",
            meaning: "N: one foreign entry after every N references of the run (required, at least 1)",
        },
        ParamInfo {
            name: "level",
            default: "",
            meaning: "the TLB level that receives them (default: the data path's last level)",
        },
    ],
};

/// The first foreign page number: at or above 2^52 no virtual address of 4 KiB pages maps.
const FOREIGN_BASE: u64 = 1 << 52;

pub struct ForeignEntries {
    every: u64,
    level: String,
    /// The engine's `Tlb` indices of the level, one per core (one if shared); found at install.
    tlbs: Vec<usize>,
    /// The reference count at which the next insertion comes.
    next: u64,
    rng: SplitMix64,
    inserted: u64,
    evicted: u64,
}

/// The level `level` names in `machine` (empty: the data path's last level, by `level`).
fn target_level<'m>(
    machine: &'m MachineConfig,
    level: &str,
) -> Result<&'m crate::tlb::TlbConfig, String> {
    if level.is_empty() {
        return machine
            .tlbs
            .iter()
            .filter(|t| t.kind != TlbKind::Instr)
            .max_by_key(|t| t.level)
            .ok_or_else(|| {
                format!(
                    "technique foreign_entries: machine {} has no data TLB level",
                    machine.name
                )
            });
    }
    super::tlb_level_named("foreign_entries", machine, level)
}

impl Model for ForeignEntries {
    fn build(p: &Params, machine: &MachineConfig, seed: u64) -> Result<Self, String> {
        let every = p.u64_in("every", 1, u64::MAX)?;
        let level = target_level(machine, p.text("level"))?;
        if !level.page_sizes.contains(&PageSize::Size4K) {
            return Err(format!(
                "technique foreign_entries: TLB level {} holds no 4 KiB pages, the foreign entries' size",
                level.name
            ));
        }
        Ok(ForeignEntries {
            every,
            level: level.name.clone(),
            tlbs: Vec::new(),
            next: every,
            rng: SplitMix64::derive(seed, "foreign_entries"),
            inserted: 0,
            evicted: 0,
        })
    }
}

impl Technique for ForeignEntries {
    fn declaration(&self) -> Declaration {
        Declaration {
            name: INFO.name,
            has_companion: true,
            ..Declaration::named(INFO.name)
        }
    }

    fn on_install(&mut self, sys: &mut System) -> Result<(), SimError> {
        self.tlbs = (0..sys.tlbs.len())
            .filter(|&t| sys.tlbs[t].config.name == self.level)
            .collect();
        self.next = sys.references_so_far() + self.every;
        Ok(())
    }

    /// Before each access: the insertions due by the references simulated so far.
    fn on_clock(&mut self, sys: &mut System, _until: u64) -> Result<(), SimError> {
        while sys.references_so_far() >= self.next {
            self.next += self.every;
            // 40 random bits: far more pages than any run inserts, so a repeat (which would
            // refresh an entry instead of adding one) is a ~2^-20 event per million insertions.
            let vpn = FOREIGN_BASE | (self.rng.next_u64() >> 24);
            let e = TlbEntry::new(Vpn(vpn), PageSize::Size4K, Pfn(0), Asid(0));
            for &t in &self.tlbs {
                self.inserted += 1;
                self.evicted += sys.tlbs[t].fill(e) as u64;
            }
        }
        Ok(())
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![
            ("foreign_inserted".to_string(), self.inserted),
            ("foreign_evicted".to_string(), self.evicted),
        ]
    }
}
