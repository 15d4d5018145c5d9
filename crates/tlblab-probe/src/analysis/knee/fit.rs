//! Step two of a knee: the capacity read off the fine scan around it, by a ramp fitted to the
//! pooled lower envelope (`fit_ramp`, `fit_pooled`), by a threshold (`onset_by_threshold`) or by
//! the tangent at its steepest rise (`tangent_onset`).

use serde::{Deserialize, Serialize};

/// A fitted knee: the excess is `low + slope·(N − N₀)` up to `capacity`, then ramps linearly to
/// `high` over `width` pages (`width == 0`: a step).
///
/// Why a ramp: with a set-indexed level and consecutive pages, N = C + k overflows k sets at once
/// (seed 003 §3's set arithmetic), so the miss rate climbs from 0 to 1 over one "number of sets"
/// of pages after the capacity; with random replacement or a skewed index it climbs gradually,
/// and may start well before C. The onset (`capacity`) is a lower bound on the entries (every
/// page of the onset still hits); the end (`capacity + width`) is where no hits are left. The
/// small slope absorbs the slow rise of the walk cost on the lower plateau.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RampFit {
    pub capacity: usize,
    pub width: usize,
    pub low: f64,
    pub high: f64,
    pub slope: f64,
    /// Root-mean-square residual (ns).
    pub rms: f64,
}

/// Least-squares fit of the ramp model to `(N, excess)` points (sorted or not, ≥ 5 points):
/// a continuous three-segment line with breakpoints at the onset C and the end E of the ramp
/// (basis 1, x, (x − x_C)₊, (x − x_E)₊), searched over every pair of measured N. The outer
/// segments may slope (the walk gets dearer as page-table lines spill out of the caches), but the
/// ramp must rise at least twice as steeply as either of them.
pub fn fit_ramp(points: &[(usize, f64)]) -> Option<RampFit> {
    let mut pts: Vec<(usize, f64)> = points.iter().copied().filter(|p| p.1.is_finite()).collect();
    pts.sort_by_key(|p| p.0);
    pts.dedup_by_key(|p| p.0);
    if pts.len() < 5 {
        return None;
    }
    let n0 = pts[0].0 as f64;
    let span = (pts[pts.len() - 1].0 - pts[0].0).max(1) as f64;
    let xs: Vec<f64> = pts.iter().map(|p| (p.0 as f64 - n0) / span).collect();
    let mut best: Option<(f64, RampFit)> = None;
    for ci in 1..pts.len() - 2 {
        for ei in ci + 1..pts.len() - 1 {
            let (xc, xe) = (xs[ci], xs[ei]);
            let basis = |x: f64| [1.0, x, (x - xc).max(0.0), (x - xe).max(0.0)];
            let mut ata = [[0.0f64; 4]; 4];
            let mut aty = [0.0f64; 4];
            for (k, &(_, y)) in pts.iter().enumerate() {
                let row = basis(xs[k]);
                for i in 0..4 {
                    aty[i] += row[i] * y;
                    for j in 0..4 {
                        ata[i][j] += row[i] * row[j];
                    }
                }
            }
            let Some(b) = solve(ata, aty) else { continue };
            let (s1, s2, s3) = (b[1], b[1] + b[2], b[1] + b[2] + b[3]);
            if s2 <= 0.0 || s2 < 2.0 * s1.abs() || s2 < 2.0 * s3.abs() {
                continue;
            }
            let f = |x: f64| {
                let r = basis(x);
                (0..4).map(|i| b[i] * r[i]).sum::<f64>()
            };
            let rss: f64 = pts
                .iter()
                .enumerate()
                .map(|(k, &(_, y))| (y - f(xs[k])).powi(2))
                .sum();
            let fit = RampFit {
                capacity: pts[ci].0,
                width: pts[ei].0 - pts[ci].0,
                low: f(xc),
                high: f(xe),
                slope: s1 / span,
                rms: (rss / pts.len() as f64).sqrt(),
            };
            if best.as_ref().is_none_or(|(r, _)| rss < *r - 1e-12) {
                best = Some((rss, fit));
            }
        }
    }
    best.map(|(_, f)| f)
}

/// The largest non-decreasing curve below `points` (sorted by N here): each value becomes the
/// minimum over itself and every larger N.
///
/// Why: for a chain cycling through N pages, an undisturbed TLB never hits more often when N
/// grows (LRU has the inclusion property; tree-PLRU and random replacement follow it on average),
/// so the true translation cost is non-decreasing in N, and the measurement errors left in a
/// lower envelope are one-sided (a point whose fastest window was still disturbed by an intruder
/// is too high, none can be too low by more than the clean windows' jitter). The suffix minimum
/// removes exactly those upward outliers; fitting the ramp to it keeps a single unlucky point
/// just below the capacity from being read as the onset.
pub fn monotone_floor(points: &[(usize, f64)]) -> Vec<(usize, f64)> {
    let mut pts: Vec<(usize, f64)> = points.iter().copied().filter(|p| p.1.is_finite()).collect();
    pts.sort_by_key(|p| p.0);
    let mut m = f64::INFINITY;
    for p in pts.iter_mut().rev() {
        m = m.min(p.1);
        p.1 = m;
    }
    pts
}

/// The ramp fitted to several scans of the same N values pooled: per N the lowest of the scans'
/// envelopes, made non-decreasing ([`monotone_floor`]), then [`fit_ramp`].
///
/// Why the lowest: the scans run seconds apart on fresh memory, and on a shared VM the
/// interference comes in phases of seconds (a neighbour's burst on the SMT sibling of the host),
/// so one scan may see no clean window near the capacity while another does; by the one-sided
/// argument of [`monotone_floor`] the lowest envelope is the least disturbed one.
pub fn fit_pooled(scans: &[Vec<(usize, f64)>]) -> Option<RampFit> {
    fit_ramp(&pooled_envelope(scans))
}

/// Per N the lowest of the scans' values, made non-decreasing (see [`fit_pooled`]).
pub fn pooled_envelope(scans: &[Vec<(usize, f64)>]) -> Vec<(usize, f64)> {
    let mut best: std::collections::BTreeMap<usize, f64> = std::collections::BTreeMap::new();
    for &(n, y) in scans.iter().flatten() {
        if y.is_finite() {
            let e = best.entry(n).or_insert(f64::INFINITY);
            *e = e.min(y);
        }
    }
    monotone_floor(&best.into_iter().collect::<Vec<_>>())
}

/// The last N before a (monotone) envelope first rises by more than half of `step` above its
/// starting level (the median of its first `base` points), or None if it never does or has fewer
/// than `base` points.
///
/// For the first level's capacity at page strides where the next level's effective capacity
/// falls just above it (on Zen 5, 4096 L2 entries over 8 sets at a 32-page stride = 128, beside
/// a 96-entry L1): its ramp then runs straight into the first level's step and a single ramp
/// fit reads the two as one. `step` is the first level's step height at stride 1 (the L2-hit
/// cost); the first level ends where half of that step is reached, whatever follows.
pub fn onset_by_threshold(envelope: &[(usize, f64)], base: usize, step: f64) -> Option<usize> {
    let pts = monotone_floor(envelope);
    if pts.len() < base.max(1) || step.is_nan() || step <= 0.0 {
        return None;
    }
    let b: Vec<f64> = pts[..base.max(1)].iter().map(|p| p.1).collect();
    let level = crate::stats::median(&b) + 0.5 * step;
    let first_above = pts.iter().position(|p| p.1 > level)?;
    if first_above == 0 {
        return None;
    }
    Some(pts[first_above - 1].0)
}

/// Points over which [`tangent_onset`] compares rises (see there).
const RISE_SPAN: usize = 9;

/// The capacity read off a lower envelope by the tangent at its steepest rise: the N where the
/// line through the steepest five consecutive points (least squares) crosses the line the
/// envelope follows just before them (or, without enough points there, the level the envelope
/// starts at: the median of its first 5 points). None without a rise of at least `min_rise` ns.
///
/// Why the steepest rise and not the first departure from the plateau: intruders that survive
/// into the fastest windows make the envelope creep up before C (a few per cent of the step),
/// and a ramp fit that lets its lower segment slope reads the creep as the start of the ramp
/// (on the development VM the fitted onset of the same level moved between 3777 and 4050). The
/// steepest part is the level's own overflow: for a set-indexed LRU or tree-PLRU level the ramp
/// from C to C + S is straight and its tangent meets the plateau exactly at C; for random
/// replacement the rise is steepest just after C and the tangent lands a few per cent from C;
/// for a step the tangent meets the plateau a page or so early, so the estimate is never put
/// before the last point still on the plateau (within 3% of the rise). The steepest window is searched only where the envelope is still in the lowest
/// 35% of its rise, so a later, steeper rise (the next level, dearer walks) cannot be taken for
/// this one.
///
/// Which rise: the steepest over `RISE_SPAN` points (about 8% of N on the 1% grid of
/// [`scan_points`], room for a 16-way level's whole ramp), and inside it the steepest five
/// points. Taking the steepest five points of the whole scan instead read the Zen 3 host's
/// L2 DTLB (2048 entries) as ~1450 in about one trial in six: its envelope has a sharp step of
/// ~2 ns at 1440-1500 pages before the ~7 ns climb of the walks at 1950-2150 (in every trial,
/// cause not established; it grows with interference), and over five points a small sharp
/// step is as steep as a 16-way overflow, over nine it is not.
pub fn tangent_onset(envelope: &[(usize, f64)], min_rise: f64) -> Option<f64> {
    let pts = monotone_floor(envelope);
    if pts.len() < 8 {
        return None;
    }
    let firsts: Vec<f64> = pts[..5].iter().map(|p| p.1).collect();
    let base = crate::stats::median(&firsts);
    let top = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    if top - base < min_rise {
        return None;
    }
    // The level's own overflow starts the rise; further up, the scan (which runs to 1.4× the
    // coarse knee) reaches the walks getting dearer as page-table lines leave the caches, which
    // can be steeper (on the development VM once 4610-4798 against the overflow at 4132-4300).
    let lower = base + 0.35 * (top - base);
    // The span that rises most steeply (ties to the later span, as for the windows below).
    let span = RISE_SPAN.min(pts.len());
    let mut rise: Option<(f64, usize)> = None;
    for (i, w) in pts.windows(span).enumerate() {
        if w[0].1 > lower {
            break;
        }
        let (r, _, _) = line_fit(w);
        if rise.is_none_or(|(br, _)| r >= br - 1e-12) {
            rise = Some((r, i));
        }
    }
    let (_, s0) = rise?;
    // Five points (≈ 4% of N): wide enough that one point whose every window was disturbed (a
    // jump of the monotone envelope inside the creep) is not the steepest part, narrow enough to
    // sit inside a 16-way level's overflow ramp (S = 6% of C). Every five points that overlap
    // the span: a step at the span's edge is then still seen from the window centred on it.
    let mut best: Option<(f64, f64, f64, usize)> = None; // (slope, x̄, ȳ, first index)
    let (from, to) = (s0.saturating_sub(4), (s0 + span + 4).min(pts.len()));
    for (i, w) in pts[from..to].windows(5).enumerate() {
        if w[0].1 > lower {
            break;
        }
        let i = from + i;
        let (m, xm, ym) = line_fit(w);
        // Ties (a clean step gives two windows of the same slope) go to the later window.
        if best.is_none_or(|(bm, ..)| m >= bm - 1e-12) {
            best = Some((m, xm, ym, i));
        }
    }
    let (m, xm, ym, i0) = best?;
    if m <= 0.0 {
        return None;
    }
    // The line the envelope follows just before the steep part: the points within 10% of N
    // below the steepest window (at least 3, else the starting level). Intruders make the
    // envelope creep up before C; the knee is where the creep line and the tangent cross, not
    // where the tangent falls back to the level the scan started at (on the development VM
    // that put the estimate 300 pages early in busy runs).
    let x0 = pts[i0].0 as f64;
    let before: Vec<(usize, f64)> = pts[..i0]
        .iter()
        .copied()
        .filter(|p| p.0 as f64 >= 0.9 * x0)
        .collect();
    let crossing = match (before.len() >= 3).then(|| line_fit(&before)) {
        Some((mb, xb, yb)) if mb < m => {
            // ym + m (x − xm) = yb + mb (x − xb)
            (yb - ym + m * xm - mb * xb) / (m - mb)
        }
        _ => xm - (ym - base) / m,
    };
    // The crossing assumes the points before the steepest window are the plateau or the creep.
    // When the ramp is straight and began before them, they are part of it and the crossing
    // lands inside the ramp: on the Intel VM's L1 DTLB (96 = 16 sets × 6 ways; the envelope
    // flat to 96 pages, then a straight climb at 0.07-0.10 ns per page to ≈ 115) the steepest
    // five points fell anywhere along the ramp, and the crossing read 101.5-107 in 28 of 40
    // recorded trials. So a two-segment line is also fitted, over the points from 0.8× the
    // steepest window's start to its end ([`hinge_break`]); when its first segment is flat
    // (≤ 0.2× the second's slope: a plateau, not a creep) and its second rises nearly as
    // steeply as the steepest window (≥ 0.6×: one straight ramp up to it), its break is the
    // start of the ramp, and taken when earlier than the crossing (95-96.5 on those 40 trials,
    // where its segments' slope ratios were ≤ 0.06 and ≥ 0.72). Under random replacement
    // behind intruders the creep before C is itself sloped (0.33-0.46× the ramp in the model
    // of `analysis/model.rs`), and the crossing stays.
    let seg: Vec<(usize, f64)> = pts[..(i0 + 5).min(pts.len())]
        .iter()
        .copied()
        .filter(|p| p.0 as f64 >= 0.8 * x0)
        .collect();
    let hi = pts[(i0 + 2).min(pts.len() - 1)].0 as f64;
    let x = match hinge_break(&seg, hi) {
        Some((b, s1, s2)) if s1 <= 0.2 * s2 && s2 >= 0.6 * m => crossing.min(b),
        _ => crossing,
    };
    // Never before the last point still on the plateau (within 3% of the rise): with points
    // several pages apart, the tangent through a step would otherwise land inside the plateau.
    let on_plateau = pts
        .iter()
        .take_while(|p| p.1 <= base + 0.03 * (top - base))
        .last()
        .map_or(pts[0].0, |p| p.0);
    Some(x.min(xm).max(on_plateau as f64))
}

/// The break of the continuous two-segment line y = a + s1·min(N − b, 0) + s2·max(N − b, 0)
/// that fits `seg` best (least squares), for b from the third point of `seg` up to `hi`, in
/// steps of a quarter of the grid's spacing: (b, slope before, slope after). None with fewer
/// than 6 points or no rise after the break.
#[allow(clippy::needless_range_loop)] // the normal equations, indexed as written
fn hinge_break(seg: &[(usize, f64)], hi: f64) -> Option<(f64, f64, f64)> {
    if seg.len() < 6 {
        return None;
    }
    let lo = seg[2].0 as f64;
    let step = ((seg[seg.len() - 1].0 - seg[0].0) as f64 / (seg.len() - 1) as f64 / 4.0).max(0.05);
    let mut best: Option<(f64, f64, f64, f64)> = None; // (sse, b, s1, s2)
    let mut b = lo;
    while b <= hi + 1e-9 {
        let row = |n: usize| {
            let d = n as f64 - b;
            [1.0, d.min(0.0), d.max(0.0)]
        };
        let mut a = [[0.0; 3]; 3];
        let mut r = [0.0; 3];
        for &(n, y) in seg {
            let x = row(n);
            for i in 0..3 {
                for j in 0..3 {
                    a[i][j] += x[i] * x[j];
                }
                r[i] += x[i] * y;
            }
        }
        if let Some(c) = solve(a, r) {
            let sse: f64 = seg
                .iter()
                .map(|&(n, y)| {
                    let x = row(n);
                    (c[0] + c[1] * x[1] + c[2] * x[2] - y).powi(2)
                })
                .sum();
            if best.is_none_or(|(s, ..)| sse < s - 1e-15) {
                best = Some((sse, b, c[1], c[2]));
            }
        }
        b += step;
    }
    let (_, b, s1, s2) = best?;
    (s2 > 0.0).then_some((b, s1, s2))
}

/// Least-squares line through `pts`: (slope, mean N, mean value).
pub(crate) fn line_fit(pts: &[(usize, f64)]) -> (f64, f64, f64) {
    let k = pts.len() as f64;
    let xm = pts.iter().map(|p| p.0 as f64).sum::<f64>() / k;
    let ym = pts.iter().map(|p| p.1).sum::<f64>() / k;
    let sxy: f64 = pts.iter().map(|p| (p.0 as f64 - xm) * (p.1 - ym)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 as f64 - xm).powi(2)).sum();
    (sxy / sxx.max(1e-12), xm, ym)
}

/// Gaussian elimination with partial pivoting for the small normal equations.
#[allow(clippy::needless_range_loop)] // index arithmetic reads as the textbook algorithm
fn solve<const K: usize>(mut a: [[f64; K]; K], mut b: [f64; K]) -> Option<[f64; K]> {
    for col in 0..K {
        let piv =
            (col..K).max_by(|&i, &j| a[i][col].abs().partial_cmp(&a[j][col].abs()).unwrap())?;
        if a[piv][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        for row in 0..K {
            if row != col {
                let f = a[row][col] / a[col][col];
                for k in col..K {
                    a[row][k] -= f * a[col][k];
                }
                b[row] -= f * b[col];
            }
        }
    }
    let mut x = [0.0; K];
    for i in 0..K {
        x[i] = b[i] / a[i][i];
    }
    Some(x)
}

impl RampFit {
    /// N where the fitted ramp is half-way between the plateaus: half the accesses miss.
    pub fn midpoint(&self) -> usize {
        self.capacity + self.width / 2
    }

    /// Ramp width relative to the midpoint: about 0 for a clean cliff.
    pub fn rel_width(&self) -> f64 {
        self.width as f64 / self.midpoint().max(1) as f64
    }

    /// The largest working set that still gets hits: one page before the ramp's end (C + S − 1
    /// for a set-indexed LRU level with S sets). Formerly the entry estimate; the probe now uses
    /// [`tangent_onset`] on the lower envelope, and this is kept for the fit's own tests.
    pub fn last_with_hits(&self) -> usize {
        (self.capacity + self.width)
            .saturating_sub(1)
            .max(self.capacity)
    }
}
