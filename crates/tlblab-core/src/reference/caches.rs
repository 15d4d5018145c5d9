//! The reference's caches and page-walk caches on the naive sets (`parts.rs`): a cache level
//! of lines with a dirty bit and its flushes, a page-walk cache of (level, prefix) keys.

use super::parts::NaiveSets;

/// A cache level: lines with a dirty bit.
pub(super) struct NaiveCache {
    pub(super) sets: NaiveSets<(u64, bool)>,
    pub(super) nsets: u64,
    pub(super) line: u64,
    pub(super) latency: u64,
    pub(super) virtual_indexed: bool,
    /// Flush cost: fixed, per valid line, per dirty line.
    pub(super) flush_costs: [u64; 3],
    /// A ranged flush's cost per line address of the range.
    pub(super) range_cost: u64,
    /// Its stride prefetcher, if it has one (`CacheConfig::prefetch`).
    pub(super) prefetch: Option<crate::cache::prefetch::PrefetchConfig>,
    pub(super) prefetcher: NaivePrefetcher,
}

/// The reference's stride prefetcher, from ARM DDI 0464D §6.5.2 as `cache::prefetch`'s module
/// doc reads it: the misses in a list; when the last three are one stride of at most
/// `window_lines` lines apart, a stream; an access to the line the stream expects next moves
/// it on; each keeps `degree` lines filled ahead of the access, within its 4 KiB page.
/// With `streams` above 1, one such prefetcher per 4 KiB page in a list, the page most
/// recently missed in first, at most `streams` long.
#[derive(Default)]
pub(super) struct NaivePrefetcher {
    misses: Vec<u64>,
    /// (the line expected next, the stride, the last line filled)
    stream: Option<(u64, i64, u64)>,
    pages: Vec<(u64, NaivePrefetcher)>,
}

impl NaivePrefetcher {
    /// The lines to fill after an access of `line` that `missed` (or hit).
    pub(super) fn lines_after(
        &mut self,
        cfg: &crate::cache::prefetch::PrefetchConfig,
        line: u64,
        missed: bool,
        page_lines: u64,
    ) -> Vec<u64> {
        if cfg.streams > 1 {
            let page = line / page_lines;
            let mut entry = match self.pages.iter().position(|(p, _)| *p == page) {
                Some(i) => self.pages.remove(i),
                None if !missed => return Vec::new(),
                None => {
                    if self.pages.len() == cfg.streams as usize {
                        self.pages.pop();
                    }
                    (page, NaivePrefetcher::default())
                }
            };
            let lines = entry.1.lines_after_one(cfg, line, missed, page_lines);
            self.pages.insert(0, entry);
            return lines;
        }
        self.lines_after_one(cfg, line, missed, page_lines)
    }

    /// `lines_after` of one stream over any lines.
    fn lines_after_one(
        &mut self,
        cfg: &crate::cache::prefetch::PrefetchConfig,
        line: u64,
        missed: bool,
        page_lines: u64,
    ) -> Vec<u64> {
        let on_stream = matches!(self.stream, Some((next, _, _)) if next == line);
        if on_stream {
            let (next, d, _) = self.stream.as_mut().unwrap();
            *next = (line as i128 + *d as i128) as u64;
        } else {
            if !missed {
                return Vec::new();
            }
            self.misses.push(line);
            if self.misses.len() > 3 {
                self.misses.remove(0);
            }
            let [a, b, c] = match self.misses[..] {
                [a, b, c] => [a as i128, b as i128, c as i128],
                _ => return Vec::new(),
            };
            let d = b - a;
            if c - b != d || d == 0 || d.abs() > cfg.window_lines as i128 {
                return Vec::new();
            }
            self.stream = Some(((c + d) as u64, d as i64, line));
        }
        let (_, d, ahead) = self.stream.as_mut().unwrap();
        let d = *d as i128;
        if (*ahead as i128 - line as i128) / d < 0 {
            *ahead = line;
        }
        let mut out = Vec::new();
        while (*ahead as i128 - line as i128) / d < cfg.degree as i128 {
            let cand = *ahead as i128 + d;
            if cand < 0 || cand as u64 / page_lines != line / page_lines {
                break;
            }
            out.push(cand as u64);
            *ahead = cand as u64;
        }
        out
    }
}

/// What one cache access did.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum CacheOutcome {
    Hit,
    Filled,
    Evicted,
}

impl NaiveCache {
    pub(super) fn new(c: &crate::cache::CacheConfig, seed: u64) -> NaiveCache {
        let nsets = c.size / (c.ways as u64 * c.line);
        NaiveCache {
            sets: NaiveSets::new(
                nsets as usize,
                c.ways,
                c.replacement,
                seed ^ (c.level as u64) << 40,
            ),
            nsets,
            line: c.line,
            latency: c.latency,
            virtual_indexed: c.indexing == crate::cache::Indexing::Virtual,
            flush_costs: [
                c.flush_cycles_base,
                c.flush_cycles_per_line,
                c.flush_cycles_per_dirty_line,
            ],
            range_cost: c.range_flush_cycles_per_line,
            prefetch: c.prefetch,
            prefetcher: NaivePrefetcher::default(),
        }
    }

    pub(super) fn access(&mut self, addr: u64, write: bool) -> CacheOutcome {
        self.access_victim(addr, write).0
    }

    /// `access`, and the address of the line a miss replaced if that line was dirty.
    pub(super) fn access_victim(&mut self, addr: u64, write: bool) -> (CacheOutcome, Option<u64>) {
        let line = addr / self.line;
        let set = (line % self.nsets) as usize;
        if let Some(w) = self.sets.find(set, |&(t, _)| t == line) {
            self.sets.touch(set, w, false);
            let slot = self.sets.slots[set][w].as_mut().unwrap();
            slot.1 |= write;
            return (CacheOutcome::Hit, None);
        }
        match self.sets.fill_replacing(set, (line, write)) {
            Some((old, dirty)) => (CacheOutcome::Evicted, dirty.then_some(old * self.line)),
            None => (CacheOutcome::Filled, None),
        }
    }

    /// Marks the line of `addr` dirty if present (nothing else changes); whether it was.
    pub(super) fn mark_dirty(&mut self, addr: u64) -> bool {
        let line = addr / self.line;
        let set = (line % self.nsets) as usize;
        match self.sets.find(set, |&(t, _)| t == line) {
            Some(w) => {
                self.sets.slots[set][w].as_mut().unwrap().1 = true;
                true
            }
            None => false,
        }
    }

    /// Writes back and invalidates the lines of `start..start+len`, line address by line
    /// address; returns the cost (per line address, and per dirty line) and the dirty lines.
    pub(super) fn flush_range(&mut self, start: u64, len: u64) -> (u64, u64) {
        if len == 0 {
            return (0, 0);
        }
        let (first, last) = (start / self.line, start.saturating_add(len - 1) / self.line);
        let mut dirty = 0;
        for line in first..=last {
            let set = (line % self.nsets) as usize;
            if let Some(w) = self.sets.find(set, |&(t, _)| t == line) {
                dirty += self.sets.slots[set][w].unwrap().1 as u64;
                self.sets.invalidate(set, w);
            }
        }
        (
            (last - first + 1) * self.range_cost + dirty * self.flush_costs[2],
            dirty,
        )
    }

    /// Writes back and invalidates every line; returns the cost and the dirty lines.
    pub(super) fn flush(&mut self) -> (u64, u64) {
        let (mut valid, mut dirty) = (0, 0);
        for set in 0..self.nsets as usize {
            for w in 0..self.sets.ways {
                if let Some((_, d)) = self.sets.slots[set][w] {
                    valid += 1;
                    dirty += d as u64;
                    self.sets.invalidate(set, w);
                }
            }
        }
        let [base, per_line, per_dirty] = self.flush_costs;
        (base + valid * per_line + dirty * per_dirty, dirty)
    }
}

/// A page-walk cache: entries (address space, VA prefix above the level's index).
pub(super) struct NaivePwc {
    pub(super) sets: NaiveSets<(u32, u64)>,
    pub(super) nsets: u64,
    pub(super) level: usize,
    pub(super) latency: u64,
}

impl NaivePwc {
    pub(super) fn new(p: &crate::walker::PwcConfig, seed: u64) -> NaivePwc {
        let ways = p.ways.unwrap_or(p.entries);
        NaivePwc {
            sets: NaiveSets::new(
                p.entries / ways,
                ways,
                p.replacement,
                seed ^ (p.level as u64) << 48,
            ),
            nsets: (p.entries / ways) as u64,
            level: p.level,
            latency: p.latency,
        }
    }

    pub(super) fn lookup(&mut self, space: u32, prefix: u64) -> bool {
        let set = (prefix % self.nsets) as usize;
        match self.sets.find(set, |&k| k == (space, prefix)) {
            Some(w) => {
                self.sets.touch(set, w, false);
                true
            }
            None => false,
        }
    }

    pub(super) fn insert(&mut self, space: u32, prefix: u64) {
        if !self.lookup(space, prefix) {
            let set = (prefix % self.nsets) as usize;
            self.sets.fill(set, (space, prefix));
        }
    }

    /// Drops the entries for which `drop(space)` holds.
    pub(super) fn flush_where(&mut self, drop: impl Fn(u32) -> bool) {
        for set in 0..self.nsets as usize {
            for w in 0..self.sets.ways {
                if self.sets.slots[set][w].is_some_and(|(s, _)| drop(s)) {
                    self.sets.invalidate(set, w);
                }
            }
        }
    }
}
