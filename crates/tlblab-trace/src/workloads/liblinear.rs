//! Seed 001 §5.2: a LIBLINEAR-like training loop (the seed's LibLinear on HIGGS).
//!
//! As LIBLINEAR's `solve_l2r_l1l2_svc` (linear.cpp: dual coordinate descent for the L2-regularised
//! L1/L2-loss SVM, `train`'s default solver): every outer iteration shuffles the instance order
//! `index` (a swap with a random later entry per position), then for each instance i in that
//! order reads `y[i]`, the row pointer `prob->x[i]`, `alpha[i]`, computes
//! `G = y_i * dot(w, x_i) - 1` (`sparse_operator::dot`: the row's `feature_node {int index;
//! double value}` entries in order, 16 bytes each, up to the terminating index -1, and `w` at
//! each index), reads `QD[i]`, stores the new `alpha[i]` and adds `d * x_i` to `w`
//! (`sparse_operator::axpy`: the row again, `w` read and written at each index). The rows live
//! one after another in `x_space` (train.c's `read_problem`), the PT-Baker region.
//!
//! HIGGS (the seed's input, LIBSVM data sets): 11e6 instances of 28 features, all present, so a
//! row is 29 nodes (464 bytes) and `x_space` 5.1 GB; with `x`, the labels, `alpha`, `QD` and
//! `index` the run holds about 5.5 GB (Table 5.2: 5.5 GB, PT-Baker 4.5 GB). Left out: the
//! solver's shrinking (it narrows the active set in later iterations) and the values (every
//! step takes the update, as in the first iterations where alpha leaves 0); the loop before the
//! first iteration (QD and the initial w: one sequential pass over x_space, under 0.1% of a run
//! of the seed's 2.3e12 instructions, §3).

use super::gen::*;
use super::WorkloadInfo;
use tlblab_types::SplitMix64;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "liblinear",
    summary: "LIBLINEAR-like dual coordinate descent (L2-loss SVM) over a sparse instance matrix",
    source: "seed 001 §5.2 (LibLinear on HIGGS: 11e6 instances x 28 features; Table 5.2)",
    in_default_set: true,
    params: populated_params! {
        instances: 1 << 14, "training instances (HIGGS: 11000000)";
        features: 28, "non-zero features per instance (HIGGS: 28)";
        iterations: 1, "outer iterations of the solver";
    },
};

const NODE: u64 = 16;

pub struct LibLinear {
    l: u64,
    f: u64,
    iterations: u64,
    va_x: u64,
    va_rows: u64,
    va_y: u64,
    va_alpha: u64,
    va_qd: u64,
    va_index: u64,
    va_w: u64,
    layout: Layout,
    index: Vec<u32>,
    /// Feature indices of row i: `features` distinct ones of the 28, the same for every row
    /// when every feature is present (HIGGS); a hash of (seed, i, j) otherwise.
    seed: u64,
    rng: SplitMix64,
    it: u64,
    shuffled: bool,
    s: u64,
    started: bool,
}

impl LibLinear {
    pub fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let l = in_range("liblinear", "instances", get("instances"), 1, 1 << 32)?;
        let f = in_range("liblinear", "features", get("features"), 1, 4096)?;
        // The shuffled row order, a u32 a row.
        super::memory::need("liblinear", &[("instances", l)], l * 4)?;
        // Below 4 GiB, so 32-bit machines can run the default sizes too.
        let mut layout = Layout::new(0x1000_0000);
        let va_x = layout.alloc("x_space", l * (f + 1) * NODE, 1 << 21).1;
        let va_rows = layout.alloc("x", l * 8, 1 << 21).1;
        let va_y = layout.alloc("y", l, 1 << 21).1;
        let va_alpha = layout.alloc("alpha", l * 8, 1 << 21).1;
        let va_qd = layout.alloc("QD", l * 8, 1 << 21).1;
        let va_index = layout.alloc("index", l * 4, 1 << 21).1;
        let va_w = layout.alloc("w", f.max(28) * 8, 1 << 12).1;
        Ok(LibLinear {
            l,
            f,
            iterations: get("iterations"),
            va_x,
            va_rows,
            va_y,
            va_alpha,
            va_qd,
            va_index,
            va_w,
            layout,
            index: (0..l).map(|i| i as u32).collect(),
            seed,
            rng: SplitMix64::derive(seed, "workload.liblinear.shuffle"),
            it: 0,
            shuffled: false,
            s: 0,
            started: false,
        })
    }

    /// The feature index (0-based) of row i's j-th node: every feature in order when the row
    /// has at most the 28 of HIGGS; otherwise spread over `4 * features` by a hash.
    fn feature(&self, i: u64, j: u64) -> u64 {
        if self.f <= 28 {
            j
        } else {
            let mut h =
                SplitMix64::new(self.seed ^ (i << 12 | j).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            h.below(4 * self.f)
        }
    }

    /// `sparse_operator::dot` (store = false) or `axpy` (true) over row i.
    fn row(&self, i: u64, store_w: bool, out: &mut Vec<Record>) {
        let row = self.va_x + i * (self.f + 1) * NODE;
        for j in 0..self.f {
            let w = self.va_w + self.feature(i, j) * 8;
            out.push(load(0, row + j * NODE, 4));
            out.push(load(0, row + j * NODE + 8, 8));
            out.push(load(0, w, 8));
            if store_w {
                out.push(store(0, w, 8));
            }
        }
        out.push(load(0, row + self.f * NODE, 4));
    }
}

impl Generator for LibLinear {
    fn regions(&self) -> Vec<String> {
        self.layout.names.clone()
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if self.layout.start_once(&mut self.started, out) {
            return self.iterations > 0;
        }
        if self.it == self.iterations {
            return false;
        }
        if !self.shuffled {
            // for i < active_size: swap(index[i], index[i + rand() % (active_size - i)])
            let end = (self.s + 8192).min(self.l);
            for i in self.s..end {
                let j = i + self.rng.below(self.l - i);
                out.push(load(0, self.va_index + i * 4, 4));
                out.push(load(0, self.va_index + j * 4, 4));
                out.push(store(0, self.va_index + i * 4, 4));
                out.push(store(0, self.va_index + j * 4, 4));
                self.index.swap(i as usize, j as usize);
            }
            self.s = end;
            if self.s == self.l {
                self.shuffled = true;
                self.s = 0;
            }
            return true;
        }
        let end = (self.s + 512).min(self.l);
        for s in self.s..end {
            out.push(load(0, self.va_index + s * 4, 4));
            let i = self.index[s as usize] as u64;
            out.push(load(0, self.va_y + i, 1));
            out.push(load(0, self.va_rows + i * 8, 8));
            self.row(i, false, out);
            out.push(load(0, self.va_alpha + i * 8, 8));
            out.push(load(0, self.va_qd + i * 8, 8));
            out.push(store(0, self.va_alpha + i * 8, 8));
            self.row(i, true, out);
        }
        self.s = end;
        if self.s == self.l {
            self.s = 0;
            self.shuffled = false;
            self.it += 1;
        }
        true
    }
}
