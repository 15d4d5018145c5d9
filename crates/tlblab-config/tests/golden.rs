//! Golden snapshots: the full statistics of a few tiny workloads on the presets, committed as
//! JSON. Any change in any number fails here and must be reviewed; regenerate deliberately with
//! `UPDATE_GOLDEN=1 cargo test -p tlblab-config --test golden` and review the diff.

use std::path::PathBuf;
use tlblab_core::{RunOptions, System};
use tlblab_trace::workloads;

const CASES: &[(&str, &str)] = &[
    ("zen3", "strided:pages=80,stride=4096,rounds=3"),
    ("zen3", "random:pages=512,accesses=2000"),
    ("cortex-a9", "chase:pages=300,accesses=3000"),
    ("sa1100", "sequential:bytes=64k,rounds=2"),
    ("xeon-e5-2650", "strided:pages=10,stride=65536,rounds=4"),
    ("cortex-a7", "random:pages=300,accesses=1500,threads=3"),
];

fn run(machine: &str, spec: &str) -> String {
    let cfg = tlblab_config::load_machine(machine).unwrap();
    let (name, params) = workloads::parse_spec(spec).unwrap();
    let mut src = workloads::build(&name, &params, 1).unwrap();
    let mut sys = System::new(
        cfg,
        RunOptions {
            seed: 1,
            ..RunOptions::default()
        },
    )
    .unwrap();
    sys.run(&mut src).unwrap();
    serde_json::to_string_pretty(&sys.stats()).unwrap() + "\n"
}

#[test]
fn stats_match_the_committed_snapshots() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut failures = Vec::new();
    for (machine, spec) in CASES {
        let file = dir.join(format!(
            "{machine}__{}.json",
            spec.replace([':', ',', '='], "_")
        ));
        let got = run(machine, spec);
        if update {
            std::fs::write(&file, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&file)
            .unwrap_or_else(|_| panic!("missing snapshot {}", file.display()));
        if got != want {
            failures.push(file.display().to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "stats changed for: {failures:?} (review, then UPDATE_GOLDEN=1)"
    );
}

#[test]
fn the_same_seed_gives_the_same_numbers_bit_for_bit() {
    for (machine, spec) in CASES {
        assert_eq!(run(machine, spec), run(machine, spec));
    }
}
