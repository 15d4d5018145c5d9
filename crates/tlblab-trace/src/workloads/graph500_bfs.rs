//! Seed 001 §5.2: a Graph500-like BFS ("Graph500, List-based version") on an R-MAT graph.
//!
//! Top-down BFS with a list (queue) frontier over a CSR graph of 8-byte vertex ids, as the
//! Graph500 reference code: for each queued vertex load its two offsets, then per edge load the
//! neighbour and its `parent` entry, and for an unvisited neighbour store its parent and append
//! it to the queue. `roots` searches run back to back (Graph500 runs 64). The adjacency array is
//! annotated as the main region (the one PT-Baker warms, seed §5.2 / Table 5.2).

use super::gen::*;
use super::rmat::{root_with_edges, shared, Csr};
use super::WorkloadInfo;
use std::sync::Arc;
use tlblab_types::hint::prefetch;
use tlblab_types::SplitMix64;

/// How many edges ahead the search asks the host for a neighbour's parent entry (gapbs_bc's
/// `AHEAD`: the same hint, the same records).
const AHEAD: u64 = 16;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "graph500_bfs",
    summary: "Graph500-like top-down BFS (list frontier) on an R-MAT graph; adjacency annotated",
    source: "seed 001 §5.2 (Graph500 list-based, Table 5.2)",
    in_default_set: true,
    params: populated_params! {
        + super::rmat::GRAPH500_SCALE;
        + super::rmat::GRAPH500_EDGE_FACTOR;
        roots: 4, "BFS searches from distinct roots";
    },
};

pub struct Bfs {
    g: Arc<Csr>,
    xadj: u64,
    adj: u64,
    parent_va: u64,
    queue_va: u64,
    layout: Layout,
    roots: u64,
    root_no: u64,
    parent: Vec<u32>,
    queue: Vec<u32>,
    head: usize,
    rng: SplitMix64,
    started: bool,
}

impl Bfs {
    pub fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let scale = in_range("graph500_bfs", "scale", get("scale"), 2, 26)?;
        let edge_factor = positive("graph500_bfs", "edge_factor", get("edge_factor"))?;
        // The graph, then the search's parent array and queue (a u32 a vertex each).
        super::memory::need(
            "graph500_bfs",
            &[("scale", scale), ("edge_factor", edge_factor)],
            super::rmat::bytes(scale as u32, edge_factor).saturating_add((8u64) << scale),
        )?;
        let g = shared(scale as u32, edge_factor, seed);
        // Below 4 GiB, so 32-bit machines can run the default sizes too.
        let mut layout = Layout::new(0x1000_0000);
        let (_, xadj) = layout.alloc("offsets", (g.n + 1) * 8, 1 << 21);
        let (_, adj) = layout.alloc("adjacency", g.adj.len() as u64 * 8, 1 << 21);
        let (_, parent_va) = layout.alloc("parent", g.n * 8, 1 << 21);
        let (_, queue_va) = layout.alloc("queue", g.n * 8, 1 << 21);
        let n = g.n as usize;
        Ok(Bfs {
            g,
            xadj,
            adj,
            parent_va,
            queue_va,
            layout,
            roots: get("roots"),
            root_no: 0,
            parent: vec![u32::MAX; n],
            queue: Vec::with_capacity(n),
            head: 0,
            rng: SplitMix64::derive(seed, "workload.graph500_bfs.roots"),
            started: false,
        })
    }

    /// Starts the next search (Graph500 resets parent[] first: one store per 8-byte entry);
    /// its stores to `out` if given. Returns their count (`n + 2`).
    fn start_search(&mut self, out: Option<&mut Vec<Record>>) -> u64 {
        let root = root_with_edges(&self.g, self.rng.below(self.g.n)) as u32;
        self.parent.iter_mut().for_each(|p| *p = u32::MAX);
        self.queue.clear();
        self.head = 0;
        self.parent[root as usize] = root;
        self.queue.push(root);
        if let Some(out) = out {
            for v in 0..self.g.n {
                out.push(store(0, self.parent_va + v * 8, 8));
            }
            out.push(store(0, self.parent_va + root as u64 * 8, 8));
            out.push(store(0, self.queue_va, 8));
        }
        self.g.n + 2
    }

    /// The queue's next vertex: its accesses to `out` if given, and their count (at most
    /// `3 + 4 * degree`).
    fn visit(&mut self, mut out: Option<&mut Vec<Record>>) -> u64 {
        let mut n = 0;
        let v = self.queue[self.head] as u64;
        put(
            &mut out,
            &mut n,
            load(0, self.queue_va + self.head as u64 * 8, 8),
        );
        self.head += 1;
        put(&mut out, &mut n, load(0, self.xadj + v * 8, 8));
        put(&mut out, &mut n, load(0, self.xadj + v * 8 + 8, 8));
        let (lo, hi) = (self.g.offsets[v as usize], self.g.offsets[v as usize + 1]);
        for e in lo..hi {
            if e + AHEAD < hi {
                prefetch(&self.parent[self.g.adj[(e + AHEAD) as usize] as usize]);
            }
            let w = self.g.adj[e as usize];
            put(&mut out, &mut n, load(0, self.adj + e * 8, 8));
            put(&mut out, &mut n, load(0, self.parent_va + w as u64 * 8, 8));
            if self.parent[w as usize] == u32::MAX {
                self.parent[w as usize] = v as u32;
                put(&mut out, &mut n, store(0, self.parent_va + w as u64 * 8, 8));
                put(
                    &mut out,
                    &mut n,
                    store(0, self.queue_va + self.queue.len() as u64 * 8, 8),
                );
                self.queue.push(w);
            }
        }
        n
    }

    /// The degree of the queue's next vertex.
    fn next_degree(&self) -> u64 {
        let v = self.queue[self.head] as usize;
        self.g.offsets[v + 1] - self.g.offsets[v]
    }
}

impl Generator for Bfs {
    fn regions(&self) -> Vec<String> {
        self.layout.names.clone()
    }
    /// Whole search starts and vertices while they fit in `n` (`start_search`, `visit`), the
    /// state advanced as `step`'s would with nothing written; the run's end is `step`'s.
    fn skip(&mut self, n: u64) -> u64 {
        if !self.started {
            return 0;
        }
        let mut done = 0;
        loop {
            let left = n - done;
            if self.head == self.queue.len() {
                if self.root_no + 1 >= self.roots || self.g.n + 2 > left {
                    return done;
                }
                self.root_no += 1;
                done += self.start_search(None);
            } else {
                if 3 + 4 * self.next_degree() > left {
                    return done;
                }
                done += self.visit(None);
            }
        }
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if self.layout.start_once(&mut self.started, out) {
            if self.roots == 0 {
                return false;
            }
            self.start_search(Some(out));
            return true;
        }
        // Up to 256 vertices per step (bounded by their degrees).
        for _ in 0..256 {
            if self.head == self.queue.len() {
                self.root_no += 1;
                if self.root_no >= self.roots {
                    return !out.is_empty();
                }
                self.start_search(Some(out));
                return true;
            }
            self.visit(Some(out));
        }
        true
    }
}
