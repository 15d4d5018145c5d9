//! The TLB-only run loop: how the run loop simulates references when page walks are off
//! (`RunOptions::walks`, DESIGN.md "TLB-only simulation").
//!
//! Without walks, caches or data accesses, a reference is only its TLB levels: look each up in
//! order, count a walk if every one missed, fill the levels above the one that hit. The
//! general path (`System::reference_full`) does that for any machine state, at the cost of
//! dispatching on it per reference: page sizes, locked entries, the memo and hint paths, the
//! statistics vectors. `TlbOnlyLane` settles those questions once, when it is built for a
//! thread, and then runs that thread's references with `Tlb::fast_lookup`/`Tlb::fast_fill`
//! and counters held in a local tally, settled into the statistics at the end of the run.
//!
//! The run loop (`System::run_direct`) still offers every reference to the memo lane first
//! (lane.rs), which settles runs of first-level hits in bulk; this lane takes what that one does
//! not and hands back after `HAND_BACK` first-level hits in a row.
//!
//! When it applies (`TlbOnlyLane::build`): the thread runs on its hardware thread, its address
//! space maps everything with one page size (no regions of another size or shared objects),
//! and every TLB level of its paths is `Tlb::fast_ready` for that size (no locked entries, no
//! entries of other sizes, at most 64 ways). The lane stops at the first record it cannot take
//! (an event, another thread, an access crossing a page, an address the format cannot
//! translate), which then takes the general path; the run loop builds the lane again after it.
//!
//! Exactness: the lane makes the lookups, fills and evictions `reference_full` makes, in the
//! same order, and the same counter and cycle updates (`settle`). `tests/reference_parity.rs`
//! checks runs with TLB-only options against the naive reference model and against `access`
//! called record by record.

use super::System;
use crate::tlb::{pack, Payload, Requester, Tlb};
use crate::tlb::{SHAPE_ANY, SHAPE_FULLY_ASSOC, SHAPE_SET_ASSOC};
use tlblab_trace::Record;
use tlblab_types::{Domain, PageSize, Pfn, ThreadId};

/// TLB levels per path the lane handles (every built-in machine has at most two).
const MAX_LEVELS: usize = 4;

/// After this many references in a row settled by their first TLB level, `run` returns so the
/// memo lane can take the run (measured on Lackey captures of `gzip` and `ls`, where the memo
/// lane settles first-level hits in about half the instructions).
const HAND_BACK: u32 = 32;

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
}

/// What a run adds up, by path (`[data, instruction]`) and level.
#[derive(Default)]
struct Tally {
    /// References by the level that hit; index `levels`: none did (a walk). The accesses of a
    /// level are the references that reached it: those settled there or further down.
    settled_at: [[u64; MAX_LEVELS + 1]; 2],
    evictions: [[u64; MAX_LEVELS]; 2],
}

pub(super) struct TlbOnlyLane {
    pub(super) thread: ThreadId,
    pub(super) cpu: usize,
    req: Requester,
    /// The one page size of the thread's address space, and its shift and index.
    size: PageSize,
    shift: u32,
    size_index: usize,
    domain: Domain,
    /// First address the page-table format cannot translate (the general path reports it).
    va_limit: u64,
    walker_latency: u64,
    paths: [FastPath; 2],
    /// Both paths' first level is one TLB instance (a unified first level).
    shared_first: bool,
    /// The shapes (`Tlb::fast_shape`) of the data path's two levels, when it has two.
    data_shapes: Option<(u8, u8)>,
}

impl TlbOnlyLane {
    /// The lane of `thread`, or None when the general path must take its next reference
    /// (see the module comment for the conditions).
    pub(super) fn build(sys: &System, thread: ThreadId) -> Option<TlbOnlyLane> {
        debug_assert!(!sys.options.walks && !sys.options.caches && !sys.options.data_accesses);
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
        let core = &sys.cores[sys.cpus[st.cpu].core];
        let mut paths = [FastPath::default(); 2];
        for (path, levels) in paths.iter_mut().zip([&core.dtlb, &core.itlb]) {
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
        }
        Some(TlbOnlyLane {
            thread,
            cpu: st.cpu,
            req: sys.requester(st),
            size,
            shift: size.shift(),
            size_index: size.index(),
            domain: space.domain,
            va_limit: sys.va_limit,
            walker_latency: sys.config.walker.latency,
            shared_first: paths[0].usable && paths[1].usable && paths[0].tlb[0] == paths[1].tlb[0],
            data_shapes: (paths[0].levels == 2 && paths[0].tlb[0] != paths[0].tlb[1]).then(|| {
                let shape = |i: usize| sys.tlbs[paths[0].tlb[i]].fast_shape(size);
                (shape(0), shape(1))
            }),
            paths,
        })
    }

    /// Simulates the records from the start of `records` that the lane can take; returns how
    /// many it took (stopping at the first other record).
    pub(super) fn run(&self, sys: &mut System, records: &[Record]) -> usize {
        // One copy of the loop per shape pair of a two-level data path (tlb/fast.rs).
        const FA: u8 = SHAPE_FULLY_ASSOC;
        const SA: u8 = SHAPE_SET_ASSOC;
        const ANY: u8 = SHAPE_ANY;
        match self.data_shapes {
            None => self.run_with::<false, ANY, ANY>(sys, records),
            Some((FA, SA)) => self.run_with::<true, FA, SA>(sys, records),
            Some((FA, FA)) => self.run_with::<true, FA, FA>(sys, records),
            Some((FA, ANY)) => self.run_with::<true, FA, ANY>(sys, records),
            Some((SA, SA)) => self.run_with::<true, SA, SA>(sys, records),
            Some((SA, FA)) => self.run_with::<true, SA, FA>(sys, records),
            Some((SA, ANY)) => self.run_with::<true, SA, ANY>(sys, records),
            Some((ANY, FA)) => self.run_with::<true, ANY, FA>(sys, records),
            Some((ANY, SA)) => self.run_with::<true, ANY, SA>(sys, records),
            Some(_) => self.run_with::<true, ANY, ANY>(sys, records),
        }
    }

    /// `run` with the data path's two levels of shapes `S0` and `S1` (when `TWO`).
    #[inline(always)]
    fn run_with<const TWO: bool, const S0: u8, const S1: u8>(
        &self,
        sys: &mut System,
        records: &[Record],
    ) -> usize {
        let mut t = Tally::default();
        let mut taken = records.len();
        // Per path: the key of its previous reference in this run. That reference left its
        // first level's memo on that key (a hit keeps or sets it, a fill sets it), so the same
        // key again is a memo hit, which changes no state: counted, nothing else. A reference on
        // the other path moves the memo of a shared first level.
        let mut last_key = [u64::MAX; 2];
        let mut memo_hits = [0u64; 2];
        // Consecutive references settled by the first level: at HAND_BACK, the memo lane
        // (lane.rs), which settles such runs in bulk, gets its turn.
        let mut first_level_run = 0u32;
        for (n, r) in records.iter().enumerate() {
            let Record::Access(a) = r else {
                taken = n;
                break;
            };
            let va = a.vaddr.0;
            // An access crossing a 4 KiB boundary is two references (`System::access`).
            let crosses = a.size > 1 && (va & 0xfff) + a.size as u64 > 4096;
            let p = a.kind.is_instr() as usize;
            let path = &self.paths[p];
            if a.thread != self.thread || crosses || va >= self.va_limit || !path.usable {
                taken = n;
                break;
            }
            let vpn = va >> self.shift;
            let key = pack(vpn, self.size);
            let first_level = if key == last_key[p] {
                memo_hits[p] += 1;
                true
            } else {
                last_key[p] = key;
                if self.shared_first {
                    last_key[1 - p] = u64::MAX;
                }
                if p == 0 && TWO {
                    self.translate_two::<S0, S1>(&mut sys.tlbs, &mut t, vpn, key)
                } else if p == 0 {
                    self.translate::<0>(&mut sys.tlbs, &mut t, vpn, key)
                } else {
                    self.translate::<1>(&mut sys.tlbs, &mut t, vpn, key)
                }
            };
            first_level_run = if first_level { first_level_run + 1 } else { 0 };
            if first_level_run == HAND_BACK {
                taken = n + 1;
                break;
            }
        }
        for p in 0..2 {
            t.settled_at[p][0] += memo_hits[p];
        }
        self.settle(sys, &t);
        taken
    }

    /// One reference of path `P` past the memo: look the levels up in order, fill the ones
    /// above the level that hit (all of them after a miss in every level, with the identity
    /// frame: `System::translate_without_walk`).
    /// Returns whether the first level settled it.
    #[inline(always)]
    fn translate<const P: usize>(
        &self,
        tlbs: &mut [Tlb],
        t: &mut Tally,
        vpn: u64,
        key: u64,
    ) -> bool {
        let path = &self.paths[P];
        let req = self.req;
        let mut hit = path.levels;
        let mut payload = Payload::filled(Pfn(vpn << (self.shift - 12)), self.domain, req);
        for i in 0..path.levels {
            let tlb = &mut tlbs[path.tlb[i]];
            if let Some(slot) = tlb.fast_lookup(vpn, key, req) {
                hit = i;
                let found = tlb.payload_at(slot);
                payload = Payload::filled(found.pfn, found.domain, req);
                break;
            }
        }
        t.settled_at[P][hit] += 1;
        for i in 0..hit {
            let evicted = tlbs[path.tlb[i]].fast_fill(vpn, key, self.size_index, payload, req);
            t.evictions[P][i] += evicted as u64;
        }
        hit == 0
    }

    /// `translate::<0>` for a data path of two levels of shapes `S0` and `S1`.
    #[inline(always)]
    fn translate_two<const S0: u8, const S1: u8>(
        &self,
        tlbs: &mut [Tlb],
        t: &mut Tally,
        vpn: u64,
        key: u64,
    ) -> bool {
        let path = &self.paths[0];
        let req = self.req;
        let (first, second) = two_mut(tlbs, path.tlb[0], path.tlb[1]);
        if first.lookup_shaped::<S0>(vpn, key, req).is_some() {
            t.settled_at[0][0] += 1;
            return true;
        }
        let (payload, settled) = match second.lookup_shaped::<S1>(vpn, key, req) {
            Some(slot) => {
                let found = second.payload_at(slot);
                (Payload::filled(found.pfn, found.domain, req), 1)
            }
            None => {
                let frame = Pfn(vpn << (self.shift - 12));
                (Payload::filled(frame, self.domain, req), 2)
            }
        };
        t.settled_at[0][settled] += 1;
        let evicted = first.fill_shaped::<S0>(vpn, key, self.size_index, payload, req);
        t.evictions[0][0] += evicted as u64;
        if settled == 2 {
            let evicted = second.fill_shaped::<S1>(vpn, key, self.size_index, payload, req);
            t.evictions[0][1] += evicted as u64;
        }
        false
    }

    /// Adds the counters and cycles `System::reference_full` adds for the references of a run.
    fn settle(&self, sys: &mut System, t: &Tally) {
        let cs = &mut sys.cpu_stats[self.cpu];
        let mut refs = 0;
        let mut cycles = 0;
        for (p, path) in self.paths.iter().enumerate() {
            let settled = &t.settled_at[p];
            let path_refs: u64 = settled[..=path.levels].iter().sum();
            refs += path_refs;
            if p == 1 {
                cs.instr_references += path_refs;
            }
            let mut reached = path_refs;
            for i in 0..path.levels {
                let s = &mut cs.tlb[path.stat[i]];
                s.accesses += reached;
                s.hits += settled[i];
                s.misses += reached - settled[i];
                s.evictions += t.evictions[p][i];
                cycles += reached * path.latency[i];
                reached -= settled[i];
            }
            let walks = settled[path.levels];
            cs.walks += walks;
            cs.walk_cycles += walks * self.walker_latency;
            cycles += walks * self.walker_latency;
        }
        cs.references += refs;
        cs.cycles += cycles;
        sys.cpus[self.cpu].clock += cycles;
        sys.references += refs;
    }
}

/// Mutable references to two distinct elements.
#[inline(always)]
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
