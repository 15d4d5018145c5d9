//! Runs one workload on a machine for profiling (perf, callgrind):
//! `cargo run --release -p tlblab-config --example profile_run -- zen3 random:pages=262144,accesses=1M [tlb-only|no-caches]`
//! (or a trace file instead of the workload spec). With `QUANTUM=n` in the environment the
//! records are regrouped into time slices: each thread's next n accesses in turn, as a
//! scheduler with n-access quanta would run a multi-threaded workload (context switches
//! among the threads that share a hardware thread). With `BATCH=n`, the records are simulated
//! n at a time from one reused buffer, as `System::run` takes them from a source, only the
//! simulation timed (the records then come from the host's caches, not its memory).
use tlblab_core::{RunOptions, System};
use tlblab_trace::clock::thread_cpu_seconds;
use tlblab_trace::workloads;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cfg = tlblab_config::load_machine(&args[1]).unwrap_or_else(|e| panic!("{e}"));
    let opts = match args.get(3).map(String::as_str) {
        Some("tlb-only") => RunOptions::tlb_only(0),
        Some("no-caches") => RunOptions::no_caches(0),
        _ => RunOptions::default(),
    };
    // A trace file, or a built-in workload spec.
    let path = std::path::Path::new(&args[2]);
    let mut src = if path.is_file() {
        tlblab_trace::convert::open_source(path, None).unwrap().0
    } else {
        let (name, params) = workloads::parse_spec(&args[2]).unwrap();
        workloads::build(&name, &params, 0).unwrap()
    };
    let mut records = Vec::new();
    while src.fill(&mut records, 1 << 16).unwrap() > 0 {}
    if let Some(q) = std::env::var("QUANTUM")
        .ok()
        .and_then(|q| q.parse::<usize>().ok())
    {
        records = time_slices(&records, q.max(1));
    }
    let mut sys = System::new(cfg, opts).unwrap();
    let batch = std::env::var("BATCH")
        .ok()
        .and_then(|b| b.parse::<usize>().ok());
    let (wall, cpu) = match batch {
        None => {
            let (t, cpu0) = (std::time::Instant::now(), thread_cpu_seconds());
            sys.run_slice(&records).unwrap();
            (t.elapsed().as_secs_f64(), thread_cpu_seconds() - cpu0)
        }
        Some(b) => {
            let mut buf = Vec::with_capacity(b);
            let (mut wall, mut cpu) = (0.0, 0.0);
            for chunk in records.chunks(b.max(1)) {
                buf.clear();
                buf.extend_from_slice(chunk);
                let (t, cpu0) = (std::time::Instant::now(), thread_cpu_seconds());
                sys.run_slice(&buf).unwrap();
                wall += t.elapsed().as_secs_f64();
                cpu += thread_cpu_seconds() - cpu0;
            }
            (wall, cpu)
        }
    };
    let refs = sys.stats().total.references as f64;
    // Thread CPU time is the figure to compare on a shared machine; wall time for reference.
    // The simulated cycles and walks too, so that two builds are seen to agree.
    let total = &sys.stats().total;
    eprintln!(
        "{refs} refs ({} cycles, {} walks) in {wall:.3} s wall, {cpu:.3} s CPU: {:.1} M refs/s wall, {:.1} M refs/s CPU",
        total.cycles,
        total.walks,
        refs / wall / 1e6,
        refs / cpu / 1e6
    );
    // With `STATS_OUT=FILE`, every counter of the run, to compare two builds' runs whole.
    if let Ok(out) = std::env::var("STATS_OUT") {
        std::fs::write(out, format!("{:#?}\n", sys.stats())).unwrap();
    }
}

/// `records` regrouped into slices of `quantum` accesses of one thread, the threads in turn
/// (by thread id), each thread's accesses in their order; events keep their place at the end.
fn time_slices(records: &[tlblab_trace::Record], quantum: usize) -> Vec<tlblab_trace::Record> {
    use std::collections::BTreeMap;
    use tlblab_trace::Record;
    let mut by_thread: BTreeMap<u32, std::collections::VecDeque<Record>> = BTreeMap::new();
    let mut events = Vec::new();
    for r in records {
        match r {
            Record::Access(a) => by_thread.entry(a.thread.0).or_default().push_back(*r),
            Record::Event(_) => events.push(*r),
        }
    }
    let mut out = Vec::with_capacity(records.len());
    while by_thread.values().any(|q| !q.is_empty()) {
        for q in by_thread.values_mut() {
            let n = quantum.min(q.len());
            out.extend(q.drain(..n));
        }
    }
    out.extend(events);
    out
}
