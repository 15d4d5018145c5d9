//! The memo lane: how the run loop settles runs of references that change no state.
//!
//! A reference that hits the memo of its path's first TLB level (the translation of that
//! level's previous hit, `Tlb::memo_hit`) and, with data accesses on, the line memo of its
//! path's first cache level (`Cache::access`'s previous line) changes nothing but counters:
//! re-touching the most recently used entry or line changes no replacement policy's state, and
//! nothing is filled, walked or evicted. Real programs make long runs of such references (a
//! loop's instruction fetches on one line, a stack frame's loads). Since the memos cannot change
//! during such a run, `Lane::build` copies them out once, `Lane::scan` counts how many records
//! in a row qualify (a few compares each, no stores but a counter), and `Lane::apply` then adds
//! exactly what `System::access` would have added for each of them.
//!
//! Exactness: `scan` accepts a record only under the conditions of `System::access`'s inline
//! case followed by `reference_memo_hit` (and, with data accesses, a hit on the cache's memo
//! line in `data_access`); `apply` mirrors their counter updates. `tests/reference_parity.rs`
//! (`run_agrees_with_access_by_access`) checks every counter against `access` called record
//! by record, on random machines and streams.

use super::{System, TimingModel};
use tlblab_trace::Record;
use tlblab_types::ThreadId;

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
    /// The cycles `System::access` charges each such reference.
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
    cycles: 0,
};

/// The memos of one software thread running on its hardware thread, by path
/// (`[data, instruction]`, as `Cpu::first_tlb`).
pub(super) struct Lane {
    pub(super) thread: ThreadId,
    pub(super) cpu: usize,
    data: bool,
    paths: [PathMemo; 2],
}

/// References a scan accepted, by `AccessKind` (instruction, load, store).
pub(super) type LaneCounts = [u64; 3];

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
                let (Some(line), line_shift) = cache.memo_line() else {
                    continue;
                };
                m.line = line;
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
            data,
            paths,
        })
    }

    /// How many records from the start of `records` are references of the lane's thread that
    /// hit both memos of their path; adds them to `counts` by kind.
    #[inline]
    pub(super) fn scan(&self, records: &[Record], counts: &mut LaneCounts) -> usize {
        for (n, r) in records.iter().enumerate() {
            let Record::Access(a) = r else {
                return n;
            };
            let va = a.vaddr.0;
            // An access crossing a 4 KiB boundary is two references (`System::access`).
            if a.thread != self.thread || (a.size > 1 && (va & 0xfff) + a.size as u64 > 4096) {
                return n;
            }
            let p = &self.paths[a.kind.is_instr() as usize];
            if va >> p.shift != p.page {
                return n;
            }
            if self.data {
                let addr = if p.virtual_cache {
                    va
                } else {
                    p.pa_base + (va & p.offset_mask)
                };
                if addr >> p.line_shift != p.line {
                    return n;
                }
            }
            counts[a.kind as usize] += 1;
        }
        records.len()
    }

    /// Adds what `System::access` adds for the references `scan` counted.
    pub(super) fn apply(&self, sys: &mut System, counts: LaneCounts) {
        let [instr, loads, stores] = counts;
        let cs = &mut sys.cpu_stats[self.cpu];
        cs.references += instr + loads + stores;
        cs.instr_references += instr;
        let mut cycles = 0;
        for (m, k) in self.paths.iter().zip([loads + stores, instr]) {
            if k == 0 {
                continue;
            }
            let t = &mut cs.tlb[m.tlb_stat];
            t.accesses += k;
            t.hits += k;
            if self.data {
                let c = &mut cs.cache[m.cache.1];
                c.accesses += k;
                c.hits += k;
                cs.data_by_source[m.cache.1] += k;
            }
            cycles += k * m.cycles;
        }
        if self.data && stores > 0 {
            sys.caches[self.paths[0].cache.0].write_memo_line();
        }
        cs.cycles += cycles;
        sys.cpus[self.cpu].clock += cycles;
        sys.references += instr + loads + stores;
    }
}
