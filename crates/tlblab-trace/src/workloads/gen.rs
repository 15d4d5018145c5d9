//! Shared plumbing of the generators: a `Generator` writes its workload one bounded step at a
//! time as plain loops, and `Chunked` turns it into a `RecordSource`. Also small record
//! constructors and a virtual-address layout that hands out named, page-aligned regions.

pub use crate::record::Record;
use crate::record::{Access, Event, NO_THREAD};
use crate::source::RecordSource;
use tlblab_types::{AccessKind, CoreId, ThreadId, VirtAddr};

/// A workload written as steps. `step` appends a bounded number of records (so memory stays
/// bounded however long the workload) and returns false once the workload is over.
pub trait Generator: Send {
    fn step(&mut self, out: &mut Vec<Record>) -> bool;
    /// Names of the regions the workload's `Region`/`Phase*` events refer to.
    fn regions(&self) -> Vec<String>;
    /// Advances past up to `n` of the records the next steps would write, all of them
    /// accesses, without writing them (the state as if they had been written); returns how
    /// many. 0 (the default): the generator cannot, its steps are run and their records dropped.
    fn skip(&mut self, _n: u64) -> u64 {
        0
    }
}

/// Writes `r` to `out` when given and counts it either way: one loop body for a generator's
/// `step` (records written) and its `skip` (only counted).
#[inline(always)]
pub fn put(out: &mut Option<&mut Vec<Record>>, n: &mut u64, r: Record) {
    if let Some(o) = out {
        o.push(r);
    }
    *n += 1;
}

/// A migration benchmark (seed 000 §4): `rounds()` rounds of one thread's references over a
/// `Layout`; the first starts the thread on core 0 (`Layout::begin_iteration`). `ByRounds`
/// makes it a `Generator`.
pub trait Rounds: Send {
    /// The benchmark's layout and its number of rounds.
    fn plan(&self) -> (&Layout, u64);
    /// Writes the records of the next round.
    fn round(&mut self, out: &mut Vec<Record>);
}

/// The generator of a `Rounds` benchmark: one round a step.
pub struct ByRounds<B: Rounds> {
    bench: B,
    done: u64,
}

impl<B: Rounds> ByRounds<B> {
    pub fn new(bench: B) -> Self {
        ByRounds { bench, done: 0 }
    }
}

impl<B: Rounds> Generator for ByRounds<B> {
    fn regions(&self) -> Vec<String> {
        self.bench.plan().0.names.clone()
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        let (layout, rounds) = self.bench.plan();
        if !layout.begin_iteration(self.done, rounds, out) {
            return false;
        }
        self.bench.round(out);
        self.done += 1;
        true
    }
}

pub struct Chunked<G: Generator> {
    g: G,
    buf: Vec<Record>,
    pos: usize,
    done: bool,
}

impl<G: Generator> Chunked<G> {
    pub fn new(g: G) -> Self {
        Chunked {
            g,
            buf: Vec::new(),
            pos: 0,
            done: false,
        }
    }
}

/// Copies up to `max` records into `out` from `buf[*pos..]`, calling `refill` with the emptied
/// `buf` whenever it is used up; `refill` returns false once it wrote nothing and nothing more
/// will come. The buffering of every stepped source (`Chunked`, `corun::Corun`).
pub(crate) fn fill_from_steps(
    buf: &mut Vec<Record>,
    pos: &mut usize,
    out: &mut Vec<Record>,
    max: usize,
    mut refill: impl FnMut(&mut Vec<Record>) -> Result<bool, String>,
) -> Result<usize, String> {
    let mut n = 0;
    while n < max {
        if *pos == buf.len() {
            buf.clear();
            *pos = 0;
            if !refill(buf)? {
                break;
            }
            continue;
        }
        let k = (buf.len() - *pos).min(max - n);
        out.extend_from_slice(&buf[*pos..*pos + k]);
        *pos += k;
        n += k;
    }
    Ok(n)
}

impl<G: Generator> RecordSource for Chunked<G> {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let (g, done) = (&mut self.g, &mut self.done);
        fill_from_steps(&mut self.buf, &mut self.pos, out, max, |buf| {
            while buf.is_empty() && !*done {
                *done = !g.step(buf);
            }
            Ok(!buf.is_empty())
        })
    }
    fn region_names(&self) -> Vec<String> {
        self.g.regions()
    }
    fn skip_accesses(&mut self, n: u64) -> Result<u64, String> {
        // The accesses of the step already written first (up to an event), then the generator
        // itself, between steps.
        let mut k = skip_buffered(&self.buf, &mut self.pos, n);
        if k < n && self.pos == self.buf.len() && !self.done {
            k += self.g.skip(n - k);
        }
        Ok(k)
    }
}

/// Drops up to `n` accesses of `buf` from `pos` on, stopping at the first event; returns how
/// many (a source's `skip_accesses` over the records it has already made).
pub fn skip_buffered(buf: &[Record], pos: &mut usize, n: u64) -> u64 {
    let mut k = 0;
    while k < n && *pos < buf.len() && matches!(buf[*pos], Record::Access(_)) {
        *pos += 1;
        k += 1;
    }
    k
}

#[inline]
/// Thread `t`'s following references are independent of its loads in flight (`begin`), or
/// depend on them (`Event::Independent`). A `begin` while already independent is a barrier:
/// what follows depends on what went before and not on itself.
pub fn independent(t: u32, begin: bool) -> Record {
    ev(Event::Independent {
        thread: ThreadId(t),
        begin,
    })
}

pub fn load(t: u32, a: u64, size: u32) -> Record {
    Record::Access(Access::new(
        ThreadId(t),
        AccessKind::Load,
        VirtAddr(a),
        size,
    ))
}
#[inline]
pub fn store(t: u32, a: u64, size: u32) -> Record {
    Record::Access(Access::new(
        ThreadId(t),
        AccessKind::Store,
        VirtAddr(a),
        size,
    ))
}
#[inline]
pub fn fetch(t: u32, a: u64, size: u32) -> Record {
    Record::Access(Access::new(
        ThreadId(t),
        AccessKind::Instr,
        VirtAddr(a),
        size,
    ))
}
/// The widest virtual address space of any machine (x86-64 5-level paging: 57 bits).
pub const VA_LIMIT: u64 = 1 << 57;

/// Checks at build that a generator's region `[base, base + span)` lies below [`VA_LIMIT`], so
/// that its per-access address arithmetic can neither overflow nor wrap (`span` None: the
/// parameters' product already passed 2^64).
pub fn region_fits(name: &str, base: u64, span: Option<u64>) -> Result<(), String> {
    match span.and_then(|s| base.checked_add(s)) {
        Some(end) if end <= VA_LIMIT => Ok(()),
        _ => Err(format!(
            "{name}: base {base:#x} plus the region's size ({}) ends past the 57-bit address space ({VA_LIMIT:#x})",
            span.map_or("over 2^64 bytes".to_string(), |s| format!("{s} bytes"))
        )),
    }
}

#[inline]
/// Thread 0's 8-byte loads `next..next + n` of a cyclic walk: load i at
/// `base + (i % count) * step`.
pub fn cyclic_loads(out: &mut Vec<Record>, next: u64, n: u64, base: u64, count: u64, step: u64) {
    out.extend((next..next + n).map(|i| load(0, base + (i % count) * step, 8)));
}

/// Switches core 0 from the task `running` to `to` (None: idle), if they differ. Returns
/// whether it switched.
pub fn switch_running(
    running: &mut Option<usize>,
    to: Option<usize>,
    out: &mut Vec<Record>,
) -> bool {
    if to == *running {
        return false;
    }
    out.push(switch(0, running.map(|x| x as u32), to.map(|x| x as u32)));
    *running = to;
    true
}

pub fn ev(e: Event) -> Record {
    Record::Event(e)
}
/// A private mapping of `len` bytes of 4 KiB pages at `start` in `process`.
pub fn map_private(process: u32, start: u64, len: u64, prot: u8) -> Event {
    Event::Mmap {
        process,
        start: VirtAddr(start),
        len,
        prot,
        page_shift: 12,
    }
}
/// A mapping of shared object `object` (the same frames in every process that maps it), 4 KiB
/// pages.
pub fn map_shared(process: u32, start: u64, len: u64, prot: u8, object: u32) -> Event {
    Event::MapShared {
        process,
        start: VirtAddr(start),
        len,
        prot,
        page_shift: 12,
        object,
    }
}
pub fn switch(core: u16, from: Option<u32>, to: Option<u32>) -> Record {
    ev(Event::ContextSwitch {
        core: CoreId(core),
        from: from.map(ThreadId).unwrap_or(NO_THREAD),
        to: to.map(ThreadId).unwrap_or(NO_THREAD),
    })
}

/// Ends process `from`'s turn of a token passed round-robin among `procs` processes on core 0
/// (lmbench's lat_ctx ring, seed 002 §4.1, and the extreme benchmark's yields, §4.1 Fig. 4):
/// the turn count goes up, and unless the run is over (`total` turns) or the token stays with
/// `from`, the core switches to the process whose turn is next.
pub fn pass_token(out: &mut Vec<Record>, turn: &mut u64, total: u64, procs: u32, from: u32) {
    *turn += 1;
    let next = (*turn % procs as u64) as u32;
    if *turn < total && next != from {
        out.push(switch(0, Some(from), Some(next)));
    }
}

/// `Region` events for `ranges` (start, length), numbered from 0 in order: the region table of
/// a program whose regions are fixed addresses rather than a `Layout`'s.
pub fn regions(out: &mut Vec<Record>, ranges: &[(u64, u64)]) {
    for (i, &(start, len)) in ranges.iter().enumerate() {
        out.push(ev(Event::Region {
            region: i as u32,
            start: VirtAddr(start),
            len,
        }));
    }
}

/// Hands out page-aligned virtual ranges, in order, with a guard page between them, and
/// remembers their names (the region table of the trace header).
pub struct Layout {
    next: u64,
    pub names: Vec<String>,
    pub ranges: Vec<(u64, u64)>,
}

impl Layout {
    pub fn new(base: u64) -> Self {
        Layout {
            next: base,
            names: Vec::new(),
            ranges: Vec::new(),
        }
    }
    /// Reserves `bytes` (rounded up to `align`, a power of two ≥ 4096) and returns (region index, start).
    pub fn alloc(&mut self, name: &str, bytes: u64, align: u64) -> (u32, u64) {
        let start = (self.next + align - 1) & !(align - 1);
        let len = bytes.max(1).div_ceil(4096) * 4096;
        self.next = start + len + 4096;
        self.names.push(name.to_string());
        self.ranges.push((start, len));
        ((self.names.len() - 1) as u32, start)
    }
    /// A name-only region (a phase marker).
    pub fn phase(&mut self, name: &str) -> u32 {
        self.names.push(name.to_string());
        self.ranges.push((0, 0));
        (self.names.len() - 1) as u32
    }
    /// The start of a one-thread program: thread 0 of process 0, then `region_events`.
    pub fn start_one_thread(&self, out: &mut Vec<Record>) {
        out.push(ev(Event::ThreadStart {
            thread: ThreadId(0),
            process: 0,
        }));
        out.extend(self.region_events());
    }
    /// The first step of a one-thread program's generator: once (`started` false, then set),
    /// the thread's start (`start_one_thread`) and true; after that false.
    pub fn start_once(&self, started: &mut bool, out: &mut Vec<Record>) -> bool {
        if *started {
            return false;
        }
        *started = true;
        self.start_one_thread(out);
        true
    }
    /// The prologue of a migration benchmark's `step`: false once `it` reached `iterations`
    /// (the generator is done); at the first iteration, the one thread starts and runs on
    /// core 0.
    pub fn begin_iteration(&self, it: u64, iterations: u64, out: &mut Vec<Record>) -> bool {
        if it == iterations {
            return false;
        }
        if it == 0 {
            self.start_one_thread(out);
            out.push(switch(0, None, Some(0)));
        }
        true
    }
    /// `Region` events for every allocated range (not the phase markers).
    pub fn region_events(&self) -> Vec<Record> {
        self.ranges
            .iter()
            .enumerate()
            .filter(|(_, r)| r.1 > 0)
            .map(|(i, &(s, l))| {
                ev(Event::Region {
                    region: i as u32,
                    start: VirtAddr(s),
                    len: l,
                })
            })
            .collect()
    }
}

/// Reads parameter `k` or fails with a message naming the workload.
/// `v`, workload `name`'s parameter `k`, if it lies in `lo..=hi`; else the error naming both
/// (a large power of two bound written as 2^n).
pub fn in_range(name: &str, k: &str, v: u64, lo: u64, hi: u64) -> Result<u64, String> {
    if (lo..=hi).contains(&v) {
        return Ok(v);
    }
    let hi = if hi.is_power_of_two() && hi >= 1 << 16 {
        format!("2^{}", hi.trailing_zeros())
    } else {
        hi.to_string()
    };
    Err(format!("{name}: {k} must be in {lo}..={hi} (got {v})"))
}

pub fn positive(name: &str, k: &str, v: u64) -> Result<u64, String> {
    if v == 0 {
        Err(format!("{name}: parameter {k} must be positive"))
    } else {
        Ok(v)
    }
}
