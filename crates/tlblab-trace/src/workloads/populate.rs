//! `populate=1`: the workload touches every page of its regions before its measured phase, as
//! the seeds' programs do (seed 001 §5.2: each benchmark allocates and initialises its data,
//! then runs the measured kernel; Linux's `MAP_POPULATE` or an initialisation loop).
//!
//! The population is an initialisation loop: one 8-byte store per 4 KiB page of every region
//! the workload announces (`Event::Region`) before its first access, in address order, by the
//! thread of that first access. So each page is mapped on first touch, its page-table entries
//! are built, and the TLBs and caches see the loop as they would see the program's own. Then a
//! `PhaseBegin` of `ROI_REGION` begins the region of interest: the statistics cover the
//! measured phase alone (`Stats::warmup` says what the population cost), as `--warmup` does.
//! A store per 4 KiB page touches every page of a region mapped with larger pages too.

use crate::record::{Event, Record, ROI_REGION};
use crate::source::RecordSource;
use crate::workloads::gen::store;

/// The parameter every workload that announces its regions accepts.
pub const PARAM: (&str, u64, &str) = (
    "populate",
    0,
    "1: touch every 4 KiB page of the regions first (an initialisation loop, as MAP_POPULATE), then begin the region of interest",
);

/// Stores per `fill` call at most, so a many-gigabyte region streams in bounded memory.
const CHUNK: usize = 32_768;

const PAGE: u64 = 4096;

/// Wraps a workload's records with its population (module doc).
pub struct Populate {
    inner: Box<dyn RecordSource + Send>,
    /// Records pulled from `inner` and not yet passed on; those before `held_limit` may go
    /// out now (the events before the first access; everything once the stores are out).
    held: Vec<Record>,
    held_pos: usize,
    held_limit: usize,
    /// Regions announced before the first access: (start, len).
    regions: Vec<(u64, u64)>,
    state: State,
}

enum State {
    /// Passing events on, collecting regions, until the first access.
    Before,
    /// Emitting the stores: region index, next address, thread.
    Storing {
        region: usize,
        next: u64,
        thread: u32,
    },
    /// Population over (ROI begun): the rest of the workload.
    After,
}

impl Populate {
    pub fn new(inner: Box<dyn RecordSource + Send>) -> Self {
        Populate {
            inner,
            held: Vec::new(),
            held_pos: 0,
            held_limit: 0,
            regions: Vec::new(),
            state: State::Before,
        }
    }

    /// Appends up to `room` stores of the population, then the region of interest's mark;
    /// returns how many records.
    fn stores(&mut self, out: &mut Vec<Record>, room: usize) -> usize {
        let State::Storing {
            region,
            next,
            thread,
        } = &mut self.state
        else {
            return 0;
        };
        let mut n = 0;
        while n < room && *region < self.regions.len() {
            let (start, len) = self.regions[*region];
            let end = start + len;
            *next = (*next).max(start);
            while n < room && *next < end {
                out.push(store(*thread, *next, 8));
                *next += PAGE;
                n += 1;
            }
            if *next >= end {
                *region += 1;
            }
        }
        if *region >= self.regions.len() && n < room {
            out.push(Record::Event(Event::PhaseBegin { region: ROI_REGION }));
            n += 1;
            self.state = State::After;
            self.held_limit = self.held.len();
        }
        n
    }
}

impl RecordSource for Populate {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let mut n = 0;
        while n < max {
            if self.held_pos < self.held_limit {
                let k = (self.held_limit - self.held_pos).min(max - n);
                out.extend_from_slice(&self.held[self.held_pos..self.held_pos + k]);
                self.held_pos += k;
                n += k;
                continue;
            }
            match self.state {
                State::Before => {
                    self.held.clear();
                    self.held_pos = 0;
                    if self.inner.fill(&mut self.held, CHUNK)? == 0 {
                        // A workload with no access at all: nothing to populate.
                        self.state = State::After;
                        self.held_limit = 0;
                        continue;
                    }
                    self.held_limit = self.held.len();
                    for (i, r) in self.held.iter().enumerate() {
                        match *r {
                            Record::Event(Event::Region { start, len, .. }) => {
                                self.regions.push((start.0, len))
                            }
                            Record::Access(a) => {
                                // Regions may overlap or repeat: the loop touches each page once.
                                self.regions.sort_unstable();
                                self.regions.dedup();
                                self.state = State::Storing {
                                    region: 0,
                                    next: 0,
                                    thread: a.thread.0,
                                };
                                self.held_limit = i;
                                break;
                            }
                            Record::Event(_) => {}
                        }
                    }
                }
                State::Storing { .. } => n += self.stores(out, (max - n).min(CHUNK)),
                State::After => {
                    let got = self.inner.fill(out, max - n)?;
                    if got == 0 {
                        break;
                    }
                    n += got;
                }
            }
        }
        Ok(n)
    }

    fn len_hint(&self) -> Option<u64> {
        let pages: u64 = self.regions.iter().map(|r| r.1.div_ceil(PAGE)).sum();
        self.inner.len_hint().map(|h| h + pages + 1)
    }

    fn region_names(&self) -> Vec<String> {
        self.inner.region_names()
    }

    fn skip_accesses(&mut self, n: u64) -> Result<u64, String> {
        if !matches!(self.state, State::After) {
            return Ok(0);
        }
        let held = &self.held[..self.held_limit];
        let mut k = crate::workloads::gen::skip_buffered(held, &mut self.held_pos, n);
        if k < n && self.held_pos >= self.held_limit {
            k += self.inner.skip_accesses(n - k)?;
        }
        Ok(k)
    }
}

/// The accesses of a populated workload's measured phase (everything after its region-of-interest
/// mark), counted without simulating them: passed by the source's own `skip_accesses` where it
/// can (a generator's `Generator::skip`: canneal_read counts its lines without drawing them), read
/// and counted where it cannot. Seed 001's windows are spread over this span
/// (python/tlblab/seeds/s001_pt_baker/runs.py, `measured_span`). 0 for a source with no mark.
/// `stop` is asked between steps (a skip of at most `SKIP_STEP` accesses, or a batch read): when
/// it says so the count fails with "interrupted" (Ctrl-C in the Python binding, whose call of a
/// whole phase at the seed's size takes seconds).
pub fn measured_accesses(
    src: &mut dyn RecordSource,
    stop: Option<fn() -> bool>,
) -> Result<u64, String> {
    const SKIP_STEP: u64 = 1 << 24;
    let stopped = || -> Result<(), String> {
        match stop {
            Some(f) if f() => Err("interrupted".into()),
            _ => Ok(()),
        }
    };
    let accesses =
        |rs: &[Record]| rs.iter().filter(|r| matches!(r, Record::Access(_))).count() as u64;
    let mut buf = Vec::with_capacity(CHUNK);
    let mut n = loop {
        stopped()?;
        buf.clear();
        if src.fill(&mut buf, CHUNK)? == 0 {
            return Ok(0);
        }
        let mark = buf
            .iter()
            .position(|r| matches!(r, Record::Event(Event::PhaseBegin { region: ROI_REGION })));
        if let Some(at) = mark {
            break accesses(&buf[at + 1..]);
        }
    };
    loop {
        stopped()?;
        let skipped = src.skip_accesses((u64::MAX - n).min(SKIP_STEP))?;
        n += skipped;
        if skipped > 0 {
            continue;
        }
        buf.clear();
        if src.fill(&mut buf, CHUNK)? == 0 {
            return Ok(n);
        }
        n += accesses(&buf);
    }
}
