//! The reference's timing beyond latencies summed: the overlap model (misses in flight), the
//! DRAM channels' queue and the write buffer's writebacks.

use super::*;

/// The DRAM channels under `timing.dram` (`DramConfig`'s rules): per channel, every line it
/// was ever given, as (start, end) in 1/2^DRAM_FRACTION_BITS cycles, in no order.
#[derive(Clone, Debug)]
pub(super) struct RefDram {
    pub(super) given: Vec<Vec<(u64, u64)>>,
    pub(super) line: u64,
    /// Lines read, lines that waited, cycles waited, lines written back, row activations.
    pub(super) counts: [u64; 5],
    /// `DramConfig::writebacks`.
    pub(super) writebacks: bool,
    /// The writebacks not placed yet, each as the count of lines read from memory when its
    /// eviction happened, and that count (`DramConfig`'s writeback rules).
    pub(super) pending: Vec<(u64, u64)>,
    pub(super) reads: u64,
    /// The addresses of the lines read from memory not placed yet, in order.
    pub(super) read_addrs: Vec<u64>,
    /// Row activations (`DramConfig::rows`): the configuration, the bytes of a line, each
    /// bank's open row (by channel, rank, bank), each rank's activations (by channel, rank).
    pub(super) rows: Option<RefRows>,
}

/// `RefDram::rows`: the configuration, the bytes of a line, each bank's open row (by channel,
/// rank, bank), each rank's activations (by channel, rank).
pub(super) type RefRows = (
    crate::machine::DramRows,
    u64,
    Vec<Option<u64>>,
    Vec<Vec<u64>>,
);

impl RefDram {
    /// One line arriving at `arrive`: without row activations (or its address) on the
    /// channel where it can begin first (the lowest of equals); with them on its address's
    /// channel, after an activation if its bank has another row open. Its start is the first
    /// at which it overlaps no line that channel was given.
    pub(super) fn place(&mut self, arrive: u64, addr: Option<u64>) -> u64 {
        let channels = self.given.len() as u64;
        let mut from = arrive;
        let mut only = None;
        if let (Some((r, line_bytes, open, acts)), Some(addr)) = (&mut self.rows, addr) {
            // Rows of `row_lines` lines go to channel 0, 1, ..., then the next rank, then the
            // next bank.
            let chunk = addr / *line_bytes / r.row_lines;
            let ch = chunk % channels;
            let rank = ch * r.ranks as u64 + (chunk / channels) % r.ranks as u64;
            let bank = rank * r.banks as u64 + (chunk / channels / r.ranks as u64) % r.banks as u64;
            let row = chunk / channels / r.ranks as u64 / r.banks as u64;
            if open[bank as usize] != Some(row) {
                from = naive_activation(&acts[rank as usize], arrive, r.rrd, r.faw);
                acts[rank as usize].push(from);
                open[bank as usize] = Some(row);
                self.counts[4] += 1;
            }
            only = Some(ch as usize);
        }
        let mut best: Option<(u64, usize)> = None;
        for (ch, given) in self.given.iter().enumerate() {
            if only.is_some_and(|o| o != ch) {
                continue;
            }
            let mut start = from;
            while let Some(&(_, end)) = given
                .iter()
                .find(|&&(s, e)| s < start + self.line && e > start)
            {
                start = end;
            }
            if best.is_none_or(|(b, _)| start < b) {
                best = Some((start, ch));
            }
        }
        let (start, ch) = best.expect("a channel");
        self.given[ch].push((start, start + self.line));
        start
    }
}

/// The first time at or after `arrive` at which a rank that took activations `acts` can take
/// another: none closer than `rrd` to it, and no five, it included, within less than `faw`.
/// Tried at `arrive`, then at every activation's time plus `rrd` or `faw` after it, in order.
pub(super) fn naive_activation(acts: &[u64], arrive: u64, rrd: u64, faw: u64) -> u64 {
    let ok = |t: u64| {
        let mut all: Vec<u64> = acts.to_vec();
        all.push(t);
        all.sort_unstable();
        acts.iter().all(|&x| x.abs_diff(t) >= rrd) && all.windows(5).all(|w| w[4] - w[0] >= faw)
    };
    let mut tries: Vec<u64> = acts
        .iter()
        .flat_map(|&x| [x + rrd, x + faw])
        .filter(|&c| c > arrive)
        .collect();
    tries.push(arrive);
    tries.sort_unstable();
    tries
        .into_iter()
        .find(|&t| ok(t))
        .expect("past every activation, a time is free")
}

impl ReferenceModel {
    /// The cycles a reference of in-order latency `lat` costs hardware thread `cpu` under
    /// `timing.mlp` (`MlpConfig`'s rules): a reference of a thread not marked independent
    /// waits for every miss in flight, then takes its latency; a marked one waits while the
    /// oldest miss in flight is `window` references back, and, if it is long, while no slot
    /// (and, if it walked, no walker: one is held for the `walk` cycles to its walk's end) is
    /// free, each time until the earliest that frees it; a long one then goes in flight and
    /// costs only the waits. With `steady_state`, a marked `first_level` hit costs only its
    /// issue: the n-th such fetch of the hardware thread ends floor(n / width) cycles of it.
    pub(super) fn overlapped(
        &mut self,
        cpu: usize,
        lat: u64,
        lines: u64,
        walk: Option<u64>,
        first_level: bool,
        fetch: bool,
    ) -> u64 {
        let m = self.config.timing.mlp.expect("timing.mlp");
        let long = lines > 0;
        let marked = self.cpus[cpu]
            .current
            .is_some_and(|t| self.independent.contains(&t));
        // A record's n-th reference on this hardware thread issues after the program's
        // instructions before it: the core's work reaches floor(n * instructions / width).
        let mut work = 0;
        if m.issue_instructions != 0 && self.stepping_record {
            let (i, w) = (m.issue_instructions as u64, m.issue_width as u64);
            let n = &mut self.issued[cpu];
            *n += 1;
            work = *n * i / w - (*n - 1) * i / w;
        }
        let now = self.cpus[cpu].clock + work;
        // A record's reference takes its producer (`Event::Depends`), marked or not.
        let back = if self.stepping_record {
            std::mem::take(&mut self.completions[cpu].1) as u64
        } else {
            0
        };
        if !marked {
            let t = self.in_flight_done(cpu, now);
            return work + t - now + lat + self.dram_queue(t, lines);
        }
        let (flight, refs) = &mut self.in_flight[cpu];
        *refs += 1;
        let refs = *refs;
        let mut t = now;
        // `Event::Depends`: a record's reference whose address came from the marked reference
        // `back` before it issues when that one has completed; one further back than the
        // window rounded up to a power of two (at most 4096) counts as complete. A data
        // reference waits alone; a fetch holds the core until then.
        let (done, _) = &self.completions[cpu];
        let horizon = (m.window as u64).next_power_of_two().min(4096);
        let mut ready = 0;
        if back != 0 && back < horizon && back < refs {
            ready = done[(refs - back - 1) as usize];
        }
        self.waited[cpu] |= back != 0;
        if fetch {
            t = t.max(ready);
        }
        // Once references wait for producers, the reference `window` back (at most the
        // horizon) must have retired: it and every one before it complete.
        let back = (m.window as u64).min(horizon);
        if self.waited[cpu] && back < refs {
            t = t.max(
                done[..(refs - back) as usize]
                    .iter()
                    .copied()
                    .max()
                    .unwrap_or(0),
            );
        }
        loop {
            flight.retain(|f| f.0 > t);
            let oldest = flight.iter().min_by_key(|f| f.1).copied();
            if let Some(o) = oldest.filter(|o| refs - o.1 >= m.window as u64) {
                t = t.max(o.0);
                continue;
            }
            if long && flight.len() >= m.miss_slots as usize {
                t = t.max(flight.iter().map(|f| f.0).min().expect("full"));
                continue;
            }
            let walking: Vec<u64> = flight.iter().map(|f| f.2).filter(|&w| w > t).collect();
            if long && walk.is_some() && walking.len() >= m.walkers as usize {
                t = t.max(*walking.iter().min().expect("walkers busy"));
                continue;
            }
            break;
        }
        // Its lines queue from when it issues (its producer's value there); the wait
        // lengthens its time in flight.
        let start = t.max(ready);
        let wait = self.dram_queue(start, lines);
        self.completions[cpu].0.push(start + lat + wait);
        if !long {
            if m.steady_state && first_level {
                let mut issue = 0;
                if fetch {
                    let n = &mut self.issued[cpu];
                    *n += 1;
                    let w = m.issue_width as u64;
                    issue = *n / w - (*n - 1) / w;
                }
                return work + t - now + issue;
            }
            if start > t {
                return work + t - now;
            }
            return work + t - now + lat + wait;
        }
        self.in_flight[cpu].0.push((
            start + lat + wait,
            refs,
            walk.map_or(0, |w| start + w + wait),
        ));
        work + t - now
    }

    /// `lines` dependent lines from memory, the first arriving at cycle `at`, each next one
    /// `memory.latency` after the one before began, on the DRAM channels (`timing.dram`):
    /// each where it can begin first over every line the channels were given (the lowest
    /// channel of equals); returns the cycles they waited, rounded up. 0 without
    /// `timing.dram`.
    pub(crate) fn dram_queue(&mut self, at: u64, lines: u64) -> u64 {
        let latency = self.config.memory.latency;
        let Some(d) = &mut self.dram else {
            return 0;
        };
        if lines == 0 && d.pending.is_empty() {
            // Nothing to place: nothing placed and nothing forgotten.
            d.reads = 0;
            d.read_addrs.clear();
            return 0;
        }
        let unit = 1u64 << crate::machine::DRAM_FRACTION_BITS;
        let mut arrive = at * unit;
        let mut waited = 0;
        // What ended more than the horizon before this arrival is forgotten, as the engine
        // forgets it (`DRAM_HORIZON`): a late arrival from further back finds it free.
        let horizon = crate::machine::DRAM_HORIZON * unit;
        for given in &mut d.given {
            given.retain(|&(_, e)| e + horizon >= arrive);
        }
        if let Some((_, _, _, acts)) = &mut d.rows {
            for a in acts {
                a.retain(|&x| x + horizon >= arrive);
            }
        }
        // When each read line is answered: [0] is the reference's start.
        let mut answered = vec![arrive];
        let addrs = std::mem::take(&mut d.read_addrs);
        for i in 0..lines as usize {
            let start = d.place(arrive, addrs.get(i).copied());
            if start > arrive {
                d.counts[1] += 1;
                waited += start - arrive;
            }
            arrive = start + latency * unit;
            answered.push(arrive);
            d.counts[0] += 1;
        }
        let cycles = waited.div_ceil(unit);
        d.counts[2] += cycles;
        // Then the writebacks, after every read: each from the answer of the line whose
        // fill evicted it (a count past the reads placed here: from the last one).
        for (k, addr) in std::mem::take(&mut d.pending) {
            d.place(answered[(k as usize).min(lines as usize)], Some(addr));
            d.counts[3] += 1;
        }
        d.reads = 0;
        cycles
    }

    /// Writebacks of a technique's operation or an event on hardware thread `cpu`, and
    /// `flushed` dirty lines a flush wrote, placed from its clock on.
    pub(crate) fn settle_writebacks(&mut self, cpu: usize, flushed: u64) {
        let now = self.cpus[cpu].clock;
        if let Some(d) = &mut self.dram {
            if d.writebacks {
                d.pending
                    .extend(std::iter::repeat_n((0, 0), flushed as usize));
                self.dram_queue(now, 0);
            }
        }
    }

    /// The DRAM channels' counts since the run began (`Stats::dram`: lines, lines that
    /// waited, cycles waited, lines written back, row activations), with `timing.dram`.
    pub fn dram_counts(&self) -> Option<[u64; 5]> {
        self.dram.as_ref().map(|d| d.counts)
    }

    /// When every miss hardware thread `cpu` has in flight has completed, from `now`, and,
    /// once its references wait for producers, every marked reference (one waiting for its
    /// producer is in flight too); the misses are then gone.
    fn in_flight_done(&mut self, cpu: usize, now: u64) -> u64 {
        let (flight, _) = &mut self.in_flight[cpu];
        let mut t = flight.iter().fold(now, |t, f| t.max(f.0));
        flight.clear();
        if self.waited[cpu] {
            t = self.completions[cpu].0.iter().fold(t, |t, &d| t.max(d));
        }
        t
    }

    /// Hardware thread `cpu` waits for every miss it has in flight (`timing.mlp`).
    pub(super) fn wait_in_flight(&mut self, cpu: usize) {
        let now = self.cpus[cpu].clock;
        let t = self.in_flight_done(cpu, now);
        self.counters[cpu].cycles += t - now;
        self.cpus[cpu].clock = t;
    }
}
