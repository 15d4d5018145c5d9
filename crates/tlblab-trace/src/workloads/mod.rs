//! Built-in workload generators: deterministic, parameterized record sources.
//!
//! Each generator is one file and one entry in `catalog()`. A generator is described by a
//! `WorkloadInfo` (name, what it models, the seed section it follows, its parameters with
//! defaults) and built from a parameter map by `build`. Same parameters and seed, same records.

use crate::source::RecordSource;
use std::collections::BTreeMap;

pub mod gapbs_bc;
pub mod gen;
pub mod graph500_bfs;
pub mod gups;
pub mod hash_join;
pub mod hot_potato;
pub mod l4_ipc;
pub mod lat_ctx;
pub mod lockdown_mix;
pub mod migration_bench;
pub mod rmat;
pub mod rr_migration;
pub mod rt_taskset;
pub mod sweep;
pub mod tlb_thrash;
pub mod uniform;
pub mod extreme;

use gen::Chunked;

/// Parameters of a workload: name → integer value (sizes in bytes, counts).
pub type Params = BTreeMap<String, u64>;

/// What the catalog says about one workload.
#[derive(Clone, Debug)]
pub struct WorkloadInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// The seed section the generator follows, or "" for generic workloads.
    pub source: &'static str,
    /// (parameter, default, meaning)
    pub params: &'static [(&'static str, u64, &'static str)],
    /// Whether `tlblab study` / the main job runs it by default.
    pub in_default_set: bool,
}

/// Every built-in workload.
pub fn catalog() -> Vec<WorkloadInfo> {
    vec![
        sweep::INFO,
        uniform::INFO,
        // seed 000
        migration_bench::INFO_4K,
        migration_bench::INFO_68K,
        rr_migration::INFO,
        // seed 001
        tlb_thrash::INFO,
        gups::INFO,
        graph500_bfs::INFO,
        gapbs_bc::INFO,
        hash_join::INFO,
        // seed 002
        lat_ctx::INFO,
        hot_potato::INFO,
        extreme::INFO,
        l4_ipc::INFO,
        // seed 003
        rt_taskset::INFO_TABLE,
        rt_taskset::INFO_SAME_DIFF,
        rt_taskset::INFO_MALLOC,
        // seed 004
        lockdown_mix::INFO,
    ]
}

/// Builds a workload by name. Unknown names and unknown parameters are errors that list the
/// valid choices.
pub fn build(name: &str, params: &Params, seed: u64) -> Result<Box<dyn RecordSource + Send>, String> {
    let info = catalog()
        .into_iter()
        .find(|w| w.name == name)
        .ok_or_else(|| {
            let names: Vec<_> = catalog().iter().map(|w| w.name).collect();
            format!("unknown workload '{name}': expected one of {}", names.join(", "))
        })?;
    for k in params.keys() {
        if !info.params.iter().any(|(p, _, _)| p == k) {
            let names: Vec<_> = info.params.iter().map(|(p, _, _)| *p).collect();
            return Err(format!(
                "workload '{name}' has no parameter '{k}': expected one of {}",
                names.join(", ")
            ));
        }
    }
    let get = |k: &str| -> u64 {
        params
            .get(k)
            .copied()
            .unwrap_or_else(|| info.params.iter().find(|(p, _, _)| *p == k).map(|t| t.1).unwrap_or(0))
    };
    match name {
        "sweep" => Ok(Box::new(sweep::Sweep::from_params(get)?)),
        "uniform" => Ok(Box::new(uniform::Uniform::from_params(get, seed)?)),
        "migration_4k" | "migration_68k" => Ok(Box::new(Chunked::new(migration_bench::MigrationBench::from_params(name, get)?))),
        "rr_migration" => Ok(Box::new(Chunked::new(rr_migration::RrMigration::from_params(get)?))),
        "tlb_thrash" => Ok(Box::new(Chunked::new(tlb_thrash::TlbThrash::from_params(get)?))),
        "gups" => Ok(Box::new(Chunked::new(gups::Gups::from_params(get, seed)?))),
        "graph500_bfs" => Ok(Box::new(Chunked::new(graph500_bfs::Bfs::from_params(get, seed)?))),
        "gapbs_bc" => Ok(Box::new(Chunked::new(gapbs_bc::Bc::from_params(get, seed)?))),
        "hash_join" => Ok(Box::new(Chunked::new(hash_join::HashJoin::from_params(get, seed)?))),
        "lat_ctx" => Ok(Box::new(Chunked::new(lat_ctx::LatCtx::from_params(get)?))),
        "hot_potato" => Ok(Box::new(Chunked::new(hot_potato::HotPotato::from_params(get)?))),
        "extreme" => Ok(Box::new(Chunked::new(extreme::Extreme::from_params(get)?))),
        "l4_ipc" => Ok(Box::new(Chunked::new(l4_ipc::L4Ipc::from_params(get, seed)?))),
        "rt_table6_1" => {
            let tasks = rt_taskset::table6_1(get("tasks"))?;
            Ok(Box::new(Chunked::new(rt_taskset::TaskSet::new(name, tasks, false, false, &get, seed)?)))
        }
        "rt_same_diff_set" => Ok(Box::new(Chunked::new(rt_taskset::same_diff(&get, seed)?))),
        "rt_malloc_vs_tlb_malloc" => Ok(Box::new(Chunked::new(rt_taskset::malloc_vs_tlb(&get, seed)?))),
        "lockdown_mix" => Ok(Box::new(Chunked::new(lockdown_mix::LockdownMix::from_params(get, seed)?))),
        _ => unreachable!("catalog and build disagree on {name}"),
    }
}
