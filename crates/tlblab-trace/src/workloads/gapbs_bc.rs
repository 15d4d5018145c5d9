//! Seed 001 §5.2: a GAPBS-like betweenness centrality (Brandes) on an R-MAT graph.
//!
//! Per source, as GAPBS `bc.cc`: reset `depth`/`path_counts`/`deltas`; a level-synchronous
//! forward BFS that counts shortest paths and marks successor edges in a bitmap; then a
//! backward sweep over the BFS order accumulating dependencies into `deltas` and `scores`.
//! Arrays: offsets and neighbours (4-byte ids, as GAPBS), depth (4 B), path counts, deltas and
//! scores (8 B), the successor bitmap (1 bit per edge). The neighbour array is annotated as the
//! main region (seed §5.2: PT-Baker warms one structure).

use super::gen::*;
use super::rmat::{root_with_edges, shared, Csr};
use super::WorkloadInfo;
use std::sync::Arc;
use tlblab_types::SplitMix64;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "gapbs_bc",
    summary:
        "GAPBS-like Brandes betweenness centrality (forward BFS + backward sweep) on an R-MAT graph",
    source: "seed 001 §5.2 (GAPBS BC, Table 5.2)",
    params: populated_params![
        (
            "scale",
            15,
            "log2 of the vertex count (the seed used the twitter graph)",
        ),
        ("edge_factor", 16, "edges per vertex"),
        ("sources", 2, "BC iterations (source vertices)"),
    ],
    in_default_set: true,
};

#[derive(PartialEq)]
enum Phase {
    Reset,
    Forward,
    Backward,
}

pub struct Bc {
    g: Arc<Csr>,
    va: [u64; 7],
    layout: Layout,
    sources: u64,
    src_no: u64,
    depth: Vec<i32>,
    paths: Vec<f64>,
    deltas: Vec<f64>,
    succ: Vec<u64>,
    order: Vec<u32>,
    pos: usize,
    phase: Phase,
    rng: SplitMix64,
    started: bool,
}

const OFF: usize = 0;
const NEI: usize = 1;
const DEPTH: usize = 2;
const PATHS: usize = 3;
const DELTAS: usize = 4;
const SCORES: usize = 5;
const SUCC: usize = 6;

impl Bc {
    pub fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let scale = in_range("gapbs_bc", "scale", get("scale"), 2, 26)?;
        let g = shared(
            scale as u32,
            positive("gapbs_bc", "edge_factor", get("edge_factor"))?,
            seed,
        );
        let n = g.n;
        let m = g.adj.len() as u64;
        // Below 4 GiB, so 32-bit machines can run the default sizes too.
        let mut layout = Layout::new(0x1000_0000);
        let mut va = [0u64; 7];
        for (i, (name, bytes)) in [
            ("offsets", (n + 1) * 8),
            ("neighbors", m * 4),
            ("depth", n * 4),
            ("path_counts", n * 8),
            ("deltas", n * 8),
            ("scores", n * 8),
            ("succ_bitmap", m.div_ceil(64) * 8),
        ]
        .into_iter()
        .enumerate()
        {
            va[i] = layout.alloc(name, bytes, 1 << 21).1;
        }
        Ok(Bc {
            depth: vec![-1; n as usize],
            paths: vec![0.0; n as usize],
            deltas: vec![0.0; n as usize],
            succ: vec![0; m.div_ceil(64) as usize],
            order: Vec::with_capacity(n as usize),
            g,
            va,
            layout,
            sources: get("sources"),
            src_no: 0,
            pos: 0,
            phase: Phase::Reset,
            rng: SplitMix64::derive(seed, "workload.gapbs_bc.sources"),
            started: false,
        })
    }
}

impl Generator for Bc {
    fn regions(&self) -> Vec<String> {
        self.layout.names.clone()
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if self.layout.start_once(&mut self.started, out) {
            return self.sources > 0;
        }
        if self.src_no >= self.sources {
            return false;
        }
        let va = self.va;
        match self.phase {
            Phase::Reset => {
                // Reset per-vertex state (GAPBS fills depth/path_counts/deltas) and the bitmap.
                for v in 0..self.g.n {
                    out.push(store(0, va[DEPTH] + v * 4, 4));
                    out.push(store(0, va[PATHS] + v * 8, 8));
                    out.push(store(0, va[DELTAS] + v * 8, 8));
                }
                for w in 0..self.succ.len() as u64 {
                    out.push(store(0, va[SUCC] + w * 8, 8));
                }
                self.depth.iter_mut().for_each(|d| *d = -1);
                self.paths.iter_mut().for_each(|p| *p = 0.0);
                self.deltas.iter_mut().for_each(|d| *d = 0.0);
                self.succ.iter_mut().for_each(|w| *w = 0);
                let s = root_with_edges(&self.g, self.rng.below(self.g.n)) as usize;
                self.depth[s] = 0;
                self.paths[s] = 1.0;
                self.order.clear();
                self.order.push(s as u32);
                self.pos = 0;
                self.phase = Phase::Forward;
            }
            Phase::Forward => {
                for _ in 0..256 {
                    if self.pos == self.order.len() {
                        self.phase = Phase::Backward;
                        self.pos = self.order.len();
                        break;
                    }
                    let u = self.order[self.pos] as usize;
                    self.pos += 1;
                    out.push(load(0, va[DEPTH] + u as u64 * 4, 4));
                    out.push(load(0, va[PATHS] + u as u64 * 8, 8));
                    out.push(load(0, va[OFF] + u as u64 * 8, 8));
                    out.push(load(0, va[OFF] + u as u64 * 8 + 8, 8));
                    for e in self.g.offsets[u]..self.g.offsets[u + 1] {
                        let v = self.g.adj[e as usize] as usize;
                        out.push(load(0, va[NEI] + e * 4, 4));
                        out.push(load(0, va[DEPTH] + v as u64 * 4, 4));
                        if self.depth[v] == -1 {
                            self.depth[v] = self.depth[u] + 1;
                            out.push(store(0, va[DEPTH] + v as u64 * 4, 4));
                            self.order.push(v as u32);
                        }
                        if self.depth[v] == self.depth[u] + 1 {
                            self.paths[v] += self.paths[u];
                            out.push(load(0, va[PATHS] + v as u64 * 8, 8));
                            out.push(store(0, va[PATHS] + v as u64 * 8, 8));
                            self.succ[(e / 64) as usize] |= 1 << (e % 64);
                            out.push(load(0, va[SUCC] + (e / 64) * 8, 8));
                            out.push(store(0, va[SUCC] + (e / 64) * 8, 8));
                        }
                    }
                }
            }
            Phase::Backward => {
                for _ in 0..256 {
                    if self.pos == 0 {
                        self.src_no += 1;
                        self.phase = Phase::Reset;
                        break;
                    }
                    self.pos -= 1;
                    let u = self.order[self.pos] as usize;
                    out.push(load(0, va[OFF] + u as u64 * 8, 8));
                    out.push(load(0, va[OFF] + u as u64 * 8 + 8, 8));
                    let mut delta_u = 0.0;
                    for e in self.g.offsets[u]..self.g.offsets[u + 1] {
                        out.push(load(0, va[SUCC] + (e / 64) * 8, 8));
                        if self.succ[(e / 64) as usize] >> (e % 64) & 1 == 1 {
                            let v = self.g.adj[e as usize] as usize;
                            out.push(load(0, va[NEI] + e * 4, 4));
                            out.push(load(0, va[PATHS] + v as u64 * 8, 8));
                            out.push(load(0, va[DELTAS] + v as u64 * 8, 8));
                            delta_u += self.paths[u] / self.paths[v] * (1.0 + self.deltas[v]);
                        }
                    }
                    self.deltas[u] = delta_u;
                    out.push(store(0, va[DELTAS] + u as u64 * 8, 8));
                    out.push(load(0, va[SCORES] + u as u64 * 8, 8));
                    out.push(store(0, va[SCORES] + u as u64 * 8, 8));
                }
            }
        }
        true
    }
}
