//! Warm-up and region of interest (`System::set_warmup`, issue 47): a run of W + S references
//! with a warm-up of W reports exactly what a plain run of W + S references and a plain run of
//! W references differ by, in every counter (every core, thread and process, the OS counters,
//! the jobs and phases that ended, the machine's time). The difference is taken here on the
//! JSON of the two plain runs, number by number, independently of `Stats::since`.

use serde_json::Value;
use tlblab_core::{RunOptions, System};
use tlblab_trace::workloads;

fn run(machine: &str, spec: &str, opts: RunOptions, warmup: u64) -> (Value, bool) {
    let cfg = tlblab_config::load_machine(machine).unwrap();
    let (name, params) = workloads::parse_spec(spec).unwrap();
    let mut src = workloads::build(&name, &params, 3).unwrap();
    let mut sys = System::new(cfg, opts).unwrap();
    sys.set_warmup(warmup);
    sys.run(&mut src).unwrap();
    (serde_json::to_value(sys.stats()).unwrap(), sys.roi_begun())
}

/// `a - b` for two runs' statistics: numbers subtract, objects go key by key (a unit that `b`
/// lacks counts whole), the lists of jobs and phases keep what `a` has beyond `b`'s.
fn diff(a: &Value, b: Option<&Value>, key: &str) -> Value {
    match (a, b) {
        (_, None) => a.clone(),
        (Value::Number(x), Some(Value::Number(y))) => {
            let (x, y) = (x.as_u64().unwrap(), y.as_u64().unwrap());
            assert!(x >= y, "{key}: {x} < {y}: not a counter");
            Value::from(x - y)
        }
        (Value::Object(m), Some(Value::Object(n))) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), diff(v, n.get(k), k)))
                .collect(),
        ),
        (Value::Array(x), Some(Value::Array(y))) if key == "jobs" || key == "phases" => {
            Value::Array(x[y.len()..].to_vec())
        }
        (Value::Array(x), Some(Value::Array(y))) => {
            assert_eq!(x.len(), y.len(), "{key}: lists of different lengths");
            Value::Array(
                x.iter()
                    .zip(y)
                    .map(|(p, q)| diff(p, Some(q), key))
                    .collect(),
            )
        }
        _ => {
            assert_eq!(Some(a), b, "{key}");
            a.clone()
        }
    }
}

fn check(machine: &str, spec: &str, base: RunOptions, w: u64, s: u64) {
    let limited = |n: u64| RunOptions {
        max_references: n,
        ..base
    };
    let (whole, _) = run(machine, spec, limited(w + s), 0);
    let (first, _) = run(machine, spec, limited(w), 0);
    let (mut roi, begun) = run(machine, spec, limited(w + s), w);
    assert!(
        begun,
        "{machine} {spec}: the region of interest never began"
    );
    let warm = roi
        .as_object_mut()
        .unwrap()
        .remove("warmup")
        .expect("a warmup block");
    assert_eq!(warm["references"], first["total"]["references"], "{spec}");
    assert_eq!(warm["cycles"], first["cycles"], "{spec}");
    let expected = diff(&whole, Some(&first), "");
    assert!(
        roi == expected,
        "{machine} {spec} W={w} S={s}: the region of interest is not the difference of two runs:\n{}",
        first_difference(&roi, &expected, "")
    );
    assert!(roi["total"]["references"].as_u64().unwrap() >= s, "{spec}");
}

fn first_difference(a: &Value, b: &Value, at: &str) -> String {
    match (a, b) {
        (Value::Object(m), Value::Object(n)) => {
            for (k, v) in m {
                if n.get(k) != Some(v) {
                    return first_difference(
                        v,
                        n.get(k).unwrap_or(&Value::Null),
                        &format!("{at}.{k}"),
                    );
                }
            }
            format!("{at}: keys differ")
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if p != q {
                    return first_difference(p, q, &format!("{at}[{i}]"));
                }
            }
            unreachable!()
        }
        _ => format!("{at}: warm-up run {a}, difference of runs {b}"),
    }
}

/// Given one thread's random loads over more pages than the TLBs hold on zen3 (full model:
/// walks through the caches, data accesses), when warmed up for an odd count, then the region
/// of interest is the difference of two plain runs (the fast lanes stop and resume at W).
#[test]
fn one_thread_full_model_roi_is_the_difference_of_two_runs() {
    let opts = RunOptions::default();
    check(
        "zen3",
        "random:pages=8192,accesses=40000",
        opts,
        12_345,
        20_001,
    );
    check(
        "zen3",
        "gups:log2_words=16,updates=8000",
        opts,
        7_777,
        5_000,
    );
    check(
        "zen3",
        "strided:pages=3000,stride=4096,rounds=4",
        RunOptions::tlb_only(0),
        4_999,
        3_000,
    );
}

/// Given two threads on two cores (the multi-core timeline, queued accesses at W) and a
/// workload whose events (context switches between processes) come inside the warm-up and the
/// region of interest, then the same holds.
#[test]
fn timeline_and_events_roi_is_the_difference_of_two_runs() {
    let opts = RunOptions::default();
    check(
        "zen3",
        "random:pages=2048,accesses=30000,threads=2",
        opts,
        9_001,
        10_000,
    );
    check(
        "zen3",
        "random:pages=2048,accesses=30000,threads=2,slice=64",
        RunOptions::no_caches(0),
        5_003,
        12_000,
    );
    check("sa1100", "lat_ctx:procs=4", opts, 3_001, 6_000);
}

/// Given a warm-up longer than the workload, then the region of interest never begins (the
/// binding turns that into an error naming `--warmup`).
#[test]
fn a_warmup_past_the_end_never_begins_the_roi() {
    let (_, begun) = run(
        "zen3",
        "random:pages=64,accesses=100",
        RunOptions::default(),
        101,
    );
    assert!(!begun);
    let (stats, begun) = run(
        "zen3",
        "random:pages=64,accesses=100",
        RunOptions::default(),
        100,
    );
    assert!(
        begun,
        "a warm-up of the whole run leaves an empty region of interest"
    );
    assert_eq!(stats["total"]["references"], 0);
}

/// `populate=1` (seed 001's initialisation before the measured phase): the population maps
/// every page of the regions, so the region of interest it begins has no first-touch fault,
/// its warm-up is one reference per page of the regions, and the measured phase is the
/// workload's own references (as many as the run without population).
#[test]
fn a_populated_workloads_region_of_interest_has_no_first_touch() {
    let spec = "gups:log2_words=14,updates=3000";
    let (plain, plain_roi) = run("zen3", spec, RunOptions::default(), 0);
    assert!(!plain_roi);
    assert!(plain["total"]["page_faults"].as_u64().unwrap() > 0);
    let (populated, roi) = run(
        "zen3",
        &format!("{spec},populate=1"),
        RunOptions::default(),
        0,
    );
    assert!(roi, "the population begins the region of interest");
    assert_eq!(populated["total"]["page_faults"], 0);
    let table_pages = (8u64 << 14) / 4096;
    assert_eq!(populated["warmup"]["references"], table_pages);
    assert_eq!(
        populated["total"]["references"],
        plain["total"]["references"]
    );
}
