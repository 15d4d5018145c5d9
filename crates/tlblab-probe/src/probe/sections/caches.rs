//! Section 5b: the load-to-use latency of the data caches past the L2 and of memory
//! (`measure::memory`), for the machine file's L3 and memory latencies.

use super::*;
use crate::analysis::knee::latency_confidence;
use crate::measure::memory::memory_latencies;

pub(in crate::probe) const CACHES: Section = Section::named("caches", run);

fn run(cx: &mut Context<'_>, r: &mut ProbeReport) {
    let (o, b) = (cx.o, cx.b);
    match memory_latencies(o.quick, b.reps.max(3), b.window_ns * 2, o.seed) {
        Ok(points) => {
            for p in &points {
                r.summary.push(Measured {
                    name: format!("load, lines over {} MiB (windowed chase)", p.bytes >> 20),
                    value: Some(p.ns.median),
                    unit: "ns".into(),
                    spread: Some((p.ns.q1, p.ns.q3)),
                    confidence: latency_confidence(&p.ns),
                    cpuid: None,
                    disagrees: false,
                    note: "2 MiB windows in random order, lines in random order inside each".into(),
                });
            }
            r.memory_chase = points;
        }
        Err(e) => r.errors.push(e),
    }
}
