//! A per-set ordered list of ways (most recent first), with O(1) move-to-front and O(1) access
//! to the oldest: the shared bookkeeping of LRU (ordered by use) and FIFO (ordered by fill).
//!
//! Two representations, one behaviour:
//! - up to 16 ways, a set's order is one `u64` of 4-bit way numbers, most recent in the lowest
//!   nibble: every operation is a few shifts and masks on one word, and a whole cache's order
//!   state is 8 bytes per set (a 32 MiB simulated L3 keeps 256 KiB of it, not megabytes of
//!   links), which is what keeps the host's caches warm on large simulated caches;
//! - more ways, `prev`/`next` index arrays, one doubly linked list per set.
//! Neither allocates after construction.

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub(crate) enum OrderList {
    Packed(PackedOrder),
    Linked(LinkedOrder),
}

impl OrderList {
    pub(crate) fn new(sets: usize, ways: usize) -> Self {
        if ways <= 16 {
            OrderList::Packed(PackedOrder::new(sets, ways))
        } else {
            OrderList::Linked(LinkedOrder::new(sets, ways))
        }
    }

    /// Makes `w` the most recent of its set. O(1).
    #[inline(always)]
    pub(crate) fn to_front(&mut self, set: usize, w: usize) {
        match self {
            OrderList::Packed(p) => p.to_front(set, w),
            OrderList::Linked(l) => l.to_front(set, w),
        }
    }

    /// Makes the oldest way the most recent and returns it: `oldest` then `to_front`, the
    /// replacement of a full set, as one rotation of the packed order. O(1).
    #[inline(always)]
    pub(crate) fn recycle_oldest(&mut self, set: usize) -> usize {
        match self {
            OrderList::Packed(p) => p.recycle_oldest(set),
            OrderList::Linked(l) => l.recycle_oldest(set),
        }
    }

    /// Makes `w` the oldest of its set (an invalidated way). O(1).
    #[inline]
    pub(crate) fn to_back(&mut self, set: usize, w: usize) {
        match self {
            OrderList::Packed(p) => p.to_back(set, w),
            OrderList::Linked(l) => l.to_back(set, w),
        }
    }

    /// The oldest way. O(1).
    #[inline(always)]
    pub(crate) fn oldest(&self, set: usize) -> usize {
        match self {
            OrderList::Packed(p) => p.oldest(set),
            OrderList::Linked(l) => l.oldest(set),
        }
    }

    /// Host prefetch hint for the order of `set` (the packed form: one word per set).
    #[inline]
    pub(crate) fn prefetch(&self, set: usize) {
        if let OrderList::Packed(p) = self {
            crate::simd::prefetch(&p.sets[set]);
        }
    }

    /// The oldest way allowed by `allowed`, walking from the oldest. O(ways) worst case.
    #[inline]
    pub(crate) fn oldest_allowed(&self, set: usize, allowed: &[u64]) -> usize {
        match self {
            OrderList::Packed(p) => p.oldest_allowed(set, allowed),
            OrderList::Linked(l) => l.oldest_allowed(set, allowed),
        }
    }
}

/// Nibbles below position `k` (k ≤ 16).
#[inline]
fn low_nibbles(k: usize) -> u64 {
    if k >= 16 {
        u64::MAX
    } else {
        (1u64 << (4 * k)) - 1
    }
}

/// The order of each set as nibbles: position 0 = most recent, position `ways - 1` = oldest.
#[derive(Clone, Debug)]
pub(crate) struct PackedOrder {
    ways: usize,
    /// `4 * (ways - 1)`, the shift of the oldest position, and `low_nibbles(ways)`, the
    /// positions in use: fixed by the geometry, kept so that the fill of a full set (a cache
    /// miss, every level of every walk reference of a random stream) computes neither.
    oldest_shift: u32,
    in_use: u64,
    sets: Vec<u64>,
}

impl PackedOrder {
    fn new(sets: usize, ways: usize) -> Self {
        // Same initial order as the linked form: way 0 oldest, way `ways - 1` most recent.
        let mut init = 0u64;
        for p in 0..ways {
            init |= ((ways - 1 - p) as u64) << (4 * p);
        }
        PackedOrder {
            ways,
            oldest_shift: 4 * (ways as u32 - 1),
            in_use: low_nibbles(ways),
            sets: vec![init; sets],
        }
    }

    /// The position of way `w` in `order` (it is there exactly once).
    #[inline(always)]
    fn position(&self, order: u64, w: usize) -> usize {
        // Zero nibbles of order ^ (w in every nibble): the lowest one found by the classic
        // has-zero test is exact (borrows only create false hits above a true zero), and the
        // unused nibbles above `ways` lie above the true one.
        let x = order ^ (w as u64).wrapping_mul(0x1111_1111_1111_1111);
        let z = x.wrapping_sub(0x1111_1111_1111_1111) & !x & 0x8888_8888_8888_8888;
        debug_assert!(z != 0, "way {w} not in order {order:#x}");
        z.trailing_zeros() as usize / 4
    }

    #[inline(always)]
    pub(crate) fn to_front(&mut self, set: usize, w: usize) {
        let order = self.sets[set];
        if order & 0xf == w as u64 {
            return;
        }
        // Here 1 ≤ p ≤ 15, so both masks are shifts of all ones, without `low_nibbles`' branch.
        let p = self.position(order, w);
        let below = u64::MAX >> (64 - 4 * p);
        let through = u64::MAX >> (60 - 4 * p);
        self.sets[set] = (order & !through) | ((order & below) << 4) | w as u64;
    }

    #[inline]
    fn to_back(&mut self, set: usize, w: usize) {
        let order = self.sets[set];
        let p = self.position(order, w);
        let last = self.ways - 1;
        if p == last {
            return;
        }
        let kept_below = order & low_nibbles(p);
        let shifted_above = (order >> 4) & !low_nibbles(p) & low_nibbles(last);
        self.sets[set] = kept_below | shifted_above | ((w as u64) << (4 * last));
    }

    #[inline]
    fn oldest(&self, set: usize) -> usize {
        ((self.sets[set] >> self.oldest_shift) & 0xf) as usize
    }

    /// The oldest way moved to the front: every other way one position older.
    #[inline(always)]
    pub(crate) fn recycle_oldest(&mut self, set: usize) -> usize {
        let order = self.sets[set];
        let w = (order >> self.oldest_shift) & 0xf;
        self.sets[set] = ((order << 4) & self.in_use) | w;
        w as usize
    }

    fn oldest_allowed(&self, set: usize, allowed: &[u64]) -> usize {
        let order = self.sets[set];
        for p in (0..self.ways).rev() {
            let w = ((order >> (4 * p)) & 0xf) as usize;
            if super::mask_has(allowed, w) {
                return w;
            }
        }
        unreachable!("allowed mask is never empty")
    }
}

/// `LinkedOrder::links[i]`: the neighbours of slot i, more recent and older.
const PREV: usize = 0;
const NEXT: usize = 1;
/// `LinkedOrder::ends[set]`: its most recent and oldest way.
const HEAD: usize = 0;
const TAIL: usize = 1;

#[derive(Clone, Debug)]
pub(crate) struct LinkedOrder {
    ways: usize,
    /// Per slot, [prev, next]: a slot's two links in one 8-byte element, so a relink reads one
    /// host line and one bounds check per slot touched.
    links: Vec<[u32; 2]>,
    /// Per set, [head, tail].
    ends: Vec<[u32; 2]>,
}

impl LinkedOrder {
    fn new(sets: usize, ways: usize) -> Self {
        let mut l = LinkedOrder {
            ways,
            links: vec![[NIL; 2]; sets * ways],
            ends: vec![[NIL; 2]; sets],
        };
        // Initial order: way 0 is the oldest, so untouched ways are chosen lowest first.
        for s in 0..sets {
            for w in 0..ways {
                l.push_front(s, w);
            }
        }
        l
    }

    #[inline(always)]
    fn unlink(&mut self, set: usize, w: usize) {
        let base = set * self.ways;
        let [p, n] = self.links[base + w];
        if p == NIL {
            self.ends[set][HEAD] = n;
        } else {
            self.links[base + p as usize][NEXT] = n;
        }
        if n == NIL {
            self.ends[set][TAIL] = p;
        } else {
            self.links[base + n as usize][PREV] = p;
        }
    }

    #[inline(always)]
    fn push_front(&mut self, set: usize, w: usize) {
        let base = set * self.ways;
        let h = self.ends[set][HEAD];
        self.links[base + w] = [NIL, h];
        if h == NIL {
            self.ends[set][TAIL] = w as u32;
        } else {
            self.links[base + h as usize][PREV] = w as u32;
        }
        self.ends[set][HEAD] = w as u32;
    }

    #[inline]
    fn push_back(&mut self, set: usize, w: usize) {
        let base = set * self.ways;
        let t = self.ends[set][TAIL];
        self.links[base + w] = [t, NIL];
        if t == NIL {
            self.ends[set][HEAD] = w as u32;
        } else {
            self.links[base + t as usize][NEXT] = w as u32;
        }
        self.ends[set][TAIL] = w as u32;
    }

    #[inline(always)]
    pub(crate) fn to_front(&mut self, set: usize, w: usize) {
        if self.ends[set][HEAD] as usize != w {
            self.unlink(set, w);
            self.push_front(set, w);
        }
    }

    #[inline]
    fn to_back(&mut self, set: usize, w: usize) {
        if self.ends[set][TAIL] as usize != w {
            self.unlink(set, w);
            self.push_back(set, w);
        }
    }

    #[inline]
    fn oldest(&self, set: usize) -> usize {
        self.ends[set][TAIL] as usize
    }

    /// The tail moved to the head: its predecessor becomes the tail (fewer reads than
    /// `to_front`'s general unlink; the replacement of every full fully associative set).
    #[inline(always)]
    pub(crate) fn recycle_oldest(&mut self, set: usize) -> usize {
        let [h, t] = self.ends[set];
        if t == h {
            return t as usize; // one way
        }
        let base = set * self.ways;
        let new_tail = self.links[base + t as usize][PREV];
        self.links[base + new_tail as usize][NEXT] = NIL;
        self.links[base + t as usize] = [NIL, h];
        self.links[base + h as usize][PREV] = t;
        self.ends[set] = [t, new_tail];
        t as usize
    }

    fn oldest_allowed(&self, set: usize, allowed: &[u64]) -> usize {
        let mut w = self.ends[set][TAIL];
        while w != NIL {
            if super::mask_has(allowed, w as usize) {
                return w as usize;
            }
            w = self.links[set * self.ways + w as usize][PREV];
        }
        unreachable!("allowed mask is never empty")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed form behaves exactly like the linked one under random operations.
    #[test]
    fn packed_and_linked_orders_agree() {
        let mut rng = tlblab_types::SplitMix64::new(7);
        for ways in 1..=16usize {
            let sets = 3;
            let mut p = PackedOrder::new(sets, ways);
            let mut l = LinkedOrder::new(sets, ways);
            for _ in 0..2000 {
                let set = rng.below(sets as u64) as usize;
                let w = rng.below(ways as u64) as usize;
                match rng.below(3) {
                    0 => {
                        p.to_front(set, w);
                        l.to_front(set, w);
                    }
                    1 => {
                        p.to_back(set, w);
                        l.to_back(set, w);
                    }
                    _ => {
                        let allowed = [rng.next_u64() | 1u64 << w];
                        assert_eq!(
                            p.oldest_allowed(set, &allowed),
                            l.oldest_allowed(set, &allowed)
                        );
                    }
                }
                if rng.below(8) == 0 {
                    assert_eq!(p.recycle_oldest(set), l.recycle_oldest(set));
                }
                assert_eq!(p.oldest(set), l.oldest(set), "ways {ways}");
            }
        }
    }
}
