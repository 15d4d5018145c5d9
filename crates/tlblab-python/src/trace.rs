//! Python bindings for tlblab-trace: thin wrappers that run the Rust code without the GIL and
//! return JSON text (the hand-written `tlblab.trace` module turns it into Python objects).
//! Bad input comes back as `ValueError` with the complete one-line message.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use tlblab_trace::convert::{self, Format};
use tlblab_trace::format::writer::write_source;
use tlblab_trace::format::{TraceReader, WriterOptions};
use tlblab_trace::source::RecordSource;
use tlblab_trace::{capture, info, workloads};

use crate::watch;

fn fmt_opt(s: Option<String>) -> PyResult<Option<Format>> {
    s.map(|f| Format::parse(&f))
        .transpose()
        .map_err(PyValueError::new_err)
}

fn verr(e: String) -> PyErr {
    PyValueError::new_err(e)
}

/// info(path, fmt=None) -> JSON text describing the trace.
#[pyfunction]
#[pyo3(signature = (path, fmt=None))]
fn trace_info(py: Python<'_>, path: String, fmt: Option<String>) -> PyResult<String> {
    let f = fmt_opt(fmt)?;
    py.detach(move || info::info(&PathBuf::from(path), f))
        .map(|v| v.to_string())
        .map_err(verr)
}

/// convert(input, output, from_fmt=None, to_fmt=None, skip=0, limit=None) -> JSON report.
#[pyfunction]
#[pyo3(signature = (input, output, from_fmt=None, to_fmt=None, skip=0, limit=None))]
fn trace_convert(
    py: Python<'_>,
    input: String,
    output: String,
    from_fmt: Option<String>,
    to_fmt: Option<String>,
    skip: u64,
    limit: Option<u64>,
) -> PyResult<String> {
    let (from, to) = (fmt_opt(from_fmt)?, fmt_opt(to_fmt)?);
    let t0 = std::time::Instant::now();
    watch::start();
    let r = watch::finish(py.detach(move || {
        convert::convert_with(
            &PathBuf::from(&input),
            from,
            &PathBuf::from(&output),
            to,
            skip,
            limit,
            |s| Box::new(watch::Watched::new(s, None)),
        )
    }))?;
    Ok(json!({
        "records_in": r.records_in,
        "records_out": r.records_out,
        "events_not_representable": r.skipped_events,
        "seconds": t0.elapsed().as_secs_f64(),
        "summary": r.summary.to_json(),
    })
    .to_string())
}

/// head(path, n, skip=0, fmt=None) -> list of text lines, one per record.
#[pyfunction]
#[pyo3(signature = (path, n, skip=0, fmt=None))]
fn trace_head(
    py: Python<'_>,
    path: String,
    n: u64,
    skip: u64,
    fmt: Option<String>,
) -> PyResult<Vec<String>> {
    let f = fmt_opt(fmt)?;
    watch::start();
    watch::finish(py.detach(move || -> Result<Vec<String>, String> {
        let p = PathBuf::from(&path);
        let (mut src, _, format) = convert::open_source(&p, f)?;
        let regions = src.region_names();
        let mut skipped = 0;
        if format == Format::Native && skip > 0 {
            let mut r = TraceReader::open(&p).map_err(|e| e.message)?;
            if r.is_complete() {
                r.seek_record(skip).map_err(|e| e.message)?;
                src = Box::new(r);
                skipped = skip;
            }
        }
        // `--skip` past a non-native file reads every record before it: stoppable.
        let mut src = watch::Watched::new(src, None);
        let records = records_from(&mut src, skip - skipped, n)?;
        Ok(records
            .iter()
            .map(|(i, r)| format!("{:>10} {}", skipped + i, info::record_line(r, &regions)))
            .collect())
    }))
}

/// Up to `n` records of `src` from its `from`th on, each with its position in `src`.
fn records_from(
    src: &mut dyn RecordSource,
    from: u64,
    n: u64,
) -> Result<Vec<(u64, tlblab_trace::Record)>, String> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut idx = 0u64;
    while (out.len() as u64) < n {
        buf.clear();
        if src.fill(&mut buf, 4096)? == 0 {
            break;
        }
        for r in &buf {
            if idx >= from && (out.len() as u64) < n {
                out.push((idx, *r));
            }
            idx += 1;
        }
    }
    Ok(out)
}

/// records(path, n, skip=0) -> JSON list of up to n records (for the Python API).
#[pyfunction]
#[pyo3(signature = (path, n, skip=0))]
fn trace_records(py: Python<'_>, path: String, n: u64, skip: u64) -> PyResult<String> {
    py.detach(move || -> Result<String, String> {
        let (mut src, _, _) = convert::open_source(&PathBuf::from(&path), None)?;
        let out: Vec<_> = records_from(&mut *src, skip, n)?
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        Ok(serde_json::to_string(&out).unwrap())
    })
    .map_err(verr)
}

/// trace_data_pages(path) -> JSON {"warmup": {thread: [page, ...]}, "periodic": {thread: [...]},
/// "warmup_order": {thread: [page, ...]}}: the 4 KiB pages each thread's loads and stores touch up
/// to the end of its warm-up job (its `JobEnd` of job 0) and after it, an access that crosses a
/// page counted in both of its pages; `warmup_order` holds the pages each thread touches before
/// the task set's first periodic job starts (its warm-up job and what it runs after it, until
/// its first sleep ends) in the order of their last touch (oldest first), which is all an LRU set
/// keeps of a run of one thread's accesses. What the periodic jobs of a task set (and the code between them) hold in a data TLB,
/// and what its warm-up put there first: `tlblab.isolation`'s pages of a replayed real task set
/// (seed 003).
#[pyfunction]
fn trace_data_pages(py: Python<'_>, path: String) -> PyResult<String> {
    use std::collections::BTreeSet;
    use tlblab_trace::{Event, Record};
    py.detach(move || -> Result<String, String> {
        let (mut src, _, _) = convert::open_source(&PathBuf::from(&path), None)?;
        let mut warm_done: BTreeSet<u32> = BTreeSet::new();
        let mut warmup: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
        let mut periodic: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
        // thread -> page -> sequence number of its last touch in the warm-up
        let mut last: BTreeMap<u32, BTreeMap<u64, u64>> = BTreeMap::new();
        let mut seq = 0u64;
        let mut jobs_started = false;
        tlblab_trace::source::for_each_record(&mut *src, 4096, |r| match *r {
            Record::Event(Event::JobEnd { task, job: 0 }) => {
                warm_done.insert(task);
            }
            Record::Event(Event::JobStart { job, .. }) if job >= 1 => jobs_started = true,
            Record::Access(a) if !a.kind.is_instr() => {
                let into = if warm_done.contains(&a.thread.0) {
                    &mut periodic
                } else {
                    &mut warmup
                };
                let first = a.vaddr.0 >> 12;
                let last_page = (a.vaddr.0 + u64::from(a.size.max(1)) - 1) >> 12;
                let set = into.entry(a.thread.0).or_default();
                for p in first..=last_page {
                    set.insert(p << 12);
                    if !jobs_started {
                        seq += 1;
                        last.entry(a.thread.0).or_default().insert(p << 12, seq);
                    }
                }
            }
            _ => {}
        })?;
        let order: BTreeMap<u32, Vec<u64>> = last
            .into_iter()
            .map(|(t, pages)| {
                let mut v: Vec<(u64, u64)> = pages.into_iter().map(|(p, s)| (s, p)).collect();
                v.sort_unstable();
                (t, v.into_iter().map(|(_, p)| p).collect())
            })
            .collect();
        Ok(json!({"warmup": warmup, "periodic": periodic, "warmup_order": order}).to_string())
    })
    .map_err(verr)
}

/// record(argv, output, skip=0, limit=None, progress=False, valgrind="valgrind", stdin=None,
/// stdout=None, tool="tlblab", tool_dir=None, roi_only=False, skip_instructions=0,
/// max_instructions=None, trace_syscalls=False, cwd=None, env=None, no_aslr=False,
/// own_pid_namespace=False, dependence=False) -> JSON report (with `trace_syscalls`, Lackey's `syscalls`:
/// [[memory lines before, SYSCALL line], ...] and `memory_lines`).
#[pyfunction]
#[pyo3(signature = (argv, output, skip=0, limit=None, progress=false, valgrind="valgrind".to_string(), stdin=None, stdout=None,
                    tool="tlblab".to_string(), tool_dir=None, roi_only=false, skip_instructions=0, max_instructions=None,
                    trace_syscalls=false, cwd=None, env=None, no_aslr=false, own_pid_namespace=false, dependence=false))]
#[allow(clippy::too_many_arguments)] // one per Python keyword argument
fn trace_record(
    py: Python<'_>,
    argv: Vec<String>,
    output: String,
    skip: u64,
    limit: Option<u64>,
    progress: bool,
    valgrind: String,
    stdin: Option<String>,
    stdout: Option<String>,
    tool: String,
    tool_dir: Option<String>,
    roi_only: bool,
    skip_instructions: u64,
    max_instructions: Option<u64>,
    trace_syscalls: bool,
    cwd: Option<String>,
    env: Option<Vec<(String, String)>>,
    no_aslr: bool,
    own_pid_namespace: bool,
    dependence: bool,
) -> PyResult<String> {
    let tool = match tool.as_str() {
        "tlblab" => capture::CaptureTool::Tlblab,
        "lackey" => capture::CaptureTool::Lackey,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown capture tool '{other}': expected tlblab or lackey"
            )))
        }
    };
    let opts = capture::CaptureOptions {
        valgrind,
        tool,
        tool_dir: tool_dir.map(PathBuf::from),
        roi_only,
        skip_instructions,
        max_instructions,
        dependence,
        skip,
        limit,
        progress,
        stdin: stdin.map(PathBuf::from),
        stdout: stdout.map(PathBuf::from),
        stop: Some(watch::interrupted),
        trace_syscalls,
        cwd: cwd.map(PathBuf::from),
        env,
        no_aslr,
        own_pid_namespace,
    };
    watch::start();
    let r =
        watch::finish(py.detach(move || capture::record(&argv, &PathBuf::from(output), &opts)))?;
    Ok(json!({
        "tool": tool.name(),
        "references_seen": r.references_seen,
        "lackey_lines": r.lackey_lines,
        "stream_bytes": r.stream_bytes,
        "seconds": r.seconds,
        "exit_status": r.exit_status,
        "killed_at_limit": r.killed_at_limit,
        "stopped_at_max_instructions": r.stopped_at_max_instructions,
        "summary": r.summary.to_json(),
        "syscalls": r.syscalls,
        "memory_lines": r.memory_lines,
    })
    .to_string())
}

/// trace_record_qemu(argv, output, qemu, plugin, cpu, sysroot, limit, stdout, files, env,
/// own_pid_namespace) -> JSON
/// report: runs a guest binary under QEMU's user mode with tlblab's plugin and writes its
/// references to `output` (`tlblab_trace::capture_qemu`: the same bytes on every host and in every
/// folder); `env`, the guest's whole environment as `(name, value)` pairs.
#[pyfunction]
#[pyo3(signature = (argv, output, qemu, plugin, cpu, sysroot, limit, stdout, files=Vec::new(), env=Vec::new(),
                    own_pid_namespace=false))]
#[allow(clippy::too_many_arguments)]
fn trace_record_qemu(
    py: Python<'_>,
    argv: Vec<String>,
    output: String,
    qemu: String,
    plugin: String,
    cpu: String,
    sysroot: Option<String>,
    limit: Option<u64>,
    stdout: Option<String>,
    files: Vec<String>,
    env: Vec<(String, String)>,
    own_pid_namespace: bool,
) -> PyResult<String> {
    use tlblab_trace::capture_qemu::{record_qemu, QemuOptions};
    let opts = QemuOptions {
        qemu,
        plugin: PathBuf::from(plugin),
        cpu,
        sysroot: sysroot.map(PathBuf::from),
        files: files.into_iter().map(PathBuf::from).collect(),
        env,
        limit,
        stdout: stdout.map(PathBuf::from),
        stop: Some(watch::interrupted),
        own_pid_namespace,
    };
    watch::start();
    let r = watch::finish(py.detach(move || record_qemu(&argv, &PathBuf::from(output), &opts)))?;
    Ok(json!({
        "tool": "qemu",
        "references_seen": r.references_seen,
        "exit_status": r.exit_status,
        "killed_at_limit": r.killed_at_limit,
        "syscalls": r.syscalls,
        "summary": r.summary.to_json(),
    })
    .to_string())
}

/// pid_namespace_wrapper() -> (words, None) or ([], why): the command words that run a program
/// as pid 1 of a PID namespace of its own (`tlblab_trace::pidns`), for a capture's second run
/// made outside the capture (seed 004's `syscalls_of`).
#[pyfunction]
fn pid_namespace_wrapper() -> (Vec<String>, Option<String>) {
    match tlblab_trace::pidns::wrapper() {
        Ok(words) => (words.to_vec(), None),
        Err(why) => (Vec::new(), Some(why.to_string())),
    }
}

/// trace_workload_catalog() -> JSON list of the built-in workloads (with parameter meanings).
#[pyfunction]
fn trace_workload_catalog() -> String {
    let v: Vec<_> = workloads::catalog()
        .iter()
        .map(|w| {
            json!({
                "name": w.name, "summary": w.summary, "source": w.source, "in_default_set": w.in_default_set,
                "params": w.params.iter().map(|(n, d, m)| json!({"name": n, "default": d, "meaning": m})).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::to_string(&v).unwrap()
}

/// generate(name, params, seed, output) -> JSON summary: writes a built-in workload as a trace.
#[pyfunction]
#[pyo3(signature = (name, params, seed, output))]
fn workload_generate(
    py: Python<'_>,
    name: String,
    params: BTreeMap<String, u64>,
    seed: u64,
    output: String,
) -> PyResult<String> {
    watch::start();
    watch::finish(py.detach(move || -> Result<String, String> {
        let mut src = watch::Watched::new(workloads::build(&name, &params, seed)?, None);
        let info = workloads::catalog().into_iter().find(|w| w.name == name).unwrap();
        let mut all = BTreeMap::new();
        for (p, d, _) in info.params {
            all.insert(p.to_string(), params.get(*p).copied().unwrap_or(*d));
        }
        let meta = json!({
            "program": format!("workload:{name}"),
            "workload": {"name": name, "params": all, "seed": seed, "source": info.source, "summary": info.summary},
            "page_size": 4096,
            "regions": src.region_names(),
        });
        // Interrupted, the writer is dropped unfinished and removes its temporary file.
        let s = write_source(&mut src, &PathBuf::from(output), &meta, WriterOptions::default()).map_err(|e| e.message)?;
        Ok(s.to_json().to_string())
    }))
}

/// Where PAPI's reads go in a replay: glibc's data page, the EventSet map's page, per task (its
/// arena, the buffers before PAPI's objects) (`rt_replay::papi_reads`).
type PapiLayout = (u64, u64, Vec<(u64, u64)>);

/// rt_replay_write(capture, timing, jobs, relocations, hyperperiods, output, vdso=None) -> JSON
/// summary: writes the rate-monotonic replay of a capture's jobs (seed 003;
/// `workloads::rt_replay`) as a trace. `timing`: per task (phase, period, execution) in µs;
/// `relocations`: (lo, hi, delta); `vdso`: the vDSO's address in the replayed layout;
/// `tick_hz`: timer ticks a second while a task runs (0: none); `papi`: PAPI's reads around every
/// job, (glibc's data page, the EventSet map's page, per task (its arena, buffers before PAPI's
/// objects)) (`rt_replay::papi_reads`; None: none).
#[pyfunction]
#[pyo3(signature = (capture, timing, jobs, relocations, hyperperiods, output, vdso=None, tick_hz=0, papi=None))]
#[allow(clippy::too_many_arguments)] // one per Python argument
fn rt_replay_write(
    py: Python<'_>,
    capture: String,
    timing: Vec<(u64, u64, u64)>,
    jobs: usize,
    relocations: Vec<(u64, u64, i64)>,
    hyperperiods: u64,
    output: String,
    vdso: Option<u64>,
    tick_hz: u64,
    papi: Option<PapiLayout>,
) -> PyResult<String> {
    use tlblab_trace::workloads::{gen::Chunked, rt_replay};
    watch::start();
    watch::finish(py.detach(move || -> Result<String, String> {
        let rel: Vec<rt_replay::Relocation> = relocations
            .iter()
            .map(|&(lo, hi, delta)| rt_replay::Relocation { lo, hi, delta })
            .collect();
        let replay = rt_replay::from_capture(
            std::path::Path::new(&capture),
            &timing,
            jobs,
            &rel,
            hyperperiods,
            vdso,
            tick_hz,
        )?;
        let reads = papi
            .as_ref()
            .map(|(libc, map, arenas)| rt_replay::papi_reads(*libc, *map, arenas))
            .unwrap_or_default();
        let replay = replay.with_papi(reads)?;
        let mut src = watch::Watched::new(Chunked::new(replay), None);
        let mut meta = json!({
            "program": "workload:rt_replay",
            "workload": {"name": "rt_replay", "capture": capture, "timing_us": timing,
                         "jobs": jobs, "hyperperiods": hyperperiods, "vdso": vdso},
            "page_size": 4096,
            "regions": [],
        });
        if tick_hz > 0 {
            meta["workload"]["tick_hz"] = json!(tick_hz);
        }
        if let Some(p) = &papi {
            meta["workload"]["papi"] = json!(p);
        }
        let s = write_source(
            &mut src,
            &PathBuf::from(output),
            &meta,
            WriterOptions::default(),
        )
        .map_err(|e| e.message)?;
        Ok(s.to_json().to_string())
    }))
}

/// One program from Python: capture path, relocations (lo, hi, delta), system calls (position,
/// "munmap" | "mprotect", start, length, prot).
type PyProgram = (
    String,
    Vec<(u64, u64, i64)>,
    Vec<(u64, String, u64, u64, u8)>,
);
/// One core's plan from Python: (programs, repeat).
type PyCorePlan = (Vec<PyProgram>, bool);

/// corun_write(plans, chunk, address_bits, output, tick=0, offsets=[]) -> JSON summary: writes captured
/// programs run side by side on several cores as one trace (`workloads::corun`; seed 004 §V.1).
/// `plans[c]` = (programs, repeat), each program (capture path, relocations (lo, hi, delta),
/// system calls (position, "munmap" | "mprotect" | "syscall", start, length, prot)); `tick`,
/// the references of a core between its timer ticks (0: none; `Corun::with_tick`); `offsets[c]`,
/// the references of core c's first program skipped at its start (`Corun::with_offsets`).
#[pyfunction]
#[pyo3(signature = (plans, chunk, address_bits, output, tick=0, offsets=Vec::new()))]
fn corun_write(
    py: Python<'_>,
    plans: Vec<PyCorePlan>,
    chunk: usize,
    address_bits: u32,
    output: String,
    tick: u64,
    offsets: Vec<u64>,
) -> PyResult<String> {
    use tlblab_trace::workloads::corun::{CorePlan, Corun, Program, Syscall, SyscallKind};
    use tlblab_trace::workloads::rt_replay::Relocation;
    watch::start();
    watch::finish(py.detach(move || -> Result<String, String> {
        let described: Vec<_> = plans
            .iter()
            .map(|(progs, repeat)| {
                json!({"programs": progs.iter().map(|(p, r, c)| json!({"capture": p, "relocations": r, "syscalls": c.len()}))
                    .collect::<Vec<_>>(), "repeat": repeat})
            })
            .collect();
        let mut out_plans: Vec<CorePlan> = Vec::with_capacity(plans.len());
        for (progs, repeat) in plans {
            let mut programs = Vec::with_capacity(progs.len());
            for (p, rel, calls) in progs {
                let syscalls = calls
                    .into_iter()
                    .map(|(at, kind, start, len, prot)| {
                        let kind = match kind.as_str() {
                            "munmap" => SyscallKind::Munmap,
                            "mprotect" => SyscallKind::Mprotect { prot },
                            "syscall" => SyscallKind::Other,
                            k => return Err(format!("corun: {p}: system call '{k}' (expected munmap, mprotect or syscall)")),
                        };
                        Ok(Syscall { at, kind, start, len })
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                programs.push(Program {
                    capture: PathBuf::from(p),
                    relocations: rel
                        .into_iter()
                        .map(|(lo, hi, delta)| Relocation { lo, hi, delta })
                        .collect(),
                    syscalls,
                });
            }
            out_plans.push(CorePlan { programs, repeat });
        }
        let plans = out_plans;
        let corun = Corun::new(plans, chunk, address_bits)?
            .with_tick(tick)
            .with_offsets(&offsets);
        let mut src = watch::Watched::new(corun, None);
        let meta = json!({
            "program": "workload:corun",
            "workload": {"name": "corun", "cores": described, "chunk": chunk, "tick": tick, "offsets": offsets},
            "page_size": 4096,
            "regions": [],
        });
        let s = write_source(&mut src, &PathBuf::from(output), &meta, WriterOptions::default())
            .map_err(|e| e.message)?;
        Ok(s.to_json().to_string())
    }))
}

/// decode_bench(path, repeats) -> JSON: records and seconds per full sequential read, one thread,
/// records materialized into a reused batch buffer as the engine receives them.
#[pyfunction]
fn trace_decode_bench(py: Python<'_>, path: String, repeats: u32) -> PyResult<String> {
    py.detach(move || -> Result<String, String> {
        let mut times = Vec::new();
        let mut cpu = Vec::new();
        let mut records = 0u64;
        for _ in 0..repeats.max(1) {
            let mut r = TraceReader::open(&PathBuf::from(&path)).map_err(|e| e.message)?;
            let mut buf = Vec::with_capacity(4096);
            let t0 = std::time::Instant::now();
            let c0 = tlblab_trace::clock::thread_cpu_seconds();
            let mut n = 0u64;
            loop {
                buf.clear();
                let k = r.fill(&mut buf, 4096)?;
                if k == 0 {
                    break;
                }
                n += k as u64;
            }
            cpu.push(tlblab_trace::clock::thread_cpu_seconds() - c0);
            times.push(t0.elapsed().as_secs_f64());
            records = n;
        }
        Ok(json!({"records": records, "seconds": times, "cpu_seconds": cpu}).to_string())
    })
    .map_err(verr)
}

/// parse_workload_spec(spec) -> (name, {param: value}): the one parser of workload specs
/// `NAME[:key=value,...]` (values with `0x`, `k`/`M`/`G`), for every command that takes one.
#[pyfunction]
fn parse_workload_spec(spec: &str) -> PyResult<(String, BTreeMap<String, u64>)> {
    workloads::parse_spec(spec).map_err(verr)
}

/// parse_number(text) -> int or None: a non-negative integer as workload specs write them
/// (`4096`, `0x1000`, `64k`, `2M`, `1G`), so command-line counts read the same way.
#[pyfunction]
fn parse_number(text: &str) -> Option<u64> {
    workloads::parse_number(text.trim())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions! { m:
        parse_workload_spec, parse_number, trace_info, trace_convert, trace_head, trace_records,
        trace_data_pages, trace_record, trace_record_qemu, trace_workload_catalog, workload_generate,
        trace_decode_bench, rt_replay_write, corun_write, pid_namespace_wrapper
    }
}
