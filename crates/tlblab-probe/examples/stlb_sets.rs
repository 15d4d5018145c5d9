//! Exploration: which pages share a second-level TLB set. Chains of T *target* pages chosen by a
//! rule, plus `FILLERS` odd filler pages (the L1 misses on every access, as in
//! `measure::conflict`), against a control of T + FILLERS consecutive pages elsewhere; prints the
//! excess per target access (ns) for each T.
//! `cargo run --release -p tlblab-probe --example stlb_sets -- RULE LO HI REPS`
//! RULE: `stride:S` (targets k·S: a low-bits index puts them in sets/S… sets), `mul:M` (the same
//! as stride), `xor:B` (targets that an index of VPN bits 0..B XOR B..2B puts in one set: a·(2^B+1)
//! for a < 2^B, then + 2^(2B)·j), `rand:BITS` (random distinct pages below 2^BITS: the
//! balls-in-bins spread of a hashed index).
use tlblab_probe::analysis::geometric_points;
use tlblab_probe::chase::{build_on_pages, time_chain};
use tlblab_probe::measure::conflict::FILLERS;
use tlblab_probe::measure::curve::{sweep, Instrument};
use tlblab_probe::sys::{self, Region, Thp, PAGE};

struct Rule {
    targets: Vec<usize>,
    region: Region,
    control_base: usize,
    built: Option<(usize, bool)>,
    start: *const usize,
}

impl Instrument for Rule {
    fn time(&mut self, n: usize, control: bool, window_ns: u64) -> f64 {
        let t = n.min(self.targets.len());
        if self.built != Some((t, control)) {
            let pages: Vec<usize> = if control {
                // Packed 64 lines to a page (`PACKED=1`): the translation-free control of the
                // probe's capacity sweep; else consecutive pages (L2 hits only below its size).
                if std::env::var("PACKED").is_ok() {
                    (0..t + FILLERS)
                        .map(|i| self.control_base + i / 64)
                        .collect()
                } else {
                    (self.control_base..self.control_base + t + FILLERS).collect()
                }
            } else {
                let odd = (0..FILLERS).map(|j| 2 * j + 1);
                self.targets[..t].iter().copied().chain(odd).collect()
            };
            self.start = build_on_pages(&self.region, &pages, 7 ^ t as u64);
            self.built = Some((t, control));
        }
        // SAFETY: built in our region just above.
        unsafe { time_chain(self.start, t + FILLERS, window_ns) }
    }
    fn max_n(&self) -> usize {
        self.targets.len()
    }
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let (kind, arg) = a[0].split_once(':').unwrap();
    let arg: usize = arg.parse().unwrap();
    let (lo, hi, reps): (usize, usize, usize) = (
        a[1].parse().unwrap(),
        a[2].parse().unwrap(),
        a[3].parse().unwrap(),
    );
    let targets: Vec<usize> = match kind {
        "stride" | "mul" => (0..hi).map(|k| k * arg).collect(),
        "seq" => (0..hi).map(|k| arg + k).collect(),
        "xor" => {
            let m = 1usize << arg;
            (0..hi)
                .map(|k| (k % m) * (m + 1) + (k / m) * m * m)
                .collect()
        }
        "rand" => {
            let mut rng = tlblab_types::rng::SplitMix64::new(99);
            let mut seen = std::collections::BTreeSet::new();
            let mut v = Vec::new();
            while v.len() < hi {
                let p = (rng.next_u64() as usize) & ((1 << arg) - 1);
                if p >= 2 * FILLERS && seen.insert(p) {
                    v.push(p);
                }
            }
            v
        }
        _ => panic!("rule: stride:S, mul:M, xor:B or rand:BITS"),
    };
    let top = targets.iter().max().unwrap().max(&(2 * FILLERS)) + 1;
    let control_base = top + 1;
    let pages = control_base + hi + FILLERS + 1;
    let mut inst = Rule {
        targets,
        region: Region::new(pages * PAGE, 2 << 20, Thp::Never).unwrap(),
        control_base,
        built: None,
        start: std::ptr::null(),
    };
    sys::pin_and_raise().unwrap();
    let step: f64 = a.get(4).map_or(0.06, |s| s.parse().unwrap());
    let ts = geometric_points(lo, hi, step);
    let rows = sweep(&mut inst, &ts, reps, 100_000, 3);
    for r in &rows {
        let per = r.floor() * (r.n + FILLERS) as f64 / r.n as f64;
        print!("{}:{:.1} ", r.n, per);
    }
    println!();
}
