//! Runs one workload on a machine for profiling (perf, callgrind):
//! `cargo run --release -p tlblab-config --example profile_run -- zen3 random:pages=262144,accesses=1M [tlb-only|no-caches]`
//! (or a trace file instead of the workload spec)
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
    let mut sys = System::new(cfg, opts).unwrap();
    let (t, cpu0) = (std::time::Instant::now(), thread_cpu_seconds());
    sys.run_slice(&records).unwrap();
    let (wall, cpu) = (t.elapsed().as_secs_f64(), thread_cpu_seconds() - cpu0);
    let refs = sys.stats().total.references as f64;
    // Thread CPU time is the figure to compare on a shared machine; wall time for reference.
    eprintln!(
        "{refs} refs in {wall:.3} s wall, {cpu:.3} s CPU: {:.1} M refs/s wall, {:.1} M refs/s CPU",
        refs / wall / 1e6,
        refs / cpu / 1e6
    );
}
