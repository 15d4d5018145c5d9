//! What the lean layouts of caches (`cache/lean.rs`) and page-walk caches (`walker/lean.rs`)
//! share: sets of at most 16 ways whose fingerprints and keys are rows of 16, searched with
//! one fingerprint compare; a power-of-two number of sets; LRU order in one packed word
//! (`replacement/order.rs`).

use crate::replacement::order::PackedShape;
use crate::tags::{fingerprint, row_matches};

/// Ways a lean set has room for.
pub(crate) const ROW: usize = 16;

/// The numbers a lean layout's geometry fixes, computed once.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug)]
pub(crate) struct LeanGeometry {
    pub(crate) ways: usize,
    /// Bits 0..ways: the ways in use.
    pub(crate) way_mask: u64,
    set_mask: u64,
    order: PackedShape,
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
            order: PackedShape::new(ways),
        }
    }

    /// A set's order word before any access (`PackedShape::initial`: way 0 the oldest, up).
    /// The lean cache takes a set's invalid ways in this order, oldest first (cache/lean.rs);
    /// the lean page-walk cache searches for its lowest invalid way and consults the order
    /// only once a set is full, when every way has been made the most recent.
    pub(crate) fn initial_order(&self) -> u64 {
        PackedShape::initial(self.ways)
    }

    /// The set of `key`.
    #[inline(always)]
    pub(crate) fn set_of(&self, key: u64) -> usize {
        (key & self.set_mask) as usize
    }

    /// The least recently used way of a full set, made the most recent.
    #[inline(always)]
    pub(crate) fn take_oldest(&self, order: &mut u64) -> usize {
        self.order.rotate_oldest(order) % ROW
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
