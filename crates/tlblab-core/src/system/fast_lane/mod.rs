//! The fast lane: how the run loop simulates the references the memo lane does not take.
//!
//! The general path (`System::reference_full`) handles any machine state, at the cost of
//! dispatching on it per reference: page sizes, locked entries, the memo and hint paths, the
//! statistics vectors. `FastLane` settles those questions once, when it is built for a thread,
//! and then runs that thread's references — hits and misses — looking the TLB levels up and
//! filling them with `Tlb::fast_lookup`/`Tlb::fast_fill`, or for the common shapes of a
//! two-level data path with `lookup_shaped`/`fill_shaped` (tlb/fast.rs), and counting into a
//! local tally settled into the statistics at the end of the run. A miss in every level is a
//! walk (`System::walk`, unchanged) or, in a TLB-only run (`RunOptions::walks` off, ARCHITECTURE.md
//! glossary, *TLB-only*), the walker's fixed latency and the page's identity frame
//! (`System::translate_without_walk`); with data accesses on, the data then goes through the
//! caches (`System::data_access`).
//!
//! For a data path of a compiled pair geometry (`pair_loops`: zen3's 64-way fully associative
//! level over 16-way sets, its neighbours, Intel-like 4-way levels over 4..16-way sets, the
//! Cortex-A9's 32-way micro TLB over 2-way sets of random replacement), once
//! both levels are ready (`pair_ready`: LRU levels at once, a level of random replacement once
//! full), the data references go through `run_pair` (TLB-only) or `run_pair_walking`
//! instead, which borrow the two levels as one `FullPair` (tlb/pair.rs) for a whole stretch of
//! references; `alternate` switches between them and the per-reference loop at instruction
//! references. These are the loops that set the speed of streams that miss every level.
//!
//! The run loop (`System::run_direct`) offers every reference to the memo lane first (lane.rs),
//! which settles runs of first-level hits in bulk; this lane takes what that one does not and
//! hands back after `HAND_BACK` first-level hits in a row, or more while the memo lane's runs
//! meet new pages too often to pay (`run`'s `hand_back`, chosen by `run_direct`).
//!
//! When it applies (`FastLane::build`): the thread runs on its hardware thread, its address
//! space maps everything with one page size (no regions of another size or shared objects),
//! and every TLB level of its paths is `Tlb::fast_ready` for that size (no locked entries, no
//! entries of other sizes, at most 64 ways). The lane stops at the first record it cannot take
//! (an event, another thread, an access crossing a page, an address the format cannot
//! translate), which then takes the general path, and after a walk that found a page of another
//! size (a huge page that fell back to 4 KiB, a smaller host page), whose fill it leaves to the
//! general `Tlb::fill_after_miss`; the run loop builds the lane again after either.
//!
//! Exactness: the lane makes the lookups, walks, fills, evictions and data accesses
//! `reference_full` makes, in the same order (but for updates of two distinct levels, which
//! `FullPair::translate` may interleave), and the same counter and cycle updates (the cycles
//! reach the hardware thread's clock at the end of the run, as in the memo lane).
//! `tests/reference_parity/` checks runs against `access` called record by record (random
//! machines, every run mode) and against the naive reference model (machines of the shapes
//! the lane specialises, with and without compiled pair loops).

mod pair;
mod step;

use super::access::Translated;
use super::{hint_record, CacheTally, LaneHints, SimError, System, ThreadState, TimingModel};
use crate::tlb::{
    level_ready, pack, pair_ready, DataPath, Fa, One, PathKind, RandomOrder, Sa, Two,
};
use crate::tlb::{Payload, Requester, Tlb, TlbEntry};
use crate::tlb::{SETTLED_FIRST, SETTLED_SECOND, SETTLED_WALK};
use crate::tlb::{SHAPE_ANY, SHAPE_FULLY_ASSOC, SHAPE_SET_ASSOC};
use std::cell::Cell;
use tlblab_trace::{Access, Record};
use tlblab_types::{Domain, PageSize, Pfn, ThreadId, VirtAddr, Vpn};

/// TLB levels per path the lane handles (every built-in machine has at most two).
const MAX_LEVELS: usize = 4;

/// After this many references in a row settled by their first TLB level, `run` returns so the
/// memo lane can take the run (measured on Lackey captures of `gzip` and `ls`, where the memo
/// lane settles first-level hits in about half the instructions): the hand-back of a run
/// whose caller has no better guess (`System::run_direct` asks for longer ones while the memo
/// lane finds new pages too often to pay).
pub(super) const HAND_BACK: u32 = 32;

/// The fewest references a `run_pair` stretch is expected to take for its first level to be
/// staged: the lane's previous pair stretch took at least this many (`FastLane::alternate`),
/// and so many records ahead are all the pair's (`FastLane::worth_staging`). The copies then
/// cost at most a few percent of the stretch.
const STAGE_MIN: usize = 256;

/// One more first-level hit in a row in a pair loop's `run`: whether it reaches `hand_back`.
#[inline(always)]
fn hands_back(run: &mut u32, hand_back: u32) -> bool {
    *run += 1;
    *run == hand_back
}

/// The instruction path's first level as the pair loops borrow it beside the data path
/// (`FastLane::instr_in_pair`): fully associative, of 64 ways (zen3's L1I, gem5-a7's) or 32
/// (the SA-1100's ITLB, the Cortex-A9's micro TLB), as a one-level path whose lookups have
/// `lookup_shaped`'s effects.
enum InstrFirst<'a> {
    Ways64(<One<Fa<64>> as PathKind>::Path<'a>),
    Ways32(<One<Fa<32>> as PathKind>::Path<'a>),
}

impl<'a> InstrFirst<'a> {
    /// Whether a level of `ways` ways, of shape `SHAPE_FULLY_ASSOC`, has a variant.
    fn compiled(ways: usize) -> bool {
        matches!(ways, 32 | 64)
    }

    /// Borrows `level` (`compiled`, and `SHAPE_FULLY_ASSOC` for the lane's page size).
    fn borrow(level: &'a mut Tlb) -> Self {
        if level.ways() == 64 {
            InstrFirst::Ways64(DataPath::borrow(level, None, 0))
        } else {
            InstrFirst::Ways32(DataPath::borrow(level, None, 0))
        }
    }

    #[inline(always)]
    fn lookup(&mut self, vpn: u64, key: u64, req: Requester) -> Option<Pfn> {
        match self {
            InstrFirst::Ways64(l) => l.lookup_first(vpn, key, req),
            InstrFirst::Ways32(l) => l.lookup_first(vpn, key, req),
        }
    }
}

/// One path (data or instruction): its TLB levels in lookup order.
#[derive(Clone, Copy, Default)]
struct FastPath {
    /// The path has at least one TLB level (a path without any takes the general path).
    usable: bool,
    levels: usize,
    /// Per level: the TLB instance and its statistics index.
    tlb: [usize; MAX_LEVELS],
    stat: [usize; MAX_LEVELS],
    latency: [u64; MAX_LEVELS],
    /// Cycles of a walk's refill of the levels above the last (`TlbConfig::refill_latency`
    /// of the last level, when there is a level above it).
    refill: u64,
}

impl FastPath {
    /// What `settle` charges a reference whose walk failed, which `reference_full` counts but
    /// does not charge (`Tally::uncharged`): its TLB latencies and the refill `settle` adds
    /// per walk.
    fn uncharged_on_failed_walk(&self) -> u64 {
        self.latency[..self.levels].iter().sum::<u64>() + self.refill
    }
}

/// What a run adds up, by path (`[data, instruction]`) and level.
#[derive(Default)]
struct Tally {
    /// References by the level that hit; index `levels`: none did (a walk). The accesses of a
    /// level are the references that reached it: those settled there or further down.
    settled_at: [[u64; MAX_LEVELS + 1]; 2],
    evictions: [[u64; MAX_LEVELS]; 2],
    /// Cycles besides the TLB levels' latencies: walks (with walks on) and data accesses.
    other_cycles: u64,
    /// TLB latencies of a reference whose walk failed: counted, as `reference_full` counts it,
    /// but never charged.
    uncharged: u64,
    /// The cache levels' counts of the walks' and data accesses' loads, with
    /// `FastLane::tally_caches` (`System::settle_cache_tally`).
    caches: CacheTally,
}

/// What a run carries from record to record, across `run_with` and `run_pair`.
struct RunState {
    t: Tally,
    /// Per path: the key and frame of its previous reference in this run. That reference left
    /// its first level's most recently used way on that page (a hit or a fill makes it so), so
    /// the same page again is a hit that changes no state: counted, nothing else. A reference
    /// on the other path may move that way (`FastLane::ends_other_memo`).
    last_key: [u64; 2],
    last_pfn: [Pfn; 2],
    memo_hits: [u64; 2],
    /// Consecutive references settled by the first level: at `hand_back`, the memo lane
    /// (lane.rs), which settles such runs in bulk, gets its turn.
    first_level_run: u32,
    hand_back: u32,
    /// `System::records_in_memory`: hint the host to fetch the records ahead.
    prefetch_records: bool,
}

/// What `FastLane::fetch_first_level_hit` made of a record.
enum FetchHit {
    /// Not a fetch hitting the instruction path's first level: `run_with` takes it.
    No,
    /// Settled; the pair loop goes on at the next record.
    Yes,
    /// Settled, and the run of first-level hits reached `hand_back`: the stretch ends.
    HandBack,
}

/// Where a stretch of the run ended.
enum Step {
    /// The run is over: `taken` records taken, and whether the lane must be built again.
    Done { taken: usize, stale: bool },
    /// Record `n` is for the other loop (`run_pair` ↔ `run_with`).
    Switch(usize),
}

impl Step {
    /// `Done` after `taken` records, the lane still good.
    fn taken(taken: usize) -> Step {
        Step::Done {
            taken,
            stale: false,
        }
    }
}

/// A loop over a stretch of records from a given one (`FastLane::alternate`).
type StretchLoop =
    fn(&FastLane, &mut System, &[Record], usize, &mut RunState) -> Result<Step, SimError>;

/// A compiled pair geometry's loops (`FastLane::pair_loops`): `run_pair` TLB-only,
/// `run_pair_staged` TLB-only after a long stretch (the same when the first level is never
/// staged), `run_pair_walking` with walks.
#[derive(Clone, Copy)]
struct PairLoops {
    tlb_only: StretchLoop,
    tlb_only_long: StretchLoop,
    walking: StretchLoop,
}

/// How `translate` settled a reference.
#[derive(Clone, Copy)]
struct Settled {
    /// The level that hit; `levels` after a walk.
    level: usize,
    /// The frame and page size of the translation (for the data access).
    pfn: Pfn,
    size: PageSize,
    /// The walk found a page of another size than the lane's: the lane must stop after it.
    stop: bool,
}

pub(super) struct FastLane {
    pub(super) thread: ThreadId,
    pub(super) cpu: usize,
    st: ThreadState,
    core: usize,
    req: Requester,
    /// The one page size of the thread's address space, and its shift and index.
    size: PageSize,
    shift: u32,
    size_index: usize,
    domain: Domain,
    /// What a miss in every level fills besides the frame, for the pair loops: the thread's
    /// tags in its domain (`Payload::tags_word`).
    walk_tags: u64,
    /// First address the page-table format cannot translate (the general path reports it).
    va_limit: u64,
    walker_latency: u64,
    /// The host prefetch hints of the lane's references (`System::prefetch_lane`).
    hints: LaneHints,
    /// The lane counts its loads into `Tally::caches` (every cache path of its core is short
    /// enough, `System::paths_tallied`), not load by load into the statistics.
    tally_caches: bool,
    /// The run's switches: page walks, data accesses, the overlap timing model.
    walks: bool,
    data: bool,
    overlap: bool,
    paths: [FastPath; 2],
    /// Per path p: a reference of p past its memo may move the most recently used way of the
    /// other path's first level, which is one of p's levels (a unified first level, or a
    /// unified second level that is the other path's first). It then ends the other path's
    /// memo (`RunState::last_key`).
    ends_other_memo: [bool; 2],
    /// The shapes (`Tlb::fast_shape`) of the data path's two levels, when it has two.
    data_shapes: Option<(u8, u8)>,
    /// The instruction path's first level is of shape `SHAPE_FULLY_ASSOC` (its filter and
    /// hint table find a hit without a search: `fetch_first_level_hit`).
    instr_first_fa: bool,
    /// The pair loops borrow the instruction path's first level beside the data path
    /// (`InstrFirst`, `borrow_paths`) and settle a fetch that hits it without ending their
    /// stretch: it is fully associative of a size `InstrFirst` compiles, on no data path level,
    /// and neither path's references end the other's memo.
    instr_in_pair: bool,
    /// A data path of shapes (FULLY_ASSOC, SET_ASSOC) whose geometry has a compiled
    /// `FullPair`: the copies of `run_pair` (TLB-only) and `run_pair_walking` for it
    /// (`pair_loops`).
    pair_loops: Option<PairLoops>,
    /// `pair_loops` is set and the two levels are ready (`pair_ready`): the data references
    /// go through the pair loop. Once true it stays true for the lane's life: nothing the
    /// lanes do empties a way (the general path, which may, drops the lane).
    pair_ready: Cell<bool>,
    /// The data path's levels are full (`levels_full`): then the TLB-only pair loops check
    /// for no invalid way. Once true it stays true, as `pair_ready`.
    full: Cell<bool>,
    /// References the lane's last pair stretch took (`usize::MAX` before the first), across
    /// runs: `alternate` tries staging the next one (`run_pair_staged`) only after a long one,
    /// so that a stretch the first level hands back after `HAND_BACK` hits, or one record
    /// between fetches on other pages, pays for no copies and no look ahead.
    last_stretch: Cell<usize>,
}

impl FastLane {
    /// The lane of `thread`, or None when the general path must take its next reference
    /// (see the module comment for the conditions).
    pub(super) fn build(sys: &System, thread: ThreadId) -> Option<FastLane> {
        let st = match sys.threads.get(thread.0 as usize) {
            Some(Some(s)) => *s,
            _ => return None,
        };
        if sys.current[st.cpu] != Some(thread) {
            return None;
        }
        let space = &sys.spaces[st.space];
        if !space.regions.is_empty() {
            return None;
        }
        let size = space.default_size;
        let core = sys.cpus[st.cpu].core;
        let mut paths = [FastPath::default(); 2];
        for (path, levels) in paths
            .iter_mut()
            .zip([&sys.cores[core].dtlb, &sys.cores[core].itlb])
        {
            if levels.len() > MAX_LEVELS {
                return None;
            }
            for (i, &(t, stat)) in levels.iter().enumerate() {
                let tlb = &sys.tlbs[t];
                if !tlb.fast_ready(size) {
                    return None;
                }
                path.tlb[i] = t;
                path.stat[i] = stat;
                path.latency[i] = tlb.config.latency;
            }
            path.levels = levels.len();
            path.usable = !levels.is_empty();
            if levels.len() > 1 {
                path.refill = sys.tlbs[path.tlb[levels.len() - 1]].config.refill_latency;
            }
        }
        let data_shapes = (paths[0].levels == 2 && paths[0].tlb[0] != paths[0].tlb[1]).then(|| {
            let shape = |i: usize| sys.tlbs[paths[0].tlb[i]].fast_shape(size);
            (shape(0), shape(1))
        });
        let ends_other_memo = [0, 1].map(|p: usize| {
            let (mine, other) = (&paths[p], &paths[1 - p]);
            mine.usable && other.usable && mine.tlb[..mine.levels].contains(&other.tlb[0])
        });
        Some(FastLane {
            thread,
            cpu: st.cpu,
            st,
            core,
            req: sys.requester(st),
            size,
            shift: size.shift(),
            size_index: size.index(),
            domain: space.domain,
            walk_tags: Payload::filled(Pfn(0), space.domain, sys.requester(st)).tags_word(),
            va_limit: sys.va_limit,
            walker_latency: sys.config.walker.latency,
            hints: sys.lane_hints(thread, st),
            tally_caches: sys.paths_tallied(sys.cpus[st.cpu].core),
            walks: sys.options.walks,
            data: sys.options.data_accesses,
            overlap: sys.config.timing.model == TimingModel::Overlap,
            ends_other_memo,
            data_shapes,
            instr_first_fa: paths[1].usable
                && sys.tlbs[paths[1].tlb[0]].fast_shape(size) == SHAPE_FULLY_ASSOC,
            instr_in_pair: paths[1].usable && {
                let (data, instr) = (&paths[0], paths[1].tlb[0]);
                let level = &sys.tlbs[instr];
                level.fast_shape(size) == SHAPE_FULLY_ASSOC
                    && InstrFirst::compiled(level.ways())
                    && !data.tlb[..data.levels].contains(&instr)
                    && ends_other_memo == [false; 2]
            },
            pair_loops: match (paths[0].levels, data_shapes) {
                (2, Some((first @ (SHAPE_FULLY_ASSOC | SHAPE_SET_ASSOC), second))) => {
                    let level = |i: usize| &sys.tlbs[paths[0].tlb[i]];
                    let random = second == SHAPE_ANY && level(1).random_sets();
                    if second == SHAPE_SET_ASSOC || random {
                        Self::pair_loops(2, first, level(0).ways(), level(1).ways(), random)
                    } else {
                        None
                    }
                }
                (1, None) => {
                    let first = &sys.tlbs[paths[0].tlb[0]];
                    Self::pair_loops(1, first.fast_shape(size), first.ways(), 0, false)
                }
                _ => None,
            },
            paths,
            pair_ready: Cell::new(false),
            full: Cell::new(false),
            last_stretch: Cell::new(usize::MAX),
        })
    }

    /// Simulates the records from the start of `records` that the lane can take; returns how
    /// many it took (stopping at the first other record, or after `hand_back` (at least 1)
    /// references in a row settled by their first TLB level), and whether the lane must be
    /// built again (a walk found a page of another size). An error is the walk's (simulated
    /// memory exhausted), after the counters of the references before it.
    #[inline(never)]
    pub(super) fn run(
        &self,
        sys: &mut System,
        records: &[Record],
        hand_back: u32,
    ) -> Result<(usize, bool), SimError> {
        let mut s = RunState {
            t: Tally::default(),
            last_key: [u64::MAX; 2],
            last_pfn: [Pfn(0); 2],
            memo_hits: [0; 2],
            first_level_run: 0,
            hand_back: hand_back.max(1),
            prefetch_records: sys.records_in_memory,
        };
        let done = self.run_stretches(sys, records, &mut s);
        self.settle(sys, &s.t, s.memo_hits);
        done
    }

    /// `run`'s loops: one copy per shape pair of a two-level data path (tlb/fast.rs),
    /// TLB-only; with walks, only the pairs with `pair_loops` have their own. A data path with
    /// `pair_loops` alternates between `run_with` and `run_pair` (or `run_pair_walking`) once
    /// its levels are full.
    fn run_stretches(
        &self,
        sys: &mut System,
        records: &[Record],
        s: &mut RunState,
    ) -> Result<(usize, bool), SimError> {
        const FA: u8 = SHAPE_FULLY_ASSOC;
        const SA: u8 = SHAPE_SET_ASSOC;
        const ANY: u8 = SHAPE_ANY;
        let step = if let Some(loops) = self.pair_loops {
            // A data path with compiled pair loops (`pair_loops`: two levels of shapes
            // (FULLY_ASSOC, SET_ASSOC) or (SET_ASSOC, SET_ASSOC), or one FULLY_ASSOC level):
            // they alternate with the shaped loop of its shapes.
            let (pair_loop, long_loop) = if self.walks {
                (loops.walking, loops.walking)
            } else {
                (loops.tlb_only, loops.tlb_only_long)
            };
            let shaped_loop: StretchLoop = match (self.walks, self.data_shapes) {
                (true, Some((FA, SA))) => Self::run_with::<true, true, FA, SA>,
                (true, Some((SA, SA))) => Self::run_with::<true, true, SA, SA>,
                // A second level of random replacement (`RandomSets`).
                (true, Some(_)) => Self::run_with::<true, true, ANY, ANY>,
                (true, None) => Self::run_with::<true, false, FA, ANY>,
                (false, Some((FA, SA))) => Self::run_with::<false, true, FA, SA>,
                (false, Some((SA, SA))) => Self::run_with::<false, true, SA, SA>,
                (false, Some((FA, _))) => Self::run_with::<false, true, FA, ANY>,
                (false, Some(_)) => Self::run_with::<false, true, SA, ANY>,
                (false, None) => Self::run_with::<false, false, FA, ANY>,
            };
            self.alternate(sys, records, s, [pair_loop, long_loop], shaped_loop)
        } else if self.walks {
            match self.data_shapes {
                Some((FA, SA)) => self.run_with::<true, true, FA, SA>(sys, records, 0, s),
                Some(_) => self.run_with::<true, true, ANY, ANY>(sys, records, 0, s),
                None => self.run_with::<true, false, ANY, ANY>(sys, records, 0, s),
            }
        } else {
            match self.data_shapes {
                None => self.run_with::<false, false, ANY, ANY>(sys, records, 0, s),
                Some((FA, SA)) => self.run_with::<false, true, FA, SA>(sys, records, 0, s),
                Some((FA, FA)) => self.run_with::<false, true, FA, FA>(sys, records, 0, s),
                Some((FA, ANY)) => self.run_with::<false, true, FA, ANY>(sys, records, 0, s),
                Some((SA, SA)) => self.run_with::<false, true, SA, SA>(sys, records, 0, s),
                Some((SA, FA)) => self.run_with::<false, true, SA, FA>(sys, records, 0, s),
                Some((SA, ANY)) => self.run_with::<false, true, SA, ANY>(sys, records, 0, s),
                Some((ANY, FA)) => self.run_with::<false, true, ANY, FA>(sys, records, 0, s),
                Some((ANY, SA)) => self.run_with::<false, true, ANY, SA>(sys, records, 0, s),
                Some(_) => self.run_with::<false, true, ANY, ANY>(sys, records, 0, s),
            }
        }?;
        match step {
            Step::Done { taken, stale } => Ok((taken, stale)),
            Step::Switch(_) => unreachable!("only the pair loop switches, and it is handled"),
        }
    }

    /// A run of a data path with `pair_loops`: `pair_loop` (`run_pair`, `run_pair_walking`) while the
    /// pair is ready, else `shaped_loop` (`run_with`); the first switches at an instruction
    /// reference, the second at a data reference once the pair is ready.
    fn alternate(
        &self,
        sys: &mut System,
        records: &[Record],
        s: &mut RunState,
        [pair_loop, long_loop]: [StretchLoop; 2],
        shaped_loop: StretchLoop,
    ) -> Result<Step, SimError> {
        self.refresh_pair_ready(sys);
        let (mut n, mut pair) = (0, self.pair_ready.get());
        let mut last = self.last_stretch.get();
        let step = loop {
            let run = match (pair, last >= STAGE_MIN) {
                (false, _) => shaped_loop,
                (true, false) => pair_loop,
                (true, true) => long_loop,
            };
            let step = run(self, sys, records, n, s)?;
            let end = match step {
                Step::Switch(m) => m,
                Step::Done { taken, .. } => taken,
            };
            if pair {
                last = end - n;
            }
            match step {
                // A fetch that hits the instruction path's first level, between data
                // references: the pair loop goes on after it (`fetch_first_level_hit`).
                Step::Switch(m) if pair => match self.fetch_first_level_hit(sys, &records[m], s) {
                    FetchHit::No => (n, pair) = (m, false),
                    FetchHit::Yes => n = m + 1,
                    FetchHit::HandBack => break Step::taken(m + 1),
                },
                Step::Switch(m) => (n, pair) = (m, !pair),
                done => break done,
            }
        };
        self.last_stretch.set(last);
        Ok(step)
    }

    /// Whether `a` is an instruction fetch of the lane's thread, within one page the lane can
    /// translate, on the page of key `key`.
    #[inline(always)]
    fn is_fetch_on(&self, a: &Access, key: u64) -> bool {
        self.is_fetch(a) && pack(a.vaddr.0 >> self.shift, self.size) == key
    }

    /// Whether `a` is an instruction fetch of the lane's thread, within one page the lane can
    /// translate.
    #[inline(always)]
    fn is_fetch(&self, a: &Access) -> bool {
        let va = a.vaddr.0;
        a.kind.is_instr()
            && a.thread == self.thread
            && (va & 0xfff) + a.size as u64 <= 4096
            && va < self.va_limit
    }

    /// Every level of the data path holds a valid entry in every way: known once found
    /// (`full`; nothing the lanes do empties a way), else counted, O(sets).
    fn levels_full(&self, sys: &System) -> bool {
        if !self.full.get() {
            let path = &self.paths[0];
            let full = path.tlb[..path.levels]
                .iter()
                .all(|&t| sys.tlbs[t].is_full());
            self.full.set(full);
        }
        self.full.get()
    }

    /// Sets `pair_ready` once a data path with `pair_loops` has its levels ready (tlb/pair.rs
    /// `pair_ready`).
    fn refresh_pair_ready(&self, sys: &System) {
        if !self.pair_ready.get() && self.pair_loops.is_some() {
            let path = &self.paths[0];
            let first = &sys.tlbs[path.tlb[0]];
            let ready = match path.levels {
                1 => level_ready(first),
                _ => pair_ready(first, &sys.tlbs[path.tlb[1]]),
            };
            self.pair_ready.set(ready);
        }
    }

    /// The data path's levels borrowed as `P`, the `DataPath` `pair_loops` picked for them
    /// (`pair_ready`).
    #[inline(always)]
    fn borrow_data_path<'a, P: DataPath<'a>>(&self, tlbs: &'a mut [Tlb]) -> P {
        let path = &self.paths[0];
        if P::LEVELS == 2 {
            let (first, second) = two_mut(tlbs, path.tlb[0], path.tlb[1]);
            P::borrow(first, Some(second), self.walk_tags)
        } else {
            P::borrow(&mut tlbs[path.tlb[0]], None, self.walk_tags)
        }
    }

    /// `borrow_data_path`, and with `instr_in_pair` the instruction path's first level too.
    #[inline(never)]
    fn borrow_paths<'a, P: DataPath<'a>>(
        &self,
        tlbs: &'a mut [Tlb],
    ) -> (P, Option<InstrFirst<'a>>) {
        if !self.instr_in_pair {
            return (self.borrow_data_path(tlbs), None);
        }
        let (data, instr) = (&self.paths[0], self.paths[1].tlb[0]);
        let apart = "instr_in_pair: the instruction path's first level is on no data level";
        if P::LEVELS == 2 {
            let [first, second, instr] = tlbs
                .get_disjoint_mut([data.tlb[0], data.tlb[1], instr])
                .expect(apart);
            let pair = P::borrow(first, Some(second), self.walk_tags);
            (pair, Some(InstrFirst::borrow(instr)))
        } else {
            let [first, instr] = tlbs.get_disjoint_mut([data.tlb[0], instr]).expect(apart);
            let path = P::borrow(first, None, self.walk_tags);
            (path, Some(InstrFirst::borrow(instr)))
        }
    }

    /// The copies of `run_pair` and `run_pair_walking` for a data path of `levels` levels
    /// whose first has shape `first` (`SHAPE_FULLY_ASSOC` or `SHAPE_SET_ASSOC`) and
    /// `first_ways` ways (over sets of `second_ways` when there are two), if that geometry is
    /// compiled. Two levels: a fully associative first level of 32, 48 or 64 ways (the range
    /// of `SHAPE_FULLY_ASSOC`; zen3's L1D is 64) over sets of 2, 4, 8, 12 or 16 ways (zen3's
    /// L2D: 16); a 4-way set associative one (Intel's L1 DTLBs, the Xeon E5-2650's) over 4 to
    /// 16 ways (Intel STLBs: 4 to 12); a 10-entry fully associative micro TLB (one set of 10
    /// ways, `SHAPE_SET_ASSOC` below 32 ways: the Cortex-A7's) over 2 or 4 ways (its main TLB:
    /// 2). Random replacement in the second level (`second_random`, `Tlb::random_sets`): a
    /// fully associative first level of 32 or 64 ways over 2 or 4 ways (the Cortex-A9's 32
    /// over its 2-way main TLB, seed 004 §III, §V). One level: fully associative of 32, 48 or
    /// 64 ways (the SA-1100's 32, gem5's 64). Each costs two copies of the loops.
    fn pair_loops(
        levels: usize,
        first: u8,
        first_ways: usize,
        second_ways: usize,
        second_random: bool,
    ) -> Option<PairLoops> {
        macro_rules! loops {
            ($kind:ty) => {
                Some(PairLoops {
                    tlb_only: FastLane::run_pair::<$kind>,
                    tlb_only_long: if <$kind as PathKind>::STAGES {
                        FastLane::run_pair_staged::<$kind>
                    } else {
                        FastLane::run_pair::<$kind>
                    },
                    walking: FastLane::run_pair_walking::<$kind>,
                })
            };
        }
        macro_rules! compiled {
            (
                one: $($w:literal),*;
                two: [$($first:ident, $shape:ident, $w1:literal: $($w2:literal),*;)*]
                random_second: [$($rfirst:ident, $rshape:ident, $rw1:literal: $($rw2:literal),*;)*]
            ) => {
                match (levels, first, first_ways, second_ways, second_random) {
                    $((1, SHAPE_FULLY_ASSOC, $w, _, _) => loops!(One<Fa<$w>>),)*
                    $($((2, $shape, $w1, $w2, false) => loops!(Two<$first<$w1>, $w2>),)*)*
                    $($((2, $rshape, $rw1, $rw2, true) => {
                        loops!(Two<$rfirst<$rw1>, $rw2, RandomOrder>)
                    })*)*
                    _ => None,
                }
            };
        }
        compiled!(
            one: 32, 48, 64;
            two: [
            Fa, SHAPE_FULLY_ASSOC, 32: 2, 4, 8, 12, 16;
            Fa, SHAPE_FULLY_ASSOC, 48: 2, 4, 8, 12, 16;
            Fa, SHAPE_FULLY_ASSOC, 64: 2, 4, 8, 12, 16;
            Sa, SHAPE_SET_ASSOC, 4: 4, 8, 12, 16;
            Sa, SHAPE_SET_ASSOC, 10: 2, 4;
            ]
            random_second: [
            Fa, SHAPE_FULLY_ASSOC, 32: 2, 4;
            Fa, SHAPE_FULLY_ASSOC, 64: 2, 4;
            ]
        )
    }
}

/// Mutable references to two distinct elements.
#[inline(always)]
/// Adds what a pair loop settled (`settled`, by `SETTLED_*`) to the tally of a data path of
/// `levels` levels (1 or 2), all full: every fill evicted, `filled_walks` of the walks filled.
fn settle_data_path(
    t: &mut Tally,
    levels: usize,
    settled: [u64; 3],
    filled_walks: u64,
    room: [u64; 2],
) {
    t.settled_at[0][0] += settled[SETTLED_FIRST];
    t.settled_at[0][levels] += settled[SETTLED_WALK];
    t.evictions[0][0] += settled[SETTLED_SECOND] + filled_walks - room[0];
    if levels == 2 {
        t.settled_at[0][1] += settled[SETTLED_SECOND];
        t.evictions[0][1] += filled_walks - room[1];
    }
}

fn two_mut<T>(v: &mut [T], i: usize, j: usize) -> (&mut T, &mut T) {
    assert_ne!(i, j, "two levels of one path are distinct instances");
    if i < j {
        let (low, high) = v.split_at_mut(j);
        (&mut low[i], &mut high[0])
    } else {
        let (low, high) = v.split_at_mut(i);
        (&mut high[0], &mut low[j])
    }
}
