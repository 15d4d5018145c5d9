//! Built-in workload generators: deterministic, parameterized record sources.
//!
//! Each generator is one file and one entry in `catalog()`. A generator is described by a
//! `WorkloadInfo` (name, what it models, the seed section it follows, its parameters with
//! defaults) and built from a parameter map by `build`. Same parameters and seed, same records.

use crate::source::RecordSource;
use std::collections::BTreeMap;

/// A workload's parameters, declared where the workload is (the Ramulator 2 way: parameters
/// inline, one line each): `name: default, "meaning";`, or `+ CONST;` for a declaration shared
/// with another workload (kept in its place in the order). Expands to the
/// `&[(name, default, meaning)]` table of `WorkloadInfo::params`, which `build` alone reads.
macro_rules! params {
    (@rows [$($row:expr,)*]) => { &[$($row,)*] };
    (@rows [$($row:expr,)*] $name:ident: $default:expr, $meaning:literal; $($rest:tt)*) => {
        params!(@rows [$($row,)* (stringify!($name), $default, $meaning),] $($rest)*)
    };
    (@rows [$($row:expr,)*] + $shared:expr; $($rest:tt)*) => {
        params!(@rows [$($row,)* $shared,] $($rest)*)
    };
    ($($rest:tt)*) => { params!(@rows [] $($rest)*) };
}

/// A populated workload's parameters: its own (as `params!`), then `populate` (populate.rs) and
/// the window parameters (fast_forward.rs), which `build` reads for every workload that has
/// `populate`.
macro_rules! populated_params {
    ($($rows:tt)*) => {
        params! {
            $($rows)*
            + super::populate::PARAM;
            + super::fast_forward::PARAMS[0];
            + super::fast_forward::PARAMS[1];
            + super::fast_forward::PARAMS[2];
            + super::fast_forward::PARAMS[3];
            + super::fast_forward::PARAMS[4];
            + super::fast_forward::PARAMS[5];
        }
    };
}

pub mod bw_ipc;
pub mod canneal;
pub mod canneal_read;
pub mod chase;
pub mod corun;
pub mod extreme;
pub mod fast_forward;
pub mod gapbs_bc;
pub mod gen;
pub mod graph500_bfs;
pub mod graph500_list;
pub mod graph_cache;
pub mod gups;
pub mod hash_join;
pub mod host_migrate;
pub mod hot_potato;
pub mod kept_states;
pub mod kernel_path;
pub mod l4_ipc;
pub mod lat_ctx;
pub mod liblinear;
pub mod lockdown_mix;
pub mod memory;
pub mod migration_bench;
pub mod populate;
pub mod proc_create;
pub mod random;
pub mod rmat;
pub mod rr_migration;
pub mod rt_glibc;
pub mod rt_kernels;
pub mod rt_noise;
pub mod rt_replay;
pub mod rt_taskset;
pub mod sequential;
pub mod strided;
pub mod tlb_thrash;

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
    /// Whether `tlblab study` / the main job runs it by default.
    pub in_default_set: bool,
    /// (parameter, default, meaning); last, as the longest part of a declaration.
    pub params: &'static [(&'static str, u64, &'static str)],
}

/// Every built-in workload.
pub fn catalog() -> Vec<WorkloadInfo> {
    vec![
        sequential::INFO,
        strided::INFO,
        random::INFO,
        chase::INFO,
        // seed 000
        migration_bench::INFO_4K,
        migration_bench::INFO_68K,
        rr_migration::INFO,
        host_migrate::INFO,
        // seed 001
        tlb_thrash::INFO,
        gups::INFO,
        graph500_bfs::INFO,
        graph500_list::INFO,
        gapbs_bc::INFO,
        hash_join::INFO,
        canneal::INFO,
        canneal_read::INFO,
        liblinear::INFO,
        // seed 002
        lat_ctx::INFO,
        hot_potato::INFO,
        bw_ipc::INFO,
        extreme::INFO,
        l4_ipc::INFO,
        proc_create::INFO,
        // seed 003
        rt_taskset::INFO_TABLE,
        rt_taskset::INFO_SAME_DIFF,
        rt_taskset::INFO_MALLOC,
        rt_taskset::INFO_PAIR,
        rt_taskset::INFO_NOISY,
        // seed 004
        lockdown_mix::INFO,
    ]
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
    let zeros: Vec<String> = info
        .params
        .iter()
        .filter(|(p, _, _)| {
            get(p) == 0
                && *p != populate::PARAM.0
                && !fast_forward::PARAMS.iter().any(|w| w.0 == *p)
        })
        .map(|(p, _, _)| format!("{p}=0"))
        .collect();
    if name != "graph500_bfs" && name != "gapbs_bc" {
        // The last R-MAT graph is kept for the next graph run of this process only while
        // graph runs follow each other (rmat::shared): a gigabyte graph is not held idle.
        rmat::release();
    }
    if name != "graph500_list" {
        graph500_list::release();
    }
    let mut src = build_known(name, &get, seed)?;
    if info.params.iter().any(|(p, _, _)| *p == populate::PARAM.0) {
        match get(populate::PARAM.0) {
            0 => {}
            1 => src = Box::new(populate::Populate::new(src)),
            v => {
                return Err(format!(
                    "workload '{name}': populate must be 0 or 1 (got {v})"
                ))
            }
        }
        let (skip, warm, take) = (
            get(fast_forward::SKIP),
            get(fast_forward::WARM),
            get(fast_forward::TAKE),
        );
        let (every, windows) = (get(fast_forward::EVERY), get(fast_forward::WINDOWS));
        if (every > 0 || windows > 0) && (take == 0 || every < warm.saturating_add(take)) {
            return Err(format!(
                "workload '{name}': every and windows need take > 0 and every >= warm + take (got every={every}, warm={warm}, take={take})"
            ));
        }
        let phase = get(fast_forward::WINDOW_PHASE);
        if phase > 0 && (take == 0 || phase > warm) {
            return Err(format!(
                "workload '{name}': window_phase needs take > 0 and window_phase <= warm (got window_phase={phase}, warm={warm}, take={take})"
            ));
        }
        if skip > 0 || warm > 0 || take > 0 {
            if get(populate::PARAM.0) != 1 {
                return Err(format!(
                    "workload '{name}': skip, warm and take need populate=1 (skipped accesses would leave pages unmapped)"
                ));
            }
            src = Box::new(
                fast_forward::FastForward::new(src, skip, warm, take, every, windows)
                    .with_window_phase(phase),
            );
        }
    }
    Ok(Box::new(NonEmpty {
        inner: src,
        what: if zeros.is_empty() {
            format!("workload '{name}': these parameters make no references")
        } else {
            format!(
                "workload '{name}': these parameters make no references ({})",
                zeros.join(", ")
            )
        },
        started: false,
    }))
}

/// A workload source that fails, instead of delivering nothing, when its parameters make no
/// references at all (`accesses=0`): a run over nothing would print a table of zeros as if
/// it were a result.
struct NonEmpty {
    inner: Box<dyn RecordSource + Send>,
    what: String,
    started: bool,
}

impl RecordSource for NonEmpty {
    fn fill(&mut self, out: &mut Vec<crate::record::Record>, max: usize) -> Result<usize, String> {
        let n = self.inner.fill(out, max)?;
        if !self.started && max > 0 {
            if n == 0 {
                return Err(self.what.clone());
            }
            self.started = true;
        }
        Ok(n)
    }
    fn len_hint(&self) -> Option<u64> {
        self.inner.len_hint()
    }
    fn region_names(&self) -> Vec<String> {
        self.inner.region_names()
    }
    fn skip_accesses(&mut self, n: u64) -> Result<u64, String> {
        let k = self.inner.skip_accesses(n)?;
        self.started |= k > 0;
        Ok(k)
    }
    fn skip_records(&mut self, n: u64) -> Result<u64, String> {
        let k = self.inner.skip_records(n)?;
        self.started |= k > 0;
        Ok(k)
    }
}

fn build_known(
    name: &str,
    get: &dyn Fn(&str) -> u64,
    seed: u64,
) -> Result<Box<dyn RecordSource + Send>, String> {
    let get = |k: &str| get(k);
    match name {
        "sequential" => boxed(sequential::Sequential::from_params(get)),
        "strided" => boxed(strided::Strided::from_params(get)),
        "random" => boxed(random::Random::from_params(get, seed)),
        "chase" => boxed(chase::Chase::from_params(get, seed)),
        "migration_4k" | "migration_68k" => {
            rounds(migration_bench::MigrationBench::from_params(name, get))
        }
        "host_migrate" => rounds(host_migrate::HostMigrate::from_params(get, seed)),
        "rr_migration" => rounds(rr_migration::RrMigration::from_params(get)),
        "tlb_thrash" => chunked(tlb_thrash::TlbThrash::from_params(get)),
        "gups" => chunked(gups::Gups::from_params(get, seed)),
        "graph500_bfs" => chunked(graph500_bfs::Bfs::from_params(get, seed)),
        "graph500_list" => chunked(graph500_list::List::from_params(get, seed)),
        "gapbs_bc" => chunked(gapbs_bc::Bc::from_params(get, seed)),
        "hash_join" => chunked(hash_join::HashJoin::from_params(get, seed)),
        "canneal" => chunked(canneal::Canneal::from_params(get, seed)),
        "canneal_read" => chunked(canneal_read::CannealRead::from_params(get, seed)),
        "liblinear" => chunked(liblinear::LibLinear::from_params(get, seed)),
        "lat_ctx" => chunked(lat_ctx::LatCtx::from_params(get)),
        "hot_potato" => chunked(hot_potato::HotPotato::from_params(get)),
        "bw_ipc" => chunked(bw_ipc::BwIpc::from_params(get)),
        "extreme" => chunked(extreme::Extreme::from_params(get)),
        "proc_create" => chunked(proc_create::ProcCreate::from_params(get)),
        "l4_ipc" => chunked(l4_ipc::L4Ipc::from_params(get, seed)),
        "rt_table6_1" => chunked(rt_taskset::table6_1_set(&get, seed)),
        "rt_benchmark_pair" => chunked(rt_taskset::benchmark_pair(&get, seed)),
        "rt_noisy_sets" => chunked(rt_taskset::noisy_sets(&get, seed)),
        "rt_same_diff_set" => chunked(rt_taskset::same_diff(&get, seed)),
        "rt_malloc_vs_tlb_malloc" => chunked(rt_taskset::malloc_vs_tlb(&get, seed)),
        "lockdown_mix" => chunked(lockdown_mix::LockdownMix::from_params(get, seed)),
        _ => unreachable!("catalog and build disagree on {name}"),
    }
}

/// A built record source, boxed for `build`.
fn boxed<S: RecordSource + Send + 'static>(
    source: Result<S, String>,
) -> Result<Box<dyn RecordSource + Send>, String> {
    Ok(Box::new(source?))
}

/// A built generator behind `gen::Chunked`, boxed for `build`.
fn chunked<G: gen::Generator + Send + 'static>(
    generator: Result<G, String>,
) -> Result<Box<dyn RecordSource + Send>, String> {
    boxed(generator.map(Chunked::new))
}

/// A built `gen::Rounds` benchmark behind `gen::ByRounds` and `gen::Chunked`, boxed for `build`.
fn rounds<B: gen::Rounds + 'static>(
    bench: Result<B, String>,
) -> Result<Box<dyn RecordSource + Send>, String> {
    chunked(bench.map(gen::ByRounds::new))
}

/// Parses a workload spec `name[:key=value,key=value]`; values are integers, optionally hex
/// (`0x...`) or with a binary suffix (`k`, `M`, `G`: ×2^10, 2^20, 2^30).
pub fn parse_spec(spec: &str) -> Result<(String, Params), String> {
    let (name, rest) = match spec.split_once(':') {
        Some((n, r)) => (n.trim(), r),
        None => (spec.trim(), ""),
    };
    if name.is_empty() {
        return Err(format!(
            "workload spec '{spec}': expected NAME[:key=value,...]"
        ));
    }
    let mut params = Params::new();
    // Every item must be key=value: an empty item (`a=1,,b=2`, a trailing comma, or nothing
    // after the colon: `random:`) is a typo, not something to skip silently (README).
    if rest.trim().is_empty() {
        if spec.contains(':') {
            return Err(format!(
                "workload spec '{spec}': nothing after ':': expected {name} alone or {name}:key=value,..."
            ));
        }
        return Ok((name.to_string(), params));
    }
    for kv in rest.split(',').map(str::trim) {
        if kv.is_empty() {
            return Err(format!(
                "workload spec '{spec}': empty item between commas: expected key=value"
            ));
        }
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("workload spec '{spec}': expected key=value, found '{kv}'"))?;
        let k = k.trim();
        if k.is_empty() {
            return Err(format!(
                "workload spec '{spec}': no parameter name before '=' in '{kv}'"
            ));
        }
        let value = parse_number(v.trim())
            .ok_or_else(|| format!("workload spec '{spec}': parameter '{k}' expects an integer (e.g. 4096, 0x1000, 64k, 2M), found '{}'", v.trim()))?;
        if params.insert(k.to_string(), value).is_some() {
            return Err(format!(
                "workload spec '{spec}': parameter '{k}' is given twice"
            ));
        }
    }
    Ok((name.to_string(), params))
}

/// Parses `4096`, `0x1000`, `64k`, `2M`, `1G` (binary multiples).
pub fn parse_number(v: &str) -> Option<u64> {
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        return u64::from_str_radix(&h.replace('_', ""), 16).ok();
    }
    let v = v.replace('_', "");
    let (digits, mult) = match v.chars().last()? {
        'k' | 'K' => (&v[..v.len() - 1], 1u64 << 10),
        'm' | 'M' => (&v[..v.len() - 1], 1 << 20),
        'g' | 'G' => (&v[..v.len() - 1], 1 << 30),
        _ => (&v[..], 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_suffixes_and_report_bad_values() {
        let (n, p) = parse_spec("random:pages=256k,accesses=10M,base=0x1000").unwrap();
        assert_eq!(n, "random");
        assert_eq!(p["pages"], 262144);
        assert_eq!(p["accesses"], 10 << 20);
        assert_eq!(p["base"], 0x1000);
        let e = parse_spec("random:pages=lots").unwrap_err();
        assert!(e.contains("parameter 'pages' expects an integer"), "{e}");
        let e = parse_spec("random:pages=4096,pages=8192").unwrap_err();
        assert!(e.contains("parameter 'pages' is given twice"), "{e}");
        for bad in [
            "random:pages=64,,accesses=10",
            "random:pages=64,",
            "random:,pages=1",
        ] {
            let e = parse_spec(bad).unwrap_err();
            assert!(e.contains("empty item"), "{bad}: {e}");
        }
        let e = parse_spec("random:=5").unwrap_err();
        assert!(e.contains("no parameter name"), "{e}");
        let e = parse_spec("random:").unwrap_err();
        assert!(e.contains("nothing after ':'"), "{e}");
        assert!(parse_spec("random").unwrap().1.is_empty());
        let (n, p) = parse_spec("random:accesses=0").unwrap();
        let mut buf = Vec::new();
        let e = build(&n, &p, 0).unwrap().fill(&mut buf, 64).unwrap_err();
        assert!(e.contains("make no references (accesses=0)"), "{e}");
        assert!(build("nope", &Params::new(), 0)
            .err()
            .unwrap()
            .contains("unknown workload 'nope'"));
        let mut p = Params::new();
        p.insert("page".into(), 1);
        assert!(build("random", &p, 0)
            .err()
            .unwrap()
            .contains("has no parameter 'page'"));
    }

    #[test]
    fn every_catalog_workload_builds_with_defaults_and_is_deterministic() {
        for w in catalog() {
            let mut small = Params::new();
            for (k, _, _) in w.params {
                if *k == "accesses" {
                    small.insert(k.to_string(), 1000);
                }
            }
            let collect = |seed| {
                let mut s = build(w.name, &small, seed).unwrap();
                let mut out = Vec::new();
                while s.fill(&mut out, 4096).unwrap() > 0 {
                    if out.len() > 100_000 {
                        break;
                    }
                }
                out
            };
            let a = collect(1);
            assert!(!a.is_empty(), "{} produced nothing", w.name);
            assert_eq!(a, collect(1), "{} is not deterministic", w.name);
        }
    }
}
