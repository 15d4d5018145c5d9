//! Python bindings for the engine's benchmarks: the engine alone over records in memory
//! (`bench_engine`), and the floors beside it (`floor_check`, `bench_floor`; tlblab-floor).
//! Wrappers only, as `sim.rs`.

use pyo3::prelude::*;
use std::time::Instant;
use tlblab_core::{RunOptions, System};

use crate::machine::machine_from;
use crate::sim::{err, open_workload};

/// Times the engine alone: generates the workload (a spec or a trace file) into memory first,
/// then simulates it.
/// `mode`: "tlb_only" (TLB levels alone), "no_caches" (TLB levels and page walks) or "full".
/// `feed`: "slice" runs `System::run_slice` over the whole vector in place (every record read
/// from host memory once: at 32 bytes a record, a stream of the host's memory bandwidth);
/// "source" runs `System::run` over a source that replays the vector in batches, as a trace
/// decoder or a generator delivers them (each batch copied into the run's buffer, then
/// simulated from the host's caches), and leaves out the time the replay spends copying
/// (`ReplaySource`): the simulation's own time when records arrive as they do from a trace
/// file. Both simulate the same thing: `System::run` and `run_slice` differ only in where a
/// batch lives.
/// Returns (references simulated, wall seconds, thread CPU seconds spent simulating).
#[pyfunction]
#[pyo3(signature = (machine, workload, mode, seed=0, feed="slice"))]
fn bench_engine(
    py: Python<'_>,
    machine: &str,
    workload: &str,
    mode: &str,
    seed: u64,
    feed: &str,
) -> PyResult<(u64, f64, f64)> {
    let cfg = machine_from(machine, "auto")?;
    let opts = match mode {
        "tlb_only" => RunOptions::tlb_only(seed),
        "no_caches" => RunOptions::no_caches(seed),
        "full" => RunOptions {
            seed,
            ..RunOptions::default()
        },
        _ => {
            return Err(err(format!(
                "bench mode: expected tlb_only, no_caches or full, found {mode:?}"
            )))
        }
    };
    if !matches!(feed, "slice" | "source") {
        return Err(err(format!(
            "bench feed: expected slice or source, found {feed:?}"
        )));
    }
    py.detach(|| {
        let records = workload_records(workload, seed)?;
        let mut sys = System::new(cfg, opts).map_err(|e| err(e.0))?;
        let mut replay = ReplaySource::new(&records);
        let (t0, c0) = (Instant::now(), tlblab_trace::clock::thread_cpu_seconds());
        if feed == "slice" {
            sys.run_slice(&records).map_err(|e| err(e.0))?;
        } else {
            sys.run(&mut replay).map_err(|e| err(e.0))?;
        }
        let dt = t0.elapsed().as_secs_f64() - replay.copy_wall;
        let cpu = tlblab_trace::clock::thread_cpu_seconds() - c0 - replay.copy_cpu;
        Ok((sys.stats().total.references, dt, cpu))
    })
}

/// Records in memory delivered in batches, as a trace decoder delivers them, with the time
/// its copies take (wall and thread CPU seconds), for `bench_engine` to leave out.
pub(crate) struct ReplaySource<'a> {
    records: &'a [tlblab_trace::record::Record],
    pos: usize,
    pub(crate) copy_wall: f64,
    pub(crate) copy_cpu: f64,
}

impl<'a> ReplaySource<'a> {
    pub(crate) fn new(records: &'a [tlblab_trace::record::Record]) -> Self {
        ReplaySource {
            records,
            pos: 0,
            copy_wall: 0.0,
            copy_cpu: 0.0,
        }
    }
}

impl tlblab_trace::source::RecordSource for ReplaySource<'_> {
    fn fill(
        &mut self,
        out: &mut Vec<tlblab_trace::record::Record>,
        max: usize,
    ) -> Result<usize, String> {
        let (t0, c0) = (Instant::now(), tlblab_trace::clock::thread_cpu_seconds());
        let end = (self.pos + max).min(self.records.len());
        out.extend_from_slice(&self.records[self.pos..end]);
        let n = end - self.pos;
        self.pos = end;
        self.copy_wall += t0.elapsed().as_secs_f64();
        self.copy_cpu += tlblab_trace::clock::thread_cpu_seconds() - c0;
        Ok(n)
    }
}

/// The records of a workload (a spec or a trace file), in memory, in a buffer the kernel is asked
/// to back with 2 MiB pages (`on_huge_pages`).
pub(crate) fn workload_records(
    workload: &str,
    seed: u64,
) -> PyResult<Vec<tlblab_trace::record::Record>> {
    let mut source = open_workload(workload, seed)?;
    let mut records = Vec::new();
    while source.fill(&mut records, 1 << 16).map_err(err)? > 0 {}
    Ok(on_huge_pages(records))
}

/// `records` copied into a buffer of their own whose whole pages are advised `MADV_HUGEPAGE`
/// before the copy first touches them, so that Linux's transparent huge pages (`always` or
/// `madvise` mode) back its aligned 2 MiB pieces. Why: the `slice` feed and the read bound read
/// the records in place, 32 bytes each, so on 4 KiB pages the host walks its page table once
/// every 128 records; on the Intel Xeon guest of 2026-12-01 those walks (two-dimensional under
/// its hypervisor) held TLB-only `lackey_ls` at 238 M refs/s and `lackey_gzip` at 294, and on
/// 2 MiB pages the same engine ran 318 and 449 (docs/lab/engine-performance.md). The buffer's
/// share that the kernel did back so is `huge_share` (it may give none: THP `never`, or no free
/// 2 MiB frames). Small buffers are returned as they are.
fn on_huge_pages(records: Vec<tlblab_trace::record::Record>) -> Vec<tlblab_trace::record::Record> {
    const HUGE: usize = 2 << 20;
    let bytes = std::mem::size_of_val(records.as_slice());
    if bytes < 2 * HUGE {
        return records;
    }
    let mut out: Vec<tlblab_trace::record::Record> = Vec::with_capacity(records.len());
    let start = (out.as_ptr() as usize).next_multiple_of(4096);
    let end = (out.as_ptr() as usize + bytes) & !4095;
    if end > start {
        // SAFETY: advice on whole pages of this vector's own allocation, none yet touched; it
        // changes how the kernel backs them, never their contents, and it cannot fault.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
    out.extend_from_slice(&records);
    out
}

/// The share of `records`' bytes that lie in the 2 MiB pages backing their mapping
/// (`AnonHugePages` of /proc/self/smaps over the buffer's size; 0 where it cannot be read). The
/// mapping is read at the buffer's middle: the advice splits the allocation's mapping at the
/// first whole page, so the buffer's first bytes lie in a small mapping of their own.
fn huge_share(records: &[tlblab_trace::record::Record]) -> f64 {
    let bytes = std::mem::size_of_val(records);
    if bytes == 0 {
        return 0.0;
    }
    let middle = records.as_ptr() as usize + bytes / 2;
    let huge = tlblab_probe::measure::extras::anon_huge_bytes(middle).unwrap_or(0);
    (huge as f64 / bytes as f64).min(1.0)
}

/// Checks the floor of `mode` ("tlb_only" or "full", tlblab-floor) against the engine on the
/// zen3 preset over `workload`: its counts as a dict if they are the engine's, else an error
/// (a workload the floor cannot take is an error too, naming its first such record).
#[pyfunction]
#[pyo3(signature = (workload, mode, seed=0))]
fn floor_check(py: Python<'_>, workload: &str, mode: &str, seed: u64) -> PyResult<Py<PyAny>> {
    let mode = tlblab_floor::Mode::parse(mode).map_err(err)?;
    let c = py.detach(|| {
        let records = workload_records(workload, seed)?;
        tlblab_floor::check(mode, &records).map_err(err)
    })?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("tlb_misses", c.tlb_misses.to_vec())?;
    d.set_item("walks", c.walks)?;
    d.set_item("pwc_hits", c.pwc_hits)?;
    d.set_item("cache_misses", c.cache_misses.to_vec())?;
    d.set_item("cycles", c.cycles)?;
    Ok(d.into_any().unbind())
}

/// Times the floor of `mode` over `workload` as `bench_engine` times the engine (generated into
/// memory first), reading `input` (tlblab-floor's `Input`: `addresses`, or, TLB-only, the
/// engine's `records` in place or in `batches`). Returns (references, wall seconds).
/// `floor_check` says whether it is exact.
#[pyfunction]
#[pyo3(signature = (workload, mode, seed=0, input="addresses"))]
fn bench_floor(
    py: Python<'_>,
    workload: &str,
    mode: &str,
    seed: u64,
    input: &str,
) -> PyResult<(u64, f64)> {
    use tlblab_floor::{Input, Mode};
    let mode = Mode::parse(mode).map_err(err)?;
    let input = Input::parse(input).map_err(err)?;
    if mode == Mode::Full && input != Input::Addresses {
        return Err(err(format!(
            "floor input: the full floor reads addresses only, found {input:?}"
        )));
    }
    py.detach(|| {
        let records = workload_records(workload, seed)?;
        let secs = match input {
            Input::Addresses => {
                let addrs = tlblab_floor::addresses(&records).map_err(err)?;
                tlblab_floor::run(mode, &addrs).1
            }
            Input::Records => tlblab_floor::run_records(&records).map_err(err)?.1,
            Input::Batches => tlblab_floor::run_batches(&records).map_err(err)?.1,
        };
        Ok((records.len() as u64, secs))
    })
}

/// Times the read bound over `workload` (tlblab-floor's `read_records`: every record read in
/// place, nothing simulated), generated into memory first as `bench_engine` does: what any
/// simulation reading the same records in place (the `slice` feed) can reach on this host.
/// Returns (records, wall seconds, the share of the records' buffer on 2 MiB pages: the kind of
/// buffer every feed of `bench_engine` reads, `workload_records`).
#[pyfunction]
#[pyo3(signature = (workload, seed=0))]
fn bench_read(py: Python<'_>, workload: &str, seed: u64) -> PyResult<(u64, f64, f64)> {
    py.detach(|| {
        let records = workload_records(workload, seed)?;
        let (sum, secs) = tlblab_floor::read_records(&records);
        std::hint::black_box(sum);
        Ok((records.len() as u64, secs, huge_share(&records)))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions! { m: bench_engine, floor_check, bench_floor, bench_read }
}
