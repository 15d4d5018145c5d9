//! tlblab._native: the thin PyO3 layer. Wrappers only; logic lives in the other crates.
//! One file per area, each with `register(m)`.
use pyo3::prelude::*;

/// Adds each named `#[pyfunction]` to the module: an area's `register(m)` is this one call.
macro_rules! add_functions {
    ($m:ident: $($f:ident),+ $(,)?) => {{
        $($m.add_function(wrap_pyfunction!($f, $m)?)?;)+
        Ok(())
    }};
}

mod bench;
mod curve;
mod machine;
mod mosaic;
mod probe;
mod sim;
mod technique;
mod trace;
mod watch;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    sim::register(m)?;
    machine::register(m)?;
    technique::register(m)?;
    bench::register(m)?;
    probe::register(m)?;
    trace::register(m)?;
    curve::register(m)?;
    mosaic::register(m)?;
    Ok(())
}
