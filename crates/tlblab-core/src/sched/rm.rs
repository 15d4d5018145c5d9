//! Preemptive fixed-priority rate-monotonic scheduling of periodic tasks on one core, with
//! statistics per job — the setting of seed 003 §6 (tasks bound to one core under SCHED_FIFO with
//! rate-monotonic priorities; Table 6.1; Figs. 6.2–6.8 plot cycles and DTLB misses per job).
//!
//! Each task is a thread of one process (the seed's pthreads). A job touches the task's pages
//! `passes` times, one load per page, at a different cache line in each page (seed 003 §6.0.8:
//! "we access bytes such that the memory accessed maps to different L1 data cache sets").
//! Priorities follow periods (shorter = higher; ties by task index). A release preempts a running
//! lower-priority job between two accesses. Job 0 of every task is a warm-up run before time 0
//! (seed 003 §6 "warm up phase"), recorded like any other job.

use crate::os::JobStats;
use crate::system::{SimError, System};
use serde::{Deserialize, Serialize};
use tlblab_trace::Access;
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct PeriodicTask {
    pub name: String,
    /// First release, in cycles after time 0.
    pub phase: u64,
    pub period: u64,
    /// Relative deadline (0 = the period).
    #[serde(default)]
    pub deadline: u64,
    /// Virtual addresses of the task's pages (from a placement policy: malloc-like or colored).
    pub pages: Vec<u64>,
    /// How many times a job touches all its pages.
    pub passes: u32,
}

/// Runs `tasks` for `jobs` jobs each (after the warm-up job 0) on hardware thread `cpu`.
/// Returns the per-job statistics in completion order (also in `Stats::jobs`).
pub fn run_rate_monotonic(
    sys: &mut System,
    tasks: &[PeriodicTask],
    jobs: u32,
    cpu: usize,
) -> Result<Vec<JobStats>, SimError> {
    if tasks.is_empty() {
        return Err(SimError("rate-monotonic: the task set is empty".into()));
    }
    for (i, t) in tasks.iter().enumerate() {
        if t.period == 0 || t.pages.is_empty() || t.passes == 0 {
            return Err(SimError(format!(
                "task {i} ({}): period, pages and passes must be positive (period={}, pages={}, passes={})",
                t.name, t.period, t.pages.len(), t.passes
            )));
        }
    }
    if sys.spaces.is_empty() {
        sys.create_space()?;
    }
    let n = tasks.len();
    for i in 0..n {
        sys.bind_thread(ThreadId(i as u32), 0, cpu);
    }
    let first = sys.jobs().len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (tasks[i].period, i));
    let job_len = |i: usize| tasks[i].pages.len() as u64 * tasks[i].passes as u64;
    let access_of = |i: usize, k: u64| {
        let t = &tasks[i];
        let p = (k % t.pages.len() as u64) as usize;
        VirtAddr(t.pages[p] + (p as u64 * 64) % 4096)
    };
    let run_access = |sys: &mut System, i: usize, k: u64| {
        sys.access(Access::new(
            ThreadId(i as u32),
            AccessKind::Load,
            access_of(i, k),
            4,
        ))
        .map(|_| ())
    };

    // Warm-up (job 0), in priority order, before time 0.
    for &i in &order {
        sys.job_start(i as u32, 0, 0)?;
        for k in 0..job_len(i) {
            run_access(sys, i, k)?;
        }
        sys.job_end(i as u32, 0, None)?;
    }
    let t0 = sys.clock(cpu);
    // Per task: next release time, next job number, and the pending job (job, release, progress).
    let mut next_release: Vec<u64> = tasks.iter().map(|t| t0 + t.phase).collect();
    let mut next_job: Vec<u32> = vec![1; n];
    let mut pending: Vec<std::collections::VecDeque<(u32, u64, u64, bool)>> =
        vec![Default::default(); n];
    let mut done = vec![0u32; n];
    while done.iter().any(|&d| d < jobs) {
        let now = sys.clock(cpu);
        for i in 0..n {
            while next_release[i] <= now && next_job[i] <= jobs {
                pending[i].push_back((next_job[i], next_release[i], 0, false));
                next_job[i] += 1;
                next_release[i] += tasks[i].period;
            }
        }
        let Some(&i) = order.iter().find(|&&i| !pending[i].is_empty()) else {
            // Idle until the next release.
            let next = (0..n)
                .filter(|&i| next_job[i] <= jobs)
                .map(|i| next_release[i])
                .min();
            match next {
                Some(t) => {
                    let dt = t - now;
                    sys.charge(cpu, dt);
                    continue;
                }
                None => break,
            }
        };
        let (job, release, mut k, started) = pending[i][0];
        if !started {
            sys.job_start(i as u32, job, release)?;
            pending[i][0].3 = true;
        }
        // Run until the job ends or a release of any task is due (a possible preemption).
        let horizon = (0..n)
            .filter(|&j| next_job[j] <= jobs)
            .map(|j| next_release[j])
            .min()
            .unwrap_or(u64::MAX);
        let len = job_len(i);
        while k < len && sys.clock(cpu) < horizon {
            run_access(sys, i, k)?;
            k += 1;
        }
        if k == len {
            let deadline = release
                + if tasks[i].deadline == 0 {
                    tasks[i].period
                } else {
                    tasks[i].deadline
                };
            sys.job_end(i as u32, job, Some(deadline))?;
            pending[i].pop_front();
            done[i] += 1;
        } else {
            pending[i][0].2 = k;
        }
    }
    Ok(sys.jobs()[first..].to_vec())
}
