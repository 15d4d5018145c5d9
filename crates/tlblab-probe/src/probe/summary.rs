//! The summary lines (`ProbeReport::summary`): each measurement's headline number or verdict
//! in words, with its confidence, its spread and CPUID's declared value beside it. Why each
//! reading is taken over another is said at the function that takes it.

use super::*;
use crate::analysis::index::{ConflictGeometry, Indexing};
use crate::analysis::knee::{latency_confidence, Confidence};
use crate::analysis::replacement::{replacement_shape, Shape};
use crate::cpuid::{self, Assoc};
use crate::measure::conflict::{arbitrate_with, Arbitration};
use crate::measure::curve::Capacity;
use crate::measure::levels::StrideSweep;
use crate::stats::Summary;

/// The "… entries" line of a capacity `c`; for the L2 DTLB, `arb` is what the conflict sets say
/// of it ([`Arbitration`]): they decide between a rise before the ramp and the ramp, and
/// confirm or contradict any other reading.
pub(super) fn cap_measured(
    name: &str,
    c: &Capacity,
    declared: Option<&cpuid::DeclaredTlb>,
    note: &str,
    arb: Option<&Arbitration>,
) -> Measured {
    let mut value = c.entries as f64;
    let mut spread = (
        c.trials.iter().copied().min().unwrap_or(0) as f64,
        c.trials.iter().copied().max().unwrap_or(0) as f64,
    );
    let mut confidence = c.confidence;
    let geometry = |g: &ConflictGeometry| {
        format!(
            "{} sets × {} ways = {} (capacity × stride {:.0}..{:.0} at strides up to the sets; \
             capacity against the sets the targets spread over: {} ways and {:.1} pages beyond \
             them)",
            g.sets,
            g.ways,
            g.entries(),
            g.lo,
            g.hi,
            g.fitted_ways,
            g.beyond
        )
    };
    let rise = format!(
        "the trials read a smaller, sharper rise at {} before the ramp of the pooled envelope \
         ({}..{}), which carries most of the step",
        c.entries, c.onset, c.full_miss
    );
    let prefix = match (arb, c.before_ramp) {
        (
            Some(Arbitration::Ramp {
                geometry: g,
                half_way,
            }),
            before_ramp,
        ) => {
            value = g.entries() as f64;
            spread = (g.lo, g.hi);
            confidence = Confidence::Medium;
            let read = if before_ramp {
                rise.clone()
            } else {
                format!(
                    "the trials read a smaller rise at {} (the ramp fitted to the pooled \
                     envelope: {}..{})",
                    c.entries, c.onset, c.full_miss
                )
            };
            let half = half_way.map_or(String::new(), |n| {
                format!("; the pooled envelope is half-way up its step at {n} pages")
            });
            format!(
                "from the conflict sets: {}{half}; {read}: there the level starts losing pages \
                 of a random chain over every set before it is full; ",
                geometry(g)
            )
        }
        (Some(Arbitration::Agrees(g)), true) => {
            confidence = Confidence::Medium;
            format!(
                "{rise}; the conflict sets' {} agree with the rise; ",
                geometry(g)
            )
        }
        (Some(Arbitration::Agrees(g)), false) => {
            let e = g.entries() as f64;
            if (e - c.entries as f64).abs() > 0.02 * e {
                // Within 10% but not 2%: the level's structure is the conflict sets' (sets
                // exact, ways read two ways and chosen by the envelope), the trials' reading a
                // random chain's over every set, which a neighbour moves. On the Zen 4 host
                // (3072 = 128 × 24) one run's trials read 2387-2418 in its first measurement
                // and 2839-2935 in its second, seconds later: 2873 voted, 6.5% low.
                value = e;
                spread = (g.lo.min(c.entries as f64), g.hi.max(c.entries as f64));
                confidence = confidence.min(Confidence::Medium);
                format!(
                    "from the conflict sets: {}; the trials read {} ({:+.1}%: a random chain over \
                     every set loses pages before the level is full here); ",
                    geometry(g),
                    c.entries,
                    100.0 * (c.entries as f64 / e - 1.0)
                )
            } else {
                format!("the conflict sets agree: {}; ", geometry(g))
            }
        }
        (Some(Arbitration::Disagrees(g)), before_ramp) => {
            confidence = confidence.min(Confidence::Medium);
            let what = if before_ramp {
                "neither the rise nor the ramp"
            } else {
                "more than 10% off"
            };
            format!(
                "{}the conflict sets' {} is {what}; ",
                if before_ramp {
                    format!("unclear: {rise}; ")
                } else {
                    String::new()
                },
                geometry(g)
            )
        }
        (None, true) => {
            format!("unclear: {rise}; timing alone does not tell which is the overflow; ")
        }
        (None, false) => String::new(),
    };
    let (cpuid_s, disagrees) = match declared {
        Some(d) => (
            Some(format!("{} entries, {}", d.entries, d.assoc)),
            (value - d.entries as f64).abs() > 0.05 * d.entries as f64,
        ),
        None => (None, false),
    };
    Measured {
        name: name.into(),
        value: Some(value),
        unit: "entries".into(),
        spread: Some(spread),
        confidence,
        cpuid: cpuid_s,
        disagrees,
        note: format!(
            "{prefix}{note}{} of {} trials within 3% of the estimate (their upper median; each trial: \
             where the steepest rise of its fastest windows meets the line before it); the \
             trials' pooled envelope leaves the plateau after {}, is half-way at {}, ramp ends \
             at {} pages",
            c.agreeing,
            c.trials.len(),
            c.onset,
            c.midpoint,
            c.full_miss
        ),
    }
}

/// The L2 DTLB's two lines from its capacity `c` and, when it ran, the conflict sweep: the
/// entries line with what the conflict sets say of it ([`arbitrate`]), and the organisation
/// inferred again with the entries that line reports (its ways are entries / sets). A set index
/// measured by conflict pairs ([`set_index_lines`]) takes precedence.
pub(super) fn l2_lines(r: &mut ProbeReport, c: &Capacity, note: &str) {
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
pub(super) fn set_index_lines(
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

pub(super) const REPLACEMENT: &str = "L2 DTLB replacement (random chain)";

/// The "L2 DTLB replacement (random chain)" line and `ProbeReport::l2_replacement`: how the
/// stride-1 trials' pooled envelope rises past their rise `c.entries`, against the level's
/// `sets` (`analysis::replacement`). Without the sets, or an envelope that cannot tell, there is
/// no line (an earlier measurement's is removed).
///
/// Why the stride-1 envelope and not only the one-set curves: it is the chain over every set
/// that `--validate` and programs with large footprints run, and on the Zen 4 host it keeps fewer
/// pages a set (19 of 24: the trials' rise at 2401 of 3072) than one set alone does (24), with a
/// rise past that as gradual as random replacement's (docs/probe.md).
pub(super) fn replacement_line(r: &mut ProbeReport, c: &Capacity, sets: Option<usize>) {
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
pub(super) fn replace_or_push(summary: &mut Vec<Measured>, m: Measured) {
    match summary.iter_mut().find(|x| x.name == m.name) {
        Some(old) => *old = m,
        None => summary.push(m),
    }
}

/// The "L2 DTLB organisation" line from the conflict sweep.
pub(super) fn l2_organisation(ss: &StrideSweep, declared: Option<&cpuid::DeclaredTlb>) -> Measured {
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

pub(super) fn lat_measured(name: &str, s: &Summary, note: &str) -> Measured {
    Measured {
        name: name.into(),
        value: Some(s.median),
        unit: "ns".into(),
        spread: Some((s.q1, s.q3)),
        confidence: latency_confidence(s),
        cpuid: None,
        disagrees: false,
        note: note.into(),
    }
}

pub(super) fn indexing_text(ix: &Indexing) -> (String, Confidence) {
    match ix {
        Indexing::FullyAssociative { entries, max_log2_stride } => {
            (format!("fully associative ({entries} entries at every stride up to 2^{max_log2_stride} pages)"), Confidence::High)
        }
        Indexing::Linear { sets, ways, index_bits } => (format!("{ways}-way, {sets} sets, set = VPN bits {index_bits:?}"), Confidence::High),
        Indexing::LinearAtLeast { min_sets, max_ways, index_bits, floor } => (
            format!("set-indexed by VPN bits {index_bits:?} (and possibly more): ≥ {min_sets} sets, ≤ {max_ways} ways; smaller capacities hide behind the {floor}-entry level in front"),
            Confidence::Medium,
        ),
        Indexing::XorFolded { sets, ways, high_bits, .. } => (format!("{ways}-way, {sets} sets, XOR-folded index (high bits {high_bits:?} fold onto the low bits)"), Confidence::Medium),
        Indexing::Unclear { reason } => (format!("unclear: {reason}"), Confidence::Unclear),
    }
}

pub(super) fn assoc_matches(ix: &Indexing, a: &Assoc) -> bool {
    match (ix, a) {
        (Indexing::FullyAssociative { .. }, Assoc::Full) => true,
        (
            Indexing::Linear { ways, .. } | Indexing::XorFolded { ways, .. },
            Assoc::Ways { ways: w },
        ) => *ways as u32 == *w,
        (
            Indexing::Linear { ways, .. } | Indexing::XorFolded { ways, .. },
            Assoc::Range { lo, hi },
        ) => (*lo..=*hi).contains(&(*ways as u32)),
        (Indexing::LinearAtLeast { max_ways, .. }, Assoc::Range { lo, .. }) => {
            *max_ways as u32 >= *lo
        }
        (Indexing::LinearAtLeast { max_ways, .. }, Assoc::Ways { ways }) => {
            *max_ways as u32 >= *ways
        }
        (Indexing::Unclear { .. }, _) => true,
        _ => false,
    }
}

pub(super) trait MaxMedium {
    fn max_medium_if(self, base: Confidence) -> Confidence;
}

impl MaxMedium for Confidence {
    /// Stride points that were themselves only "medium" lower the verdict to medium at most, never
    /// to unclear: the inference tolerates a noisy stride.
    fn max_medium_if(self, base: Confidence) -> Confidence {
        if self == Confidence::Unclear && base != Confidence::Unclear {
            Confidence::Medium
        } else {
            self
        }
    }
}
