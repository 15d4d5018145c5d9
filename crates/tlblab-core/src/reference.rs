//! A deliberately naive reference model of one core, for differential testing.
//!
//! It implements the same specification as `system` — TLB levels, page-walk caches, walks whose
//! references go through the caches, demand paging in the same frame-allocation order, caches,
//! in-order timing — with the simplest data structures that could work: each set is a `Vec` of
//! entries in recency order, page tables are a `HashMap` from (level, VA prefix) to a table's
//! physical address, a lookup is a linear search. Nothing here is optimized; property tests check
//! that the engine agrees with it access for access (`tests/reference_parity.rs`).
//!
//! Scope: one core, one hardware thread, one address space, no virtualization, x86-64/ARMv8/
//! ARMv7 formats, every replacement policy, index function and page size the engine has.

use crate::machine::MachineConfig;
use crate::memory::FrameAllocator;
use crate::page_table::{LevelGeom, PageTableFormat};
use crate::replacement::ReplacementKind;
use crate::tlb::{IndexFn, TlbKind};
use std::collections::HashMap;
use tlblab_types::{AccessKind, PageSize, SplitMix64, VirtAddr};

/// A set-associative store with naive replacement bookkeeping.
struct NaiveSets<K: PartialEq + Clone> {
    ways: usize,
    /// Per set: slots (None = invalid).
    slots: Vec<Vec<Option<K>>>,
    /// Per set: ways in recency order, most recent last (LRU) or fill order, newest last (FIFO).
    order: Vec<Vec<usize>>,
    /// Per set: tree-PLRU bits, node 1.. (true = victim in upper half).
    plru: Vec<Vec<bool>>,
    kind: ReplacementKind,
    rng: SplitMix64,
}

impl<K: PartialEq + Clone> NaiveSets<K> {
    fn new(sets: usize, ways: usize, kind: ReplacementKind, rng: SplitMix64) -> Self {
        NaiveSets {
            ways,
            slots: vec![vec![None; ways]; sets],
            order: vec![Vec::new(); sets],
            plru: vec![vec![false; ways.max(2)]; sets],
            kind,
            rng,
        }
    }

    fn touch(&mut self, set: usize, way: usize, fill: bool) {
        match self.kind {
            ReplacementKind::Lru => {
                self.order[set].retain(|&w| w != way);
                self.order[set].push(way);
            }
            ReplacementKind::Fifo if fill => {
                self.order[set].retain(|&w| w != way);
                self.order[set].push(way);
            }
            ReplacementKind::Plru => {
                // Walk the implicit tree from the root, pointing each node away from `way`.
                let (mut node, mut lo, mut hi) = (1, 0, self.ways);
                while hi - lo > 1 {
                    let mid = (lo + hi) / 2;
                    if way < mid {
                        self.plru[set][node] = true;
                        node *= 2;
                        hi = mid;
                    } else {
                        self.plru[set][node] = false;
                        node = node * 2 + 1;
                        lo = mid;
                    }
                }
            }
            _ => {}
        }
    }

    fn find(&self, set: usize, pred: impl Fn(&K) -> bool) -> Option<usize> {
        (0..self.ways).find(|&w| self.slots[set][w].as_ref().is_some_and(&pred))
    }

    /// Where a new entry goes: the first invalid way, else the policy's victim among `allowed`.
    fn victim(&mut self, set: usize, allowed: &[bool]) -> Option<usize> {
        if let Some(w) = (0..self.ways).find(|&w| self.slots[set][w].is_none()) {
            return Some(w);
        }
        if !allowed.iter().any(|&a| a) {
            return None;
        }
        Some(match self.kind {
            ReplacementKind::Lru | ReplacementKind::Fifo => {
                // Oldest first; ways never touched since being invalidated count as oldest.
                let untouched =
                    (0..self.ways).find(|&w| allowed[w] && !self.order[set].contains(&w));
                untouched.unwrap_or_else(|| *self.order[set].iter().find(|&&w| allowed[w]).unwrap())
            }
            ReplacementKind::Random => {
                let candidates: Vec<usize> = (0..self.ways).filter(|&w| allowed[w]).collect();
                candidates[self.rng.below(candidates.len() as u64) as usize]
            }
            ReplacementKind::Plru => {
                let (mut node, mut lo, mut hi) = (1, 0, self.ways);
                while hi - lo > 1 {
                    let mid = (lo + hi) / 2;
                    let upper_ok = (mid..hi).any(|w| allowed[w]);
                    let lower_ok = (lo..mid).any(|w| allowed[w]);
                    if (self.plru[set][node] && upper_ok) || !lower_ok {
                        node = node * 2 + 1;
                        lo = mid;
                    } else {
                        node *= 2;
                        hi = mid;
                    }
                }
                lo
            }
        })
    }
}

#[derive(Clone, PartialEq, Debug)]
struct NaiveTlbEntry {
    vpn: u64,
    size: PageSize,
    pfn: u64,
}

struct NaiveTlb {
    sets: NaiveSets<NaiveTlbEntry>,
    nsets: usize,
    index: IndexFn,
    sizes: Vec<PageSize>,
    latency: u64,
}

impl NaiveTlb {
    fn set_of(&self, vpn: u64) -> usize {
        if self.nsets == 1 {
            return 0;
        }
        match &self.index {
            IndexFn::LowBits => (vpn % self.nsets as u64) as usize,
            IndexFn::Bits { bits } => {
                let mut s = 0;
                for (i, b) in bits.iter().enumerate() {
                    if vpn & (1 << (b - 12)) != 0 {
                        s += 1 << i;
                    }
                }
                s
            }
            IndexFn::Xor { a, b } => {
                let w = a.1 - a.0 + 1;
                let ra = (vpn >> (a.0 - 12)) % (1 << w);
                let rb = (vpn >> (b.0 - 12)) % (1 << w);
                (ra ^ rb) as usize
            }
        }
    }

    fn lookup(&mut self, va: u64) -> Option<NaiveTlbEntry> {
        let mut sizes = self.sizes.clone();
        sizes.sort();
        sizes.dedup();
        for size in sizes {
            let vpn = va >> size.shift();
            let set = self.set_of(vpn);
            if let Some(w) = self.sets.find(set, |e| e.vpn == vpn && e.size == size) {
                self.sets.touch(set, w, false);
                return self.sets.slots[set][w].clone();
            }
        }
        None
    }

    /// Returns whether an entry was evicted.
    fn insert(&mut self, e: NaiveTlbEntry) -> bool {
        if !self.sizes.contains(&e.size) {
            return false;
        }
        let set = self.set_of(e.vpn);
        let evicting = self.sets.slots[set].iter().all(|s| s.is_some());
        let allowed = vec![true; self.sets.ways];
        let w = self.sets.victim(set, &allowed).unwrap();
        self.sets.slots[set][w] = Some(e);
        self.sets.touch(set, w, true);
        evicting
    }
}

struct NaiveCache {
    name: String,
    sets: NaiveSets<u64>,
    nsets: u64,
    line: u64,
    latency: u64,
    /// accesses, hits, misses, evictions (a miss whose set had no empty way).
    counts: [u64; 4],
}

struct NaivePwc {
    sets: NaiveSets<(u64, u64)>,
    nsets: u64,
    level: usize,
    latency: u64,
}

/// What the reference model says one access did.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct RefOutcome {
    /// Index of the TLB level (in the path) that hit, or None after a walk.
    pub tlb_hit: Option<usize>,
    /// Where each walk reference was served (cache position in the walk path, or usize::MAX for
    /// memory).
    pub walk_sources: Vec<usize>,
    pub cycles: u64,
}

/// The naive single-core machine.
pub struct ReferenceModel {
    levels: &'static [LevelGeom],
    default_size: PageSize,
    regions: Vec<(u64, u64, PageSize)>,
    frames: FrameAllocator,
    /// (level, VA >> level shift of the table's parent entry) → table base; the root is (0, 0).
    tables: HashMap<(usize, u64), u64>,
    /// (VA >> size shift, size) → frame.
    pages: HashMap<(u64, PageSize), u64>,
    /// One instance per configured level; a unified level is on both paths.
    tlbs: Vec<NaiveTlb>,
    /// Lookup order of the data and instruction paths, as indices into `tlbs`.
    dtlb: Vec<usize>,
    itlb: Vec<usize>,
    /// Unified list of TLBs; d/i paths index into it.
    dcaches: Vec<usize>,
    icaches: Vec<usize>,
    wcaches: Vec<usize>,
    caches: Vec<NaiveCache>,
    pwcs: Vec<NaivePwc>,
    mem_latency: u64,
    walker_latency: u64,
    data_accesses: bool,
    /// False: a TLB-only run (`RunOptions::walks` off).
    walks: bool,
}

impl ReferenceModel {
    /// Builds the reference for `config` (its first core). `caches`/`data_accesses` as in
    /// `RunOptions`. Supports configurations without shared or split-and-unified mixtures at
    /// one level; TLB levels are private.
    pub fn new(
        config: &MachineConfig,
        seed: u64,
        caches_on: bool,
        data_accesses: bool,
    ) -> ReferenceModel {
        let format = config.page_table.format;
        let mut frames = FrameAllocator::new(&config.memory, seed);
        let root_size = if format == PageTableFormat::Armv7Short {
            PageSize::Size16K
        } else {
            PageSize::Size4K
        };
        let root = frames.alloc(root_size).unwrap().0 << 12;
        let mut tables = HashMap::new();
        tables.insert((0, 0), root);

        // The engine seeds each private TLB instance with (seed ^ index << 8 ^ core << 20) and
        // then by level; the random policy's stream must match for parity.
        let mk_tlb = |ci: usize| {
            let t = &config.tlbs[ci];
            let ways = t.ways();
            let tseed = seed ^ ((ci as u64) << 8);
            let rseed = tseed ^ (t.level as u64) << 32;
            NaiveTlb {
                sets: NaiveSets::new(
                    t.sets(),
                    ways,
                    t.replacement,
                    SplitMix64::derive(rseed, "replacement.random"),
                ),
                nsets: t.sets(),
                index: t.index.clone(),
                sizes: t.page_sizes.clone(),
                latency: t.latency,
            }
        };
        let mut order: Vec<usize> = (0..config.tlbs.len()).collect();
        order.sort_by_key(|&i| (config.tlbs[i].level, config.tlbs[i].kind as u8));
        let dtlb_ids: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| config.tlbs[i].kind != TlbKind::Instr)
            .collect();
        let itlb_ids: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| config.tlbs[i].kind != TlbKind::Data)
            .collect();
        let tlbs = (0..config.tlbs.len()).map(mk_tlb).collect();
        let (dtlb, itlb) = (dtlb_ids, itlb_ids);

        let cache_cfgs = if caches_on {
            config.caches.clone()
        } else {
            Vec::new()
        };
        let mut corder: Vec<usize> = (0..cache_cfgs.len()).collect();
        corder.sort_by_key(|&i| (cache_cfgs[i].level, cache_cfgs[i].kind as u8));
        let mut caches = Vec::new();
        let mut pos_of = HashMap::new();
        for &ci in &corder {
            let c = &cache_cfgs[ci];
            let cseed = seed ^ ((ci as u64) << 8) ^ ((c.level as u64) << 40);
            pos_of.insert(ci, caches.len());
            caches.push(NaiveCache {
                name: c.name.clone(),
                counts: [0; 4],
                sets: NaiveSets::new(
                    c.sets() as usize,
                    c.ways,
                    c.replacement,
                    SplitMix64::derive(cseed, "replacement.random"),
                ),
                nsets: c.sets(),
                line: c.line,
                latency: c.latency,
            });
        }
        use crate::cache::CacheKind;
        let path = |want: CacheKind, from: u8| -> Vec<usize> {
            corder
                .iter()
                .filter(|&&ci| {
                    (cache_cfgs[ci].kind == want || cache_cfgs[ci].kind == CacheKind::Unified)
                        && cache_cfgs[ci].level >= from
                })
                .map(|ci| pos_of[ci])
                .collect()
        };
        let mut pwcs: Vec<NaivePwc> = config
            .walker
            .pwcs
            .iter()
            .map(|p| {
                let ways = p.ways();
                let pseed = seed ^ ((p.level as u64) << 48);
                NaivePwc {
                    sets: NaiveSets::new(
                        p.entries / ways,
                        ways,
                        p.replacement,
                        SplitMix64::derive(pseed, "replacement.random"),
                    ),
                    nsets: (p.entries / ways) as u64,
                    level: p.level,
                    latency: p.latency,
                }
            })
            .collect();
        pwcs.sort_by_key(|p| std::cmp::Reverse(p.level));
        ReferenceModel {
            levels: format.levels(),
            default_size: config.page_table.page_size,
            regions: Vec::new(),
            frames,
            tables,
            pages: HashMap::new(),
            tlbs,
            dtlb,
            itlb,
            dcaches: path(CacheKind::Data, 0),
            icaches: path(CacheKind::Instr, 0),
            wcaches: path(CacheKind::Data, config.walker.first_cache_level),
            caches,
            pwcs,
            mem_latency: config.memory.latency,
            walker_latency: config.walker.latency,
            data_accesses,
            walks: true,
        }
    }

    /// The model of a TLB-only run (`RunOptions::walks` off): a miss in every level costs the
    /// walker's latency and fills the page's identity frame; no table is built or read.
    pub fn without_walks(mut self) -> ReferenceModel {
        self.walks = false;
        self.data_accesses = false;
        self.caches.clear();
        self
    }

    /// Each cache level's name and its counters so far: accesses, hits, misses, evictions.
    pub fn cache_counts(&self) -> Vec<(String, [u64; 4])> {
        self.caches
            .iter()
            .map(|c| (c.name.clone(), c.counts))
            .collect()
    }

    pub fn set_region(&mut self, start: u64, len: u64, size: PageSize) {
        self.regions.insert(0, (start, start + len, size));
    }

    fn load(&mut self, path: &[usize], addr: u64, write: bool) -> (u64, usize) {
        let _ = write;
        for (i, &c) in path.iter().enumerate() {
            let cache = &mut self.caches[c];
            let line = addr / cache.line;
            let set = (line % cache.nsets) as usize;
            cache.counts[0] += 1;
            if let Some(w) = cache.sets.find(set, |&t| t == line) {
                cache.sets.touch(set, w, false);
                cache.counts[1] += 1;
                return (cache.latency, i);
            }
            cache.counts[2] += 1;
            if cache.sets.slots[set].iter().all(|s| s.is_some()) {
                cache.counts[3] += 1;
            }
            let allowed = vec![true; cache.sets.ways];
            let w = cache.sets.victim(set, &allowed).unwrap();
            cache.sets.slots[set][w] = Some(line);
            cache.sets.touch(set, w, true);
        }
        (self.mem_latency, usize::MAX)
    }

    fn page_size_for(&self, va: u64) -> PageSize {
        self.regions
            .iter()
            .find(|r| va >= r.0 && va < r.1)
            .map(|r| r.2)
            .unwrap_or(self.default_size)
    }

    fn leaf_level(&self, size: PageSize) -> usize {
        self.levels
            .iter()
            .position(|l| l.leaf_sizes.contains(&size))
            .unwrap()
    }

    /// Table base for `level` on the path of `va`, if the table exists.
    fn table(&self, level: usize, va: u64) -> Option<u64> {
        let key = if level == 0 {
            0
        } else {
            va >> self.levels[level - 1].shift
        };
        self.tables.get(&(level, key)).copied()
    }

    /// The mapped page of `va`, if any: (size, frame base).
    fn mapping(&self, va: u64) -> Option<(PageSize, u64)> {
        for &size in PageSize::ALL.iter() {
            if let Some(&f) = self.pages.get(&(va >> size.shift(), size)) {
                return Some((size, f));
            }
        }
        None
    }

    fn first_touch(&mut self, va: u64) {
        let mut size = self.page_size_for(va);
        let frame = match self.frames.alloc(size) {
            Ok(p) => p.0 << 12,
            Err(_) => {
                size = PageSize::Size4K;
                self.frames.alloc(size).unwrap().0 << 12
            }
        };
        let leaf = self.leaf_level(size);
        for level in 1..=leaf {
            if self.table(level, va).is_none() {
                // Only the ARMv7 root is larger than a frame, and the root already exists.
                let base = self.frames.alloc(PageSize::Size4K).unwrap().0 << 12;
                self.tables
                    .insert((level, va >> self.levels[level - 1].shift), base);
            }
        }
        self.pages.insert((va >> size.shift(), size), frame);
    }

    /// Simulates one reference (no page crossing).
    pub fn access(&mut self, kind: AccessKind, va: u64) -> RefOutcome {
        let mut out = RefOutcome::default();
        let instr = kind == AccessKind::Instr;
        let ntlb = if instr {
            self.itlb.len()
        } else {
            self.dtlb.len()
        };
        let mut hit: Option<(usize, NaiveTlbEntry)> = None;
        for i in 0..ntlb {
            let t = if instr {
                &mut self.tlbs[self.itlb[i]]
            } else {
                &mut self.tlbs[self.dtlb[i]]
            };
            out.cycles += t.latency;
            if let Some(e) = t.lookup(va) {
                hit = Some((i, e));
                break;
            }
        }
        let (entry, fill_upto) = match hit {
            Some((i, e)) => {
                out.tlb_hit = Some(i);
                (e, i)
            }
            None if !self.walks => {
                out.cycles += self.walker_latency;
                let size = self.page_size_for(va);
                (
                    NaiveTlbEntry {
                        vpn: va >> size.shift(),
                        size,
                        pfn: (va >> size.shift()) << (size.shift() - 12),
                    },
                    ntlb,
                )
            }
            None => {
                out.cycles += self.walker_latency;
                // Deepest page-walk-cache hit decides the first level read.
                let mut start = 0;
                for p in 0..self.pwcs.len() {
                    let lvl = self.pwcs[p].level;
                    let prefix = va >> self.levels[lvl].shift;
                    let pw = &mut self.pwcs[p];
                    let set = (prefix % pw.nsets) as usize;
                    if let Some(w) = pw.sets.find(set, |&(s, k)| s == 0 && k == prefix) {
                        pw.sets.touch(set, w, false);
                        out.cycles += pw.latency;
                        start = lvl + 1;
                        break;
                    }
                }
                if self.mapping(va).is_none() {
                    self.first_touch(va);
                }
                let (size, frame) = self.mapping(va).unwrap();
                let leaf = self.leaf_level(size);
                // Fill page-walk caches for levels start..leaf.
                for p in 0..self.pwcs.len() {
                    let lvl = self.pwcs[p].level;
                    if lvl >= start && lvl < leaf {
                        let prefix = va >> self.levels[lvl].shift;
                        let pw = &mut self.pwcs[p];
                        let set = (prefix % pw.nsets) as usize;
                        if let Some(w) = pw.sets.find(set, |&(s, k)| s == 0 && k == prefix) {
                            pw.sets.touch(set, w, false);
                        } else {
                            let allowed = vec![true; pw.sets.ways];
                            let w = pw.sets.victim(set, &allowed).unwrap();
                            pw.sets.slots[set][w] = Some((0, prefix));
                            pw.sets.touch(set, w, true);
                        }
                    }
                }
                for level in start..=leaf {
                    let l = self.levels[level];
                    let base = self.table(level, va).unwrap();
                    let idx = (va >> l.shift) % (1 << l.bits);
                    let pa = base + idx * l.entry_bytes;
                    let path = self.wcaches.clone();
                    let (lat, src) = self.load(&path, pa, false);
                    out.cycles += lat;
                    out.walk_sources.push(src);
                }
                (
                    NaiveTlbEntry {
                        vpn: va >> size.shift(),
                        size,
                        pfn: frame >> 12,
                    },
                    ntlb,
                )
            }
        };
        for i in 0..fill_upto {
            let t = if instr {
                &mut self.tlbs[self.itlb[i]]
            } else {
                &mut self.tlbs[self.dtlb[i]]
            };
            t.insert(entry.clone());
        }
        if self.data_accesses {
            let pa = (entry.pfn << 12) + (va & (entry.size.bytes() - 1));
            let path = if instr {
                self.icaches.clone()
            } else {
                self.dcaches.clone()
            };
            let (lat, _) = self.load(&path, pa, kind == AccessKind::Store);
            out.cycles += lat;
        }
        out
    }
}

/// Convenience for tests: the virtual address of an access as a plain number.
pub fn va(v: VirtAddr) -> u64 {
    v.0
}
