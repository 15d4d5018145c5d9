//! Any text given as a workload spec: a workload whose first records come out, or one error
//! message, never a panic. Generators may hold 64 MiB here (`workloads::memory`), far below
//! libFuzzer's 2 GiB limit: a spec that needs more must be refused before it allocates.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tlblab_trace::source::RecordSource;
use tlblab_trace::workloads::{build, parse_spec};

fuzz_target!(|data: &[u8]| {
    let Ok(spec) = std::str::from_utf8(data) else {
        return;
    };
    tlblab_trace::workloads::memory::set_budget(64 << 20);
    let Ok((name, params)) = parse_spec(spec) else {
        return;
    };
    if let Ok(mut w) = build(&name, &params, 1) {
        let mut out = Vec::new();
        let _ = w.fill(&mut out, 256);
    }
});
