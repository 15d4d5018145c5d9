//! Python bindings for machines: a machine from a preset, a file or inline text
//! (`machine_from`, which every other binding reads its machine with), and the machine written
//! back (TOML, JSON, a machine file's text), its page sizes, the presets. Wrappers only.

use pyo3::prelude::*;
use tlblab_core::MachineConfig;

use crate::sim::err;

/// A machine from a preset name, a .toml/.json path, or inline text (`format` = "toml"/"json").
pub(crate) fn machine_from(spec: &str, format: &str) -> PyResult<MachineConfig> {
    match format {
        "toml" => tlblab_config::parse_machine_toml(spec, "<machine>").map_err(err),
        "json" => tlblab_config::parse_machine_json(spec, "<machine>").map_err(err),
        _ => tlblab_config::load_machine(spec).map_err(err),
    }
}

/// The machine as canonical TOML (validated).
#[pyfunction]
#[pyo3(signature = (machine, machine_format="auto"))]
fn machine_toml(machine: &str, machine_format: &str) -> PyResult<String> {
    let cfg = machine_from(machine, machine_format)?;
    tlblab_config::machine_to_toml(&cfg).map_err(err)
}

/// The machine as the text of a machine file named `path` (`tlblab_config::machine_file_text`:
/// JSON for a `.json` name, else TOML; validated; it parses back to the same machine).
#[pyfunction]
#[pyo3(signature = (machine, path, machine_format="auto"))]
fn machine_file_text(machine: &str, path: &str, machine_format: &str) -> PyResult<String> {
    let cfg = machine_from(machine, machine_format)?;
    tlblab_config::machine_file_text(&cfg, tlblab_config::MachineFileFormat::of_path(path))
        .map_err(err)
}

/// The machine as JSON (validated).
#[pyfunction]
#[pyo3(signature = (machine, machine_format="auto"))]
fn machine_json(machine: &str, machine_format: &str) -> PyResult<String> {
    let cfg = machine_from(machine, machine_format)?;
    serde_json::to_string(&cfg).map_err(|e| err(e.to_string()))
}

/// The page sizes the machine's page-table format can map ("4KiB", "1MiB", ...): what a
/// workload's mappings may use on it.
#[pyfunction]
#[pyo3(signature = (machine, machine_format="auto"))]
fn machine_page_sizes(machine: &str, machine_format: &str) -> PyResult<Vec<String>> {
    let cfg = machine_from(machine, machine_format)?;
    Ok(cfg
        .page_table
        .format
        .page_sizes()
        .iter()
        .map(|s| s.to_string())
        .collect())
}

/// [(name, description)] of the built-in presets.
#[pyfunction]
fn presets() -> PyResult<Vec<(String, String)>> {
    tlblab_config::PRESETS
        .iter()
        .map(|(n, _)| {
            let m = tlblab_config::load_machine(n).map_err(err)?;
            Ok((n.to_string(), m.description))
        })
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions! { m:
        machine_toml, machine_json, machine_file_text, machine_page_sizes, presets
    }
}
