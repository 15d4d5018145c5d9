//! Section: the data misses and page walks in flight at once (`measure::mlp`).

use super::*;
use crate::measure::mlp::{self, Mlp};

pub(in crate::probe) const MLP: Section = Section::named("mlp", run);

/// Lines (and pages) each chase visits: 16 times the L2 DTLB's entries, so the walk chase
/// walks at nearly every access, within 2^16..2^18 (4-16 MiB of lines: past an L2 cache).
fn lines(l2_entries: Option<usize>) -> usize {
    l2_entries.map_or(1 << 16, |e| (16 * e).clamp(1 << 16, 1 << 18))
}

fn run(cx: &mut Context<'_>, r: &mut ProbeReport) {
    let (o, b) = (cx.o, cx.b);
    let n = lines(cx.l2.as_ref().map(|c| c.entries));
    let lanes: &[usize] = if o.quick {
        &mlp::QUICK_LANES
    } else {
        &mlp::LANES
    };
    let Some(m) = mlp::measure(n, lanes, if o.quick { 2 } else { 3 }, b.window_ns, b.seed) else {
        r.errors
            .push("mlp: the chases gave no latency or no walk part (or could not map)".into());
        return;
    };
    r.summary.extend(summary(&m));
    r.mlp = Some(m);
}

fn summary(m: &Mlp) -> [Measured; 2] {
    let dmin = m.data.iter().map(|p| p.ns).fold(f64::INFINITY, f64::min);
    let wmin = m.walks.iter().map(|p| p.ns).fold(f64::INFINITY, f64::min);
    let (d1, w1) = (m.miss_slots * dmin, m.walk_ns + m.miss_slots * dmin);
    [
        Measured {
            name: "data misses in flight".into(),
            value: Some(m.miss_slots),
            unit: "misses".into(),
            spread: None,
            confidence: Confidence::Medium,
            cpuid: None,
            disagrees: false,
            note: format!(
                "a chase over {} lines packed in pages the TLBs hold: {d1:.1} ns alone, \
                 {dmin:.2} ns an access at best with chases in lockstep",
                m.lines
            ),
        },
        Measured {
            name: "page walks in flight".into(),
            value: Some(m.walkers),
            unit: if m.walkers_bound {
                "walks"
            } else {
                "walks (at least)"
            }
            .into(),
            spread: None,
            confidence: if m.walkers_bound {
                Confidence::Medium
            } else {
                Confidence::Unclear
            },
            cpuid: None,
            disagrees: false,
            note: format!(
                "a chase over one line of {} pages: {w1:.1} ns alone, {:.1} ns of it the walk; \
                 {wmin:.2} ns an access at best{}",
                m.lines,
                m.walk_ns,
                if m.walkers_bound {
                    ""
                } else {
                    " (the miss buffers bound it first: the walkers are at least this many)"
                }
            ),
        },
    ]
}
