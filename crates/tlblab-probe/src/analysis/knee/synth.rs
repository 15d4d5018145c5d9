//! Synthetic latency curves with known answers.

use super::CurvePoint;
use tlblab_types::rng::SplitMix64;

/// A two-level TLB: `l1` entries hit at `base`, up to `l2` entries cost `+pen1`, beyond that
/// `+pen2` rising slowly with N (page-table lines spilling). Data-cache knees at 512 and 8192
/// lines appear in both test and control. Gaussian-ish noise of relative size `noise`.
pub fn two_level(ns: &[usize], l1: usize, l2: usize, noise: f64, seed: u64) -> Vec<CurvePoint> {
    let mut rng = SplitMix64::new(seed);
    let mut jitter = |x: f64| {
        let u: f64 = (0..4).map(|_| rng.next_f64() - 0.5).sum::<f64>() * 1.7; // ~N(0,1)
        x * (1.0 + noise * u)
    };
    ns.iter()
        .map(|&n| {
            let data = if n <= 512 {
                1.25
            } else if n <= 8192 {
                3.75
            } else {
                12.0
            };
            let tlb = if n <= l1 {
                0.0
            } else if n <= l2 {
                2.2
            } else {
                7.0 + 3.0 * ((n as f64) / (l2 as f64)).log2()
            };
            let t = jitter(data + tlb);
            let c = jitter(data);
            // The IQR of a difference of two independent draws: 1.35 σ √2.
            CurvePoint {
                n,
                test: t,
                control: c,
                noise: (data + tlb) * noise * 1.35 * std::f64::consts::SQRT_2,
            }
        })
        .collect()
}

pub fn grid(lo: usize, hi: usize, per_octave: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let r = 2f64.powf(1.0 / per_octave as f64);
    let mut x = lo as f64;
    while x <= hi as f64 * 1.0001 {
        v.push(x.round() as usize + 1);
        x *= r;
    }
    v.dedup();
    v
}
