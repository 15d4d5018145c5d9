//! One group's analysis (`Analyzer`): the fully associative stack, the set-associative stacks
//! and the sampled stack fed the same references, and the sampled stack's lean loop
//! (`sampled_run`).

use super::*;

/// Applies one call to each stack the spec asked for (`$m`: the stack): a key's invalidation,
/// a predicate's, a flush change every stack alike.
macro_rules! each_stack {
    ($a:ident, $m:ident => $call:expr) => {
        if let Some($m) = &mut $a.fully {
            $call;
        }
        if let Some($m) = &mut $a.sets {
            $call;
        }
        if let Some($m) = &mut $a.sampled {
            $call;
        }
    };
}

/// What one group keeps.
#[derive(Clone)]
pub(crate) struct Analyzer {
    pub(crate) references: u64,
    /// References to the previous reference's page: depth 1 everywhere, no stack changes.
    pub(crate) repeats: u64,
    pub(crate) last: u64,
    pub(crate) fully: Option<Fully>,
    pub(crate) fully_hist: Vec<u64>,
    pub(crate) cold: u64,
    pub(crate) sets: Option<SetStacks>,
    pub(crate) sampled: Option<Sampled>,
}

impl Analyzer {
    pub(crate) fn new(spec: &Spec) -> Self {
        Analyzer {
            references: 0,
            repeats: 0,
            last: EMPTY,
            fully: (spec.max_entries > 0).then(Fully::new),
            fully_hist: vec![0; spec.max_entries],
            cold: 0,
            sets: (!spec.set_counts.is_empty()).then(|| SetStacks::new(&spec.set_counts)),
            sampled: spec
                .sample_rate
                .map(|r| Sampled::new(r, spec.sample_entries)),
        }
    }

    #[inline(always)]
    pub(crate) fn access(&mut self, key: u64) {
        self.references += 1;
        self.access_with::<true, true, true>(key);
    }

    /// `access` for the components the flags allow (the lean loop's copies, `Run::feed_lean`,
    /// are compiled per combination; `access` checks each). The caller counts the reference.
    #[inline(always)]
    pub(crate) fn access_with<const FULLY: bool, const SETS: bool, const SAMPLED: bool>(
        &mut self,
        key: u64,
    ) {
        if SAMPLED {
            if let Some(s) = &mut self.sampled {
                s.access(key);
            }
        }
        if !FULLY && !SETS {
            return;
        }
        if key == self.last {
            self.repeats += 1;
            return;
        }
        self.last = key;
        if FULLY {
            if let Some(f) = &mut self.fully {
                let d = f.access(key) as usize;
                if d == 0 {
                    self.cold += 1;
                } else if d <= self.fully_hist.len() {
                    self.fully_hist[d - 1] += 1;
                }
            }
        }
        if SETS {
            if let Some(s) = &mut self.sets {
                s.access(key);
            }
        }
    }

    /// An access's two references across a 4 KiB boundary (rare: out of the lean loop).
    #[inline(never)]
    pub(crate) fn crossing<const FULLY: bool, const SETS: bool, const SAMPLED: bool>(
        &mut self,
        a: u64,
        b: u64,
    ) {
        self.access_with::<FULLY, SETS, SAMPLED>(a);
        self.access_with::<FULLY, SETS, SAMPLED>(b);
    }

    pub(crate) fn invalidate_keys(&mut self, keys: &[u64]) {
        self.last = EMPTY;
        for &k in keys {
            each_stack!(self, m => m.invalidate(k));
        }
    }

    pub(crate) fn invalidate_where(&mut self, pred: impl Fn(u64) -> bool + Copy) {
        self.last = EMPTY;
        each_stack!(self, m => m.invalidate_where(pred));
    }

    pub(crate) fn flush(&mut self) {
        self.last = EMPTY;
        each_stack!(self, m => m.flush());
    }

    pub(crate) fn curves(&self, name: String, spec: &Spec) -> GroupCurves {
        let refs = self.references;
        let mut points = Vec::new();
        if self.fully.is_some() {
            let mut hits = self.repeats;
            for (i, h) in self.fully_hist.iter().enumerate() {
                hits += h;
                points.push(Point {
                    sets: 1,
                    ways: i + 1,
                    misses: refs - hits,
                    exact: true,
                });
            }
        }
        if let Some(st) = &self.sets {
            for (&s, hist) in st.counts().iter().zip(&st.hist) {
                if s == 1 && self.fully.is_some() {
                    continue; // the fully associative curve has these points
                }
                let mut hits = self.repeats;
                for (w, h) in hist.iter().take(spec.max_ways).enumerate() {
                    hits += h;
                    points.push(Point {
                        sets: s,
                        ways: w + 1,
                        misses: refs - hits,
                        exact: true,
                    });
                }
            }
        }
        if let Some(sa) = &self.sampled {
            points.extend(sa.curve().into_iter().enumerate().map(|(i, m)| Point {
                sets: 1,
                ways: i + 1,
                misses: m,
                exact: false,
            }));
        }
        GroupCurves {
            name,
            references: refs,
            cold: self.fully.is_some().then_some(self.cold),
            points,
        }
    }
}

/// `Run::feed_lean_sampled`'s loop: the sampled stack over `records` (every one of them an
/// access in address space 0 until the first that is not, where it stops), with the head's
/// top four pages in registers. Returns the records taken and the references they made.
#[inline(always)]
pub(crate) fn sampled_run(
    s: &mut Sampled,
    records: &[Record],
    base: u64,
    shift: u32,
) -> (usize, u64) {
    // The top four pages, most recent first, and the references that found each.
    let [mut h0, mut h1, mut h2, mut h3] = s.top_four();
    let (mut d0, mut d1, mut d2, mut d3) = (0u64, 0u64, 0u64, 0u64);
    // Each access is one reference, two when it crosses a page boundary.
    let mut crossings = 0u64;
    let mut n = 0;
    while n < records.len() {
        let Record::Access(acc) = &records[n] else {
            break;
        };
        if acc.thread.0 > 1 << 20 {
            break; // feed_one names the thread id
        }
        let va = acc.vaddr.0;
        let k = base | va >> shift;
        // `size > 1 && off + size > 4096`: a size of 0 or 1 never crosses.
        let crosses = (va & 0xfff) + acc.size as u64 > 4096;
        n += 1;
        if !crosses {
            if k == h0 {
                d0 += 1;
                continue;
            }
            if k == h1 {
                (h0, h1) = (h1, h0);
                d1 += 1;
                continue;
            }
            if k == h2 {
                (h0, h1, h2) = (h2, h0, h1);
                d2 += 1;
                continue;
            }
            if k == h3 {
                (h0, h1, h2, h3) = (h3, h0, h1, h2);
                d3 += 1;
                continue;
            }
        }
        s.set_top_four([h0, h1, h2, h3]);
        s.access(k);
        if crosses {
            s.access(base | (va + 4096 - (va & 0xfff)) >> shift);
            crossings += 1;
        }
        [h0, h1, h2, h3] = s.top_four();
    }
    s.set_top_four([h0, h1, h2, h3]);
    for (hits, d) in s.head_hits.iter_mut().zip([d0, d1, d2, d3]) {
        *hits += d;
    }
    (n, n as u64 + crossings)
}
