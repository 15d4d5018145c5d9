//! The memo lane: how the run loop settles runs of references that change no state.
//!
//! A reference that hits the memo of its path's first TLB level (the translation of that
//! level's previous hit, `Tlb::memo_hit`) and, with data accesses on, the line memo of its
//! path's first cache level (`Cache::access`'s previous line) changes nothing but counters:
//! re-touching the most recently used entry or line changes no replacement policy's state, and
//! nothing is filled, walked or evicted. Real programs make long runs of such references (a
//! loop's instruction fetches on one page, a stack frame's loads). Since the TLB memos cannot
//! change during such a run, `Lane::build` copies them out once, `Lane::run` goes over as many
//! records in a row as qualify, a few compares each, and then adds once what `System::access`
//! would have added to the TLB counters for each of them. With data accesses on, a reference
//! whose line is not the first cache level's memo goes through the caches on the spot
//! (`System::load`, as `data_access` does) and the lane re-reads the line memos.
//!
//! Exactness: `run` accepts a record only under the conditions of `System::access`'s inline
//! case followed by `reference_memo_hit`, and mirrors their counter updates and cycles.
//! `tests/reference_parity.rs` (`run_agrees_with_access_by_access`) checks every counter
//! against `access` called record by record, on random machines and streams.

use super::{System, TimingModel};
use tlblab_trace::Record;
use tlblab_types::{AccessKind, ThreadId};

/// What one path (data or instruction) of the lane's thread hits without changing state.
#[derive(Clone, Copy)]
struct PathMemo {
    /// The first TLB level's memo page (`va >> shift`); `u64::MAX` (no page number has it)
    /// when the path has no usable memo, so nothing qualifies.
    page: u64,
    shift: u32,
    /// The physical address of `va` on the memo page is `pa_base + (va & offset_mask)`.
    pa_base: u64,
    offset_mask: u64,
    /// With data accesses: the first cache level's memo line and log2 of its line size.
    line: u64,
    line_shift: u32,
    /// The first cache level is virtually indexed and tagged: it sees `va`, not the pa.
    virtual_cache: bool,
    tlb_stat: usize,
    /// With data accesses: (cache instance, its stats index) of the first cache level.
    cache: (usize, usize),
    /// The first TLB level's hit latency.
    tlb_latency: u64,
    /// The cycles `System::access` charges each such reference (whose line, with data
    /// accesses, is the cache's memo).
    cycles: u64,
}

const NO_MEMO: PathMemo = PathMemo {
    page: u64::MAX,
    shift: 12,
    pa_base: 0,
    offset_mask: 0,
    line: u64::MAX,
    line_shift: 0,
    virtual_cache: false,
    tlb_stat: 0,
    cache: (0, 0),
    tlb_latency: 0,
    cycles: 0,
};

/// The memos of one software thread running on its hardware thread, by path
/// (`[data, instruction]`, as `Cpu::first_tlb`).
pub(super) struct Lane {
    pub(super) thread: ThreadId,
    pub(super) cpu: usize,
    core: usize,
    data: bool,
    overlap: bool,
    paths: [PathMemo; 2],
}

/// What a run of the lane adds up, by path (`[data, instruction]`).
#[derive(Default)]
struct Tally {
    /// References (first-level TLB memo hits).
    refs: [u64; 2],
    /// Of those, with data accesses: the ones whose line was the first cache level's memo.
    line_hits: [u64; 2],
    /// Cycles of the references whose data went past the line memo.
    other_cycles: u64,
    /// A store hit the data path's memo line since it was last marked dirty.
    memo_line_written: bool,
}

impl Lane {
    /// The lane of `thread`, or None when none of its references can take it (unknown thread,
    /// not the one running on its hardware thread, no memo on either path).
    pub(super) fn build(sys: &System, thread: ThreadId) -> Option<Lane> {
        let st = match sys.threads.get(thread.0 as usize) {
            Some(Some(s)) => *s,
            _ => return None,
        };
        if sys.current[st.cpu] != Some(thread) {
            return None;
        }
        let req = sys.requester(st);
        let cpu = &sys.cpus[st.cpu];
        let core = &sys.cores[cpu.core];
        let data = sys.options.data_accesses;
        let overlap = sys.config.timing.model == TimingModel::Overlap;
        let mut paths = [NO_MEMO; 2];
        for (p, memo) in paths.iter_mut().enumerate() {
            let Some((t, tlb_stat)) = cpu.first_tlb[p] else {
                continue;
            };
            let tlb = &sys.tlbs[t];
            let Some((page, shift, pfn)) = tlb.memo_page(req) else {
                continue;
            };
            let tlb_latency = tlb.config.latency;
            let mut m = PathMemo {
                page,
                shift,
                pa_base: pfn.0 << 12,
                offset_mask: (1u64 << shift) - 1,
                tlb_stat,
                tlb_latency,
                cycles: tlb_latency,
                ..NO_MEMO
            };
            if data {
                // A path without caches goes to memory: rare enough to leave to `access`.
                let path = if p == 1 { &core.icache } else { &core.dcache };
                let Some(r) = path.first() else {
                    continue;
                };
                let cache = &sys.caches[r.cache];
                let (line, line_shift) = cache.memo_line();
                m.line = line.unwrap_or(u64::MAX);
                m.line_shift = line_shift;
                m.virtual_cache = cache.is_virtual();
                m.cache = (r.cache, r.stat);
                let lat = cache.config.latency;
                m.cycles = if overlap {
                    tlb_latency.max(lat)
                } else {
                    tlb_latency + lat
                };
            }
            *memo = m;
        }
        if paths.iter().all(|m| m.page == u64::MAX) {
            return None;
        }
        Some(Lane {
            thread,
            cpu: st.cpu,
            core: cpu.core,
            data,
            overlap,
            paths,
        })
    }

    /// Reads the first cache level's memo line of each path again (after a data access that
    /// may have moved it; the two paths may share the level).
    fn reload_lines(&mut self, sys: &System) {
        for m in self.paths.iter_mut() {
            if m.page != u64::MAX {
                m.line = sys.caches[m.cache.0].memo_line().0.unwrap_or(u64::MAX);
            }
        }
    }

    /// Simulates the records from the start of `records` that are references of the lane's
    /// thread hitting their path's first-level TLB memo; returns how many it took (stopping at
    /// the first other record).
    pub(super) fn run(&mut self, sys: &mut System, records: &[Record]) -> usize {
        // Two copies of the loop: TLB-only studies skip the data checks altogether.
        if self.data {
            self.run_with::<true>(sys, records)
        } else {
            self.run_with::<false>(sys, records)
        }
    }

    #[inline(always)]
    fn run_with<const DATA: bool>(&mut self, sys: &mut System, records: &[Record]) -> usize {
        let mut t = Tally::default();
        let mut taken = records.len();
        for (n, r) in records.iter().enumerate() {
            let Record::Access(a) = r else {
                taken = n;
                break;
            };
            let va = a.vaddr.0;
            // An access crossing a 4 KiB boundary is two references (`System::access`).
            if a.thread != self.thread || (a.size > 1 && (va & 0xfff) + a.size as u64 > 4096) {
                taken = n;
                break;
            }
            let path = a.kind.is_instr() as usize;
            let p = &self.paths[path];
            if va >> p.shift != p.page {
                taken = n;
                break;
            }
            t.refs[path] += 1;
            if !DATA {
                continue;
            }
            let store = a.kind == AccessKind::Store;
            let addr = if p.virtual_cache {
                va
            } else {
                p.pa_base + (va & p.offset_mask)
            };
            if addr >> p.line_shift == p.line {
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
            let core = &sys.cores[self.core];
            let caches = if path == 1 { &core.icache } else { &core.dcache };
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

    /// Adds what `System::access` adds for the references of a run.
    fn settle(&self, sys: &mut System, t: &Tally) {
        let refs = t.refs[0] + t.refs[1];
        if refs == 0 {
            return;
        }
        let cs = &mut sys.cpu_stats[self.cpu];
        cs.references += refs;
        cs.instr_references += t.refs[1];
        let mut cycles = t.other_cycles;
        for (path, m) in self.paths.iter().enumerate() {
            let k = t.refs[path];
            if k == 0 {
                continue;
            }
            let l = &mut cs.tlb[m.tlb_stat];
            l.accesses += k;
            l.hits += k;
            if self.data {
                let hits = t.line_hits[path];
                let c = &mut cs.cache[m.cache.1];
                c.accesses += hits;
                c.hits += hits;
                cs.data_by_source[m.cache.1] += hits;
                cycles += hits * m.cycles;
            } else {
                cycles += k * m.cycles;
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
