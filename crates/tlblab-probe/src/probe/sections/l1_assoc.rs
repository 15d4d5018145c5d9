//! Section 2: the L1 DTLB's associativity and index bits, from its capacity at page strides
//! (`measure::levels::stride_sweep`), beside CPUID's declared associativity.

use super::*;
use crate::analysis::index::Indexing;
use crate::analysis::knee::Confidence;
use crate::cpuid::Assoc;
use crate::measure::levels::stride_sweep;

pub(in crate::probe) const L1_ASSOC: Section = Section::named("l1_assoc", run);

fn run(cx: &mut Context<'_>, r: &mut ProbeReport) {
    let (o, b) = (cx.o, cx.b);
    let l1 = &cx.l1;
    let bench = &mut *cx.bench;
    // 2. L1 associativity and index bits.
    if let Some(c) = &l1 {
        let step = c.fit.map(|f| f.high - f.low);
        let ss = stride_sweep(
            bench,
            0,
            c.entries,
            if o.quick { 6 } else { 9 },
            None,
            step,
            b,
        );
        let (text, conf) = indexing_text(&ss.indexing);
        let declared = r.cpuid.data_tlb(1);
        let disagrees = declared.is_some_and(|d| !assoc_matches(&ss.indexing, &d.assoc));
        let conf = ss
            .confidences
            .iter()
            .fold(conf, |a, b| a.min(*b).max_medium_if(a));
        r.summary.push(Measured::organisation(
            "L1 DTLB associativity",
            conf,
            declared,
            disagrees,
            text,
        ));
        r.l1_strides = Some(ss);
    }
}

pub(in crate::probe) fn indexing_text(ix: &Indexing) -> (String, Confidence) {
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

pub(in crate::probe) fn assoc_matches(ix: &Indexing, a: &Assoc) -> bool {
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

pub(in crate::probe) trait MaxMedium {
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
