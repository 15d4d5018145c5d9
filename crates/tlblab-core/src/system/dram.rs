//! The DRAM channels every hardware thread shares (`timing.dram`, `DramConfig` has the rules
//! and their sources): when each channel is free again, and what the lines that waited for
//! one cost. Only the general path comes here, and only on a machine with `timing.dram`
//! (`System::timed_memory`); a machine without it executes what it did before.

use super::*;
use crate::machine::{DramConfig, DRAM_FRACTION_BITS, DRAM_HORIZON};
use std::collections::VecDeque;

/// The channels' state: per channel, its reserved intervals `[start, end)` in fixed point
/// (`DRAM_FRACTION_BITS`), sorted, disjoint, each whole lines end to end (a line that begins
/// where another ends is merged with it); and the counts `Stats::dram` reports. A line may take
/// a gap between reservations (a reference's later lines are reserved ahead of time: the
/// channel is free before them). A saturated channel's lines go back to back, so its calendar
/// stays a few intervals long instead of one per line (whose search and insertion were a third
/// of a stream-pressure run's time). Only touching lines are merged: the horizon's pruning
/// keeps, of the first interval, the lines that end at its bound or later, counted a line at a
/// time from the interval's start, which holds only for lines end to end. (Until 2026-11-29
/// lines were merged across any gap shorter than a line, which no line can take; but a pruned
/// interval then kept a part-line that was free, and a line arriving from further back than
/// the horizon, on another hardware thread, found the channel busy where the reference model,
/// which keeps every reservation apart (`RefDram`), found it free:
/// `tests/regressions/dram.rs`.) The calendars keep
/// their room once grown; they are ring buffers because every arrival prunes them from the
/// front (`DRAM_HORIZON`) and most reservations go in near the back (a `Vec` moved its whole
/// calendar on each prune: two thirds of a stream-pressure run's time). Serialized as the
/// same sequences a `Vec` gives.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub(crate) struct DramState {
    pub(crate) busy: Vec<VecDeque<(u64, u64)>>,
    /// Fixed-point cycles one line occupies a channel (`DramConfig::line_cycles_fixed`).
    pub(crate) line: u64,
    pub(crate) lines: u64,
    pub(crate) queued_lines: u64,
    pub(crate) queue_cycles: u64,
    /// Dirty lines written back to memory (`DramConfig::writebacks`).
    pub(crate) writeback_lines: u64,
    /// Whether dirty lines are written back (`DramConfig::writebacks`).
    pub(crate) writebacks: bool,
    /// The writebacks of the reference (or technique operation) under way, in the order of
    /// their evictions, each as the number of its lines from memory that had been read when
    /// its eviction happened (the writeback waits for that line's fill, `queue`). Saved: an
    /// event record (a flush, a switch) can evict dirty lines that wait for the next
    /// reference's `queue`, and a run paused between the two must keep them (a checkpoint
    /// left one writeback out when this was skipped; `default` reads older checkpoints).
    #[serde(default)]
    pub(crate) pending: Vec<(u32, u64)>,
    /// The addresses of the lines read from memory since the channels last placed lines, in
    /// order (captured on a machine with writebacks or row activations; `queue`'s reads).
    /// Saved for the same reason as `pending`.
    #[serde(default)]
    pub(crate) read_addrs: Vec<u64>,
    /// Row activations (`DramConfig::rows`), if modelled.
    pub(crate) rows: Option<Rows>,
    /// Lines from memory read since the channels last placed lines (`pending`'s counts).
    #[serde(default)]
    pub(crate) reads: u32,
    /// `queue`'s answer times of the reference's lines (room kept: no allocation per call).
    #[serde(skip)]
    answers: Vec<u64>,
}

// `answers` is scratch, empty between references: a state compares by what it keeps (a
// restored checkpoint equals the saved one).
impl PartialEq for DramState {
    fn eq(&self, o: &Self) -> bool {
        (
            &self.busy,
            self.line,
            self.lines,
            self.queued_lines,
            self.queue_cycles,
            self.writeback_lines,
            self.writebacks,
            &self.rows,
            &self.pending,
            &self.read_addrs,
            self.reads,
        ) == (
            &o.busy,
            o.line,
            o.lines,
            o.queued_lines,
            o.queue_cycles,
            o.writeback_lines,
            o.writebacks,
            &o.rows,
            &o.pending,
            &o.read_addrs,
            o.reads,
        )
    }
}

impl Eq for DramState {}

/// The banks' open rows and the ranks' activations (`DramConfig`'s row rules), on a machine
/// that models them. A line's address picks its channel, rank, bank and row: consecutive rows
/// of `row_lines` lines go to channel 0, 1, ..., then the next rank, then the next bank
/// (`map`). Per rank its activations' times, sorted, pruned like the calendars.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Rows {
    /// The checked configuration (`DramConfig::rows`) and the bytes of a line.
    pub(crate) cfg: crate::machine::DramRows,
    pub(crate) line_bytes: u64,
    /// Per bank (channel, rank, bank), its open row (`u64::MAX`: none).
    pub(crate) open: Vec<u64>,
    /// Per rank (channel, rank), its activations.
    pub(crate) acts: Vec<VecDeque<u64>>,
    pub(crate) activations: u64,
}

impl Rows {
    fn new(r: crate::machine::DramRows, channels: u32, line_bytes: u64) -> Rows {
        let ranks = (channels * r.ranks) as usize;
        Rows {
            cfg: r,
            line_bytes,
            open: vec![u64::MAX; ranks * r.banks as usize],
            acts: vec![VecDeque::with_capacity(64); ranks],
            activations: 0,
        }
    }

    /// The (channel, rank index, bank index, row) of the line at `addr`.
    fn map(&self, addr: u64, channels: u64) -> (usize, usize, usize, u64) {
        let (ranks, banks) = (self.cfg.ranks, self.cfg.banks);
        let chunk = addr / self.line_bytes / self.cfg.row_lines;
        let ch = chunk % channels;
        let rest = chunk / channels;
        let rank = ch * ranks as u64 + rest % ranks as u64;
        let rest = rest / ranks as u64;
        let bank = rank * banks as u64 + rest % banks as u64;
        (
            ch as usize,
            rank as usize,
            bank as usize,
            rest / banks as u64,
        )
    }

    /// The earliest time at or after `a` at which rank `acts` can take one more activation:
    /// none of its activations closer than tRRD, and no window of tFAW holding five. Returns
    /// the time and the index it goes in at (after every activation before it).
    ///
    /// The activations are sorted, so a time `t` between `acts[i - 1]` and `acts[i]` is
    /// allowed exactly when `t - acts[i - 1] >= tRRD`, `acts[i] - t >= tRRD`, and each of the
    /// five runs of five consecutive activations `t` joins spans tFAW: `t - acts[i - 4]` and
    /// `acts[i + 3] - t` (bounds on `t`), and `acts[i] - acts[i - 3]`, `acts[i + 1] -
    /// acts[i - 2]`, `acts[i + 2] - acts[i - 1]` (not depending on `t`); a bound on a missing
    /// activation does not apply. So each gap allows an interval of times, and the answer is
    /// the lower end of the first gap from `a` on whose interval is not empty: the least of
    /// the times allowed, as trying `a` and every activation's time plus tRRD or tFAW in
    /// increasing order gives it (the reference model's `naive_activation`; the test below).
    /// Under stream pressure a line often arrives behind a rank booked solid, and the gaps
    /// between are passed one comparison each: the earlier search, which rebuilt the
    /// activations within tFAW for every time it tried, with two binary searches of the
    /// ring, took a third of a stream-pressure window's time with rows (`perf`, 2026-12-01).
    fn earliest(acts: &VecDeque<u64>, a: u64, rrd: u64, faw: u64) -> (u64, usize) {
        let n = acts.len();
        // The first activation at or after `a` (arrivals come in about time order, so it is
        // most often near the end).
        let lo = first_from_back(n, |j| acts[j] < a);
        let at =
            |k: isize| -> Option<u64> { (k >= 0 && (k as usize) < n).then(|| acts[k as usize]) };
        for i in lo..=n {
            let k = i as isize;
            let mut low = a;
            if let Some(x) = at(k - 1) {
                low = low.max(x + rrd);
            }
            if let Some(x) = at(k - 4) {
                low = low.max(x + faw);
            }
            let spans = |first: isize, last: isize| match (at(first), at(last)) {
                (Some(f), Some(l)) => l - f >= faw,
                _ => true,
            };
            let fits_before = |x: Option<u64>, d: u64| x.is_none_or(|x| x >= low + d);
            if fits_before(at(k), rrd)
                && fits_before(at(k + 3), faw)
                && spans(k - 3, k)
                && spans(k - 2, k + 1)
                && spans(k - 1, k + 2)
            {
                return (low, i);
            }
        }
        unreachable!("the gap after the last activation always allows a time")
    }
}

/// The first of `len` indices at which `before` is false, where it is true for a prefix and
/// false after: a gallop back from the end brackets it in a few steps when it is near the end
/// (the channels' calendars and the ranks' activations, whose arrivals come in about time
/// order), and a binary search inside the bracket finds it.
#[inline(always)]
fn first_from_back(len: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi, mut step) = (0, len, 1);
    while hi > 0 {
        let j = hi.saturating_sub(step);
        if before(j) {
            lo = j + 1;
            break;
        }
        hi = j;
        step *= 2;
    }
    while lo < hi {
        let m = lo + (hi - lo) / 2;
        if before(m) {
            lo = m + 1;
        } else {
            hi = m;
        }
    }
    lo
}

impl DramState {
    pub(crate) fn new(cfg: &DramConfig, frequency_mhz: f64) -> DramState {
        DramState {
            busy: vec![VecDeque::with_capacity(256); cfg.channels as usize],
            line: cfg.line_cycles_fixed(frequency_mhz),
            writebacks: cfg.writebacks,
            pending: Vec::with_capacity(64),
            answers: Vec::with_capacity(64),
            read_addrs: Vec::with_capacity(64),
            rows: cfg
                .rows(frequency_mhz)
                .map(|r| Rows::new(r, cfg.channels, cfg.line_bytes as u64)),
            ..DramState::default()
        }
    }

    /// The earliest start at or after `a` where one line fits on channel `busy`, and the
    /// index its interval goes in at.
    fn fit(busy: &VecDeque<(u64, u64)>, a: u64, line: u64) -> (u64, usize) {
        // The ring is most often in one piece (it wraps once per turn of its room): searched
        // as a slice, without the ring's index arithmetic on every probe.
        match busy.as_slices() {
            (whole, []) => Self::fit_within(whole, whole.len(), a, line),
            _ => Self::fit_within(busy, busy.len(), a, line),
        }
    }

    /// `fit` over the `len` reservations of a calendar in one piece or around its ring.
    fn fit_within<C>(busy: &C, len: usize, a: u64, line: u64) -> (u64, usize)
    where
        C: std::ops::Index<usize, Output = (u64, u64)> + ?Sized,
    {
        // The first reservation ending after `a` (the ends rise along the calendar). Arrivals
        // come in about time order, so it is most often at or near the back (a binary search
        // over the whole calendar, thousands of reservations under stream pressure, was a
        // quarter of such a run's time).
        let mut i = first_from_back(len, |j| busy[j].1 <= a);
        let mut start = a;
        while i < len && busy[i].0 < start + line {
            start = start.max(busy[i].1);
            i += 1;
        }
        (start, i)
    }

    /// One line arriving at `a`, reserved; returns its start. Without row activations (or
    /// without its address) the earliest start on any channel (the lowest of equals). With
    /// them its address's channel, and a line to a row its bank has not open first takes an
    /// activation (`Rows::earliest`), which opens it; the transfer starts at the first gap
    /// from then on.
    fn reserve(&mut self, a: u64, addr: Option<u64>) -> u64 {
        let (ch, (start, at)) = match (&mut self.rows, addr) {
            (Some(r), Some(addr)) => {
                let (ch, rank, bank, row) = r.map(addr, self.busy.len() as u64);
                let mut t = a;
                if r.open[bank] != row {
                    let at;
                    (t, at) = Rows::earliest(&r.acts[rank], a, r.cfg.rrd, r.cfg.faw);
                    r.acts[rank].insert(at, t);
                    r.open[bank] = row;
                    r.activations += 1;
                }
                (ch, Self::fit(&self.busy[ch], t, self.line))
            }
            _ => {
                // The earliest start, the lowest channel of equals: none starts before `a`,
                // so a channel that takes the line at `a` ends the search.
                let mut best = (0, Self::fit(&self.busy[0], a, self.line));
                for (c, b) in self.busy.iter().enumerate().skip(1) {
                    if best.1 .0 == a {
                        break;
                    }
                    let f = Self::fit(b, a, self.line);
                    if f.0 < best.1 .0 {
                        best = (c, f);
                    }
                }
                best
            }
        };
        let end = start + self.line;
        let b = &mut self.busy[ch];
        // Merge with a neighbour it touches (`fit` leaves the one before ending at or before
        // `start`, the one after beginning at or after `end`), so that every interval stays
        // whole lines end to end (`queue`'s pruning counts lines from an interval's start).
        let before = at > 0 && b[at - 1].1 == start;
        let after = at < b.len() && b[at].0 == end;
        match (before, after) {
            (true, true) => {
                b[at - 1].1 = b[at].1;
                b.remove(at);
            }
            (true, false) => b[at - 1].1 = end,
            (false, true) => b[at].0 = start,
            (false, false) => b.insert(at, (start, end)),
        }
        start
    }

    /// `n` dependent lines of one reference, the first arriving at cycle `arrive`, each next
    /// one `latency` cycles after the one before began: each takes the channel where it can
    /// begin first (the lowest such), at its arrival or at the first gap after it that holds
    /// a line. Returns the cycles the lines waited in all (rounded up to whole cycles). Then
    /// its writebacks (`pending`), which no one waits for: each arrives when the line whose
    /// fill evicted it is answered (its start plus `latency`; at `arrive` if it came before
    /// any line from memory) and takes a place the same way, after all the reference's reads.
    /// With neither, nothing is placed or forgotten.
    pub(crate) fn queue(&mut self, arrive: u64, n: u64, latency: u64) -> u64 {
        if n == 0 && self.pending.is_empty() {
            self.reads = 0;
            self.read_addrs.clear();
            return 0;
        }
        let mut a = arrive << DRAM_FRACTION_BITS;
        let old = a.saturating_sub(DRAM_HORIZON << DRAM_FRACTION_BITS);
        for b in &mut self.busy {
            // The ends rise along the calendar: what ended before `old` is a prefix, most
            // often empty or one interval, popped without a search.
            while b.front().is_some_and(|&(_, e)| e < old) {
                b.pop_front();
            }
            // A merged interval is whole lines end to end: of the first one left, only its
            // lines that end at `old` or later stay, line by line as they were given.
            if let Some(first) = b.front_mut() {
                if first.0 < old {
                    first.0 += ((old - first.0).div_ceil(self.line) - 1) * self.line;
                }
            }
        }
        if let Some(r) = &mut self.rows {
            // An activation older than the horizon is forgotten too.
            for acts in &mut r.acts {
                while acts.front().is_some_and(|&x| x < old) {
                    acts.pop_front();
                }
            }
        }
        let mut waited = 0u64;
        self.answers.clear();
        self.answers.push(a);
        for i in 0..n as usize {
            let addr = self.read_addrs.get(i).copied();
            let start = self.reserve(a, addr);
            waited += start - a;
            self.queued_lines += (start > a) as u64;
            a = start + (latency << DRAM_FRACTION_BITS);
            self.answers.push(a);
        }
        self.lines += n;
        let cycles = waited.div_ceil(1 << DRAM_FRACTION_BITS);
        self.queue_cycles += cycles;
        for i in 0..self.pending.len() {
            // A count past the reference's reads (a technique's read the channels do not
            // place) arrives with its last.
            let (k, addr) = self.pending[i];
            let k = (k as usize).min(n as usize);
            self.reserve(self.answers[k], Some(addr));
        }
        self.writeback_lines += self.pending.len() as u64;
        self.pending.clear();
        self.reads = 0;
        self.read_addrs.clear();
        cycles
    }
}

/// How far ahead `load_writing_back` asks for a set: the next line of a 64-byte-line stream.
const NEXT_LINE_BYTES: u64 = 64;

impl System {
    /// The queueing of `lines` lines from memory of one reference of hardware thread `cpu`,
    /// issued at cycle `arrive` (`DramState::queue`); 0 on a machine without `timing.dram`.
    /// With writebacks pending and no line, they are placed from `arrive` on.
    #[inline]
    pub(crate) fn dram_wait(&mut self, arrive: u64, lines: u64) -> u64 {
        match &mut self.dram {
            Some(d) => d.queue(arrive, lines, self.mem_latency),
            None => 0,
        }
    }

    /// Places the writebacks of a technique's operation or an event on hardware thread `cpu`
    /// (its loads' evictions, a flush's `flushed` dirty lines) from its clock on: none of
    /// them waits for a read the channels place. (Those of a technique's loads that do not
    /// settle them, `kernel_access`'s, are placed when the next reference begins.)
    pub(crate) fn settle_writebacks(&mut self, cpu: usize, flushed: u64) {
        if let Some(d) = &mut self.dram {
            if d.writebacks {
                // (A machine with row activations has no flushed level: `MachineConfig::validate`.)
                d.pending.extend((0..flushed).map(|_| (0, 0)));
                let now = self.cpus[cpu].clock;
                d.queue(now, 0, self.mem_latency);
            }
        }
    }

    /// Loads `addr` through a cache path as `load` does, on a machine with `timing.dram` and
    /// its writebacks (`DramConfig::writebacks`) or row activations (a line from memory's
    /// address kept for them, `DramState::read_addrs`). With writebacks, a store dirties the path's first level only
    /// (the levels below take the line clean, so that a dirty line has one owner on the path);
    /// a level that evicts a dirty line writes it back to the first level below it on the path
    /// that holds the line (marked dirty there: no fill, no replacement change), or, if none
    /// does, to memory: a line for the channels (`DramState::pending`), after the line whose
    /// fill evicted it. A shared level's eviction is the evicting reference's, whoever dirtied
    /// the line: its time, on the one set of channels every agent shares.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn load_writing_back(
        caches: &mut [Cache],
        path: &[CacheRef],
        stats: &mut UnitStats,
        addr: u64,
        write: bool,
        mem_source: usize,
        mem_latency: u64,
        dram: &mut dram::DramState,
    ) -> (u64, usize) {
        let first = dram.pending.len();
        let wb = dram.writebacks;
        // The stream stressors' references come here, each a line from memory and each its
        // stream's next line; for a large L3 (over 1 MiB of tags: `worth_prefetching`) the
        // host waits for the state of the line's set, beyond its own L1 and L2. The next
        // line's set is asked for now (a hint: nothing simulated changes), so that the
        // stream's next access finds it in the host's caches: -5% CPU on a graph500 window
        // under two stream stressors (docs/lab/engine-performance.md, 2026-11-30). For other
        // references the hint is a few wasted instructions.
        for r in path {
            let c = &caches[r.cache];
            if c.worth_prefetching() {
                c.prefetch(addr.wrapping_add(NEXT_LINE_BYTES));
            }
        }
        for (i, r) in path.iter().enumerate() {
            let (outcome, victim) = caches[r.cache].access_victim(addr, write && (i == 0 || !wb));
            if Self::count_level(&mut stats.cache[r.stat], outcome) {
                return (caches[r.cache].config.latency, r.stat);
            }
            if let (Some(v), true) = (victim, wb) {
                let below = &path[i + 1..];
                if !below
                    .iter()
                    .any(|b| caches[b.cache].mark_dirty_if_present(v))
                {
                    dram.pending.push((dram.reads, v));
                }
            }
        }
        // From memory: the evictions of its fills wait for this line, whose address the row
        // activations need.
        dram.reads += 1;
        dram.read_addrs.push(addr);
        for k in &mut dram.pending[first..] {
            k.0 = dram.reads;
        }
        (mem_latency, mem_source)
    }

    /// `Stats::dram`: the channels' counts, on a machine with `timing.dram`.
    pub(crate) fn dram_stats(&self) -> Option<crate::stats::DramStats> {
        self.dram.as_ref().map(|d| crate::stats::DramStats {
            lines: d.lines,
            queued_lines: d.queued_lines,
            queue_cycles: d.queue_cycles,
            writeback_lines: d.writeback_lines,
            activations: d.rows.as_ref().map_or(0, |r| r.activations),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `reserve` (a calendar of touching lines merged, searched by galloping back from its
    /// end) places every line where a calendar that keeps each reservation apart
    /// and searches it from the front places it (`RefDram::place`'s rule), for arrivals in
    /// about time order with stragglers, on a channel kept busy.
    #[test]
    fn placements_match_a_calendar_that_keeps_every_reservation() {
        let line = 1894; // 7.4 cycles in 1/256 cycles
        let mut d = DramState {
            busy: vec![VecDeque::new(); 2],
            line,
            ..Default::default()
        };
        let mut kept: Vec<Vec<(u64, u64)>> = vec![Vec::new(); 2];
        let (mut x, mut now) = (0x9E37_79B9_7F4A_7C15u64, 0u64);
        for _ in 0..6000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += x % 1100;
            let a = if x % 5 == 0 {
                now.saturating_sub(x % 60_000)
            } else {
                now
            };
            let want = kept
                .iter()
                .enumerate()
                .map(|(ch, given)| {
                    let mut start = a;
                    while let Some(&(_, end)) =
                        given.iter().find(|&&(s, e)| s < start + line && e > start)
                    {
                        start = end;
                    }
                    (start, ch)
                })
                .min()
                .expect("a channel");
            kept[want.1].push((want.0, want.0 + line));
            assert_eq!(d.reserve(a, None), want.0, "arrival {a}");
        }
        assert!(d.busy.iter().map(VecDeque::len).sum::<usize>() < 6000 / 4);
    }

    /// `Rows::earliest` gives the time a scan of every activation gives (tried at the
    /// arrival, then at each activation's time plus tRRD or tFAW, in order, until none is
    /// closer than tRRD and no five within tFAW: the reference model's `naive_activation`
    /// rule) and the index after every activation at or before it, on a rank kept busy with
    /// arrivals in about time order and stragglers from far back, in a ring that wraps.
    #[test]
    fn earliest_agrees_with_trying_every_time_in_order() {
        // (tRRD, tFAW, the arrivals' largest gap): a saturated rank (bursts of four tRRD
        // apart, then tFAW), and ranks loaded less, where four activations within tFAW but
        // not five, and gaps of every length, occur.
        for (rrd, faw, gap) in [
            (11u64, 83u64, 30u64),
            (11, 83, 60),
            (3, 40, 25),
            (7, 90, 45),
        ] {
            let naive = |acts: &[u64], a: u64| -> u64 {
                let ok = |t: u64| {
                    let mut all: Vec<u64> = acts.to_vec();
                    all.push(t);
                    all.sort_unstable();
                    acts.iter().all(|&x| x.abs_diff(t) >= rrd)
                        && all.windows(5).all(|w| w[4] - w[0] >= faw)
                };
                let mut tries: Vec<u64> = acts
                    .iter()
                    .flat_map(|&x| [x + rrd, x + faw])
                    .filter(|&c| c > a)
                    .collect();
                tries.push(a);
                tries.sort_unstable();
                tries
                    .into_iter()
                    .find(|&t| ok(t))
                    .expect("a time after them all")
            };
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ gap;
            let mut acts: VecDeque<u64> = VecDeque::with_capacity(16);
            let mut now = 0u64;
            for k in 0..3000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                now += x % gap;
                let a = if x.is_multiple_of(7) {
                    now.saturating_sub(x % 900)
                } else {
                    now
                };
                let flat: Vec<u64> = acts.iter().copied().collect();
                let want = naive(&flat, a);
                let at = flat.partition_point(|&y| y <= want);
                assert_eq!(
                    Rows::earliest(&acts, a, rrd, faw),
                    (want, at),
                    "tRRD {rrd}, tFAW {faw}, arrival {a}, step {k}"
                );
                acts.insert(at, want);
                // Forget the oldest as the horizon does, so that the ring wraps.
                while acts.len() > 40 {
                    acts.pop_front();
                }
            }
        }
    }

    /// `fit` finds what a scan from the calendar's front finds, wherever the first
    /// reservation ending after the arrival lies (at the back, a few from it, far from it), on
    /// calendars of every length up to 100, in one piece and wrapped
    /// around their ring, with gaps of less than a line, a line and more.
    #[test]
    fn fit_agrees_with_a_scan_from_the_front_at_every_depth() {
        let line = 1894;
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for len in 0..100usize {
            let mut busy = VecDeque::new();
            let mut t = next() % 4000;
            for _ in 0..len {
                let gap =
                    [0, 1 + next() % (line - 1), line, line + next() % 5000][next() as usize % 4];
                t += gap;
                let end = t + line * (1 + next() % 3);
                busy.push_back((t, end));
                t = end;
            }
            // Half the calendars wrapped: room for 128, front moved past the ring's end.
            if len % 2 == 1 {
                let mut ring = VecDeque::with_capacity(128);
                for _ in 0..(128 - len / 2) {
                    ring.push_back((0, 0));
                }
                for _ in 0..(128 - len / 2) {
                    ring.pop_front();
                }
                ring.extend(busy.iter().copied());
                busy = ring;
            }
            for _ in 0..200 {
                let a = next() % (t + 2 * line + 1);
                let mut i = busy.iter().position(|&(_, e)| e > a).unwrap_or(len);
                let mut start = a;
                while i < len && busy[i].0 < start + line {
                    start = start.max(busy[i].1);
                    i += 1;
                }
                assert_eq!(
                    DramState::fit(&busy, a, line),
                    (start, i),
                    "len {len}, arrival {a}"
                );
            }
        }
    }
}
