//! Systematic sampling's units (`System::set_sample`, issue 59): each measured unit of a
//! sampled run reports exactly what the region of interest of a plain run warmed up to the
//! unit's first reference and stopped past its last reports (every core, thread and process,
//! the OS counters, jobs, phases, the machine's time), and sampling changes nothing else: the
//! sampled run ends with the plain run's statistics.

use serde_json::Value;
use tlblab_core::{RunOptions, System};
use tlblab_trace::workloads;

fn system(machine: &str, opts: RunOptions) -> System {
    System::new(tlblab_config::load_machine(machine).unwrap(), opts).unwrap()
}

fn source(spec: &str) -> Box<dyn tlblab_trace::source::RecordSource> {
    let (name, params) = workloads::parse_spec(spec).unwrap();
    workloads::build(&name, &params, 3).unwrap()
}

/// The region of interest [start, end) of a plain run, as JSON without its warm-up block.
fn window(machine: &str, spec: &str, base: RunOptions, start: u64, end: u64) -> Value {
    let mut sys = system(
        machine,
        RunOptions {
            max_references: end,
            ..base
        },
    );
    sys.set_warmup(start);
    if start == 0 {
        sys.begin_roi();
    }
    sys.run(&mut *source(spec)).unwrap();
    let mut v = serde_json::to_value(sys.stats()).unwrap();
    v.as_object_mut().unwrap().remove("warmup");
    v
}

#[allow(clippy::too_many_arguments)]
fn check(
    machine: &str,
    spec: &str,
    base: RunOptions,
    unit: u64,
    period: u64,
    offset: u64,
    head: u64,
) {
    let mut plain = system(machine, base);
    plain.run(&mut *source(spec)).unwrap();
    let total = plain.references();

    let mut sampled = system(machine, base);
    sampled.set_sample(unit, period, offset, head).unwrap();
    sampled.run(&mut *source(spec)).unwrap();
    assert_eq!(
        serde_json::to_value(sampled.stats()).unwrap(),
        serde_json::to_value(plain.stats()).unwrap(),
        "{machine} {spec}: sampling changed the run"
    );
    let units = sampled.sample_units();
    let start = |m: u64| {
        if m < head {
            m * unit
        } else {
            (head + offset + (m - head) * period) * unit
        }
    };
    let expected = (0..).map(start).take_while(|s| s + unit <= total).count();
    assert_eq!(units.len(), expected, "{machine} {spec}: measured units");
    assert!(expected >= 2, "{spec}: too short a case");
    for (m, got) in units.iter().enumerate() {
        let start = start(m as u64);
        let want = window(machine, spec, base, start, start + unit);
        let got = serde_json::to_value(got).unwrap();
        assert_eq!(got["total"]["references"], unit, "{spec}: unit {m}");
        assert!(
            got == want,
            "{machine} {spec}: unit {m} [{start}, {}) is not the plain run's window",
            start + unit
        );
    }
}

/// Given one thread's random loads on zen3 (full model; the lanes stop and resume at every
/// mark; a head of two units measured in full, then every third unit), TLB-only strided references, and two threads on two cores (the timeline's queues),
/// then every measured unit is the plain run's window and the run ends unchanged.
#[test]
fn measured_units_are_the_plain_runs_windows() {
    check(
        "zen3",
        "random:pages=8192,accesses=40000",
        RunOptions::default(),
        3_001,
        3,
        1,
        2,
    );
    check(
        "zen3",
        "strided:pages=3000,stride=4096,rounds=4",
        RunOptions::tlb_only(0),
        997,
        4,
        0,
        0,
    );
    check(
        "zen3",
        "random:pages=2048,accesses=30000,threads=2",
        RunOptions::default(),
        2_500,
        2,
        1,
        1,
    );
    let limited = RunOptions {
        max_references: 9_000,
        ..RunOptions::default()
    };
    check("sa1100", "lat_ctx:procs=4", limited, 700, 1, 0, 0);
}

/// Given a warm-up set before the sample, then the region of interest begins at the warm-up's
/// end and the units are counted from there.
#[test]
fn units_count_from_the_warmups_end() {
    let spec = "random:pages=4096,accesses=20000";
    let mut sys = system("zen3", RunOptions::default());
    sys.set_warmup(5_000);
    sys.set_sample(1_000, 5, 2, 0).unwrap();
    sys.run(&mut *source(spec)).unwrap();
    assert_eq!(sys.stats().warmup.unwrap().references, 5_000);
    assert_eq!(sys.sample_units().len(), 3);
    assert_eq!(
        serde_json::to_value(&sys.sample_units()[1]).unwrap(),
        window("zen3", spec, RunOptions::default(), 12_000, 13_000)
    );
}

/// Given units that end exactly where the run ends, by the records' end or by
/// `max_references`, then the last unit is measured too.
#[test]
fn a_unit_ending_with_the_run_is_measured() {
    let spec = "random:pages=4096,accesses=20000";
    for limit in [0, 15_000] {
        let opts = RunOptions {
            max_references: limit,
            ..RunOptions::default()
        };
        let mut sys = system("zen3", opts);
        sys.set_sample(1_000, 1, 0, 0).unwrap();
        sys.run(&mut *source(spec)).unwrap();
        let expected = if limit == 0 { 20 } else { 15 };
        assert_eq!(sys.sample_units().len(), expected, "limit {limit}");
    }
}

#[test]
fn bad_sample_parameters_are_refused() {
    let mut sys = system("zen3", RunOptions::default());
    for (u, p, o) in [(0, 1, 0), (10, 0, 0), (10, 4, 4)] {
        let e = sys.set_sample(u, p, o, 1).unwrap_err();
        assert!(e.0.contains("expected unit > 0"), "{}", e.0);
    }
}
