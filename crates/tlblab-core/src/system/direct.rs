//! The direct run loop (`run_direct`): one hardware thread's records taken straight from the
//! batch, offered to the memo lane (lane.rs) and the fast lane (fast_lane/) before the general
//! path, with the first-level miss count that chooses the fast lane's hand-back.

use super::*;

impl System {
    /// Simulates `records` in trace order while every access runs on one hardware thread (with
    /// one, nothing needs interleaving). Returns how many records it consumed: all of them, or
    /// up to the first access of a second hardware thread, or up to the reference limit.
    pub(super) fn run_direct(
        &mut self,
        records: &[Record],
        single: bool,
        first_cpu: &mut Option<usize>,
        limit: u64,
    ) -> Result<usize, SimError> {
        // Runs of references that hit their path's memos go through the memo lane (lane.rs);
        // the lane is rebuilt after every record that took the general path, which may have
        // changed a memo.
        //
        // Streams that rarely hit a memo (random, strided, pointer chases) would pay for a lane
        // build on every reference, so after a failed try the next `skip` accesses go straight
        // to the general path, `skip` doubling with each consecutive failure up to
        // LANE_MAX_BACKOFF and resetting on a success. The lane only ever changes speed, never
        // a result (tests/reference_parity/ compares runs with access-by-access).
        //
        // What the memo lane does not take goes to the fast lane (fast_lane/), which takes any
        // reference of its thread, hit or miss, and hands back after a run of first-level hits
        // for the memo lane to try; what neither takes, to the general path.
        //
        // The memo lane pays for every page new to it (`Tlb::peek`, and a let-go once its
        // eight pages per path are taken): a stream of first-level hits over more pages than
        // it holds, in no order it follows (a random walk over 12..60 pages), made it 3x
        // slower than the fast lane (zen3, TLB-only: 22-44 against 70-79 M refs/s). A memo-lane
        // run of at least `MEMO_JUDGED` references that met a new page more often than one
        // time in `MEMO_PAGES_PER_NEW` is `poor`: the fast lane then takes the next stretch and
        // hands back only after `hand_back` first-level hits in a row, which grows fourfold
        // (from `LONG_HAND_BACK_MIN` up to `LONG_HAND_BACK_MAX`) while the memo lane's tries
        // between stretches stay poor, and drops back to `HAND_BACK` after one that is not.
        // (A Lackey capture of `ls -lR` meets a new page about one time in 12.)
        //
        // A memo-lane run shorter than `MEMO_SHORT` references counts as a failed try, not a
        // success: a program fetching on one code page between data references that miss the
        // first level (a large random footprint) gives the memo lane one fetch at a time, and
        // the lane was built twice per data reference and the fast lane never tried
        // (ARCHITECTURE.md, "Fetches in the walking pair loop").
        const LANE_MAX_BACKOFF: u32 = 64;
        const MEMO_SHORT: usize = 4;
        const MEMO_JUDGED: usize = 64;
        const MEMO_PAGES_PER_NEW: usize = 8;
        const LONG_HAND_BACK_MIN: u32 = 1024;
        const LONG_HAND_BACK_MAX: u32 = 1 << 16;
        let mut fast: Option<FastLane> = None;
        let mut lane: Option<Lane> = None;
        let mut lane_stale = true;
        let mut backoff = 0u32;
        let mut skip = 0u32;
        let mut hand_back = HAND_BACK;
        let mut i = 0;
        while i < records.len() {
            if self.records_in_memory {
                hint_record(records, i);
            }
            let r = records[i];
            if let Record::Access(a) = r {
                if skip > 0 {
                    skip -= 1;
                } else {
                    if lane_stale || lane.as_ref().is_some_and(|l| l.thread != a.thread) {
                        Lane::rebuild(&mut lane, self, a.thread);
                        lane_stale = false;
                    }
                    let (mut took, mut new_pages) = (0, 0);
                    if let Some(l) = &mut lane {
                        if !single && *first_cpu.get_or_insert(l.cpu) != l.cpu {
                            return Ok(i);
                        }
                        // Each lane record is one reference: stop at the limit.
                        let budget = (limit - self.references).min((records.len() - i) as u64);
                        took = l.run(self, &records[i..i + budget as usize]);
                        new_pages = l.new_pages;
                    }
                    if took > 0 {
                        if took < MEMO_SHORT {
                            // A failed try, as below.
                            backoff = (backoff * 2).clamp(1, LANE_MAX_BACKOFF);
                            skip = backoff - 1;
                        } else {
                            backoff = 0;
                        }
                        i += took;
                        if self.references >= limit {
                            return Ok(i);
                        }
                        if took >= MEMO_JUDGED {
                            if new_pages * MEMO_PAGES_PER_NEW > took {
                                // Poor: the fast lane takes the next stretch, a longer one.
                                hand_back =
                                    (hand_back * 4).clamp(LONG_HAND_BACK_MIN, LONG_HAND_BACK_MAX);
                                skip = 1;
                            } else {
                                hand_back = HAND_BACK;
                            }
                        }
                        continue;
                    }
                    backoff = (backoff * 2).clamp(1, LANE_MAX_BACKOFF);
                    skip = backoff - 1;
                }
                // With walks, only once the memo lane keeps failing (a stream that misses the
                // first level): on traces that mostly hit it, short stretches of the fast lane
                // between memo-lane runs cost more than the general path (measured: +12% on a
                // Lackey capture of `ls`, full model).
                let fast_worth_it =
                    !self.options.walks || backoff == LANE_MAX_BACKOFF || hand_back > HAND_BACK;
                if fast_worth_it && fast.as_ref().is_none_or(|l| l.thread != a.thread) {
                    fast = FastLane::build(self, a.thread);
                }
                if let (true, Some(l)) = (fast_worth_it, &fast) {
                    if !single && *first_cpu.get_or_insert(l.cpu) != l.cpu {
                        return Ok(i);
                    }
                    // Each lane record is one reference: stop at the limit.
                    let budget = (limit - self.references).min((records.len() - i) as u64);
                    let (took, fast_stale) =
                        l.run(self, &records[i..i + budget as usize], hand_back)?;
                    if took > 0 {
                        // It filled and evicted: the memo lane's pages may be gone.
                        lane_stale = true;
                        i += took;
                        if self.references >= limit {
                            return Ok(i);
                        }
                        if fast_stale {
                            fast = None;
                        }
                        continue;
                    }
                }
            }
            // A mark of independence on a machine without `timing.mlp` changes nothing the
            // lanes hold: they go on (a marked workload's many marks would rebuild them).
            if let (Record::Event(Event::Independent { thread, begin }), true) =
                (r, self.mlp.is_empty())
            {
                self.set_independent(thread, begin)?;
                i += 1;
                continue;
            }
            // An access of the memo lane's thread that misses neither path's first TLB level
            // fills, evicts and invalidates nothing in any level (a fill follows a miss in
            // every level above it): the lanes' pages and what the fast lane relies on stay
            // as they were, and only the cache line memos the memo lane copied may move.
            // Anything else through the general path may change them (fills, page sizes,
            // locks): both lanes are built again. (Measured on a Lackey capture of `ls -lR`,
            // whose page-crossing accesses take the general path: 3,000 lane builds of
            // ~5,000 host instructions each, mostly finding the pages again.)
            let misses_before = match (&r, &lane) {
                (Record::Access(a), Some(l)) if a.thread == l.thread => {
                    Some((l.cpu, self.first_level_misses(l.cpu)))
                }
                _ => None,
            };
            self.prefetch_ahead(records, i, PREFETCH_AHEAD);
            if !self.direct_record(r, single, first_cpu)? {
                return Ok(i);
            }
            if !self.lanes_allowed {
                // An event turned the lanes off (`mlp_general_path`): the rest of the
                // batch goes through the timeline, as a run without lanes does.
                return Ok(i + 1);
            }
            match (misses_before, &mut lane) {
                (Some((cpu, before)), Some(l)) if self.first_level_misses(cpu) == before => {
                    l.keep_after_general_access(self);
                }
                _ => {
                    lane_stale = true;
                    fast = None;
                }
            }
            i += 1;
            if self.references >= limit {
                return Ok(i);
            }
        }
        Ok(records.len())
    }

    /// The misses so far of hardware thread `cpu`'s first TLB levels (both paths'), as counted
    /// in its statistics.
    pub(super) fn first_level_misses(&self, cpu: usize) -> u64 {
        let stats = &self.cpu_stats[cpu].tlb;
        self.cpus[cpu]
            .first_tlb
            .iter()
            .flatten()
            .map(|&(_, stat)| stats[stat].misses)
            .sum()
    }

    /// One record of `run_direct` through the general path; false (nothing done) when it is
    /// an access of a second hardware thread.
    pub(super) fn direct_record(
        &mut self,
        r: Record,
        single: bool,
        first_cpu: &mut Option<usize>,
    ) -> Result<bool, SimError> {
        match r {
            Record::Access(a) => {
                if !single {
                    let cpu = self.cpu_of(a.thread)?;
                    if *first_cpu.get_or_insert(cpu) != cpu {
                        return Ok(false);
                    }
                }
                self.access(a)?;
            }
            Record::Event(e) => self.event(e)?,
        }
        Ok(true)
    }
}
