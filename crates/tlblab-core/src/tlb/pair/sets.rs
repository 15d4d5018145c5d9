//! A set-associative level of a pair (`SetAssoc<W, O>`, a first level or the second) and
//! the replacement of its sets (`SetOrder`: `LruSets`, `RandomSets`; `OrderKind` names them
//! in a compiled geometry).

use super::*;

/// The replacement state of a `SetAssoc` level, borrowed: what a hit and the fill of a full
/// set do to it. `LruSets` (the packed LRU order, `SHAPE_SET_ASSOC`) or `RandomSets` (random
/// replacement: the Cortex-A9's main TLB, seed 004 §V).
pub(crate) trait SetOrder<'a>: Sized {
    /// Whether `tlb` runs this policy.
    fn fits(tlb: &Tlb) -> bool;
    /// Borrows the replacement state of a level that `fits`, of `sets` sets.
    fn borrow_order(repl: &'a mut Replacement, sets: usize) -> Self;
    /// A hit on way `w` of `set` (`set` < sets).
    fn hit(&mut self, set: usize, w: usize);
    /// The way the fill of full `set` (of `ways` ways) takes, its fill recorded, as
    /// `Replacement::fill_victim` does it.
    fn fill_victim(&mut self, set: usize, ways: usize) -> usize;
}

/// The packed LRU order of each set (one word per set: `replacement/order.rs`).
pub(crate) struct LruSets<'a> {
    words: &'a mut [u64],
}

impl LruSets<'_> {
    #[inline(always)]
    fn word(&mut self, set: usize) -> &mut u64 {
        // SAFETY: callers pass a set number below `sets`, the length of `words` (`borrow`).
        unsafe { self.words.get_unchecked_mut(set) }
    }
}

impl<'a> SetOrder<'a> for LruSets<'a> {
    fn fits(tlb: &Tlb) -> bool {
        matches!(tlb.repl.lru_order_ref(), Some(OrderList::Packed(_)))
    }

    fn borrow_order(repl: &'a mut Replacement, sets: usize) -> Self {
        let words = match repl.lru_order() {
            Some(OrderList::Packed(o)) => o.words_mut(),
            _ => unreachable!("the level's policy was checked (LruSets::fits)"),
        };
        assert!(words.len() == sets);
        LruSets { words }
    }

    #[inline(always)]
    fn hit(&mut self, set: usize, w: usize) {
        packed_to_front(self.word(set), w);
    }

    #[inline(always)]
    fn fill_victim(&mut self, set: usize, ways: usize) -> usize {
        packed_recycle_oldest(self.word(set), ways)
    }
}

/// Random replacement: hits change nothing; a fill draws the way from the level's seeded
/// generator, the one draw `Replacement::fill_victim` makes, so the stream of draws (and of
/// victims) is the general path's.
pub(crate) struct RandomSets<'a> {
    repl: &'a mut RandomRepl,
}

impl<'a> SetOrder<'a> for RandomSets<'a> {
    fn fits(tlb: &Tlb) -> bool {
        matches!(tlb.repl, Replacement::Random(_))
    }

    fn borrow_order(repl: &'a mut Replacement, _sets: usize) -> Self {
        match repl {
            Replacement::Random(repl) => RandomSets { repl },
            _ => unreachable!("the level's policy was checked (RandomSets::fits)"),
        }
    }

    #[inline(always)]
    fn hit(&mut self, _set: usize, _w: usize) {}

    #[inline(always)]
    fn fill_victim(&mut self, _set: usize, _ways: usize) -> usize {
        self.repl.victim_any()
    }
}

/// A `SetOrder` without the borrow, naming one in a `PathKind` (`Two<K, W2, O>`).
pub(crate) trait OrderKind {
    type Order<'a>: SetOrder<'a>;
}

pub(crate) struct LruOrder;
pub(crate) struct RandomOrder;

impl OrderKind for LruOrder {
    type Order<'a> = LruSets<'a>;
}

impl OrderKind for RandomOrder {
    type Order<'a> = RandomSets<'a>;
}

/// A level of sets of `W` ways indexed by low VPN bits, replaced by `O` (`SHAPE_SET_ASSOC`
/// with `LruSets`; no hint table or filter below 32 ways): every pair's second level, and an
/// Intel-like first level. Every vector has one element per set (`borrow` asserts it), so a
/// set number (`vpn & low_mask`) indexes them unchecked.
pub(crate) struct SetAssoc<'a, const W: usize, O = LruSets<'a>> {
    keys: &'a mut [[u64; W]],
    // The fingerprints with their padding (at least 15 bytes past the last set, `TagArray`):
    // set `set`'s row starts at `set * W`, and a 16-byte read from there stays in bounds.
    fps: &'a mut [u8],
    payload: &'a mut [[Payload; W]],
    order: O,
    low_mask: u64,
    tags: TagConfig,
    room: Room<'a>,
}

impl<'a, const W: usize, O: SetOrder<'a>> SetAssoc<'a, W, O> {
    /// The rows of set `set` (`vpn & low_mask`): keys, fingerprints, payloads.
    #[inline(always)]
    fn set_rows(&mut self, set: usize) -> (&mut [u64; W], &mut [u8; 16], &mut [Payload; W]) {
        debug_assert!(set <= self.low_mask as usize);
        // SAFETY: callers pass vpn & low_mask ≤ low_mask < sets, the length of each vector
        // (`borrow`); the fingerprint row's 16 bytes from set * W end at most at
        // (sets - 1) * W + 16, within `fps` (`borrow`). (For W < 16 the row runs into the next
        // sets' fingerprints: only its first W are read as this set's, or written.)
        unsafe {
            (
                self.keys.get_unchecked_mut(set),
                &mut *self.fps.as_mut_ptr().add(set * W).cast::<[u8; 16]>(),
                self.payload.get_unchecked_mut(set),
            )
        }
    }

    #[inline(always)]
    pub(super) fn set_of(&self, vpn: u64) -> usize {
        (vpn & self.low_mask) as usize
    }

    /// The lookup in set `set`: the entry of `key` for `req`, made the most recent, or None.
    #[inline(always)]
    pub(super) fn lookup_in_set(
        &mut self,
        set: usize,
        key: u64,
        req: Requester,
    ) -> Option<Payload> {
        let tags = self.tags;
        let (keys, fps, payloads) = self.set_rows(set);
        let w = find_in_set(keys, fps, payloads, tags, key, req)?;
        let found = payloads[w];
        self.order.hit(set, w);
        Some(found)
    }

    /// Set `set`'s least recently used way, made the most recent and given `key`; its way.
    /// `room`: the way may be invalid (a constant where it is inlined).
    #[inline(always)]
    fn replace_way(&mut self, set: usize, key: u64, room: bool) -> usize {
        let w = self.order.fill_victim(set, W) % W;
        let (keys, fps, _) = self.set_rows(set);
        let old = keys[w];
        keys[w] = key;
        fps[w] = fingerprint(key);
        if room && old == INVALID {
            self.room.fill_room(set, key);
        }
        w
    }

    /// `replace_way`, with the payload.
    #[inline(always)]
    pub(super) fn replace_in_set(&mut self, set: usize, key: u64, payload: Payload, room: bool) {
        let w = self.replace_way(set, key, room);
        self.set_rows(set).2[w] = payload;
    }
}

impl<'a, const W: usize, O: SetOrder<'a>> FirstLevel<'a> for SetAssoc<'a, W, O> {
    fn fits(tlb: &Tlb) -> bool {
        tlb.ways == W && O::fits(tlb)
    }

    fn borrow(tlb: &'a mut Tlb) -> Self {
        let sets = tlb.sets;
        let geometry = "SetAssoc::fits checked the geometry";
        // What the unchecked set indexing relies on: `low_mask + 1` sets.
        assert!(sets == tlb.low_mask as usize + 1);
        // The sets are slots `0..array_base`; a lockable array's slots after them are empty
        // while the level is `fast_ready` (no entry locked), and the lanes never touch them.
        let sets_end = tlb.array_base;
        let (keys, fps) = tlb.keys.parts_mut();
        let order = O::borrow_order(&mut tlb.repl, sets);
        let (keys, []) = keys[..sets_end].as_chunks_mut() else {
            unreachable!("{geometry}")
        };
        let (payload, []) = tlb.payload[..sets_end].as_chunks_mut() else {
            unreachable!("{geometry}")
        };
        assert!(keys.len() == sets && payload.len() == sets);
        // What `set_rows`' 16-byte fingerprint rows rely on.
        assert!(W <= 16 && fps.len() >= (sets - 1) * W + 16);
        SetAssoc {
            keys,
            fps,
            payload,
            order,
            low_mask: tlb.low_mask,
            tags: tlb.config.tags,
            room: Room::borrow(&mut tlb.set_valid, &mut tlb.size_count, &mut tlb.live_sizes),
        }
    }

    #[inline(always)]
    fn lookup(&mut self, vpn: u64, key: u64, _h: KeyHash, req: Requester) -> Option<Pfn> {
        Some(self.lookup_in_set(self.set_of(vpn), key, req)?.pfn)
    }

    /// The slot is `set * W + way`.
    #[inline(always)]
    fn replace<const ROOM: bool>(&mut self, vpn: u64, key: u64, _h: KeyHash) -> usize {
        let set = self.set_of(vpn);
        set * W + self.replace_way(set, key, ROOM)
    }

    #[inline(always)]
    fn set_payload(&mut self, slot: usize, payload: Payload) {
        self.set_rows(slot / W).2[slot % W] = payload;
    }

    fn fills_into_room(&self) -> u64 {
        self.room.filled()
    }
}
