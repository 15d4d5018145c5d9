//! The engine's one extension point for techniques (`crate::techniques` holds the models).
//!
//! A technique is installed on a `System` before its first record (`System::install_technique`)
//! and is called at the OS events it acts on: a change of address space (it may replace the
//! switch policy: ARM domains, seed 002), a thread's switch-in (seed 000 §7 restores saved TLB
//! entries in `finish_task_switch`), a migration (seed 000 saves entries on the source core),
//! every event record (lock/unlock, phases), and once per batch of records before the engine
//! sees them (placement techniques such as seed 003's coloring rewrite the addresses). Every
//! call is made at an event or a batch, never per access, so a run without a technique pays
//! nothing, and a run with one takes the general path: the memo lane, the fast lane and the
//! independent-hardware-thread loop (`run_apart`) step aside unless the technique says that the
//! parity tests cover it (`lanes_allowed`).
//!
//! Contract: hooks may change any TLB, cache or page-walk cache, call the engine's operations
//! (`Tlb::insert`, `invalidate_*`, `lock`, `System::access`, …), and return the cycles they cost,
//! which the engine charges to the hardware thread named in the call. They must be
//! deterministic (draw randomness from a `SplitMix64` seeded from `RunOptions::seed`).

use super::{SimError, System};
use tlblab_trace::{Event, Record};
use tlblab_types::ThreadId;

pub trait Technique: Send {
    /// The catalog name (`tlblab techniques`).
    fn name(&self) -> &'static str;

    /// Once, after the machine is built and before the first record: set up state, lock
    /// entries, map pages.
    fn install(&mut self, _sys: &mut System) -> Result<(), SimError> {
        Ok(())
    }

    /// Rewrites a batch of records before the engine simulates them (the batch is the engine's
    /// own copy; records may be changed, added or removed). Placement techniques move accesses
    /// to the addresses their allocator would have given. Called for every batch, in order.
    fn transform(&mut self, _records: &mut Vec<Record>) -> Result<(), SimError> {
        Ok(())
    }

    /// A change of address space on hardware thread `cpu` from space `from` (None: the core
    /// held none) to `to`. `Some(cycles)` replaces the switch policy (it did what a switch does
    /// and costs `cycles` beyond `os.switch_cycles`); `None` lets the policy act. Under
    /// `os.switch = "hook"` a technique must answer `Some`.
    fn on_switch(
        &mut self,
        _sys: &mut System,
        _cpu: usize,
        _from: Option<usize>,
        _to: usize,
    ) -> Result<Option<u64>, SimError> {
        Ok(None)
    }

    /// After `thread` was switched in on `cpu` (any switch, the address space changed or not),
    /// before its first access there: Linux's `finish_task_switch`. Returns cycles.
    fn on_switch_in(
        &mut self,
        _sys: &mut System,
        _cpu: usize,
        _thread: ThreadId,
    ) -> Result<u64, SimError> {
        Ok(0)
    }

    /// `thread` of address space `space` moved from hardware thread `from` to `to`, after its
    /// clock was carried over and before it runs on `to`: Linux's `move_queued_task`. Returns
    /// the cycles it costs, charged to `to`.
    fn on_migrate(
        &mut self,
        _sys: &mut System,
        _thread: ThreadId,
        _space: usize,
        _from: usize,
        _to: usize,
    ) -> Result<u64, SimError> {
        Ok(0)
    }

    /// Every event record, after the engine applied it. Returns cycles, charged to
    /// hardware thread `cpu` (the event's core, or the core of its thread; 0 otherwise).
    fn on_event(
        &mut self,
        _sys: &mut System,
        _cpu: usize,
        _event: &Event,
    ) -> Result<u64, SimError> {
        Ok(0)
    }

    /// The technique's own counters (entries saved, restored, filtered, …), for `Stats::technique`.
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// Whether the lanes may serve a run with this technique: true only when the parity tests
    /// run this technique with and without the lanes and find the same statistics.
    fn lanes_allowed(&self) -> bool {
        false
    }
}

impl System {
    /// Installs `technique` for the rest of the run (replacing one installed before) and calls
    /// its `install`.
    pub fn install_technique(&mut self, mut technique: Box<dyn Technique>) -> Result<(), SimError> {
        technique.install(self)?;
        self.lanes_allowed = technique.lanes_allowed();
        self.technique = Some(technique);
        Ok(())
    }

    /// The parameters the technique runs with, for `Stats::technique` (`techniques::install`).
    pub fn set_technique_params(&mut self, params: std::collections::BTreeMap<String, String>) {
        self.technique_params = params;
    }

    /// The name of the technique installed, if any.
    pub fn technique_name(&self) -> Option<&'static str> {
        self.technique.as_ref().map(|t| t.name())
    }

    /// Calls `f` with the technique taken out of the system (so that it may borrow the system
    /// mutably), then puts it back. Nothing installed: `default`.
    pub(super) fn with_technique<T>(
        &mut self,
        default: T,
        f: impl FnOnce(&mut dyn Technique, &mut System) -> Result<T, SimError>,
    ) -> Result<T, SimError> {
        let Some(mut t) = self.technique.take() else {
            return Ok(default);
        };
        let r = f(t.as_mut(), self);
        self.technique = Some(t);
        r
    }
}
