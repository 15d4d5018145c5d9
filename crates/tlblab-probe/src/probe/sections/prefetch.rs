//! Section 6: whether each software prefetch instruction fills the TLB (`measure::extras`).

use super::*;
use crate::measure::extras;

pub(in crate::probe) const PREFETCH: Section = Section::named("prefetch", run);

fn run(cx: &mut Context<'_>, r: &mut ProbeReport) {
    let (o, l2) = (cx.o, &cx.l2);
    let n = l2.as_ref().map(|c| (c.onset / 2).max(256)).unwrap_or(512);
    for (k, v) in extras::prefetch_fills_tlb(n, if o.quick { 15 } else { 31 }) {
        r.summary.push(Measured::verdict(
            format!("{} fills the TLB", k.name()),
            v.fraction,
            "fraction of a load's effect",
            None,
            &v.answer,
            v.answer.clone(),
        ));
        r.prefetch.push((k.name().into(), v));
    }
}
