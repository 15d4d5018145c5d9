//! Pure analysis of timing data: no measurement, no I/O, so every rule is unit-tested on
//! synthetic curves with known answers (including noisy ones).

pub mod index;
pub mod knee;
#[cfg(test)]
pub mod model;
pub mod replacement;
pub mod second_look;

/// The points of a sweep from `lo` to `hi`, each `step` (a fraction) above the one before and
/// at least 1 above it: a resolution relative to N, as fine where N is small as where it is
/// large (1% resolves a capacity to ≈1%).
pub fn geometric_points(lo: usize, hi: usize, step: f64) -> Vec<usize> {
    let mut v = Vec::new();
    let mut n = lo;
    while n <= hi {
        v.push(n);
        n += ((n as f64) * step).round().max(1.0) as usize;
    }
    v
}
