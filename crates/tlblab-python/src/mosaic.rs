//! `tlblab host predict`'s simulation: a captured trace run with a mosaic's page sizes, each
//! window announced as an `Event::Mmap` of its page size before the trace's first record
//! (`tlblab_trace::source::Prefixed`), so one capture serves every mosaic.
use pyo3::prelude::*;
use tlblab_core::{RunOptions, System};
use tlblab_trace::record::{Event, Record};
use tlblab_trace::source::Prefixed;
use tlblab_types::VirtAddr;

use crate::machine::machine_from;
use crate::sim::open_workload;
use crate::watch;

/// simulate_windows(machine, workload, windows, warmup=0, tlb_only=False, machine_format="auto",
/// independent=False) -> the run's statistics as JSON. `windows`: (start, len, page_shift) address
/// ranges of process 0 (the captured program) mapped with that page size; everything else keeps
/// the machine's. `independent`: thread 0's references are marked independent from the start
/// (`Event::Independent`), so that a machine with `timing.mlp` overlaps their misses but where
/// the capture's `Depends` events (`--dependence`) make a load wait for its producer.
#[pyfunction]
#[pyo3(signature = (machine, workload, windows, warmup=0, tlb_only=false, machine_format="auto", independent=false))]
#[allow(clippy::too_many_arguments)] // one per Python keyword argument
fn simulate_windows(
    py: Python<'_>,
    machine: &str,
    workload: &str,
    windows: Vec<(u64, u64, u8)>,
    warmup: u64,
    tlb_only: bool,
    machine_format: &str,
    independent: bool,
) -> PyResult<String> {
    let cfg = machine_from(machine, machine_format)?;
    let opts = if tlb_only {
        RunOptions::tlb_only(0)
    } else {
        RunOptions::default()
    };
    let prefix: Vec<Record> = windows
        .iter()
        .map(|&(start, len, page_shift)| {
            Record::Event(Event::Mmap {
                process: 0,
                start: VirtAddr(start),
                len,
                prot: 3,
                page_shift,
            })
        })
        .chain(independent.then_some(Record::Event(Event::Independent {
            thread: tlblab_types::ThreadId(0),
            begin: true,
        })))
        .collect();
    let source = Prefixed::new(prefix, open_workload(workload, 0)?);
    watch::start();
    let r = py.detach(|| -> Result<String, String> {
        let mut source = watch::Watched::new(source, None);
        let mut sys = System::new(cfg, opts).map_err(|e| e.0)?;
        sys.set_warmup(warmup);
        sys.run(&mut source).map_err(|e| e.0)?;
        if warmup > 0 && !sys.roi_begun() {
            return Err(format!(
                "warm-up {warmup}: longer than the trace ({} references)",
                sys.stats().total.references
            ));
        }
        serde_json::to_string(&sys.stats()).map_err(|e| e.to_string())
    });
    watch::finish(r)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions! { m: simulate_windows }
}
