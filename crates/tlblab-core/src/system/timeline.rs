//! The run loops: records in batches from a source (`run`) or in place (`run_slice`), in trace
//! order while one hardware thread has work (`run_direct`, which offers stretches to the memo
//! lane and the fast lane), and on the multi-core timeline otherwise (always the hardware thread
//! with the smallest clock next; `run_apart` for hardware threads that cannot affect each other).

use super::*;

/// Records per batch the run loop takes from a source (public for the floors that mimic it,
/// tlblab-floor's `run_batches`).
pub const BATCH: usize = 1 << 14;

/// Records (32 bytes each) beyond which `run_slice` takes its slice to be in host memory rather
/// than in the host's caches (`System::records_in_memory`).
pub(super) const SLICE_FROM_MEMORY: usize = 1 << 16;

/// How far ahead in a hardware thread's queue the multi-core timeline hints the host to fetch
/// a walk's entries (and half as far, the cache sets): as `run_direct` does in trace order.
pub(super) const TIMELINE_PREFETCH_AHEAD: usize = 16;

/// Records per batch the run loop takes from a source, and the timeline's read-ahead window
/// (accesses queued at most): fixed per run (`System::set_read_ahead`), saved in a
/// checkpoint since the interleaving of several hardware threads depends on them.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ReadAhead {
    pub batch: usize,
    pub window: usize,
}

impl Default for ReadAhead {
    fn default() -> Self {
        ReadAhead {
            batch: BATCH,
            window: 1 << 16,
        }
    }
}

/// Where the run loop pauses for a checkpoint (`System::pause_at`, `pause_at_roi`): at the
/// first batch boundary at or after `references` references, or after the region of
/// interest began.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Pause {
    pub(crate) references: Option<u64>,
    pub(crate) roi: bool,
}

/// The run loop's state at a pause (`System::run_batches`): every hardware thread's queued
/// accesses, read ahead of the timeline and not yet run, and the loop's flags. Saved in a
/// checkpoint, so that a machine of several hardware threads continues as the uninterrupted
/// run would have interleaved them.
#[derive(Serialize, Deserialize)]
pub struct PausedLoop {
    queues: Vec<CpuQueue>,
    walking: Vec<bool>,
    try_apart: bool,
    first_cpu: Option<usize>,
    multi: bool,
}

/// Where the run loop's batches of records come from.
pub(super) trait Batches {
    /// The next batch; empty at the end.
    fn next(&mut self) -> Result<&[Record], SimError>;
}

/// Batches filled from a `RecordSource` into a reused buffer.
pub(super) struct Filled<'a> {
    source: &'a mut dyn RecordSource,
    buf: Vec<Record>,
    batch: usize,
}

impl Batches for Filled<'_> {
    fn next(&mut self) -> Result<&[Record], SimError> {
        self.buf.clear();
        self.source
            .fill(&mut self.buf, self.batch)
            .map_err(SimError)?;
        Ok(&self.buf)
    }
}

/// Batches that are pieces of a slice.
pub(super) struct Slices<'a> {
    records: &'a [Record],
    pos: usize,
    batch: usize,
}

impl Batches for Slices<'_> {
    fn next(&mut self) -> Result<&[Record], SimError> {
        let end = (self.pos + self.batch).min(self.records.len());
        let batch = &self.records[self.pos..end];
        self.pos = end;
        Ok(batch)
    }
}

/// One hardware thread's accesses waiting on the multi-core timeline (`Record::Access` only),
/// in trace order: a vector read from `head`, since the timeline takes them from the front one
/// at a time and `run_apart` takes them all at once as one slice; and whether they are all of
/// one software thread (`Sole`), kept as they are queued so that `run_apart` need not read
/// them again to know it (`sole`). Measured against a `VecDeque` and that second reading
/// (callgrind, zen3, `random:pages=262144,accesses=2M,threads=2`, TLB-only): queueing and
/// `run_apart` cost about 62 instructions per reference before (178 in all, against 108 for
/// one thread's stream); see `ARCHITECTURE.md`, "Several hardware threads".
#[derive(Default, Serialize, Deserialize)]
pub(super) struct CpuQueue {
    records: Vec<Record>,
    /// The first record not yet taken; `records[..head]` are taken, dropped once they are
    /// more than half (`pop_front`), so the vector stays within twice what is queued.
    head: usize,
    /// The thread of the first access queued since the queue was last empty, and whether a
    /// later one was of another thread (kept without a branch: `push` runs per access).
    first: ThreadId,
    mixed: bool,
}

/// Whose accesses a `CpuQueue` holds (`CpuQueue::sole`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Sole {
    /// None.
    Empty,
    /// Only this software thread's.
    One(ThreadId),
    /// Two or more threads'.
    Mixed,
}

impl CpuQueue {
    /// The accesses not yet taken, in trace order.
    #[inline]
    pub(super) fn pending(&self) -> &[Record] {
        &self.records[self.head..]
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.head == self.records.len()
    }

    /// Queues an access of `thread`.
    #[inline(always)]
    pub(super) fn push(&mut self, r: Record, thread: ThreadId) {
        if self.is_empty() {
            self.first = thread;
        }
        self.mixed |= thread != self.first;
        self.records.push(r);
    }

    /// Whose accesses are queued.
    pub(super) fn sole(&self) -> Sole {
        if self.is_empty() {
            Sole::Empty
        } else if self.mixed {
            Sole::Mixed
        } else {
            Sole::One(self.first)
        }
    }

    /// Takes the first access, if any.
    pub(super) fn pop_front(&mut self) -> Option<Record> {
        let r = *self.records.get(self.head)?;
        self.head += 1;
        if self.head == self.records.len() {
            self.clear();
        } else if self.head > 4096 && 2 * self.head > self.records.len() {
            // Most of the vector is taken: drop that part (amortised: each record moves at most
            // once per halving), so a queue that never empties does not grow without bound.
            self.records.drain(..self.head);
            self.head = 0;
        }
        Some(r)
    }

    pub(super) fn clear(&mut self) {
        self.records.clear();
        self.head = 0;
        self.mixed = false;
    }
}

/// The accesses waiting on the multi-core timeline: `run_batches`, once a second hardware
/// thread has work.
pub(super) struct Timeline {
    /// Per hardware thread, its accesses in trace order.
    pub(super) queues: Vec<CpuQueue>,
    pub(super) queued: usize,
    /// Per hardware thread: its last access walked (`System::timeline_access`).
    pub(super) walking: Vec<bool>,
    /// No hardware thread's accesses can change what another's find (`System::independent_cpus`).
    pub(super) independent: bool,
    /// Records were queued since `System::run_apart` was last tried.
    pub(super) try_apart: bool,
}

impl Timeline {
    /// The timeline and the run loop's own state where a pause left them (`PausedLoop`):
    /// the queues as they were, read-ahead included.
    pub(super) fn resume(p: PausedLoop, independent: bool) -> (Timeline, Option<usize>, bool) {
        let queued = p.queues.iter().map(|q| q.pending().len()).sum();
        let tl = Timeline {
            queues: p.queues,
            queued,
            walking: p.walking,
            independent,
            try_apart: p.try_apart,
        };
        (tl, p.first_cpu, p.multi)
    }

    /// The run loop's state at a pause, to be saved (`PausedLoop`): each queue keeps only
    /// what is not yet taken.
    pub(super) fn pause(self, first_cpu: Option<usize>, multi: bool) -> PausedLoop {
        let queues = self
            .queues
            .into_iter()
            .map(|mut q| {
                q.records.drain(..q.head);
                q.head = 0;
                q
            })
            .collect();
        PausedLoop {
            queues,
            walking: self.walking,
            try_apart: self.try_apart,
            first_cpu,
            multi,
        }
    }

    pub(super) fn new(cpus: usize, independent: bool) -> Timeline {
        Timeline {
            queues: (0..cpus).map(|_| CpuQueue::default()).collect(),
            queued: 0,
            walking: vec![false; cpus],
            independent,
            try_apart: false,
        }
    }
}

impl System {
    /// Whether the run loop pauses here (`Pause`): read once per batch.
    fn pause_due(&self) -> bool {
        self.pause.references.is_some_and(|n| self.references >= n)
            || (self.pause.roi && self.roi_begin.is_some())
    }

    /// Makes the next `run` pause, for a checkpoint, at the first batch boundary at or after
    /// `references` references (warm-up included): `paused` then says so, and a later `run`
    /// on the rest of the records goes on as if never stopped.
    pub fn pause_at(&mut self, references: u64) {
        self.pause.references = Some(references);
    }

    /// As `pause_at`, at the first batch boundary after the region of interest began (the
    /// workload's ROI event or the end of `set_warmup`'s warm-up).
    pub fn pause_at_roi(&mut self) {
        self.pause.roi = true;
    }

    /// Whether the last `run` paused (`pause_at`) rather than ended.
    pub fn paused(&self) -> bool {
        self.paused.is_some()
    }

    /// Records taken from the run's sources so far: where a restored run's source resumes.
    pub fn records_read(&self) -> u64 {
        self.records_read
    }

    /// Records per batch and the read-ahead window (`ReadAhead`).
    pub fn read_ahead(&self) -> ReadAhead {
        self.read_ahead
    }

    /// Sets the records per batch and the read-ahead window (`ReadAhead`; the defaults are
    /// `BATCH` and 65,536). Tests shrink them so that short traces pause mid-window.
    #[doc(hidden)]
    pub fn set_read_ahead(&mut self, batch: usize, window: usize) {
        self.read_ahead = ReadAhead {
            batch: batch.max(1),
            window: window.max(2),
        };
    }

    /// Runs a record source to the end (or `max_references`).
    ///
    /// With one hardware thread, records are simulated in trace order. With several, the engine
    /// reads ahead a bounded window of records (at most `LOOKAHEAD`), queues each access on the
    /// hardware thread its software thread runs on, and always advances the hardware thread with
    /// the smallest clock that has work queued; so within the window, contention happens in
    /// simulated-time order, and memory stays bounded for traces of any length. Events take
    /// effect in trace order: the queues are drained before an event is applied.
    pub fn run(&mut self, source: &mut dyn RecordSource) -> Result<(), SimError> {
        self.region_names = source.region_names();
        let batch = self.read_ahead.batch;
        self.run_batches(&mut Filled {
            source,
            buf: Vec::with_capacity(batch),
            batch,
        })
    }

    /// `run` on records already in memory, read in place (no copy into a batch buffer).
    pub fn run_slice(&mut self, records: &[Record]) -> Result<(), SimError> {
        // A slice past 2 MiB (the host's L2, where the records of a small one stay after
        // whoever wrote them) is read from memory: hinted ahead. A small one would pay for
        // hints it does not need (measured with the hints on in every run: sequential
        // TLB-only from 16K-record slices, 465 → 428 M refs/s).
        self.records_in_memory = records.len() > SLICE_FROM_MEMORY;
        let done = self.run_batches(&mut Slices {
            records,
            pos: 0,
            batch: self.read_ahead.batch,
        });
        self.records_in_memory = false;
        done
    }

    pub(super) fn run_batches(&mut self, batches: &mut impl Batches) -> Result<(), SimError> {
        // The timeline reads ahead while fewer than half its window's accesses are queued.
        let half_window = self.read_ahead.window / 2;
        // While only one hardware thread has had work (a single-threaded trace), there is nothing
        // to interleave: simulate in trace order without queueing.
        let single = self.cpus.len() == 1;
        // A run that paused (`pause_at`) goes on from where its loop stood, queues and all.
        let (mut tl, mut first_cpu, mut multi) = match self.paused.take() {
            Some(p) => Timeline::resume(p, self.independent_cpus()),
            None => (
                Timeline::new(self.cpus.len(), self.independent_cpus()),
                None,
                false,
            ),
        };
        let mut exhausted = false;
        let final_limit = if self.options.max_references == 0 {
            u64::MAX
        } else {
            self.options.max_references
        };
        // A warm-up (`set_warmup`) and a sample's unit marks (`set_sample`) are intermediate
        // limits: the loop stops there exactly as a run limited to one stops, takes what is
        // due (the region of interest begins, a unit's snapshot) and goes on to the next
        // limit (`stop_at_limit`). The limit is only read where the loop already checks it,
        // so a run with neither executes what it did before.
        let mut limit = final_limit;
        let mut after_warmup = None;
        if (self.warmup > 0 && self.roi_begin.is_none()) || self.sample.is_some() {
            self.intermediate_stop();
            if let Some(next) = self.next_intermediate_stop() {
                if next < final_limit {
                    limit = next;
                    after_warmup = Some(final_limit);
                }
            }
        }
        // A technique sees each batch first (`Technique::on_batch`), in a copy of its own.
        let mut transformed: Vec<Record> = Vec::new();
        loop {
            if self.references >= limit && self.stop_at_limit(&mut limit, &mut after_warmup) {
                return Ok(());
            }
            if !exhausted && tl.queued < half_window {
                // A checkpoint's pause comes where a batch is about to be read: what the loop
                // holds then is its queues and a few flags, all saved (`PausedLoop`), and the
                // source resumes at a batch boundary, as the uninterrupted run reads it.
                if self.pause_due() {
                    self.pause = Pause::default();
                    self.paused = Some(tl.pause(first_cpu, multi));
                    return Ok(());
                }
                let mut buf = batches.next()?;
                self.records_read += buf.len() as u64;
                if buf.is_empty() {
                    exhausted = true;
                }
                if let Some(t) = &mut self.technique {
                    transformed.clear();
                    transformed.extend_from_slice(buf);
                    t.on_batch(&mut transformed)?;
                    buf = &transformed;
                }
                let mut i = 0;
                // With a technique the lanes may not serve, every access goes through the
                // timeline's queues to the general path (`Declaration::lanes_allowed`).
                if !multi && tl.queued == 0 && self.lanes_allowed {
                    loop {
                        i += self.run_direct(&buf[i..], single, &mut first_cpu, limit)?;
                        if self.references < limit {
                            break;
                        }
                        if self.stop_at_limit(&mut limit, &mut after_warmup) {
                            return Ok(());
                        }
                    }
                    // Stopped early: a second hardware thread has work from here on (or an
                    // event turned the lanes off, and the rest keeps to the timeline's rule).
                    multi = i < buf.len() && self.lanes_allowed;
                }
                let prefetch_records = self.records_in_memory;
                for (n, r) in buf.iter().enumerate().skip(i) {
                    if prefetch_records {
                        hint_record(buf, n);
                    }
                    match *r {
                        Record::Access(a) => {
                            let cpu = self.cpu_of(a.thread)?;
                            tl.queues[cpu].push(*r, a.thread);
                            tl.queued += 1;
                            if !multi {
                                // Without the lanes (a technique's run, stall cycles) the
                                // timeline keeps the rule `run_direct` keeps: trace order while
                                // one hardware thread has had work (found by the reference's
                                // twins, 2026-11-25: before, every access was queued from the
                                // first, and a second hardware thread's first access could run
                                // ahead of the first one's earlier accesses).
                                if single || *first_cpu.get_or_insert(cpu) == cpu {
                                    self.timeline_step(&mut tl)?;
                                    if self.references >= limit
                                        && self.stop_at_limit(&mut limit, &mut after_warmup)
                                    {
                                        return Ok(());
                                    }
                                } else {
                                    multi = true;
                                }
                            }
                        }
                        Record::Event(e) => {
                            if tl.queued > 0 {
                                self.drain(&mut tl, &mut limit, &mut after_warmup)?;
                            }
                            // Nothing after the limit's reference runs, events included (as
                            // `run_direct` stops there).
                            if self.references >= limit
                                && self.stop_at_limit(&mut limit, &mut after_warmup)
                            {
                                return Ok(());
                            }
                            self.event(e)?;
                        }
                    }
                }
                tl.try_apart = true;
                continue;
            }
            if tl.queued == 0 {
                // The records ended: a unit whose last reference was the run's last ends here.
                if self.sample.is_some() {
                    self.take_sample_marks();
                }
                return Ok(());
            }
            if std::mem::take(&mut tl.try_apart)
                && self.lanes_allowed
                && self.run_apart(&mut tl, limit)?
            {
                continue;
            }
            self.timeline_step(&mut tl)?;
        }
    }

    /// The run has reached `limit`: whether it stops. At an intermediate limit, a warm-up's
    /// end or a sample's unit mark (`after_warmup` holds the final limit), it does not: what
    /// is due there is taken (the region of interest begins, a unit's snapshot), and the run
    /// goes on to the next limit (unless the final one is reached too).
    fn stop_at_limit(&mut self, limit: &mut u64, after_warmup: &mut Option<u64>) -> bool {
        match after_warmup.take() {
            Some(final_limit) => {
                self.intermediate_stop();
                match self.next_intermediate_stop() {
                    Some(next) if next < final_limit => {
                        *limit = next;
                        *after_warmup = Some(final_limit);
                        false
                    }
                    _ => {
                        *limit = final_limit;
                        self.references >= final_limit
                    }
                }
            }
            None => {
                // The final limit: a unit ending on it ends here (a warm-up never does).
                if self.sample.is_some() {
                    self.take_sample_marks();
                }
                true
            }
        }
    }

    /// Runs the next access of the timeline (`next_on_timeline`); false when none is queued.
    pub(super) fn timeline_step(&mut self, tl: &mut Timeline) -> Result<bool, SimError> {
        let Some(cpu) = self.next_on_timeline(&tl.queues) else {
            return Ok(false);
        };
        if self.companion {
            // A technique's own hardware threads (seed 001's helper) run up to this access's
            // time first, so that their loads and the records' meet the shared caches in
            // time order (`Technique::on_clock`).
            let until = self.cpus[cpu].clock;
            self.with_technique((), |t, s| t.on_clock(s, until))?;
        }
        let Some(Record::Access(a)) = tl.queues[cpu].pop_front() else {
            unreachable!("the queues hold accesses")
        };
        tl.queued -= 1;
        self.timeline_access(cpu, a, tl.queues[cpu].pending(), &mut tl.walking)?;
        Ok(true)
    }

    /// One access of the multi-core timeline, of hardware thread `cpu` (`queue`: its accesses
    /// after this one), through the general path: several hardware threads' accesses
    /// interleave one by one, and the fast lane's per-call cost made runs of first-level hits
    /// 1.6-2.5x slower than `access` (measured 2026-11-24; ARCHITECTURE.md). It is `access`
    /// with the hint-table hit inline too (`access_inline::<true>`): there such hits are the
    /// common case of streams with locality, and the call to `reference_past_memo` was a good
    /// part of their cost (two SMT siblings over 4 pages, full model: 730 → 666 instructions
    /// per reference).
    ///
    /// While the hardware thread's accesses keep walking (`walking`, per hardware thread; a
    /// TLB-only run has no walks to hint), the host is hinted to fetch what accesses further
    /// down its queue will walk and touch, as `run_direct` does in trace order: 1.0 → 1.5 M
    /// refs/s on two threads' random streams over 1 GiB each (zen3, full model). Hinting
    /// every access cost streams of first-level hits a third of their rate.
    pub(super) fn timeline_access(
        &mut self,
        cpu: usize,
        a: Access,
        queue: &[Record],
        walking: &mut [bool],
    ) -> Result<(), SimError> {
        if !self.options.walks {
            self.access_inline::<true>(a)?;
            return Ok(());
        }
        if walking[cpu] {
            let access = |i: usize| match queue.get(i) {
                Some(Record::Access(a)) => Some(*a),
                _ => None,
            };
            self.prefetch_for(
                access(TIMELINE_PREFETCH_AHEAD - 1),
                access(TIMELINE_PREFETCH_AHEAD / 2 - 1),
            );
        }
        let walks = self.cpu_stats[cpu].walks;
        self.access_inline::<true>(a)?;
        walking[cpu] = self.cpu_stats[cpu].walks != walks;
        Ok(())
    }

    /// The hardware thread the timeline advances next: of those with work queued, the one
    /// with the smallest clock (the lowest index among equals).
    pub(super) fn next_on_timeline(&self, queues: &[CpuQueue]) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, q) in queues.iter().enumerate() {
            if !q.is_empty() && best.is_none_or(|b| self.cpus[i].clock < self.cpus[b].clock) {
                best = Some(i);
            }
        }
        best
    }

    /// Runs every access of the timeline (before an event), up to the reference limit.
    pub(super) fn drain(
        &mut self,
        tl: &mut Timeline,
        limit: &mut u64,
        after_warmup: &mut Option<u64>,
    ) -> Result<(), SimError> {
        loop {
            if !self.run_apart(tl, *limit)? {
                while self.references < *limit && self.timeline_step(tl)? {}
            }
            // At the end of a warm-up with accesses still queued, they run on.
            if tl.queued == 0 || self.references < *limit || self.stop_at_limit(limit, after_warmup)
            {
                break;
            }
        }
        // (Past the limit, what is left is never run.)
        tl.queues.iter_mut().for_each(CpuQueue::clear);
        tl.queued = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{CpuQueue, Sole};
    use std::collections::VecDeque;
    use tlblab_trace::{Access, Record};
    use tlblab_types::{AccessKind, SplitMix64, ThreadId, VirtAddr};

    fn access(thread: u32, n: u64) -> Record {
        Record::Access(Access::new(
            ThreadId(thread),
            AccessKind::Load,
            VirtAddr(n * 8),
            8,
        ))
    }

    /// Given a queue fed and drained in random bursts (some long enough to make it drop the
    /// part already taken), when compared with a `VecDeque` after every step, then it holds
    /// the same accesses in the same order, and says whose they are as the model does.
    #[test]
    fn given_random_bursts_of_pushes_and_pops_then_the_queue_matches_a_deque() {
        let mut rng = SplitMix64::derive(7, "cpu-queue");
        let mut q = CpuQueue::default();
        let mut model: VecDeque<Record> = VecDeque::new();
        let mut n = 0u64;
        for _ in 0..400 {
            // Mostly one thread, sometimes a second: both `Sole::One` and `Sole::Mixed` occur.
            let burst = rng.below(12_000) as usize;
            if rng.below(2) == 0 {
                for _ in 0..burst {
                    let thread = (rng.below(50) == 0) as u32;
                    q.push(access(thread, n), ThreadId(thread));
                    model.push_back(access(thread, n));
                    n += 1;
                }
            } else {
                for _ in 0..burst {
                    assert_eq!(q.pop_front(), model.pop_front());
                }
            }
            assert_eq!(
                q.pending(),
                model.iter().copied().collect::<Vec<_>>().as_slice()
            );
            assert_eq!(q.is_empty(), model.is_empty());
            // The taken part is dropped once it is most of the vector.
            assert!(q.records.len() <= 2 * model.len() + 4097);
            let threads: Vec<u32> = model
                .iter()
                .map(|r| match r {
                    Record::Access(a) => a.thread.0,
                    Record::Event(_) => unreachable!(),
                })
                .collect();
            let expected = match threads.first() {
                None => Sole::Empty,
                Some(&t) if threads.iter().all(|&u| u == t) => Sole::One(ThreadId(t)),
                Some(_) => Sole::Mixed,
            };
            // `sole` may say `Mixed` of accesses left from a mixed past (conservative), never
            // `One` of a mix.
            match (q.sole(), expected) {
                (Sole::Mixed, Sole::One(_)) => {}
                (got, want) => assert_eq!(got, want),
            }
            if rng.below(20) == 0 {
                q.clear();
                model.clear();
                assert_eq!(q.sole(), Sole::Empty);
            }
        }
    }
}
