//! Tree pseudo-LRU: a binary tree of `ways - 1` bits per set; each bit points towards the
//! less recently used half. A touch flips the bits on the path to point away from the way.
//!
//! When the tree's victim is not allowed (locked), we descend preferring the pointed-to half but
//! fall back to the other half when the pointed-to subtree has no allowed way — the behaviour of
//! PLRU with way-masking as used for TLB lockdown (seed 004 §III).

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct TreePlru {
    ways: usize,
    bits: Vec<bool>,
}

impl TreePlru {
    pub fn new(sets: usize, ways: usize) -> Self {
        assert!(
            ways.is_power_of_two(),
            "tree-PLRU needs a power-of-two number of ways (validated in config)"
        );
        TreePlru {
            ways,
            bits: vec![false; sets * ways.max(2)],
        }
    }

    #[inline]
    pub fn touch(&mut self, set: usize, way: usize) {
        if self.ways == 1 {
            return;
        }
        let base = set * self.ways;
        let (mut node, mut lo, mut hi) = (1usize, 0usize, self.ways);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            // bit = true means "the victim is in the upper half".
            if way < mid {
                self.bits[base + node] = true;
                node *= 2;
                hi = mid;
            } else {
                self.bits[base + node] = false;
                node = node * 2 + 1;
                lo = mid;
            }
        }
    }

    /// Follows the tree bits to the pseudo-least-recently-used way.
    #[inline]
    pub fn victim_any(&self, set: usize) -> usize {
        if self.ways == 1 {
            return 0;
        }
        let base = set * self.ways;
        let (mut node, mut lo, mut hi) = (1usize, 0usize, self.ways);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if self.bits[base + node] {
                node = node * 2 + 1;
                lo = mid;
            } else {
                node *= 2;
                hi = mid;
            }
        }
        lo
    }

    #[inline]
    pub fn victim(&self, set: usize, allowed: &[u64]) -> usize {
        if self.ways == 1 {
            return 0;
        }
        let base = set * self.ways;
        let any_allowed = |lo: usize, hi: usize| (lo..hi).any(|w| super::mask_has(allowed, w));
        let (mut node, mut lo, mut hi) = (1usize, 0usize, self.ways);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            let go_upper = self.bits[base + node];
            let upper_ok = any_allowed(mid, hi);
            let lower_ok = any_allowed(lo, mid);
            if (go_upper && upper_ok) || !lower_ok {
                node = node * 2 + 1;
                lo = mid;
            } else {
                node *= 2;
                hi = mid;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One set of four ways, touched 0, 1, 2, 3.
    fn touched_in_order() -> TreePlru {
        let mut p = TreePlru::new(1, 4);
        for w in 0..4 {
            p.touch(0, w);
        }
        p
    }

    #[test]
    fn given_four_ways_touched_in_order_then_victim_is_the_first() {
        let mut p = touched_in_order();
        assert_eq!(p.victim(0, &[0b1111]), 0);
        p.touch(0, 0);
        assert_eq!(p.victim(0, &[0b1111]), 2);
    }

    #[test]
    fn locked_victim_is_skipped() {
        assert_eq!(touched_in_order().victim(0, &[0b1110]), 1);
    }
}
