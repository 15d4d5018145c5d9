//! The engine's state as a checkpoint holds it (the file format and its checks are
//! `tlblab_config::checkpoint`; core does no I/O).
//!
//! A checkpoint is taken between two `run` calls, where no lane is open: everything a later
//! reference can read is in the fields listed in `checkpoint_state!` — the TLB levels, caches
//! and page-walk caches with their replacement state and memos, the frames and page tables
//! (host ones too), the hardware threads' clocks, the threads and address spaces, the ASID
//! allocator, every counter, the open phases and jobs, the region of interest's snapshot. What
//! is left out is either fixed by the machine and run options, which the checkpoint carries
//! and `System::new` rebuilds (the cores' paths, level names, latencies), or a host prefetch
//! hint's memo (`leaf_tables`, `hint_strides`, `hint_skips`), which changes no simulated
//! state: a restored run continues bit for bit as the uninterrupted one
//! (`tlblab-config/tests/checkpoint.rs`).
//!
//! Not yet: a run with a technique (each technique's own state would need saving too), and a
//! machine of several hardware threads (between two `run` calls the timeline's read-ahead
//! queues are drained, which an uninterrupted run would have interleaved by clock): both are
//! refused with a message that says so (`System::checkpointable`).

use super::*;
use std::collections::HashMap;

macro_rules! checkpoint_state {
    ($($(#[$attr:meta])* $field:ident : $ty:ty),* $(,)?) => {
        /// The engine's state, borrowed for saving (`System::state`).
        #[derive(Serialize)]
        pub struct SystemStateRef<'a> {
            $($(#[$attr])* $field: &'a $ty,)*
        }

        /// The engine's state, read back from a checkpoint (`System::restore_state`): the
        /// same fields as `SystemStateRef`.
        #[derive(Deserialize)]
        pub struct SystemState {
            $($(#[$attr])* $field: $ty,)*
        }

        impl System {
            /// The state a checkpoint saves (module doc), or why this run cannot be saved.
            pub fn state(&self) -> Result<SystemStateRef<'_>, SimError> {
                self.checkpointable()?;
                Ok(SystemStateRef { $($field: &self.$field,)* })
            }

            /// Replaces this machine's state by a checkpoint's. The machine must have been
            /// built from the checkpoint's configuration and run options (the file format
            /// checks that before it gets here).
            pub fn restore_state(&mut self, state: SystemState) -> Result<(), SimError> {
                self.checkpointable()?;
                $(self.$field = state.$field;)*
                for space in &mut self.spaces {
                    space.pt.after_restore();
                }
                self.any_global = self.spaces.iter().any(|s| s.regions.iter().any(|r| r.4))
                    || self.tlbs.iter().any(|t| t.entries().any(|e| e.global));
                if let Some(host) = &mut self.host {
                    host.pt.after_restore();
                }
                Ok(())
            }
        }
    };
}

checkpoint_state! {
    tlbs: Vec<Tlb>,
    caches: Vec<Cache>,
    pwcs: Vec<Pwc>,
    cpus: Vec<Cpu>,
    frames: FrameAllocator,
    spaces: Vec<AddressSpace>,
    host: Option<Host>,
    threads: Vec<Option<ThreadState>>,
    thread_stats: Vec<(u32, UnitStats)>,
    cpu_stats: Vec<UnitStats>,
    cpu_snap: Vec<UnitStats>,
    core_os: Vec<UnitStats>,
    path: WalkPath,
    references: u64,
    current: Vec<Option<ThreadId>>,
    last_space: Vec<Option<usize>>,
    asids: AsidAllocator,
    space_generation: Vec<u64>,
    os_stats: OsStats,
    region_names: Vec<String>,
    open_phases: Vec<(u32, u32, u64, UnitStats, OsStats)>,
    phases: Vec<crate::stats::PhaseStats>,
    phase_counts: Vec<(u32, u32)>,
    warmup: u64,
    roi_begin: Option<Box<Stats>>,
    jobs: Vec<JobStats>,
    #[serde(with = "pairs")]
    open_jobs: BTreeMap<(u32, u32), (JobStats, UnitStats)>,
    #[serde(with = "pairs")]
    shared_frames: HashMap<(u32, u64, usize), Pfn>,
}

/// A map with tuple keys as a list of (key, value) pairs in key order: a format whose map
/// keys are strings (JSON) can hold it, and the same state always gives the same bytes
/// (a `HashMap`'s own order is not fixed).
mod pairs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<'m, M, K, V, S>(map: &&'m M, s: S) -> Result<S::Ok, S::Error>
    where
        &'m M: IntoIterator<Item = (&'m K, &'m V)>,
        K: Serialize + Ord + 'm,
        V: Serialize + 'm,
        S: Serializer,
    {
        let mut pairs: Vec<(&K, &V)> = (*map).into_iter().collect();
        pairs.sort_by(|a, b| a.0.cmp(b.0));
        pairs.serialize(s)
    }

    pub fn deserialize<'de, M, K, V, D>(d: D) -> Result<M, D::Error>
    where
        M: FromIterator<(K, V)>,
        K: Deserialize<'de>,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
    }
}

impl System {
    /// References simulated so far (warm-up included).
    pub fn references(&self) -> u64 {
        self.references
    }

    /// Whether this run's state can be saved and restored (module doc): an error saying why not.
    pub fn checkpointable(&self) -> Result<(), SimError> {
        if self.technique.is_some() {
            return Err(SimError(
                "checkpoints of a run with a technique are not supported yet (the technique's own state is not saved)".into(),
            ));
        }
        if self.cpus.len() > 1 {
            return Err(SimError(format!(
                "checkpoints need a machine of one hardware thread for now (this one has {}: its timeline's order at the cut would not be kept)",
                self.cpus.len()
            )));
        }
        if self.lane_touches.iter().any(|t| !t.is_empty()) {
            return Err(SimError(
                "internal: a checkpoint taken inside a run (the memo lane has touches to settle)"
                    .into(),
            ));
        }
        Ok(())
    }
}
