//! A first-level data cache's automatic stride prefetcher, as ARM describes the Cortex-A7's
//! (Cortex-A7 MPCore TRM, DDI 0464D §6.5.2 "Data prefetching and monitoring"): it "monitors
//! cache misses", "recognizes a sequence of three data cache misses at a fixed stride pattern
//! that lies in four cache lines, plus or minus", and then "starts linefills in the
//! background"; "intervening stores or loads that hit in the data cache do not interfere". How
//! far ahead is the Auxiliary Control Register's L1PCTL (1, 2 or 3 outstanding prefetches on
//! the Cortex-A5, DDI 0434B Table 4.44, whose prefetcher ARM describes in the same words:
//! "0x0, 0x40, 0x80, then [it] will begin to fetch 0xC0, 0x100, etc.", knowledge article
//! ka15338).
//!
//! Modelled, per cache instance, on its line addresses (physical for a physically indexed
//! level): the last three misses; when they are one stride `d` apart, 0 < |d| <= `window_lines`,
//! a stream starts and the `degree` lines after the third miss are filled; then every access
//! (hit or miss) to the line the stream expects next moves it on one line and keeps `degree`
//! lines filled ahead of that access. Fills stay within the 4 KiB page of the access that asks
//! for them (the TRM does not say; a physical stream cannot know the next frame). A fill goes
//! down the path as a load would, to the first level that holds the line, and is free: the
//! linefills run "in the background", their cycles and their occasional drops are not modelled,
//! nor counted as accesses. Default off (`CacheConfig::prefetch` absent).
//!
//! With `streams` above 1, one such stream per 4 KiB page, for the `streams` pages most
//! recently missed in (least recently used first out), each trained by the misses in its own
//! page only: Intel's L2 streamer as the Intel 64 and IA-32 Architectures Optimization
//! Reference Manual (248966) describes it: it "detects and maintains up to 32 streams of data
//! accesses. For each 4K byte page, you can maintain one forward and one backward stream", the
//! lines it prefetches "must be in the same 4K page", and it "can run up to 20 lines ahead of
//! the load request" (modelled: one stream a page, either way; it sits on the level-1 cache
//! here, whose next-line prefetcher the same manual describes, so a streamed line is a
//! first-level hit, its fill free as above). One stream over any lines (`streams` 1) is the
//! Cortex-A7's, as before.

use serde::{Deserialize, Serialize};

/// `[cache.prefetch]`: a stride prefetcher on a level-1 data cache.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefetchConfig {
    /// Lines filled ahead of the stream (the ACTLR's L1PCTL: 1 to 3 outstanding prefetches).
    pub degree: u16,
    /// The largest stride recognized, in lines either way (§6.5.2: four).
    #[serde(default = "default_window")]
    pub window_lines: u16,
    /// Streams followed at once: 1 (the default), one over any lines (the Cortex-A7's); more,
    /// one per 4 KiB page for that many pages (module doc: Intel's streamer, 32).
    #[serde(default = "default_streams", skip_serializing_if = "is_one")]
    pub streams: u16,
}

fn default_streams() -> u16 {
    1
}

fn is_one(n: &u16) -> bool {
    *n == 1
}

fn default_window() -> u16 {
    4
}

impl PrefetchConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=8).contains(&self.degree) {
            return Err(format!(
                "prefetch.degree must be 1 to 8 lines (got {})",
                self.degree
            ));
        }
        if !(1..=64).contains(&self.window_lines) {
            return Err(format!(
                "prefetch.window_lines must be 1 to 64 (got {})",
                self.window_lines
            ));
        }
        if !(1..=MAX_STREAMS).contains(&self.streams) {
            return Err(format!(
                "prefetch.streams must be 1 to {MAX_STREAMS} (got {})",
                self.streams
            ));
        }
        Ok(())
    }
}

/// The most streams a prefetcher follows (`PrefetchConfig::streams`).
pub const MAX_STREAMS: u16 = 64;

/// The stream a prefetcher follows: the line it expects next, its stride in lines, and the
/// last line it filled.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stream {
    next: u64,
    stride: i64,
    ahead: u64,
}

/// One stream's training and state: the last misses' lines, oldest first (`seen` of them
/// valid), and the stream once three of them were one stride apart.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct OneStream {
    misses: [u64; 3],
    seen: u8,
    stream: Option<Stream>,
}

/// One prefetcher's state (module doc): its stream over any lines (`streams` 1), or, with
/// `streams` above 1, the followed pages' streams, the most recently missed in first (the
/// first `npages` of `pages`). A fixed array: nothing is allocated per access.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct StrideState {
    one: OneStream,
    pages: [(u64, OneStream); MAX_STREAMS as usize],
    npages: u8,
}

impl Default for StrideState {
    fn default() -> Self {
        StrideState {
            one: OneStream::default(),
            pages: [(0, OneStream::default()); MAX_STREAMS as usize],
            npages: 0,
        }
    }
}

impl StrideState {
    /// Observes one access of `line` through the cache, which `missed` it or hit; writes the
    /// lines to fill into `out` and returns how many (at most `degree`). `page_lines`: the
    /// lines of a 4 KiB page.
    pub fn observe(
        &mut self,
        cfg: &PrefetchConfig,
        line: u64,
        missed: bool,
        page_lines: u64,
        out: &mut [u64; 8],
    ) -> usize {
        let stream = if cfg.streams > 1 {
            match self.page_stream(cfg, line / page_lines, missed) {
                Some(s) => s,
                // A page is followed from its first miss; a hit in another page trains nothing.
                None => return 0,
            }
        } else {
            &mut self.one
        };
        stream.observe_stream(cfg, line, missed, page_lines, out)
    }

    /// With a stream per 4 KiB page (`PrefetchConfig::streams` above 1): `page`'s stream, moved
    /// first (the least recently used last, the next to go); a page not followed yet gets one
    /// at a miss (a free place or the last one's), none at a hit.
    #[inline(never)]
    fn page_stream(
        &mut self,
        cfg: &PrefetchConfig,
        page: u64,
        missed: bool,
    ) -> Option<&mut OneStream> {
        let n = self.npages as usize;
        let i = match self.pages[..n].iter().position(|(p, _)| *p == page) {
            Some(i) => i,
            None if !missed => return None,
            None => {
                let i = if n < cfg.streams as usize {
                    self.npages += 1;
                    n
                } else {
                    n - 1
                };
                self.pages[i] = (page, OneStream::default());
                i
            }
        };
        self.pages[..=i].rotate_right(1);
        Some(&mut self.pages[0].1)
    }
}

impl OneStream {
    /// `observe` for one stream over any lines (the Cortex-A7's).
    fn observe_stream(
        &mut self,
        cfg: &PrefetchConfig,
        line: u64,
        missed: bool,
        page_lines: u64,
        out: &mut [u64; 8],
    ) -> usize {
        if let Some(s) = &mut self.stream {
            if line == s.next {
                s.next = line.wrapping_add_signed(s.stride);
                return Self::run_ahead(s, cfg, line, page_lines, out);
            }
        }
        if !missed {
            return 0;
        }
        self.misses = [self.misses[1], self.misses[2], line];
        self.seen = (self.seen + 1).min(3);
        if self.seen < 3 {
            return 0;
        }
        let d1 = self.misses[1].wrapping_sub(self.misses[0]) as i64;
        let d2 = line.wrapping_sub(self.misses[1]) as i64;
        if d1 != d2 || d1 == 0 || d1.unsigned_abs() > cfg.window_lines as u64 {
            return 0;
        }
        let s = self.stream.insert(Stream {
            next: line.wrapping_add_signed(d1),
            stride: d1,
            ahead: line,
        });
        Self::run_ahead(s, cfg, line, page_lines, out)
    }

    /// Fills up to `degree` lines past `line` along the stream, in `line`'s page.
    fn run_ahead(
        s: &mut Stream,
        cfg: &PrefetchConfig,
        line: u64,
        page_lines: u64,
        out: &mut [u64; 8],
    ) -> usize {
        // Lines already filled ahead of this access (none if the stream fell behind it).
        let filled = (s.ahead.wrapping_sub(line) as i64) / s.stride;
        if filled < 0 {
            s.ahead = line;
        }
        let page = line / page_lines;
        let mut n = 0;
        while (s.ahead.wrapping_sub(line) as i64) / s.stride < cfg.degree as i64 {
            let cand = s.ahead.wrapping_add_signed(s.stride);
            if cand / page_lines != page {
                break;
            }
            out[n] = cand;
            n += 1;
            s.ahead = cand;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: PrefetchConfig = PrefetchConfig {
        degree: 3,
        window_lines: 4,
        streams: 1,
    };

    fn run(st: &mut StrideState, line: u64, missed: bool) -> Vec<u64> {
        let mut out = [0; 8];
        let n = st.observe(&CFG, line, missed, 64, &mut out);
        out[..n].to_vec()
    }

    #[test]
    fn given_three_misses_one_line_apart_then_the_next_three_lines_are_filled() {
        let mut st = StrideState::default();
        assert!(run(&mut st, 0, true).is_empty());
        assert!(run(&mut st, 1, true).is_empty());
        assert_eq!(run(&mut st, 2, true), vec![3, 4, 5]);
        // A hit on the expected line keeps three ahead: one more line.
        assert_eq!(run(&mut st, 3, false), vec![6]);
    }

    #[test]
    fn given_a_stride_beyond_four_lines_or_misses_between_then_nothing_is_filled() {
        let mut st = StrideState::default();
        for l in [0, 5, 10, 15] {
            assert!(run(&mut st, l, true).is_empty());
        }
        let mut st = StrideState::default();
        // Two interleaved streams, each of stride 1: no three consecutive misses share one.
        for i in 0..8 {
            assert!(run(&mut st, i, true).is_empty());
            assert!(run(&mut st, 1000 + 64 * i, true).is_empty());
        }
    }

    #[test]
    fn given_a_stream_at_a_page_end_then_the_fills_stop_at_the_page() {
        let mut st = StrideState::default();
        run(&mut st, 59, true);
        run(&mut st, 60, true);
        assert_eq!(run(&mut st, 61, true), vec![62, 63]);
        let mut st = StrideState::default();
        run(&mut st, 70, true);
        run(&mut st, 68, true);
        assert_eq!(run(&mut st, 66, true), vec![64]);
    }

    fn run_cfg(cfg: &PrefetchConfig, st: &mut StrideState, line: u64, missed: bool) -> Vec<u64> {
        let mut out = [0; 8];
        let n = st.observe(cfg, line, missed, 64, &mut out);
        out[..n].to_vec()
    }

    #[test]
    fn given_two_streams_a_page_each_interleaved_then_each_is_followed() {
        let cfg = PrefetchConfig { streams: 2, ..CFG };
        let mut st = StrideState::default();
        // Pages 0 and 10, line by line, interleaved: each page's third miss starts its stream.
        let mut filled = Vec::new();
        for i in 0..3 {
            filled.push(run_cfg(&cfg, &mut st, i, true));
            filled.push(run_cfg(&cfg, &mut st, 640 + i, true));
        }
        assert_eq!(filled[4], vec![3, 4, 5]);
        assert_eq!(filled[5], vec![643, 644, 645]);
        assert!(filled[..4].iter().all(|f| f.is_empty()));
        // A third page's miss pushes out the least recently used (page 0): its stream is
        // gone, page 10's goes on.
        run_cfg(&cfg, &mut st, 64 * 20, true);
        assert!(run_cfg(&cfg, &mut st, 3, false).is_empty());
        assert_eq!(run_cfg(&cfg, &mut st, 643, false), vec![646]);
    }

    #[test]
    fn given_one_stream_a_page_then_it_ends_at_the_page_and_the_next_page_trains_anew() {
        let cfg = PrefetchConfig { streams: 4, ..CFG };
        let mut st = StrideState::default();
        run_cfg(&cfg, &mut st, 58, true);
        run_cfg(&cfg, &mut st, 59, true);
        assert_eq!(run_cfg(&cfg, &mut st, 60, true), vec![61, 62, 63]);
        // The page's last lines are filled: its stream has nothing more to fill.
        assert!(run_cfg(&cfg, &mut st, 61, false).is_empty());
        // Line 64 is the next page's: its first miss trains that page's stream, fills nothing.
        assert!(run_cfg(&cfg, &mut st, 64, true).is_empty());
        assert!(run_cfg(&cfg, &mut st, 65, true).is_empty());
        assert_eq!(run_cfg(&cfg, &mut st, 66, true), vec![67, 68, 69]);
    }
}
