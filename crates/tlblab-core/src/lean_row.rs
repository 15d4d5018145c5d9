//! What the lean layouts of caches (`cache/lean.rs`) and page-walk caches (`walker/lean.rs`)
//! share: sets of at most 16 ways whose fingerprints and keys are rows of 16, searched with
//! one fingerprint compare; a power-of-two number of sets; LRU order in one packed word
//! (`replacement/order.rs`).

use crate::replacement::order::{low_nibbles, rotate_oldest};
use crate::tags::{fingerprint, row_matches};

/// Ways a lean set has room for.
pub(crate) const ROW: usize = 16;

/// The numbers a lean layout's geometry fixes, computed once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LeanGeometry {
    pub(crate) ways: usize,
    /// Bits 0..ways: the ways in use.
    pub(crate) way_mask: u64,
    set_mask: u64,
    /// The shift of the oldest position in an order word (`4 * (ways - 1)`) and the positions
    /// in use (`low_nibbles(ways)`): a fill of a full set computes neither (`PackedOrder`
    /// keeps them for the same reason).
    oldest_shift: u32,
    in_use: u64,
}

impl LeanGeometry {
    /// Whether `sets` sets of `ways` ways can take a lean layout (the policy must be LRU too).
    pub(crate) fn fits(sets: usize, ways: usize) -> bool {
        sets.is_power_of_two() && (1..=ROW).contains(&ways)
    }

    pub(crate) fn new(sets: usize, ways: usize) -> LeanGeometry {
        assert!(Self::fits(sets, ways), "{sets} sets of {ways} ways");
        LeanGeometry {
            ways,
            way_mask: (1u64 << ways) - 1,
            set_mask: sets as u64 - 1,
            oldest_shift: 4 * (ways as u32 - 1),
            in_use: low_nibbles(ways),
        }
    }

    /// A set's order word before any access: `PackedOrder`'s, way 0 the oldest. (The order is
    /// only consulted once a set is full, and by then every way has been made the most
    /// recent, so this choice never shows.)
    pub(crate) fn initial_order(&self) -> u64 {
        (0..self.ways).fold(0u64, |o, p| o | ((self.ways - 1 - p) as u64) << (4 * p))
    }

    /// The set of `key`.
    #[inline(always)]
    pub(crate) fn set_of(&self, key: u64) -> usize {
        (key & self.set_mask) as usize
    }

    /// The least recently used way of a full set, made the most recent.
    #[inline(always)]
    pub(crate) fn take_oldest(&self, order: &mut u64) -> usize {
        rotate_oldest(order, self.oldest_shift, self.in_use) % ROW
    }
}

/// The lowest way w of a row among `way_mask`'s whose key is `key` and for which `also(w)`
/// holds: the fingerprint compare picks the candidates, the keys decide.
#[inline(always)]
pub(crate) fn row_find(
    fps: &[u8; ROW],
    keys: &[u64; ROW],
    way_mask: u64,
    key: u64,
    also: impl Fn(usize) -> bool,
) -> Option<usize> {
    let mut candidates = row_matches(fps, fingerprint(key)) & way_mask;
    while candidates != 0 {
        let w = candidates.trailing_zeros() as usize % ROW;
        if keys[w] == key && also(w) {
            return Some(w);
        }
        candidates &= candidates - 1;
    }
    None
}
