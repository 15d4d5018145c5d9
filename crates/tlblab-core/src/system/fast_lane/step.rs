//! The fast lane's per-reference loop (`run_with`): any data path the lane takes, one
//! reference at a time, its lookups, misses, walks and fills with the questions settled when
//! the lane was built, and the tally settled into the statistics at the end.

use super::*;

impl FastLane {
    /// `run` with page walks (`WALKS`) and the data path's two levels of shapes `S0` and `S1`
    /// (when `TWO`), from record `from`. A data path with `pair_loops` whose levels are full
    /// switches to `run_pair` (TLB-only) or `run_pair_walking` at its next data reference.
    #[inline(always)]
    pub(super) fn run_with<const WALKS: bool, const TWO: bool, const S0: u8, const S1: u8>(
        &self,
        sys: &mut System,
        records: &[Record],
        from: usize,
        s: &mut RunState,
    ) -> Result<Step, SimError> {
        // The copies whose data path may have `pair_loops` (one level: `S0` fully associative;
        // a second level of shape ANY: one of random replacement, `RandomSets`).
        let pair_shaped = if TWO {
            S1 == SHAPE_SET_ASSOC || S1 == SHAPE_ANY
        } else {
            S0 == SHAPE_FULLY_ASSOC
        };
        let t = &mut s.t;
        let prefetch_records = s.prefetch_records;
        for (n, r) in records.iter().enumerate().skip(from) {
            if prefetch_records {
                hint_record(records, n);
            }
            let Record::Access(a) = r else {
                return Ok(Step::taken(n));
            };
            let va = a.vaddr.0;
            // An access crossing a 4 KiB boundary is two references (`System::access`).
            let crosses = a.size > 1 && (va & 0xfff) + a.size as u64 > 4096;
            let p = a.kind.is_instr() as usize;
            let path = &self.paths[p];
            if a.thread != self.thread || crosses || va >= self.va_limit || !path.usable {
                return Ok(Step::taken(n));
            }
            if pair_shaped && p == 0 && n > from && self.pair_ready.get() {
                return Ok(Step::Switch(n));
            }
            let vpn = va >> self.shift;
            let key = pack(vpn, self.size);
            let found = if key == s.last_key[p] {
                s.memo_hits[p] += 1;
                Settled {
                    level: 0,
                    pfn: s.last_pfn[p],
                    size: self.size,
                    stop: false,
                }
            } else {
                let found = if p == 0 && TWO {
                    self.translate_two::<WALKS, S0, S1>(sys, t, va, vpn, key)
                } else if p == 0 {
                    self.translate::<WALKS, 0>(sys, t, va, vpn, key)
                } else {
                    self.translate::<WALKS, 1>(sys, t, va, vpn, key)
                };
                let found = match found {
                    Ok(f) => f,
                    Err(e) => {
                        t.uncharged = path.uncharged_on_failed_walk();
                        return Err(e);
                    }
                };
                s.last_key[p] = if found.stop { u64::MAX } else { key };
                s.last_pfn[p] = found.pfn;
                if self.ends_other_memo[p] {
                    s.last_key[1 - p] = u64::MAX;
                }
                if pair_shaped && p == 0 && found.level != 0 {
                    // A fill: perhaps the one that made both levels full.
                    self.refresh_pair_ready(sys);
                }
                found
            };
            if WALKS && self.data {
                let tally = self.tally(&mut t.caches);
                let (pfn, size) = (found.pfn, found.size);
                let lat = sys.data_access(
                    self.cpu,
                    self.core,
                    Translated::new(a.kind, a.vaddr, pfn, size),
                    tally,
                );
                // `reference_full`: a first-level hit overlaps its data access (Overlap model).
                let tlb_first = path.latency[0];
                t.other_cycles += if self.overlap && found.level == 0 {
                    tlb_first.max(lat) - tlb_first
                } else {
                    lat
                };
            }
            if WALKS && found.stop {
                return Ok(Step::Done {
                    taken: n + 1,
                    stale: true,
                });
            }
            if WALKS && found.level != 0 {
                // Past the first level: the kind of reference that walks. Hint the host about
                // the walk and cache sets of the ones ahead, as the general path does.
                sys.prefetch_lane(&self.hints, records, n);
            }
            s.first_level_run = if found.level == 0 {
                s.first_level_run + 1
            } else {
                0
            };
            if s.first_level_run == s.hand_back {
                return Ok(Step::taken(n + 1));
            }
        }
        Ok(Step::taken(records.len()))
    }

    /// A miss in every level of path `P`: the walk (or, TLB-only, the identity frame), its
    /// cycles added to the tally. Returns the translation to fill.
    #[inline(always)]
    pub(super) fn miss<const WALKS: bool>(
        &self,
        sys: &mut System,
        t: &mut Tally,
        va: u64,
        vpn: u64,
    ) -> Result<(Pfn, PageSize, Domain), SimError> {
        if WALKS {
            let tally = self.tally(&mut t.caches);
            let (leaf, cycles) = sys.walk_counted(self.core, self.st, VirtAddr(va), tally)?;
            t.other_cycles += cycles;
            Ok((leaf.pfn, leaf.size, leaf.domain))
        } else {
            Ok((Pfn(vpn << (self.shift - 12)), self.size, self.domain))
        }
    }

    /// The fills of path `P` after a walk found a page of another size than the lane's: the
    /// general fill (`reference_full`'s), for every level of the path.
    #[cold]
    pub(super) fn fill_other_size<const P: usize>(
        &self,
        sys: &mut System,
        t: &mut Tally,
        va: u64,
        leaf: (Pfn, PageSize, Domain),
    ) {
        let (pfn, size, domain) = leaf;
        let mut e = TlbEntry::new(Vpn(va >> size.shift()), size, pfn, self.req.asid);
        e.vmid = self.req.vmid;
        e.domain = domain;
        e.hw_thread = self.req.hw_thread;
        let path = &self.paths[P];
        for i in 0..path.levels {
            t.evictions[P][i] += sys.tlbs[path.tlb[i]].fill_after_miss(e) as u64;
        }
    }

    /// One reference of path `P` past the memo: look the levels up in order, walk after a
    /// miss in every level, fill the levels above the one that hit.
    #[inline(always)]
    pub(super) fn translate<const WALKS: bool, const P: usize>(
        &self,
        sys: &mut System,
        t: &mut Tally,
        va: u64,
        vpn: u64,
        key: u64,
    ) -> Result<Settled, SimError> {
        let path = &self.paths[P];
        let req = self.req;
        let mut hit = path.levels;
        let mut payload = Payload::default();
        for i in 0..path.levels {
            let tlb = &mut sys.tlbs[path.tlb[i]];
            if let Some(slot) = tlb.fast_lookup(vpn, key, req) {
                hit = i;
                let found = tlb.payload_at(slot);
                payload = Payload::copied_for(found, req);
                break;
            }
        }
        t.settled_at[P][hit] += 1;
        if hit == path.levels {
            let leaf = self.miss::<WALKS>(sys, t, va, vpn)?;
            if leaf.1 != self.size {
                self.fill_other_size::<P>(sys, t, va, leaf);
                return Ok(Settled {
                    level: hit,
                    pfn: leaf.0,
                    size: leaf.1,
                    stop: true,
                });
            }
            payload = Payload::filled(leaf.0, leaf.2, req);
        }
        for i in 0..hit {
            let evicted = sys.tlbs[path.tlb[i]].fast_fill(vpn, key, self.size_index, payload, req);
            t.evictions[P][i] += evicted as u64;
        }
        Ok(Settled {
            level: hit,
            pfn: payload.pfn,
            size: self.size,
            stop: false,
        })
    }

    /// `translate::<WALKS, 0>` for a data path of two levels of shapes `S0` and `S1`.
    #[inline(always)]
    pub(super) fn translate_two<const WALKS: bool, const S0: u8, const S1: u8>(
        &self,
        sys: &mut System,
        t: &mut Tally,
        va: u64,
        vpn: u64,
        key: u64,
    ) -> Result<Settled, SimError> {
        let path = &self.paths[0];
        let req = self.req;
        let (first, second) = two_mut(&mut sys.tlbs, path.tlb[0], path.tlb[1]);
        if let Some(slot) = first.lookup_shaped::<S0>(vpn, key, req) {
            t.settled_at[0][0] += 1;
            let pfn = first.payload_at(slot).pfn;
            return Ok(Settled {
                level: 0,
                pfn,
                size: self.size,
                stop: false,
            });
        }
        if !WALKS {
            // TLB-only: the miss needs nothing but the levels, so one borrow serves throughout.
            // (This repeats the fills below on purpose: one shared tail, through a helper or a
            // match handing the borrows on, measured 8-10% more instructions per all-miss
            // reference.)
            let (payload, level) = match second.lookup_shaped::<S1>(vpn, key, req) {
                Some(slot) => {
                    let found = second.payload_at(slot);
                    (Payload::copied_for(found, req), 1)
                }
                None => {
                    let frame = Pfn(vpn << (self.shift - 12));
                    (Payload::filled(frame, self.domain, req), 2)
                }
            };
            t.settled_at[0][level] += 1;
            let evicted = first.fill_shaped::<S0>(vpn, key, self.size_index, payload, req);
            t.evictions[0][0] += evicted as u64;
            if level == 2 {
                let evicted = second.fill_shaped::<S1>(vpn, key, self.size_index, payload, req);
                t.evictions[0][1] += evicted as u64;
            }
            return Ok(Settled {
                level,
                pfn: payload.pfn,
                size: self.size,
                stop: false,
            });
        }
        let (payload, level) = match second.lookup_shaped::<S1>(vpn, key, req) {
            Some(slot) => {
                let found = second.payload_at(slot);
                (Payload::copied_for(found, req), 1)
            }
            None => {
                // Counted before the walk: a reference whose walk fails is counted (its TLB
                // latencies uncharged, `Tally::uncharged`), as `reference_full` counts it.
                t.settled_at[0][2] += 1;
                let leaf = self.miss::<WALKS>(sys, t, va, vpn)?;
                if leaf.1 != self.size {
                    self.fill_other_size::<0>(sys, t, va, leaf);
                    return Ok(Settled {
                        level: 2,
                        pfn: leaf.0,
                        size: leaf.1,
                        stop: true,
                    });
                }
                (Payload::filled(leaf.0, leaf.2, req), 2)
            }
        };
        if level == 1 {
            t.settled_at[0][1] += 1;
        }
        let (first, second) = two_mut(&mut sys.tlbs, path.tlb[0], path.tlb[1]);
        let evicted = first.fill_shaped::<S0>(vpn, key, self.size_index, payload, req);
        t.evictions[0][0] += evicted as u64;
        if level == 2 {
            let evicted = second.fill_shaped::<S1>(vpn, key, self.size_index, payload, req);
            t.evictions[0][1] += evicted as u64;
        }
        Ok(Settled {
            level,
            pfn: payload.pfn,
            size: self.size,
            stop: false,
        })
    }

    /// `Tally::caches`, if the lane counts its loads there.
    #[inline(always)]
    pub(super) fn tally<'t>(&self, caches: &'t mut CacheTally) -> Option<&'t mut CacheTally> {
        self.tally_caches.then_some(caches)
    }

    /// Adds the counters and cycles `System::reference_full` adds for the references of a run
    /// (with walks on, `System::walk` has counted its own, but for the loads in `t.caches`).
    pub(super) fn settle(&self, sys: &mut System, t: &Tally, memo_hits: [u64; 2]) {
        sys.settle_cache_tally(self.cpu, self.core, &t.caches);
        let cs = &mut sys.cpu_stats[self.cpu];
        let mut refs = 0;
        let mut cycles = t.other_cycles;
        for (p, path) in self.paths.iter().enumerate() {
            let mut settled = t.settled_at[p];
            settled[0] += memo_hits[p];
            let path_refs: u64 = settled[..=path.levels].iter().sum();
            refs += path_refs;
            if p == 1 {
                cs.instr_references += path_refs;
            }
            let mut reached = path_refs;
            for (i, &hits) in settled[..path.levels].iter().enumerate() {
                let s = &mut cs.tlb[path.stat[i]];
                s.accesses += reached;
                s.hits += hits;
                s.misses += reached - hits;
                s.evictions += t.evictions[p][i];
                cycles += reached * path.latency[i];
                reached -= hits;
            }
            // Every walk (`reached` now) refills the levels above the last, as in
            // `reference_full`.
            cycles += reached * path.refill;
            if !self.walks {
                let walks = settled[path.levels];
                cs.walks += walks;
                cs.walk_cycles += walks * self.walker_latency;
                cycles += walks * self.walker_latency;
            }
        }
        let cycles = cycles - t.uncharged;
        cs.references += refs;
        cs.cycles += cycles;
        sys.cpus[self.cpu].clock += cycles;
        sys.references += refs;
    }
}
