//! A per-set ordered list of ways (most recent first), with O(1) move-to-front and O(1) access
//! to the oldest: the shared bookkeeping of LRU (ordered by use) and FIFO (ordered by fill).
//!
//! Two representations, one behaviour:
//! - up to 16 ways, a set's order is one `u64` of 4-bit way numbers, most recent in the lowest
//!   nibble: every operation is a few shifts and masks on one word, and a whole cache's order
//!   state is 8 bytes per set (a 32 MiB simulated L3 keeps 256 KiB of it, not megabytes of
//!   links), which is what keeps the host's caches warm on large simulated caches;
//! - more ways, `prev`/`next` index arrays, one circular doubly linked list per set.
//!
//! Neither allocates after construction.

/// A policy over an `OrderList`: LRU (`lru.rs`, `Ordered<ByUse>`) and FIFO (`fifo.rs`,
/// `Ordered<ByFill>`) differ only in what moves a way to the front (every hit and fill, or a
/// fill alone), so the victim choice, the forgetting of an invalidated way and the one-step
/// replacement of a full set are theirs both, here; each policy's file adds its own move.
/// `K` is a marker: it is not saved (a checkpoint holds the `order` alone, as before).
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
#[serde(bound = "")]
pub struct Ordered<K> {
    order: OrderList,
    #[serde(skip)]
    kind: std::marker::PhantomData<K>,
}

impl<K> Ordered<K> {
    pub fn new(sets: usize, ways: usize) -> Self {
        Ordered {
            order: OrderList::new(sets, ways),
            kind: std::marker::PhantomData,
        }
    }

    /// The way to the front of its set's order (a fill under either policy, a hit under LRU).
    #[inline(always)]
    pub(super) fn move_to_front(&mut self, set: usize, way: usize) {
        self.order.move_to_front(set, way);
    }

    #[inline(always)]
    pub(crate) fn order_mut(&mut self) -> &mut OrderList {
        &mut self.order
    }

    pub(crate) fn order(&self) -> &OrderList {
        &self.order
    }

    #[inline]
    pub fn forget(&mut self, set: usize, way: usize) {
        self.order.move_to_back(set, way);
    }

    #[inline]
    pub fn victim(&self, set: usize, allowed: &[u64]) -> usize {
        self.order.oldest_allowed(set, allowed)
    }

    #[inline]
    pub fn victim_any(&self, set: usize) -> usize {
        self.order.oldest(set)
    }

    /// `victim_any` then the fill of that way, in one step (the replacement of a full set).
    #[inline(always)]
    pub fn fill_victim(&mut self, set: usize) -> usize {
        self.order.recycle_oldest(set)
    }

    #[inline]
    pub(crate) fn prefetch(&self, set: usize) {
        self.order.prefetch(set);
    }
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
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
    pub(crate) fn move_to_front(&mut self, set: usize, w: usize) {
        match self {
            OrderList::Packed(p) => p.move_to_front(set, w),
            OrderList::Linked(l) => l.move_to_front(set, w),
        }
    }

    /// Makes the oldest way the most recent and returns it: `oldest` then `move_to_front`, the
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
    pub(crate) fn move_to_back(&mut self, set: usize, w: usize) {
        match self {
            OrderList::Packed(p) => p.move_to_back(set, w),
            OrderList::Linked(l) => l.move_to_back(set, w),
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

    /// The ways of `set`, most recent first (all of them, valid or not). O(ways); not on the
    /// access path (seed 000's TLB interfaces read a gem5 table in this order).
    pub(crate) fn newest_first(&self, set: usize) -> Vec<usize> {
        match self {
            OrderList::Packed(p) => {
                let word = p.sets[set];
                (0..p.ways)
                    .map(|k| ((word >> (4 * k)) & 0xf) as usize)
                    .collect()
            }
            OrderList::Linked(l) => {
                let base = set * l.ways;
                let mut w = l.heads[set] as usize;
                let mut out = Vec::with_capacity(l.ways);
                for _ in 0..l.ways {
                    out.push(w);
                    w = l.links[base + w][NEXT] as usize;
                }
                out
            }
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

/// The position of way `w` in the packed order `order` (it is there exactly once).
#[inline(always)]
fn packed_position(order: u64, w: usize) -> usize {
    // Zero nibbles of order ^ (w in every nibble): the lowest one found by the classic
    // has-zero test is exact (borrows only create false hits above a true zero), and the
    // unused nibbles above `ways` lie above the true one.
    let x = order ^ (w as u64).wrapping_mul(0x1111_1111_1111_1111);
    let z = x.wrapping_sub(0x1111_1111_1111_1111) & !x & 0x8888_8888_8888_8888;
    debug_assert!(z != 0, "way {w} not in order {order:#x}");
    z.trailing_zeros() as usize / 4
}

/// Makes way `w` the most recent in one set's packed order.
#[inline(always)]
pub(crate) fn packed_to_front(order: &mut u64, w: usize) {
    let o = *order;
    if o & 0xf == w as u64 {
        return;
    }
    // Here 1 ≤ p ≤ 15, so both masks are shifts of all ones, without `low_nibbles`' branch.
    let p = packed_position(o, w);
    let below = u64::MAX >> (64 - 4 * p);
    let through = u64::MAX >> (60 - 4 * p);
    *order = (o & !through) | ((o & below) << 4) | w as u64;
}

/// The oldest way of one set's packed order (of `ways` ways) moved to the front, every other
/// way one position older; returns it.
#[inline(always)]
pub(crate) fn packed_recycle_oldest(order: &mut u64, ways: usize) -> usize {
    // Built here rather than through `new`, whose check would sit on the pair loop's path.
    let shape = PackedShape {
        oldest_shift: 4 * (ways as u32 - 1),
        in_use: low_nibbles(ways),
    };
    shape.rotate_oldest(order)
}

/// What a packed order word's number of ways fixes, computed once: the shift of the oldest
/// position (`4 * (ways - 1)`) and the positions in use (`low_nibbles(ways)`), so that the fill
/// of a full set (a cache miss, every level of every walk reference of a random stream)
/// computes neither. `PackedOrder` and the lean layouts (`lean_row.rs`) keep one.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug)]
pub(crate) struct PackedShape {
    oldest_shift: u32,
    in_use: u64,
}

impl PackedShape {
    pub(crate) fn new(ways: usize) -> PackedShape {
        assert!(
            (1..=16).contains(&ways),
            "a packed order holds 1 to 16 ways, not {ways}"
        );
        PackedShape {
            oldest_shift: 4 * (ways as u32 - 1),
            in_use: low_nibbles(ways),
        }
    }

    /// A set's word before any access: way 0 the oldest, way `ways - 1` the most recent (the
    /// linked form's initial order too).
    pub(crate) fn initial(ways: usize) -> u64 {
        (0..ways).fold(0u64, |o, p| o | ((ways - 1 - p) as u64) << (4 * p))
    }

    /// The oldest way of `order`.
    #[inline(always)]
    fn oldest(&self, order: u64) -> usize {
        ((order >> self.oldest_shift) & 0xf) as usize
    }

    /// `packed_recycle_oldest`: the oldest way moved to the front, every other way one
    /// position older; returns it.
    #[inline(always)]
    pub(crate) fn rotate_oldest(&self, order: &mut u64) -> usize {
        let o = *order;
        let w = (o >> self.oldest_shift) & 0xf;
        *order = ((o << 4) & self.in_use) | w;
        w as usize
    }
}

/// The order of each set as nibbles: position 0 = most recent, position `ways - 1` = oldest.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub(crate) struct PackedOrder {
    ways: usize,
    shape: PackedShape,
    sets: Vec<u64>,
}

impl PackedOrder {
    fn new(sets: usize, ways: usize) -> Self {
        PackedOrder {
            ways,
            shape: PackedShape::new(ways),
            sets: vec![PackedShape::initial(ways); sets],
        }
    }

    /// Every set's order word, for code that works on the words
    /// directly (`packed_to_front`, `packed_recycle_oldest`; tlb/pair/).
    pub(crate) fn words_mut(&mut self) -> &mut [u64] {
        &mut self.sets
    }

    #[inline(always)]
    pub(crate) fn move_to_front(&mut self, set: usize, w: usize) {
        packed_to_front(&mut self.sets[set], w);
    }

    #[inline]
    fn move_to_back(&mut self, set: usize, w: usize) {
        let order = self.sets[set];
        let p = packed_position(order, w);
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
        self.shape.oldest(self.sets[set])
    }

    /// The oldest way moved to the front: every other way one position older.
    #[inline(always)]
    pub(crate) fn recycle_oldest(&mut self, set: usize) -> usize {
        self.shape.rotate_oldest(&mut self.sets[set])
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

/// `LinkedOrder::links[i]`: the neighbours of slot i, more recent and older. The list is
/// circular: the most recent way's more recent neighbour is the oldest way, and the oldest
/// way's older neighbour the most recent one.
const PREV: usize = 0;
const NEXT: usize = 1;

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub(crate) struct LinkedOrder {
    ways: usize,
    /// Per slot, [prev, next]: a slot's two links in one 8-byte element, so a relink reads one
    /// host line and one bounds check per slot touched.
    links: Vec<[u32; 2]>,
    /// Per set, its most recent way. Its oldest is `links[head][PREV]`, so making the oldest
    /// way the most recent (the replacement of every full set) only moves the head.
    heads: Vec<u32>,
}

impl LinkedOrder {
    fn new(sets: usize, ways: usize) -> Self {
        // Initial order: way 0 is the oldest, so untouched ways are chosen lowest first; the
        // most recent is way `ways - 1`.
        let mut links = vec![[0; 2]; sets * ways];
        for s in 0..sets {
            for w in 0..ways {
                let more_recent = (w + 1) % ways;
                let older = (w + ways - 1) % ways;
                links[s * ways + w] = [more_recent as u32, older as u32];
            }
        }
        LinkedOrder {
            ways,
            links,
            heads: vec![ways as u32 - 1; sets],
        }
    }

    #[inline(always)]
    pub(crate) fn move_to_front(&mut self, set: usize, w: usize) {
        let base = set * self.ways;
        linked_to_front(
            &mut self.links[base..base + self.ways],
            &mut self.heads[set],
            w,
        );
    }

    #[inline]
    fn move_to_back(&mut self, set: usize, w: usize) {
        let base = set * self.ways;
        let links = &mut self.links[base..base + self.ways];
        let head = &mut self.heads[set];
        if w == *head as usize {
            // The head becomes the oldest by moving the head one older: a rotation.
            *head = links[w][NEXT];
        } else if w != links[*head as usize][PREV] as usize {
            // Neither end: out of its place, in between the oldest and the head.
            unlink(links, w);
            insert_before_head(links, *head, w);
        }
    }

    #[inline]
    fn oldest(&self, set: usize) -> usize {
        self.links[set * self.ways + self.heads[set] as usize][PREV] as usize
    }

    /// The oldest way moved to the front: every other way one position older.
    #[inline(always)]
    pub(crate) fn recycle_oldest(&mut self, set: usize) -> usize {
        let base = set * self.ways;
        linked_recycle_oldest(&self.links[base..base + self.ways], &mut self.heads[set])
    }

    /// The links and head of set 0 (a fully associative level's one set), for code that works
    /// on them directly (`linked_to_front`, `linked_recycle_oldest`; tlb/pair/).
    pub(crate) fn first_set_mut(&mut self) -> (&mut [[u32; 2]], &mut u32) {
        (&mut self.links[..self.ways], &mut self.heads[0])
    }

    fn oldest_allowed(&self, set: usize, allowed: &[u64]) -> usize {
        let base = set * self.ways;
        let mut w = self.oldest(set);
        for _ in 0..self.ways {
            if super::mask_has(allowed, w) {
                return w;
            }
            w = self.links[base + w][PREV] as usize;
        }
        unreachable!("allowed mask is never empty")
    }
}

/// Takes way `w` out of its set's circular list (`links[w]` for the set's ways); the set has
/// another way, and `w` is not its head.
#[inline(always)]
fn unlink(links: &mut [[u32; 2]], w: usize) {
    let [p, n] = links[w];
    links[p as usize][NEXT] = n;
    links[n as usize][PREV] = p;
}

/// Puts way `w`, out of the list, between the oldest way and the head `head`.
#[inline(always)]
fn insert_before_head(links: &mut [[u32; 2]], head: u32, w: usize) {
    let oldest = links[head as usize][PREV];
    links[w] = [oldest, head];
    links[oldest as usize][NEXT] = w as u32;
    links[head as usize][PREV] = w as u32;
}

/// `LinkedOrder::move_to_front` on one set's links (`links[w]` for its ways) and head.
#[inline(always)]
pub(crate) fn linked_to_front(links: &mut [[u32; 2]], head: &mut u32, w: usize) {
    let h = *head;
    if h as usize == w {
        return;
    }
    if links[h as usize][PREV] as usize != w {
        // Not the oldest: out of its place, in just before the head. (The oldest is there
        // already: the circle makes it most recent by moving the head alone.)
        unlink(links, w);
        insert_before_head(links, h, w);
    }
    *head = w as u32;
}

/// `LinkedOrder::recycle_oldest` on one set's links and head: the oldest way, just before the
/// head in the circle, becomes the head. Returns it.
#[inline(always)]
pub(crate) fn linked_recycle_oldest(links: &[[u32; 2]], head: &mut u32) -> usize {
    let oldest = links[*head as usize][PREV];
    *head = oldest;
    oldest as usize
}

/// `linked_recycle_oldest` on a set of `W` ways known at compile time (the fast lane's pair
/// loops): the head indexes through `% W`, a mask for the compiled sizes, without a bounds
/// check (it only ever holds way numbers below `W`).
#[inline(always)]
pub(crate) fn linked_recycle_oldest_of<const W: usize>(
    links: &[[u32; 2]; W],
    head: &mut u32,
) -> usize {
    let oldest = links[*head as usize % W][PREV];
    *head = oldest;
    oldest as usize % W
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both forms list a set's ways most recent first: the last way moved to the front first,
    /// the oldest last, every way once, and the same list.
    #[test]
    fn newest_first_lists_every_way_from_the_most_recent_to_the_oldest() {
        let mut rng = tlblab_types::SplitMix64::new(11);
        for ways in 1..=16usize {
            let sets = 2;
            let mut p = OrderList::Packed(PackedOrder::new(sets, ways));
            let mut l = OrderList::Linked(LinkedOrder::new(sets, ways));
            for _ in 0..500 {
                let set = rng.below(sets as u64) as usize;
                let w = rng.below(ways as u64) as usize;
                if rng.below(4) == 0 {
                    p.move_to_back(set, w);
                    l.move_to_back(set, w);
                } else {
                    p.move_to_front(set, w);
                    l.move_to_front(set, w);
                    assert_eq!(p.newest_first(set)[0], w);
                }
                let order = p.newest_first(set);
                assert_eq!(order, l.newest_first(set), "ways {ways}");
                assert_eq!(*order.last().unwrap(), p.oldest(set));
                let mut sorted = order.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..ways).collect::<Vec<_>>());
            }
        }
    }

    /// The packed form behaves exactly like the linked one under random operations.
    #[test]
    fn packed_and_linked_orders_agree() {
        let mut rng = tlblab_types::SplitMix64::new(7);
        for ways in 1..=16usize {
            let sets = 3;
            let mut p = PackedOrder::new(sets, ways);
            let mut l = LinkedOrder::new(sets, ways);
            super::super::random_steps(&mut rng, 2000, (sets, ways), 3, |rng, op, set, w| {
                match op {
                    0 => {
                        p.move_to_front(set, w);
                        l.move_to_front(set, w);
                    }
                    1 => {
                        p.move_to_back(set, w);
                        l.move_to_back(set, w);
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
            });
        }
    }

    /// The linked form, at any number of ways, behaves like a plain list of ways most recent
    /// first.
    #[test]
    fn linked_order_agrees_with_a_plain_list() {
        let mut rng = tlblab_types::SplitMix64::new(11);
        for ways in (1..=20usize).chain([31, 32, 33, 63, 64, 65, 70]) {
            let sets = 3;
            let mut l = LinkedOrder::new(sets, ways);
            let mut plain: Vec<Vec<usize>> = vec![(0..ways).rev().collect(); sets];
            for _ in 0..3000 {
                let set = rng.below(sets as u64) as usize;
                let w = rng.below(ways as u64) as usize;
                let list = &mut plain[set];
                match rng.below(4) {
                    0 => {
                        l.move_to_front(set, w);
                        list.retain(|&x| x != w);
                        list.insert(0, w);
                    }
                    1 => {
                        l.move_to_back(set, w);
                        list.retain(|&x| x != w);
                        list.push(w);
                    }
                    2 => {
                        let got = l.recycle_oldest(set);
                        let oldest = list.pop().unwrap();
                        list.insert(0, oldest);
                        assert_eq!(got, oldest, "ways {ways}");
                    }
                    _ => {
                        let allowed = [rng.next_u64(), rng.next_u64()];
                        let mut allowed = allowed;
                        allowed[w / 64] |= 1 << (w % 64);
                        let want = *list
                            .iter()
                            .rev()
                            .find(|&&x| allowed[x / 64] >> (x % 64) & 1 == 1)
                            .unwrap();
                        assert_eq!(l.oldest_allowed(set, &allowed), want, "ways {ways}");
                    }
                }
                assert_eq!(l.oldest(set), *list.last().unwrap(), "ways {ways}");
                // The whole order, walking the circle from the head.
                let base = set * ways;
                let mut walk = vec![l.heads[set] as usize];
                for _ in 1..ways {
                    walk.push(l.links[base + walk[walk.len() - 1]][NEXT] as usize);
                }
                assert_eq!(&walk, list, "ways {ways}");
            }
        }
    }
}
