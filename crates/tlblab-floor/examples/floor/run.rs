//! What both floor examples do around their kernels: their arguments, the benchmark's random
//! stream, and the report of interleaved timings.
use tlblab_trace::record::Record;
use tlblab_trace::workloads;

/// `[ACCESSES [REPEATS]]` from the command line (4M and 5 by default).
pub fn args() -> (usize, usize) {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("ACCESSES and REPEATS are numbers"))
        .collect();
    (
        *args.first().unwrap_or(&4_000_000),
        *args.get(1).unwrap_or(&5),
    )
}

/// The engine benchmark's `random:pages=262144` stream of `accesses` loads: its spec, its
/// records, and their addresses.
pub fn stream(accesses: usize) -> (String, Vec<Record>, Vec<u64>) {
    let spec = format!("random:pages=262144,accesses={accesses}");
    let (name, params) = workloads::parse_spec(&spec).unwrap();
    let mut source = workloads::build(&name, &params, 0).unwrap();
    let mut records = Vec::new();
    while source.fill(&mut records, 1 << 16).unwrap() > 0 {}
    let addrs: Vec<u64> = records
        .iter()
        .map(|r| match r {
            Record::Access(a) => a.vaddr.0,
            _ => panic!("{spec}: a record that is not an access"),
        })
        .collect();
    (spec, records, addrs)
}

/// Prints each timed variant's median rate and spread (`rates[i]`: the M refs/s of variant
/// `names[i]`, one per repeat).
pub fn report(names: &[&str], rates: Vec<Vec<f64>>) {
    for (name, mut r) in names.iter().zip(rates) {
        r.sort_by(f64::total_cmp);
        println!(
            "{name:16} median {:6.2} M refs/s (min {:.2}, max {:.2})",
            r[r.len() / 2],
            r[0],
            r[r.len() - 1]
        );
    }
}
