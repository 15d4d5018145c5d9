//! Section 1, the data-TLB levels (entries), and section 10, the L2 DTLB's capacity measured
//! once more at the end of the run and pooled with the first (`merge_capacities`): the
//! interference comes in phases of seconds. Both run on a simulated host too.

use super::l2_index::l2_set_index;
use super::*;
use crate::measure::curve::capacity_of;
use crate::measure::levels::{data_levels, Budget};

pub(in crate::probe) const LEVELS: Section = Section::always("dtlb", run_levels);

fn run_levels(cx: &mut Context<'_>, r: &mut ProbeReport) {
    let (o, b, want, clock) = (cx.o, cx.b, cx.want, cx.clock);
    // 1. Data-TLB levels.
    let mut l1 = None;
    let mut l2 = None;
    if want("dtlb") || want("l1_assoc") || want("l2_index") || want("latency") {
        // Extra trials of the first measurement (beyond `trials`) stop after a few seconds: the
        // second measurement at the end of the run gets the rest of the budget.
        let first = Budget {
            deadline: clock
                .map(|t| t + std::time::Duration::from_secs(if o.quick { 6 } else { 30 })),
            ..b
        };
        let lv = data_levels(
            &mut *cx.bench,
            MIN_PAGES,
            if o.quick { 6144 } else { 8192 },
            4,
            2,
            first,
        );
        l1 = lv.levels.first().cloned();
        l2 = lv.levels.get(1).cloned();
        r.dtlb_sweep = lv.sweep;
        r.dtlb_levels = lv.levels;
        let levels = [
            (
                1,
                &l1,
                "no first data-TLB knee found between 16 and 8192 pages",
            ),
            (2, &l2, "no second data-TLB knee found"),
        ];
        for (level, found, missing) in levels {
            match found {
                Some(c) => r.summary.push(cap_measured(
                    &format!("L{level} DTLB entries (4K)"),
                    c,
                    r.cpuid.data_tlb(level),
                    "",
                    None,
                )),
                None => r.errors.push(missing.into()),
            }
        }
    }
    cx.l1 = l1;
    cx.l2 = l2;
}

/// Begins only when the data-TLB levels are wanted.
pub(in crate::probe) const L2_AGAIN: Section = Section {
    gate: Gate::Needs("dtlb"),
    ..Section::always("dtlb (L2 again)", run_l2_again)
};

fn run_l2_again(cx: &mut Context<'_>, r: &mut ProbeReport) {
    let (quick, b, clock, budget_s) = (cx.o.quick, cx.b, cx.clock, cx.budget_s);
    let bench = &mut *cx.bench;
    // 10. The L2 DTLB's capacity once more, at the end of the run, pooled with the first
    // measurement (`merge_capacities`): the interference comes in phases of seconds.
    {
        if let Some(c2) = r.dtlb_levels.get(1).cloned() {
            let hi = ((c2.knee.hi as f64) * 1.4).ceil() as usize + 8;
            let mut t = 200u64;
            let mut fresh = || -> Box<dyn crate::measure::curve::Instrument> {
                t += 1;
                bench.data(hi, 1, b.seed.wrapping_add(t))
            };
            // A run that got here late (a loaded machine) takes 2 trials, not `trials`, so that
            // `--quick` stays under 20 s: a trial of the L2 costs ≈ 1-1.5 s.
            let late = clock.is_some() && since(clock) > budget_s - 3.5;
            let again = capacity_of(
                &c2.knee,
                if late { b.trials.min(2) } else { b.trials },
                b.max_trials,
                b.scan_reps,
                b.scan_window_ns,
                b.seed ^ 0xa6a1,
                clock.map(|t| t + std::time::Duration::from_secs_f64(budget_s + 1.0)),
                &c2.trials,
                &mut fresh,
            );
            let merged = crate::measure::curve::merge_capacities(&c2, &again);
            r.dtlb_levels[1] = merged.clone();
            l2_set_index(bench, quick, b, r);
            l2_lines(
                r,
                &merged,
                &format!(
                    "measured twice, {} then {}, the trials of both taken together; ",
                    c2.entries, again.entries
                ),
            );
            r.dtlb_levels[1] = merged;
        }
    }
}
