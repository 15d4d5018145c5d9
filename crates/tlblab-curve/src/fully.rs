//! `Fully`: LRU stack distances of a fully associative TLB of every size at once.
//!
//! Mattson, Gecsei, Slutz and Traiger, "Evaluation techniques for storage hierarchies", IBM
//! Systems Journal 9(2), 1970: LRU has the inclusion property, so one stack of pages in
//! recency order answers every size: a reference at depth `d` hits every TLB of `d` or more
//! entries and misses every smaller one. The depth is counted, not searched for (Bennett and
//! Kruskal, "LRU stack processing", IBM J. R&D 19(4), 1975): each page keeps the timestamp of
//! its last reference, a Fenwick tree (Fenwick, "A new data structure for cumulative frequency
//! tables", SP&E 24(3), 1994) counts the timestamps still live, and the depth of a page is one
//! more than the live timestamps after its own: O(log n) per reference, nothing allocated.
//! Timestamps are renumbered densely when they reach the tree's end (`compact`), so the tree
//! stays at most four times the number of distinct pages.
//!
//! Invalidations (shootdowns) leave *holes*: the engine's LRU level keeps an invalidated way as
//! its oldest and fills it at the next miss instead of evicting (ARCHITECTURE.md, "Pairs over
//! levels with room"). In stack terms the hole keeps its depth (it still counts for every TLB
//! deeper than it, where the page was held), a miss removes the shallowest hole, and a hit at
//! depth `d` below a hole moves the shallowest hole to depth `d`: every TLB of between the
//! hole's depth and `d` entries filled the hole (a miss), every larger one hit and now has
//! its hole where the page was. Each TLB size then holds exactly the pages the engine's does.

use crate::head::Head;
use crate::keymap::KeyMap;
use std::collections::BTreeSet;

const MIN_TREE: usize = 1 << 12;

/// The stack below the head: pages by the timestamp they entered it, holes, and the tree
/// that counts them.
#[derive(Clone)]
pub struct Tree {
    /// Page → timestamp it entered the tree (its recency among the tree's pages).
    map: KeyMap,
    /// Fenwick tree over timestamps (1-based; entry `t + 1` is timestamp `t`).
    tree: Vec<u32>,
    /// The next timestamp.
    now: u32,
    /// Marked timestamps: pages and holes.
    marked: u32,
    /// Timestamps of the holes (invalidated pages), oldest first.
    holes: BTreeSet<u32>,
}

impl Tree {
    pub fn new() -> Self {
        Tree {
            map: KeyMap::new(),
            tree: vec![0; MIN_TREE + 1],
            now: 0,
            marked: 0,
            holes: BTreeSet::new(),
        }
    }

    #[inline(always)]
    fn add(&mut self, t: u32, delta: i32) {
        let n = self.tree.len();
        let mut i = t as usize + 1;
        while i < n {
            self.tree[i] = self.tree[i].wrapping_add(delta as u32);
            i += i & i.wrapping_neg();
        }
    }

    /// Marked timestamps at or before `t`.
    #[inline(always)]
    fn prefix(&self, t: u32) -> u32 {
        let mut i = t as usize + 1;
        let mut s = 0u32;
        while i > 0 {
            s = s.wrapping_add(self.tree[i]);
            i &= i - 1;
        }
        s
    }

    /// Takes `key` out to the top of the stack (above the tree): returns its depth within the
    /// tree (1 = the tree's most recent, holes counted), or 0 if it is not there. Applies the
    /// hole rules of a reference to it.
    #[inline]
    pub fn take(&mut self, key: u64) -> u32 {
        match self.map.remove(key) {
            Some(t) => {
                let depth = self.marked - self.prefix(t) + 1;
                match self.holes.last() {
                    // A hole above the page moves down to where the page was.
                    Some(&h) if h > t => {
                        self.holes.remove(&h);
                        self.holes.insert(t);
                        self.add(h, -1);
                    }
                    _ => self.add(t, -1),
                }
                self.marked -= 1;
                depth
            }
            None => {
                // A miss for every size fills the shallowest hole, if any.
                if let Some(h) = self.holes.pop_last() {
                    self.add(h, -1);
                    self.marked -= 1;
                }
                0
            }
        }
    }

    /// Puts `key` (not in the tree) on top of the tree.
    #[inline]
    pub fn put(&mut self, key: u64) {
        let t = self.now;
        self.now += 1;
        self.add(t, 1);
        self.marked += 1;
        self.map.insert(key, t);
        if self.now as usize + 1 >= self.tree.len() {
            self.compact();
        }
    }

    /// Invalidates `key` if it is in the tree: it becomes a hole at its depth.
    pub fn invalidate(&mut self, key: u64) -> bool {
        match self.map.remove(key) {
            Some(t) => {
                self.holes.insert(t);
                true
            }
            None => false,
        }
    }

    /// Invalidates every key `pred` selects: each becomes a hole at its depth.
    pub fn invalidate_where(&mut self, pred: impl Fn(u64) -> bool) {
        let keys: Vec<u64> = self
            .map
            .iter()
            .map(|(k, _)| k)
            .filter(|&k| pred(k))
            .collect();
        for k in keys {
            self.invalidate(k);
        }
    }

    /// Empties the tree (holes with no page below them change nothing: none are kept).
    pub fn flush(&mut self) {
        if self.tree.len() > 4 * MIN_TREE {
            *self = Tree::new();
            return;
        }
        self.map.clear();
        self.tree.fill(0);
        self.holes.clear();
        self.now = 0;
        self.marked = 0;
    }

    /// Renumbers the live timestamps 0.. in order and rebuilds the tree, at least twice as
    /// large as they are many (so the next compaction is as many references away).
    #[cold]
    fn compact(&mut self) {
        let mut live: Vec<u32> = self
            .map
            .iter()
            .map(|(_, t)| t)
            .chain(self.holes.iter().copied())
            .collect();
        live.sort_unstable();
        let n = (live.len() * 2).max(MIN_TREE).next_power_of_two();
        let rank = |t: u32| live.binary_search(&t).unwrap() as u32;
        self.map.map_values(rank);
        self.holes = self.holes.iter().map(|&t| rank(t)).collect();
        self.tree = vec![0; n + 1];
        // Linear-time build: each node adds itself to its parent.
        for i in 1..=live.len() {
            self.tree[i] += 1;
        }
        for i in 1..=n {
            let j = i + (i & i.wrapping_neg());
            if j <= n {
                self.tree[j] += self.tree[i];
            }
        }
        self.now = live.len() as u32;
        self.marked = live.len() as u32;
    }
}

impl Default for Tree {
    fn default() -> Self {
        Self::new()
    }
}

/// The whole stack: the head (`head.rs`) over the tree.
#[derive(Clone, Default)]
pub struct Fully {
    head: Head,
    tree: Tree,
}

impl Fully {
    pub fn new() -> Self {
        Self::default()
    }

    /// References `key`; returns its stack depth (1 = the most recent page), or 0 when the
    /// page is not in the stack (its first reference, or the first since it was invalidated
    /// or flushed).
    #[inline(always)]
    pub fn access(&mut self, key: u64) -> u32 {
        if let Some(i) = self.head.find(key) {
            self.head.promote(i);
            return i as u32 + 1;
        }
        self.access_tree(key)
    }

    #[inline(never)]
    fn access_tree(&mut self, key: u64) -> u32 {
        let above = self.head.len() as u32;
        let d = self.tree.take(key);
        if let Some(out) = self.head.push(key) {
            self.tree.put(out);
        }
        if d == 0 {
            0
        } else {
            above + d
        }
    }

    /// Moves the head's pages into the tree (holes live in the tree only).
    fn spill(&mut self) {
        for k in self.head.drain_oldest_first() {
            self.tree.put(k);
        }
    }

    /// Invalidates `key` if it is in the stack: it becomes a hole at its depth.
    pub fn invalidate(&mut self, key: u64) -> bool {
        self.spill();
        self.tree.invalidate(key)
    }

    /// Invalidates every page `pred` selects (a large range: cheaper than probing each page).
    pub fn invalidate_where(&mut self, pred: impl Fn(u64) -> bool) {
        self.spill();
        self.tree.invalidate_where(pred);
    }

    /// Empties the stack (a TLB flush).
    pub fn flush(&mut self) {
        self.head.clear();
        self.tree.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlblab_types::SplitMix64;

    /// The stack itself, as a list with holes (None): the definition `Fully` must agree with.
    fn naive_depth(stack: &mut Vec<Option<u64>>, key: u64) -> u32 {
        let pos = stack.iter().position(|e| *e == Some(key));
        let hole = stack.iter().position(|e| e.is_none());
        match pos {
            Some(p) => {
                match hole {
                    Some(h) if h < p => {
                        stack.remove(h);
                        stack.insert(0, Some(key));
                        stack[p] = None;
                    }
                    _ => {
                        stack.remove(p);
                        stack.insert(0, Some(key));
                    }
                }
                p as u32 + 1
            }
            None => {
                if let Some(h) = hole {
                    stack.remove(h);
                }
                stack.insert(0, Some(key));
                0
            }
        }
    }

    #[test]
    fn given_references_invalidations_and_flushes_then_depths_are_the_naive_stacks() {
        let mut rng = SplitMix64::new(3);
        let mut f = Fully::new();
        let mut stack: Vec<Option<u64>> = Vec::new();
        // Long enough to compact several times.
        for _ in 0..60_000 {
            let k = rng.below(300);
            match rng.below(100) {
                0..=2 => {
                    f.invalidate(k);
                    if let Some(p) = stack.iter().position(|e| *e == Some(k)) {
                        stack[p] = None;
                    }
                }
                3 if rng.below(20) == 0 => {
                    f.flush();
                    stack.clear();
                }
                _ => assert_eq!(f.access(k), naive_depth(&mut stack, k)),
            }
        }
    }
}
