//! The memo lane: how the run loop settles runs of first-level TLB hits in bulk.
//!
//! Real programs make long runs of references that hit the first TLB level of their path (a
//! loop's instruction fetches on a few code pages, loads from a stack frame and a heap
//! object). Such a hit walks, fills and evicts nothing; all it changes besides counters is the
//! level's replacement state and its memo. `Lane` keeps, per path (data, instruction), up to
//! `LANE_PAGES` pages already found in the level (`Tlb::peek`, which changes nothing), goes
//! over as many records in a row as hit one of them, a few compares each, and settles the run
//! at its end: the counters and cycles once, and a hit (`Tlb::hit_found`) on each page touched,
//! in the order of their last touches. That order is all the state of LRU and tree-PLRU
//! depends on (each touch overwrites what the earlier ones wrote on its way), FIFO and random
//! replacement ignore hits, and the memo ends on the last page touched: the level ends as it
//! would have reference by reference.
//!
//! A path whose lane pages are all taken lets go of the one touched longest ago for a new page
//! the level holds, keeping that page's last touch (`LaneTouch`) for the settle: replaying an
//! earlier touch of a page that is touched again later changes nothing the later one does not
//! overwrite, so the replay stays exact. Programs touch more pages than `LANE_PAGES` in a loop
//! (a Lackey capture of `ls -lR` switches data pages every ~2 references, one switch in six to
//! a page not among the last eight); before, each such switch ended the run, and a run's end
//! (settle, the fast lane's stretch, a new lane) cost ~4,000 host instructions. After
//! `SPILL_ROOM` let-gos on a path the run ends, settles, and the next run goes on.
//!
//! Without data accesses (TLB-only) the loop is its own (`run_tlb_only`): a record is checked
//! against the 4 KiB frame its kind last referenced (loads and stores each keep one, on pages
//! of the data path's lane), and everything else (another frame, a lane page, a page new to
//! the lane) is `tlb_only_step`'s.
//!
//! With data accesses on, a reference whose line is the first cache level's memo line, or a
//! line the level holds (`Cache::access_if_present`, which updates the level as the hit
//! would), is counted the same way; any other goes through the caches on the spot
//! (`System::load`, as `data_access` does). Either moves the line memos, which the lane then
//! re-reads.
//!
//! Exactness: `run` accepts a record only under the conditions of `System::access`'s inline
//! case followed by a first-level hit, and mirrors their counter updates and cycles.
//! `tests/reference_parity/` checks every counter against `access` called record by record,
//! on random machines and streams (`run_agrees_with_access_by_access`), and on long streams
//! over more pages than the lane holds (`lane_runs_over_more_pages_than_it_holds_...`).

use super::{hint_record, System, ThreadState, TimingModel};
use crate::tlb::{FoundEntry, Requester};
use tlblab_trace::Record;
use tlblab_types::{AccessKind, PageSize, Pfn, ThreadId, VirtAddr};

/// Pages per path the lane holds: enough for a loop's code, stack and a few data objects.
/// Sixteen: `simd::position_of_16` searches them. (Eight until 2026-11-30: sixteen halve the
/// pages new to the lane on a Lackey capture of `ls`, docs/lab/engine-performance.md.)
const LANE_PAGES: usize = 16;

/// Touches of pages let go of that a path keeps before the run ends to settle them (the next
/// run goes on with the same lane): each settle costs ~1,000 host instructions, so not too
/// few.
const SPILL_ROOM: usize = 128;

/// The room each path's list in `System::lane_touches` reserves: the let-go touches and, at a
/// settle, the last touches of the path's lane pages.
pub(super) const TOUCHES_ROOM: usize = SPILL_ROOM + LANE_PAGES;

/// `AccessKind`s, the index of the TLB-only loop's per-path state (`FrameChecks`).
const KINDS: usize = 3;

/// By `AccessKind`: 1 for an instruction fetch (the TLB-only loop's count of them).
const IS_INSTR: [u64; KINDS] = [
    AccessKind::Instr.is_instr() as u64,
    AccessKind::Load.is_instr() as u64,
    AccessKind::Store.is_instr() as u64,
];

/// The path (0 data, 1 instruction) of each `AccessKind`, for `FrameChecks`.
const PATH_OF: [usize; KINDS] = [
    AccessKind::Instr.is_instr() as usize,
    AccessKind::Load.is_instr() as usize,
    AccessKind::Store.is_instr() as usize,
];

/// What the TLB-only loop checks a record against, by `AccessKind`: the 4 KiB frame that the
/// last reference of that kind was in, and the bound on `offset + size` (4097: the access ends
/// within the frame; 0: no frame yet, and nothing passes). Loads and stores keep a frame
/// each, on pages of their path's lane: a program's loads and stores often go to different
/// pages in turn (its stack and its heap), and one frame for both moved on every such turn
/// (a Lackey capture of `ls -lR /usr/share/doc`, 4M references: 18.9% of them moved the
/// frame of their path, 14.5% the frame of their kind).
struct FrameChecks {
    base: [u64; KINDS],
    limit: [u64; KINDS],
    /// `IS_INSTR`, beside the rest (an index off the stack pointer, where a constant
    /// table needs its address in a register).
    instr: [u64; KINDS],
    /// The index of the frame's page in its path's lane (read only where `limit` is not 0).
    page: [usize; KINDS],
}

impl FrameChecks {
    /// The first frame of each path's current page.
    fn of(paths: &[PathLane; 2]) -> FrameChecks {
        let mut f = FrameChecks {
            base: [0; KINDS],
            limit: [0; KINDS],
            instr: IS_INSTR,
            page: [0; KINDS],
        };
        for (path, l) in paths.iter().enumerate() {
            if l.len > 0 {
                let page = &l.pages[l.cur];
                f.set(path, page.page << page.shift, l.cur);
            }
        }
        f
    }

    /// Every kind of `path` to `frame`, on lane page `page`.
    fn set(&mut self, path: usize, frame: u64, page: usize) {
        for (k, &of) in PATH_OF.iter().enumerate() {
            if of == path {
                self.set_kind(k, frame, page);
            }
        }
    }

    /// Kind `k` to `frame`, on lane page `page`.
    #[inline(always)]
    fn set_kind(&mut self, k: usize, frame: u64, page: usize) {
        self.base[k] = frame;
        self.limit[k] = 4097;
        self.page[k] = page;
    }
}

/// The last touch of a page in a run (its position in the run + 1) and its entry, for the
/// settle's replay: of a page let go of while the run went on, or of a lane page at the settle.
///
/// A path's let-go touches come in increasing order, and before the touches of the pages it
/// still holds: a path lets go of a touched page only when all of its pages are touched, and
/// of the one touched longest ago, so every page it keeps or takes later is touched after it.
/// The settle replays each path's list as it stands (merging the two when the paths share
/// their first level), without a sort.
#[derive(Clone, Copy)]
pub(super) struct LaneTouch {
    touch: u32,
    entry: FoundEntry,
}

/// What the per-record loop reads of a page of the first TLB level the lane has found (and,
/// while it runs, nothing evicts).
#[derive(Clone, Copy)]
struct LanePage {
    /// `va >> shift` of the page.
    page: u64,
    shift: u32,
    /// The physical address of `va` on the page is `pa_base + (va & offset_mask)`.
    pa_base: u64,
    offset_mask: u64,
}

/// No page: no `va >> shift` (shift ≥ 12) equals it.
const NO_PAGE: LanePage = LanePage {
    page: u64::MAX,
    shift: 12,
    pa_base: 0,
    offset_mask: 0,
};

const NO_ENTRY: FoundEntry = FoundEntry {
    slot: 0,
    key: 0,
    va: 0,
    size: PageSize::Size4K,
    pfn: Pfn(0),
};

/// One path (data or instruction) of the lane's thread.
#[derive(Clone, Copy)]
struct PathLane {
    /// The path has a first TLB level (and, with data accesses, a first cache level).
    usable: bool,
    /// Per lane page: what the loop reads, its entry in the level, and the position + 1 in the
    /// current run of its last reference (0 = not touched; for the path's current page,
    /// `cur_last` holds it until the path moves on).
    pages: [LanePage; LANE_PAGES],
    entries: [FoundEntry; LANE_PAGES],
    last_touch: [u32; LANE_PAGES],
    len: usize,
    /// `pages[i].page` for i < len, `u64::MAX` (no page) beyond, and the one shift of all the
    /// pages when they share it (the common case: one page size): finding a page is then
    /// one shift and `LANE_PAGES` compares without a loop-carried length (`find`).
    page_numbers: [u64; LANE_PAGES],
    /// The low 32 bits of `page_numbers` for i < len (beyond, anything): the search compares
    /// these, four to an SSE register where the 64-bit words take two, and checks the word it
    /// finds against `page_numbers` (two pages agree in them only 2^32 pages apart, and a key
    /// beyond `len` is stale; then the full search decides).
    page_keys: [u32; LANE_PAGES],
    uniform_shift: Option<u32>,
    /// The page of the previous reference on this path (`pages[cur]`, copied: the check the
    /// loop makes first) and the position + 1 of that reference.
    cur: usize,
    cur_page: LanePage,
    cur_last: u32,
    /// The first TLB level: its instance and stats index.
    tlb: usize,
    tlb_stat: usize,
    /// The first TLB level's hit latency.
    tlb_latency: u64,
    /// With data accesses: the first cache level's memo line and log2 of its line size.
    line: u64,
    line_shift: u32,
    /// The first cache level is virtually indexed and tagged: it sees `va`, not the pa.
    virtual_cache: bool,
    /// With data accesses: (cache instance, its stats index) of the first cache level.
    cache: (usize, usize),
    /// The cycles `System::access` charges a first-level hit whose line, with data accesses,
    /// is the cache's memo.
    cycles: u64,
}

const NO_PATH: PathLane = PathLane {
    usable: false,
    pages: [NO_PAGE; LANE_PAGES],
    entries: [NO_ENTRY; LANE_PAGES],
    last_touch: [0; LANE_PAGES],
    len: 0,
    page_numbers: [u64::MAX; LANE_PAGES],
    page_keys: [u32::MAX; LANE_PAGES],
    uniform_shift: None,
    cur: 0,
    cur_page: NO_PAGE,
    cur_last: 0,
    tlb: 0,
    tlb_stat: 0,
    tlb_latency: 0,
    line: u64::MAX,
    line_shift: 0,
    virtual_cache: false,
    cache: (0, 0),
    cycles: 0,
};

impl PathLane {
    /// `NO_PATH`, written field by field except for what no one reads before it is written
    /// again (the pages, entries and touches beyond `len`; every touch is 0 between runs).
    fn clear(&mut self) {
        self.usable = false;
        self.len = 0;
        self.page_numbers = [u64::MAX; LANE_PAGES];
        // `page_keys` stay: beyond `len` a key that matches finds a word of `page_numbers`
        // that does not, and `find` then searches those.
        self.uniform_shift = None;
        self.cur = 0;
        self.cur_page = NO_PAGE;
        self.cur_last = 0;
        self.tlb = 0;
        self.tlb_stat = 0;
        self.tlb_latency = 0;
        self.line = u64::MAX;
        self.line_shift = 0;
        self.virtual_cache = false;
        self.cache = (0, 0);
        self.cycles = 0;
        debug_assert!(self.last_touch.iter().all(|&t| t == 0));
    }

    /// Makes `pages[i]` the current page, recording the last touch of the one it replaces.
    #[inline(always)]
    fn switch_to(&mut self, i: usize) {
        self.commit();
        self.cur = i;
        self.cur_page = self.pages[i];
    }

    /// The index of the lane page holding `va`. Without a branch per page when the pages share
    /// their size: which page a program switches to next is close to random, and a chain of
    /// compares mispredicted on most switches (measured with the path-indexed page check of
    /// `run_with`: a Lackey capture of `ls` 23% faster TLB-only, 11% in the full model, at
    /// about the same instructions per reference).
    #[inline(always)]
    fn find(&self, va: u64) -> Option<usize> {
        match self.uniform_shift {
            Some(shift) => {
                let page = va >> shift;
                // The first key that matches is the first word that does, or a word that
                // does not (then no earlier word does): the full search settles that case.
                match crate::simd::position_of_16_u32(&self.page_keys, page as u32) {
                    Some(i) if self.page_numbers[i] == page => Some(i),
                    Some(_) => crate::simd::position_of_16(&self.page_numbers, page),
                    None => None,
                }
            }
            None => (0..self.len).find(|&i| va >> self.pages[i].shift == self.pages[i].page),
        }
    }

    /// Takes the TLB-only loop's last touch of kind `k` (`lasts[k]`, a position + 1, or 0:
    /// none since the kind's frame last moved) into the last touch of the frame's lane page
    /// (`frames.page[k]`), and clears it. The page may hold a later touch of the path's other
    /// kind, hence the maximum. (The TLB-only loop leaves `cur_last` at 0.)
    #[inline(always)]
    fn fold_last(&mut self, lasts: &mut [usize; KINDS], k: usize, frames: &FrameChecks) {
        // Below 2^32: `run` caps runs.
        let touch = std::mem::take(&mut lasts[k]) as u32;
        let last = &mut self.last_touch[frames.page[k] % LANE_PAGES];
        *last = (*last).max(touch);
    }

    /// `fold_last` for every kind of `path`.
    fn fold_lasts(&mut self, lasts: &mut [usize; KINDS], path: usize, frames: &FrameChecks) {
        for (k, &of) in PATH_OF.iter().enumerate() {
            if of == path {
                self.fold_last(lasts, k, frames);
            }
        }
    }

    /// Records the current page's last touch (before a switch, a let-go or a settle).
    #[inline(always)]
    fn commit(&mut self) {
        if self.cur_last != 0 {
            self.last_touch[self.cur % LANE_PAGES] = self.cur_last;
            self.cur_last = 0;
        }
    }

    /// Adds the page `entry` of the first TLB level holds, for `va`, and makes it current: in
    /// a free place, or in place of the page touched longest ago, whose last touch, if it has
    /// one in this run, goes to `spilled` (which has room for it).
    #[inline(never)]
    fn add(&mut self, entry: FoundEntry, va: u64, spilled: &mut Vec<LaneTouch>) {
        let i = if self.len < LANE_PAGES {
            self.len += 1;
            self.len - 1
        } else {
            // The current page's touches so far count in the choice.
            self.commit();
            let oldest = (0..LANE_PAGES)
                .min_by_key(|&i| self.last_touch[i])
                .expect("LANE_PAGES > 0");
            let touch = self.last_touch[oldest];
            if touch != 0 {
                debug_assert!(spilled.len() < SPILL_ROOM, "the run settles first");
                debug_assert!(spilled.last().is_none_or(|t| t.touch < touch));
                spilled.push(LaneTouch {
                    touch,
                    entry: self.entries[oldest],
                });
            }
            oldest
        };
        let shift = entry.size.shift();
        self.pages[i] = LanePage {
            page: va >> shift,
            shift,
            pa_base: entry.pfn.0 << 12,
            offset_mask: (1u64 << shift) - 1,
        };
        self.entries[i] = entry;
        self.last_touch[i] = 0;
        self.page_numbers[i] = va >> shift;
        self.page_keys[i] = (va >> shift) as u32;
        self.uniform_shift = match self.uniform_shift {
            _ if self.len == 1 => Some(shift),
            Some(s) if s == shift => Some(s),
            _ => None,
        };
        self.switch_to(i);
    }

    /// Appends the last touches of the pages touched in this run to `touches` (after the
    /// let-go ones, all earlier), in increasing order, and clears them.
    fn collect_touches(&mut self, touches: &mut Vec<LaneTouch>) {
        self.commit();
        let from = touches.len();
        for i in 0..self.len {
            let touch = std::mem::take(&mut self.last_touch[i]);
            if touch != 0 {
                touches.push(LaneTouch {
                    touch,
                    entry: self.entries[i],
                });
            }
        }
        // At most LANE_PAGES: the small-slice sort (insertion) is what it takes.
        touches[from..].sort_unstable_by_key(|t| t.touch);
        debug_assert!(touches.windows(2).all(|w| w[0].touch < w[1].touch));
    }
}

/// The lane of one software thread running on its hardware thread, by path
/// (`[data, instruction]`, as `Cpu::first_tlb`).
pub(super) struct Lane {
    pub(super) thread: ThreadId,
    pub(super) cpu: usize,
    core: usize,
    req: Requester,
    data: bool,
    overlap: bool,
    paths: [PathLane; 2],
    /// References of the last `run` on a page new to the lane, each found with `Tlb::peek`
    /// (and once the path's pages are all taken, a let-go): the run's costly step, by which
    /// `System::run_direct` judges whether the lane pays.
    pub(super) new_pages: usize,
}

/// What a run of the lane adds up, by path (`[data, instruction]`).
#[derive(Default)]
struct Tally {
    /// References (first-level TLB hits).
    refs: [u64; 2],
    /// Of those, with data accesses: the ones that hit the first cache level (its memo line,
    /// or a line `Cache::access_if_present` found), counted and charged at the settle.
    line_hits: [u64; 2],
    /// Cycles of the references whose data went past the line memo.
    other_cycles: u64,
    /// A store hit the data path's memo line since it was last marked dirty.
    memo_line_written: bool,
}

impl Lane {
    /// Makes `slot` the lane of `thread`, with no pages, or None when none of its references can
    /// take it (unknown thread, not the one running on its hardware thread, no first TLB level
    /// on either path).
    pub(super) fn rebuild(slot: &mut Option<Lane>, sys: &System, thread: ThreadId) {
        let Some(st) = Lane::running(sys, thread) else {
            *slot = None;
            return;
        };
        // Made in its place, once: the lane's pages are a few KiB, which a lane made apart
        // copied a few times over on its way into `slot` (`run_direct` rebuilds the lane
        // after every record that took the general path).
        let lane = slot.get_or_insert_with(|| Lane {
            thread,
            cpu: st.cpu,
            core: 0,
            req: sys.requester(st),
            data: false,
            overlap: false,
            paths: [NO_PATH; 2],
            new_pages: 0,
        });
        if !lane.fill(sys, thread, st) {
            *slot = None;
        }
    }

    /// The state of `thread` when it is known and running on its hardware thread.
    fn running(sys: &System, thread: ThreadId) -> Option<ThreadState> {
        let st = match sys.threads.get(thread.0 as usize) {
            Some(Some(s)) => *s,
            _ => return None,
        };
        (sys.current[st.cpu] == Some(thread)).then_some(st)
    }

    /// Makes this the new lane of `thread` (state `st`), with no pages; false when no path
    /// can take its references (no first TLB level on either).
    fn fill(&mut self, sys: &System, thread: ThreadId, st: ThreadState) -> bool {
        let cpu = &sys.cpus[st.cpu];
        let core = &sys.cores[cpu.core];
        let data = sys.options.data_accesses;
        let overlap = sys.config.timing.model == TimingModel::Overlap;
        for (p, l) in self.paths.iter_mut().enumerate() {
            l.clear();
            let Some((t, tlb_stat)) = cpu.first_tlb[p] else {
                continue;
            };
            let tlb_latency = sys.tlbs[t].config.latency;
            if data {
                // A path without caches goes to memory: rare enough to leave to `access`.
                let path = if p == 1 { &core.icache } else { &core.dcache };
                let Some(r) = path.first() else {
                    continue;
                };
                let cache = &sys.caches[r.cache];
                let (line, line_shift) = cache.memo_line();
                l.line = line.unwrap_or(u64::MAX);
                l.line_shift = line_shift;
                l.virtual_cache = cache.is_virtual();
                l.cache = (r.cache, r.stat);
                let lat = cache.config.latency;
                l.cycles = if overlap {
                    tlb_latency.max(lat)
                } else {
                    tlb_latency + lat
                };
            } else {
                l.cycles = tlb_latency;
            }
            l.usable = true;
            l.tlb = t;
            l.tlb_stat = tlb_stat;
            l.tlb_latency = tlb_latency;
        }
        if self.paths.iter().all(|l| !l.usable) {
            return false;
        }
        self.thread = thread;
        self.cpu = st.cpu;
        self.core = cpu.core;
        self.req = sys.requester(st);
        self.data = data;
        self.overlap = overlap;
        self.new_pages = 0;
        true
    }

    /// Reads the first cache level's memo line of each path again (after a data access that
    /// may have moved it; the two paths may share the level).
    fn reload_lines(&mut self, sys: &System) {
        for l in self.paths.iter_mut() {
            if l.usable {
                l.line = sys.caches[l.cache.0].memo_line().0.unwrap_or(u64::MAX);
            }
        }
    }

    /// The lane stays after its thread's access through the general path hit both paths' first
    /// TLB levels (`System::run_direct`): its pages are still there, and only the cache line
    /// memos it copied may have moved.
    pub(super) fn keep_after_general_access(&mut self, sys: &System) {
        if self.data {
            self.reload_lines(sys);
        }
    }

    /// Simulates the records from the start of `records` that are references of the lane's
    /// thread hitting their path's first TLB level; returns how many it took (stopping at the
    /// first other record). `new_pages` then counts those on a page new to the lane.
    // Kept out of `run_direct`: inlined there, its loop got worse code (measured: +15%
    // instructions per reference on a Lackey capture of `ls`, full model).
    #[inline(never)]
    pub(super) fn run(&mut self, sys: &mut System, records: &[Record]) -> usize {
        // Touches are ordered by position in the run, a u32.
        let records = &records[..records.len().min(u32::MAX as usize - 1)];
        // Four copies of the loop: TLB-only studies skip the data checks altogether, and runs
        // from records in the host's caches skip the records' hints (`PREFETCH`). A runtime
        // test of `System::records_in_memory` in the one loop cost runs from a trace file 5-10%
        // (sequential and Lackey gzip, TLB-only, from 16K-record batches: 465 → 437-448 and
        // 439 → 390-408 M refs/s), where the hints win runs over records in memory 1.3-2x.
        //
        // Each copy is a function of its own (below): two loops in one function share its
        // register allocation, so that a change to either moved the other's (per-kind frames
        // in the TLB-only loop, inlined beside the full model's, cost that loop 2.0% more
        // instructions on a Lackey capture of `ls`); and the copies with the hints, inlined
        // beside the others, ran sequential TLB-only from memory at 214 against 278 M refs/s.
        match (sys.records_in_memory, self.data) {
            (true, true) => self.run_with_in_memory(sys, records),
            (true, false) => self.run_tlb_only_in_memory(sys, records),
            (false, true) => self.run_with_from_batch(sys, records),
            (false, false) => self.run_tlb_only_from_batch(sys, records),
        }
    }

    // The copies of the loop (`run`): with data accesses or TLB-only, over records in memory
    // (with the records' hints) or from a batch in the host's caches.
    #[inline(never)]
    fn run_with_in_memory(&mut self, sys: &mut System, records: &[Record]) -> usize {
        self.run_with::<true>(sys, records)
    }

    #[inline(never)]
    fn run_tlb_only_in_memory(&mut self, sys: &mut System, records: &[Record]) -> usize {
        self.run_tlb_only::<true>(sys, records)
    }

    #[inline(never)]
    fn run_with_from_batch(&mut self, sys: &mut System, records: &[Record]) -> usize {
        self.run_with::<false>(sys, records)
    }

    #[inline(never)]
    fn run_tlb_only_from_batch(&mut self, sys: &mut System, records: &[Record]) -> usize {
        self.run_tlb_only::<false>(sys, records)
    }

    /// `run` without data accesses: a record is taken while it lies, whole, within the 4 KiB
    /// frame its kind last referenced (a few compares, no replacement state); anything else
    /// goes to `tlb_only_step`, which moves the kind to the record's page the way `run_with`
    /// moves the path, or ends the run.
    ///
    /// The loop indexes its per-path state by the record's `AccessKind` (the data path's
    /// state twice, for loads and stores), not by its path: that is one byte read where the
    /// path costs a compare and a flag, and the state is a few words on the stack that a
    /// switch rewrites. Callgrind, zen3, a Lackey capture of `ls -lR /usr/share/doc` (4M
    /// references): 30 instructions for a record on its current page in `run_with`'s copy,
    /// the whole run 53.8 a reference; see docs/lab/engine-performance.md for after.
    #[inline(always)]
    fn run_tlb_only<const PREFETCH: bool>(
        &mut self,
        sys: &mut System,
        records: &[Record],
    ) -> usize {
        let mut frames = FrameChecks::of(&self.paths);
        // By kind, the position + 1 of the last record that referenced the frame (0: none
        // since the path's last move). A usize: the loop's own counter, stored as it is.
        let mut lasts = [0usize; KINDS];
        let mut taken = records.len();
        self.new_pages = 0;
        let thread = self.thread;
        let mut instr_refs = 0u64;
        for (n, r) in records.iter().enumerate() {
            if PREFETCH {
                hint_record(records, n);
            }
            let Record::Access(a) = r else {
                taken = n;
                break;
            };
            if a.thread != thread {
                taken = n;
                break;
            }
            let k = a.kind as usize;
            // Within the frame and not past its end: `offset < 4096` and `offset + size` below
            // the frame's `limit` (4097, or 0 while the path has no page: no record passes).
            // Unsigned: an address below the frame wraps to a large offset.
            let offset = a.vaddr.0.wrapping_sub(frames.base[k]);
            if (offset >= 4096 || offset + a.size as u64 >= frames.limit[k])
                && !self.tlb_only_step(sys, a, &mut frames, &mut lasts)
            {
                taken = n;
                break;
            }
            lasts[k] = n + 1;
            instr_refs += frames.instr[k];
        }
        for path in 0..2 {
            self.paths[path].fold_lasts(&mut lasts, path, &frames);
        }
        let t = Tally {
            refs: [taken as u64 - instr_refs, instr_refs],
            ..Tally::default()
        };
        self.settle(sys, &t);
        taken
    }

    /// A record of the lane's thread that left its kind's 4 KiB frame (or crosses its end): the
    /// kind moves to the frame of the record's page, as `run_with`'s loop moves the path (a
    /// lane page, or a page new to the lane that the first level holds, which every kind of
    /// the path then moves to). False when
    /// the run ends before the record: it crosses a 4 KiB boundary (two references, for
    /// `System::access`), its page is not in the first level, or let-go touches have no room.
    /// (The TLB-only lane keeps `cur` and leaves `cur_page`, which only `run_with` reads, as
    /// it was.)
    #[inline(always)]
    fn tlb_only_step(
        &mut self,
        sys: &mut System,
        a: &tlblab_trace::Access,
        frames: &mut FrameChecks,
        lasts: &mut [usize; KINDS],
    ) -> bool {
        let va = a.vaddr.0;
        if (va & 0xfff) + a.size as u64 > 4096 {
            return false;
        }
        let k = a.kind as usize;
        let path = PATH_OF[k];
        let l = &mut self.paths[path];
        // (The frame's own page is among the lane's: found again, the kind stays on it.)
        match l.find(va) {
            Some(i) => {
                // The touches of the frame it leaves count for that frame's page.
                l.fold_last(lasts, k, frames);
                l.cur = i;
                frames.set_kind(k, va & !0xfff, i);
                true
            }
            None => {
                // A let-go picks the page touched longest ago: every kind's touches first.
                l.fold_lasts(lasts, path, frames);
                self.tlb_only_new_page(sys, path, va, frames)
            }
        }
    }

    /// `tlb_only_step` for a page new to the lane: a first-level hit (the page joins the
    /// lane), or the run ends. Apart, so that the step (most calls) saves no registers for
    /// the calls made here.
    #[inline(never)]
    fn tlb_only_new_page(
        &mut self,
        sys: &mut System,
        path: usize,
        va: u64,
        frames: &mut FrameChecks,
    ) -> bool {
        let l = &mut self.paths[path];
        let Some(entry) = (l.usable)
            .then(|| sys.tlbs[l.tlb].peek(VirtAddr(va), self.req))
            .flatten()
        else {
            return false;
        };
        if sys.lane_touches[path].len() == SPILL_ROOM {
            // As in `run_with`: the run ends and settles; the next goes on from here.
            return false;
        }
        l.add(entry, va, &mut sys.lane_touches[path]);
        self.new_pages += 1;
        // Every kind of the path to the new page: the page it took the place of may have
        // been another kind's.
        frames.set(path, va & !0xfff, l.cur);
        true
    }

    #[inline(always)]
    fn run_with<const PREFETCH: bool>(&mut self, sys: &mut System, records: &[Record]) -> usize {
        let mut t = Tally::default();
        let mut taken = records.len();
        self.new_pages = 0;
        for (n, r) in records.iter().enumerate() {
            if PREFETCH {
                hint_record(records, n);
            }
            let Record::Access(a) = r else {
                taken = n;
                break;
            };
            let va = a.vaddr.0;
            // An access crossing a 4 KiB boundary is two references (`System::access`).
            // (A size of 0 or 1 never crosses.)
            if a.thread != self.thread || (va & 0xfff) + a.size as u64 > 4096 {
                taken = n;
                break;
            }
            let path = a.kind.is_instr() as usize;
            // The path's current page, indexed by the path rather than a branch on it: which
            // path a record takes follows the program's mix of fetches and data references,
            // which a branch mispredicts often. (Keeping the data path's page in registers
            // behind such a branch took 1.5 more instructions per reference of a Lackey
            // capture of `ls`, TLB-only, and was no faster.)
            let cur = &self.paths[path].cur_page;
            let on_page = va >> cur.shift == cur.page;
            if !on_page {
                let l = &mut self.paths[path];
                if let Some(i) = l.find(va) {
                    l.switch_to(i);
                } else {
                    // A page new to the lane: a first-level hit, or the run ends here.
                    let Some(entry) = (l.usable)
                        .then(|| sys.tlbs[l.tlb].peek(VirtAddr(va), self.req))
                        .flatten()
                    else {
                        taken = n;
                        break;
                    };
                    if sys.lane_touches[path].len() == SPILL_ROOM {
                        // The page may take the place of a touched one, and its touch needs
                        // room: the run ends here, and settles; the next run (with the same
                        // lane: nothing has changed it) goes on from this record.
                        taken = n;
                        break;
                    }
                    self.paths[path].add(entry, va, &mut sys.lane_touches[path]);
                    // (Counted in the lane, not in a local: the loop has no register to spare
                    // for a count it rarely changes.)
                    self.new_pages += 1;
                }
            }
            // Record positions + 1 order the touches (`run` caps runs below 2^32 records).
            // Stored in the path, one store per record, not kept in two loop-carried
            // registers (two cmovs a record): the full model's loop has no registers to spare
            // for them, and the allocator spilled one whenever the crate's code moved (at
            // codegen-units = 1, and at 4 after the fass twin's merge, which changed no line
            // of this loop), a load and a store more per record. Callgrind, zen3 unless said:
            // sa1100 `lat_ctx:procs=8` full 753.0 -> 718.5 M instructions (738.2 before the
            // spill), Lackey `ls` (4M references) TLB-only 56.5 -> 52.1 per reference, full
            // 109.1 -> 103.4.
            self.paths[path].cur_last = n as u32 + 1;
            t.refs[path] += 1;
            let l = &self.paths[path];
            let page = &l.cur_page;
            let store = a.kind == AccessKind::Store;
            let addr = if l.virtual_cache {
                va
            } else {
                page.pa_base + (va & page.offset_mask)
            };
            if addr >> l.line_shift == l.line {
                t.line_hits[path] += 1;
                t.memo_line_written |= store;
                continue;
            }
            // Past the line memo: the data access as `data_access` makes it, now, after the
            // pending dirty mark of the memo line it is about to replace.
            if t.memo_line_written {
                sys.caches[self.paths[0].cache.0].write_memo_line();
                t.memo_line_written = false;
            }
            // Most such lines are still in the first level: a hit there is counted as a memo
            // hit is (same level, same cycles), and only the level's state is updated now.
            if sys.caches[l.cache.0].access_if_present(addr, store) {
                t.line_hits[path] += 1;
                self.reload_lines(sys);
                continue;
            }
            let core = &sys.cores[self.core];
            let caches = if path == 1 {
                &core.icache
            } else {
                &core.dcache
            };
            let cs = &mut sys.cpu_stats[self.cpu];
            let (lat, src) = System::load(
                &mut sys.caches,
                caches,
                cs,
                addr,
                store,
                sys.mem_source,
                sys.mem_latency,
            );
            cs.data_by_source[src] += 1;
            t.other_cycles += self.cycles_with(path, lat);
            self.reload_lines(sys);
        }
        self.settle(sys, &t);
        taken
    }

    /// The cycles of a reference on `path` whose data access took `lat` (as
    /// `System::settle_first_level_hit` charges them).
    #[inline]
    fn cycles_with(&self, path: usize, lat: u64) -> u64 {
        let tlb_latency = self.paths[path].tlb_latency;
        if self.overlap {
            tlb_latency.max(lat)
        } else {
            tlb_latency + lat
        }
    }

    /// Adds what `System::access` adds for the references of a run: counters and cycles, then
    /// a hit on each page touched, in the order of the last touches (the two paths may share
    /// their first level, so their touches are replayed as one sequence).
    fn settle(&mut self, sys: &mut System, t: &Tally) {
        let refs = t.refs[0] + t.refs[1];
        if refs == 0 {
            return;
        }
        let [data, instr] = &mut sys.lane_touches;
        self.paths[0].collect_touches(data);
        self.paths[1].collect_touches(instr);
        let [dl, il] = &self.paths;
        if dl.usable && il.usable && dl.tlb == il.tlb {
            // One level for both paths: their touches replayed as one sequence, by position.
            let tlb = &mut sys.tlbs[dl.tlb];
            let (mut d, mut i) = (data.iter().peekable(), instr.iter().peekable());
            while let Some(t) = match (d.peek(), i.peek()) {
                (Some(a), Some(b)) if b.touch < a.touch => i.next(),
                (Some(_), _) => d.next(),
                (None, _) => i.next(),
            } {
                tlb.hit_found(&t.entry, self.req);
            }
        } else {
            for (l, touches) in [(dl, &*data), (il, &*instr)] {
                for t in touches {
                    sys.tlbs[l.tlb].hit_found(&t.entry, self.req);
                }
            }
        }
        data.clear();
        instr.clear();
        let cs = &mut sys.cpu_stats[self.cpu];
        cs.references += refs;
        cs.instr_references += t.refs[1];
        let mut cycles = t.other_cycles;
        for (path, l) in self.paths.iter().enumerate() {
            let k = t.refs[path];
            if k == 0 {
                continue;
            }
            let s = &mut cs.tlb[l.tlb_stat];
            s.accesses += k;
            s.hits += k;
            if self.data {
                let hits = t.line_hits[path];
                let c = &mut cs.cache[l.cache.1];
                c.accesses += hits;
                c.hits += hits;
                cs.data_by_source[l.cache.1] += hits;
                cycles += hits * l.cycles;
            } else {
                cycles += k * l.cycles;
            }
        }
        if t.memo_line_written {
            sys.caches[self.paths[0].cache.0].write_memo_line();
        }
        cs.cycles += cycles;
        sys.cpus[self.cpu].clock += cycles;
        sys.references += refs;
    }
}
