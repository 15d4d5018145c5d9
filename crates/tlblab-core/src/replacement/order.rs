//! A per-set ordered list of ways (most recent first), with O(1) move-to-front and O(1) access
//! to the oldest: the shared bookkeeping of LRU (ordered by use) and FIFO (ordered by fill).
//!
//! Stored as `prev`/`next` index arrays, one doubly linked list per set, so no allocation
//! happens after construction.

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub(crate) struct OrderList {
    ways: usize,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: Vec<u32>,
    tail: Vec<u32>,
}

impl OrderList {
    pub(crate) fn new(sets: usize, ways: usize) -> Self {
        let mut l = OrderList {
            ways,
            prev: vec![NIL; sets * ways],
            next: vec![NIL; sets * ways],
            head: vec![NIL; sets],
            tail: vec![NIL; sets],
        };
        // Initial order: way 0 is the oldest, so untouched ways are chosen lowest first.
        for s in 0..sets {
            for w in 0..ways {
                l.push_front(s, w);
            }
        }
        l
    }

    #[inline]
    fn unlink(&mut self, set: usize, w: usize) {
        let i = set * self.ways + w;
        let (p, n) = (self.prev[i], self.next[i]);
        if p == NIL {
            self.head[set] = n;
        } else {
            self.next[set * self.ways + p as usize] = n;
        }
        if n == NIL {
            self.tail[set] = p;
        } else {
            self.prev[set * self.ways + n as usize] = p;
        }
    }

    #[inline]
    fn push_front(&mut self, set: usize, w: usize) {
        let i = set * self.ways + w;
        let h = self.head[set];
        self.prev[i] = NIL;
        self.next[i] = h;
        if h == NIL {
            self.tail[set] = w as u32;
        } else {
            self.prev[set * self.ways + h as usize] = w as u32;
        }
        self.head[set] = w as u32;
    }

    #[inline]
    fn push_back(&mut self, set: usize, w: usize) {
        let i = set * self.ways + w;
        let t = self.tail[set];
        self.next[i] = NIL;
        self.prev[i] = t;
        if t == NIL {
            self.head[set] = w as u32;
        } else {
            self.next[set * self.ways + t as usize] = w as u32;
        }
        self.tail[set] = w as u32;
    }

    /// Makes `w` the most recent of its set. O(1).
    #[inline]
    pub(crate) fn to_front(&mut self, set: usize, w: usize) {
        if self.head[set] as usize != w {
            self.unlink(set, w);
            self.push_front(set, w);
        }
    }

    /// Makes `w` the oldest of its set (an invalidated way). O(1).
    #[inline]
    pub(crate) fn to_back(&mut self, set: usize, w: usize) {
        if self.tail[set] as usize != w {
            self.unlink(set, w);
            self.push_back(set, w);
        }
    }

    /// The oldest way. O(1).
    #[inline]
    pub(crate) fn oldest(&self, set: usize) -> usize {
        self.tail[set] as usize
    }

    /// The oldest way allowed by `allowed`, walking from the oldest. O(ways) worst case.
    #[inline]
    pub(crate) fn oldest_allowed(&self, set: usize, allowed: &[u64]) -> usize {
        let mut w = self.tail[set];
        while w != NIL {
            if super::mask_has(allowed, w as usize) {
                return w as usize;
            }
            w = self.prev[set * self.ways + w as usize];
        }
        unreachable!("allowed mask is never empty")
    }
}
