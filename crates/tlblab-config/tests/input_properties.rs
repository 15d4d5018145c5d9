//! The stable half of the fuzzing of machine files and workload specs (the cargo-fuzz targets
//! `machine` and `workload` in fuzz/ need nightly): presets with one number replaced by any
//! value, and workload specs of any catalog name with any values, give a machine or workload,
//! or one error message, never a panic or an allocation failure (issue 88).

use proptest::prelude::*;
use tlblab_config::{parse_machine_json, parse_machine_toml, PRESETS};
use tlblab_core::{RunOptions, System};
use tlblab_trace::workloads::{build, catalog, parse_spec};

/// Values that break assumptions: zero, one, powers of two around every width, the largest.
fn wild() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..70_000).prop_map(|v| v.to_string()),
        (0u32..64).prop_map(|s| (1u64 << s).to_string()),
        (0u32..64).prop_map(|s| ((1u64 << s) - 1).to_string()),
        Just(u64::MAX.to_string()),
        Just("-1".to_string()),
        Just("1e300".to_string()),
        Just("\"full\"".to_string()),
    ]
}

/// The byte ranges of the integer literals of `text` (after an `=`).
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'=' {
            let mut j = i + 1;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            let s = j;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'_') {
                j += 1;
            }
            if j > s {
                out.push((s, j));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Builds a machine that validated, when it is small enough for a test's memory (the limit
/// itself allows gigabytes, which `machine_limits.rs` covers without allocating).
fn build_small(cfg: tlblab_core::MachineConfig) {
    let small = cfg.tlbs.iter().all(|t| t.entries <= 1 << 16)
        && cfg.caches.iter().all(|c| c.size <= 64 << 20)
        && cfg.memory.bytes <= 1 << 40;
    if small {
        let _ = System::new(cfg, RunOptions::default());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Given a preset with one number replaced by any value, when parsed (TOML and the same
    /// machine as JSON), then a machine or an error naming a field, never a panic.
    #[test]
    fn a_preset_with_any_number_replaced_parses_or_names_a_field(
        preset in 0..PRESETS.len(), which in any::<prop::sample::Index>(), value in wild()
    ) {
        let (name, text) = PRESETS[preset];
        let spots = numbers(text);
        let (s, e) = spots[which.index(spots.len())];
        let mutated = format!("{}{}{}", &text[..s], value, &text[e..]);
        match parse_machine_toml(&mutated, name) {
            Ok(cfg) => {
                let json = serde_json::to_string(&cfg).unwrap();
                prop_assert!(parse_machine_json(&json, "<machine>").is_ok());
                build_small(cfg);
            }
            Err(msg) => {
                prop_assert!(msg.starts_with(name) && !msg.contains('\n'), "{}", msg);
            }
        }
    }

    /// Given any catalog workload with any of its parameters set, when built and its first
    /// records read, then records or one error message, never a panic. The address-stream
    /// workloads take any value; the others, whose parameters size tables or are exponents (a
    /// graph's `scale`), take 0..=16 here, and any value in the nightly `workload` fuzz target.
    #[test]
    fn any_workload_spec_builds_or_says_why(
        w in any::<prop::sample::Index>(),
        picks in prop::collection::vec((any::<prop::sample::Index>(), wild(), 0u64..=16), 0..4),
    ) {
        let all = catalog();
        let info = &all[w.index(all.len())];
        let open = matches!(info.name, "random" | "sequential" | "strided");
        let mut items: Vec<String> = Vec::new();
        for (p, v, small) in &picks {
            if info.params.is_empty() {
                break;
            }
            let value = if open && v.bytes().all(|b| b.is_ascii_digit()) { v.clone() } else { small.to_string() };
            let key = info.params[p.index(info.params.len())].0;
            if !items.iter().any(|i| i.starts_with(&format!("{key}="))) {
                items.push(format!("{key}={value}"));
            }
        }
        let spec = if items.is_empty() {
            info.name.to_string()
        } else {
            format!("{}:{}", info.name, items.join(","))
        };
        let (name, params) = parse_spec(&spec).unwrap();
        if let Ok(mut src) = build(&name, &params, 1) {
            let mut out = Vec::new();
            let _ = src.fill(&mut out, 256);
        }
    }
}
