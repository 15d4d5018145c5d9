//! Runs the probe's data-TLB sections on a simulated host and prints the summary:
//! `cargo run --release -p tlblab-probe --example simulated -- PRESET [quick|full] [SEED] [none|vm] [REPS] [TRIALS]`.
use tlblab_probe::measure::simulated::Noise;
use tlblab_probe::probe::{run_simulated, ProbeOptions};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let m = tlblab_config::load_machine(a.get(1).map_or("zen3", |s| s)).unwrap();
    let quick = a.get(2).is_none_or(|s| s == "quick");
    let seed = a.get(3).map_or(1, |s| s.parse().unwrap());
    let noise = if a.get(4).is_some_and(|s| s == "none") {
        Noise::NONE
    } else {
        Noise::VM
    };
    let t = std::time::Instant::now();
    let reps = a.get(5).map(|s| s.parse().unwrap());
    let trials = a.get(6).map(|s| s.parse().unwrap());
    let o = ProbeOptions {
        quick,
        seed,
        reps,
        trials,
        ..Default::default()
    };
    let r = run_simulated(&m, noise, &o).unwrap();
    for s in &r.summary {
        println!(
            "{}: {:?} [{:?}] cpuid {:?}\n    {}",
            s.name, s.value, s.confidence, s.cpuid, s.note
        );
    }
    for l in &r.dtlb_levels {
        println!(
            "level: entries {} trials {:?} onset {} mid {}",
            l.entries, l.trials, l.onset, l.midpoint
        );
    }
    if let Some(si) = &r.l2_set_index {
        println!("set index: {}", serde_json::to_string(si).unwrap());
    }
    if std::env::var("SWEEP").is_ok() {
        for row in &r.dtlb_sweep {
            println!(
                "{:6} test {:7.3} control {:7.3} floor {:7.3}",
                row.n,
                row.test_low,
                row.control_low,
                row.floor()
            );
        }
    }
    println!(
        "errors {:?}; {} loads in {:.1} s",
        r.errors,
        r.windows.0,
        t.elapsed().as_secs_f64()
    );
}
