//! Times the curve passes on a trace by hand (perf/callgrind): exact fully associative up to
//! 65,536 entries, every associativity at 8 set counts, SHARDS sampled (with its error).
//! `cargo run --release -p tlblab-curve --example curve_bench -- TRACE [RATE]`
use tlblab_curve::bench::{sampled_error, timed};
use tlblab_curve::{Path, Spec};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::Path::new(&args[1]);
    let rate: f64 = args.get(2).map_or(0.01, |r| r.parse().unwrap());
    let (mut src, _, _) = tlblab_trace::convert::open_source(path, None).unwrap();
    let mut recs = Vec::new();
    while src.fill(&mut recs, 1 << 16).unwrap() > 0 {}
    let base = Spec {
        path: Path::Unified,
        groups: false,
        ..Spec::new(0, &[])
    };
    let sampled = Spec {
        sample_rate: Some(rate),
        sample_entries: 65536,
        ..base.clone()
    };
    // Times one pass and prints its rate after `label`.
    let run = |label: &str, spec: Spec| {
        let t = timed(&recs, spec).unwrap();
        println!("{label}: {:.1} M refs/s", t.accesses as f64 / t.cpu / 1e6);
        t
    };
    if std::env::var("ONLY_SAMPLED").is_ok() {
        for _ in 0..5 {
            run("sampled", sampled.clone());
        }
        return;
    }
    let fa = run(
        "exact fully associative",
        Spec {
            max_entries: 65536,
            ..base.clone()
        },
    );
    run(
        "8 set counts x 16 ways",
        Spec {
            set_counts: vec![1, 2, 4, 8, 16, 32, 64, 128],
            ..base.clone()
        },
    );
    let sa = run(&format!("sampled R={rate}"), sampled);
    let grid: Vec<usize> = (0..=16).map(|i| 1 << i).collect();
    println!(
        "sampled R={rate}: MAE {:.5}",
        sampled_error(&sa.curves, &fa.curves, &grid).unwrap()
    );
    dump(&sa.curves, &fa.curves);
}

#[allow(dead_code)]
fn dump(sa: &tlblab_curve::Curves, fa: &tlblab_curve::Curves) {
    let (s, e) = (sa.group("all").unwrap(), fa.group("all").unwrap());
    let r = e.references as f64;
    for i in 0..=16 {
        let c = 1usize << i;
        let ps = s.points.iter().find(|p| !p.exact && p.ways == c).unwrap();
        println!(
            "{c:>6} exact {:.4} sampled {:.4}",
            e.misses(1, c).unwrap() as f64 / r,
            ps.misses as f64 / r
        );
    }
}
