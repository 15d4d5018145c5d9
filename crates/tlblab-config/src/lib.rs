//! tlblab-config: machine presets and configuration files.
//!
//! A machine is described in TOML (or JSON) that deserializes into `tlblab_core::MachineConfig`.
//! The built-in presets in `presets/*.toml` are compiled in, so `--machine zen3` works anywhere;
//! any other argument is read as a file path. Errors name the file, the line and column, and the
//! field: `host.toml:14:8: tlb[L1D].ways: 64 entries are not divisible by 5 ways`.

pub mod checkpoint;

use tlblab_core::MachineConfig;

/// The built-in machine presets: (name, TOML text).
pub const PRESETS: &[(&str, &str)] = &[
    ("zen3", include_str!("../../../presets/zen3.toml")),
    ("zen3-virt", include_str!("../../../presets/zen3-virt.toml")),
    ("champsim", include_str!("../../../presets/champsim.toml")),
    ("cortex-a7", include_str!("../../../presets/cortex-a7.toml")),
    ("gem5-a7", include_str!("../../../presets/gem5-a7.toml")),
    ("cortex-a9", include_str!("../../../presets/cortex-a9.toml")),
    ("sa1100", include_str!("../../../presets/sa1100.toml")),
    (
        "xeon-e5-2650",
        include_str!("../../../presets/xeon-e5-2650.toml"),
    ),
];

pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

pub fn preset_text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Line and column (1-based) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map(|i| offset - i).unwrap_or(offset + 1);
    (line, col)
}

/// How the validation's size limit reads in its message (`MachineConfig::validate`).
pub const MAX_STATE_BYTES_TEXT: &str = "more than the 8 GiB a machine may take";

/// Parses a machine description from TOML text; `origin` names it in errors.
pub fn parse_machine_toml(text: &str, origin: &str) -> Result<MachineConfig, String> {
    let cfg: MachineConfig = toml::from_str(text).map_err(|e| {
        let msg = plain_types(&e.message().trim().replace('\n', " "));
        match e.span() {
            Some(span) => {
                let (l, c) = line_col(text, span.start);
                format!("{origin}:{l}:{c}: {msg}")
            }
            None => format!("{origin}: {msg}"),
        }
    })?;
    cfg.validate().map_err(|m| format!("{origin}: {m}"))?;
    Ok(cfg)
}

/// Serde's messages name Rust types ("invalid value: integer `-1`, expected usize"); a user
/// wrote a TOML or JSON value and needs the range in words. Replaces `expected <type>` for
/// the integer and float types with what they accept.
pub fn plain_types(msg: &str) -> String {
    const WORDS: [(&str, &str); 12] = [
        ("u8", "an integer from 0 to 255"),
        ("u16", "an integer from 0 to 65535"),
        ("u32", "an integer from 0 to 4294967295"),
        ("u64", "a non-negative integer"),
        ("usize", "a non-negative integer"),
        ("u128", "a non-negative integer"),
        ("i8", "an integer from -128 to 127"),
        ("i16", "an integer from -32768 to 32767"),
        ("i32", "an integer from -2147483648 to 2147483647"),
        ("i64", "an integer"),
        ("f32", "a number"),
        ("f64", "a number"),
    ];
    let mut out = msg.to_string();
    for (ty, words) in WORDS {
        let pat = format!("expected {ty}");
        let mut from = 0;
        while let Some(i) = out[from..].find(&pat).map(|i| i + from) {
            let end = i + pat.len();
            let next = out[end..].chars().next();
            if next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                from = end;
                continue;
            }
            out.replace_range(i..end, &format!("expected {words}"));
            from = i;
        }
    }
    out
}

/// Parses a machine description from JSON text. An error names the key it is at
/// (`tlb[L2D].entries`), as the user wrote it; the line and column too when the text has more
/// than one line: a one-line text is a serialisation (Python's dict, `json.dumps`), whose
/// columns point into nothing the user wrote (issue 88: "<machine>:1:271").
pub fn parse_machine_json(text: &str, origin: &str) -> Result<MachineConfig, String> {
    let cfg: MachineConfig = serde_json::from_str(text).map_err(|e| {
        // serde_json appends " at line L column C"; the prefix says it once.
        let full = e.to_string();
        let msg = match full.rfind(" at line ") {
            Some(i) => &full[..i],
            None => &full,
        };
        let offset = offset_of(text, e.line(), e.column());
        let path = json_path_at(text, offset);
        let at = if path.is_empty() {
            String::new()
        } else {
            format!("{path}: ")
        };
        if text.trim_end().contains('\n') {
            format!(
                "{origin}:{}:{}: {at}{}",
                e.line(),
                e.column(),
                plain_types(msg)
            )
        } else {
            format!("{origin}: {at}{}", plain_types(msg))
        }
    })?;
    cfg.validate().map_err(|m| format!("{origin}: {m}"))?;
    Ok(cfg)
}

/// The byte offset of serde_json's 1-based line and column (0: before the text).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (start + column).min(text.len())
}

/// The key path of the JSON value being read at byte `offset` of `text`, as the validation's
/// messages name fields: `tlb[L2D].entries` (an element of `tlb`, `cache` or `pwc` by its
/// `name` where it has one, else by its index: `walker.pwc[0].entries`). A scan that tracks
/// each open object's current key and each open array's index; the text need not be valid
/// JSON (the error may be a syntax error), so it stops quietly where it stops making sense.
pub fn json_path_at(text: &str, offset: usize) -> String {
    enum Frame {
        Obj {
            key: Option<String>,
            expect_key: bool,
        },
        Arr {
            index: usize,
        },
    }
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() && i < offset {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(bytes.len());
                if let Some(Frame::Obj { key, expect_key }) = stack.last_mut() {
                    if *expect_key {
                        *key = serde_json::from_str::<String>(
                            &text[start - 1..(end + 1).min(text.len())],
                        )
                        .ok()
                        .or_else(|| Some(text[start..end].to_string()));
                        *expect_key = false;
                    }
                }
                i = end + 1;
                continue;
            }
            b'{' => stack.push(Frame::Obj {
                key: None,
                expect_key: true,
            }),
            b'[' => stack.push(Frame::Arr { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Arr { index }) => *index += 1,
                Some(Frame::Obj { expect_key, .. }) => *expect_key = true,
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    // Name array elements by their `name` where the text parses (it did up to the error for
    // syntax; for a type or validation error it parses whole).
    let value: Option<serde_json::Value> = serde_json::from_str(text).ok();
    let mut node = value.as_ref();
    let mut path = String::new();
    for f in &stack {
        match f {
            Frame::Obj { key: Some(k), .. } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                node = node.and_then(|n| n.get(k.as_str()));
            }
            Frame::Obj { key: None, .. } => break,
            Frame::Arr { index } => {
                let el = node.and_then(|n| n.get(*index));
                match el.and_then(|e| e.get("name")).and_then(|n| n.as_str()) {
                    Some(name) => path.push_str(&format!("[{name}]")),
                    None => path.push_str(&format!("[{index}]")),
                }
                node = el;
            }
        }
    }
    path
}

/// Loads a machine by preset name or file path (.toml or .json).
pub fn load_machine(name_or_path: &str) -> Result<MachineConfig, String> {
    if let Some(text) = preset_text(name_or_path) {
        return parse_machine_toml(text, &format!("preset {name_or_path}"));
    }
    let path = std::path::Path::new(name_or_path);
    if !path.exists() {
        return Err(format!(
            "machine '{name_or_path}' is neither a preset ({}) nor an existing file",
            preset_names().join(", ")
        ));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("{name_or_path}: cannot read: {e}"))?;
    if path.extension().is_some_and(|e| e == "json") {
        parse_machine_json(&text, name_or_path)
    } else {
        parse_machine_toml(&text, name_or_path)
    }
}

/// Serializes a machine to TOML (for `probe --out` and for saving an experiment's machine).
pub fn machine_to_toml(cfg: &MachineConfig) -> Result<String, String> {
    toml::to_string_pretty(cfg).map_err(|e| format!("cannot serialize machine '{}': {e}", cfg.name))
}

/// The format of a machine file, by its name: JSON for a `.json` name, TOML otherwise (the
/// format of `presets/*.toml`), as `load_machine` reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachineFileFormat {
    Toml,
    Json,
}

impl MachineFileFormat {
    /// The format `load_machine` reads a file named `path` in.
    pub fn of_path(path: &str) -> MachineFileFormat {
        if std::path::Path::new(path)
            .extension()
            .is_some_and(|e| e == "json")
        {
            MachineFileFormat::Json
        } else {
            MachineFileFormat::Toml
        }
    }
}

/// The text of a machine file (a preset: `tlblab probe --out HOST.toml|.json`), validated first
/// so that nothing is written that `load_machine` would refuse; it parses back to `cfg`
/// (`machine_files_round_trip`). JSON is indented by two spaces, with a final newline.
pub fn machine_file_text(cfg: &MachineConfig, format: MachineFileFormat) -> Result<String, String> {
    cfg.validate()
        .map_err(|m| format!("machine '{}': {m}", cfg.name))?;
    match format {
        MachineFileFormat::Toml => machine_to_toml(cfg),
        MachineFileFormat::Json => serde_json::to_string_pretty(cfg)
            .map(|t| t + "\n")
            .map_err(|e| format!("cannot serialize machine '{}': {e}", cfg.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Given every preset and a machine with fields a probe writes (random replacement, fewer
    /// modelled ways than hardware ways), when
    /// written as a machine file of either format and parsed back, then it is the same machine.
    #[test]
    fn machine_files_round_trip() {
        let mut machines: Vec<MachineConfig> = PRESETS
            .iter()
            .map(|(n, _)| load_machine(n).unwrap())
            .collect();
        let probed = preset_text("zen3").unwrap().replacen(
            "entries = 2048\nways = 16",
            "entries = 1536\nways = 12\nhardware_ways = 16\nreplacement = \"random\"",
            1,
        );
        let probed = parse_machine_toml(&probed, "probed").unwrap();
        assert_eq!(
            probed.tlbs[3].hardware_ways,
            Some(16),
            "the L2D is the fourth level"
        );
        machines.push(probed);
        for m in &machines {
            for (format, name) in [
                (MachineFileFormat::Toml, "host.toml"),
                (MachineFileFormat::Json, "host.json"),
            ] {
                assert_eq!(MachineFileFormat::of_path(name), format);
                let text = machine_file_text(m, format).unwrap();
                let back = match format {
                    MachineFileFormat::Toml => parse_machine_toml(&text, name),
                    MachineFileFormat::Json => parse_machine_json(&text, name),
                }
                .unwrap_or_else(|e| panic!("{}: {e}", m.name));
                assert_eq!(&back, m, "{} as {name}", m.name);
            }
        }
    }

    #[test]
    fn an_invalid_machine_is_not_written() {
        let mut m = load_machine("zen3").unwrap();
        m.tlbs[0].entries = 0;
        let e = machine_file_text(&m, MachineFileFormat::Json).unwrap_err();
        assert!(e.starts_with("machine 'zen3': "), "{e}");
    }

    #[test]
    fn messages_say_the_expected_range_in_words_not_rust_types() {
        let zen3 = preset_text("zen3").unwrap();
        let bad = zen3.replacen("entries = 64", "entries = -1", 1);
        assert_ne!(bad, zen3, "the preset no longer has `entries = 64`");
        let e = parse_machine_toml(&bad, "m.toml").unwrap_err();
        assert!(e.contains("expected a non-negative integer"), "{e}");
        assert!(!e.contains("usize") && !e.contains("u64"), "{e}");
        assert_eq!(
            plain_types("invalid type: string \"x\", expected u8"),
            "invalid type: string \"x\", expected an integer from 0 to 255"
        );
        assert_eq!(plain_types("expected u8x"), "expected u8x");
    }

    #[test]
    fn every_preset_file_is_built_in_and_valid() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let mut names: Vec<String> = preset_names().iter().map(|s| s.to_string()).collect();
        names.sort();
        assert_eq!(files, names, "presets/ and PRESETS disagree");
        for (name, _) in PRESETS {
            let m = load_machine(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&m.name, name);
            for t in &m.tlbs {
                assert!(!t.source.is_empty(), "{name}: tlb {} has no source", t.name);
            }
            for c in &m.caches {
                assert!(
                    !c.source.is_empty(),
                    "{name}: cache {} has no source",
                    c.name
                );
            }
        }
    }

    #[test]
    fn presets_round_trip_through_toml() {
        for (name, _) in PRESETS {
            let m = load_machine(name).unwrap();
            let text = machine_to_toml(&m).unwrap();
            let back = parse_machine_toml(&text, "roundtrip").unwrap();
            assert_eq!(m, back, "{name}");
        }
    }

    /// The error of the zen3 preset with `from` replaced by `to`, read as host.toml.
    fn zen3_error(from: &str, to: &str) -> String {
        let text = preset_text("zen3").unwrap().replace(from, to);
        parse_machine_toml(&text, "host.toml").unwrap_err()
    }

    #[test]
    fn an_unknown_field_names_file_line_and_column() {
        let e = zen3_error("entries = 2048", "entriez = 2048");
        assert!(e.starts_with("host.toml:"), "{e}");
        assert!(e.contains("unknown field `entriez`"), "{e}");
    }

    #[test]
    fn an_impossible_geometry_names_the_field() {
        let e = zen3_error("entries = 2048\nways = 16", "entries = 2048\nways = 12");
        assert_eq!(
            e,
            "host.toml: tlb[L2D].ways: 2048 entries are not divisible by 12 ways"
        );
        let text = preset_text("zen3")
            .unwrap()
            .replace("replacement = \"random\"", "")
            .replace("ways = 16", "ways = 16\nreplacement = \"lfu\"");
        let e = parse_machine_toml(&text, "h.toml").unwrap_err();
        assert!(e.contains("unknown variant `lfu`"), "{e}");
    }

    #[test]
    fn hardware_ways_round_trip_and_are_at_least_the_modelled_ways() {
        // As `tlblab probe --out` writes a random-like L2 (docs/probe.md, Zen 4): 128 sets of the
        // 18 ways a random chain keeps, built with 24.
        let text = preset_text("zen3").unwrap().replace(
            "entries = 2048\nways = 16",
            "entries = 2304\nways = 18\nhardware_ways = 24",
        );
        let m = parse_machine_toml(&text, "host.toml").unwrap();
        let l2 = m.tlbs.iter().find(|t| t.name == "L2D").unwrap();
        assert_eq!(
            (l2.sets(), l2.ways(), l2.hardware_ways),
            (128, 18, Some(24))
        );
        let back = parse_machine_toml(&machine_to_toml(&m).unwrap(), "roundtrip").unwrap();
        assert_eq!(m, back);
        let fewer = text.replace("hardware_ways = 24", "hardware_ways = 16");
        assert_eq!(
            parse_machine_toml(&fewer, "host.toml").unwrap_err(),
            "host.toml: tlb[L2D].hardware_ways: expected at least the level's 18 ways on a \
             set-associative level, found 16"
        );
        let full = preset_text("zen3")
            .unwrap()
            .replace("ways = \"full\"", "ways = \"full\"\nhardware_ways = 64");
        let e = parse_machine_toml(&full, "host.toml").unwrap_err();
        assert!(e.contains("].hardware_ways: expected at least"), "{e}");
    }

    #[test]
    fn a_missing_file_says_what_was_looked_for() {
        let e = load_machine("/nonexistent/host.toml").unwrap_err();
        assert!(e.contains("neither a preset (zen3,"), "{e}");
    }
}
