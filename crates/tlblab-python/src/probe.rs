//! Python bindings for tlblab-probe: the measurement (JSON in, JSON out) and the pure analysis
//! functions, exposed so Python tests and notebooks can run them on their own curves.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tlblab_probe::analysis::index::{infer_indexing, StrideCapacity};
use tlblab_probe::analysis::knee::{find_knees, fit_ramp, CurvePoint, KneeParams};
use tlblab_probe::measure::simulated::Noise;
use tlblab_probe::probe::{run, run_simulated, ProbeOptions};

fn json_err(what: &str, e: serde_json::Error) -> PyErr {
    PyValueError::new_err(format!(
        "{what}: invalid JSON at line {}, column {}: {e}",
        e.line(),
        e.column()
    ))
}

/// Runs the probe. `options_json` holds `ProbeOptions` fields; returns the report as JSON.
/// The GIL is released while measuring.
#[pyfunction]
fn probe(py: Python<'_>, options_json: &str) -> PyResult<String> {
    let o: ProbeOptions =
        serde_json::from_str(options_json).map_err(|e| json_err("probe options", e))?;
    let r = py.detach(|| run(&o)).map_err(PyValueError::new_err)?;
    serde_json::to_string(&r).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The probe's data-TLB sections on a simulated host: `machine_json` a machine description (the
/// dict `machine_config` returns, as JSON), `noise` "vm" (`Noise::VM`) or "none". Returns the
/// report as JSON; deterministic for the options' seed.
#[pyfunction]
fn probe_simulated(
    py: Python<'_>,
    machine_json: &str,
    options_json: &str,
    noise: &str,
) -> PyResult<String> {
    let o: ProbeOptions =
        serde_json::from_str(options_json).map_err(|e| json_err("probe options", e))?;
    let m = tlblab_config::parse_machine_json(machine_json, "machine")
        .map_err(PyValueError::new_err)?;
    let noise = match noise {
        "vm" => Noise::VM,
        "none" => Noise::NONE,
        other => {
            return Err(PyValueError::new_err(format!(
                "noise '{other}': expected vm or none"
            )))
        }
    };
    let r = py
        .detach(|| run_simulated(&m, noise, &o))
        .map_err(PyValueError::new_err)?;
    serde_json::to_string(&r).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Knees of a curve: `points_json` is a list of {n, test, control, noise}; returns a JSON list.
#[pyfunction]
#[pyo3(signature = (points_json, params_json=None))]
fn probe_find_knees(points_json: &str, params_json: Option<&str>) -> PyResult<String> {
    let pts: Vec<CurvePoint> =
        serde_json::from_str(points_json).map_err(|e| json_err("points", e))?;
    let p: KneeParams = match params_json {
        Some(s) => serde_json::from_str(s).map_err(|e| json_err("knee parameters", e))?,
        None => KneeParams::default(),
    };
    Ok(serde_json::to_string(&find_knees(&pts, &p)).unwrap())
}

/// Ramp fit of `[[n, excess], …]`; returns the fit as JSON or `null`.
#[pyfunction]
fn probe_fit_ramp(points_json: &str) -> PyResult<String> {
    let pts: Vec<(usize, f64)> =
        serde_json::from_str(points_json).map_err(|e| json_err("points", e))?;
    Ok(serde_json::to_string(&fit_ramp(&pts)).unwrap())
}

/// Index inference from `[{log2_stride, capacity}, …]`; returns the indexing as JSON.
#[pyfunction]
#[pyo3(signature = (capacities_json, tol=0.2, floor=None))]
fn probe_infer_indexing(capacities_json: &str, tol: f64, floor: Option<usize>) -> PyResult<String> {
    let caps: Vec<StrideCapacity> =
        serde_json::from_str(capacities_json).map_err(|e| json_err("capacities", e))?;
    Ok(serde_json::to_string(&infer_indexing(&caps, tol, floor)).unwrap())
}

/// The probe's section names, in run order.
#[pyfunction]
fn probe_sections() -> Vec<&'static str> {
    tlblab_probe::probe::SECTIONS.to_vec()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions! { m:
        probe, probe_simulated, probe_find_knees, probe_fit_ramp, probe_infer_indexing,
        probe_sections
    }
}
