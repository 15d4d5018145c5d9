//! Miss curves of a TLB level for every size in one pass over a trace (`docs/curves.md`).
//!
//! A `Run` takes records as the engine does (`tlblab-core` `System::run`: accesses split at
//! 4 KiB boundaries, page sizes from `Mmap`/`MapShared` regions, threads in the address space
//! of their `ThreadStart`, shootdowns on `Munmap`/`Mprotect`, `Flush` events) and gives the
//! misses, LRU, of:
//! - a fully associative level of every size up to `max_entries` (`fully.rs`, Mattson 1970);
//! - every associativity up to 16 ways at each requested power-of-two set count, low page-
//!   number bits indexing the set (`sets.rs`, Hill and Smith 1989);
//! - optionally a sampled fully associative curve (`sampled.rs`, SHARDS, FAST 2015);
//!
//! for the references that reach the level: its path's (data, instruction, or both for a
//! unified level), past the fixed levels above it (`upper.rs`), which are simulated exactly.
//! Curves are also kept per page size and per address space when the trace has more than one
//! (each as if those references had the level to themselves).
//!
//! Model: one core (every thread's references meet the same TLB), every page size held by the
//! level, and either ASID-tagged entries (no flush on an address-space switch, the engine's
//! `asid_tagged` policy) or a flush at each change of address space (`flush_on_switch`, the
//! engine's `flush_all`). The exactness tests (`tests/exact.rs`) compare every point with a
//! separate `tlblab-core` TLB-only run of that geometry.

mod analyzer;
pub mod bench;
pub mod fully;
pub mod head;
pub mod keymap;
pub mod sampled;
pub mod sets;
mod spec;
pub mod upper;

use fully::Fully;
use keymap::EMPTY;
use sampled::Sampled;
use sets::SetStacks;
use tlblab_trace::record::{flush, Event, Record, NO_THREAD};
use tlblab_trace::RecordSource;
use tlblab_types::{AccessKind, PageSize};
pub use upper::UpperGeometry;

use analyzer::{sampled_run, Analyzer};
pub use spec::*;

/// Address spaces a run tells apart (process ids 0..128): the key keeps 7 bits for it.
pub const MAX_PROCESSES: u32 = 128;
const SIZE_SHIFT: u32 = 53;
const PROCESS_SHIFT: u32 = 56;

/// A page's key: its number in its own size, the size and the address space. Bit 63 stays
/// clear (`keymap::EMPTY`); the low bits are the page number, so the set of a TLB of `S` sets
/// is `key & (S - 1)`, as the engine's low-bit index.
#[inline(always)]
pub fn key(process: u32, size: PageSize, vpn: u64) -> u64 {
    vpn | (size.index() as u64) << SIZE_SHIFT | (process as u64) << PROCESS_SHIFT
}

/// A region of one address space mapped with one page size.
#[derive(Clone, Copy)]
struct Region {
    start: u64,
    end: u64,
    size: PageSize,
}

/// The pass over a trace: feed it records (`feed`), then take the curves (`finish`).
pub struct Run {
    spec: Spec,
    take_data: bool,
    take_instr: bool,
    upper: Vec<upper::Upper>,
    /// Upper levels of the data (0) and instruction (1) path, in lookup order.
    chains: [Vec<usize>; 2],
    /// Process of each thread seen in a `ThreadStart` (others: process 0, as the engine).
    thread_process: Vec<u8>,
    /// Per process, its regions, newest first.
    regions: Vec<Vec<Region>>,
    /// Some region maps a page size other than the default (else no region is looked up).
    any_regions: bool,
    /// Page sizes met (bit per `PageSize::index()`), for shootdowns.
    sizes_seen: u8,
    /// The address space the core last loaded (for `flush_on_switch`).
    loaded: Option<u32>,
    /// Address spaces the engine would have created by now (0..spaces): those named by a
    /// `ThreadStart` or a mapping event, and all below them, and space 0 at the first access.
    spaces: u32,
    /// [0]: all references; then groups split off as a second page size or address space
    /// appears.
    analyzers: Vec<(String, Analyzer)>,
    size_group: [usize; 6],
    first_size: Option<PageSize>,
    process_group: Vec<usize>,
    first_process: Option<u32>,
    keys_buf: Vec<u64>,
    records: u64,
}

impl Run {
    pub fn new(spec: Spec) -> Result<Run, String> {
        spec.validate()?;
        let upper = spec.upper.iter().map(|&g| upper::Upper::new(g)).collect();
        let chains = [spec.upper_data.clone(), spec.upper_instr.clone()];
        Ok(Run {
            take_data: spec.path != Path::Instr,
            take_instr: spec.path != Path::Data,
            upper,
            chains,
            thread_process: Vec::new(),
            regions: Vec::new(),
            any_regions: false,
            sizes_seen: 0,
            loaded: None,
            spaces: 0,
            analyzers: vec![("all".into(), Analyzer::new(&spec))],
            size_group: [0; 6],
            first_size: None,
            process_group: vec![0; MAX_PROCESSES as usize],
            first_process: None,
            keys_buf: Vec::new(),
            records: 0,
            spec,
        })
    }

    /// Runs every record of `source`.
    pub fn feed_source(&mut self, source: &mut dyn RecordSource) -> Result<(), String> {
        let mut buf = Vec::with_capacity(1 << 14);
        loop {
            buf.clear();
            if source.fill(&mut buf, 1 << 14)? == 0 {
                return Ok(());
            }
            self.feed(&buf)?;
        }
    }

    /// Runs `records` (in trace order; call again with the next ones).
    pub fn feed(&mut self, records: &[Record]) -> Result<(), String> {
        let mut i = 0;
        while i < records.len() {
            if self.lean() {
                let a = &self.analyzers[0].1;
                let (f, s, x) = (a.fully.is_some(), a.sets.is_some(), a.sampled.is_some());
                let rest = &records[i..];
                i += match (f, s, x) {
                    (true, false, false) => self.feed_lean::<true, false, false>(rest),
                    (false, true, false) => self.feed_lean::<false, true, false>(rest),
                    (false, false, true) => self.feed_lean_sampled(rest),
                    _ => self.feed_lean::<true, true, true>(rest),
                };
                if i == records.len() {
                    break;
                }
            }
            self.feed_one(&records[i])?;
            i += 1;
        }
        self.records += records.len() as u64;
        Ok(())
    }

    /// Whether the lean loop can take accesses: no level above, one page size, no switch
    /// flushes, no groups split off.
    fn lean(&self) -> bool {
        self.upper.is_empty()
            && !self.any_regions
            && !self.spec.flush_on_switch
            && self.analyzers.len() == 1
            && (!self.spec.groups || self.first_process.is_some())
    }

    /// The common case in one loop: accesses of the first address space (any, without
    /// groups) in the default page size. Returns how many records it took; it stops at the
    /// first it cannot (an event, another address space), which `feed_one` takes.
    #[inline(never)]
    fn feed_lean<const FULLY: bool, const SETS: bool, const SAMPLED: bool>(
        &mut self,
        records: &[Record],
    ) -> usize {
        let size = self.lean_page_size();
        let shift = size.shift();
        let take = (self.take_instr as u8) | (self.take_data as u8) << 1;
        let only = self.spec.groups.then(|| self.first_process.unwrap());
        let tp = &self.thread_process;
        let a = &mut self.analyzers[0].1;
        // Counted here, not per reference in memory: a loop-carried store would bound the loop.
        let mut refs = 0u64;
        let mut taken = records.len();
        for (n, r) in records.iter().enumerate() {
            let Record::Access(acc) = r else {
                taken = n;
                break;
            };
            let data = acc.kind != AccessKind::Instr;
            if take >> data as u8 & 1 == 0 {
                continue;
            }
            let t = acc.thread.0 as usize;
            let p = match tp.get(t) {
                Some(&p) => p as u32,
                None if t <= 1 << 20 => 0,
                None => {
                    taken = n;
                    break;
                }
            };
            if only.is_some_and(|q| q != p) {
                taken = n;
                break;
            }
            let base = key(p, size, 0);
            let va = acc.vaddr.0;
            let off = va & 0xfff;
            if acc.size > 1 && off + acc.size as u64 > 4096 {
                a.crossing::<FULLY, SETS, SAMPLED>(
                    base | va >> shift,
                    base | (va + 4096 - off) >> shift,
                );
                refs += 2;
            } else {
                a.access_with::<FULLY, SETS, SAMPLED>(base | va >> shift);
                refs += 1;
            }
        }
        a.references += refs;
        if refs > 0 {
            self.spaces = self.spaces.max(1);
        }
        taken
    }

    /// The page size of every access the lean loops take (the spec's), noted as seen.
    fn lean_page_size(&mut self) -> PageSize {
        let size = self.spec.page_size;
        self.sizes_seen |= 1 << size.index();
        if self.spec.groups && self.first_size.is_none() {
            self.first_size = Some(size);
        }
        size
    }

    /// `feed_lean` for a sampled curve alone, the SHARDS pass whose target rate is several
    /// times the exact curves' (issue 46). When every reference counts (instructions and data)
    /// and every thread is in address space 0 (a single-process capture), a reference's key
    /// needs no lookup, and the top four pages of the sampled stack's exact head are held in
    /// registers: a reference to one of them (most of a program's: its code page, its stack
    /// and its current data pages, in turn) is a few compares, moves and a count. Anything else (a deeper page, an access
    /// across a page boundary) goes through `Sampled::access` with the head synced.
    /// Otherwise it is `feed_lean`. The same records taken, the same results.
    #[inline(never)]
    fn feed_lean_sampled(&mut self, records: &[Record]) -> usize {
        let simple = self.take_instr
            && self.take_data
            && self.thread_process.iter().all(|&p| p == 0)
            && (!self.spec.groups || self.first_process == Some(0));
        if !simple {
            return self.feed_lean::<false, false, true>(records);
        }
        let size = self.lean_page_size();
        let shift = size.shift();
        let base = key(0, size, 0);
        let a = &mut self.analyzers[0].1;
        let Some(s) = a.sampled.as_mut() else {
            unreachable!("feed_lean_sampled without a sampled curve")
        };
        // 4 KiB pages (every Lackey capture): the shift a constant, one instruction less a key.
        let (taken, refs) = if shift == 12 {
            sampled_run(s, records, base, 12)
        } else {
            sampled_run(s, records, base, shift)
        };
        a.references += refs;
        if refs > 0 {
            self.spaces = self.spaces.max(1);
        }
        taken
    }

    /// One record, in general.
    fn feed_one(&mut self, r: &Record) -> Result<(), String> {
        match r {
            Record::Access(a) => {
                self.spaces = self.spaces.max(1);
                let t = a.thread.0 as usize;
                if t > 1 << 20 {
                    return Err(format!("thread id {t} is too large (expected < 2^20)"));
                }
                let process = self.thread_process.get(t).copied().unwrap_or(0) as u32;
                if self.spec.flush_on_switch && self.loaded != Some(process) {
                    self.switch_to(process);
                }
                let instr = a.kind == AccessKind::Instr;
                if !(if instr {
                    self.take_instr
                } else {
                    self.take_data
                }) {
                    return Ok(());
                }
                let va = a.vaddr.0;
                // An access crossing a 4 KiB boundary is two references (the engine's
                // `access_general`), whatever the page size.
                let off = va & 0xfff;
                if a.size > 1 && off + a.size as u64 > 4096 {
                    self.reference(instr, process, va);
                    self.reference(instr, process, va + (4096 - off));
                } else {
                    self.reference(instr, process, va);
                }
            }
            Record::Event(e) => self.event(e)?,
        }
        Ok(())
    }

    #[inline(always)]
    fn page_size(&self, process: u32, va: u64) -> PageSize {
        if !self.any_regions {
            return self.spec.page_size;
        }
        self.regions
            .get(process as usize)
            .and_then(|rs| rs.iter().find(|r| va >= r.start && va < r.end))
            .map_or(self.spec.page_size, |r| r.size)
    }

    #[inline(always)]
    fn reference(&mut self, instr: bool, process: u32, va: u64) {
        let size = self.page_size(process, va);
        let k = key(process, size, va >> size.shift());
        for &li in &self.chains[instr as usize] {
            if self.upper[li].access(k, size.index()) {
                return;
            }
        }
        if self.spec.groups {
            self.sizes_seen |= 1 << size.index();
            self.group(size, process);
            if self.analyzers.len() > 1 {
                let (sg, pg) = (
                    self.size_group[size.index()],
                    self.process_group[process as usize],
                );
                if sg != 0 {
                    self.analyzers[sg].1.access(k);
                }
                if pg != 0 {
                    self.analyzers[pg].1.access(k);
                }
            }
        } else {
            self.sizes_seen |= 1 << size.index();
        }
        self.analyzers[0].1.access(k);
    }

    /// Splits the groups off when a second page size or address space appears: until then
    /// "all" saw only the first one's references, so the first one's group starts as a copy.
    #[inline(always)]
    fn group(&mut self, size: PageSize, process: u32) {
        match self.first_size {
            None => self.first_size = Some(size),
            Some(f) if f != size && self.size_group[size.index()] == 0 => {
                if self.size_group[f.index()] == 0 {
                    self.size_group[f.index()] = self.analyzers.len();
                    let a = self.analyzers[0].1.clone();
                    self.analyzers.push((f.name().to_string(), a));
                }
                self.size_group[size.index()] = self.analyzers.len();
                self.analyzers
                    .push((size.name().to_string(), Analyzer::new(&self.spec)));
            }
            _ => {}
        }
        match self.first_process {
            None => self.first_process = Some(process),
            Some(f) if f != process && self.process_group[process as usize] == 0 => {
                if self.process_group[f as usize] == 0 {
                    self.process_group[f as usize] = self.analyzers.len();
                    let a = self.analyzers[0].1.clone();
                    self.analyzers.push((format!("process {f}"), a));
                }
                self.process_group[process as usize] = self.analyzers.len();
                self.analyzers
                    .push((format!("process {process}"), Analyzer::new(&self.spec)));
            }
            _ => {}
        }
    }

    fn switch_to(&mut self, process: u32) {
        if self.loaded.is_some() {
            self.flush_all();
        }
        self.loaded = Some(process);
    }

    fn flush_all(&mut self) {
        for u in &mut self.upper {
            u.flush();
        }
        for (_, a) in &mut self.analyzers {
            a.flush();
        }
    }

    fn process_of_event(process: u32, what: &str) -> Result<u32, String> {
        if process >= MAX_PROCESSES {
            return Err(format!(
                "{what} event: process {process}: curves tell apart processes 0..{MAX_PROCESSES}"
            ));
        }
        Ok(process)
    }

    fn event(&mut self, e: &Event) -> Result<(), String> {
        match *e {
            Event::ThreadStart { thread, process } => {
                let p = Self::process_of_event(process, "ThreadStart")?;
                self.spaces = self.spaces.max(p + 1);
                let t = thread.0 as usize;
                if t > 1 << 20 {
                    return Err(format!("thread id {t} is too large (expected < 2^20)"));
                }
                if self.thread_process.len() <= t {
                    self.thread_process.resize(t + 1, 0);
                }
                self.thread_process[t] = p as u8;
            }
            Event::ContextSwitch { to, .. } if to != NO_THREAD && self.spec.flush_on_switch => {
                let p = self.thread_process.get(to.0 as usize).copied().unwrap_or(0) as u32;
                if self.loaded != Some(p) {
                    self.switch_to(p);
                }
            }
            Event::Mmap {
                process,
                start,
                len,
                page_shift,
                ..
            }
            | Event::MapShared {
                process,
                start,
                len,
                page_shift,
                ..
            } => {
                let p = Self::process_of_event(process, "mapping")?;
                self.spaces = self.spaces.max(p + 1);
                let size = PageSize::ALL
                    .into_iter()
                    .find(|s| s.shift() == page_shift as u32)
                    .ok_or_else(|| format!("mapping event: page_shift {page_shift} is not a supported page size (12, 14, 16, 20, 21, 30)"))?;
                if self.regions.len() <= p as usize {
                    self.regions.resize(p as usize + 1, Vec::new());
                }
                self.regions[p as usize].insert(
                    0,
                    Region {
                        start: start.0,
                        end: start.0.saturating_add(len),
                        size,
                    },
                );
                if size != self.spec.page_size {
                    self.any_regions = true;
                }
            }
            Event::Munmap {
                process,
                start,
                len,
            }
            | Event::Mprotect {
                process,
                start,
                len,
                ..
            } if process < self.spaces => {
                // The engine shoots down only in an address space it has created; without ASID
                // tags (`flush_on_switch`) every entry it holds is the loaded space's, and
                // all carry the same tag, so the range goes in whichever space is loaded.
                if !self.spec.flush_on_switch {
                    self.shootdown(process, start.0, len);
                } else if let Some(p) = self.loaded {
                    self.shootdown(p, start.0, len);
                }
            }
            Event::Flush { what, .. } if what & flush::TLB != 0 => self.flush_all(),
            _ => {}
        }
        Ok(())
    }

    /// Invalidates, in every level and stack, the pages of `process` that hold an address of
    /// `start..start+len` (the engine invalidates at each 4 KiB address from `start` rounded
    /// down, every entry of any size that holds it).
    fn shootdown(&mut self, process: u32, start: u64, len: u64) {
        let lo = start & !0xfff;
        let end = start.saturating_add(len);
        if lo >= end {
            return;
        }
        let sizes: Vec<PageSize> = PageSize::ALL
            .into_iter()
            .filter(|s| self.sizes_seen >> s.index() & 1 == 1)
            .collect();
        let pred = move |k: u64| {
            if k >> PROCESS_SHIFT != process as u64 {
                return false;
            }
            let size = PageSize::ALL[(k >> SIZE_SHIFT & 7) as usize];
            let vpn = k & ((1 << SIZE_SHIFT) - 1);
            vpn >= lo >> size.shift() && vpn <= (end - 1) >> size.shift()
        };
        for u in &mut self.upper {
            u.invalidate_where(pred);
        }
        let pages: u64 = sizes
            .iter()
            .map(|s| ((end - 1) >> s.shift()) - (lo >> s.shift()) + 1)
            .sum();
        if pages <= 4096 {
            self.keys_buf.clear();
            for s in &sizes {
                for vpn in lo >> s.shift()..=(end - 1) >> s.shift() {
                    self.keys_buf.push(key(process, *s, vpn));
                }
            }
            for (_, a) in &mut self.analyzers {
                a.invalidate_keys(&self.keys_buf);
            }
        } else {
            for (_, a) in &mut self.analyzers {
                a.invalidate_where(pred);
            }
        }
    }

    pub fn finish(self) -> Curves {
        let groups = self
            .analyzers
            .iter()
            .map(|(n, a)| a.curves(n.clone(), &self.spec))
            .collect();
        Curves {
            groups,
            sample_rate: self.analyzers[0].1.sampled.as_ref().map(|s| s.rate()),
            records: self.records,
        }
    }
}

/// The curves of every record of `source`.
pub fn curves(source: &mut dyn RecordSource, spec: Spec) -> Result<Curves, String> {
    let mut run = Run::new(spec)?;
    run.feed_source(source)?;
    Ok(run.finish())
}
