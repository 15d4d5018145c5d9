//! `KeyMap`: page key → last-access timestamp, open addressing with linear probing.
//!
//! The stack-distance loop asks it once per reference that is not a repeat of the previous
//! page, so it must not allocate there: the table doubles only when half full (amortized, a
//! few times per run), and deletion (an invalidated page) shifts the following run of its
//! cluster back instead of leaving tombstones (Knuth, TAOCP vol. 3, §6.4, Algorithm R), so
//! lookups never slow down as pages come and go.

/// No page key has all bits set: keys keep bit 63 clear (`lib.rs`, `key`).
pub const EMPTY: u64 = u64::MAX;

#[derive(Clone)]
pub struct KeyMap {
    keys: Vec<u64>,
    values: Vec<u32>,
    mask: usize,
    len: usize,
}

/// A multiplicative hash (Fibonacci hashing, Knuth §6.4): page numbers are dense and
/// sequential, so the high bits of the product spread them over the table.
#[inline(always)]
fn slot(key: u64, mask: usize) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask
}

impl KeyMap {
    pub fn new() -> Self {
        Self::with_capacity(1024)
    }

    fn with_capacity(cap: usize) -> Self {
        let cap = cap.next_power_of_two().max(16);
        KeyMap {
            keys: vec![EMPTY; cap],
            values: vec![0; cap],
            mask: cap - 1,
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    pub fn get(&self, key: u64) -> Option<u32> {
        let mut i = slot(key, self.mask);
        loop {
            let k = self.keys[i];
            if k == key {
                return Some(self.values[i]);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Sets `key`'s value; returns the previous one.
    #[inline(always)]
    pub fn insert(&mut self, key: u64, value: u32) -> Option<u32> {
        let mut i = slot(key, self.mask);
        loop {
            let k = self.keys[i];
            if k == key {
                return Some(std::mem::replace(&mut self.values[i], value));
            }
            if k == EMPTY {
                break;
            }
            i = (i + 1) & self.mask;
        }
        self.keys[i] = key;
        self.values[i] = value;
        self.len += 1;
        if self.len * 2 > self.keys.len() {
            self.grow();
        }
        None
    }

    #[cold]
    fn grow(&mut self) {
        let mut bigger = Self::with_capacity(self.keys.len() * 2);
        for (k, v) in self.iter() {
            bigger.insert(k, v);
        }
        *self = bigger;
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: u64) -> Option<u32> {
        let mut i = slot(key, self.mask);
        loop {
            let k = self.keys[i];
            if k == EMPTY {
                return None;
            }
            if k == key {
                break;
            }
            i = (i + 1) & self.mask;
        }
        let value = self.values[i];
        // Backward-shift deletion: move each later member of the cluster whose home slot
        // is not between the hole and it into the hole.
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let k = self.keys[j];
            if k == EMPTY {
                break;
            }
            let home = slot(k, self.mask);
            let between = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !between {
                self.keys[hole] = k;
                self.values[hole] = self.values[j];
                hole = j;
            }
        }
        self.keys[hole] = EMPTY;
        self.len -= 1;
        Some(value)
    }

    pub fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.keys
            .iter()
            .zip(&self.values)
            .filter(|(k, _)| **k != EMPTY)
            .map(|(k, v)| (*k, *v))
    }

    /// Every value rewritten by `f` (renumbering after compaction).
    pub fn map_values(&mut self, mut f: impl FnMut(u32) -> u32) {
        for (k, v) in self.keys.iter().zip(self.values.iter_mut()) {
            if *k != EMPTY {
                *v = f(*v);
            }
        }
    }

    pub fn clear(&mut self) {
        self.keys.fill(EMPTY);
        self.len = 0;
    }
}

impl Default for KeyMap {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use tlblab_types::SplitMix64;

    #[test]
    fn given_random_inserts_and_removes_then_the_map_agrees_with_a_hashmap() {
        let mut rng = SplitMix64::new(7);
        let mut m = KeyMap::new();
        let mut r = HashMap::new();
        for i in 0..200_000u32 {
            let k = rng.below(5000);
            if rng.below(3) == 0 {
                assert_eq!(m.remove(k), r.remove(&k));
            } else {
                assert_eq!(m.insert(k, i), r.insert(k, i));
            }
            if i % 997 == 0 {
                let probe = rng.below(5000);
                assert_eq!(m.get(probe), r.get(&probe).copied());
            }
        }
        assert_eq!(m.len(), r.len());
        for (k, v) in &r {
            assert_eq!(m.get(*k), Some(*v));
        }
    }
}
