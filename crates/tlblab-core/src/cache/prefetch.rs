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

use serde::{Deserialize, Serialize};

/// `[cache.prefetch]`: a stride prefetcher on a level-1 data cache.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefetchConfig {
    /// Lines filled ahead of the stream (the ACTLR's L1PCTL: 1 to 3 outstanding prefetches).
    pub degree: u32,
    /// The largest stride recognized, in lines either way (§6.5.2: four).
    #[serde(default = "default_window")]
    pub window_lines: u32,
}

fn default_window() -> u32 {
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
        Ok(())
    }
}

/// The stream a prefetcher follows: the line it expects next, its stride in lines, and the
/// last line it filled.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stream {
    next: u64,
    stride: i64,
    ahead: u64,
}

/// One prefetcher's state (module doc).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct StrideState {
    /// The last misses' lines, oldest first; `seen` of them are valid.
    misses: [u64; 3],
    seen: u8,
    stream: Option<Stream>,
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
}
