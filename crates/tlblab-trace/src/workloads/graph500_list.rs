//! Seed 001 §5.2: "Graph500, List-based version (scale 24)": the Graph500 reference code's
//! sequential list BFS (graph500 v2, `seq-list/seq-list.c` with `graph500.c` and the Kronecker
//! generator `generator/make_graph.c`, `generator/graph_generator.c`), reference for reference.
//!
//! The program's data, each its own mapping (the seed changed Graph500 to `mmap`, §4.2), in
//! allocation order:
//! - `edges`: the edge list `IJ`, `nedge = edge_factor * 2^scale` `packed_edge`s of 16 bytes
//!   (`int64_t v0, v1`: `generator/user_settings.h` leaves `GENERATOR_USE_PACKED_EDGE_TYPE`
//!   undefined). `make_graph` writes it in edge-index order, each edge drawn independently of the
//!   others (`generate_kronecker_range`: edge `ei` from its own generator substream); it is not
//!   sorted or permuted afterwards. Here it is `rmat::edge_list`: the same draws in the same
//!   independent order, self-loops kept as Graph500 keeps them, vertex ids scrambled by a random
//!   permutation where Graph500 uses a hash bijection (`scramble`). Graph500 also "clips and
//!   flips" each edge to the upper triangle before scrambling; with B = C the unordered pair has
//!   the same distribution, and seq-list links both ends of every edge, so that only decides
//!   which of an edge's two 8-byte halves a chain entry reads (the same cache line).
//! - `head`: ONE allocation of `(2 * (maxvtx + 1) + 2 * nedge)` int64, as
//!   `create_graph_from_edgelist` makes it: `head[0..nv]`, `deg[0..nv]` after it, `next[0..2
//!   nedge]` after that (`nv = maxvtx + 1`, `maxvtx` the largest vertex id in the edge list).
//!   At scale 24 that is 4.25 GiB, Table 5.2's PT-Baker footprint for Graph500: the region the
//!   seed's helper sweeps.
//! - `bfs_tree`: `2^scale` int64 (`run_bfs`'s `xmalloc_large`, once per search).
//! - `vlist`: `nv` int64, the BFS queue (`make_bfs_tree`'s `malloc`, once per search).
//!
//! The references, with `init=1` (the whole program up to its searches):
//! 1. `make_graph`: per edge `k`, stores of `IJ[k].v0` and `IJ[k].v1`.
//! 2. `create_graph_from_edgelist`: the `maxvtx` loop (per edge, loads of `v0` and `v1`); the
//!    `head[k] = -1; deg[k] = 0` loop; the linking loop (per edge, loads of `v0`, `v1`; unless a
//!    self-loop: stores `next[2k] = next[2k+1] = -1`, then for the end `i = v0` with slot
//!    `t = 2k+1`: load `head[i]`, store `head[i]`, store `next[t]`, load and store `deg[i]`; then
//!    the same for `j = v1` with slot `2k`); the `maxdeg` loop (loads of `deg`).
//!
//! Then, per search (`roots` of them; Graph500 runs 64), `make_bfs_tree`: stores of
//! `bfs_tree[root]` (twice, as the source writes it) and `vlist[0]`, stores of `bfs_tree[k] = -1`
//! for every other vertex, then the queue in order: per queued vertex a load of `vlist[k]` and of
//! `head[parent]`, then per entry `p` of its chain a load of `IJ[p/2].v1` (`p` odd) or `.v0`
//! (even), a load of `bfs_tree[newv]` and, for a vertex not yet reached, stores of
//! `bfs_tree[newv]` and `vlist[newk2]`, then a load of `next[p]` (the chain's last one reads -1).
//! A vertex's chain holds its edges' slots from the last edge back to the first, so every step
//! of it reads the edge list and `next` at unrelated places of their gigabytes: the page walks
//! the seed measured reaching DRAM (its Fig. 3.2), where a CSR BFS (graph500_bfs.rs) reads a
//! vertex's neighbours in one run.
//!
//! `make_bfs_tree`'s `k1 = k2; k2 = newk2;` sit inside its `for` over the level: the effect is a
//! plain FIFO queue, which is what is modelled. Not modelled: `run_bfs`'s root sampling over
//! `has_adj` (the roots here are random vertices with an edge, as graph500_bfs.rs picks them) and
//! `verify_bfs_tree` after each search (Graph500 does not time it: its TEPS are the searches').
//! With `init=0` the stream is the searches alone, the seed's "main task" (§4.1, Algorithm 1:
//! the helper is created after the workload's initialisation, which here builds the structure it
//! sweeps); the graph is the same either way.
//!
//! Host memory: the edge list as u32 pairs and the chains as u32 slot numbers (8 + 8 bytes per
//! edge: 4 GiB at scale 24), the tree and the queue as u32; the graph is kept between runs of
//! one process with the same arguments (`shared`), as rmat.rs keeps its CSR.

use super::gen::*;
use super::kept_states::KeptStates;
use super::rmat::{edge_list, KeepLast};
use super::WorkloadInfo;
use std::sync::Arc;
use tlblab_types::hint::{prefetch, prefetch_at};
use tlblab_types::SplitMix64;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "graph500_list",
    summary: "Graph500 reference seq-list: edge list, linked-list graph (head/deg/next), FIFO BFS; `head` annotated",
    source: "seed 001 §5.2 (Graph500 list-based, scale 24, Table 5.2); graph500 v2 seq-list/seq-list.c",
    in_default_set: true,
    params: populated_params! {
        + super::rmat::GRAPH500_SCALE;
        + super::rmat::GRAPH500_EDGE_FACTOR;
        roots: 4, "BFS searches from distinct roots (Graph500: 64)";
        init: 1, "1: the edge list's generation and the graph's construction first; 0: the searches only";
    },
};

/// No entry: Graph500's -1 in `head`, `next` and `bfs_tree`.
const NIL: u32 = u32::MAX;

/// The program's graph: the edge list (Graph500's `IJ`) and, for each vertex, the slots of its
/// chain in the order `make_bfs_tree` follows them (`head[v]`, then `next[...]` to the -1), as
/// `create_graph_from_edgelist` links them; `nv = maxvtx + 1`. The chains are kept as one array
/// (`chain[off[v]..off[v + 1]]`) rather than as `head` and `next`: the same lists, read by the
/// generator in order rather than by pointer chasing through gigabytes of host memory.
pub struct ListGraph {
    pub ij: Vec<(u32, u32)>,
    pub off: Vec<u32>,
    pub chain: Vec<u32>,
    pub nv: u64,
}

impl ListGraph {
    /// `v`'s chain: its edges' slots from its last edge back to its first (slot `2k + 1` for
    /// the edge `k` whose `v0` it is, `2k` for the one whose `v1` it is).
    pub fn chain(&self, v: u32) -> &[u32] {
        &self.chain[self.off[v as usize] as usize..self.off[v as usize + 1] as usize]
    }
    /// The vertex a chain's slot `p` leads to: `IJ[p/2].v1` for odd `p`, `.v0` for even.
    pub fn end(&self, p: u32) -> u32 {
        let (v0, v1) = self.ij[(p / 2) as usize];
        if p % 2 == 1 {
            v1
        } else {
            v0
        }
    }
}

/// `create_graph_from_edgelist` on `rmat::edge_list(scale, edge_factor, seed)`: each edge `k`
/// (not a self-loop) goes to the front of `head[v0]`'s list as slot `2k + 1` and of `head[v1]`'s
/// as slot `2k`, so a list runs from the vertex's last edge back to its first.
pub fn list_graph(scale: u32, edge_factor: u64, seed: u64) -> ListGraph {
    let ij = edge_list(scale, edge_factor, seed);
    let maxvtx = ij.iter().map(|&(u, v)| u.max(v)).max().unwrap_or(0);
    let nv = maxvtx as u64 + 1;
    let mut off = vec![0u32; nv as usize + 1];
    for &(i, j) in ij.iter().filter(|e| e.0 != e.1) {
        off[i as usize + 1] += 1;
        off[j as usize + 1] += 1;
    }
    for v in 0..nv as usize {
        off[v + 1] += off[v];
    }
    let mut fill = off.clone();
    let mut chain = vec![0u32; off[nv as usize] as usize];
    for (k, &(i, j)) in ij.iter().enumerate().rev() {
        if i != j {
            let t = 2 * k as u32 + 1;
            chain[fill[i as usize] as usize] = t;
            fill[i as usize] += 1;
            chain[fill[j as usize] as usize] = t - 1;
            fill[j as usize] += 1;
        }
    }
    ListGraph { ij, off, chain, nv }
}

static LAST: KeepLast<super::graph_cache::RmatKey, ListGraph> = KeepLast::new();

/// `list_graph(scale, edge_factor, seed)`, kept for the next call with the same arguments in
/// this process (`rmat::KeepLast`: seed 001 runs many configurations of its scale-24 graph;
/// building it takes a minute and 4 GiB of host memory); `release` drops it.
/// With a cache directory set, read from there or written there (`rmat::shared`).
pub fn shared(scale: u32, edge_factor: u64, seed: u64) -> Arc<ListGraph> {
    super::graph_cache::kept(&LAST, (scale, edge_factor, seed), list_graph)
}

impl super::graph_cache::Cached for ListGraph {
    const KIND: &'static str = "graph500_list";
    /// Raise when `edge_list` or `list_graph` changes the graph they build.
    const GENERATOR: u32 = 1;
    fn arrays(&self) -> Vec<super::graph_cache::ArrayRef<'_>> {
        use super::graph_cache::ArrayRef::*;
        vec![
            U64(std::slice::from_ref(&self.nv)),
            Pairs(&self.ij),
            U32(&self.off),
            U32(&self.chain),
        ]
    }
    fn from_arrays(arrays: Vec<super::graph_cache::Array>) -> Result<Self, String> {
        use super::graph_cache::Array::*;
        match <[super::graph_cache::Array; 4]>::try_from(arrays) {
            Ok([U64(nv), Pairs(ij), U32(off), U32(chain)])
                if nv.len() == 1
                    && off.len() as u64 == nv[0] + 1
                    && off.last().map(|&o| o as usize) == Some(chain.len()) =>
            {
                Ok(ListGraph { ij, off, chain, nv: nv[0] })
            }
            _ => Err("the arrays are not a graph500_list graph (nv, edge list, offsets of nv + 1, chains of offsets[nv])".into()),
        }
    }
}

/// Drops the graph `shared` keeps, while another workload runs. The search states
/// `Generator::skip` keeps stay (`kept_states`): the graph is read back from the graph cache
/// in seconds, where a run without them would skip its windows' BFS afresh (about 20 s a run
/// at scale 24).
pub fn release() {
    LAST.clear();
}

/// The search states `Generator::skip` keeps for the workloads of `scale` and `edge_factor`
/// (tests).
#[cfg(test)]
pub(crate) fn kept_states(scale: u32, edge_factor: u64) -> usize {
    SNAPS.count(|k| (k.0, k.1) == (scale, edge_factor))
}

/// The search's state where a skip ended (`kept_states`), keyed by (scale, edge_factor, seed,
/// roots, init): 128 MiB at scale 24 (seed 001 keeps 4 at scale 24 and 4 at scale 22).
struct Snap {
    phase: Phase,
    root_no: u64,
    k: usize,
    tail: usize,
    bfs_tree: Vec<u32>,
    queue: Vec<u32>,
    rng: SplitMix64,
}
type Key = (u32, u64, u64, u64, bool);
static SNAPS: KeptStates<Key, Snap> = KeptStates::new(16, 8);

static SKIPPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Accesses this process's graph500_list generators have skipped without writing them (tests).
pub fn skipped_by_itself() -> u64 {
    SKIPPED.load(std::sync::atomic::Ordering::Relaxed)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// `make_graph`'s stores, from edge k.
    Generate(u64),
    /// The `maxvtx` loop.
    MaxVtx(u64),
    /// `head[k] = -1; deg[k] = 0`.
    InitHead(u64),
    /// The linking loop.
    Link(u64),
    /// The `maxdeg` loop.
    MaxDeg(u64),
    /// `make_bfs_tree`'s set-up for the next search.
    SearchStart,
    /// Draining the queue from `k`.
    Search,
    Done,
}

/// The phase after a batch of a loop ended at iteration `to` of `end`: the loop's next batch
/// (`more(to)`), or when it is done the phase `then`.
fn after(to: u64, end: u64, more: fn(u64) -> Phase, then: Phase) -> Phase {
    if to == end {
        then
    } else {
        more(to)
    }
}

/// Edges (or vertices) per step of the loops over the whole graph.
const BATCH: u64 = 4096;

pub struct List {
    g: Arc<ListGraph>,
    ij: u64,
    head: u64,
    tree: u64,
    vlist: u64,
    layout: Layout,
    roots: u64,
    root_no: u64,
    bfs_tree: Vec<u32>,
    /// The BFS queue (`vlist`): `queue[..tail]`.
    queue: Vec<u32>,
    tail: usize,
    k: usize,
    phase: Phase,
    rng: SplitMix64,
    started: bool,
    /// (scale, edge_factor, seed, roots, init): what the stream depends on (`Snap`).
    key: Key,
    /// Accesses written or skipped so far.
    pos: u64,
}

impl List {
    pub fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let scale = get("scale");
        if !(2..=26).contains(&scale) {
            return Err(format!(
                "graph500_list: scale must be in 2..=26 (got {scale})"
            ));
        }
        let ef = positive("graph500_list", "edge_factor", get("edge_factor"))?;
        // Slot numbers (2 * nedge of them) and NIL must fit the host's u32s.
        if ef > 1 << 20 || 2 * (ef << scale) >= NIL as u64 {
            return Err(format!(
                "graph500_list: 2 * edge_factor * 2^scale must be below 2^32 (got edge_factor={ef}, scale={scale})"
            ));
        }
        let init = get("init");
        if init > 1 {
            return Err(format!("graph500_list: init must be 0 or 1 (got {init})"));
        }
        // The edge list (8 bytes an edge) and the scramble (4 a vertex) at the build's peak,
        // the chains (4 bytes for each end of an edge), offsets and fill cursors (4 a vertex
        // each), then the search's tree and queue (4 a vertex each).
        super::memory::need(
            "graph500_list",
            &[("scale", scale), ("edge_factor", ef)],
            (ef << scale) * 16 + (20u64 << scale),
        )?;
        let g = shared(scale as u32, ef, seed);
        let m = g.ij.len() as u64;
        let nv = g.nv;
        // Below 4 GiB, as the other generators, so 32-bit machines can run the default sizes.
        let mut layout = Layout::new(0x1000_0000);
        let (_, ij) = layout.alloc("edges", m * 16, 1 << 21);
        let (_, head) = layout.alloc("head", (2 * nv + 2 * m) * 8, 1 << 21);
        let (_, tree) = layout.alloc("bfs_tree", (1u64 << scale) * 8, 1 << 21);
        let (_, vlist) = layout.alloc("vlist", nv * 8, 1 << 21);
        Ok(List {
            bfs_tree: vec![NIL; nv as usize],
            queue: vec![0; nv as usize + 1],
            tail: 0,
            g,
            ij,
            head,
            tree,
            vlist,
            layout,
            roots: get("roots"),
            root_no: 0,
            k: 0,
            phase: if init == 1 {
                Phase::Generate(0)
            } else {
                Phase::SearchStart
            },
            rng: SplitMix64::derive(seed, "workload.graph500_list.roots"),
            started: false,
            key: (scale as u32, ef, seed, get("roots"), init == 1),
            pos: 0,
        })
    }

    fn m(&self) -> u64 {
        self.g.ij.len() as u64
    }
    fn deg(&self, v: u64) -> u64 {
        self.head + (self.g.nv + v) * 8
    }
    fn next(&self, slot: u64) -> u64 {
        self.head + (2 * self.g.nv + slot) * 8
    }

    /// A random vertex with an edge (the first at or after a random start).
    fn root(&mut self) -> u32 {
        let nv = self.g.nv;
        let start = self.rng.below(nv);
        (0..nv)
            .map(|i| ((start + i) % nv) as u32)
            .find(|&v| !self.g.chain(v).is_empty())
            .unwrap_or(0)
    }

    /// `make_bfs_tree` up to its queue loop (its references written to `out` if given).
    fn start_search(&mut self, out: Option<&mut Vec<Record>>) {
        let root = self.root();
        let r = root as u64;
        if let Some(out) = out {
            out.push(store(0, self.tree + r * 8, 8));
            out.push(store(0, self.tree + r * 8, 8));
            out.push(store(0, self.vlist, 8));
            for k in (0..self.g.nv).filter(|&k| k != r) {
                out.push(store(0, self.tree + k * 8, 8));
            }
        }
        self.bfs_tree.iter_mut().for_each(|p| *p = NIL);
        self.bfs_tree[root as usize] = root;
        self.queue[0] = root;
        self.tail = 1;
        self.k = 0;
    }

    /// The queue's next vertex: its references (written to `out` if given) and their count.
    fn visit(&mut self, out: Option<&mut Vec<Record>>) -> u64 {
        let parent = self.queue[self.k];
        let g = Arc::clone(&self.g);
        let chain = g.chain(parent);
        let k = self.k as u64;
        self.k += 1;
        let tail = self.tail;
        let Some(out) = out else {
            // Skipping: no branch on the tree's contents, so the host overlaps the chain's
            // random reads (the queue has room for one more than every vertex). Host prefetch
            // hints (which change nothing the run computes) ask for the lines ahead: the next
            // vertices' chain bounds and chains, this chain's edges 16 slots ahead and, from
            // an edge 8 ahead whose line was asked for before, its end's tree entry. Each
            // is a random line of the host's memory at scale 24 (the graph is GBs).
            let (tree, queue) = (&mut self.bfs_tree, &mut self.queue);
            if self.k + 1 < tail {
                prefetch(&g.off[queue[self.k + 1] as usize]);
                let next = queue[self.k] as usize; // `k` has moved on: the vertex after `parent`
                prefetch_at(g.chain.as_ptr().wrapping_add(g.off[next] as usize));
            }
            let mut t = tail;
            for (i, &p) in chain.iter().enumerate() {
                if let Some(&q) = chain.get(i + 16) {
                    prefetch(&g.ij[(q / 2) as usize]);
                }
                if let Some(&q) = chain.get(i + 8) {
                    prefetch_at(tree.as_ptr().wrapping_add(g.end(q) as usize));
                }
                let newv = g.end(p) as usize;
                let old = tree[newv];
                let fresh = old == NIL;
                tree[newv] = if fresh { parent } else { old };
                queue[t] = newv as u32;
                t += fresh as usize;
            }
            self.tail = t;
            return 2 + 3 * chain.len() as u64 + 2 * (t - tail) as u64;
        };
        out.push(load(0, self.vlist + k * 8, 8));
        out.push(load(0, self.head + parent as u64 * 8, 8));
        for &p in chain {
            let newv = g.end(p);
            let p = p as u64;
            out.push(load(0, self.ij + (p / 2) * 16 + (p % 2) * 8, 8));
            out.push(load(0, self.tree + newv as u64 * 8, 8));
            if self.bfs_tree[newv as usize] == NIL {
                self.bfs_tree[newv as usize] = parent;
                out.push(store(0, self.tree + newv as u64 * 8, 8));
                out.push(store(0, self.vlist + self.tail as u64 * 8, 8));
                self.queue[self.tail] = newv;
                self.tail += 1;
            }
            out.push(load(0, self.next(p), 8));
        }
        2 + 3 * chain.len() as u64 + 2 * (self.tail - tail) as u64
    }

    /// Up to `BATCH` iterations of one of the construction's loops.
    fn construct(&mut self, phase: Phase, out: &mut Vec<Record>) -> Phase {
        let (m, nv) = (self.m(), self.g.nv);
        match phase {
            Phase::Generate(from) | Phase::MaxVtx(from) => {
                // make_graph's stores of each edge's two halves, then the maxvtx loop's loads.
                let generate = matches!(phase, Phase::Generate(_));
                let access = if generate { store } else { load };
                let to = (from + BATCH).min(m);
                for k in from..to {
                    out.push(access(0, self.ij + k * 16, 8));
                    out.push(access(0, self.ij + k * 16 + 8, 8));
                }
                if generate {
                    after(to, m, Phase::Generate, Phase::MaxVtx(0))
                } else {
                    after(to, m, Phase::MaxVtx, Phase::InitHead(0))
                }
            }
            Phase::InitHead(from) => {
                let to = (from + BATCH).min(nv);
                for k in from..to {
                    out.push(store(0, self.head + k * 8, 8));
                    out.push(store(0, self.deg(k), 8));
                }
                after(to, nv, Phase::InitHead, Phase::Link(0))
            }
            Phase::Link(from) => {
                let to = (from + BATCH).min(m);
                for k in from..to {
                    out.push(load(0, self.ij + k * 16, 8));
                    out.push(load(0, self.ij + k * 16 + 8, 8));
                    let (i, j) = self.g.ij[k as usize];
                    if i == j {
                        continue;
                    }
                    out.push(store(0, self.next(2 * k), 8));
                    out.push(store(0, self.next(2 * k + 1), 8));
                    for (v, slot) in [(i as u64, 2 * k + 1), (j as u64, 2 * k)] {
                        out.push(load(0, self.head + v * 8, 8));
                        out.push(store(0, self.head + v * 8, 8));
                        out.push(store(0, self.next(slot), 8));
                        out.push(load(0, self.deg(v), 8));
                        out.push(store(0, self.deg(v), 8));
                    }
                }
                after(to, m, Phase::Link, Phase::MaxDeg(0))
            }
            Phase::MaxDeg(from) => {
                let to = (from + BATCH).min(nv);
                for k in from..to {
                    out.push(load(0, self.deg(k), 8));
                }
                after(to, nv, Phase::MaxDeg, Phase::SearchStart)
            }
            other => other,
        }
    }
}

impl Generator for List {
    fn regions(&self) -> Vec<String> {
        self.layout.names.clone()
    }
    /// Whole loop iterations, queued vertices and search set-ups while they fit in `n`: the
    /// construction's counts are closed-form per edge or vertex, a vertex's are at most
    /// `2 + 5 * chain length` (the state is advanced as `step` would, nothing is written);
    /// from the state an earlier run's skip kept, the furthest before the target (`kept_states`).
    fn skip(&mut self, n: u64) -> u64 {
        if !self.started {
            return 0;
        }
        let (start, target) = (self.pos, self.pos + n);
        self.restore(target);
        let done = self.skip_counted(target - self.pos);
        self.pos += done;
        let entries = (self.bfs_tree.len() + self.queue.len()) as u64;
        SNAPS.keep(self.key, self.pos, done, entries, || Snap {
            phase: self.phase,
            root_no: self.root_no,
            k: self.k,
            tail: self.tail,
            bfs_tree: self.bfs_tree.clone(),
            queue: self.queue.clone(),
            rng: self.rng.clone(),
        });
        SKIPPED.fetch_add(self.pos - start, std::sync::atomic::Ordering::Relaxed);
        self.pos - start
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if self.layout.start_once(&mut self.started, out) {
            return self.roots > 0 || self.phase != Phase::SearchStart;
        }
        let before = out.len();
        let more = self.step_accesses(out);
        self.pos += (out.len() - before) as u64;
        more
    }
}

impl List {
    /// Restores the kept state furthest along before or at `target`, if it is ahead of `pos`.
    fn restore(&mut self, target: u64) {
        SNAPS.restore_best(self.key, self.pos, target, |pos, s| {
            self.pos = pos;
            self.phase = s.phase;
            self.root_no = s.root_no;
            self.k = s.k;
            self.tail = s.tail;
            self.bfs_tree.copy_from_slice(&s.bfs_tree);
            self.queue.copy_from_slice(&s.queue);
            self.rng = s.rng.clone();
        });
    }

    /// `skip` without the kept states.
    fn skip_counted(&mut self, n: u64) -> u64 {
        let (m, nv) = (self.m(), self.g.nv);
        let mut done = 0u64;
        loop {
            let left = n - done;
            let (phase, used) = match self.phase {
                Phase::Generate(k) | Phase::MaxVtx(k) => {
                    let e = (left / 2).min(m - k);
                    let k2 = k + e;
                    let next = match (self.phase, k2 == m) {
                        (Phase::Generate(_), false) => Phase::Generate(k2),
                        (Phase::Generate(_), true) => Phase::MaxVtx(0),
                        (_, false) => Phase::MaxVtx(k2),
                        (_, true) => Phase::InitHead(0),
                    };
                    (next, 2 * e)
                }
                Phase::InitHead(k) => {
                    let e = (left / 2).min(nv - k);
                    let next = if k + e == nv {
                        Phase::Link(0)
                    } else {
                        Phase::InitHead(k + e)
                    };
                    (next, 2 * e)
                }
                Phase::Link(mut k) => {
                    let mut used = 0;
                    while k < m {
                        let (i, j) = self.g.ij[k as usize];
                        let c = if i == j { 2 } else { 14 };
                        if used + c > left {
                            break;
                        }
                        used += c;
                        k += 1;
                    }
                    (
                        if k == m {
                            Phase::MaxDeg(0)
                        } else {
                            Phase::Link(k)
                        },
                        used,
                    )
                }
                Phase::MaxDeg(k) => {
                    let e = left.min(nv - k);
                    let next = if k + e == nv {
                        Phase::SearchStart
                    } else {
                        Phase::MaxDeg(k + e)
                    };
                    (next, e)
                }
                Phase::SearchStart => {
                    if self.root_no >= self.roots || left < nv + 2 {
                        return done;
                    }
                    self.start_search(None);
                    (Phase::Search, nv + 2)
                }
                Phase::Search => {
                    let mut used = 0;
                    let mut phase = Phase::Search;
                    loop {
                        if self.k == self.tail {
                            self.root_no += 1;
                            phase = Phase::SearchStart;
                            break;
                        }
                        let len = self.g.chain(self.queue[self.k]).len() as u64;
                        if used + 2 + 5 * len > left {
                            break;
                        }
                        used += self.visit(None);
                    }
                    (phase, used)
                }
                Phase::Done => return done,
            };
            if used == 0 && phase == self.phase {
                return done;
            }
            self.phase = phase;
            done += used;
        }
    }
}

impl List {
    /// A step after the start: accesses only.
    fn step_accesses(&mut self, out: &mut Vec<Record>) -> bool {
        match self.phase {
            Phase::Done => false,
            Phase::SearchStart => {
                if self.root_no >= self.roots {
                    self.phase = Phase::Done;
                    return false;
                }
                self.start_search(Some(out));
                self.phase = Phase::Search;
                true
            }
            Phase::Search => {
                // Up to 256 queued vertices per step (bounded by their degrees).
                for _ in 0..256 {
                    if self.k == self.tail {
                        self.root_no += 1;
                        self.phase = Phase::SearchStart;
                        return true;
                    }
                    self.visit(Some(out));
                }
                true
            }
            phase => {
                self.phase = self.construct(phase, out);
                true
            }
        }
    }
}
