//! What the workload tests share: a workload read whole, its accesses, parameters.

use tlblab_trace::record::Record;
use tlblab_trace::source::RecordSource;
use tlblab_trace::workloads::{build, Params};
use tlblab_types::AccessKind;

/// Every record of workload `name` and its region names.
pub fn all(name: &str, params: &Params, seed: u64) -> (Vec<Record>, Vec<String>) {
    let mut s = build(name, params, seed).unwrap();
    let mut out = Vec::new();
    while s.fill(&mut out, 777).unwrap() > 0 {
        assert!(out.len() < 20_000_000, "{name} runs away");
    }
    (out, s.region_names())
}

/// (thread, kind, address) of each access.
pub fn accesses(recs: &[Record]) -> Vec<(u32, AccessKind, u64)> {
    recs.iter()
        .filter_map(|r| {
            if let Record::Access(a) = r {
                Some((a.thread.0, a.kind, a.vaddr.0))
            } else {
                None
            }
        })
        .collect()
}

pub fn params(kv: &[(&str, u64)]) -> Params {
    kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}
