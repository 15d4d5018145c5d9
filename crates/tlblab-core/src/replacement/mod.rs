//! Replacement policies for set-associative structures (TLB levels, caches, page-walk caches).
//!
//! One file per policy; `Replacement` is the enum the hot path dispatches on statically.
//!
//! Contract shared by every policy (state is per set, `ways` slots each):
//! - `on_hit(set, way)` runs on every hit; `on_fill(set, way)` runs exactly once per fill.
//! - `victim(set, allowed)` picks a way among the bits set in `allowed` (never empty; the caller
//!   has already preferred invalid ways and removed locked ones). It must not change state,
//!   except that `Random` advances its generator (the only state it has).
//! - `on_invalidate(set, way)` runs when a valid entry is invalidated.
//!
//! Every operation is O(ways) or better and allocation-free.

use serde::{Deserialize, Serialize};

mod fifo;
mod lru;
pub(crate) mod order;

pub(crate) use order::OrderList;
mod plru;
mod random;

pub use fifo::Fifo;
pub use lru::Lru;
pub use plru::TreePlru;
pub use random::RandomRepl;

/// Which policy a structure uses (the `replacement` field of a TLB, cache or page-walk cache).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReplacementKind {
    #[default]
    Lru,
    /// Tree pseudo-LRU; needs a power-of-two number of ways.
    Plru,
    Fifo,
    /// Uniformly random among allowed ways, from a generator seeded by the run's seed.
    Random,
}

impl ReplacementKind {
    pub fn name(self) -> &'static str {
        match self {
            ReplacementKind::Lru => "lru",
            ReplacementKind::Plru => "plru",
            ReplacementKind::Fifo => "fifo",
            ReplacementKind::Random => "random",
        }
    }
}

/// Replacement state for `sets × ways` slots.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub enum Replacement {
    Lru(Lru),
    Plru(TreePlru),
    Fifo(Fifo),
    Random(RandomRepl),
}

impl Replacement {
    pub fn new(kind: ReplacementKind, sets: usize, ways: usize, seed: u64) -> Replacement {
        match kind {
            ReplacementKind::Lru => Replacement::Lru(Lru::new(sets, ways)),
            ReplacementKind::Plru => Replacement::Plru(TreePlru::new(sets, ways)),
            ReplacementKind::Fifo => Replacement::Fifo(Fifo::new(sets, ways)),
            ReplacementKind::Random => Replacement::Random(RandomRepl::new(ways, seed)),
        }
    }

    #[inline(always)]
    pub fn on_hit(&mut self, set: usize, way: usize) {
        match self {
            Replacement::Lru(p) => p.touch(set, way),
            Replacement::Plru(p) => p.touch(set, way),
            Replacement::Fifo(_) | Replacement::Random(_) => {}
        }
    }

    #[inline(always)]
    pub fn on_fill(&mut self, set: usize, way: usize) {
        match self {
            Replacement::Lru(p) => p.touch(set, way),
            Replacement::Plru(p) => p.touch(set, way),
            Replacement::Fifo(p) => p.on_fill(set, way),
            Replacement::Random(_) => {}
        }
    }

    #[inline]
    pub fn on_invalidate(&mut self, set: usize, way: usize) {
        match self {
            Replacement::Lru(p) => p.forget(set, way),
            Replacement::Fifo(p) => p.forget(set, way),
            Replacement::Plru(_) | Replacement::Random(_) => {}
        }
    }

    /// Host prefetch hint for the state of `set` (only the packed LRU/FIFO order is worth it).
    #[inline]
    pub(crate) fn prefetch(&self, set: usize) {
        match self {
            Replacement::Lru(p) => p.prefetch(set),
            Replacement::Fifo(p) => p.prefetch(set),
            Replacement::Plru(_) | Replacement::Random(_) => {}
        }
    }

    /// The victim when every way may be chosen (no locked entries): the common, fast case.
    #[inline(always)]
    pub fn victim_any(&mut self, set: usize) -> usize {
        match self {
            Replacement::Lru(p) => p.victim_any(set),
            Replacement::Fifo(p) => p.victim_any(set),
            Replacement::Plru(p) => p.victim_any(set),
            Replacement::Random(p) => p.victim_any(),
        }
    }

    /// The LRU order, if this is LRU (the fast lane's shaped levels, `tlb/fast.rs`).
    #[inline(always)]
    pub(crate) fn lru_order(&mut self) -> Option<&mut OrderList> {
        match self {
            Replacement::Lru(p) => Some(p.order_mut()),
            _ => None,
        }
    }

    /// `lru_order`, to read.
    pub(crate) fn lru_order_ref(&self) -> Option<&OrderList> {
        match self {
            Replacement::Lru(p) => Some(p.order()),
            _ => None,
        }
    }

    /// Picks the victim when every way may be chosen and records its fill: `victim_any` then
    /// `on_fill` on the way it returns, with one dispatch (and, for LRU and FIFO, one rotation
    /// of the set's order). The fill path of a full set without locked entries.
    #[inline(always)]
    pub fn fill_victim(&mut self, set: usize) -> usize {
        match self {
            Replacement::Lru(p) => p.fill_victim(set),
            Replacement::Fifo(p) => p.fill_victim(set),
            Replacement::Plru(p) => {
                let w = p.victim_any(set);
                p.touch(set, w);
                w
            }
            Replacement::Random(p) => p.victim_any(),
        }
    }

    /// The way a fill of `set` takes, its fill recorded: `free` (an invalid way the caller
    /// found) if there is one, else the victim (`fill_victim`). Every way may be chosen.
    #[inline(always)]
    pub fn fill_way(&mut self, set: usize, free: Option<usize>) -> usize {
        match free {
            Some(w) => {
                self.on_fill(set, w);
                w
            }
            None => self.fill_victim(set),
        }
    }

    /// A uniform draw of 0..n from a random policy's generator (`RandomRepl::draw`): the victim
    /// among a set's ways and a lockable array's slots, `TlbConfig::array_holds_unlocked`,
    /// which validation allows with random replacement only.
    pub fn random_draw(&mut self, n: usize) -> usize {
        match self {
            Replacement::Random(p) => p.draw(n),
            _ => unreachable!("array_holds_unlocked is validated to need random replacement"),
        }
    }

    /// `allowed` is a bit mask over ways (bit w = way w may be chosen); ways ≤ 64 per mask word.
    #[inline]
    pub fn victim(&mut self, set: usize, allowed: &[u64]) -> usize {
        match self {
            Replacement::Lru(p) => p.victim(set, allowed),
            Replacement::Plru(p) => p.victim(set, allowed),
            Replacement::Fifo(p) => p.victim(set, allowed),
            Replacement::Random(p) => p.victim(allowed),
        }
    }
}

/// Iterates the indices of set bits of a multi-word mask, lowest first.
#[inline]
pub(crate) fn mask_iter(mask: &[u64]) -> impl Iterator<Item = usize> + '_ {
    mask.iter().enumerate().flat_map(|(w, &bits)| {
        let mut b = bits;
        std::iter::from_fn(move || {
            if b == 0 {
                None
            } else {
                let i = b.trailing_zeros() as usize;
                b &= b - 1;
                Some(w * 64 + i)
            }
        })
    })
}

#[inline]
pub(crate) fn mask_has(mask: &[u64], i: usize) -> bool {
    mask[i / 64] >> (i % 64) & 1 == 1
}

/// The driver of the differential tests of two forms of one policy: `steps` steps, each drawn
/// as a set, a way and one of `ops` operations (in that order), given with the generator to
/// `step`, which applies it to both forms and compares them.
#[cfg(test)]
pub(crate) fn random_steps(
    rng: &mut tlblab_types::SplitMix64,
    steps: usize,
    (sets, ways): (usize, usize),
    ops: u64,
    mut step: impl FnMut(&mut tlblab_types::SplitMix64, u64, usize, usize),
) {
    for _ in 0..steps {
        let set = rng.below(sets as u64) as usize;
        let w = rng.below(ways as u64) as usize;
        let op = rng.below(ops);
        step(rng, op, set, w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fill_victim` is `victim_any` then `on_fill`, for every policy and set size, from any
    /// state that hits, fills and invalidations reach.
    #[test]
    fn fill_victim_is_victim_any_then_on_fill() {
        let mut rng = tlblab_types::SplitMix64::new(11);
        for kind in [
            ReplacementKind::Lru,
            ReplacementKind::Plru,
            ReplacementKind::Fifo,
            ReplacementKind::Random,
        ] {
            for ways in [1usize, 2, 3, 4, 8, 16, 17, 32, 64] {
                if kind == ReplacementKind::Plru && !ways.is_power_of_two() {
                    continue;
                }
                let sets = 3;
                let mut fused = Replacement::new(kind, sets, ways, 5);
                let mut stepwise = Replacement::new(kind, sets, ways, 5);
                super::random_steps(&mut rng, 3000, (sets, ways), 4, |_, op, set, w| match op {
                    0 => {
                        fused.on_hit(set, w);
                        stepwise.on_hit(set, w);
                    }
                    1 => {
                        fused.on_invalidate(set, w);
                        stepwise.on_invalidate(set, w);
                    }
                    _ => {
                        let a = fused.fill_victim(set);
                        let b = stepwise.victim_any(set);
                        stepwise.on_fill(set, b);
                        assert_eq!(a, b, "{kind:?}, {ways} ways");
                    }
                });
            }
        }
    }
}
