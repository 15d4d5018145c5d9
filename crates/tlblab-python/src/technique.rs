//! Python bindings for techniques: the catalog, the one parser of a technique spec
//! (`--technique NAME:key=value,...` and a `[technique]` table alike become the same table,
//! `TechniqueSpec`), the check of a spec against a machine, and lockdown's lockable level. Python
//! passes tables (dicts, as JSON), never spec text it built itself. Wrappers only: the parsing
//! and the checks are tlblab-core's (`techniques::parse_spec`, `registry::build`). TLB migration's
//! calibration benchmarks (seed 000 Tables A.1-A.2) are `tlb_migration::read_cycles` and
//! `pld_benchmark`'s.

use pyo3::prelude::*;
use tlblab_core::machine::TechniqueSpec;
use tlblab_core::techniques::tlb_migration;

use crate::machine::machine_from;
use crate::sim::err;

/// A `[technique]` table as JSON (`{"name": ..., "key": "value", ...}`), into the engine's spec:
/// the values as text, as a machine file's table is read (`TechniqueSpec`).
pub(crate) fn spec_from_json(table: &str) -> PyResult<TechniqueSpec> {
    serde_json::from_str::<TechniqueSpec>(table)
        .map_err(|e| err(tlblab_config::plain_types(&format!("technique table: {e}"))))
}

fn spec_to_json(spec: &TechniqueSpec) -> PyResult<String> {
    serde_json::to_string(spec).map_err(|e| err(e.to_string()))
}

/// technique_table(spec) -> JSON: `NAME[:key=value,...]` (the `--technique` form) parsed into
/// the `[technique]` table it stands for (`techniques::parse_spec`; an empty item or a key given
/// twice is an error naming it).
#[pyfunction]
fn technique_table(spec: &str) -> PyResult<String> {
    spec_to_json(&tlblab_core::techniques::parse_spec(spec).map_err(err)?)
}

/// technique_table_json(table) -> JSON: a `[technique]` table given as JSON (a dict from
/// Python, whose values may be numbers or booleans) as the engine reads it: every value text.
#[pyfunction]
fn technique_table_json(table: &str) -> PyResult<String> {
    spec_to_json(&spec_from_json(table)?)
}

/// The techniques: [{name, summary, seed, params: [{name, default, meaning}]}] as JSON.
#[pyfunction]
fn techniques() -> PyResult<String> {
    let list: Vec<serde_json::Value> = tlblab_core::registry::catalog()
        .iter()
        .map(|t| {
            serde_json::json!({
                "name": t.name,
                "summary": t.summary,
                "seed": t.seed,
                "params": t.params.iter().map(|p| serde_json::json!({
                    "name": p.name, "default": p.default, "meaning": p.meaning,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::to_string(&list).map_err(|e| err(e.to_string()))
}

/// Checks a technique (its `[technique]` table as JSON) against `machine` without running: the
/// error names the technique and the parameter.
#[pyfunction]
#[pyo3(signature = (table, machine, machine_format="auto"))]
fn check_technique(table: &str, machine: &str, machine_format: &str) -> PyResult<()> {
    let cfg = machine_from(machine, machine_format)?;
    let spec = spec_from_json(table)?;
    tlblab_core::registry::build(&spec, &cfg, 0).map_err(err)?;
    Ok(())
}

/// lockable_level(machine, level="") -> JSON: the TLB level lockdown locks into on `machine`
/// (`techniques::lockdown::lockable_level`: the named level, or the first data-path level with
/// lockable entries), its configuration as in the machine file; the error says why none fits.
#[pyfunction]
#[pyo3(signature = (machine, level="", machine_format="auto"))]
fn lockable_level(machine: &str, level: &str, machine_format: &str) -> PyResult<String> {
    let cfg = machine_from(machine, machine_format)?;
    let t = tlblab_core::techniques::lockdown::lockable_level(&cfg, level).map_err(err)?;
    serde_json::to_string(t).map_err(|e| err(e.to_string()))
}

/// The TLB-migration cost constants of `cpu` (a7, gem5) with `overrides` (a JSON object of
/// constant name to integer; "" or "{}": none).
fn migration_costs(cpu: &str, overrides: &str) -> PyResult<tlb_migration::Costs> {
    let mut costs = tlb_migration::Costs::named(cpu).map_err(err)?;
    if overrides.trim().is_empty() {
        return Ok(costs);
    }
    let table: serde_json::Map<String, serde_json::Value> = serde_json::from_str(overrides)
        .map_err(|e| {
            err(format!(
                "tlb_migration costs: expected a JSON object of constants, {e}"
            ))
        })?;
    for (name, value) in &table {
        let v = value.as_u64().ok_or_else(|| {
            err(format!(
                "tlb_migration costs: '{name}' expects a non-negative integer, found {value}"
            ))
        })?;
        costs.set(name, v).map_err(err)?;
    }
    Ok(costs)
}

/// tlb_migration_read_cycles(entries, cpu="a7", interface="pld_direct", costs="") -> cycles:
/// reading `entries` TLB entries in software without storing them, Table A.1's benchmark
/// (seed 000 §4.1), with the technique's cost constants (`tlb_migration::read_cycles`).
#[pyfunction]
#[pyo3(signature = (entries, cpu="a7", interface="pld_direct", costs=""))]
fn tlb_migration_read_cycles(
    entries: u64,
    cpu: &str,
    interface: &str,
    costs: &str,
) -> PyResult<u64> {
    let k = migration_costs(cpu, costs)?;
    let iface = tlb_migration::Interface::named(interface).map_err(err)?;
    Ok(tlb_migration::read_cycles(k, iface, entries))
}

/// tlb_migration_pld_benchmark(machine, pages, stride=4096, base=0x20000000, cpu="a7",
/// costs="") -> JSON: Table A.2's benchmark (seed 000 §4.2: `pages` pages preloaded back to back
/// by one thread with clean caches and TLB; `tlb_migration::pld_benchmark`): {"cycles",
/// "cache_levels", "sources", "stats": the core's counters during the preloads}.
#[pyfunction]
#[pyo3(signature = (machine, pages, stride=4096, base=0x2000_0000, cpu="a7", costs="", machine_format="auto"))]
fn tlb_migration_pld_benchmark(
    machine: &str,
    pages: u64,
    stride: u64,
    base: u64,
    cpu: &str,
    costs: &str,
    machine_format: &str,
) -> PyResult<String> {
    let cfg = machine_from(machine, machine_format)?;
    let k = migration_costs(cpu, costs)?;
    let layout = tlb_migration::PldBenchLayout { base, stride };
    let b = tlb_migration::pld_benchmark(cfg, k, pages, layout).map_err(|e| err(e.0))?;
    serde_json::to_string(&serde_json::json!({
        "cycles": b.cycles,
        "cache_levels": b.cache_levels,
        "sources": b.sources,
        "stats": b.stats,
    }))
    .map_err(|e| err(e.to_string()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions! { m:
        techniques, technique_table, technique_table_json, check_technique, lockable_level,
        tlb_migration_read_cycles, tlb_migration_pld_benchmark
    }
}
