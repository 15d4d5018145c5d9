//! Sections 8 and 9, which need a second CPU: whether two CPUs share a last-level cache now,
//! and whether TLB entries survive a migration round trip and a context switch.

use super::*;
use crate::measure::extras;
use crate::sys;

pub(in crate::probe) const SECOND_CPU: Section = Section::always("llc, survival", run);

fn run(cx: &mut Context<'_>, r: &mut ProbeReport) {
    let (o, want, l2, cpu, other) = (cx.o, cx.want, &cx.l2, cx.cpu, cx.other);
    let (want_llc, want_survival) = (want("llc"), want("survival"));
    if let Some(oc) = other {
        if want_llc {
            let v = extras::llc_sharing(cpu, oc, if o.quick { 5 } else { 11 });
            let _ = sys::pin_to(cpu);
            r.summary.push(Measured::verdict(
                format!("CPUs {cpu} and {oc} share a last-level cache now"),
                v.timings.get(1).map(|t| t.1.median),
                "ns per line read by the other CPU",
                v.timings.get(1).map(|t| (t.1.q1, t.1.q3)),
                &v.answer,
                v.answer.clone(),
            ));
            r.llc_shared = Some(v);
        }
        if want_survival {
            let n = l2.as_ref().map(|c| (c.onset / 2).max(256)).unwrap_or(512);
            let (m, c) = extras::survival(cpu, oc, n, if o.quick { 15 } else { 31 });
            let _ = sys::pin_to(cpu);
            for (name, v) in [
                ("TLB entries survive a migration round trip", &m),
                ("TLB entries survive a context switch", &c),
            ] {
                r.summary.push(Measured::verdict(
                    name.into(),
                    v.fraction,
                    "fraction surviving",
                    None,
                    &v.answer,
                    v.answer.clone(),
                ));
            }
            r.migration_survival = Some(m);
            r.context_switch_survival = Some(c);
        }
    } else if want_llc || want_survival {
        r.errors
            .push("only one CPU available: skipped the LLC-sharing and migration tests".into());
    }
}
