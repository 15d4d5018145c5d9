//! Built-in workload generators: deterministic, parameterized record sources.
//!
//! Each generator is one file and one entry in `catalog()`. A generator is described by a
//! `WorkloadInfo` (name, what it models, the seed section it follows, its parameters with
//! defaults) and built from a parameter map by `build`. Same parameters and seed, same records.

use crate::source::RecordSource;
use std::collections::BTreeMap;

pub mod sweep;
pub mod uniform;

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
    vec![sweep::INFO, uniform::INFO]
}

/// Builds a workload by name. Unknown names and unknown parameters are errors that list the
/// valid choices.
pub fn build(
    name: &str,
    params: &Params,
    seed: u64,
) -> Result<Box<dyn RecordSource + Send>, String> {
    let info = catalog()
        .into_iter()
        .find(|w| w.name == name)
        .ok_or_else(|| {
            let names: Vec<_> = catalog().iter().map(|w| w.name).collect();
            format!(
                "unknown workload '{name}': expected one of {}",
                names.join(", ")
            )
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
        params.get(k).copied().unwrap_or_else(|| {
            info.params
                .iter()
                .find(|(p, _, _)| *p == k)
                .map(|t| t.1)
                .unwrap_or(0)
        })
    };
    match name {
        "sweep" => Ok(Box::new(sweep::Sweep::from_params(get)?)),
        "uniform" => Ok(Box::new(uniform::Uniform::from_params(get, seed)?)),
        _ => unreachable!("catalog and build disagree on {name}"),
    }
}
