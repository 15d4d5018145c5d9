//! A fully associative first level of a pair (`FullyAssoc<W, S>`): its entries and LRU order
//! borrowed in place (`InPlace`) or staged into one block for a long stretch (`Staged`).

use super::*;

/// A fully associative first level's entries and LRU order, borrowed from its `Tlb`: keys,
/// fingerprints, payloads, the linked order's links and head, each in a vector of its own.
pub(crate) struct InPlace<'a, const W: usize> {
    keys: &'a mut [u64; W],
    fps: &'a mut [u8; W],
    payload: &'a mut [Payload; W],
    links: &'a mut [[u32; 2]; W],
    head: &'a mut u32,
}

/// Where a `FullyAssoc` level's entries and LRU order are while it is borrowed: in place
/// (`InPlace`), or copied into one block for the stretch (`Staged`).
pub(crate) trait FaStore<'a, const W: usize>: Sized {
    fn new(parts: InPlace<'a, W>) -> Self;
    fn keys(&mut self) -> &mut [u64; W];
    fn fps(&mut self) -> &mut [u8; W];
    fn payload(&mut self) -> &mut [Payload; W];
    /// The links and the head.
    fn order(&mut self) -> (&mut [[u32; 2]; W], &mut u32);
    /// The `present` bucket (`KeyHash::present`, truncated to 16 bits) of way `w`'s key `key`.
    fn present_of(&mut self, w: usize, key: u64) -> usize;
    /// Way `w` now holds a key of hash `h`.
    fn set_present_of(&mut self, w: usize, h: KeyHash);
}

impl<'a, const W: usize> FaStore<'a, W> for InPlace<'a, W> {
    fn new(parts: InPlace<'a, W>) -> Self {
        parts
    }

    #[inline(always)]
    fn keys(&mut self) -> &mut [u64; W] {
        self.keys
    }

    #[inline(always)]
    fn fps(&mut self) -> &mut [u8; W] {
        self.fps
    }

    #[inline(always)]
    fn payload(&mut self) -> &mut [Payload; W] {
        self.payload
    }

    #[inline(always)]
    fn order(&mut self) -> (&mut [[u32; 2]; W], &mut u32) {
        (self.links, self.head)
    }

    #[inline(always)]
    fn present_of(&mut self, _w: usize, key: u64) -> usize {
        KeyHash::of(key).present()
    }

    #[inline(always)]
    fn set_present_of(&mut self, _w: usize, _h: KeyHash) {}
}

/// The five parts of `InPlace` copied into one block for a long stretch of references, and
/// copied back when it ends (on drop): the pair loop then reaches all of them from one
/// pointer at constant offsets, not five pointers that outnumber the host's registers with
/// the second level's and the loop's own. Measured (`profile_run zen3 … tlb-only`, 4M
/// references, interleaved medians of 9, 2026-11-25): random:pages=262144 100.6 → 114.2 M
/// refs/s, strided:pages=65536 103.2 → 111.1. The copies are 2.2 KiB each way for 64 ways, so
/// `FastLane` stages only a stretch it expects to be long (`FastLane::alternate`,
/// `worth_staging`).
pub(crate) struct Staged<'a, const W: usize> {
    block: Box<Block<W>>,
    home: InPlace<'a, W>,
}

#[repr(C)]
struct Block<const W: usize> {
    keys: [u64; W],
    payload: [Payload; W],
    links: [[u32; 2]; W],
    /// Each way's `present` bucket, truncated to 16 bits (the filter is at most 2^16 long),
    /// kept beside the keys so that a fill finds its victim's bucket without hashing the
    /// victim's key again (4 instructions of ~104 per all-miss reference). Derived from the
    /// keys: not copied back.
    present_of: [u16; W],
    fps: [u8; W],
    head: u32,
}

impl<'a, const W: usize> FaStore<'a, W> for Staged<'a, W> {
    fn new(home: InPlace<'a, W>) -> Self {
        // The fingerprint search reads whole rows of 16 (`fingerprint_matches_in`), and the
        // block's fingerprints have no padding after them (the compiled sizes: 32, 48, 64).
        const { assert!(W.is_multiple_of(16)) };
        let block = Box::new(Block {
            keys: *home.keys,
            payload: *home.payload,
            links: *home.links,
            present_of: home.keys.map(|key| KeyHash::of(key).present() as u16),
            fps: *home.fps,
            head: *home.head,
        });
        Staged { block, home }
    }

    #[inline(always)]
    fn keys(&mut self) -> &mut [u64; W] {
        &mut self.block.keys
    }

    #[inline(always)]
    fn fps(&mut self) -> &mut [u8; W] {
        &mut self.block.fps
    }

    #[inline(always)]
    fn payload(&mut self) -> &mut [Payload; W] {
        &mut self.block.payload
    }

    #[inline(always)]
    fn order(&mut self) -> (&mut [[u32; 2]; W], &mut u32) {
        let b = &mut *self.block;
        (&mut b.links, &mut b.head)
    }

    #[inline(always)]
    fn present_of(&mut self, w: usize, _key: u64) -> usize {
        self.block.present_of[w % W] as usize
    }

    #[inline(always)]
    fn set_present_of(&mut self, w: usize, h: KeyHash) {
        self.block.present_of[w % W] = h.present() as u16;
    }
}

impl<const W: usize> Drop for Staged<'_, W> {
    fn drop(&mut self) {
        let (b, home) = (&*self.block, &mut self.home);
        *home.keys = b.keys;
        *home.payload = b.payload;
        *home.links = b.links;
        *home.fps = b.fps;
        *home.head = b.head;
    }
}

/// A fully associative first level of `W` ways (`SHAPE_FULLY_ASSOC`: the linked LRU order, the
/// hint table and the `present` filter). A way number read from its order or its hints indexes
/// as `w % W`: they only ever hold way numbers below it, and the remainder spares the bounds
/// check.
pub(crate) struct FullyAssoc<'a, const W: usize, S> {
    /// The entries and the LRU order.
    store: S,
    // `Self::HINT_LEN` and `Self::PRESENT_LEN` long (`borrow` asserts it): indexed unchecked
    // through `% LEN`, a mask.
    hint: &'a mut [u32],
    present: &'a mut [u16],
    tags: TagConfig,
    room: Room<'a>,
}

impl<'a, const W: usize, S: FaStore<'a, W>> FullyAssoc<'a, W, S> {
    /// The hint table and `present` filter of a level of `W` entries (`Tlb::new`).
    const HINT_LEN: usize = hint_len(W);
    const PRESENT_LEN: usize = present_len(W);

    /// The hint-table bucket of hash `h`.
    #[inline(always)]
    fn hint_at(&mut self, h: usize) -> &mut u32 {
        // SAFETY: `borrow` asserts that the table is HINT_LEN long, a power of two, so the
        // remainder (a mask) is in bounds.
        unsafe { self.hint.get_unchecked_mut(h % Self::HINT_LEN) }
    }

    /// The `present` count of hash `h`.
    #[inline(always)]
    fn present_at(&mut self, h: usize) -> &mut u16 {
        // SAFETY: as `hint_at`, for PRESENT_LEN.
        unsafe { self.present.get_unchecked_mut(h % Self::PRESENT_LEN) }
    }

    /// The way holding `key` for `req`: through the hint table, else a search (which then
    /// points the hint at it), as `lookup_shaped` finds it.
    #[inline(always)]
    fn find(&mut self, key: u64, hash: KeyHash, req: Requester) -> Option<usize> {
        let h = hash.hint();
        let hinted = *self.hint_at(h) as usize;
        let w = hinted.wrapping_sub(1) % W;
        if hinted != 0
            && self.store.keys()[w] == key
            && tags_allow(self.tags, &self.store.payload()[w], req)
        {
            return Some(w);
        }
        let [mut candidates] = fingerprint_matches_in(self.store.fps(), 0, W, [hash.fingerprint()]);
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize % W;
            candidates &= candidates - 1;
            if self.store.keys()[w] == key && tags_allow(self.tags, &self.store.payload()[w], req) {
                *self.hint_at(h) = w as u32 + 1;
                return Some(w);
            }
        }
        None
    }
}

impl<'a, const W: usize, S: FaStore<'a, W>> FirstLevel<'a> for FullyAssoc<'a, W, S> {
    fn fits(tlb: &Tlb) -> bool {
        tlb.sets == 1 && tlb.ways == W
    }

    fn borrow(tlb: &'a mut Tlb) -> Self {
        let geometry = "FullyAssoc::fits checked the geometry";
        // What the unchecked indexing of the hint table and the filter relies on.
        assert!(tlb.hint.len() == Self::HINT_LEN && tlb.present.len() == Self::PRESENT_LEN);
        assert!(Self::HINT_LEN.is_power_of_two() && Self::PRESENT_LEN.is_power_of_two());
        // What `Staged`'s 16-bit buckets rely on.
        const { assert!(Self::PRESENT_LEN <= 1 << 16) };
        // The set is slots `0..array_base` (see `SetAssoc::borrow`).
        let sets_end = tlb.array_base;
        let (keys, fps) = tlb.keys.parts_mut();
        let (links, head) = match tlb.repl.lru_order() {
            Some(OrderList::Linked(o)) => o.first_set_mut(),
            _ => unreachable!("the first level's shape was checked (SHAPE_FULLY_ASSOC)"),
        };
        FullyAssoc {
            store: S::new(InPlace {
                keys: (&mut keys[..sets_end]).try_into().expect(geometry),
                fps: (&mut fps[..W]).try_into().expect(geometry),
                payload: (&mut tlb.payload[..sets_end]).try_into().expect(geometry),
                links: links.try_into().expect(geometry),
                head,
            }),
            hint: &mut tlb.hint[..],
            present: &mut tlb.present[..],
            tags: tlb.config.tags,
            room: Room::borrow(&mut tlb.set_valid, &mut tlb.size_count, &mut tlb.live_sizes),
        }
    }

    #[inline(always)]
    fn lookup(&mut self, _vpn: u64, key: u64, h: KeyHash, req: Requester) -> Option<Pfn> {
        if *self.present_at(h.present()) == 0 {
            return None;
        }
        let w = self.find(key, h, req)?;
        let (links, head) = self.store.order();
        linked_to_front(links, head, w);
        Some(self.store.payload()[w].pfn)
    }

    /// The hint, `present` counts and fingerprint follow the new key.
    #[inline(always)]
    fn replace<const ROOM: bool>(&mut self, _vpn: u64, key: u64, h: KeyHash) -> usize {
        let (links, head) = self.store.order();
        let w = linked_recycle_oldest_of(links, head);
        *self.hint_at(h.hint()) = w as u32 + 1;
        let old = self.store.keys()[w];
        if !ROOM || old != INVALID {
            let bucket = self.store.present_of(w, old);
            *self.present_at(bucket) -= 1;
        } else {
            self.room.fill_room(0, key);
        }
        *self.present_at(h.present()) += 1;
        self.store.set_present_of(w, h);
        self.store.keys()[w] = key;
        self.store.fps()[w] = h.fingerprint();
        w
    }

    #[inline(always)]
    fn set_payload(&mut self, slot: usize, payload: Payload) {
        self.store.payload()[slot % W] = payload;
    }

    fn fills_into_room(&self) -> u64 {
        self.room.filled()
    }
}
