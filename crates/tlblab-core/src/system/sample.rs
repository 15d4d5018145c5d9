//! Systematic sampling (SMARTS, Wunderlich, Wenisch, Falsafi and Hoe, ISCA 2003): the run is
//! cut into units of `unit` references; the first `head` units are all measured (a take-all
//! stratum: a run's cold start, its first touches and empty TLBs, sits there), and after them
//! every `period`-th unit, from unit `head + offset` on, is measured: its counters are the difference of two snapshots of the whole statistics taken
//! exactly at its first and past its last reference. Between measured units the machine runs
//! on unmeasured, its state updated exactly as in the full model (SMARTS's *functional
//! warming*, here the full model itself: docs/sampling.md says why), so a measured unit sees
//! the state the uninterrupted run would have.
//!
//! The marks are stops of the run loop's reference limit, as a warm-up's end is
//! (`timeline.rs`, `stop_at_limit`): the loop checks the limit where it already did, so a run
//! without sampling executes what it did before, and the units begin and end at their
//! reference counts exactly, whatever lane or queue the reference ran in.

use super::*;

/// A systematic sample's plan and the units measured so far (`System::set_sample`).
pub(crate) struct Sampler {
    unit: u64,
    period: u64,
    offset: u64,
    head: u64,
    /// The reference count the units are counted from: the warm-up's end (`set_warmup`
    /// before `set_sample`), else 0.
    base: u64,
    /// The next measured unit to begin or end (0 = the first, unit `offset`).
    next: u64,
    /// The whole statistics at the beginning of the measured unit now running.
    open: Option<Box<Stats>>,
    /// Each measured unit's counters, in run order.
    units: Vec<Stats>,
}

impl Sampler {
    /// The first reference of measured unit `m`.
    fn start(&self, m: u64) -> u64 {
        let index = if m < self.head {
            m
        } else {
            self.head + self.offset + (m - self.head).saturating_mul(self.period)
        };
        self.base.saturating_add(index.saturating_mul(self.unit))
    }

    /// The next reference count at which a unit begins or ends.
    fn next_mark(&self) -> u64 {
        let start = self.start(self.next);
        if self.open.is_some() {
            start.saturating_add(self.unit)
        } else {
            start
        }
    }
}

impl System {
    /// Samples the next `run` systematically (module doc): of the units of `unit` references
    /// (counted from the end of the warm-up set before, `set_warmup`, else from the run's
    /// first reference), the first `head` and then every `period`-th
    /// from unit `head + offset` on are measured; `sample_units` returns them in run order.
    /// `offset < period`, both positive.
    pub fn set_sample(
        &mut self,
        unit: u64,
        period: u64,
        offset: u64,
        head: u64,
    ) -> Result<(), SimError> {
        if unit == 0 || period == 0 || offset >= period {
            return Err(SimError(format!(
                "sample: expected unit > 0, period > 0 and offset < period, found unit {unit}, period {period}, offset {offset}"
            )));
        }
        self.sample = Some(Box::new(Sampler {
            unit,
            period,
            offset,
            head,
            base: self.warmup,
            next: 0,
            open: None,
            units: Vec::new(),
        }));
        Ok(())
    }

    /// The measured units' counters so far, each the difference of the whole statistics at
    /// its end and at its beginning (a unit the run ended inside is not among them).
    pub fn sample_units(&self) -> &[Stats] {
        self.sample.as_ref().map_or(&[], |s| &s.units)
    }

    /// Takes what is due at the current reference count: the end of a warm-up (the region of
    /// interest begins) and the beginnings and ends of measured units.
    pub(super) fn intermediate_stop(&mut self) {
        if self.warmup > 0 && self.roi_begin.is_none() && self.references >= self.warmup {
            self.begin_roi();
        }
        self.take_sample_marks();
    }

    /// Takes the beginnings and ends of measured units due at the current reference count.
    pub(super) fn take_sample_marks(&mut self) {
        let Some(mut sampler) = self.sample.take() else {
            return;
        };
        while self.references >= sampler.next_mark() {
            match sampler.open.take() {
                None => sampler.open = Some(Box::new(self.whole_stats())),
                Some(begin) => {
                    sampler.units.push(self.whole_stats().since(&begin));
                    sampler.next += 1;
                }
            }
        }
        self.sample = Some(sampler);
    }

    /// The next reference count, past the current one, at which the run loop must stop for a
    /// warm-up's end or a unit's mark; `None` when there is none.
    pub(super) fn next_intermediate_stop(&self) -> Option<u64> {
        let warmup = (self.warmup > 0 && self.roi_begin.is_none()).then_some(self.warmup);
        let mark = self.sample.as_ref().map(|s| s.next_mark());
        match (warmup, mark) {
            (Some(w), Some(m)) => Some(w.min(m)),
            (w, m) => w.or(m),
        }
        .filter(|&n| n > self.references)
    }
}
