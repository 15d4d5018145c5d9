//! Python bindings for the engine: simulate (checkpoints, sampling), workloads, page profiles,
//! colored placement and periodic task sets. Machines are in `machine.rs`, techniques in
//! `technique.rs`, the engine benchmark and the floors in `bench.rs`.
//! Wrappers only: parse arguments, call tlblab-core/config/trace, return JSON or plain values.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tlblab_core::{RunOptions, System};
use tlblab_trace::workloads;

use crate::machine::machine_from;
use crate::watch;

pub(crate) fn err(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// Options given as a JSON object built from the caller's keyword arguments or `--os
/// key=value` pairs (`what` names them), into `T` (every field defaulted). The JSON is ours,
/// so serde's "at line 1 column 18" means nothing to the caller: a failing object is parsed
/// again one key at a time, and the message names the key that fails.
fn options_from_json<T: serde::de::DeserializeOwned>(what: &str, json: &str) -> PyResult<T> {
    let whole = serde_json::from_str::<T>(json);
    let e = match whole {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(json) {
        for (k, v) in map {
            let one = serde_json::Value::Object([(k.clone(), v)].into_iter().collect());
            if let Err(e) = serde_json::from_value::<T>(one) {
                return Err(err(tlblab_config::plain_types(&format!(
                    "{what}: {k}: {e}"
                ))));
            }
        }
    }
    Err(err(tlblab_config::plain_types(&format!("{what}: {e}"))))
}

/// Runs `workload` (a spec like "random:pages=1024") on `machine`; returns the stats as JSON.
#[pyfunction]
#[pyo3(signature = (machine, workload, seed=0, caches=true, data_accesses=true, max_references=0, machine_format="auto", os_json="{}", walks=true, technique_json="", progress=false, stall_cycles=false, warmup=0, fetches=true, warmup_instructions=0, simulation_instructions=0, checkpoint_at=Vec::new(), save_checkpoint=Vec::new(), from_checkpoint="", continue_after_save=true, sample_unit=0, sample_period=0, sample_offset=0, sample_head=0, miss_log="", stop_at=None, since_start=false, checkpoint_pass=false))]
#[allow(clippy::too_many_arguments)]
fn simulate(
    py: Python<'_>,
    machine: &str,
    workload: &str,
    seed: u64,
    caches: bool,
    data_accesses: bool,
    max_references: u64,
    machine_format: &str,
    os_json: &str,
    walks: bool,
    technique_json: &str,
    progress: bool,
    stall_cycles: bool,
    warmup: u64,
    fetches: bool,
    warmup_instructions: u64,
    simulation_instructions: u64,
    checkpoint_at: Vec<String>,
    save_checkpoint: Vec<String>,
    from_checkpoint: &str,
    continue_after_save: bool,
    sample_unit: u64,
    sample_period: u64,
    sample_offset: u64,
    sample_head: u64,
    miss_log: &str,
    stop_at: Option<u64>,
    since_start: bool,
    checkpoint_pass: bool,
) -> PyResult<String> {
    let cfg = machine_from(machine, machine_format)?;
    let sampled = sample_unit > 0 || sample_period > 0;
    if sampled && !(checkpoint_at.is_empty() && from_checkpoint.is_empty()) {
        return Err(err(
            "--sample with --checkpoint-at or --from-checkpoint: a sampled run is neither saved nor restored (sample the run from its start)",
        ));
    }
    let pauses = checkpoint_pauses(&checkpoint_at, &save_checkpoint, from_checkpoint, warmup)?;
    if stop_at.is_some() && !pauses.is_empty() {
        return Err(err(
            "stop_at with --checkpoint-at: a run that stops early saves nothing (give one)",
        ));
    }
    // ChampSim's import options (`ChampSimOptions`): an error on any other workload.
    let champsim = tlblab_trace::champsim::ChampSimOptions {
        fetches,
        warmup_instructions,
        simulation_instructions,
    };
    // `technique_json` (a `[technique]` table: the spec as `tlblab.technique.table` gave it)
    // overrides the machine file's own table.
    let technique = if technique_json.is_empty() {
        cfg.technique.clone()
    } else {
        Some(crate::technique::spec_from_json(technique_json)?)
    };
    let os: tlblab_core::os::OsConfig = options_from_json("os options", os_json)?;
    let opts = RunOptions {
        seed,
        caches,
        data_accesses,
        walks,
        max_references,
        os,
        stall_cycles,
    };
    let source = open_workload_with(workload, seed, champsim)?;
    // Ctrl-C stops the run within a fraction of a second (`watch.rs`); on a terminal a
    // progress line shows references done, the rate and, when the length is known, time left.
    let total = match (source.len_hint(), max_references) {
        (t, 0) => t,
        (Some(t), m) => Some(t.min(m)),
        (None, m) => Some(m),
    };
    let progress = progress.then(|| watch::Progress::new("simulate", total));
    watch::start();
    if technique.is_some() && !save_checkpoint.is_empty() {
        return Err(err(format!(
            "--save-checkpoint {}: a run with a technique cannot be saved (its own state is not in a checkpoint): save the run without --technique and give the technique to the runs --from-checkpoint",
            save_checkpoint.join(",")
        )));
    }
    let r = py.detach(|| -> Result<String, String> {
        let mut source = watch::Watched::new(source, progress);
        let mut sys = if from_checkpoint.is_empty() {
            let mut sys = System::new(cfg, opts).map_err(|e| e.0)?;
            sys.set_warmup(warmup);
            sys
        } else {
            let path = std::path::Path::new(from_checkpoint);
            let restored = tlblab_config::checkpoint::load(path, &cfg, &opts, workload)?;
            skip_records(&mut source, restored.records, &restored.system, path)?;
            restored.system
        };
        if let Some(spec) = &technique {
            tlblab_core::registry::install(&mut sys, spec).map_err(|e| e.0)?;
        }
        if !miss_log.is_empty() {
            sys.log_misses(miss_log).map_err(|e| e.0)?;
        }
        if sampled {
            sys.set_sample(sample_unit, sample_period, sample_offset, sample_head)
                .map_err(|e| e.0)?;
        }
        // What an interval of an interval-parallel run reports (`since_start`): its own
        // counters, from the state it was restored in (with its technique just installed).
        let start = since_start.then(|| sys.stats());
        // One pass, several checkpoints: the run pauses at each point in turn (a batch
        // boundary: `System::pause_at`), saves, and goes on; nothing is re-run.
        let mut saved = Vec::new();
        for ((at, pause), path) in checkpoint_at.iter().zip(&pauses).zip(&save_checkpoint) {
            match pause {
                CheckpointAt::Roi => sys.pause_at_roi(),
                CheckpointAt::References(n) => sys.pause_at(*n),
            }
            sys.run(&mut source).map_err(|e| e.0)?;
            if !sys.paused() {
                if checkpoint_pass {
                    break; // the pass reports the checkpoints it saved; the rest are not reached
                }
                return Err(format!(
                    "--checkpoint-at {at}: the run ended at reference {} before it: nothing saved",
                    sys.references()
                ));
            }
            tlblab_config::checkpoint::save(std::path::Path::new(path), &sys, workload)?;
            saved.push(serde_json::json!({
                "path": path,
                "references": sys.references(),
                "records": sys.records_read(),
            }));
        }
        if let Some(n) = stop_at {
            sys.pause_at(n); // an interval ends where the pass saved the next one's checkpoint
        }
        if pauses.is_empty() || continue_after_save {
            sys.run(&mut source).map_err(|e| e.0)?;
        }
        if (warmup > 0 || warmup_instructions > 0) && !sys.roi_begun() {
            let done = sys.stats().total.references;
            return Err(if warmup > 0 {
                format!("--warmup {warmup}: the warm-up is longer than the run ({done} references): nothing is left to measure")
            } else {
                format!("--warmup-instructions {warmup_instructions}: the trace has fewer instructions than the warm-up ({done} references were simulated): nothing is left to measure")
            });
        }
        if sampled {
            // The measured units alone, and the run's length: the estimates are made from
            // them (`tlblab.sample`), never from the run's own totals.
            return serde_json::to_string(&serde_json::json!({
                "references": sys.references(),
                "units": sys.sample_units(),
            }))
            .map_err(|e| e.to_string());
        }
        let stats = match &start {
            Some(begin) => sys.stats().since(begin),
            None => sys.stats(),
        };
        if checkpoint_pass {
            return serde_json::to_string(&serde_json::json!({
                "stats": stats,
                "checkpoints": saved,
                "paused": sys.paused(),
            }))
            .map_err(|e| e.to_string());
        }
        serde_json::to_string(&stats).map_err(|e| e.to_string())
    });
    watch::finish(r)
}

/// workload_length(workload, seed=0) -> the records the workload will give, when it says so
/// before it is read (a trace file, most generators), else None.
#[pyfunction]
#[pyo3(signature = (workload, seed=0))]
fn workload_length(py: Python<'_>, workload: &str, seed: u64) -> PyResult<Option<u64>> {
    py.detach(|| Ok(open_workload(workload, seed)?.len_hint()))
}

/// measured_accesses(workload, seed=0) -> the accesses of a populated workload's measured phase
/// (after its population), counted without simulating them, skipped where its generator can
/// (`workloads::populate::measured_accesses`).
#[pyfunction]
#[pyo3(signature = (workload, seed=0))]
fn measured_accesses(py: Python<'_>, workload: &str, seed: u64) -> PyResult<u64> {
    watch::start();
    let r = py.detach(|| -> PyResult<Result<u64, String>> {
        let mut src = open_workload(workload, seed)?;
        Ok(workloads::populate::measured_accesses(
            &mut *src,
            Some(watch::interrupted),
        ))
    });
    watch::finish(r?)
}

/// merge_stats(parts) -> the statistics of a run cut in consecutive parts, each part's JSON
/// statistics its own counters (`Stats::since`; the first, the run's from its start):
/// `Stats::then` folded over them (`tlblab.intervals`).
#[pyfunction]
fn merge_stats(parts: Vec<String>) -> PyResult<String> {
    let mut merged: Option<tlblab_core::Stats> = None;
    for (i, part) in parts.iter().enumerate() {
        let s: tlblab_core::Stats = serde_json::from_str(part)
            .map_err(|e| err(format!("interval {i}: not the statistics of a run: {e}")))?;
        merged = Some(match merged {
            None => s,
            Some(m) => {
                if (&m.machine, &m.tlb_levels, &m.cache_levels)
                    != (&s.machine, &s.tlb_levels, &s.cache_levels)
                {
                    return Err(err(format!(
                        "interval {i}: statistics of machine '{}' cannot follow those of '{}'",
                        s.machine, m.machine
                    )));
                }
                m.then(&s)
            }
        });
    }
    let merged = merged.ok_or_else(|| err("merge_stats: no intervals to merge"))?;
    serde_json::to_string(&merged).map_err(|e| err(e.to_string()))
}

/// Where `--checkpoint-at` pauses the run.
#[derive(Clone, Copy)]
enum CheckpointAt {
    Roi,
    References(u64),
}

/// Each `--checkpoint-at` with its `--save-checkpoint` (as many of both), checked before
/// anything runs; the points must come in run order.
fn checkpoint_pauses(
    at: &[String],
    save: &[String],
    from: &str,
    warmup: u64,
) -> PyResult<Vec<CheckpointAt>> {
    if at.len() != save.len() && (at.len() > 1 || save.len() > 1) {
        return Err(err(format!(
            "--checkpoint-at: {} points and {} files to save them in: give one file per point",
            at.len(),
            save.len()
        )));
    }
    if at.len() <= 1 && save.len() <= 1 {
        let one = |v: &[String]| v.first().cloned().unwrap_or_default();
        return Ok(checkpoint_pause(&one(at), &one(save), from, warmup)?
            .into_iter()
            .collect());
    }
    let mut out = Vec::new();
    let mut last = 0u64;
    for (a, s) in at.iter().zip(save) {
        let p = checkpoint_pause(a, s, from, warmup)?.expect("both given");
        if let CheckpointAt::References(n) = p {
            if n < last {
                return Err(err(format!(
                    "--checkpoint-at: the points must come in run order: {n} after {last}"
                )));
            }
            last = n;
        } else if !out.is_empty() {
            return Err(err("--checkpoint-at: `roi` can only be the first point"));
        }
        out.push(p);
    }
    Ok(out)
}

/// `--checkpoint-at` with `--save-checkpoint` (both or neither), checked before anything runs.
fn checkpoint_pause(
    at: &str,
    save: &str,
    from: &str,
    warmup: u64,
) -> PyResult<Option<CheckpointAt>> {
    if !from.is_empty() && warmup > 0 {
        return Err(err(format!(
            "--warmup {warmup} with --from-checkpoint {from}: the restored run's warm-up is the checkpoint's (give --warmup to the run that saves it)"
        )));
    }
    match (at.is_empty(), save.is_empty()) {
        (true, true) => Ok(None),
        (false, true) => Err(err(format!(
            "--checkpoint-at {at}: give --save-checkpoint FILE too (where to save it)"
        ))),
        (true, false) => Err(err(format!(
            "--save-checkpoint {save}: give --checkpoint-at roi|N too (where in the run to save it)"
        ))),
        (false, false) if at == "roi" => Ok(Some(CheckpointAt::Roi)),
        (false, false) => tlblab_trace::workloads::parse_number(at)
            .map(|n| Some(CheckpointAt::References(n)))
            .ok_or_else(|| {
                err(format!(
                    "--checkpoint-at: expected `roi` or a count of references (e.g. 2M), found '{at}'"
                ))
            }),
    }
}

/// Goes on from the record a restored run's checkpoint had reached: the `records` records it
/// had consumed are skipped by the source's own means (`RecordSource::skip_records`: a trace
/// file seeks by its index, a generator advances past its accesses without writing them), not
/// read and dropped. A source's batch boundaries are part of how several hardware threads
/// interleave, so the run must go on at a boundary of the saved run's batches: every source
/// fills whole batches but at its end, so the whole batches are skipped and a last part batch
/// (the saved run read the workload to its end) is read as the saved run read it.
fn skip_records(
    source: &mut dyn tlblab_trace::RecordSource,
    records: u64,
    sys: &System,
    path: &std::path::Path,
) -> Result<(), String> {
    let batch = sys.read_ahead().batch;
    let whole = records - records % batch as u64;
    let mut skipped = source.skip_records(whole)?;
    if skipped < whole {
        return Err(format!(
            "{}: the checkpoint had read {records} records of the workload, which has only {skipped}",
            path.display()
        ));
    }
    let mut buf = Vec::with_capacity(batch);
    while skipped < records {
        buf.clear();
        let n = source.fill(&mut buf, batch)? as u64;
        if n == 0 {
            return Err(format!(
                "{}: the checkpoint had read {records} records of the workload, which has only {skipped}",
                path.display()
            ));
        }
        skipped += n;
    }
    if skipped != records {
        return Err(format!(
            "{}: the checkpoint had read {records} records of the workload; in its batches of {batch} this one gives {skipped} (not the workload it was saved from)",
            path.display()
        ));
    }
    Ok(())
}

/// page_counts(workload, seed=0) -> [(process, page number, loads, stores, fetches)]: the
/// accesses per 4 KiB page of a trace file or a built-in workload (seed 004 §IV's profile;
/// `tlblab_trace::profile`), sorted by process and page.
/// One page's row: (process, page number, loads, stores, fetches).
type PageRow = (u32, u64, u64, u64, u64);

#[pyfunction]
#[pyo3(signature = (workload, seed=0))]
fn page_counts(py: Python<'_>, workload: &str, seed: u64) -> PyResult<Vec<PageRow>> {
    py.detach(|| {
        let mut source = open_workload(workload, seed)?;
        let counts = tlblab_trace::profile::page_counts(source.as_mut()).map_err(err)?;
        let mut rows: Vec<_> = counts
            .into_iter()
            .map(|((p, page), [l, s, f])| (p, page, l, s, f))
            .collect();
        rows.sort_unstable();
        Ok(rows)
    })
}

/// trace_maps(path) -> the `/proc/PID/maps` snapshot a capture (`tlblab trace record`) kept in
/// a native trace's footer, or None (another format, an incomplete file, no snapshot).
#[pyfunction]
fn trace_maps(path: &str) -> PyResult<Option<String>> {
    let Ok(mut r) = tlblab_trace::format::TraceReader::open(std::path::Path::new(path)) else {
        return Ok(None);
    };
    if !r.is_complete() {
        return Ok(None);
    }
    r.load_index().map_err(|e| err(e.message))?;
    Ok(r.footer
        .as_ref()
        .and_then(|f| f.get("maps"))
        .and_then(|v| v.as_str())
        .map(String::from))
}

/// A workload: an existing trace file (native, Lackey text or ChampSim, detected), or a built-in
/// workload spec `name:key=value,...`.
pub(crate) fn open_workload(
    workload: &str,
    seed: u64,
) -> PyResult<Box<dyn tlblab_trace::RecordSource + Send>> {
    open_workload_with(workload, seed, Default::default())
}

/// `open_workload` with ChampSim import options (an error for any other workload but the
/// defaults).
pub(crate) fn open_workload_with(
    workload: &str,
    seed: u64,
    champsim: tlblab_trace::champsim::ChampSimOptions,
) -> PyResult<Box<dyn tlblab_trace::RecordSource + Send>> {
    let path = std::path::Path::new(workload);
    if path.is_file() {
        // `simulate` has no --from: a file it cannot recognise is converted first.
        let (src, _meta, _fmt) = tlblab_trace::convert::open_source_with(path, None, champsim)
            .map_err(|e| {
                err(e.replace(
                    "(use --from)",
                    "(convert it first: tlblab trace convert --from lackey|champsim FILE OUT.tlbt)",
                ))
            })?;
        return Ok(src);
    }
    // A workload's name never holds a dot or a slash (`NAME[:key=value,...]`), so a name that
    // does (`gups.champsimtrace.xz`, `./ls.tlbt`) was meant as a file.
    let name_part = workload.split(':').next().unwrap_or(workload);
    let looks_like_path = workload.contains('/') || name_part.contains('.');
    let not_a_file = |e: String| {
        if looks_like_path {
            err(format!("{workload}: no such trace file"))
        } else {
            err(e)
        }
    };
    if path.exists() {
        return Err(err(format!(
            "{workload}: not a regular file (expected a trace file or a workload spec)"
        )));
    }
    let (name, params) = workloads::parse_spec(workload).map_err(not_a_file)?;
    if champsim != Default::default() {
        return Err(err(format!(
            "{workload}: instruction counts and fetches off need a ChampSim trace file (a built-in workload counts references: use --warmup, --roi or --max-references)"
        )));
    }
    workloads::build(&name, &params, seed).map_err(not_a_file)
}

/// Builds a workload (a spec or a trace file) and drops it: its errors (unknown parameters,
/// impossible values) before anything runs. Nothing is generated.
#[pyfunction]
fn check_workload(workload: &str) -> PyResult<()> {
    open_workload(workload, 0).map(|_| ())
}

/// Replays allocator requests through the simulator's colored placement (the port of
/// libtlblab's coloring allocator) with `color_trace`'s request language: `malloc SIZE COLOR`,
/// `aligned ALIGN SIZE COLOR`, `free INDEX`, `realloc INDEX SIZE`. Returns the lines
/// `INDEX OFFSET` (or `INDEX -`) that `runtime/bench/color_trace` prints for the same input.
#[pyfunction]
#[pyo3(signature = (sets, ways, reserved, periods, requests, slot_shift=12))]
fn colored_placement(
    sets: u64,
    ways: u64,
    reserved: u64,
    periods: u64,
    requests: Vec<String>,
    slot_shift: u32,
) -> PyResult<Vec<String>> {
    let mut a = colored_arena(sets, ways, reserved, periods, slot_shift)?;
    let mut ptrs: Vec<Option<u64>> = Vec::new();
    let mut out = Vec::new();
    for (n, line) in requests.iter().enumerate() {
        let t: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> PyResult<u64> {
            t.get(i).and_then(|x| x.parse().ok()).ok_or_else(|| {
                err(format!(
                    "request {}: expected a number at field {}, found {:?}",
                    n + 1,
                    i + 1,
                    line
                ))
            })
        };
        let (idx, p) = match t.first().copied() {
            Some("malloc") => {
                ptrs.push(a.malloc(num(1)?, num(2)?));
                (ptrs.len() - 1, *ptrs.last().unwrap())
            }
            Some("aligned") => {
                ptrs.push(a.aligned(num(1)?, num(2)?, num(3)?));
                (ptrs.len() - 1, *ptrs.last().unwrap())
            }
            Some("free") => {
                let i = num(1)? as usize;
                if let Some(Some(p)) = ptrs.get(i) {
                    a.free(*p);
                    ptrs[i] = None;
                }
                continue;
            }
            Some("realloc") => {
                let i = num(1)? as usize;
                let Some(Some(p)) = ptrs.get(i).copied() else {
                    return Err(err(format!(
                        "request {}: realloc of index {i}, which holds no block",
                        n + 1
                    )));
                };
                let q = a.realloc(p, num(2)?);
                if q.is_some() {
                    ptrs[i] = q;
                }
                (i, q)
            }
            _ => {
                return Err(err(format!(
                    "request {}: expected malloc, aligned, free or realloc, found {:?}",
                    n + 1,
                    line
                )))
            }
        };
        out.push(match p {
            Some(p) => format!("{idx} {p}"),
            None => format!("{idx} -"),
        });
    }
    Ok(out)
}

/// Runs a periodic task set under preemptive rate-monotonic scheduling on hardware thread 0
/// (`tlblab_core::sched::rm`); `tasks_json` is a list of {name, phase, period, deadline, pages,
/// passes}. Returns the stats as JSON (per-job statistics in `jobs`).
#[pyfunction]
#[pyo3(signature = (machine, tasks_json, jobs, seed=0, machine_format="auto", os_json="{}"))]
fn run_periodic(
    py: Python<'_>,
    machine: &str,
    tasks_json: &str,
    jobs: u32,
    seed: u64,
    machine_format: &str,
    os_json: &str,
) -> PyResult<String> {
    let cfg = machine_from(machine, machine_format)?;
    let tasks: Vec<tlblab_core::sched::rm::PeriodicTask> =
        serde_json::from_str(tasks_json).map_err(|e| err(format!("tasks: {e}")))?;
    let os: tlblab_core::os::OsConfig = options_from_json("os options", os_json)?;
    py.detach(|| {
        let mut sys = System::new(
            cfg,
            RunOptions {
                seed,
                os,
                ..RunOptions::default()
            },
        )
        .map_err(|e| err(e.0))?;
        tlblab_core::sched::rm::run_rate_monotonic(&mut sys, &tasks, jobs, 0)
            .map_err(|e| err(e.0))?;
        serde_json::to_string(&sys.stats()).map_err(|e| err(e.to_string()))
    })
}

/// The simulator's colored allocator (`memory/colored.rs`) on the given geometry.
fn colored_arena(
    sets: u64,
    ways: u64,
    reserved: u64,
    periods: u64,
    slot_shift: u32,
) -> PyResult<tlblab_core::memory::colored::ColoredArena> {
    use tlblab_core::memory::colored::{ColorGeometry, ColoredArena};
    ColoredArena::new(ColorGeometry {
        sets,
        ways,
        reserved,
        periods,
        slot_shift,
    })
    .map_err(err)
}

/// Page-sized allocations of `color` from a fresh colored arena: the offsets (from the arena
/// base) of `count` allocations of `size` bytes, as `tlb_malloc` would place them.
#[pyfunction]
#[pyo3(signature = (sets, ways, reserved, periods, color, count, size, slot_shift=12))]
#[allow(clippy::too_many_arguments)]
fn colored_offsets(
    sets: u64,
    ways: u64,
    reserved: u64,
    periods: u64,
    color: u64,
    count: u64,
    size: u64,
    slot_shift: u32,
) -> PyResult<Vec<u64>> {
    let mut a = colored_arena(sets, ways, reserved, periods, slot_shift)?;
    (0..count)
        .map(|i| {
            a.malloc(size, color).ok_or_else(|| {
                err(format!(
                    "color {color} holds only {i} allocations of {size} bytes"
                ))
            })
        })
        .collect()
}

/// graph_cache(directory, tag="") -> sets where this process caches the graph workloads'
/// graphs (`tlblab_trace::workloads::graph_cache`), the tag their files carry; None turns the
/// cache off. `tlblab.intervals` sets it for its pass and each interval.
#[pyfunction]
#[pyo3(signature = (directory, tag=""))]
fn graph_cache(directory: Option<String>, tag: &str) {
    tlblab_trace::workloads::graph_cache::set_directory(
        directory.map(|d| (std::path::PathBuf::from(d), tag.to_string())),
    );
}

/// graph_cache_stats() -> JSON: what this process's graph cache did so far (graphs loaded,
/// built, written, kept in the process, with their seconds; the defective files met).
#[pyfunction]
fn graph_cache_stats() -> PyResult<String> {
    serde_json::to_string(&tlblab_trace::workloads::graph_cache::stats())
        .map_err(|e| err(e.to_string()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions! { m:
        graph_cache, graph_cache_stats, run_periodic, colored_offsets, colored_placement,
        simulate, merge_stats, workload_length, measured_accesses, check_workload, page_counts, trace_maps
    }
}
