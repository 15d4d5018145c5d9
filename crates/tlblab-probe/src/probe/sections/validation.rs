//! With `--validate`: a random-order chase over N consecutive pages (the simulator's `chase`
//! workload), swept like the data-TLB levels, for the probe's check of the simulator.

use super::*;
use crate::measure::curve::{grid, sweep};
use crate::sys;

/// Not stamped in `started`: it runs only with `--validate`.
pub(in crate::probe) const VALIDATION_CURVE: Section = Section {
    stamped: false,
    ..Section::always("validation curve", run)
};

fn run(cx: &mut Context<'_>, r: &mut ProbeReport) {
    let (o, b) = (cx.o, cx.b);
    if o.validation_curve {
        let max_n = if o.quick { 6144 } else { 8192 };
        let ns = grid(16, max_n, if o.quick { 3 } else { 4 });
        match crate::measure::dtlb::DataChains::new(
            max_n + 64,
            crate::chase::Layout::PerPage { stride: 1 },
            crate::chase::Order::Random(b.seed),
            sys::Thp::Never,
        ) {
            Ok(mut inst) => {
                r.random_sweep = sweep(&mut inst, &ns, b.reps, b.window_ns, b.seed ^ 0x7a)
            }
            Err(e) => r
                .errors
                .push(format!("cannot map the validation chains: {e}")),
        }
    }
}
