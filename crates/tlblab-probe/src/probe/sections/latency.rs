//! Section 4: latencies: a load's L1 DTLB hit, an L1 miss that hits the L2, and walks with
//! their leaf PTEs in each cache level (`measure::walk`).

use super::*;
use crate::analysis::knee::latency_confidence;
use crate::measure::walk::walk_latencies;
use crate::stats::Summary;

pub(in crate::probe) const LATENCY: Section = Section::named("latency", run);

fn run(cx: &mut Context<'_>, r: &mut ProbeReport) {
    let (o, b) = (cx.o, cx.b);
    let (l1, l2) = (&cx.l1, &cx.l2);
    let rows = &r.dtlb_sweep;
    if let Some(c1) = &l1 {
        let hits: Vec<f64> = rows
            .iter()
            .filter(|x| x.n < c1.knee.lo)
            .map(|x| x.test.median)
            .collect();
        r.summary.push(lat_measured(
            "load, L1 DTLB hit (L1D hit)",
            &Summary::of(&hits),
            "the L1 DTLB lookup is part of the load-to-use latency",
        ));
        if let Some(c2) = &l2 {
            // Well inside the plateau: the median window near the L2's capacity is
            // disturbed by intruders (see `SweepRow::floor`).
            let lo = (c1.full_miss.max(c1.entries) as f64 * 1.3) as usize;
            let hi = (c2.onset as f64 * 0.3).max(lo as f64 * 2.0) as usize;
            let pen: Vec<f64> = rows
                .iter()
                .filter(|x| x.n >= lo && x.n <= hi)
                .map(|x| x.excess.median)
                .collect();
            r.summary.push(lat_measured(
                "L1 DTLB miss, L2 DTLB hit (extra)",
                &Summary::of(&pen),
                &format!("excess over the control for {lo}..{hi} pages"),
            ));
        }
    }
    r.walks = walk_latencies(
        b.reps.max(3),
        b.window_ns * 2,
        !o.quick,
        l1.as_ref().map(|c| c.entries),
    );
    for w in &r.walks {
        r.summary.push(Measured {
            confidence: w.confidence,
            ..lat_measured(
                &format!("walk, leaf PTEs in {} (extra)", w.pte_in),
                &w.excess_ns,
                &format!(
                    "{} pages, {} KiB of PTE lines; L1+L2 DTLB miss + nested walk",
                    w.pages,
                    w.pte_bytes >> 10
                ),
            )
        });
    }
}

fn lat_measured(name: &str, s: &Summary, note: &str) -> Measured {
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
