//! Generator states kept where a skip ended, for the next run of the same workload in this
//! process (`Generator::skip`: graph500_list's and gapbs_bc's). Seed 001 runs each
//! configuration's windows at the same places (python/tlblab/seeds/s001_pt_baker/runs.py,
//! `WINDOWS`): the first run's skips pass over a BFS or Brandes' sweeps at scale 24 (15-25 s a
//! run), the others restore its states. A state is a function of its workload's key and its
//! position (the generators are deterministic), so a restored run makes the same records.
//!
//! The states outlive other workloads' runs in the process (a worker runs seed 001's runs
//! longest first, so other workloads come between two runs of one), at a bounded cost in
//! memory: at most `per_key` states of a workload and `max` in all; beyond `per_key` the
//! workload's oldest goes, beyond `max` the oldest of the workload that keeps the most (so that
//! one workload's many skips do not push another's windows out). A state is kept only where a
//! skip passed over at least `WORTH` accesses per entry of its arrays: a state copied for a
//! shorter skip would save less than its copy costs.

use std::sync::Mutex;

/// Accesses a skip must pass over, per entry of the state's arrays, for its end to be kept.
pub const WORTH: u64 = 4;

/// The kept states of one generator's workloads: (key, position in accesses, state).
pub struct KeptStates<K, S> {
    states: Mutex<Vec<(K, u64, S)>>,
    max: usize,
    per_key: usize,
}

impl<K: Copy + PartialEq, S> KeptStates<K, S> {
    pub const fn new(max: usize, per_key: usize) -> Self {
        KeptStates {
            states: Mutex::new(Vec::new()),
            max,
            per_key,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(K, u64, S)>> {
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls `restore(pos, state)` with the state of `key` furthest along after `from` and at
    /// or before `to`, if there is one.
    pub fn restore_best(&self, key: K, from: u64, to: u64, restore: impl FnOnce(u64, &S)) {
        let states = self.lock();
        let best = states
            .iter()
            .filter(|(k, p, _)| *k == key && *p > from && *p <= to)
            .max_by_key(|(_, p, _)| *p);
        if let Some((_, pos, state)) = best {
            restore(*pos, state);
        }
    }

    /// Keeps `make()` as `key`'s state at `pos` (unless one is kept there), if the skip that
    /// ended there passed over `skipped` accesses, at least `WORTH` times the state's
    /// `entries`.
    pub fn keep(&self, key: K, pos: u64, skipped: u64, entries: u64, make: impl FnOnce() -> S) {
        if skipped < WORTH * entries {
            return;
        }
        let mut states = self.lock();
        if states.iter().any(|(k, p, _)| *k == key && *p == pos) {
            return;
        }
        let count =
            |states: &Vec<(K, u64, S)>, key: K| states.iter().filter(|s| s.0 == key).count();
        let evict = if count(&states, key) >= self.per_key {
            Some(key)
        } else if states.len() >= self.max {
            states
                .iter()
                .map(|s| s.0)
                .max_by_key(|&k| count(&states, k))
        } else {
            None
        };
        if let Some(gone) = evict {
            if let Some(i) = states.iter().position(|s| s.0 == gone) {
                states.remove(i);
            }
        }
        states.push((key, pos, make()));
    }

    /// How many states are kept of the keys `which` accepts (tests).
    pub fn count(&self, which: impl Fn(&K) -> bool) -> usize {
        self.lock().iter().filter(|(k, _, _)| which(k)).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_states_then_the_furthest_within_the_bounds_is_restored_and_the_fullest_key_gives_way()
    {
        let kept: KeptStates<u8, u64> = KeptStates::new(3, 2);
        kept.keep(1, 100, 100, 1, || 100);
        kept.keep(1, 100, 100, 1, || 999); // one a position
        kept.keep(1, 50, 3, 1, || 50); // too short a skip for its state
        kept.keep(1, 300, 300, 1, || 300);
        let mut got = None;
        kept.restore_best(1, 0, 299, |p, s| got = Some((p, *s)));
        assert_eq!(got, Some((100, 100)));
        kept.restore_best(1, 100, 299, |_, _| panic!("none after 100 before 300"));
        // A third of key 1: its oldest goes. Then key 2's first: the fullest (key 1) gives way.
        kept.keep(1, 500, 500, 1, || 500);
        assert_eq!(kept.count(|&k| k == 1), 2);
        kept.keep(2, 10, 10, 1, || 10);
        kept.keep(2, 20, 20, 1, || 20);
        assert_eq!((kept.count(|&k| k == 1), kept.count(|&k| k == 2)), (1, 2));
        let mut got = None;
        kept.restore_best(1, 0, u64::MAX, |p, _| got = Some(p));
        assert_eq!(got, Some(500));
    }
}
