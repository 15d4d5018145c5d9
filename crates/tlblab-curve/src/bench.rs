//! Timing a pass over records already in memory, as the engine benchmark's `source` feed
//! does (`tlblab-python` `bench_engine`): records arrive in batches of 16K copied into a
//! buffer, as a trace decoder delivers them, and only the pass over each batch is timed (the
//! copy is left out). Used by `tlblab bench curve` and `examples/curve_bench.rs`.

use crate::{Curves, Run, Spec};
use std::time::Instant;
use tlblab_trace::record::Record;

/// The engine's batch (`tlblab-core` `system::BATCH`).
pub const BATCH: usize = 1 << 14;

pub struct Timed {
    pub curves: Curves,
    /// Accesses in the records (the trace's references).
    pub accesses: u64,
    /// Wall and thread CPU seconds of the passes.
    pub wall: f64,
    pub cpu: f64,
}

/// Runs `spec` over `records`, timing the passes.
pub fn timed(records: &[Record], spec: Spec) -> Result<Timed, String> {
    let mut run = Run::new(spec)?;
    let mut buf = Vec::with_capacity(BATCH);
    let (mut wall, mut cpu) = (0.0, 0.0);
    let mut accesses = 0;
    for chunk in records.chunks(BATCH) {
        buf.clear();
        buf.extend_from_slice(chunk);
        accesses += chunk
            .iter()
            .filter(|r| matches!(r, Record::Access(_)))
            .count() as u64;
        let (t0, c0) = (Instant::now(), tlblab_trace::clock::thread_cpu_seconds());
        run.feed(&buf)?;
        wall += t0.elapsed().as_secs_f64();
        cpu += tlblab_trace::clock::thread_cpu_seconds() - c0;
    }
    Ok(Timed {
        curves: run.finish(),
        accesses,
        wall,
        cpu,
    })
}

/// Mean absolute difference of the miss ratio between the sampled curve of `sampled` and the
/// exact fully associative curve of `exact` (group "all"), at the sizes `sizes`.
pub fn sampled_error(sampled: &Curves, exact: &Curves, sizes: &[usize]) -> Option<f64> {
    let (s, e) = (sampled.group("all")?, exact.group("all")?);
    if e.references == 0 {
        return None;
    }
    let refs = e.references as f64;
    let mut total = 0.0;
    for &c in sizes {
        let ps = s
            .points
            .iter()
            .find(|p| !p.exact && p.sets == 1 && p.ways == c)?;
        let pe = e.misses(1, c)?;
        total += (ps.misses as f64 / refs - pe as f64 / refs).abs();
    }
    Some(total / sizes.len() as f64)
}
