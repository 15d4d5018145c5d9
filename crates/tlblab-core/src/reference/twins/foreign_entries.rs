//! The twin of `foreign_entries`, a host model with no seed (docs/probe.md, "--validate";
//! issue 49), from the catalog's parameter meanings: "one entry for a page no thread uses
//! inserted into a TLB level every N references" (`every`: "one foreign entry after every N
//! references of the run"; `level`: "the TLB level that receives them (default: the data path's
//! last level)").
//!
//! Naively: before each access the timeline runs, while the run has made N more references
//! (all hardware threads together) since the last insertion, one 4 KiB entry is put into every
//! instance of the level (one per core, one if shared), as a fill would put it (the level's
//! set and replacement; ASID 0, VMID 0, hardware thread 0, frame 0). Its page: a fresh page
//! number at or above 2^52, which no virtual address of 4 KiB pages reaches, drawn as the
//! catalog's technique draws it (`SplitMix64` of the run's seed named "foreign_entries", the
//! top 40 bits of each draw), so that the twin's entries are the same pages.

use super::{number, param, Twin};
use crate::machine::{MachineConfig, TechniqueSpec};
use crate::reference::parts::Entry;
use crate::reference::ReferenceModel;
use crate::tlb::TlbKind;
use tlblab_types::{PageSize, SplitMix64};

pub(crate) struct ForeignTwin {
    every: u64,
    level: String,
    /// The reference count at which the next insertion is due.
    due: u64,
    rng: SplitMix64,
    inserted: u64,
    evicted: u64,
}

impl Twin for ForeignTwin {
    fn new(spec: &TechniqueSpec, m: &MachineConfig, seed: u64) -> Result<ForeignTwin, String> {
        let every = number(spec, "every", "0")?;
        if every == 0 {
            return Err("twin foreign_entries: every must be at least 1".into());
        }
        let named = param(spec, "level", "");
        // The named level, else the deepest level a data reference looks up.
        let mut chosen: Option<&crate::tlb::TlbConfig> = None;
        for t in &m.tlbs {
            let fits = if named.is_empty() {
                t.kind != TlbKind::Instr && chosen.is_none_or(|c| t.level >= c.level)
            } else {
                t.name == named && chosen.is_none()
            };
            if fits {
                chosen = Some(t);
            }
        }
        let t = chosen.ok_or("twin foreign_entries: no such TLB level")?;
        if !t.page_sizes.contains(&PageSize::Size4K) {
            return Err(format!(
                "twin foreign_entries: {} holds no 4 KiB pages",
                t.name
            ));
        }
        Ok(ForeignTwin {
            every,
            level: t.name.clone(),
            due: every,
            rng: SplitMix64::derive(seed, "foreign_entries"),
            inserted: 0,
            evicted: 0,
        })
    }

    fn on_clock(&mut self, r: &mut ReferenceModel, _until: u64) -> Result<(), String> {
        while r.references >= self.due {
            self.due += self.every;
            let vpn = (1u64 << 52) | (self.rng.next_u64() >> 24);
            for i in 0..r.tlbs.len() {
                if r.tlbs[i].name != self.level {
                    continue;
                }
                self.inserted += 1;
                let e = Entry {
                    vpn,
                    size: PageSize::Size4K,
                    pfn: 0,
                    asid: 0,
                    vmid: 0,
                    hw_thread: 0,
                    locked: false,
                    global: false,
                    uses: 0,
                    last_use: 0,
                };
                if r.tlbs[i].insert(e) {
                    self.evicted += 1;
                }
            }
        }
        Ok(())
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![
            ("foreign_inserted".into(), self.inserted),
            ("foreign_evicted".into(), self.evicted),
        ]
    }
}
