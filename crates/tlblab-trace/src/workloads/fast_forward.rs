//! `skip=S,warm=W,take=T[,every=E,windows=K]` (with `populate=1`): a window of a long workload's measured phase, reached by
//! fast-forwarding the generator rather than by simulating the references before it.
//!
//! After the population (`populate.rs`: every page of the regions is mapped, so every page-table
//! entry the rest of the run reads exists), the workload's next `S` accesses are generated and
//! dropped: the generator's own state (a BFS's parent array and queue, a hash table's chains)
//! advances exactly as in the whole run, and nothing is simulated. The next `W` accesses are
//! simulated as a warm-up (the TLBs, page-walk caches and caches fill with the window's own
//! working set: SMARTS's detailed warming, Wunderlich et al., ISCA 2003, §4), then the region of
//! interest begins (the population's `ROI_REGION` mark is moved there) and the run goes on from
//! the workload's `S + W`-th access; with `take=T` the workload ends after `T` accesses of the
//! region of interest (so a window is `T` of the application's own references, whatever a helper
//! thread adds). With `every=E` the window repeats: `K` windows (`windows=K`, 0: as many as the
//! workload holds) begin `E` accesses apart, each a warm-up of `W` and `T` measured accesses, the
//! accesses between them dropped; the region of interest begins with the first window's measured
//! part, and the run's units (`tlblab.sample` with every unit measured) tell the windows apart.
//! With `window_phase=J` each window's last `J` warm-up accesses and its measured part are a
//! phase of `WINDOW_REGION` (a `PhaseBegin` before them, a `PhaseEnd` after the window's last
//! access): a technique whose companion threads run only inside it (pt_baker's `in_windows`)
//! gives them `J` accesses of detailed warming of their own, while the application's warm-up
//! stays `W` (the companions are most of a window's cost, docs/technique-pt_baker.md).
//! Events (non-access records) are never dropped. A source that can advance past accesses
//! without making them (`RecordSource::skip_accesses`: a generator's own `Generator::skip`, as
//! graph500_list's, graph500_bfs's, gapbs_bc's and hash_join's, which advance their state
//! without writing the records) is asked to first, so its state at the window is the same as
//! if every skipped access had been generated.
//!
//! This is how seed 001's runs at the footprints of its Table 5.2 are measured in windows spread
//! over their measured phase (python/tlblab/seeds/s001_pt_baker/experiments.py, `windows`): the
//! references between two windows would cost the full model minutes each and change nothing the
//! window reads but the caches' and TLBs' contents, which the warm-up refills.

use crate::record::{Event, Record, ROI_REGION, WINDOW_REGION};
use crate::source::RecordSource;

/// The window parameters' names.
pub const SKIP: &str = "skip";
pub const WARM: &str = "warm";
pub const TAKE: &str = "take";
pub const EVERY: &str = "every";
pub const WINDOWS: &str = "windows";
pub const WINDOW_PHASE: &str = "window_phase";

/// The parameters every workload with `populate` accepts: (name, default, meaning).
#[rustfmt::skip]
pub const PARAMS: [(&str, u64, &str); 6] = [
    (SKIP, 0, "with populate=1: accesses after the population generated and not simulated (fast-forward)"),
    (WARM, 0, "with populate=1: accesses simulated after the skip before the region of interest begins"),
    (TAKE, 0, "with populate=1: accesses in the region of interest, then the workload ends (0: to its end)"),
    (EVERY, 0, "with take: the window repeats every this many accesses (0: one window)"),
    (WINDOWS, 0, "with every: windows in all, then the workload ends (0: as many as it holds)"),
    (WINDOW_PHASE, 0, "with take: each window's last this many warm-up accesses and its measured part are a phase named window (0: none; at most warm)"),
];

const CHUNK: usize = 32_768;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Before the population's region-of-interest mark: everything passes.
    Population,
    /// Dropping accesses (`skip` left).
    Skipping,
    /// Passing accesses as the warm-up (`warm` left).
    Warming,
    /// The region of interest: everything passes (`take` accesses left, when it is not 0).
    Measured,
    /// `take` accesses measured: the workload ends.
    Over,
}

/// Wraps a populated workload (module doc).
pub struct FastForward {
    inner: Box<dyn RecordSource + Send>,
    skip: u64,
    warm: u64,
    take: u64,
    /// The window's shape, for its repeats: (warm, take, every), and the windows still to begin.
    shape: (u64, u64, u64),
    windows_left: u64,
    mark_sent: bool,
    /// `window_phase`: the warm-up accesses left when a window's phase begins (0: no phase),
    /// whether one is open, and whether its end is due before the next record.
    phase: u64,
    phase_open: bool,
    phase_end_due: bool,
    stage: Stage,
    /// The region-of-interest mark is due before the next record.
    mark_due: bool,
    buf: Vec<Record>,
    pos: usize,
    done: bool,
}

impl FastForward {
    /// `every` > 0 needs `take` > 0 and `every >= warm + take` (`workloads::build` checks).
    pub fn new(
        inner: Box<dyn RecordSource + Send>,
        skip: u64,
        warm: u64,
        take: u64,
        every: u64,
        windows: u64,
    ) -> Self {
        FastForward {
            inner,
            skip,
            warm,
            take,
            shape: (warm, take, every),
            windows_left: if every == 0 {
                0
            } else {
                windows.wrapping_sub(1)
            },
            mark_sent: false,
            phase: 0,
            phase_open: false,
            phase_end_due: false,
            stage: Stage::Population,
            mark_due: false,
            buf: Vec::new(),
            pos: 0,
            done: false,
        }
    }

    /// Marks each window's last `accesses` warm-up accesses and its measured part as a phase
    /// of `WINDOW_REGION` (module doc); 0: none. `workloads::build` checks `accesses <= warm`.
    pub fn with_window_phase(mut self, accesses: u64) -> Self {
        self.phase = accesses;
        self
    }

    /// The next stage once the current one has nothing left; the mark falls due on entering
    /// the region of interest.
    fn advance(&mut self) {
        loop {
            let next = match self.stage {
                Stage::Skipping if self.skip == 0 => Stage::Warming,
                Stage::Warming if self.warm == 0 => Stage::Measured,
                _ => return,
            };
            if next == Stage::Measured && !self.mark_sent {
                self.mark_due = true;
                self.mark_sent = true;
            }
            self.stage = next;
        }
    }
}

impl RecordSource for FastForward {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let mut n = 0;
        while n < max && (self.stage != Stage::Over || self.phase_end_due) {
            if self.phase_end_due {
                out.push(Record::Event(Event::PhaseEnd {
                    region: WINDOW_REGION,
                }));
                self.phase_end_due = false;
                self.phase_open = false;
                n += 1;
                continue;
            }
            if self.phase > 0
                && !self.phase_open
                && self.stage == Stage::Warming
                && self.warm == self.phase
            {
                out.push(Record::Event(Event::PhaseBegin {
                    region: WINDOW_REGION,
                }));
                self.phase_open = true;
                n += 1;
                continue;
            }
            if self.mark_due {
                out.push(Record::Event(Event::PhaseBegin { region: ROI_REGION }));
                self.mark_due = false;
                n += 1;
                continue;
            }
            if self.pos == self.buf.len() {
                if self.done {
                    break;
                }
                if self.stage == Stage::Skipping {
                    // A generator that can advance past accesses without writing them does.
                    let k = self.inner.skip_accesses(self.skip)?;
                    if k > 0 {
                        self.skip -= k;
                        self.advance();
                        continue;
                    }
                }
                self.buf.clear();
                self.pos = 0;
                if self.inner.fill(&mut self.buf, CHUNK)? == 0 {
                    self.done = true;
                }
                continue;
            }
            let r = self.buf[self.pos];
            self.pos += 1;
            match (self.stage, r) {
                (Stage::Population, Record::Event(Event::PhaseBegin { region: ROI_REGION })) => {
                    // The population is over: the mark is held back until the warm-up is done.
                    self.stage = Stage::Skipping;
                    self.advance();
                }
                (Stage::Skipping, Record::Access(_)) => {
                    self.skip -= 1;
                    self.advance();
                }
                (Stage::Warming, Record::Access(_)) => {
                    out.push(r);
                    n += 1;
                    self.warm -= 1;
                    self.advance();
                }
                (Stage::Measured, Record::Access(_)) if self.take > 0 => {
                    out.push(r);
                    n += 1;
                    self.take -= 1;
                    if self.take == 0 {
                        self.phase_end_due = self.phase_open;
                        let (warm, take, every) = self.shape;
                        if every == 0 || self.windows_left == 0 {
                            self.stage = Stage::Over;
                        } else {
                            // The next window: what is left of the period, dropped.
                            self.windows_left -= 1;
                            (self.skip, self.warm, self.take) = (every - warm - take, warm, take);
                            self.stage = Stage::Skipping;
                            self.advance();
                        }
                    }
                }
                _ => {
                    out.push(r);
                    n += 1;
                }
            }
        }
        Ok(n)
    }

    fn len_hint(&self) -> Option<u64> {
        self.inner.len_hint().map(|h| h.saturating_sub(self.skip))
    }

    fn region_names(&self) -> Vec<String> {
        self.inner.region_names()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::{build, parse_spec};

    fn records(spec: &str) -> Vec<Record> {
        let (name, params) = parse_spec(spec).unwrap();
        let mut src = build(&name, &params, 1).unwrap();
        let mut out = Vec::new();
        while src.fill(&mut out, 1000).unwrap() > 0 {}
        out
    }

    fn accesses_after_roi(rs: &[Record]) -> (usize, Vec<Record>) {
        let at = rs
            .iter()
            .position(|r| matches!(r, Record::Event(Event::PhaseBegin { region: ROI_REGION })))
            .expect("a region of interest");
        let before = rs[..at]
            .iter()
            .filter(|r| matches!(r, Record::Access(_)))
            .count();
        (
            before,
            rs[at + 1..]
                .iter()
                .filter(|r| matches!(r, Record::Access(_)))
                .copied()
                .collect(),
        )
    }

    #[test]
    fn given_skip_and_warm_then_the_roi_begins_at_the_same_access_as_the_whole_runs_offset() {
        let spec = "graph500_bfs:scale=10,roots=1,populate=1";
        let whole = records(spec);
        let (pop, measured) = accesses_after_roi(&whole);
        let ff = records(&format!("{spec},skip=1000,warm=300"));
        let (_, taken) =
            accesses_after_roi(&records(&format!("{spec},skip=1000,warm=300,take=50")));
        assert_eq!(taken[..], measured[1300..1350]);
        let (before, rest) = accesses_after_roi(&ff);
        // The population and the warm-up are before the mark; the skipped accesses are gone.
        assert_eq!(before, pop + 300);
        assert_eq!(rest[..], measured[1300..]);
        // Exactly one mark.
        let marks = ff
            .iter()
            .filter(|r| matches!(r, Record::Event(Event::PhaseBegin { region: ROI_REGION })))
            .count();
        assert_eq!(marks, 1);
    }

    #[test]
    fn given_window_phase_then_each_window_is_one_phase_of_its_last_warm_up_and_measured_accesses()
    {
        let spec = "graph500_bfs:scale=10,roots=1,populate=1";
        let window = "skip=100,warm=20,take=30,every=200,windows=3";
        let plain = records(&format!("{spec},{window}"));
        let marked = records(&format!("{spec},{window},window_phase=8"));
        let is_window = |r: &Record| {
            matches!(
                r,
                Record::Event(Event::PhaseBegin {
                    region: WINDOW_REGION
                }) | Record::Event(Event::PhaseEnd {
                    region: WINDOW_REGION
                })
            )
        };
        // The same records otherwise.
        let without: Vec<Record> = marked.iter().filter(|r| !is_window(r)).copied().collect();
        assert_eq!(without, plain);
        // Each phase: its window's last 8 warm-up accesses and 30 measured ones, the run's
        // last ending with its last access.
        let mut open = None;
        let mut spans = Vec::new();
        let mut accesses = 0;
        for r in &marked {
            match r {
                Record::Event(Event::PhaseBegin {
                    region: WINDOW_REGION,
                }) => open = Some(accesses),
                Record::Event(Event::PhaseEnd {
                    region: WINDOW_REGION,
                }) => spans.push(accesses - open.take().expect("a phase begun")),
                Record::Access(_) => accesses += 1,
                _ => {}
            }
        }
        assert_eq!(spans, vec![38, 38, 38]);
        assert!(open.is_none());
        assert!(is_window(marked.last().expect("records")));
        // A phase longer than the warm-up is refused.
        let (name, params) = parse_spec(&format!("{spec},{window},window_phase=21")).unwrap();
        let err = build(&name, &params, 1).err().expect("an error");
        assert!(err.contains("window_phase <= warm"), "{err}");
    }

    #[test]
    fn given_every_then_each_window_is_its_warm_up_and_take_of_the_whole_runs_accesses() {
        let spec = "graph500_bfs:scale=10,roots=1,populate=1";
        let (_, measured) = accesses_after_roi(&records(spec));
        let (_, rest) = accesses_after_roi(&records(&format!(
            "{spec},skip=100,warm=20,take=30,every=200,windows=3"
        )));
        // After the mark: window 0's take, then windows 1 and 2 each with their warm-up.
        let mut want = measured[120..150].to_vec();
        want.extend_from_slice(&measured[300..350]);
        want.extend_from_slice(&measured[500..550]);
        assert_eq!(rest, want);
    }

    #[test]
    fn given_skip_alone_then_the_roi_begins_right_after_the_skipped_accesses() {
        let spec = "gups:log2_words=12,updates=5000,populate=1";
        let (pop, measured) = accesses_after_roi(&records(spec));
        let (before, rest) = accesses_after_roi(&records(&format!("{spec},skip=777")));
        assert_eq!(before, pop);
        assert_eq!(rest[..], measured[777..]);
    }

    /// Windows of `spec` (one after each skip of `skips`, then windows every `every`) are
    /// the whole run's accesses; the run is bigger than the fast-forward's own buffer
    /// (`CHUNK` records), so that the generator is asked to skip.
    fn assert_windows_are_the_whole_runs(spec: &str, skips: &[usize], every: usize) {
        let (_, measured) = accesses_after_roi(&records(spec));
        let n = measured.len();
        assert!(n > 4 * CHUNK, "{spec}: {n} accesses");
        for &skip in skips.iter().chain(&[n / 3, n / 2, n / 2 + 3, n - 40]) {
            let (_, got) =
                accesses_after_roi(&records(&format!("{spec},skip={skip},warm=7,take=30")));
            let s = skip + 7;
            assert_eq!(got[..], measured[s..(s + 30).min(n)], "{spec}: skip={skip}");
        }
        let (_, got) = accesses_after_roi(&records(&format!(
            "{spec},skip=100,warm=20,take=30,every={every},windows=0"
        )));
        let mut want = measured[120..150].to_vec();
        let mut from = 100 + every;
        while from < n {
            want.extend_from_slice(&measured[from..(from + 50).min(n)]);
            from += every;
        }
        assert_eq!(got, want, "{spec}: every={every}");
    }

    /// hash_join skips whole build rows by itself (its chains linked when the probe begins):
    /// windows in the build (4 accesses a row, 160,000 here), across its end and in the
    /// probe passes are the whole run's.
    #[test]
    fn given_hash_join_skipping_its_build_then_the_windows_are_the_whole_runs() {
        let b = 160_000;
        assert_windows_are_the_whole_runs(
            "hash_join:buckets=4096,inner_rows=40000,outer_rows=5000,iterations=2,populate=1",
            &[
                0,
                1,
                3,
                4,
                5,
                4097,
                100_003,
                b - 10,
                b - 4,
                b - 1,
                b,
                b + 1,
                b + 13_000,
            ],
            997,
        );
    }

    /// canneal_read skips whole netlist lines by itself (each a function of its number): windows
    /// at the start, inside the first lines and far into the file are the whole run's.
    #[test]
    fn given_canneal_read_skipping_whole_lines_then_the_windows_are_the_whole_runs() {
        assert_windows_are_the_whole_runs(
            "canneal_read:elements=3000,degree=6,populate=1",
            &[0, 1, 2, 150, 151, 7_919, 200_000],
            4099,
        );
    }

    /// gapbs_bc and graph500_bfs skip whole search starts and vertices by themselves:
    /// windows at every kind of place (resets, forward BFS, backward sweep, over two sources
    /// or roots) are the whole run's.
    #[test]
    fn given_a_csr_graph_workload_skipping_itself_then_the_windows_are_the_whole_runs() {
        for spec in [
            "gapbs_bc:scale=11,edge_factor=8,sources=2,populate=1",
            "graph500_bfs:scale=11,edge_factor=8,roots=2,populate=1",
        ] {
            assert_windows_are_the_whole_runs(
                spec,
                &[0, 1, 2047, 2048, 2049, 40_000, 100_001],
                9973,
            );
        }
    }

    /// A generator that skips by itself (`Generator::skip`: graph500_list) gives the same
    /// windows as generating and dropping: skips ending in each phase of its construction, at a
    /// search's set-up and inside its searches.
    #[test]
    fn given_a_generator_that_skips_itself_then_the_windows_are_the_whole_runs() {
        let spec = "graph500_list:scale=10,edge_factor=8,roots=2,populate=1";
        let (_, measured) = accesses_after_roi(&records(spec));
        let n = measured.len() as u64;
        // 8192 edges, up to 1024 vertices: the construction's loops end near 16384 (make_graph),
        // 32768 (maxvtx), 34816 (head and deg), 34816 + 14 * 8192 (linking), then maxdeg.
        let mut skips = vec![0, 1, 2, 3, 16383, 16384, 16385, 32767, 32768, 32769, 34000];
        skips.extend([34816, 60_000, 149_000, 149_500, 150_000, 151_000, 152_000]);
        skips.extend([n / 3, n / 2, n / 2 + 1, n - 40]);
        let before = crate::workloads::graph500_list::skipped_by_itself();
        for skip in skips {
            let (_, got) =
                accesses_after_roi(&records(&format!("{spec},skip={skip},warm=7,take=30")));
            let s = skip as usize + 7;
            assert_eq!(
                got[..],
                measured[s..(s + 30).min(measured.len())],
                "skip={skip}"
            );
        }
        let (_, got) = accesses_after_roi(&records(&format!(
            "{spec},skip=100,warm=20,take=30,every=997,windows=0"
        )));
        let mut want = measured[120..150].to_vec();
        let mut w = 1;
        while 100 + 997 * w < measured.len() {
            let from = 100 + 997 * w;
            want.extend_from_slice(&measured[from..(from + 50).min(measured.len())]);
            w += 1;
        }
        assert_eq!(got, want);
        assert!(crate::workloads::graph500_list::skipped_by_itself() > before + n);
    }

    /// graph500_list and gapbs_bc keep their state where a window's skip ended, and keep them
    /// while another workload runs: the next run of the same windows restores
    /// them and makes the same records.
    #[test]
    fn given_windows_of_a_graph_search_then_it_keeps_a_state_a_window_across_other_workloads() {
        use crate::workloads::{gapbs_bc, graph500_list};
        // Keys no other test uses: the states are the process's.
        let cases: [(&str, &dyn Fn() -> usize); 2] = [
            (
                "graph500_list:scale=12,edge_factor=6,roots=3,populate=1",
                &|| graph500_list::kept_states(12, 6),
            ),
            (
                "gapbs_bc:scale=13,edge_factor=8,sources=2,populate=1",
                &|| gapbs_bc::kept_states(13, 8),
            ),
        ];
        for (spec, kept) in cases {
            let (_, measured) = accesses_after_roi(&records(spec));
            let n = measured.len() as u64;
            let windows = format!(
                "{spec},skip={},warm=7,take=30,every={},windows=3",
                n / 6,
                n / 3
            );
            assert_eq!(kept(), 0, "{spec}");
            let first = records(&windows);
            // A state where each window's skip ended (the first window's skip may have passed
            // mostly through records already made, which keeps none).
            let states = kept();
            assert!(
                (2..=3).contains(&states),
                "{spec}: {states} states, of {n} accesses"
            );
            records("gups:log2_words=10,updates=100,populate=1"); // another workload between
            assert_eq!(kept(), states, "{spec}");
            // Restored (a window's skip that finds its state keeps none), the same records.
            assert_eq!(records(&windows), first, "{spec}");
            assert_eq!(kept(), states, "{spec}");
            let s = (n / 6) as usize;
            assert_eq!(
                accesses_after_roi(&first).1[..30],
                measured[s + 7..s + 37],
                "{spec}"
            );
        }
    }

    /// `populate::measured_accesses` counts the measured phase as a whole read does, whether
    /// the generator skips by itself (canneal_read's lines, counted without their hashes;
    /// graph500_list) or is read (gups).
    #[test]
    fn given_a_populated_workload_then_its_measured_accesses_are_the_whole_runs() {
        for spec in [
            "canneal_read:elements=3000,degree=6,populate=1",
            "graph500_list:scale=10,edge_factor=8,roots=2,populate=1",
            "gups:log2_words=14,updates=5000,populate=1",
        ] {
            let (_, measured) = accesses_after_roi(&records(spec));
            let (name, params) = parse_spec(spec).unwrap();
            let mut src = build(&name, &params, 1).unwrap();
            let n = crate::workloads::populate::measured_accesses(&mut *src, None).unwrap();
            assert_eq!(n, measured.len() as u64, "{spec}");
        }
    }
}
