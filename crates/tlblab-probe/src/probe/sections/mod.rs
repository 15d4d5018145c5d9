//! The probe's measured sections, one file each, in run order ([`ON_HOST`]). A section is a
//! [`Section`], a row of a table: its name (the stamp in `ProbeReport::started`), when it
//! begins ([`Gate`]), and `run`, which measures and writes its numbers and summary lines into
//! the report. The text of its summary lines lives beside it, in its file.
//!
//! Sections share what the earlier ones found through [`Context`]: section 1's two data-TLB
//! levels (`l1`, `l2`) size the later sections' chains. Each section asks `want(name)` for the
//! names `--section` selects it by ([`super::SECTIONS`]); on a host `want` also refuses a section
//! once the run has used its time budget, and the run names it in `errors`.
//!
//! Adding a section: a file here with a `const` [`Section`] and its `run` function, its place in
//! [`ON_HOST`] (and [`ON_SIMULATED_HOST`] if it can run there), its selecting name in
//! `SECTIONS`, and its fields in `ProbeReport`.

use super::*;
use crate::measure::bench::Bench;
use crate::measure::curve::Capacity;
use crate::measure::levels::Budget;

mod caches;
mod dtlb;
mod itlb;
mod l1_assoc;
mod l2_index;
mod latency;
mod mlp;
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

/// One measured section of the probe: a row of the tables below.
pub(super) struct Section {
    /// Its name: the stamp in `ProbeReport::started` (a section selected by one name in
    /// `SECTIONS` carries that name).
    pub name: &'static str,
    /// Whether the run records its name in `started` when it begins.
    pub stamped: bool,
    /// When it begins, and when it measures.
    pub gate: Gate,
    /// Measures, and writes its numbers, summary lines and errors into the report.
    pub run: fn(&mut Context<'_>, &mut ProbeReport),
}

/// When a section begins and measures.
pub(super) enum Gate {
    /// It always begins; `run` asks `want` for the names that select its parts.
    Always,
    /// It always begins (stamped), and measures only when its own name is wanted.
    Named,
    /// It begins at all (stamp and run) only when this name is wanted.
    Needs(&'static str),
}

impl Section {
    /// A section that always begins and is stamped; `run` asks `want` itself.
    pub const fn always(
        name: &'static str,
        run: fn(&mut Context<'_>, &mut ProbeReport),
    ) -> Section {
        Section {
            name,
            stamped: true,
            gate: Gate::Always,
            run,
        }
    }

    /// A section selected by its own name: stamped always, measured when wanted.
    pub const fn named(name: &'static str, run: fn(&mut Context<'_>, &mut ProbeReport)) -> Section {
        Section {
            gate: Gate::Named,
            ..Section::always(name, run)
        }
    }
}

/// Every section, in the order a run on this host takes them: the expensive data-TLB sections
/// first, the L2's second measurement last.
pub(super) const ON_HOST: [&Section; 12] = [
    &dtlb::LEVELS,
    &l1_assoc::L1_ASSOC,
    &l2_index::L2_INDEX,
    &validation::VALIDATION_CURVE,
    &latency::LATENCY,
    &caches::CACHES,
    &mlp::MLP,
    &itlb::ITLB,
    &prefetch::PREFETCH,
    &thp::THP,
    &second_cpu::SECOND_CPU,
    &dtlb::L2_AGAIN,
];

/// The sections a simulated host runs (`run_simulated`), in [`ON_HOST`]'s order: the data-TLB
/// sections, the only ones a simulated host's `Bench` can serve.
pub(super) const ON_SIMULATED_HOST: [&Section; 4] = [
    &dtlb::LEVELS,
    &l1_assoc::L1_ASSOC,
    &l2_index::L2_INDEX,
    &dtlb::L2_AGAIN,
];

/// Runs `sections` in order: each that begins is stamped with the seconds since the start.
/// A section's name is asked of `want` once (on a host `want` may refuse it for the budget).
pub(super) fn run_all<'s>(
    sections: impl IntoIterator<Item = &'s Section>,
    cx: &mut Context<'_>,
    r: &mut ProbeReport,
) {
    for s in sections {
        if let Gate::Needs(name) = s.gate {
            if !(cx.want)(name) {
                continue;
            }
        }
        if s.stamped {
            r.started.push((s.name.into(), since(cx.clock)));
        }
        if matches!(s.gate, Gate::Named) && !(cx.want)(s.name) {
            continue;
        }
        (s.run)(cx, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_selectable_name_is_a_section_or_read_by_one_and_the_names_are_unique() {
        let names: Vec<&str> = ON_HOST.iter().map(|s| s.name).collect();
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
        let simulated: Vec<&str> = ON_SIMULATED_HOST.iter().map(|s| s.name).collect();
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
