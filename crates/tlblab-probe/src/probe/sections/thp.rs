//! Section 7: whether transparent huge pages give more TLB reach (`measure::extras`).

use super::*;
use crate::analysis::knee::Confidence;
use crate::measure::extras;

pub(in crate::probe) struct Thp;

impl Section for Thp {
    fn name(&self) -> &'static str {
        "thp"
    }

    fn run(&self, cx: &mut Context<'_>, r: &mut ProbeReport) {
        let (o, b, want) = (cx.o, cx.b, cx.want);
        let l1 = &cx.l1;
        if want("thp") {
            let n = l1.as_ref().map(|c| (c.entries * 4).min(448)).unwrap_or(256);
            let v = extras::thp_reach(n, if o.quick { 5 } else { 9 }, b.window_ns);
            r.summary.push(Measured {
                name: "THP gives more TLB reach".into(),
                value: v.fraction,
                unit: "fraction of the 4K excess removed".into(),
                spread: None,
                confidence: if v.answer == "unclear" {
                    Confidence::Unclear
                } else {
                    Confidence::High
                },
                cpuid: None,
                disagrees: false,
                note: format!("{}: {}", v.answer, v.note),
            });
            r.thp = Some(v);
        }
    }
}
