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
            let mut merged = crate::measure::curve::merge_capacities(&c2, &again);
            r.dtlb_levels[1] = merged.clone();
            l2_set_index(bench, quick, b, r);
            let mut note = format!(
                "measured twice, {} then {}, the trials of both taken together; ",
                c2.entries, again.entries
            );
            // A quick run on a host reads what is still unsettled once more (a full run has
            // three conflict trials and more stride-1 trials of its own).
            if quick && clock.is_some() {
                if let Some(third) = second_look(bench, b, clock, &merged, r) {
                    note = format!(
                        "measured three times, {}, {} then {}, the trials of all taken together; ",
                        c2.entries, again.entries, third.entries
                    );
                    merged = crate::measure::curve::merge_capacities(&merged, &third);
                    r.dtlb_levels[1] = merged.clone();
                }
            }
            l2_lines(r, &merged, &note);
            if quick && clock.is_some() {
                structure_line(r, &merged);
            }
            r.dtlb_levels[1] = merged;
        }
    }
}

/// A `--quick` run's second look at the L2 DTLB (`analysis::second_look`): each of its three
/// readings that a busy phase may have decided is measured once more, seconds after the first:
/// the conflict sweep when its capacities support no organisation (then the one-set curves it
/// enables), a second set of five one-set curves when the first five did not all agree (the
/// ten vote), and a third stride-1 measurement when the trials' vote is unclear or above what
/// the structure read and the L1 hold. Returns the third measurement, if one was taken; the
/// report's `l2_second_look` says what was repeated and what it read. Extra stride-1 trials stop
/// 24 s into the run, so that `--quick` stays under ≈ 30 s.
fn second_look(
    bench: &mut dyn crate::measure::bench::Bench,
    b: Budget,
    clock: Option<std::time::Instant>,
    merged: &Capacity,
    r: &mut ProbeReport,
) -> Option<Capacity> {
    use crate::analysis::index::Indexing;
    use crate::analysis::second_look::{one_set_unsettled, trials_unsettled};
    let c1 = r.dtlb_levels.first()?.entries;
    let indexing_unclear = r.l2_strides.as_ref().is_some_and(|ss| {
        matches!(
            crate::measure::conflict::infer(ss, merged.entries),
            Indexing::Unclear { .. }
        )
    });
    if indexing_unclear {
        let ss = crate::measure::conflict::conflict_sweep(
            bench,
            merged.entries,
            fillers_for(c1),
            4,
            9,
            b.scan_reps,
            b.scan_window_ns,
            1,
            b.seed ^ 0x5ec0,
        );
        let caps: Vec<String> = ss
            .capacities
            .iter()
            .map(|c| c.capacity.map_or("-".into(), |x| format!("{x:.0}")))
            .collect();
        let clear = !matches!(
            crate::measure::conflict::infer(&ss, merged.entries),
            Indexing::Unclear { .. }
        );
        r.l2_second_look.push(format!(
            "conflict sweep again (the first supported no organisation): capacities {}{}",
            caps.join(", "),
            if clear { ", taken" } else { ", unclear too" }
        ));
        if clear {
            r.l2_strides = Some(ss);
            // The set index measured on the first sweep's unclear reading gives way to the
            // one-set curves the new sweep's low-bits index calls for.
            if r.l2_set_index
                .as_ref()
                .is_some_and(|si| si.confidence == Confidence::Unclear && !si.sets_and_ways_read)
            {
                r.l2_set_index = None;
            }
            l2_set_index(bench, true, b, r);
        }
    }
    if let Some(first) = r.l2_one_set.clone() {
        if one_set_unsettled(&first.firsts) {
            let sets = r
                .l2_strides
                .as_ref()
                .and_then(|ss| {
                    crate::analysis::index::geometry_from_conflicts(&ss.capacities, 0.25)
                })
                .map(|g| g.sets);
            if let Some(sets) = sets {
                let again = crate::measure::set_index::low_bits_ways(
                    bench,
                    fillers_for(c1),
                    sets,
                    first.ways,
                    index_budget(true, b, 0x1e8),
                );
                if let Some(again) = again {
                    let both = first.pooled(&again);
                    r.l2_second_look.push(format!(
                        "one-set curves again (first misses {:?} did not agree): {:?}, the ten \
                         read {} ways",
                        first.firsts, again.firsts, both.ways
                    ));
                    r.l2_one_set = Some(both);
                }
            }
        }
    }
    let (_, structure) = structure_read(r, merged);
    let late = since(clock) > 22.0;
    if late || !trials_unsettled(merged.confidence, merged.entries, structure, c1) {
        return None;
    }
    let hi = ((merged.knee.hi as f64) * 1.4).ceil() as usize + 8;
    let mut t = 300u64;
    let mut fresh = || -> Box<dyn crate::measure::curve::Instrument> {
        t += 1;
        bench.data(hi, 1, b.seed.wrapping_add(t))
    };
    let third = capacity_of(
        &merged.knee,
        b.trials,
        b.max_trials,
        b.scan_reps,
        b.scan_window_ns,
        b.seed ^ 0x3a1d,
        clock.map(|t| t + std::time::Duration::from_secs(24)),
        &merged.trials,
        &mut fresh,
    );
    r.l2_second_look.push(format!(
        "stride-1 trials again (the vote {} [{}] against the structure {}): {:?}",
        merged.entries,
        merged.confidence.as_str(),
        structure.map_or("not read".into(), |(s, w)| format!("{s} × {w}")),
        third.trials
    ));
    Some(third)
}

/// A quick run's L2 entries line after the second look: still unclear for the stride-1 vote
/// alone, it stands on the structure when the conflict sets and the one-set curves read it
/// alike (`analysis::second_look::structure_stands`), "medium".
fn structure_line(r: &mut ProbeReport, merged: &Capacity) {
    let (one_set, geometry) = structure_read(r, merged);
    let Some(m) = r
        .summary
        .iter_mut()
        .find(|m| m.name == "L2 DTLB entries (4K)")
    else {
        return;
    };
    let reported = m.value.map_or(0, |v| v.round() as usize);
    if crate::analysis::second_look::structure_stands(
        merged.confidence,
        reported,
        geometry,
        one_set,
    ) {
        m.confidence = Confidence::Medium;
        m.note = format!(
            "the structure stands: the conflict sets' sets and the one-set curves' ways agree, \
             the stride-1 trials do not ({} of {} within 3%); {}",
            merged.agreeing,
            merged.trials.len(),
            m.note
        );
    }
}

/// The L2's structure as the report has it: the one-set curves' ways (when most curves read
/// them) and the sets × ways `arbitrate_with` takes from the conflict sets with them.
fn structure_read(r: &ProbeReport, merged: &Capacity) -> (Option<usize>, Option<(usize, usize)>) {
    let one_set = r.l2_one_set.as_ref().and_then(|o| o.read());
    let geometry = r
        .l2_strides
        .as_ref()
        .and_then(|ss| crate::measure::conflict::arbitrate_with(merged, ss, one_set))
        .map(|a| (a.geometry().sets, a.geometry().ways));
    (one_set, geometry)
}
