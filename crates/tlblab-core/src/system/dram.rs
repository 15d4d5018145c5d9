//! The DRAM channels every hardware thread shares (`timing.dram`, `DramConfig` has the rules
//! and their sources): when each channel is free again, and what the lines that waited for
//! one cost. Only the general path comes here, and only on a machine with `timing.dram`
//! (`System::timed_memory`); a machine without it executes what it did before.

use super::*;
use crate::machine::{DramConfig, DRAM_FRACTION_BITS, DRAM_HORIZON};
use std::collections::VecDeque;

/// The channels' state: per channel, its reserved intervals `[start, end)` in fixed point
/// (`DRAM_FRACTION_BITS`), sorted, disjoint, adjacent ones merged; and the counts
/// `Stats::dram` reports. A line may take a gap between reservations (a reference's later
/// lines are reserved ahead of time: the channel is free before them). The calendars keep
/// their room once grown; they are ring buffers because every arrival prunes them from the
/// front (`DRAM_HORIZON`) and most reservations go in near the back (a `Vec` moved its whole
/// calendar on each prune: two thirds of a stream-pressure run's time). Serialized as the
/// same sequences a `Vec` gives.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DramState {
    pub(crate) busy: Vec<VecDeque<(u64, u64)>>,
    /// Fixed-point cycles one line occupies a channel (`DramConfig::line_cycles_fixed`).
    pub(crate) line: u64,
    pub(crate) lines: u64,
    pub(crate) queued_lines: u64,
    pub(crate) queue_cycles: u64,
}

impl DramState {
    pub(crate) fn new(cfg: &DramConfig, frequency_mhz: f64) -> DramState {
        DramState {
            busy: vec![VecDeque::with_capacity(256); cfg.channels as usize],
            line: cfg.line_cycles_fixed(frequency_mhz),
            ..DramState::default()
        }
    }

    /// The earliest start at or after `a` where one line fits on channel `busy`, and the
    /// index its interval goes in at.
    fn fit(busy: &VecDeque<(u64, u64)>, a: u64, line: u64) -> (u64, usize) {
        // An arrival at or after the last reservation's end needs no search.
        let mut i = match busy.back() {
            Some(&(_, e)) if e > a => busy.partition_point(|&(_, e)| e <= a),
            _ => busy.len(),
        };
        let mut start = a;
        while i < busy.len() && busy[i].0 < start + line {
            start = start.max(busy[i].1);
            i += 1;
        }
        (start, i)
    }

    /// `n` dependent lines of one reference, the first arriving at cycle `arrive`, each next
    /// one `latency` cycles after the one before began: each takes the channel where it can
    /// begin first (the lowest such), at its arrival or at the first gap after it that holds
    /// a line. Returns the cycles the lines waited in all (rounded up to whole cycles).
    pub(crate) fn queue(&mut self, arrive: u64, n: u64, latency: u64) -> u64 {
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
        let mut waited = 0u64;
        for _ in 0..n {
            let (ch, (start, at)) = self
                .busy
                .iter()
                .map(|b| Self::fit(b, a, self.line))
                .enumerate()
                .min_by_key(|&(c, (start, _))| (start, c))
                .expect("a channel");
            let end = start + self.line;
            let b = &mut self.busy[ch];
            // Merge with a neighbour it touches (the order and gaps stay as they were).
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
            waited += start - a;
            self.queued_lines += (start > a) as u64;
            a = start + (latency << DRAM_FRACTION_BITS);
        }
        self.lines += n;
        let cycles = waited.div_ceil(1 << DRAM_FRACTION_BITS);
        self.queue_cycles += cycles;
        cycles
    }
}

impl System {
    /// The queueing of `lines` lines from memory of one reference of hardware thread `cpu`,
    /// issued at cycle `arrive` (`DramState::queue`); 0 on a machine without `timing.dram`.
    #[inline]
    pub(crate) fn dram_wait(&mut self, arrive: u64, lines: u64) -> u64 {
        match &mut self.dram {
            Some(d) if lines > 0 => d.queue(arrive, lines, self.mem_latency),
            _ => 0,
        }
    }

    /// `Stats::dram`: the channels' counts, on a machine with `timing.dram`.
    pub(crate) fn dram_stats(&self) -> Option<crate::stats::DramStats> {
        self.dram.as_ref().map(|d| crate::stats::DramStats {
            lines: d.lines,
            queued_lines: d.queued_lines,
            queue_cycles: d.queue_cycles,
        })
    }
}
