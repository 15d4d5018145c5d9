//! Section 3: the L2 DTLB's sets and ways, by conflict sets at page strides 2^4 … 2^9 with
//! filler pages that keep the L1 missing (`measure::conflict`), its set-index function by
//! conflict pairs when no low-bits index shows (`measure::set_index`), and the L2's summary
//! lines, which sections 1 and 10 write through `l2_lines` too.

use super::l1_assoc::{assoc_matches, indexing_text};
use super::*;
use crate::analysis::index::Indexing;
use crate::analysis::knee::Confidence;
use crate::analysis::replacement::{replacement_shape, Shape};
use crate::cpuid::{self, Assoc};
use crate::measure::conflict::arbitrate_with;
use crate::measure::curve::Capacity;
use crate::measure::levels::StrideSweep;

pub(in crate::probe) const L2_INDEX: Section = Section::named("l2_index", run);

fn run(cx: &mut Context<'_>, r: &mut ProbeReport) {
    let (o, b, want) = (cx.o, cx.b, cx.want);
    let (l1, l2) = (&cx.l1, &cx.l2);
    let bench = &mut *cx.bench;
    // 3. L2 sets and ways: conflict sets at page strides 2^4 … 2^9, with filler pages that keep
    // the L1 missing (`measure::conflict`), so small per-stride capacities do not hide behind it.
    if let (Some(c1), Some(c2)) = (&l1, &l2) {
        let ss = crate::measure::conflict::conflict_sweep(
            bench,
            c2.entries,
            fillers_for(c1.entries),
            4,
            9,
            b.scan_reps,
            b.scan_window_ns,
            if o.quick { 1 } else { 3 },
            b.seed,
        );
        r.l2_strides = Some(ss);
        // With the L2's second measurement to come (`l2_again`), the set index is measured
        // after it: on a simulated host its draws then leave the measurements before it as
        // they were.
        if !want("dtlb") {
            l2_set_index(bench, o.quick, b, r);
        }
        l2_lines(r, c2, "");
    }
}

/// The L2 DTLB's set-index function (`measure::set_index`), when the conflict sweep ran and found
/// no low-bits index (a hashed index, or a disturbed sweep), or found one with trials that
/// disagree.
pub(in crate::probe) fn l2_set_index(
    bench: &mut dyn Bench,
    quick: bool,
    b: Budget,
    r: &mut ProbeReport,
) {
    let (Some(ss), Some(c1), Some(c2)) = (
        r.l2_strides.as_ref(),
        r.dtlb_levels.first(),
        r.dtlb_levels.get(1),
    ) else {
        return;
    };
    // A confident low-bits reading stands; one whose trials disagree at some stride does not
    // (on the Intel VM two full runs' three trials per stride voted for 256 sets × 6-7 ways,
    // "unclear", from capacities that did not halve cleanly).
    // And the conflict sweep is trusted only behind a fully associative L1: its odd filler pages
    // leave the targets' L1 sets to them when the L1 is set-indexed, so up to its ways of targets
    // hit there. On the Intel VM (L1 16 sets × 6 ways by VPN bits 0-3) a `--quick` sweep read
    // 79, 36, 16, 9, 5, 5 at strides 16..512: "6-way, 256 sets", the L1's ways.
    let ix = crate::measure::conflict::infer(ss, c2.entries);
    let l1_fa = r
        .l1_strides
        .as_ref()
        .is_some_and(|s| matches!(s.indexing, Indexing::FullyAssociative { .. }));
    let confident = l1_fa && ss.confidences.iter().all(|c| *c != Confidence::Unclear);
    // The conflict sets' own geometry (a halving run, then a plateau) is a low-bits index too,
    // whatever the stride-1 reading: on the Zen 4 host the trials read ≈ 2400 for 128 × 24, the
    // plateau (26-27) was then more than 25% over "the ways" 2400 / 128, `infer` said unclear,
    // and the pair tests ran (and read an implausible function) in every such run.
    let geometry = crate::analysis::index::geometry_from_conflicts(&ss.capacities, 0.25);
    let low_bits = match (&ix, geometry) {
        (Indexing::Linear { sets, ways, .. }, _) => Some((*sets, *ways)),
        (_, Some(g)) => Some((g.sets, g.ways)),
        _ => None,
    };
    if (confident && (low_bits.is_some() || matches!(ix, Indexing::FullyAssociative { .. })))
        || r.l2_set_index.is_some()
    {
        // A low-bits index: its ways from one-set curves too (`arbitrate_with`), once a run.
        if let (Some((sets, ways)), true, None) = (low_bits, confident, &r.l2_one_set) {
            r.l2_one_set = crate::measure::set_index::low_bits_ways(
                bench,
                fillers_for(c1.entries),
                sets,
                ways,
                index_budget(quick, b, 0x1e7),
            );
        }
        return;
    }
    // The first level's sets and ways when its index is low page-number bits (the Intel VM's
    // 16 × 6): the set index's one-set curves then overflow it with their own targets.
    let l1 = r.l1_strides.as_ref().and_then(|s| match s.indexing {
        Indexing::Linear { sets, ways, .. } => Some((sets, ways)),
        _ => None,
    });
    r.l2_set_index = crate::measure::set_index::measure_set_index(
        bench,
        fillers_for(c1.entries),
        c2.entries,
        l1,
        index_budget(quick, b, 0x1d5),
    );
}

/// The L2 DTLB's two lines from its capacity `c` and, when it ran, the conflict sweep: the
/// entries line with what the conflict sets say of it ([`arbitrate`]), and the organisation
/// inferred again with the entries that line reports (its ways are entries / sets). A set index
/// measured by conflict pairs ([`set_index_lines`]) takes precedence.
pub(in crate::probe) fn l2_lines(r: &mut ProbeReport, c: &Capacity, note: &str) {
    if let Some(si) = r
        .l2_set_index
        .clone()
        .filter(|si| si.confidence != Confidence::Unclear || si.sets_and_ways_read)
    {
        set_index_lines(r, c, note, &si);
        return;
    }
    let one_set = r.l2_one_set.as_ref().and_then(|o| o.read());
    let arb = r
        .l2_strides
        .as_ref()
        .and_then(|ss| arbitrate_with(c, ss, one_set));
    let note = match (&r.l2_one_set, &arb) {
        (Some(o), Some(a)) => {
            let g = a.geometry();
            format!(
                "one-set curves: first misses after {:?} targets (the highest two share: {}; \
                 half of the accesses from {}){}; {note}",
                o.firsts,
                o.ways,
                o.half_way + 1,
                if o.read().is_none() {
                    ", most curves disagree: not taken"
                } else if g.ways == o.ways {
                    ", the ways taken"
                } else {
                    ", outside the conflict sets' readings: not taken"
                }
            )
        }
        _ => note.to_string(),
    };
    let note = note.as_str();
    let sets = arb.as_ref().map(|a| a.geometry().sets);
    let declared = r.cpuid.data_tlb(2);
    let mut m = cap_measured("L2 DTLB entries (4K)", c, declared, note, arb.as_ref());
    let entries = m.value.map_or(c.entries, |v| v.round() as usize);
    if let Some(ss) = r.l2_strides.as_mut() {
        ss.indexing = crate::measure::conflict::infer(ss, entries);
        // The conflict sets test the reading: a set-indexed level of these entries behind the L1
        // must overflow near entries / stride at each stride, halving up to its set count. When
        // they support no organisation, no such level was seen, and the stride-1 rise may be
        // something else: on the simulated SA-1100 (one 32-entry TLB, no second level) the
        // walks' page-table lines overflowing its 8 KiB data cache made a rise at 119 or 342
        // pages that the trials agreed on ("medium"), while the conflict sets read no step or
        // capacities that do not halve. The reading is then unclear, never confident.
        if let Indexing::Unclear { reason } = &ss.indexing {
            m.confidence = Confidence::Unclear;
            m.note = format!(
                "unclear: the conflict sets do not confirm a set-indexed level of these entries \
                 ({reason}); {}",
                m.note
            );
        }
        let org = l2_organisation(ss, r.cpuid.data_tlb(2));
        replace_or_push(&mut r.summary, m);
        replace_or_push(&mut r.summary, org);
    } else {
        replace_or_push(&mut r.summary, m);
    }
    replacement_line(r, c, sets);
}

/// The L2 DTLB's lines when its set-index function was measured (`measure::set_index`): the
/// entries are its sets × ways, the organisation the function.
///
/// Why the structure and not the stride-1 rise: on the Intel VM a random chain over every set
/// starts losing pages at ≈ 1500-1700 of the STLB's 2048 (its envelope climbs to a walk by
/// ≈ 2450, half-way at ≈ 2050-2150), though the function spreads consecutive pages evenly (an
/// aligned block of 128 consecutive pages fills the 128 sets once: no set holds more than its
/// 16 ways below ≈ 1920-2048 pages); so the chain shares the level with entries it does not own
/// (the host's other hardware thread, the hypervisor) or the replacement evicts before a set is
/// full. The trials' tangent then read 1847-2155 (−10% to +5%) over 20 runs of the previous
/// session. The conflict pairs touch 2J ≤ 1.5 W pages of one set at a time and read the sets
/// (128) exactly, the ways to a bracket (`SetIndex::ways_lo`..`ways_hi`). The stride-1 reading
/// is kept in the note.
pub(in crate::probe) fn set_index_lines(
    r: &mut ProbeReport,
    c: &Capacity,
    note: &str,
    si: &crate::measure::set_index::SetIndex,
) {
    let declared = r.cpuid.data_tlb(2);
    let mut m = cap_measured("L2 DTLB entries (4K)", c, declared, note, None);
    let e = si.entries();
    let (lo, hi) = (si.sets() * si.ways_lo, si.sets() * si.ways_hi);
    let reading = c.entries;
    let agree = (reading as f64 - e as f64).abs() <= 0.05 * e as f64;
    // The ways are the highest first misses two of five one-set curves share (entries the chain
    // does not own only bring them earlier): a reading when most curves read it, else not.
    let ways_read = si.ways_read();
    let all = si.ways_agree == si.ways_firsts.len();
    // Not read: the spread runs to the half-way point too (W for LRU, above it for a
    // replacement that keeps part of a set past its ways; disturbed curves read low).
    let hi = if ways_read {
        hi
    } else {
        hi.max(si.sets() * si.half_way)
    };
    // The function unclear (its folds fail the capacities' check) but the sets and the ways
    // read: the entries stand, never confidently.
    let function_unclear = si.confidence == Confidence::Unclear;
    m.value = Some(e as f64);
    m.spread = Some((lo.min(e) as f64, hi.max(e) as f64));
    m.confidence = if !ways_read || function_unclear {
        Confidence::Unclear
    } else if agree && all {
        // Two methods agree: at least medium.
        match c.confidence {
            Confidence::High => Confidence::High,
            _ => Confidence::Medium,
        }
    } else {
        Confidence::Medium
    };
    if let Some(d) = declared {
        m.disagrees = (e as f64 - d.entries as f64).abs() > 0.05 * d.entries as f64;
    }
    let curves = if si.ways_lo < si.ways_hi {
        format!(
            "{} of {} one-set curves miss first at n = {} ({:?} over the {})",
            si.ways_agree,
            si.ways_firsts.len(),
            si.ways + 1,
            si.ways_firsts.iter().map(|f| f + 1).collect::<Vec<_>>(),
            si.ways_firsts.len()
        )
    } else {
        format!(
            "{} one-set curves miss first at n = {}",
            si.ways_firsts.len(),
            si.ways + 1
        )
    };
    let half = if si.half_way > si.ways {
        format!(
            ", half of the accesses only from n = {} (the replacement keeps part of a set past \
             its ways: not LRU)",
            si.half_way + 1
        )
    } else {
        String::new()
    };
    let ways = if ways_read {
        format!("{} ways ({curves}{half})", si.ways)
    } else {
        format!(
            "at least {} ways ({curves}{half}; entries the chain does not own only bring the \
             first misses earlier, and a replacement that keeps part of a set past its ways \
             moves the half-way point later: entries {e}..{hi})",
            si.ways
        )
    };
    m.note = format!(
        "{}from the set index: {} sets × {ways} = {e} (conflict pairs{}); the random chain's \
         trials read {reading}{}; {}",
        match (ways_read, function_unclear) {
            (_, true) => format!(
                "unclear: the sets and the ways are read, the set-index function is not ({}); ",
                si.unclear.as_deref().unwrap_or("")
            ),
            (false, false) => "unclear: ".into(),
            (true, false) => String::new(),
        },
        si.sets(),
        if si.ways_fillers == 0 {
            ", the one-set curves without fillers: their targets overflow the L1's set"
        } else {
            ""
        },
        if agree {
            " (agrees within 5%)".to_string()
        } else {
            format!(
                " ({:+.0}%: a random chain over every set loses pages before the level is \
                 full here)",
                100.0 * (reading as f64 / e as f64 - 1.0)
            )
        },
        m.note
    );
    let caps = si
        .stride_capacities
        .iter()
        .map(|(k, c)| format!("2^{k}: {}", c.map_or("-".into(), |x| x.to_string())))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "{} (conflict pairs; pages 2^{} apart share a set; conflict capacity at strides {caps})",
        si.describe(),
        si.top_log2
    );
    // Ways not read (three curves, three values): the sets and the function are measured, the
    // ways are not.
    let text = match (ways_read, function_unclear) {
        (_, true) => format!(
            "unclear (the function: {}): {text}",
            si.unclear.as_deref().unwrap_or("")
        ),
        (false, false) => format!("unclear (the ways): {text}"),
        (true, false) => text,
    };
    let disagrees = declared.is_some_and(|d| match d.assoc {
        Assoc::Full => true,
        Assoc::Ways { ways } => ways as usize != si.ways,
        Assoc::Range { lo, hi } => !(lo as usize..=hi as usize).contains(&si.ways),
        _ => false,
    });
    let org = Measured::organisation(
        "L2 DTLB organisation",
        si.confidence
            .min(if r.quick || !all {
                Confidence::Medium
            } else {
                Confidence::High
            })
            .min(if ways_read {
                Confidence::High
            } else {
                Confidence::Unclear
            }),
        declared,
        disagrees,
        text,
    );
    replace_or_push(&mut r.summary, m);
    replace_or_push(&mut r.summary, org);
    replacement_line(r, c, Some(si.sets()));
}

pub(in crate::probe) const REPLACEMENT: &str = "L2 DTLB replacement (random chain)";

/// The "L2 DTLB replacement (random chain)" line and `ProbeReport::l2_replacement`: how the
/// stride-1 trials' pooled envelope rises past their rise `c.entries`, against the level's
/// `sets` (`analysis::replacement`). Without the sets, or an envelope that cannot tell, there is
/// no line (an earlier measurement's is removed).
///
/// Why the stride-1 envelope and not only the one-set curves: it is the chain over every set
/// that `--validate` and programs with large footprints run, and on the Zen 4 host it keeps fewer
/// pages a set (19 of 24: the trials' rise at 2401 of 3072) than one set alone does (24), with a
/// rise past that as gradual as random replacement's (docs/probe.md).
pub(in crate::probe) fn replacement_line(r: &mut ProbeReport, c: &Capacity, sets: Option<usize>) {
    r.summary.retain(|m| m.name != REPLACEMENT);
    r.l2_replacement = None;
    let Some(sets) = sets else { return };
    let Some(shape) = replacement_shape(&c.envelope, c.entries, sets) else {
        return;
    };
    let confidence = match shape.shape {
        Shape::Unclear => Confidence::Unclear,
        _ if r.quick => Confidence::Medium,
        Shape::LruLike if shape.share >= 0.85 => Confidence::High,
        Shape::RandomLike if shape.share <= 0.35 => Confidence::High,
        _ => Confidence::Medium,
    };
    let note = format!(
        "{}: by {} pages (the rise at {} plus 1.5 set counts) the stride-1 envelope took {:.2} of \
         its rise from {:.2} ns to {:.2} ns at {} pages (LRU, tree-PLRU and FIFO take all of it; \
         random replacement of 12-24 ways 0.3-0.45 on the probe's model); a random chain over \
         every set keeps {} pages, {:.1} a set of {sets}",
        shape.shape.as_str(),
        shape.at,
        c.entries,
        shape.share,
        shape.plateau,
        shape.top_ns,
        shape.top_at,
        c.entries,
        c.entries as f64 / sets as f64
    );
    r.summary.push(Measured {
        name: REPLACEMENT.into(),
        value: Some(shape.share),
        unit: String::new(),
        spread: None,
        confidence,
        cpuid: None,
        disagrees: false,
        note,
    });
    r.l2_replacement = Some(L2Replacement {
        shape,
        sets,
        chain_pages: c.entries,
    });
}

/// Replaces the summary line of the same name, or appends `m`.
pub(in crate::probe) fn replace_or_push(summary: &mut Vec<Measured>, m: Measured) {
    match summary.iter_mut().find(|x| x.name == m.name) {
        Some(old) => *old = m,
        None => summary.push(m),
    }
}

/// The "L2 DTLB organisation" line from the conflict sweep.
pub(in crate::probe) fn l2_organisation(
    ss: &StrideSweep,
    declared: Option<&cpuid::DeclaredTlb>,
) -> Measured {
    let (text, conf) = indexing_text(&ss.indexing);
    let disagrees = declared.is_some_and(|d| !assoc_matches(&ss.indexing, &d.assoc));
    // A stride read by one trial only (quick) or by disagreeing trials caps the verdict.
    let conf = ss.confidences.iter().fold(conf, |a, b| a.min(*b));
    // Trials that disagree at some stride: the reading is printed, but as unclear.
    let text = match ss
        .confidences
        .iter()
        .position(|c| *c == Confidence::Unclear)
    {
        Some(i) if conf == Confidence::Unclear && !text.starts_with("unclear") => format!(
            "unclear: the trials disagree at a stride of {} pages; their vote reads as {text}",
            1u32 << ss.capacities[i].log2_stride
        ),
        _ => text,
    };
    let text = format!(
        "{text} (conflict sets past the L1; capacity at strides 2^4..: {})",
        ss.capacities
            .iter()
            .map(|c| c.capacity.map_or("-".into(), |x| format!("{x:.0}")))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Measured::organisation("L2 DTLB organisation", conf, declared, disagrees, text)
}
