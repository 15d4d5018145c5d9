//! The probe's measured sections, one file each, in run order ([`ON_HOST`]). A section is a
//! [`Section`]: its name (the stamp in `ProbeReport::started`), whether it runs on a simulated
//! host, and `run`, which measures and writes its numbers and summary lines into the report. The
//! text of its summary lines lives beside it, in its file.
//!
//! Sections share what the earlier ones found through [`Context`]: section 1's two data-TLB
//! levels (`l1`, `l2`) size the later sections' chains. Each section asks `want(name)` for the
//! names `--section` selects it by ([`super::SECTIONS`]); on a host `want` also refuses a section
//! once the run has used its time budget, and the run names it in `errors`.
//!
//! Adding a section: a file here with a unit struct implementing [`Section`], its place in
//! [`ON_HOST`] (and [`ON_SIMULATED_HOST`] if it can run there), its selecting name in
//! `SECTIONS`, and its fields in `ProbeReport`.

use super::*;
use crate::measure::bench::Bench;
use crate::measure::curve::Capacity;
use crate::measure::levels::Budget;

mod dtlb;
mod itlb;
mod l1_assoc;
mod l2_index;
mod latency;
mod prefetch;
mod second_cpu;
mod thp;
mod validation;

pub(super) use l2_index::l2_lines;

/// What a section runs with, and what the sections before it found.
pub(super) struct Context<'a> {
    /// This host, or a simulated one (the data-TLB sections only).
    pub bench: &'a mut dyn Bench,
    pub o: &'a ProbeOptions,
    pub b: Budget,
    /// The run's start on a host (deadlines and budgets apply); `None` on a simulated host,
    /// whose run must not depend on the wall clock (deterministic for a seed).
    pub clock: Option<std::time::Instant>,
    /// The run's time budget in seconds (0 on a simulated host).
    pub budget_s: f64,
    /// Whether the run asked for a section name and, on a host, still has time for it.
    pub want: &'a dyn Fn(&str) -> bool,
    pub cpu: usize,
    pub other: Option<usize>,
    /// Section 1's first two data-TLB levels.
    pub l1: Option<Capacity>,
    pub l2: Option<Capacity>,
}

/// One measured section of the probe.
pub(super) trait Section: Sync {
    /// Its name: the stamp in `ProbeReport::started` (a section selected by one name in
    /// `SECTIONS` carries that name).
    fn name(&self) -> &'static str;
    /// The stamp the run records when the section begins (`None`: not stamped).
    fn stamp(&self) -> Option<&'static str> {
        Some(self.name())
    }
    /// Whether it begins at all (stamp and run); a section that always begins asks `want`
    /// inside `run`, after its stamp.
    fn wanted(&self, _cx: &Context<'_>) -> bool {
        true
    }
    /// Measures, and writes its numbers, summary lines and errors into `r`.
    fn run(&self, cx: &mut Context<'_>, r: &mut ProbeReport);
}

/// Every section, in the order a run on this host takes them: the expensive data-TLB sections
/// first, the L2's second measurement last.
pub(super) const ON_HOST: [&dyn Section; 10] = [
    &dtlb::Levels,
    &l1_assoc::L1Assoc,
    &l2_index::L2Index,
    &validation::ValidationCurve,
    &latency::Latency,
    &itlb::Itlb,
    &prefetch::Prefetch,
    &thp::Thp,
    &second_cpu::SecondCpu,
    &dtlb::L2Again,
];

/// The sections a simulated host runs (`run_simulated`), in [`ON_HOST`]'s order: the data-TLB
/// sections, the only ones a simulated host's `Bench` can serve.
pub(super) const ON_SIMULATED_HOST: [&dyn Section; 4] = [
    &dtlb::Levels,
    &l1_assoc::L1Assoc,
    &l2_index::L2Index,
    &dtlb::L2Again,
];

/// Runs `sections` in order: each that begins is stamped with the seconds since the start.
pub(super) fn run_all<'s>(
    sections: impl IntoIterator<Item = &'s dyn Section>,
    cx: &mut Context<'_>,
    r: &mut ProbeReport,
) {
    for s in sections {
        if !s.wanted(cx) {
            continue;
        }
        if let Some(stamp) = s.stamp() {
            r.started.push((stamp.into(), since(cx.clock)));
        }
        s.run(cx, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_selectable_name_is_a_section_or_read_by_one_and_the_names_are_unique() {
        let names: Vec<&str> = ON_HOST.iter().map(|s| s.name()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        // `llc` and `survival` select the second-CPU section; the rest are section names.
        for s in SECTIONS {
            assert!(
                names.contains(&s) || ["llc", "survival"].contains(&s),
                "'{s}' selects no section"
            );
        }
        // The simulated host's sections are a subsequence of the host's, in its order.
        let simulated: Vec<&str> = ON_SIMULATED_HOST.iter().map(|s| s.name()).collect();
        let mut rest = names.iter();
        for s in &simulated {
            assert!(
                rest.any(|n| n == s),
                "{simulated:?} not in {names:?}'s order"
            );
        }
        assert_eq!(
            simulated,
            ["dtlb", "l1_assoc", "l2_index", "dtlb (L2 again)"]
        );
    }
}
