//! `Head`: the top `HEAD` pages of an LRU stack, kept exactly in a small array.
//!
//! Most references of a real program are to one of the few most recent pages (an instruction
//! fetch, then a data reference, then a fetch on the same code page: Lackey's `ls -lR` meets a
//! page outside the top 8 about one reference in 25). Their stack depth is their position
//! here, found with a handful of compares, and no tree or hash map is touched; only the others
//! reach the structure below (`fully.rs`'s tree, `sampled.rs`'s sample), into which the head's
//! oldest page moves when a new one comes in on top.

use crate::keymap::EMPTY;

/// Pages kept in the head.
pub const HEAD: usize = 8;

#[derive(Clone)]
pub struct Head {
    /// Most recent first; `EMPTY` past `len`.
    keys: [u64; HEAD],
    len: usize,
}

impl Head {
    pub fn new() -> Self {
        Head {
            keys: [EMPTY; HEAD],
            len: 0,
        }
    }

    /// The position (0 = most recent) of `key`, if it is in the head.
    #[inline(always)]
    pub fn find(&self, key: u64) -> Option<usize> {
        if self.keys[0] == key {
            return Some(0);
        }
        if self.keys[1] == key {
            return Some(1);
        }
        // No early exit: the compiler compares all at once.
        let mut m = 0u32;
        for (i, &k) in self.keys.iter().enumerate() {
            m |= ((k == key) as u32) << i;
        }
        (m != 0).then(|| m.trailing_zeros() as usize)
    }

    /// Moves the page at position `i` to the top.
    #[inline(always)]
    pub fn promote(&mut self, i: usize) {
        if i == 1 {
            self.keys.swap(0, 1);
            return;
        }
        let k = self.keys[i];
        for j in (1..HEAD).rev() {
            if j <= i {
                self.keys[j] = self.keys[j - 1];
            }
        }
        self.keys[0] = k;
    }

    /// Puts a page not in the head on top; returns the page that falls out, if the head was
    /// full.
    #[inline(always)]
    pub fn push(&mut self, key: u64) -> Option<u64> {
        let out = self.keys[HEAD - 1];
        for j in (1..HEAD).rev() {
            self.keys[j] = self.keys[j - 1];
        }
        self.keys[0] = key;
        if self.len == HEAD {
            Some(out)
        } else {
            self.len += 1;
            None
        }
    }

    /// The four most recent pages (`EMPTY` past `len`).
    #[inline(always)]
    pub fn top_four(&self) -> [u64; 4] {
        [self.keys[0], self.keys[1], self.keys[2], self.keys[3]]
    }

    /// Puts back the top four in a new order: a reference to one of them moves it on top,
    /// and nothing below them changes. (`EMPTY` slots stay past `len`: a page is never
    /// `EMPTY`, so an `EMPTY` slot is never referenced and never moves up.)
    #[inline(always)]
    pub fn set_top_four(&mut self, top: [u64; 4]) {
        self.keys[..4].copy_from_slice(&top);
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Takes every page out, oldest first.
    pub fn drain_oldest_first(&mut self) -> impl Iterator<Item = u64> {
        let keys = self.keys;
        let n = self.len;
        *self = Head::new();
        (0..n).rev().map(move |i| keys[i])
    }

    /// Removes `key` if present (the pages below it move up).
    pub fn remove(&mut self, key: u64) -> bool {
        match self.find(key) {
            Some(i) if i < self.len => {
                self.keys.copy_within(i + 1.., i);
                self.keys[HEAD - 1] = EMPTY;
                self.len -= 1;
                true
            }
            _ => false,
        }
    }

    pub fn clear(&mut self) {
        *self = Head::new();
    }
}

impl Default for Head {
    fn default() -> Self {
        Self::new()
    }
}
