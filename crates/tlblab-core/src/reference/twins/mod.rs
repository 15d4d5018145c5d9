//! Naive twins of the techniques (`techniques/`), written from the seeds' text and the
//! catalog's parameter meanings (`tlblab techniques`), not from the engine's code: a property
//! test runs the engine with a technique and the reference with its twin on the same random
//! machines, records and parameters and compares every counter (docs/reference-model.md).
//!
//! A twin parses its own parameters (the spec's text, naively: no engine parser), and acts at
//! the moments the technique's seed names: `transform` before the records run (an allocator's
//! placement), `on_switch_in` after a thread is switched in (a program's start),
//! `on_migrate` when a `Migrate` record moves a thread (Linux's `move_queued_task`).

mod fass;
mod foreign_entries;
mod lockdown;
mod pt_baker;
mod tlb_coloring;
mod tlb_migration;

use super::domains::Fault;
use super::ReferenceModel;
use crate::machine::TechniqueSpec;
use tlblab_trace::{Event, Record};

pub(super) use fass::FassTwin;
pub(super) use foreign_entries::ForeignTwin;
pub(super) use lockdown::LockdownTwin;
pub(super) use pt_baker::PtBakerTwin;
pub(super) use tlb_coloring::ColoringTwin;
pub(super) use tlb_migration::MigrationTwin;

/// The twin installed in a reference run.
pub(super) enum Twin {
    Coloring(ColoringTwin),
    Lockdown(LockdownTwin),
    Fass(Box<FassTwin>),
    PtBaker(Box<PtBakerTwin>),
    Foreign(ForeignTwin),
    Migration(MigrationTwin),
}

impl Twin {
    /// Rewrites the whole record stream before it runs.
    pub(super) fn transform(&mut self, records: &[Record]) -> Result<Vec<Record>, String> {
        match self {
            Twin::Coloring(t) => Ok(t.transform(records)),
            Twin::Lockdown(_) => Ok(records.to_vec()),
            Twin::Fass(t) => t.transform(records),
            Twin::PtBaker(_) => Ok(records.to_vec()),
            Twin::Foreign(_) => Ok(records.to_vec()),
            Twin::Migration(_) => Ok(records.to_vec()),
        }
    }

    /// `thread` was switched in on hardware thread `cpu`: the cycles this costs there.
    pub(super) fn on_switch_in(
        &mut self,
        r: &mut ReferenceModel,
        cpu: usize,
        thread: u32,
    ) -> Result<u64, String> {
        match self {
            Twin::Coloring(_) => Ok(0),
            Twin::Lockdown(t) => t.on_switch_in(r, cpu, thread),
            Twin::Fass(_) => Ok(0),
            Twin::PtBaker(_) => Ok(0),
            Twin::Foreign(_) => Ok(0),
            Twin::Migration(t) => t.on_switch_in(r, cpu, thread),
        }
    }

    /// `thread` moved from hardware thread `from` to `to` (a `Migrate` record), before it
    /// runs there: the cycles this costs, charged to `to`.
    pub(super) fn on_migrate(
        &mut self,
        r: &mut ReferenceModel,
        thread: u32,
        from: usize,
        to: usize,
    ) -> Result<u64, String> {
        match self {
            Twin::Migration(t) => t.on_migrate(r, thread, from, to),
            _ => Ok(0),
        }
    }

    /// The technique's own counters, by the names `Stats::technique` gives them.
    pub(super) fn counters(&self) -> Vec<(String, u64)> {
        match self {
            Twin::Coloring(t) => t.counters(),
            Twin::Lockdown(t) => t.counters(),
            Twin::Fass(t) => t.counters(),
            Twin::Migration(t) => t.counters(),
            Twin::PtBaker(t) => t.counters(),
            Twin::Foreign(t) => t.counters(),
        }
    }

    /// The technique's own hardware threads run up to time `until` (`Technique::run_companion`).
    pub(super) fn run_companion(
        &mut self,
        r: &mut ReferenceModel,
        until: u64,
    ) -> Result<(), String> {
        match self {
            Twin::PtBaker(t) => t.run_companion(r, until),
            Twin::Foreign(t) => t.run_companion(r, until),
            _ => Ok(()),
        }
    }

    /// An event record, after the reference applied it; charges nothing.
    pub(super) fn on_event(&mut self, r: &mut ReferenceModel, e: &Event) -> Result<(), String> {
        match self {
            Twin::PtBaker(t) => t.on_event(r, e),
            Twin::Fass(t) => t.on_event(r, *e),
            _ => Ok(()),
        }
    }

    /// Whether the run reports data TLB stall cycles because of the technique.
    pub(super) fn reports_stall_cycles(&self) -> bool {
        matches!(self, Twin::Lockdown(_))
    }

    /// A change of address space on `cpu` from `from` to `to`: Some(cycles) when the twin
    /// does what the switch does instead of the switch policy (seed 002's DACR reload).
    pub(super) fn on_switch(
        &mut self,
        r: &mut ReferenceModel,
        cpu: usize,
        from: Option<usize>,
        to: usize,
    ) -> Result<Option<u64>, String> {
        match self {
            Twin::Fass(t) => t.on_switch(r, cpu, from, to).map(Some),
            _ => Ok(None),
        }
    }

    /// A reference of `space` on `cpu` faulted on ARM domains (`domains.rs`): the cycles of
    /// the handler, which must make the check pass.
    pub(super) fn on_domain_fault(
        &mut self,
        r: &mut ReferenceModel,
        cpu: usize,
        space: usize,
        va: u64,
        fault: Fault,
    ) -> Result<u64, String> {
        match self {
            Twin::Fass(t) => t.on_domain_fault(r, cpu, space, va, fault),
            _ => Err(format!("{fault:?} fault at {va:#x} without domains")),
        }
    }
}

/// The value of `name` in `spec`, or `default`.
pub(super) fn param<'a>(spec: &'a TechniqueSpec, name: &str, default: &'a str) -> &'a str {
    spec.params.get(name).map_or(default, |s| s.as_str())
}

/// A number as a parameter is written: decimal, or hexadecimal after `0x`.
pub(super) fn number(spec: &TechniqueSpec, name: &str, default: &str) -> Result<u64, String> {
    let text = param(spec, name, default);
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| format!("twin {}: parameter {name}: '{text}'", spec.name))
}

impl ReferenceModel {
    /// Installs the naive twin of the technique `spec` names (before the first record, as
    /// `techniques::install`). The techniques without a twin yet are refused
    /// (docs/reference-model.md says which and why).
    pub fn install_twin(&mut self, spec: &TechniqueSpec) -> Result<(), String> {
        let known = [
            "tlb_coloring",
            "lockdown",
            "pt_baker",
            "foreign_entries",
            "tlb_migration",
            "fass",
        ];
        for k in spec.params.keys() {
            let ok = match spec.name.as_str() {
                "tlb_coloring" => tlb_coloring::PARAMS.contains(&k.as_str()),
                "lockdown" => lockdown::PARAMS.contains(&k.as_str()),
                "pt_baker" => pt_baker::PARAMS.contains(&k.as_str()),
                "foreign_entries" => foreign_entries::PARAMS.contains(&k.as_str()),
                "tlb_migration" => tlb_migration::PARAMS.contains(&k.as_str()),
                "fass" => fass::PARAMS.contains(&k.as_str()),
                _ => true,
            };
            if !ok {
                return Err(format!("twin {}: no parameter '{k}'", spec.name));
            }
        }
        let twin = match spec.name.as_str() {
            "tlb_coloring" => Twin::Coloring(ColoringTwin::new(spec, &self.config)?),
            "lockdown" => Twin::Lockdown(LockdownTwin::new(spec, &self.config)?),
            "pt_baker" => Twin::PtBaker(Box::new(PtBakerTwin::new(
                spec,
                &self.config,
                self.opts.seed,
            )?)),
            "foreign_entries" => {
                Twin::Foreign(ForeignTwin::new(spec, &self.config, self.opts.seed)?)
            }
            "fass" => Twin::Fass(Box::new(FassTwin::new(spec, &self.config)?)),
            "tlb_migration" => {
                let t = MigrationTwin::new(spec, &self.config)?;
                self.track_uses |= t.counts_uses();
                Twin::Migration(t)
            }
            other => {
                return Err(format!(
                    "the reference has no twin of technique '{other}' (twins: {})",
                    known.join(", ")
                ))
            }
        };
        self.stall_reported |= twin.reports_stall_cycles();
        if let Twin::Fass(t) = &twin {
            // seed 002 §2.1: the domain checks are on from the start, the kernel's domains
            // enabled.
            self.enable_domains(t.dacr_of(None));
        }
        self.twin = Some(twin);
        Ok(())
    }

    /// The twin's switch (`Twin::on_switch`), None without a twin.
    pub(super) fn twin_switch(
        &mut self,
        cpu: usize,
        from: Option<usize>,
        to: usize,
    ) -> Result<Option<u64>, String> {
        let Some(mut twin) = self.twin.take() else {
            return Ok(None);
        };
        let r = twin.on_switch(self, cpu, from, to);
        self.twin = Some(twin);
        r
    }

    /// The twin's counters (empty without one).
    pub fn twin_counters(&self) -> Vec<(String, u64)> {
        self.twin.as_ref().map_or(Vec::new(), Twin::counters)
    }
}
