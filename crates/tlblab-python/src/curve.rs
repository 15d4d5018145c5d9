//! Python bindings for miss curves (tlblab-curve): the curves of one TLB level of a machine
//! over a workload, and the `tlblab bench curve` timings. Wrappers only: the spec is read off
//! the machine here (which references reach the level, the fixed levels above it, ASID tags),
//! everything else is tlblab-curve's.

use crate::bench::{workload_records, ReplaySource};
use crate::machine::machine_from;
use crate::sim::{err, open_workload};
use crate::watch;
use pyo3::prelude::*;
use std::time::Instant;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::tlb::{IndexFn, TlbConfig, TlbKind};
use tlblab_core::{MachineConfig, RunOptions, System};
use tlblab_curve::{Path, Spec, UpperGeometry};

/// The spec of level `level` (a name; default: the first level of the data path) of `cfg`:
/// its path, the levels above it on each path it is on (exact; LRU only), its flush policy.
fn spec_for(cfg: &MachineConfig, level: Option<&str>) -> PyResult<(Spec, String, Vec<String>)> {
    let mut order: Vec<&TlbConfig> = cfg.tlbs.iter().collect();
    order.sort_by_key(|t| (t.level, t.kind as u8));
    let target = match level {
        Some(name) => order.iter().find(|t| t.name == name).ok_or_else(|| {
            let names: Vec<&str> = order.iter().map(|t| t.name.as_str()).collect();
            err(format!(
                "level: no TLB level {name:?} in machine {} (expected one of {})",
                cfg.name,
                names.join(", ")
            ))
        })?,
        None => order
            .iter()
            .find(|t| t.kind != TlbKind::Instr)
            .ok_or_else(|| err("level: the machine has no data TLB level"))?,
    };
    let path = match target.kind {
        TlbKind::Data => Path::Data,
        TlbKind::Instr => Path::Instr,
        TlbKind::Unified => Path::Unified,
    };
    let mut upper: Vec<UpperGeometry> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut chain = |k: TlbKind| -> PyResult<Vec<usize>> {
        let mut out = Vec::new();
        for t in order
            .iter()
            .filter(|t| (t.kind == k || t.kind == TlbKind::Unified) && t.level < target.level)
        {
            if t.replacement != ReplacementKind::Lru {
                return Err(err(format!(
                    "level: tlb[{}] above {} uses {:?} replacement; curves model the levels above as LRU only",
                    t.name, target.name, t.replacement
                )));
            }
            if t.sets() > 1 && t.index != IndexFn::LowBits {
                return Err(err(format!(
                    "level: tlb[{}] above {} is not indexed by the low page-number bits; curves model that index only",
                    t.name, target.name
                )));
            }
            let i = match names.iter().position(|n| *n == t.name) {
                Some(i) => i,
                None => {
                    names.push(t.name.clone());
                    upper.push(UpperGeometry {
                        sets: t.sets(),
                        ways: t.ways(),
                        sizes: t.page_sizes.iter().fold(0, |m, s| m | 1 << s.index()),
                    });
                    upper.len() - 1
                }
            };
            out.push(i);
        }
        Ok(out)
    };
    let upper_data = if path != Path::Instr {
        chain(TlbKind::Data)?
    } else {
        Vec::new()
    };
    let upper_instr = if path != Path::Data {
        chain(TlbKind::Instr)?
    } else {
        Vec::new()
    };
    let spec = Spec {
        path,
        upper,
        upper_data,
        upper_instr,
        page_size: cfg.page_table.page_size,
        // The engine's `auto` switch policy: ASID-tagged only when every level carries ASIDs.
        flush_on_switch: !cfg.tlbs.iter().all(|t| t.tags.asid),
        ..Spec::new(0, &[])
    };
    Ok((spec, target.name.clone(), names))
}

/// Curves of TLB level `level` of `machine` over `workload` (a spec or a trace file), as JSON:
/// the level, its path, the levels above it, and per group (all, then per page size and per
/// address space when several) the columns sets, ways, misses, exact.
#[pyfunction]
#[pyo3(signature = (workload, machine="zen3", level=None, sets=vec![], max_entries=65536, sample=None, sample_entries=65536, seed=0, groups=true, machine_format="auto"))]
#[allow(clippy::too_many_arguments)]
fn curve(
    py: Python<'_>,
    workload: &str,
    machine: &str,
    level: Option<&str>,
    sets: Vec<usize>,
    max_entries: usize,
    sample: Option<f64>,
    sample_entries: usize,
    seed: u64,
    groups: bool,
    machine_format: &str,
) -> PyResult<String> {
    let cfg = machine_from(machine, machine_format)?;
    let (base, name, upper) = spec_for(&cfg, level)?;
    let spec = Spec {
        max_entries: if sample.is_some() { 0 } else { max_entries },
        set_counts: sets,
        sample_rate: sample,
        sample_entries,
        groups,
        ..base
    };
    let flush = spec.flush_on_switch;
    let path = format!("{:?}", spec.path).to_lowercase();
    let source = open_workload(workload, seed)?;
    // Ctrl-C stops the pass within a fraction of a second (`watch.rs`).
    watch::start();
    let r = py.detach(|| -> Result<String, String> {
        let mut source = watch::Watched::new(source, None);
        let c = tlblab_curve::curves(&mut source, spec)?;
        let groups: Vec<serde_json::Value> = c
            .groups
            .iter()
            .map(|g| {
                serde_json::json!({
                    "name": g.name,
                    "references": g.references,
                    "cold": g.cold,
                    "sets": g.points.iter().map(|p| p.sets).collect::<Vec<_>>(),
                    "ways": g.points.iter().map(|p| p.ways).collect::<Vec<_>>(),
                    "misses": g.points.iter().map(|p| p.misses).collect::<Vec<_>>(),
                    "exact": g.points.iter().map(|p| p.exact).collect::<Vec<_>>(),
                })
            })
            .collect();
        Ok(serde_json::json!({
            "machine": cfg.name,
            "level": name,
            "path": path,
            "upper": upper,
            "flush_on_switch": flush,
            "cores_modelled": 1,
            "machine_cores": cfg.cores,
            "records": c.records,
            "sample_rate": c.sample_rate,
            "groups": groups,
        })
        .to_string())
    });
    watch::finish(r)
}

/// Times one curve pass over `workload` in memory (`tlblab_curve::bench::timed`: batches of
/// 16K records copied into a buffer, the copies left out), on a unified level (every
/// reference reaches it). `what`: "fully" (exact, 1..=max_entries), "sets" (every
/// associativity at `sets`), "sampled" (rate `sample`, 1..=max_entries). Returns JSON: accesses,
/// wall and CPU seconds, and for "sampled" the mean absolute miss-ratio error against the exact
/// curve at the powers of two 1..=max_entries (its exact pass untimed).
#[pyfunction]
#[pyo3(signature = (workload, what, sets=vec![], max_entries=65536, sample=0.01, seed=0))]
fn bench_curve(
    py: Python<'_>,
    workload: &str,
    what: &str,
    sets: Vec<usize>,
    max_entries: usize,
    sample: f64,
    seed: u64,
) -> PyResult<String> {
    let base = Spec {
        path: Path::Unified,
        groups: false,
        ..Spec::new(0, &[])
    };
    let spec = match what {
        "fully" => Spec {
            max_entries,
            ..base.clone()
        },
        "sets" => Spec {
            set_counts: sets,
            ..base.clone()
        },
        "sampled" => Spec {
            sample_rate: Some(sample),
            sample_entries: max_entries,
            ..base.clone()
        },
        _ => {
            return Err(err(format!(
                "bench curve: expected fully, sets or sampled, found {what:?}"
            )))
        }
    };
    py.detach(|| {
        let records = workload_records(workload, seed)?;
        let t = tlblab_curve::bench::timed(&records, spec).map_err(err)?;
        let mut out = serde_json::json!({
            "accesses": t.accesses,
            "references": t.curves.groups[0].references,
            "wall_seconds": t.wall,
            "cpu_seconds": t.cpu,
        });
        if what == "sampled" {
            let exact = tlblab_curve::bench::timed(
                &records,
                Spec {
                    max_entries,
                    ..base
                },
            )
            .map_err(err)?;
            let grid: Vec<usize> = (0..)
                .map(|i| 1usize << i)
                .take_while(|&c| c <= max_entries)
                .collect();
            out["mae"] = serde_json::json!(tlblab_curve::bench::sampled_error(
                &t.curves,
                &exact.curves,
                &grid
            ));
            out["sample_rate"] = serde_json::json!(t.curves.sample_rate);
        }
        Ok(out.to_string())
    })
}

/// Times separate engine runs, TLB-only, of one unified LRU level of each `(sets, ways)` over
/// `workload` (in memory, replayed in batches with the copies left out, as `bench_engine`'s
/// `source` feed), and returns JSON: per geometry its misses, wall and CPU seconds. What a
/// curve pass replaces; the misses let the caller check the curve against them.
#[pyfunction]
#[pyo3(signature = (workload, geometries, seed=0))]
fn bench_separate(
    py: Python<'_>,
    workload: &str,
    geometries: Vec<(usize, usize)>,
    seed: u64,
) -> PyResult<String> {
    let cfg = tlblab_config::load_machine("zen3").map_err(err)?;
    py.detach(|| {
        let records = workload_records(workload, seed)?;
        let mut runs = Vec::new();
        for (sets, ways) in geometries {
            let mut m = cfg.clone();
            let mut t = m
                .tlbs
                .iter()
                .find(|t| t.name == "L1D")
                .cloned()
                .ok_or_else(|| err("zen3 has no L1D"))?;
            t.name = "T".into();
            t.kind = TlbKind::Unified;
            t.level = 1;
            t.entries = sets * ways;
            t.ways = tlblab_core::tlb::Ways::N(ways);
            t.index = IndexFn::LowBits;
            t.replacement = ReplacementKind::Lru;
            t.tags.hw_thread = false;
            m.tlbs = vec![t];
            m.cores = 1;
            m.threads_per_core = 1;
            let mut sys = System::new(m, RunOptions::tlb_only(seed)).map_err(|e| err(e.0))?;
            let mut replay = ReplaySource::new(&records);
            let (t0, c0) = (Instant::now(), tlblab_trace::clock::thread_cpu_seconds());
            sys.run(&mut replay).map_err(|e| err(e.0))?;
            let wall = t0.elapsed().as_secs_f64() - replay.copy_wall;
            let cpu = tlblab_trace::clock::thread_cpu_seconds() - c0 - replay.copy_cpu;
            let st = sys.stats();
            runs.push(serde_json::json!({
                "sets": sets, "ways": ways,
                "misses": st.total.tlb[0].misses,
                "references": st.total.references,
                "wall_seconds": wall, "cpu_seconds": cpu,
            }));
        }
        Ok(serde_json::Value::Array(runs).to_string())
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions! { m: curve, bench_curve, bench_separate }
}
