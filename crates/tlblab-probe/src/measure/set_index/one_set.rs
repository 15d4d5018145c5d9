//! Step 3 of the set-index measurement: curves of one set (`one_set_curves`), and the ways of
//! a low-bit indexed level read from them (`low_bits_ways`).

use super::*;

/// The one-set curves of step 3: each curve n targets (`m0 + c`)·2^top + o in one set of `f`,
/// the fillers (if any) outside it; per curve the last n before its first misses and before
/// half of its accesses miss.
pub struct OneSetCurves {
    pub firsts: Vec<usize>,
    pub halves: Vec<usize>,
    pub curves: Vec<Vec<(usize, f64)>>,
    /// Filler pages the curves ran with.
    pub fillers: usize,
}

/// Step 3: the ways, with the function `f` known: n targets in one set, the fillers (if any)
/// outside it, n = W/2 … 2·`j3` (W `ways`, step 1's reading), five curves in five sets. W is
/// the last n before the first misses: any policy that fills free ways first misses nothing up
/// to W, and misses at least one access a lap (1/W of them) at W + 1 (Belady's bound for a
/// cyclic chain), so the first misses sit at W + 1 whatever the replacement; entries the chain
/// does not own only bring them earlier, and a curve they disturbed reads low, hence the
/// highest reading two curves share ([`shared_highest`]). The half-way point is kept as
/// evidence only: it is the replacement's, not the ways'.
///
/// Why few fillers behind a set-indexed L1 (`l1`): on the Intel VM (2026-11-26,
/// `examples/stlb_ways.rs stride clean F`, CPU 1, load 2.7-3.8) the one-set curve with 160
/// fillers (a lap of ≈ 180 accesses) misses on 15% of its accesses at n = 14, 20-30% at
/// 15-16, 33% at 17, 80% at 18 and all from 19; with 40 fillers first at 16 (8%); with 10 or
/// none (a lap of 17-34 accesses) on none up to 16 and from 17 on (10%, 30% at 18, all from
/// 22), in five of six curves. Entries the chain does not own arrive in its set per unit of
/// time, so a long lap lets them in between two uses of a target; neither the L1 (160
/// fillers all in the targets' L1 set: the same curve), the targets' L1 sets (targets a·129,
/// one STLB set over every L1 set: the same shape) nor the VM's other vCPU (a 4000-page
/// chase on CPU 0 meanwhile: the same curve) moved it. The previous reading, the middle of
/// the first misses (13-16 with 160 fillers) and the half-way point (17), read 15 or 17.
/// The targets share one set of a low-bits L1 (their stride is a multiple of its sets) and
/// outnumber its ways, so they miss it on their own (LRU-like L1); otherwise (a fully
/// associative L1) the fillers stay.
/// From half step 1's reading: under random replacement its conflict capacity (the half-way
/// point of a curve with 160 fillers) read 25 for 16 ways on the simulated Intel-like host,
/// and W − 6 then started the curves past the first misses.
#[allow(clippy::too_many_arguments)]
pub fn one_set_curves(
    chain: &mut dyn PageChain,
    f: &SetIndex,
    ways: usize,
    m0: usize,
    j3: usize,
    fillers: usize,
    l1: Option<(usize, usize)>,
    b: IndexBudget,
) -> OneSetCurves {
    let step = 1usize << f.top_log2;
    let target_set = f.set_of(0);
    let ns: Vec<usize> = ((ways / 2).max(4)..=2 * ways + 2).collect();
    let own = l1.is_some_and(|(s1, w1)| s1 > 1 && step.is_multiple_of(s1) && ns[0] > w1);
    let wf = if own { 0 } else { fillers };
    let cbase = (m0 + 2 * j3 + 1) * step;
    let mut curves: Vec<Vec<(usize, f64)>> = Vec::new();
    let mut firsts: Vec<usize> = Vec::new();
    let mut halves: Vec<usize> = Vec::new();
    for rep in 0..CURVES as u64 {
        // Each curve in another set (targets + o, o below the sets and the stride: the set
        // of each target XOR the set of o): entries the chain does not own may favour a set.
        let o = (rep as usize * 37) % f.sets().min(step);
        let set = target_set ^ f.set_of(o as u64);
        let clean: Vec<usize> = (1..)
            .filter(|&p| f.set_of(p as u64) != set)
            .take(wf)
            .collect();
        let mut per: Vec<(usize, f64)> = Vec::new();
        for &n in &ns {
            if n > 2 * j3 {
                break;
            }
            let test: Vec<usize> = (0..n)
                .map(|c| (m0 + c) * step + o)
                .chain(clean.iter().copied())
                .collect();
            let control: Vec<usize> = (cbase..cbase + n + wf).collect();
            let (mut xt, mut xc) = (Vec::new(), Vec::new());
            for r in 0..2 * b.pair_reps {
                let salt = 0x3a7 ^ (rep << 40) ^ ((n as u64) << 8) ^ r as u64;
                xt.push(chain.time(&test, b.seed ^ salt, b.window_ns));
                xc.push(chain.time(&control, b.seed ^ salt, b.window_ns));
            }
            let ex = low_order_stat(&xt) - low_order_stat(&xc);
            per.push((n, ex * (n + wf) as f64 / n as f64));
        }
        let floor = monotone_floor(&per);
        if let Some(h) = crossing(&floor, 0.5) {
            halves.push(h);
        }
        if let Some(f) = crossing(&floor, first_miss_share(&per, ways)) {
            firsts.push(f);
        }
        curves.push(per);
    }
    OneSetCurves {
        firsts,
        halves,
        curves,
        fillers: wf,
    }
}

/// The highest first-miss reading two curves share (the second highest): a disturbance only
/// lowers a curve's first misses, and one curve alone may have read a miss too few.
pub(super) fn shared_highest(firsts: &[usize]) -> usize {
    let mut v = firsts.to_vec();
    v.sort_unstable();
    v[v.len().saturating_sub(2)]
}

/// The ways of a level whose set index is the low page-number bits (`sets` sets, read by the
/// conflict sweep), from step 3's one-set curves alone: each curve's last n before its first
/// misses, and the highest reading two curves share. `ways_guess`: the conflict sweep's reading
/// (the curves run from half of it to 1.5× it). `fillers` keep a fully associative first level
/// missing.
///
/// Why: the conflict sweep reads the ways from capacities at strides 16..512 and has two
/// readings of them (the median of capacity × stride and a fitted slope), which a disturbed
/// stride moves by a way or two: on the Zen 4 host (24 ways) one `--quick` run of ten read
/// 178, 96, 50, 25, 20, 25, both readings 22 (2816 entries, −8%). The one-set curves read the
/// first misses directly: quiet, 0 ns up to 24 targets and a miss share from 25 on at strides
/// 128 and 512 (2026-11-26, `examples/l2_conflict`); a neighbour only brings them earlier.
pub fn low_bits_ways(
    bench: &mut dyn Bench,
    fillers: usize,
    sets: usize,
    ways_guess: usize,
    b: IndexBudget,
) -> Option<OneSetWays> {
    if !sets.is_power_of_two() || sets < 2 || ways_guess < 4 {
        return None;
    }
    let top = sets.trailing_zeros();
    let f = SetIndex {
        ways: ways_guess,
        ways_lo: ways_guess,
        ways_hi: ways_guess,
        ways_agree: 0,
        half_way: 0,
        ways_firsts: Vec::new(),
        ways_fillers: fillers,
        top_log2: top,
        basis: (0..top).collect(),
        folds: Vec::new(),
        stride_capacities: Vec::new(),
        ways_curve: Vec::new(),
        confidence: Confidence::High,
        unclear: None,
        sets_and_ways_read: false,
    };
    let m0 = (fillers + 1).div_ceil(sets);
    let j3 = (3 * ways_guess).div_ceil(4);
    let span = (m0 + 2 * j3 + 2) * sets + 2 * fillers + 64;
    let mut chain = bench.pages(span)?;
    let c = one_set_curves(&mut *chain, &f, ways_guess, m0, j3, fillers, None, b);
    if c.firsts.len() < 2 {
        return None;
    }
    let ways = shared_highest(&c.firsts);
    Some(OneSetWays {
        ways,
        agreeing: c.firsts.iter().filter(|&&f| f.abs_diff(ways) <= 1).count(),
        voting: 0,
        firsts: c.firsts,
        half_way: c.halves.iter().copied().max().unwrap_or(0),
        fillers: c.fillers,
    })
}

impl OneSetWays {
    /// Two runs of the curves taken together (a second set of five, seconds later, when the
    /// first did not all agree: `analysis::second_look`): the ways are the highest first misses
    /// two of all ten curves share, read when most curves of either set lie within one of them.
    /// Either set, not all ten: a busy phase comes for seconds and lowers every curve of the set
    /// it falls in (one Zen 5 run, 2026-11-29 18:45 UTC: [14, 16, 15, 16, 14], then [13, 12, 15,
    /// 15, 14]); a majority of ten would let it outvote the set it spared.
    pub fn pooled(&self, other: &OneSetWays) -> OneSetWays {
        let firsts: Vec<usize> = self.firsts.iter().chain(&other.firsts).copied().collect();
        let ways = shared_highest(&firsts);
        let near = |fs: &[usize]| fs.iter().filter(|&&f| f.abs_diff(ways) <= 1).count();
        let (a, b) = (near(&self.firsts), near(&other.firsts));
        let (agreeing, voting) = if a * other.firsts.len() >= b * self.firsts.len() {
            (a, self.firsts.len())
        } else {
            (b, other.firsts.len())
        };
        OneSetWays {
            ways,
            agreeing,
            voting,
            firsts,
            half_way: self.half_way.max(other.half_way),
            fillers: self.fillers,
        }
    }

    /// The ways when most curves read within one of them, else None. In a busy phase the
    /// first misses scatter: one Zen 4 `--quick` run (2026-11-26, q5 of batch 3) read
    /// [10, 11, 15, 23, 22] for 24 ways, and the two highest (22) were taken as the ways.
    pub fn read(&self) -> Option<usize> {
        let n = if self.voting > 0 {
            self.voting
        } else {
            self.firsts.len()
        };
        (2 * self.agreeing > n).then_some(self.ways)
    }
}

/// What [`low_bits_ways`] read.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OneSetWays {
    /// The highest first-miss reading two curves share.
    pub ways: usize,
    /// Curves within one of `ways`: a reading only when most are ([`OneSetWays::read`]).
    #[serde(default)]
    pub agreeing: usize,
    /// The curves `agreeing` is counted among: the set of five that agrees best when two sets
    /// were pooled ([`OneSetWays::pooled`]); 0 = all of `firsts`.
    #[serde(default)]
    pub voting: usize,
    /// Each curve's last n before its first misses, in curve order.
    pub firsts: Vec<usize>,
    /// The highest of the curves' last n before half of the accesses miss.
    pub half_way: usize,
    pub fillers: usize,
}

/// The share of a one-set curve's rise that its first misses must pass: three robust standard
/// deviations of its first four points (before any miss) over the rise, at least 1/(2W) (half of
/// the fewest misses any replacement has at W + 1: one access a lap), at most 30%. `ways`: step
/// 1's reading. The previous floor, 10%, let a random replacement's or a gentle ramp's first
/// point (≈ 10-12% at W + 1: the Intel VM's STLB, a random 16-way set) pass unseen.
fn first_miss_share(curve: &[(usize, f64)], ways: usize) -> f64 {
    let head: Vec<f64> = curve.iter().take(4).map(|p| p.1).collect();
    let centre = crate::stats::median(&head);
    let mad = crate::stats::median(&head.iter().map(|x| (x - centre).abs()).collect::<Vec<_>>());
    let rise = curve.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max) - centre;
    let floor = 0.5 / ways.max(2) as f64;
    if rise > 0.0 && mad.is_finite() {
        (3.0 * 1.4826 * mad / rise).clamp(floor, 0.3)
    } else {
        floor
    }
}

/// The last n before a non-decreasing per-target excess curve passes `share` of its rise (from
/// the median of its first three points to its last point); None with fewer than 6 points or
/// without a rise of a walk: more than 1 ns and half the curve's start. The targets overflow the
/// first level from the first point on (fillers or their own L1 set), so the start is an L2 hit
/// (≈ 1.8 ns on the Intel VM, where a walk adds 10-14) and only misses of the measured level
/// rise above it. Not a fixed 4 ns: the simulated ChampSim machine walks in ≈ 2.4 ns over its
/// 1.9 ns STLB hit, and its one-set curves then read no ways at all.
fn crossing(floor: &[(usize, f64)], share: f64) -> Option<usize> {
    if floor.len() < 6 {
        return None;
    }
    let start = crate::stats::median(&floor[..3].iter().map(|p| p.1).collect::<Vec<_>>());
    let end = floor.last().map_or(start, |p| p.1);
    if end - start <= 1.0f64.max(0.5 * start) {
        return None;
    }
    onset_by_threshold(floor, 3, 2.0 * share * (end - start))
}
