//! Machines no host can simulate, and errors in a machine given as one-line JSON (a Python
//! dict): refused with one message naming the field, before anything is allocated (issue 88).

use tlblab_config::{parse_machine_json, parse_machine_toml, preset_text, MAX_STATE_BYTES_TEXT};

fn zen3_with(from: &str, to: &str) -> String {
    let zen3 = preset_text("zen3").unwrap();
    let out = zen3.replacen(from, to, 1);
    assert_ne!(out, zen3, "zen3 no longer has `{from}`");
    out
}

/// Given zen3 with an L2 DTLB of 10^12 or 2^32 entries, when loaded, then one message names
/// the level and the bytes it would take (the process once aborted on the allocation).
#[test]
fn an_oversized_tlb_is_refused_naming_the_level_and_its_bytes() {
    for entries in ["1000000000000", "4294967296"] {
        let text = zen3_with("entries = 2048", &format!("entries = {entries}"));
        let e = parse_machine_toml(&text, "big.toml").unwrap_err();
        assert!(
            e.starts_with("big.toml: tlb[L2D].entries: the simulator would need "),
            "{e}"
        );
        assert!(
            e.contains(" bytes for it ") && e.contains(MAX_STATE_BYTES_TEXT),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
}

/// Given caches, page-walk caches and memory beyond any host, then each is named.
#[test]
fn oversized_caches_pwcs_and_memory_are_refused_by_field() {
    let cases = [
        (
            "bytes = 68719476736",
            "bytes = 4611686018427387904",
            "memory.bytes",
        ),
        (
            "entries = 64\nways = 4",
            "entries = 68719476736\nways = 4",
            "walker.pwc[level",
        ),
    ];
    for (from, to, field) in cases {
        let e = parse_machine_toml(&zen3_with(from, to), "m.toml").unwrap_err();
        assert!(e.starts_with(&format!("m.toml: {field}")), "{e}");
    }
    let zen3 = preset_text("zen3").unwrap();
    let l3 = zen3.find("name = \"L3\"").unwrap();
    let size = l3 + zen3[l3..].find("size = ").unwrap();
    let end = size + zen3[size..].find('\n').unwrap();
    let text = format!("{}size = 1099511627776{}", &zen3[..size], &zen3[end..]);
    let e = parse_machine_toml(&text, "m.toml").unwrap_err();
    assert!(
        e.starts_with("m.toml: cache[L3].size: the simulator would need"),
        "{e}"
    );
}

/// Given every preset, then none comes near the limit (the check refuses only the absurd).
#[test]
fn every_preset_is_far_below_the_limit() {
    for (name, text) in tlblab_config::PRESETS {
        let m = parse_machine_toml(text, name).unwrap();
        let mut big = m.clone();
        for t in &mut big.tlbs {
            t.entries *= 64;
            t.ways = tlblab_core::tlb::Ways::N(t.ways());
        }
        assert!(big.validate().is_ok(), "{name} x64: {:?}", big.validate());
    }
}

fn zen3_json_one_line() -> serde_json::Value {
    let m = parse_machine_toml(preset_text("zen3").unwrap(), "zen3").unwrap();
    serde_json::to_value(&m).unwrap()
}

/// Given a machine as one-line JSON (a Python dict) with a bad value, an unknown key or an
/// oversized level, then the error names the key as the user wrote it, not a column.
#[test]
fn one_line_json_errors_name_the_users_key() {
    let mut v = zen3_json_one_line();
    v["tlb"][3]["entries"] = serde_json::json!("lots");
    let e = parse_machine_json(&v.to_string(), "<machine>").unwrap_err();
    assert!(
        e.starts_with("<machine>: tlb[L2D].entries: invalid type: string \"lots\""),
        "{e}"
    );

    let mut v = zen3_json_one_line();
    v["cache"][1]["wayz"] = serde_json::json!(8);
    let e = parse_machine_json(&v.to_string(), "<machine>").unwrap_err();
    assert!(
        e.starts_with("<machine>: cache[L1D].wayz: unknown field `wayz`"),
        "{e}"
    );

    let mut v = zen3_json_one_line();
    v["memory"]["bytes"] = serde_json::json!(-5);
    let e = parse_machine_json(&v.to_string(), "<machine>").unwrap_err();
    assert!(
        e.starts_with("<machine>: memory.bytes: invalid value: integer `-5`"),
        "{e}"
    );

    let mut v = zen3_json_one_line();
    v["tlb"][3]["entries"] = serde_json::json!(1u64 << 32);
    let e = parse_machine_json(&v.to_string(), "<machine>").unwrap_err();
    assert!(
        e.starts_with("<machine>: tlb[L2D].entries: the simulator would need"),
        "{e}"
    );
}

/// Given a JSON file of several lines, then its line and column stay beside the key.
#[test]
fn multi_line_json_errors_keep_line_and_column() {
    let mut v = zen3_json_one_line();
    v["tlb"][0]["latency"] = serde_json::json!(true);
    let text = serde_json::to_string_pretty(&v).unwrap();
    let e = parse_machine_json(&text, "host.json").unwrap_err();
    let line = 1 + text[..text.find("\"latency\": true").unwrap()]
        .matches('\n')
        .count();
    assert!(e.starts_with(&format!("host.json:{line}:")), "{e}");
    assert!(
        e.contains(": tlb[L1I].latency: invalid type: boolean"),
        "{e}"
    );
    // A value serde reads whole before it can tell (`ways`, an integer or "full") is named
    // by its level: the error comes at the level's end.
    let mut v = zen3_json_one_line();
    v["tlb"][0]["ways"] = serde_json::json!("many");
    let e = parse_machine_json(&v.to_string(), "<machine>").unwrap_err();
    assert!(e.starts_with("<machine>: tlb[L1I]: "), "{e}");
}

/// Given Linux's ARMv7 table layout on an x86-64 machine, or a layout of no name on the
/// Cortex-A7, then one message names `page_table.layout`, what was found and what is expected.
#[test]
fn a_table_layout_of_another_format_or_no_name_is_refused() {
    let text = zen3_with("[page_table]\n", "[page_table]\nlayout = \"linux_armv7\"\n");
    let e = parse_machine_toml(&text, "m.toml").unwrap_err();
    assert!(
        e.starts_with("m.toml: page_table.layout: linux_armv7 "),
        "{e}"
    );
    assert!(
        e.contains("x86_64_4level") && e.contains("own_frame"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    let a7 = preset_text("cortex-a7").unwrap();
    let text = a7.replacen("layout = \"linux_armv7\"", "layout = \"linux\"", 1);
    assert_ne!(text, a7);
    let e = parse_machine_toml(&text, "a7.toml").unwrap_err();
    assert!(e.starts_with("a7.toml"), "{e}");
    assert!(
        e.contains("linux") && e.contains("own_frame") && e.contains("linux_armv7"),
        "{e}"
    );
}
