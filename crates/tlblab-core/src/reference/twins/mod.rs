//! Naive twins of the techniques (`techniques/`), written from the seeds' text and the
//! catalog's parameter meanings (`tlblab techniques`), not from the engine's code: a property
//! test runs the engine with a technique and the reference with its twin on the same random
//! machines, records and parameters and compares every counter (docs/reference-model.md).
//!
//! A twin parses its own parameters (the spec's text, naively: no engine parser), and acts at
//! the moments the technique's seed names, its hooks named by those events as the engine's
//! are: `on_records` before the records run (an allocator's placement), `on_switch_in` after a
//! thread is switched in (a program's start), `on_migrate` when a `Migrate` record moves a
//! thread (Linux's `move_queued_task`), `on_space_switch`, `on_event`, `on_domain_fault`,
//! `on_clock`. Twins import nothing of `techniques/`: the registry (`crate::registry`) pairs
//! them with the models.

pub(crate) mod fass;
pub(crate) mod foreign_entries;
pub(crate) mod lockdown;
pub(crate) mod pt_baker;
pub(crate) mod tlb_coloring;
pub(crate) mod tlb_migration;

use super::domains::Fault;
use super::ReferenceModel;
use crate::machine::{MachineConfig, TechniqueSpec};
use tlblab_trace::{Event, Record};

pub(crate) use fass::FassTwin;
pub(crate) use foreign_entries::ForeignTwin;
pub(crate) use lockdown::LockdownTwin;
pub(crate) use pt_baker::PtBakerTwin;
pub(crate) use tlb_coloring::ColoringTwin;
pub(crate) use tlb_migration::MigrationTwin;

/// The process of `thread` among `starts`, (thread, process) as the records' `ThreadStart`s
/// name them in order: the latest start's (a thread never started is in process 0).
pub(crate) fn process_of(starts: &[(u32, u32)], thread: u32) -> u32 {
    starts
        .iter()
        .rev()
        .find(|t| t.0 == thread)
        .map_or(0, |t| t.1)
}

/// What a hook that charges time returns: the cycles it costs, or why the twin cannot go on.
pub type TwinCycles = Result<u64, String>;

/// A technique's naive twin in the reference model: built from the spec's text, then called at
/// the moments its seed names. Every hook but `counters` does nothing unless the twin says
/// otherwise (the engine's `system::Technique` has the same shape; the registry,
/// `registry::REGISTRY`, pairs each technique with its twin).
pub trait Twin {
    /// The twin of the technique `spec` names for `machine` (`seed`: the run's). Its parameter
    /// names are checked against the technique's catalog entry before this is called.
    fn new(spec: &TechniqueSpec, machine: &MachineConfig, seed: u64) -> Result<Self, String>
    where
        Self: Sized;

    /// Once, before the first record: turn on what the twin needs of the reference.
    fn on_install(&mut self, _r: &mut ReferenceModel) {}

    /// Whether the run reports data TLB stall cycles because of the technique.
    fn reports_stall_cycles(&self) -> bool {
        false
    }

    /// Rewrites the whole record stream before it runs.
    fn on_records(&mut self, records: &[Record]) -> Result<Vec<Record>, String> {
        Ok(records.to_vec())
    }

    /// `thread` was switched in on hardware thread `cpu`: the cycles this costs there.
    fn on_switch_in(&mut self, _r: &mut ReferenceModel, _cpu: usize, _thread: u32) -> TwinCycles {
        Ok(0)
    }

    /// `thread` moved from hardware thread `from` to `to` (a `Migrate` record), before it
    /// runs there: the cycles this costs, charged to `to`.
    fn on_migrate(
        &mut self,
        _r: &mut ReferenceModel,
        _thread: u32,
        _from: usize,
        _to: usize,
    ) -> TwinCycles {
        Ok(0)
    }

    /// The technique's own counters, by the names `Stats::technique` gives them.
    fn counters(&self) -> Vec<(String, u64)>;

    /// The technique's own hardware threads run up to time `until` (`Technique::on_clock`).
    fn on_clock(&mut self, _r: &mut ReferenceModel, _until: u64) -> Result<(), String> {
        Ok(())
    }

    /// An event record, after the reference applied it; charges nothing.
    fn on_event(&mut self, _r: &mut ReferenceModel, _e: &Event) -> Result<(), String> {
        Ok(())
    }

    /// A change of address space on `cpu` from `from` to `to`: Some(cycles) when the twin
    /// does what the switch does instead of the switch policy (seed 002's DACR reload).
    fn on_space_switch(
        &mut self,
        _r: &mut ReferenceModel,
        _cpu: usize,
        _from: Option<usize>,
        _to: usize,
    ) -> Result<Option<u64>, String> {
        Ok(None)
    }

    /// A reference of `space` on `cpu` faulted on ARM domains (`domains.rs`): the cycles of
    /// the handler, which must make the check pass.
    fn on_domain_fault(
        &mut self,
        _r: &mut ReferenceModel,
        _cpu: usize,
        _space: usize,
        va: u64,
        fault: Fault,
    ) -> Result<u64, String> {
        Err(format!("{fault:?} fault at {va:#x} without domains"))
    }
}

/// The value of `name` in `spec`, or `default`.
pub(super) fn param<'a>(spec: &'a TechniqueSpec, name: &str, default: &'a str) -> &'a str {
    spec.params.get(name).map_or(default, |s| s.as_str())
}

/// The value among `options` that `name` in `spec` (or `default`) spells.
pub(super) fn choice<T: Copy>(
    spec: &TechniqueSpec,
    name: &str,
    default: &str,
    options: &[(&str, T)],
) -> Result<T, String> {
    let text = param(spec, name, default);
    match options.iter().find(|(spelled, _)| *spelled == text) {
        Some(&(_, value)) => Ok(value),
        None => Err(format!("twin {}: parameter {name}: '{text}'", spec.name)),
    }
}

/// `true` or `false`.
pub(super) fn boolean(spec: &TechniqueSpec, name: &str, default: &str) -> Result<bool, String> {
    choice(spec, name, default, &[("true", true), ("false", false)])
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
    /// Puts `twin` in (`registry::Registry::install_twin` builds it from the technique's
    /// spec), before the first record: it turns on what it needs of the reference.
    pub fn set_twin(&mut self, mut twin: Box<dyn Twin>) {
        twin.on_install(self);
        self.stall_reported |= twin.reports_stall_cycles();
        self.twin = Some(twin);
    }

    /// The twin's switch (`Twin::on_space_switch`), None without a twin.
    pub(super) fn twin_switch(
        &mut self,
        cpu: usize,
        from: Option<usize>,
        to: usize,
    ) -> Result<Option<u64>, String> {
        let Some(mut twin) = self.twin.take() else {
            return Ok(None);
        };
        let r = twin.on_space_switch(self, cpu, from, to);
        self.twin = Some(twin);
        r
    }

    /// The machine a twin is built for.
    pub(crate) fn config(&self) -> &MachineConfig {
        &self.config
    }

    /// The run's seed, which a twin draws anything random from.
    pub(crate) fn seed(&self) -> u64 {
        self.opts.seed
    }

    /// The twin's counters (empty without one).
    pub fn twin_counters(&self) -> Vec<(String, u64)> {
        self.twin.as_ref().map_or(Vec::new(), |t| t.counters())
    }
}
