//! Section 7: whether transparent huge pages give more TLB reach (`measure::extras`).

use super::*;
use crate::measure::extras;

pub(in crate::probe) const THP: Section = Section::named("thp", run);

fn run(cx: &mut Context<'_>, r: &mut ProbeReport) {
    let (o, b) = (cx.o, cx.b);
    let l1 = &cx.l1;
    let n = l1.as_ref().map(|c| (c.entries * 4).min(448)).unwrap_or(256);
    let v = extras::thp_reach(n, if o.quick { 5 } else { 9 }, b.window_ns);
    r.summary.push(Measured::verdict(
        "THP gives more TLB reach".into(),
        v.fraction,
        "fraction of the 4K excess removed",
        None,
        &v.answer,
        format!("{}: {}", v.answer, v.note),
    ));
    r.thp = Some(v);
}
