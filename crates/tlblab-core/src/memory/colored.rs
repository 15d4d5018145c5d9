//! Colored placement: the simulator's port of libtlblab's TLB-coloring allocator (seed 003 Ch. 3,
//! `runtime/include/tlblab/color.h`), so simulated tasks get exactly the virtual addresses the
//! real allocator would give them.
//!
//! It follows the "Placement algorithm" section of `docs/color.md` step by step: one TLSF-style
//! heap per color (two-level segregated lists, LIFO, good-fit search), small colors owning one
//! slot per period, large colors owning R contiguous slots, the control block at the start of pool
//! 0. Offsets are relative to the arena base (aligned to a period). `tests/test_color_parity.py`
//! checks it against the C allocator (`runtime/bench/color_trace`) address for address.
//!
//! The data structures are plain maps: placement is decided once per allocation, never per access.

use std::collections::{BTreeMap, HashMap};

const HDR: u64 = 16;
const MIN_BLOCK: u64 = 32;
const ALIGN: u64 = 16;
const SL_LOG2: u32 = 3;
const SL_COUNT: u64 = 8;
const FL_SHIFT: u32 = 7;
const CTL_FIXED: u64 = 136;

fn msb(x: u64) -> u32 {
    63 - x.leading_zeros()
}

fn mapping(size: u64) -> (u32, u64) {
    if size < 1 << FL_SHIFT {
        return (0, size >> 4);
    }
    let m = msb(size);
    (m - FL_SHIFT + 1, (size >> (m - SL_LOG2)) ^ SL_COUNT)
}

fn fl_count_for(pool: u64) -> u32 {
    if pool < 1 << FL_SHIFT {
        1
    } else {
        msb(pool) - FL_SHIFT + 2
    }
}

fn ctl_bytes(pool: u64) -> u64 {
    (CTL_FIXED + fl_count_for(pool) as u64 * SL_COUNT * 8 + 15) & !15
}

fn adjust(n: u64) -> u64 {
    if n == 0 || n > 1 << 40 {
        return 0;
    }
    MIN_BLOCK.max((n + HDR + ALIGN - 1) & !(ALIGN - 1))
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug)]
struct Block {
    /// Size including the header; 0 = a pool's end sentinel.
    size: u64,
    free: bool,
    /// Size of the physically previous block (0 = none).
    prev: u64,
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default)]
struct Heap {
    fl_count: u32,
    /// (fl, sl) → blocks, head first.
    lists: BTreeMap<(u32, u64), Vec<u64>>,
    blocks: HashMap<u64, Block>,
}

impl Heap {
    fn insert(&mut self, b: u64) {
        let key = mapping(self.blocks[&b].size);
        self.lists.entry(key).or_default().insert(0, b);
    }

    fn remove(&mut self, b: u64) {
        let key = mapping(self.blocks[&b].size);
        let l = self.lists.get_mut(&key).expect("free block is listed");
        let i = l
            .iter()
            .position(|&x| x == b)
            .expect("free block is listed");
        l.remove(i);
    }

    fn head(&self, key: (u32, u64)) -> Option<u64> {
        self.lists.get(&key).and_then(|l| l.first().copied())
    }

    /// Good-fit search (docs/color.md, malloc steps 2–5); unlinks the block found.
    fn find(&mut self, need: u64) -> Option<u64> {
        let rounded = if need >= 1 << FL_SHIFT {
            need + (1 << (msb(need) - SL_LOG2)) - 1
        } else {
            need
        };
        let (fl, sl) = mapping(rounded);
        let mut found = None;
        if fl < self.fl_count {
            'outer: for f in fl..self.fl_count {
                for s in 0..SL_COUNT {
                    if (f > fl || s >= sl) && self.head((f, s)).is_some() {
                        found = self.head((f, s));
                        break 'outer;
                    }
                }
            }
        }
        if found.is_none() {
            let key = mapping(need);
            if key.0 < self.fl_count {
                if let Some(b) = self.head(key) {
                    if self.blocks[&b].size >= need {
                        found = Some(b);
                    }
                }
            }
        }
        if let Some(b) = found {
            self.remove(b);
        }
        found
    }

    fn set_prev(&mut self, b: u64, prev: u64) {
        self.blocks.get_mut(&b).expect("block exists").prev = prev;
    }

    /// Cuts block `b` down to `need` bytes when the rest is a block of its own (at least
    /// MIN_BLOCK): returns the rest's address, a block still marked in use, for the caller to
    /// free its own way (an allocation's split lists it; a shrinking realloc gives it back).
    fn cut(&mut self, b: u64, need: u64) -> Option<u64> {
        let have = self.blocks[&b].size;
        if have - need < MIN_BLOCK {
            return None;
        }
        let r = b + need;
        self.blocks.get_mut(&b).unwrap().size = need;
        let rest = Block {
            size: have - need,
            free: false,
            prev: need,
        };
        self.blocks.insert(r, rest);
        Some(r)
    }

    fn split_tail(&mut self, b: u64, need: u64) {
        if let Some(r) = self.cut(b, need) {
            let rest = self.blocks.get_mut(&r).unwrap();
            rest.free = true;
            let size = rest.size;
            self.set_prev(r + size, size);
            self.insert(r);
        }
        self.blocks.get_mut(&b).unwrap().free = false;
    }

    fn give_back(&mut self, mut b: u64) {
        let mut size = self.blocks[&b].size;
        let prev = self.blocks[&b].prev;
        if prev != 0 && self.blocks.get(&(b - prev)).is_some_and(|p| p.free) {
            let p = b - prev;
            self.remove(p);
            self.blocks.remove(&b);
            size += self.blocks[&p].size;
            b = p;
        }
        let n = b + size;
        if self.blocks[&n].free {
            self.remove(n);
            size += self.blocks[&n].size;
            self.blocks.remove(&n);
        }
        let blk = self.blocks.get_mut(&b).unwrap();
        blk.size = size;
        blk.free = true;
        self.set_prev(b + size, size);
        self.insert(b);
    }
}

/// The geometry of the colored TLB level (the same fields as `tlb_geometry_t`).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub struct ColorGeometry {
    /// M: sets of the colored level.
    pub sets: u64,
    /// N: ways.
    pub ways: u64,
    /// R: sets reserved for allocations larger than a slot.
    pub reserved: u64,
    /// P: periods (copies of the M slots); 0 = `ways`.
    pub periods: u64,
    /// log2 of the slot size (12 for 4 KiB pages indexed from bit 12).
    pub slot_shift: u32,
}

/// A colored arena's placement state.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct ColoredArena {
    sets: u64,
    reserved: u64,
    slot: u64,
    period_bytes: u64,
    small: u64,
    heaps: Vec<Heap>,
}

impl ColoredArena {
    pub fn new(g: ColorGeometry) -> Result<ColoredArena, String> {
        if g.sets == 0 || !g.sets.is_power_of_two() {
            return Err(format!(
                "colored arena: sets must be a power of two, found {}",
                g.sets
            ));
        }
        if g.reserved >= g.sets {
            return Err(format!(
                "colored arena: reserved sets ({}) must be fewer than sets ({})",
                g.reserved, g.sets
            ));
        }
        let periods = if g.periods == 0 { g.ways } else { g.periods };
        if periods == 0 || !(12..=30).contains(&g.slot_shift) {
            return Err(format!("colored arena: periods must be positive and slot_shift 12..=30 (got {periods}, {})", g.slot_shift));
        }
        let slot = 1u64 << g.slot_shift;
        let small = g.sets - g.reserved;
        let large = if g.reserved > 0 { periods } else { 0 };
        let mut a = ColoredArena {
            sets: g.sets,
            reserved: g.reserved,
            slot,
            period_bytes: g.sets * slot,
            small,
            heaps: Vec::new(),
        };
        for c in 0..small + large {
            let pools = a.pools(c, periods);
            let pool_len = if c < small { slot } else { g.reserved * slot };
            let mut h = Heap {
                fl_count: fl_count_for(pool_len),
                ..Heap::default()
            };
            let mut order = vec![0usize];
            order.extend((1..pools.len()).rev());
            for i in order {
                let (lo, hi) = pools[i];
                h.blocks.insert(
                    lo,
                    Block {
                        size: hi - lo - HDR,
                        free: true,
                        prev: 0,
                    },
                );
                h.blocks.insert(
                    hi - HDR,
                    Block {
                        size: 0,
                        free: false,
                        prev: hi - lo - HDR,
                    },
                );
                h.insert(lo);
            }
            a.heaps.push(h);
        }
        Ok(a)
    }

    fn pools(&self, c: u64, periods: u64) -> Vec<(u64, u64)> {
        let (mut out, cb) = if c < self.small {
            let v: Vec<_> = (0..periods)
                .map(|i| {
                    let s = i * self.period_bytes + (self.reserved + c) * self.slot;
                    (s, s + self.slot)
                })
                .collect();
            (v, ctl_bytes(self.slot))
        } else {
            let s = (c - self.small) * self.period_bytes;
            (
                vec![(s, s + self.reserved * self.slot)],
                ctl_bytes(self.reserved * self.slot),
            )
        };
        out[0].0 += cb;
        out
    }

    /// Number of colors: M − R small ones, then the large ones.
    pub fn colors(&self) -> u64 {
        self.heaps.len() as u64
    }

    /// Whether `color` is a small (single-slot) color.
    pub fn is_small(&self, color: u64) -> bool {
        color < self.small
    }

    /// The color of an offset (as `tlb_color_of`).
    pub fn color_of(&self, off: u64) -> u64 {
        let k = off / self.slot;
        let s = k % self.sets;
        if s >= self.reserved {
            s - self.reserved
        } else {
            self.small + k / self.sets
        }
    }

    /// `tlb_malloc(n, color)`: the payload offset, or None when the color is exhausted.
    pub fn malloc(&mut self, n: u64, color: u64) -> Option<u64> {
        let need = adjust(n);
        if need == 0 || color >= self.colors() {
            return None;
        }
        let h = &mut self.heaps[color as usize];
        let b = h.find(need)?;
        h.split_tail(b, need);
        Some(b + HDR)
    }

    /// `tlb_aligned_alloc(al, n, color)`.
    pub fn aligned(&mut self, al: u64, n: u64, color: u64) -> Option<u64> {
        if al <= ALIGN {
            return self.malloc(n, color);
        }
        if !al.is_power_of_two() || al > self.slot || color >= self.colors() {
            return None;
        }
        let need = adjust(n);
        if need == 0 {
            return None;
        }
        let h = &mut self.heaps[color as usize];
        let mut b = h.find(need + al + MIN_BLOCK)?;
        let pay = b + HDR;
        let mut a = pay.div_ceil(al) * al;
        if a != pay && a - pay < MIN_BLOCK {
            a = (pay + MIN_BLOCK).div_ceil(al) * al;
        }
        let gap = a - pay;
        if gap != 0 {
            let have = h.blocks[&b].size;
            let nb = b + gap;
            {
                let blk = h.blocks.get_mut(&b).unwrap();
                blk.size = gap;
                blk.free = true;
            }
            h.blocks.insert(
                nb,
                Block {
                    size: have - gap,
                    free: false,
                    prev: gap,
                },
            );
            h.set_prev(nb + have - gap, have - gap);
            h.insert(b);
            b = nb;
        }
        h.split_tail(b, need);
        Some(b + HDR)
    }

    /// `tlb_free(p)`.
    pub fn free(&mut self, p: u64) {
        let c = self.color_of(p);
        self.heaps[c as usize].give_back(p - HDR);
    }

    /// `tlb_realloc(p, n)`: keeps the color; None when it fails (p stays valid) or n = 0 (freed).
    pub fn realloc(&mut self, p: u64, n: u64) -> Option<u64> {
        if n == 0 {
            self.free(p);
            return None;
        }
        let need = adjust(n);
        if need == 0 {
            return None;
        }
        let c = self.color_of(p);
        let b = p - HDR;
        {
            let h = &mut self.heaps[c as usize];
            let mut have = h.blocks[&b].size;
            let nx = b + have;
            if need > have && h.blocks[&nx].free && have + h.blocks[&nx].size >= need {
                h.remove(nx);
                have += h.blocks[&nx].size;
                h.blocks.remove(&nx);
                h.blocks.get_mut(&b).unwrap().size = have;
                h.set_prev(b + have, have);
            }
            if need <= have {
                if let Some(r) = h.cut(b, need) {
                    h.give_back(r);
                }
                return Some(p);
            }
        }
        let q = self.malloc(n, c)?;
        self.heaps[c as usize].give_back(b);
        Some(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zen3() -> ColoredArena {
        ColoredArena::new(ColorGeometry {
            sets: 128,
            ways: 16,
            reserved: 4,
            periods: 0,
            slot_shift: 12,
        })
        .unwrap()
    }

    #[test]
    fn every_allocation_lies_in_its_color_and_a_fresh_color_fills_slot_0_first() {
        let mut a = zen3();
        assert_eq!(a.colors(), 124 + 16);
        let p = a.malloc(1000, 3).unwrap();
        assert_eq!(a.color_of(p), 3);
        assert_eq!(a.color_of(p + 999), 3);
        assert!(p < 128 * 4096, "slot 0 (period 0) first");
        let big = a.malloc(12000, 124).unwrap();
        assert_eq!(a.color_of(big), 124);
        assert_eq!(
            a.color_of(big + 11999),
            124,
            "large colors are R contiguous slots"
        );
    }

    #[test]
    fn freeing_makes_the_space_reusable_at_the_same_offset() {
        let mut a = zen3();
        let p = a.malloc(64, 0).unwrap();
        a.free(p);
        assert_eq!(a.malloc(64, 0), Some(p));
    }

    #[test]
    fn a_color_runs_out_instead_of_spilling_into_another() {
        let mut a = ColoredArena::new(ColorGeometry {
            sets: 4,
            ways: 2,
            reserved: 0,
            periods: 2,
            slot_shift: 12,
        })
        .unwrap();
        let mut n = 0;
        while let Some(p) = a.malloc(1000, 1) {
            assert_eq!(a.color_of(p), 1);
            n += 1;
        }
        assert!(
            (4..=8).contains(&n),
            "{n} blocks of ~1 KiB fit in two 4 KiB slots"
        );
    }
}
