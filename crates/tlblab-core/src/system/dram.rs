//! The DRAM channels every hardware thread shares (`timing.dram`, `DramConfig` has the rules
//! and their sources): when each channel is free again, and what the lines that waited for
//! one cost. Only the general path comes here, and only on a machine with `timing.dram`
//! (`System::timed_memory`); a machine without it executes what it did before.

use super::*;
use crate::machine::{DramConfig, DRAM_FRACTION_BITS};

/// The channels' state: per channel, the time (fixed point, `DRAM_FRACTION_BITS`) it is free
/// again; and the counts `Stats::dram` reports. `free` is allocated once, one per channel.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DramState {
    pub(crate) free: Vec<u64>,
    /// Fixed-point cycles one line occupies a channel (`DramConfig::line_cycles_fixed`).
    pub(crate) line: u64,
    pub(crate) lines: u64,
    pub(crate) queued_lines: u64,
    pub(crate) queue_cycles: u64,
}

impl DramState {
    pub(crate) fn new(cfg: &DramConfig, frequency_mhz: f64) -> DramState {
        DramState {
            free: vec![0; cfg.channels as usize],
            line: cfg.line_cycles_fixed(frequency_mhz),
            ..DramState::default()
        }
    }

    /// `n` dependent lines of one reference, the first arriving at cycle `arrive`, each next
    /// one `latency` cycles after the one before began: each takes the channel free first,
    /// from its arrival or when that channel is free, whichever is later. Returns the cycles
    /// the lines waited in all (rounded up to whole cycles).
    pub(crate) fn queue(&mut self, arrive: u64, n: u64, latency: u64) -> u64 {
        let mut a = arrive << DRAM_FRACTION_BITS;
        let mut waited = 0u64;
        for _ in 0..n {
            let (ch, free) = self
                .free
                .iter()
                .copied()
                .enumerate()
                .min_by_key(|&(i, f)| (f, i))
                .expect("a channel");
            let start = a.max(free);
            self.free[ch] = start + self.line;
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
