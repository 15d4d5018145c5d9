//! Any text given as a machine file, TOML and JSON: a machine or one error message, never a
//! panic or an allocation failure; a machine that validates builds (its sizes were checked
//! before anything was allocated: issue 88).
#![no_main]
use libfuzzer_sys::fuzz_target;
use tlblab_config::{parse_machine_json, parse_machine_toml};
use tlblab_core::{RunOptions, System};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for cfg in [
        parse_machine_toml(text, "fuzz.toml"),
        parse_machine_json(text, "fuzz.json"),
    ]
    .into_iter()
    .flatten()
    {
        // Built when small: a machine near the limit (gigabytes) is allowed, and would only
        // slow the fuzzer (crates/tlblab-config/tests/machine_limits.rs covers the limit).
        let small = cfg.tlbs.iter().all(|t| t.entries <= 1 << 16)
            && cfg.caches.iter().all(|c| c.size <= 64 << 20)
            && cfg.memory.bytes <= 1 << 40;
        if small {
            let _ = System::new(cfg, RunOptions::tlb_only(0));
        }
    }
});
