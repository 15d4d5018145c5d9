//! Order statistics for repeated timing samples: medians, quartiles and a relative spread.
//!
//! Every number the probe reports is a median over interleaved repetitions; the spread that goes
//! beside it is the inter-quartile range, because single windows on a shared 2-core VM have heavy
//! upper tails (a neighbour's compile job) that would dominate a standard deviation.

use serde::{Deserialize, Serialize};

/// Median and quartiles of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub median: f64,
    pub q1: f64,
    pub q3: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Summary {
    /// Summarises `xs` (NaNs are dropped). An empty sample gives all-NaN with `n == 0`.
    pub fn of(xs: &[f64]) -> Summary {
        let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return Summary {
                median: f64::NAN,
                q1: f64::NAN,
                q3: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
                n: 0,
            };
        }
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        Summary {
            median: quantile_sorted(&v, 0.5),
            q1: quantile_sorted(&v, 0.25),
            q3: quantile_sorted(&v, 0.75),
            min: v[0],
            max: v[v.len() - 1],
            n: v.len(),
        }
    }

    /// Inter-quartile range.
    pub fn iqr(&self) -> f64 {
        self.q3 - self.q1
    }

    /// IQR relative to the median (0 when the median is 0).
    pub fn rel_spread(&self) -> f64 {
        if self.median.abs() < 1e-12 {
            0.0
        } else {
            self.iqr() / self.median.abs()
        }
    }
}

/// Linear-interpolated quantile of an already sorted, non-empty slice.
pub fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    if v.len() == 1 {
        return v[0];
    }
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    v[lo] * (1.0 - frac) + v[hi] * frac
}

/// Median of a sample (NaN when empty).
pub fn median(xs: &[f64]) -> f64 {
    Summary::of(xs).median
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_quartiles_of_an_odd_sample() {
        let s = Summary::of(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(s.median, 3.0);
        assert_eq!(s.q1, 2.0);
        assert_eq!(s.q3, 4.0);
        assert_eq!((s.min, s.max, s.n), (1.0, 5.0, 5));
    }

    #[test]
    fn median_of_an_even_sample_interpolates() {
        assert_eq!(median(&[1.0, 2.0, 3.0, 10.0]), 2.5);
    }

    #[test]
    fn nans_are_ignored_and_empty_is_nan() {
        assert_eq!(median(&[f64::NAN, 7.0]), 7.0);
        assert!(median(&[]).is_nan());
    }
}
