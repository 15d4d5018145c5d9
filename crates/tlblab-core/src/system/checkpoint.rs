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
//! A machine of several hardware threads is saved where its run loop paused (`pause_at`,
//! `pause_at_roi`: at a batch boundary): the timeline's read-ahead queues and the loop's flags
//! are part of the state (`PausedLoop`), so the restored run interleaves the hardware threads
//! as the uninterrupted one. (At the end of a `run` the queues are drained, which a run on
//! more records would have interleaved by clock: such a cut is exact with one hardware thread
//! only, and refused otherwise.)
//!
//! A technique's own state is not saved: a run with one is refused. A technique is installed
//! on the restored machine instead (`install_technique` tells it the regions announced before
//! the checkpoint). That is seed 001's order (§4.1, Algorithm 1: `init_workload()`, then
//! `create_pt_baker_thread()`, then the main task): the helper starts where the measured phase
//! does, so every variant of a seed-001 experiment runs from one checkpoint taken there.

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
                if !self.mlp.is_empty() && self.independent.iter().any(|&b| b) {
                    self.mlp_general_path();
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
    paused: Option<PausedLoop>,
    records_read: u64,
    regions: Vec<(u32, u64, u64)>,
    read_ahead: ReadAhead,
    write_buffers: Vec<WriteBufferState>,
    #[serde(default)]
    mlp: Vec<mlp::MlpState>,
    #[serde(default)]
    independent: Vec<bool>,
    #[serde(default)]
    dram: Option<dram::DramState>,
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
                "a run with a technique cannot be saved (the technique's own state is not in a checkpoint): save the run without it and give the technique to the restored run".into(),
            ));
        }
        if self.cpus.len() > 1 && self.paused.is_none() && self.references > 0 {
            return Err(SimError(format!(
                "a machine of several hardware threads ({}) is saved only where its run paused (pause_at, --checkpoint-at): at the end of a run its read-ahead queues are drained, which a run on more records would have interleaved",
                self.cpus.len()
            )));
        }
        if self.prefetching {
            return Err(SimError(
                "a machine with a cache prefetcher cannot be saved (its stream state is not in a checkpoint)".into(),
            ));
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
