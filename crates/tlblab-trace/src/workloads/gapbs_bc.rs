//! Seed 001 §5.2: a GAPBS-like betweenness centrality (Brandes) on an R-MAT graph.
//!
//! Per source, as GAPBS `bc.cc`: reset `depth`/`path_counts`/`deltas`; a level-synchronous
//! forward BFS that counts shortest paths and marks successor edges in a bitmap; then a
//! backward sweep over the BFS order accumulating dependencies into `deltas` and `scores`.
//! Arrays: offsets and neighbours (4-byte ids, as GAPBS), depth (4 B), path counts, deltas and
//! scores (8 B), the successor bitmap (1 bit per edge). The neighbour array is annotated as the
//! main region (seed §5.2: PT-Baker warms one structure).

use super::gen::*;
use super::kept_states::KeptStates;
use super::rmat::{root_with_edges, shared, Csr};
use super::WorkloadInfo;
use std::sync::Arc;
use tlblab_types::hint::{prefetch, prefetch_at};
use tlblab_types::SplitMix64;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "gapbs_bc",
    summary:
        "GAPBS-like Brandes betweenness centrality (forward BFS + backward sweep) on an R-MAT graph",
    source: "seed 001 §5.2 (GAPBS BC, Table 5.2)",
    in_default_set: true,
    params: populated_params! {
        scale: 15, "log2 of the vertex count (the seed used the twitter graph)";
        edge_factor: 16, "edges per vertex";
        sources: 2, "BC iterations (source vertices)";
    },
};

#[derive(PartialEq, Clone, Copy)]
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
    /// (scale, edge_factor, seed, sources): what the stream depends on (`Snap`).
    key: Key,
    /// Accesses written or skipped so far.
    at: u64,
}

/// Brandes' state where a skip ended (`kept_states`), keyed by (scale, edge_factor, seed,
/// sources): about 420 MB at scale 24 (seed 001 keeps its 2-4 windows').
struct Snap {
    depth: Vec<i32>,
    paths: Vec<f64>,
    deltas: Vec<f64>,
    succ: Vec<u64>,
    order: Vec<u32>,
    src_no: u64,
    pos: usize,
    phase: Phase,
    rng: SplitMix64,
}
type Key = (u64, u64, u64, u64);
static SNAPS: KeptStates<Key, Snap> = KeptStates::new(8, 4);

/// The states `Generator::skip` keeps for the workloads of `scale` and `edge_factor` (tests).
#[cfg(test)]
pub(crate) fn kept_states(scale: u64, edge_factor: u64) -> usize {
    SNAPS.count(|k| (k.0, k.1) == (scale, edge_factor))
}

/// How many edges ahead of the one it reads the generator asks the host for a neighbour's
/// entries (`prefetch`): at scale 24 the vertex arrays are hundreds of MB, and each edge's
/// read of them would otherwise wait for the host's DRAM (most of the generator's time).
/// A hint only: the records are the same.
const AHEAD: u64 = 16;

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
        let edge_factor = positive("gapbs_bc", "edge_factor", get("edge_factor"))?;
        // The graph, then Brandes' arrays: depth and order (4 bytes a vertex each), path counts
        // and deltas (8 each), and the successor bitmap (a bit for each end of an edge).
        let edges = (1u64 << scale).saturating_mul(edge_factor);
        super::memory::need(
            "gapbs_bc",
            &[("scale", scale), ("edge_factor", edge_factor)],
            super::rmat::bytes(scale as u32, edge_factor)
                .saturating_add((24u64) << scale)
                .saturating_add(edges / 4),
        )?;
        let g = shared(scale as u32, edge_factor, seed);
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
            key: (scale, edge_factor, seed, get("sources")),
            at: 0,
        })
    }
}

impl Bc {
    /// The accesses of a source's reset (the per-vertex and bitmap stores).
    fn reset_accesses(&self) -> u64 {
        3 * self.g.n + self.succ.len() as u64
    }

    /// Resets the per-source state and starts the next source's forward BFS; its stores to
    /// `out` if given. Returns their count (`reset_accesses`).
    fn reset(&mut self, out: Option<&mut Vec<Record>>) -> u64 {
        let va = self.va;
        if let Some(out) = out {
            for v in 0..self.g.n {
                out.push(store(0, va[DEPTH] + v * 4, 4));
                out.push(store(0, va[PATHS] + v * 8, 8));
                out.push(store(0, va[DELTAS] + v * 8, 8));
            }
            for w in 0..self.succ.len() as u64 {
                out.push(store(0, va[SUCC] + w * 8, 8));
            }
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
        self.reset_accesses()
    }

    /// The degree of the vertex at `order[i]`.
    fn degree_at(&self, i: usize) -> u64 {
        let u = self.order[i] as usize;
        self.g.offsets[u + 1] - self.g.offsets[u]
    }

    /// The forward BFS's next vertex (`order[pos]`): its accesses to `out` if given, and
    /// their count (at most `4 + 7 * degree`).
    fn forward_vertex(&mut self, mut out: Option<&mut Vec<Record>>) -> u64 {
        let va = self.va;
        let mut n = 0;
        let u = self.order[self.pos] as usize;
        self.pos += 1;
        // The next vertices' lines, asked for ahead as the edges' are (a hint: nothing the run
        // computes changes): most R-MAT vertices have a few edges, too few for AHEAD, so their
        // offsets and first neighbours would each be a wait. The one after next: its offsets;
        // the next (its offsets asked for a vertex ago): its first neighbours and its entries.
        if let Some(&w) = self.order.get(self.pos + 1) {
            prefetch(&self.g.offsets[w as usize]);
        }
        if let Some(&w) = self.order.get(self.pos) {
            let w = w as usize;
            prefetch_at(self.g.adj.as_ptr().wrapping_add(self.g.offsets[w] as usize));
            prefetch(&self.depth[w]);
            prefetch(&self.paths[w]);
        }
        put(&mut out, &mut n, load(0, va[DEPTH] + u as u64 * 4, 4));
        put(&mut out, &mut n, load(0, va[PATHS] + u as u64 * 8, 8));
        put(&mut out, &mut n, load(0, va[OFF] + u as u64 * 8, 8));
        put(&mut out, &mut n, load(0, va[OFF] + u as u64 * 8 + 8, 8));
        let end = self.g.offsets[u + 1];
        for e in self.g.offsets[u]..end {
            if e + AHEAD < end {
                let w = self.g.adj[(e + AHEAD) as usize] as usize;
                prefetch(&self.depth[w]);
                prefetch(&self.paths[w]);
            }
            let v = self.g.adj[e as usize] as usize;
            put(&mut out, &mut n, load(0, va[NEI] + e * 4, 4));
            put(&mut out, &mut n, load(0, va[DEPTH] + v as u64 * 4, 4));
            if self.depth[v] == -1 {
                self.depth[v] = self.depth[u] + 1;
                put(&mut out, &mut n, store(0, va[DEPTH] + v as u64 * 4, 4));
                self.order.push(v as u32);
            }
            if self.depth[v] == self.depth[u] + 1 {
                self.paths[v] += self.paths[u];
                put(&mut out, &mut n, load(0, va[PATHS] + v as u64 * 8, 8));
                put(&mut out, &mut n, store(0, va[PATHS] + v as u64 * 8, 8));
                self.succ[(e / 64) as usize] |= 1 << (e % 64);
                put(&mut out, &mut n, load(0, va[SUCC] + (e / 64) * 8, 8));
                put(&mut out, &mut n, store(0, va[SUCC] + (e / 64) * 8, 8));
            }
        }
        n
    }

    /// The backward sweep's next vertex (`order[pos - 1]`): its accesses to `out` if given,
    /// and their count (at most `5 + 4 * degree`).
    fn backward_vertex(&mut self, mut out: Option<&mut Vec<Record>>) -> u64 {
        let va = self.va;
        let mut n = 0;
        self.pos -= 1;
        let u = self.order[self.pos] as usize;
        // As `forward_vertex`, the vertices before it (the sweep goes down `order`).
        if self.pos >= 2 {
            prefetch(&self.g.offsets[self.order[self.pos - 2] as usize]);
        }
        if self.pos >= 1 {
            let w = self.order[self.pos - 1] as usize;
            let first = self.g.offsets[w] as usize;
            prefetch_at(self.g.adj.as_ptr().wrapping_add(first));
            prefetch_at(self.succ.as_ptr().wrapping_add(first / 64));
            prefetch(&self.paths[w]);
        }
        put(&mut out, &mut n, load(0, va[OFF] + u as u64 * 8, 8));
        put(&mut out, &mut n, load(0, va[OFF] + u as u64 * 8 + 8, 8));
        let mut delta_u = 0.0;
        let end = self.g.offsets[u + 1];
        for e in self.g.offsets[u]..end {
            let f = e + AHEAD;
            if f < end && self.succ[(f / 64) as usize] >> (f % 64) & 1 == 1 {
                let w = self.g.adj[f as usize] as usize;
                prefetch(&self.paths[w]);
                prefetch(&self.deltas[w]);
            }
            put(&mut out, &mut n, load(0, va[SUCC] + (e / 64) * 8, 8));
            if self.succ[(e / 64) as usize] >> (e % 64) & 1 == 1 {
                let v = self.g.adj[e as usize] as usize;
                put(&mut out, &mut n, load(0, va[NEI] + e * 4, 4));
                put(&mut out, &mut n, load(0, va[PATHS] + v as u64 * 8, 8));
                put(&mut out, &mut n, load(0, va[DELTAS] + v as u64 * 8, 8));
                delta_u += self.paths[u] / self.paths[v] * (1.0 + self.deltas[v]);
            }
        }
        self.deltas[u] = delta_u;
        put(&mut out, &mut n, store(0, va[DELTAS] + u as u64 * 8, 8));
        put(&mut out, &mut n, load(0, va[SCORES] + u as u64 * 8, 8));
        put(&mut out, &mut n, store(0, va[SCORES] + u as u64 * 8, 8));
        n
    }
}

impl Generator for Bc {
    fn regions(&self) -> Vec<String> {
        self.layout.names.clone()
    }
    /// Whole resets and vertices while they fit in `n`: a vertex's accesses are bounded by
    /// its degree (`forward_vertex`, `backward_vertex`), and the state advances as `step`'s
    /// would with nothing written (most of a seed-scale run's windows lie billions of accesses
    /// in, which writing and dropping took about 20 ns each); from the state an earlier run's
    /// skip kept, the furthest before the target (`kept_states`).
    fn skip(&mut self, n: u64) -> u64 {
        if !self.started {
            return 0;
        }
        let (start, target) = (self.at, self.at + n);
        self.restore(target);
        let done = self.skip_counted(target - self.at);
        self.at += done;
        let entries = (self.depth.len() * 4 + self.succ.len()) as u64;
        SNAPS.keep(self.key, self.at, done, entries, || Snap {
            depth: self.depth.clone(),
            paths: self.paths.clone(),
            deltas: self.deltas.clone(),
            succ: self.succ.clone(),
            order: self.order.clone(),
            src_no: self.src_no,
            pos: self.pos,
            phase: self.phase,
            rng: self.rng.clone(),
        });
        self.at - start
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if self.layout.start_once(&mut self.started, out) {
            return self.sources > 0;
        }
        let before = out.len();
        let more = self.step_accesses(out);
        self.at += (out.len() - before) as u64;
        more
    }
}

impl Bc {
    /// Restores the kept state furthest along before or at `target`, if it is ahead of `at`.
    fn restore(&mut self, target: u64) {
        SNAPS.restore_best(self.key, self.at, target, |at, s| {
            self.at = at;
            self.depth.copy_from_slice(&s.depth);
            self.paths.copy_from_slice(&s.paths);
            self.deltas.copy_from_slice(&s.deltas);
            self.succ.copy_from_slice(&s.succ);
            self.order.clear();
            self.order.extend_from_slice(&s.order);
            self.src_no = s.src_no;
            self.pos = s.pos;
            self.phase = s.phase;
            self.rng = s.rng.clone();
        });
    }

    /// `skip` without the kept states: whole resets and vertices while they fit in `n`.
    fn skip_counted(&mut self, n: u64) -> u64 {
        let mut done = 0;
        while self.src_no < self.sources {
            let left = n - done;
            match self.phase {
                Phase::Reset => {
                    if self.reset_accesses() > left {
                        break;
                    }
                    done += self.reset(None);
                }
                Phase::Forward if self.pos == self.order.len() => self.phase = Phase::Backward,
                Phase::Forward => {
                    if 4 + 7 * self.degree_at(self.pos) > left {
                        break;
                    }
                    done += self.forward_vertex(None);
                }
                Phase::Backward if self.pos == 0 => {
                    self.src_no += 1;
                    self.phase = Phase::Reset;
                }
                Phase::Backward => {
                    if 5 + 4 * self.degree_at(self.pos - 1) > left {
                        break;
                    }
                    done += self.backward_vertex(None);
                }
            }
        }
        done
    }
    /// `step`'s accesses after the start.
    fn step_accesses(&mut self, out: &mut Vec<Record>) -> bool {
        if self.src_no >= self.sources {
            return false;
        }
        match self.phase {
            Phase::Reset => {
                self.reset(Some(out));
            }
            Phase::Forward => {
                for _ in 0..256 {
                    if self.pos == self.order.len() {
                        self.phase = Phase::Backward;
                        break;
                    }
                    self.forward_vertex(Some(out));
                }
            }
            Phase::Backward => {
                for _ in 0..256 {
                    if self.pos == 0 {
                        self.src_no += 1;
                        self.phase = Phase::Reset;
                        break;
                    }
                    self.backward_vertex(Some(out));
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `skip` passes whole resets and vertices, nothing before the start or after the last
    /// source, and what it passes is what `step` would have written.
    #[test]
    fn given_a_skip_then_it_passes_what_the_steps_would_write() {
        let get = |k: &str| match k {
            "scale" => 6,
            "edge_factor" => 4,
            "sources" => 1,
            _ => 0,
        };
        let mut whole = Bc::from_params(get, 3).unwrap();
        let mut out = Vec::new();
        while whole.step(&mut out) {}
        let total = out
            .iter()
            .filter(|r| matches!(r, Record::Access(_)))
            .count() as u64;
        let mut g = Bc::from_params(get, 3).unwrap();
        assert_eq!(g.skip(10), 0, "before the thread starts");
        assert!(g.step(&mut Vec::new()));
        let reset = g.reset_accesses();
        assert_eq!(
            g.skip(reset - 1),
            0,
            "a reset is passed whole or not at all"
        );
        let mut skipped = g.skip(total / 2);
        assert!(skipped > reset && skipped <= total / 2);
        skipped += g.skip(u64::MAX / 2);
        assert_eq!(skipped, total, "to the run's end");
        assert!(!g.step(&mut Vec::new()));
    }
}
