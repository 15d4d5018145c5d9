//! The fast lane's pair loops: a data path of a compiled pair geometry borrowed as one
//! `FullPair` (tlb/pair.rs) for a stretch of references, TLB-only (`run_pair`, staged or in
//! place) or walking (`run_pair_walking`), with the instruction fetches between them.

use super::*;

impl FastLane {
    /// Record `n` of a pair loop as a data reference the pair can take, or where the stretch
    /// ends: at an event, a reference of another thread, crossing a page or past the address
    /// limit (`Done`), or at an instruction reference (`Switch`, to the shaped loop).
    #[inline(always)]
    pub(super) fn pair_access<'r>(&self, r: &'r Record, n: usize) -> Result<&'r Access, Step> {
        let done = Step::taken(n);
        let Record::Access(a) = r else {
            return Err(done);
        };
        if a.kind.is_instr() {
            return Err(Step::Switch(n));
        }
        let va = a.vaddr.0;
        // (An access of 0 or 1 bytes never crosses, so its size needs no test of its own; one
        // branch for the three conditions, which nearly always hold.)
        let crosses = (va & 0xfff) + a.size as u64 > 4096;
        if (a.thread != self.thread) | crosses | (va >= self.va_limit) {
            return Err(done);
        }
        Ok(a)
    }

    /// `run_with` for the data references of a TLB-only run whose data path has `pair_loops`
    /// and full (`pair_ready`), from record `from`: the levels are borrowed once as a
    /// `FullPair` (tlb/pair.rs) for the whole stretch. An instruction reference switches to
    /// `run_with`, which switches back at the next data reference.
    ///
    /// Measured (callgrind, zen3, random:pages=262144,accesses=1M, TLB-only): 287 instructions
    /// per reference through `run_with`'s shaped calls, 108 through the pair (122-125 before
    /// its payloads were stored as two words, `KeyHash` and the unchecked LRU head).
    ///
    /// This is the stretch with the first level in place; after a long stretch `alternate`
    /// calls `run_pair_staged` instead, which stages it for a stretch of 4 KiB pages that is
    /// `worth_staging` (`PathKind::Staged`, tlb/pair.rs `Staged`) and takes the page size as
    /// a constant (`pair_stretch::<_, true>`; measured, interleaved medians of 9,
    /// `profile_run zen3 … tlb-only`: random:pages=262144 111.3 → 117.1 M refs/s, strided
    /// 105.3 → 114.3 for the constant, 113.5 → 108.3 instructions per reference). Two copies
    /// of the loop per geometry, not four.
    #[inline(never)]
    pub(super) fn run_pair<P: PathKind>(
        &self,
        sys: &mut System,
        records: &[Record],
        from: usize,
        s: &mut RunState,
    ) -> Result<Step, SimError> {
        if !self.levels_full(sys) {
            return Ok(self.run_pair_with_room::<P>(sys, records, from, s));
        }
        let (pair, instr): (P::Path<'_>, _) = self.borrow_paths(&mut sys.tlbs);
        Ok(self.pair_stretch::<_, false, false, true>(pair, instr, records, from, s))
    }

    /// `run_pair` while the data path's levels have room (`levels_full` is false: a fill may
    /// find an invalid way), out of line: inlined beside the full levels' copy, it made that
    /// copy 6 instructions per reference dearer (the engine benchmark's `fetch_random`).
    #[inline(never)]
    pub(super) fn run_pair_with_room<P: PathKind>(
        &self,
        sys: &mut System,
        records: &[Record],
        from: usize,
        s: &mut RunState,
    ) -> Step {
        let (pair, instr): (P::Path<'_>, _) = self.borrow_paths(&mut sys.tlbs);
        self.pair_stretch::<_, false, true, true>(pair, instr, records, from, s)
    }

    /// `run_pair` for a stretch that follows a long one (`FastLane::alternate`): staged if it is
    /// on 4 KiB pages and `worth_staging`, else as `run_pair`.
    #[inline(never)]
    pub(super) fn run_pair_staged<P: PathKind>(
        &self,
        sys: &mut System,
        records: &[Record],
        from: usize,
        s: &mut RunState,
    ) -> Result<Step, SimError> {
        // A staged stretch checks for no invalid way (`DataPath::translate`'s `ROOM`): its
        // levels must be full.
        if self.size == PageSize::Size4K
            && self.worth_staging(records, from, self.fetch_key(s))
            && self.levels_full(sys)
        {
            let pair: P::Staged<'_> = self.borrow_data_path(&mut sys.tlbs);
            Ok(self.staged_stretch(pair, records, from, s))
        } else {
            self.run_pair::<P>(sys, records, from, s)
        }
    }

    /// The key of the page whose fetches `run_pair` counts without ending its stretch (the
    /// instruction path's memo, `RunState::last_key`), or none (`u64::MAX`).
    #[inline(always)]
    pub(super) fn fetch_key(&self, s: &RunState) -> u64 {
        if self.paths[1].usable && !self.ends_other_memo[0] {
            s.last_key[1]
        } else {
            u64::MAX
        }
    }

    /// Whether the pair stretch from record `from`, after a long one (`alternate`), is likely
    /// long enough to repay staging its first level (two copies of 2.2 KiB for 64 ways, and an
    /// allocation): the next `STAGE_MIN` records are references the pair takes (data
    /// references, or fetches on the page of `fetch_key`). Either way the simulation is the
    /// same; only its speed differs.
    pub(super) fn worth_staging(&self, records: &[Record], from: usize, fetch_key: u64) -> bool {
        let Some(ahead) = records.get(from..from + STAGE_MIN) else {
            return false;
        };
        ahead
            .iter()
            .enumerate()
            .all(|(i, r)| match self.pair_access(r, from + i) {
                Ok(_) => true,
                Err(_) => matches!(r, Record::Access(a) if self.is_fetch_on(a, fetch_key)),
            })
    }

    /// `pair_stretch` of a staged path on 4 KiB pages, in a function of its own: inlined in
    /// the function that decides on staging (`run_pair_staged`, or earlier `run_pair`), the
    /// same loop ran slower (measured, `profile_run zen3 random:pages=262144,accesses=4M
    /// tlb-only`, interleaved medians of 7: 105 against 118 M refs/s, with 1 instruction per
    /// reference fewer; how the compiler lays out and allocates the bigger function, not the
    /// instruction count, decides here). The unstaged copy stays
    /// inlined in `run_pair`: a stretch of one record (data references between fetches on
    /// other pages) pays for no call and no decision (36.7 M refs/s on such a stream, as
    /// before staging; 32.5 with the decision in `run_pair`).
    #[inline(never)]
    pub(super) fn staged_stretch<'a, D: DataPath<'a>>(
        &self,
        pair: D,
        records: &[Record],
        from: usize,
        s: &mut RunState,
    ) -> Step {
        self.pair_stretch::<D, true, false, false>(pair, None, records, from, s)
    }

    /// `run_pair`'s loop on the data path `pair`, borrowed from the lane's levels: from record
    /// `from` to the end of the stretch.
    #[inline(always)]
    pub(super) fn pair_stretch<
        'a,
        D: DataPath<'a>,
        const SMALL: bool,
        const ROOM: bool,
        const INSTR: bool,
    >(
        &self,
        mut pair: D,
        mut instr: Option<InstrFirst<'a>>,
        records: &[Record],
        from: usize,
        s: &mut RunState,
    ) -> Step {
        // With `SMALL` the lane's pages are known to be 4 KiB: constants, not loads.
        let (req, shift, size) = if SMALL {
            (self.req, 12, PageSize::Size4K)
        } else {
            (self.req, self.shift, self.size)
        };
        let frame_shift = shift - 12;
        let mut settled = [0u64; 3];
        let mut memo_hits = 0u64;
        let mut last_key = s.last_key[0];
        let mut first_level_run = s.first_level_run;
        let hand_back = s.hand_back;
        let mut step = Step::taken(records.len());
        // Fetches on the instruction path's previous page are first-level hits that change
        // nothing (`RunState::last_key`): counted here, as `run_with` counts them, without
        // ending the stretch. Data references leave that page the most recent in the
        // instruction path's first level unless one of their levels is it (`ends_other_memo`).
        // A program fetching on one code page between data references that miss every level
        // otherwise ended a stretch, and borrowed the pair again, per fetch: measured
        // (callgrind, zen3, the engine benchmark's `fetch_random`, TLB-only), 229 → 74
        // instructions per reference (33 → 112 M refs/s, interleaved medians of 5), at a
        // cost of 4 instructions per reference to the all-data loop (109.5 → 113.3 on
        // random:pages=262144; 60.1 against 61.2 M refs/s, interleaved medians of 7).
        //
        // With `instr_in_pair`, a fetch on another page that hits the instruction path's first
        // level is settled here too (`instr_first_hit`), and its page becomes the memo's.
        let mut fetch_key = self.fetch_key(s);
        let mut fetch_memo_hits = 0u64;
        let prefetch_records = s.prefetch_records;
        // An index loop, not `records[from..].iter().enumerate()`: measured with the staged
        // loop's `present_of` (profile_run zen3 … tlb-only, 4M refs, interleaved, the Xeon
        // host), the index form ran strided 126-138 M refs/s against 115-121 for the
        // iterator's (random 124-130 against 118-125): code layout, not instruction count.
        // (A count of the settled references packed into one word instead of `settled`,
        // indexed by the level, took 21 more instructions a reference: tried, not kept.)
        #[allow(clippy::needless_range_loop)]
        for n in from..records.len() {
            let r = &records[n];
            if prefetch_records {
                hint_record(records, n);
            }
            let a = match self.pair_access(r, n) {
                Ok(a) => a,
                Err(Step::Switch(_)) if matches!(r, Record::Access(a) if self.is_fetch_on(a, fetch_key)) =>
                {
                    fetch_memo_hits += 1;
                    if hands_back(&mut first_level_run, hand_back) {
                        step = Step::taken(n + 1);
                        break;
                    }
                    continue;
                }
                Err(Step::Switch(_))
                    if INSTR
                        && self.instr_in_pair
                        && matches!(r, Record::Access(a) if self.instr_first_hit(&mut instr, a, s).is_some()) =>
                {
                    fetch_key = s.last_key[1];
                    if hands_back(&mut first_level_run, hand_back) {
                        step = Step::taken(n + 1);
                        break;
                    }
                    continue;
                }
                Err(end) => {
                    step = end;
                    break;
                }
            };
            let va = a.vaddr.0;
            let vpn = va >> shift;
            let key = pack(vpn, size);
            let level = if key == last_key {
                memo_hits += 1;
                SETTLED_FIRST
            } else {
                let (level, _) = pair.translate::<ROOM>(vpn, key, req, Pfn(vpn << frame_shift));
                settled[level] += 1;
                last_key = key;
                level
            };
            // Only a first-level hit can reach `hand_back` (at least 1).
            if level != SETTLED_FIRST {
                first_level_run = 0;
            } else if hands_back(&mut first_level_run, hand_back) {
                step = Step::taken(n + 1);
                break;
            }
        }
        // Full levels: every fill evicted. (`last_pfn` is only read with walks on.)
        let levels = D::LEVELS;
        let room = pair.fills_into_room();
        settle_data_path(&mut s.t, levels, settled, settled[SETTLED_WALK], room);
        s.memo_hits[0] += memo_hits;
        s.memo_hits[1] += fetch_memo_hits;
        s.first_level_run = first_level_run;
        s.last_key[0] = last_key;
        if self.ends_other_memo[0] && settled.iter().any(|&n| n > 0) {
            s.last_key[1] = u64::MAX;
        }
        step
    }

    /// In a pair stretch with `instr_in_pair`, access `a`, not a fetch on the instruction
    /// path's memo page: if it is a fetch that hits the instruction path's first level `level`
    /// (borrowed beside the data path), its frame, the hit counted and the memo moved to its
    /// page as `fetch_first_level_hit` does (the caller settles the rest: with walks and data
    /// accesses, `settle_fetch_hit`). Out of line, as `walking_fetch_memo_hit`.
    #[inline(never)]
    pub(super) fn instr_first_hit(
        &self,
        level: &mut Option<InstrFirst<'_>>,
        a: &Access,
        s: &mut RunState,
    ) -> Option<Pfn> {
        let level = level.as_mut()?;
        if !self.is_fetch(a) {
            return None;
        }
        let vpn = a.vaddr.0 >> self.shift;
        let key = pack(vpn, self.size);
        let pfn = level.lookup(vpn, key, self.req)?;
        s.t.settled_at[1][0] += 1;
        s.last_key[1] = key;
        s.last_pfn[1] = pfn;
        Some(pfn)
    }

    /// Between two pair-loop stretches (`alternate`), an instruction fetch `r` of the lane's
    /// thread that hits the instruction path's first level, settled as `run_with` settles it
    /// (its memo, or `Tlb::fast_lookup`; the hit counted, the memos moved, with walks and data
    /// accesses its cache access made and its cycles added), so that the pair loop goes on at
    /// the next record instead of `run_with` taking the fetch and handing back at the next
    /// data reference: a program whose fetches move between code pages among data references
    /// that miss paid for that switch per fetch (ARCHITECTURE.md, "Fetches in the walking
    /// pair loop"). Anything else (`FetchHit::No`: a miss, which fills, or a record the lane
    /// does not take) is left to `run_with`.
    pub(super) fn fetch_first_level_hit(
        &self,
        sys: &mut System,
        r: &Record,
        s: &mut RunState,
    ) -> FetchHit {
        let path = &self.paths[1];
        let a = match r {
            Record::Access(a) if path.usable && self.is_fetch(a) => a,
            _ => return FetchHit::No,
        };
        let vpn = a.vaddr.0 >> self.shift;
        let key = pack(vpn, self.size);
        let pfn = if key == s.last_key[1] {
            s.memo_hits[1] += 1;
            s.last_pfn[1]
        } else {
            let tlb = &mut sys.tlbs[path.tlb[0]];
            let found = if self.instr_first_fa {
                tlb.lookup_shaped::<SHAPE_FULLY_ASSOC>(vpn, key, self.req)
            } else {
                tlb.fast_lookup(vpn, key, self.req)
            };
            let Some(slot) = found else {
                return FetchHit::No;
            };
            let pfn = tlb.payload_at(slot).pfn;
            s.t.settled_at[1][0] += 1;
            s.last_key[1] = key;
            s.last_pfn[1] = pfn;
            if self.ends_other_memo[1] {
                s.last_key[0] = u64::MAX;
            }
            pfn
        };
        self.settle_fetch_hit(sys, a, pfn, s)
    }

    /// In `run_pair_walking`, an instruction fetch `r` on the instruction path's previous page
    /// (`fetch_key`): a first-level hit that changes no TLB state (`RunState::last_key`),
    /// counted, its cache access made and its cycles added as `run_with` does, without ending
    /// the stretch (as `pair_stretch` does TLB-only); returns whether `r` was one, and whether
    /// the stretch hands back after it. A program fetching on one code page between data
    /// references that miss every level otherwise ended the stretch, and borrowed the pair
    /// again, per fetch (ARCHITECTURE.md, "Fetches in the walking pair loop"). Out of line:
    /// kept in the loop, its values cost the all-data streams 8-12 instructions per reference.
    #[cold]
    #[inline(never)]
    pub(super) fn walking_fetch_memo_hit(
        &self,
        sys: &mut System,
        r: &Record,
        s: &mut RunState,
    ) -> FetchHit {
        match r {
            Record::Access(a) if self.is_fetch_on(a, self.fetch_key(s)) => {
                s.memo_hits[1] += 1;
                self.settle_fetch_hit(sys, a, s.last_pfn[1], s)
            }
            _ => FetchHit::No,
        }
    }

    /// `walking_fetch_memo_hit` for a fetch `r` on another page that hits the instruction
    /// path's first level `instr` (`instr_in_pair`, `instr_first_hit`). A function of its own:
    /// one that also asked this made each fetch on the memo's page 21 instructions dearer
    /// (callgrind, the engine benchmark's `fetch_random`, without caches).
    #[cold]
    #[inline(never)]
    pub(super) fn walking_fetch_other_hit(
        &self,
        sys: &mut System,
        r: &Record,
        instr: &mut Option<InstrFirst<'_>>,
        s: &mut RunState,
    ) -> FetchHit {
        match r {
            Record::Access(a) => match self.instr_first_hit(instr, a, s) {
                Some(pfn) => self.settle_fetch_hit(sys, a, pfn, s),
                None => FetchHit::No,
            },
            _ => FetchHit::No,
        }
    }

    /// The rest of fetch `a`'s hit in the instruction path's first level at frame `pfn`, as
    /// `run_with` settles it: with walks and data accesses on, its cache access and cycles;
    /// then one more first-level hit in a row, which may reach `hand_back`. Inlined, cache
    /// access and all, in each of its three callers: left to the compiler, the cache access
    /// was a call of its own, 16-26 instructions per fetch dearer (callgrind, `fetch_random`).
    #[inline(always)]
    pub(super) fn settle_fetch_hit(
        &self,
        sys: &mut System,
        a: &Access,
        pfn: Pfn,
        s: &mut RunState,
    ) -> FetchHit {
        if self.walks && self.data {
            self.fetch_cache_access(sys, a, pfn, s);
        }
        s.first_level_run += 1;
        if s.first_level_run == s.hand_back {
            FetchHit::HandBack
        } else {
            FetchHit::Yes
        }
    }

    /// `settle_fetch_hit`'s cache access of fetch `a` at frame `pfn`, its cycles added.
    #[inline(always)]
    pub(super) fn fetch_cache_access(
        &self,
        sys: &mut System,
        a: &Access,
        pfn: Pfn,
        s: &mut RunState,
    ) {
        let tally = self.tally(&mut s.t.caches);
        let lat = sys.data_access(
            self.cpu,
            self.core,
            Translated::new(a.kind, a.vaddr, pfn, self.size),
            tally,
        );
        // `reference_full`: a first-level hit overlaps its access (Overlap model).
        let first = self.paths[1].latency[0];
        s.t.other_cycles += if self.overlap {
            first.max(lat) - first
        } else {
            lat
        };
    }

    /// `run_pair` with page walks on: a miss in both levels walks (`System::walk`), and with
    /// data accesses on every reference then goes through the caches (`System::data_access`),
    /// as in `run_with`. The walk and the data access need the `System` while the pair holds
    /// the TLB levels, so the levels are moved out of `sys.tlbs` for the stretch and back at
    /// its end: neither reads a TLB. A walk that finds a page of another size ends the stretch
    /// and the lane (the general fill takes it, `fill_other_size`).
    ///
    /// Measured (callgrind, zen3, random:pages=262144,accesses=1M), instructions per reference
    /// against `run_with`'s shaped calls: 1,561 → 1,350 without caches, 3,293 → 3,070 in the
    /// full model.
    #[inline(never)]
    pub(super) fn run_pair_walking<P: PathKind>(
        &self,
        sys: &mut System,
        records: &[Record],
        from: usize,
        s: &mut RunState,
    ) -> Result<Step, SimError> {
        let mut tlbs = std::mem::take(&mut sys.tlbs);
        let path = &self.paths[0];
        let (mut pair, mut instr): (P::Path<'_>, _) = self.borrow_paths(&mut tlbs);
        let (req, shift, size) = (self.req, self.shift, self.size);
        let tlb_first = path.latency[0];
        let mut settled = [0u64; 3];
        // A walk that found a page of another size: its leaf, for the general fill.
        let mut other_size = None;
        let mut outcome;
        let mut from = from;
        // The loop over the records, entered again after a fetch on the instruction path's
        // previous page (`walking_fetch_memo_hit`): outside it, so that the loop itself is
        // compiled as before (with the fetch's arm inside, all-data streams of first-level
        // hits cost 8% more instructions: register allocation, not work).
        'stretch: loop {
            outcome = Ok(Step::taken(records.len()));
            for (i, r) in records[from..].iter().enumerate() {
                let n = from + i;
                if s.prefetch_records {
                    hint_record(records, n);
                }
                let a = match self.pair_access(r, n) {
                    Ok(a) => a,
                    Err(end) => {
                        outcome = Ok(end);
                        break;
                    }
                };
                let va = a.vaddr.0;
                let vpn = va >> shift;
                let key = pack(vpn, size);
                let memo_hit = key == s.last_key[0];
                let (level, pfn) = if memo_hit {
                    s.memo_hits[0] += 1;
                    (SETTLED_FIRST, s.last_pfn[0])
                } else if let Some(pfn) = pair.lookup_first(vpn, key, req) {
                    settled[SETTLED_FIRST] += 1;
                    (SETTLED_FIRST, pfn)
                } else if let Some(payload) = pair.lookup_second(vpn, key, req) {
                    settled[SETTLED_SECOND] += 1;
                    pair.fill(vpn, key, payload, false);
                    (SETTLED_SECOND, payload.pfn)
                } else {
                    settled[SETTLED_WALK] += 1;
                    let tally = self.tally(&mut s.t.caches);
                    let (leaf, cycles) =
                        match sys.walk_counted(self.core, self.st, VirtAddr(va), tally) {
                            Ok(walked) => walked,
                            Err(e) => {
                                // Counted, its TLB latencies uncharged (`Tally::uncharged`), as
                                // `reference_full` counts it.
                                s.t.uncharged = path.uncharged_on_failed_walk();
                                outcome = Err(e);
                                break;
                            }
                        };
                    s.t.other_cycles += cycles;
                    if leaf.size != size {
                        other_size = Some((n, a, leaf));
                        break;
                    }
                    pair.fill(vpn, key, Payload::filled(leaf.pfn, leaf.domain, req), true);
                    (SETTLED_WALK, leaf.pfn)
                };
                if !memo_hit {
                    s.last_key[0] = key;
                    s.last_pfn[0] = pfn;
                    if self.ends_other_memo[0] {
                        s.last_key[1] = u64::MAX;
                    }
                }
                if self.data {
                    let tally = self.tally(&mut s.t.caches);
                    let lat = sys.data_access(
                        self.cpu,
                        self.core,
                        Translated::new(a.kind, a.vaddr, pfn, size),
                        tally,
                    );
                    // `reference_full`: a first-level hit overlaps its data access (Overlap model).
                    s.t.other_cycles += if self.overlap && level == SETTLED_FIRST {
                        tlb_first.max(lat) - tlb_first
                    } else {
                        lat
                    };
                }
                if level != SETTLED_FIRST {
                    sys.prefetch_lane(&self.hints, records, n);
                }
                s.first_level_run = if level == SETTLED_FIRST {
                    s.first_level_run + 1
                } else {
                    0
                };
                if s.first_level_run == s.hand_back {
                    outcome = Ok(Step::taken(n + 1));
                    break;
                }
            }
            if let Ok(Step::Switch(n)) = outcome {
                let hit = match self.walking_fetch_memo_hit(sys, &records[n], s) {
                    FetchHit::No if self.instr_in_pair => {
                        self.walking_fetch_other_hit(sys, &records[n], &mut instr, s)
                    }
                    hit => hit,
                };
                match hit {
                    FetchHit::Yes => {
                        from = n + 1;
                        continue 'stretch;
                    }
                    FetchHit::HandBack => outcome = Ok(Step::taken(n + 1)),
                    FetchHit::No => {}
                }
            }
            break 'stretch;
        }
        let room = pair.fills_into_room();
        drop((pair, instr));
        sys.tlbs = tlbs;
        // Full levels: every fill by the pair evicted (a walk that failed filled nothing; one to
        // a page of another size is filled below, by the general fill, which counts its own).
        let t = &mut s.t;
        let pair_walks = settled[SETTLED_WALK] - (other_size.is_some() || outcome.is_err()) as u64;
        settle_data_path(
            t,
            <P::Path<'_> as DataPath>::LEVELS,
            settled,
            pair_walks,
            room,
        );
        if let Some((n, a, leaf)) = other_size {
            // The walk's page is of another size: the general fill, the data access, and the
            // lane ends (as `run_with` after `translate_two`).
            s.last_key[0] = u64::MAX;
            if self.ends_other_memo[0] {
                s.last_key[1] = u64::MAX;
            }
            self.fill_other_size::<0>(sys, t, a.vaddr.0, (leaf.pfn, leaf.size, leaf.domain));
            if self.data {
                t.other_cycles += sys.data_access(
                    self.cpu,
                    self.core,
                    Translated::new(a.kind, a.vaddr, leaf.pfn, leaf.size),
                    None,
                );
            }
            return Ok(Step::Done {
                taken: n + 1,
                stale: true,
            });
        }
        outcome
    }
}
