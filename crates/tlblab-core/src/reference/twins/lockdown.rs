//! The twin of `lockdown`, from seed 004 (Song, Park, Kim 2022): "TLB lockdown excludes the
//! designated TLB entries from the TLB's replacement policy" (§I); the Cortex-A9's main TLB
//! has 4 lockable data entries (§III, Fig. 1); the process's most frequently accessed pages,
//! found by memory profiling, are locked (§IV, Fig. 3) before it runs; what is measured is the
//! data TLB miss stall cycles of the micro and the main TLB (§V, Tables 2-3).
//!
//! Naively: the first time a thread of the chosen process is switched in (the program's
//! start), each page is translated on that hardware thread (the walk paid there) and put,
//! locked, into the lockable level of its core (`cores=one`) or of every core (`cores=all`).
//! Pages as the catalog gives them: addresses joined by '+', each rounded down to its 4 KiB
//! page, a page named twice locked once.

use super::{choice, number, param, Twin, TwinCycles};
use crate::machine::{MachineConfig, TechniqueSpec};
use crate::reference::ReferenceModel;
use crate::tlb::TlbKind;

pub(crate) struct LockdownTwin {
    pages: Vec<u64>,
    process: usize,
    every_core: bool,
    level: String,
    started: bool,
    locked: u64,
    cycles: u64,
}

impl Twin for LockdownTwin {
    fn new(spec: &TechniqueSpec, m: &MachineConfig, _seed: u64) -> Result<LockdownTwin, String> {
        // The level: named, or the lowest data-path level with lockable entries (§III: the
        // main TLB, the Cortex-A9's second level).
        let level = param(spec, "level", "");
        let lockable: Vec<_> = m
            .tlbs
            .iter()
            .filter(|t| t.lockable > 0 && t.kind != TlbKind::Instr)
            .filter(|t| level.is_empty() || t.name == level)
            .collect();
        let Some(t) = lockable.iter().min_by_key(|t| t.level) else {
            return Err("twin lockdown: no lockable data TLB level".into());
        };
        let mut pages: Vec<u64> = Vec::new();
        for item in param(spec, "pages", "").split('+') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let one = TechniqueSpec {
                name: spec.name.clone(),
                params: [("page".to_string(), item.to_string())].into(),
            };
            let page = number(&one, "page", "")? / 4096 * 4096;
            if !pages.contains(&page) {
                pages.push(page);
            }
        }
        let count = number(spec, "count", "0")?;
        if pages.len() > t.lockable || count as usize > t.lockable {
            return Err(format!(
                "twin lockdown: more pages than the {} lockable entries of {}",
                t.lockable, t.name
            ));
        }
        let every_core = choice(spec, "cores", "one", &[("one", false), ("all", true)])?;
        Ok(LockdownTwin {
            pages,
            process: number(spec, "process", "0")? as usize,
            every_core,
            level: t.name.clone(),
            started: false,
            locked: 0,
            cycles: 0,
        })
    }

    fn reports_stall_cycles(&self) -> bool {
        true
    }

    fn on_switch_in(&mut self, r: &mut ReferenceModel, cpu: usize, thread: u32) -> TwinCycles {
        let space = r.threads[&thread].0;
        if self.started || space != self.process {
            return Ok(0);
        }
        self.started = true;
        let cores: Vec<usize> = if self.every_core {
            (0..r.cores.len()).collect()
        } else {
            vec![r.cpus[cpu].core]
        };
        let mut cycles = 0;
        for &page in &self.pages {
            let (c, n) = r.lock_page(space, page, cpu, &cores, &self.level)?;
            cycles += c;
            self.locked += n as u64;
        }
        self.cycles += cycles;
        Ok(cycles)
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![
            ("pages_requested".into(), self.pages.len() as u64),
            ("entries_locked".into(), self.locked),
            ("lock_cycles".into(), self.cycles),
        ]
    }
}
