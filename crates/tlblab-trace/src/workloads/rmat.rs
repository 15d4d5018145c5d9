//! R-MAT graph generation (Chakrabarti et al.; Graph500 parameters A=0.57, B=C=0.19) into an
//! undirected CSR, shared by the Graph500-like BFS and the GAPBS-like BC (seed 001 §5.2).
//! Deterministic for a seed; self-loops dropped, duplicate edges kept (as Graph500's generator).

use super::graph_cache;
use std::sync::{Arc, Mutex};
use tlblab_types::SplitMix64;

/// The Graph500 generator's size parameters, as the Graph500-like workloads take them: `scale`
/// (log2 of the vertex count) and `edge_factor` (edges per vertex; Graph500's is 16).
pub const GRAPH500_SCALE: (&str, u64, &str) = (
    "scale",
    16,
    "log2 of the vertex count (the seed ran scale 24)",
);
pub const GRAPH500_EDGE_FACTOR: (&str, u64, &str) =
    ("edge_factor", 16, "edges per vertex (Graph500: 16)");

pub struct Csr {
    pub n: u64,
    /// offsets[v]..offsets[v+1] index `adj`.
    pub offsets: Vec<u64>,
    pub adj: Vec<u32>,
}

/// The R-MAT edge list of `rmat(scale, edge_factor, seed)` in the order it is drawn (each edge
/// independent of the others), self-loops kept, vertex ids scrambled: `scale * 2^scale *
/// edge_factor` draws, then the scramble (a random permutation, drawn from the same stream).
/// The Graph500-like list BFS (graph500_list.rs) reads it as Graph500's edge list; `rmat`
/// builds its CSR from it, so both see the same graph.
pub fn edge_list(scale: u32, edge_factor: u64, seed: u64) -> Vec<(u32, u32)> {
    let parts = std::thread::available_parallelism().map_or(1, |p| p.get());
    edge_list_in_parts(scale, edge_factor, seed, parts.clamp(1, 8))
}

/// `edge_list`, its draws made in `parts` threads.
fn edge_list_in_parts(scale: u32, edge_factor: u64, seed: u64, parts: usize) -> Vec<(u32, u32)> {
    let n = 1u64 << scale;
    let m = n * edge_factor;
    let mut rng = SplitMix64::derive(seed, "workload.rmat");
    let mut edges: Vec<(u32, u32)> = vec![(0, 0); m as usize];
    // Edge k takes draws k * scale .. (k + 1) * scale of the stream, and SplitMix64 can start
    // anywhere in it (`skip`), so the edges are drawn in parts on the host's cores, the same
    // numbers as one after the other (seed 001's scale-24 graph: 6.4 G draws, most of building
    // it).
    let per = edges.len().div_ceil(parts.max(1)).max(1);
    std::thread::scope(|s| {
        for (i, part) in edges.chunks_mut(per).enumerate() {
            let mut g = rng.clone();
            g.skip(i as u64 * per as u64 * scale as u64);
            s.spawn(move || draw_edges(part, &mut g, scale));
        }
    });
    rng.skip(m * scale as u64);
    // Scramble vertex ids (Graph500 does), so hubs are not all at low addresses.
    let mut perm: Vec<u32> = (0..n as u32).collect();
    rng.shuffle(&mut perm);
    for e in edges.iter_mut() {
        *e = (perm[e.0 as usize], perm[e.1 as usize]);
    }
    edges
}

/// R-MAT's quadrant probabilities (Graph500: A = 0.57, B = C = 0.19, D the rest).
const RMAT_A: f64 = 0.57;
const RMAT_B: f64 = 0.19;
const RMAT_C: f64 = 0.19;

/// Draws `out.len()` edges from `g`, `scale` draws each: at each bit a quadrant, (0, 0) below A,
/// (0, 1) below A + B, (1, 0) below A + B + C, else (1, 1). Computed without branches on the
/// draw: they were unpredictable by design (one mispredict in two levels or so), most of the
/// time it took.
fn draw_edges(out: &mut [(u32, u32)], g: &mut SplitMix64, scale: u32) {
    let (a, ab) = (RMAT_A, RMAT_A + RMAT_B);
    let abc = ab + RMAT_C;
    for e in out.iter_mut() {
        let (mut u, mut v) = (0u64, 0u64);
        for bit in 0..scale {
            let r = g.next_f64();
            let du = (r >= ab) as u64;
            let dv = (((r >= a) & (r < ab)) | (r >= abc)) as u64;
            u |= du << bit;
            v |= dv << bit;
        }
        *e = (u as u32, v as u32);
    }
}

/// The host memory `rmat(scale, edge_factor, _)` takes at its peak, with the CSR it leaves
/// (the edge list's 8 bytes an edge and the scramble's 4 a vertex; then the degrees, offsets
/// and fill cursors, 8 bytes a vertex each, and the adjacency, 4 bytes for each end of an
/// edge); saturating, for `memory::need`.
pub fn bytes(scale: u32, edge_factor: u64) -> u64 {
    let n = 1u64 << scale;
    let m = n.saturating_mul(edge_factor);
    m.saturating_mul(16).saturating_add(n.saturating_mul(28))
}

pub fn rmat(scale: u32, edge_factor: u64, seed: u64) -> Csr {
    let n = 1u64 << scale;
    let mut edges = edge_list(scale, edge_factor, seed);
    // Self-loops dropped.
    edges.retain(|&(u, v)| u != v);
    let mut deg = vec![0u64; n as usize + 1];
    for &(u, v) in &edges {
        deg[u as usize] += 1;
        deg[v as usize] += 1;
    }
    let mut offsets = vec![0u64; n as usize + 1];
    for i in 0..n as usize {
        offsets[i + 1] = offsets[i] + deg[i];
    }
    drop(deg);
    let mut fill = offsets.clone();
    let mut adj = vec![0u32; offsets[n as usize] as usize];
    for &(pu, pv) in &edges {
        adj[fill[pu as usize] as usize] = pv;
        fill[pu as usize] += 1;
        adj[fill[pv as usize] as usize] = pu;
        fill[pv as usize] += 1;
    }
    Csr { n, offsets, adj }
}

/// One value kept for the next call with the same key in this process: a graph that takes a
/// minute and gigabytes of host memory to build, which seed 001's runs at one scale (a baseline
/// and each helper) all read. A call with another key drops the kept value before building its
/// own, so at most one is held.
pub struct KeepLast<K, T>(Mutex<Option<(K, Arc<T>)>>);

impl<K: PartialEq, T> Default for KeepLast<K, T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: PartialEq, T> KeepLast<K, T> {
    pub const fn new() -> Self {
        KeepLast(Mutex::new(None))
    }
    /// The value kept for `key`, or `build()` kept in its place.
    pub fn get(&self, key: K, build: impl FnOnce() -> T) -> Arc<T> {
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((k, v)) = last.as_ref() {
            if *k == key {
                return Arc::clone(v);
            }
        }
        *last = None;
        let v = Arc::new(build());
        *last = Some((key, Arc::clone(&v)));
        v
    }
    /// Drops the kept value.
    pub fn clear(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

static LAST: KeepLast<graph_cache::RmatKey, Csr> = KeepLast::new();

/// `rmat(scale, edge_factor, seed)`, kept for the next call with the same arguments
/// (`KeepLast`): seed 001's scale-24 graph (Table 5.2) takes over a minute and several GB of
/// host memory to build; `release` drops it (`workloads::build` does, for any other workload).
/// With a cache directory set (`graph_cache::set_directory`), the graph is read from there
/// when a process has not built it yet, and written there once built.
pub fn shared(scale: u32, edge_factor: u64, seed: u64) -> Arc<Csr> {
    graph_cache::kept(&LAST, (scale, edge_factor, seed), rmat)
}

impl graph_cache::Cached for Csr {
    const KIND: &'static str = "rmat_csr";
    /// Raise when `edge_list` or `rmat` changes the graph they build.
    const GENERATOR: u32 = 1;
    fn arrays(&self) -> Vec<graph_cache::ArrayRef<'_>> {
        use graph_cache::ArrayRef::*;
        vec![
            U64(std::slice::from_ref(&self.n)),
            U64(&self.offsets),
            U32(&self.adj),
        ]
    }
    fn from_arrays(arrays: Vec<graph_cache::Array>) -> Result<Self, String> {
        use graph_cache::Array::*;
        match <[graph_cache::Array; 3]>::try_from(arrays) {
            Ok([U64(n), U64(offsets), U32(adj)])
                if n.len() == 1
                    && offsets.len() as u64 == n[0] + 1
                    && offsets.last() == Some(&(adj.len() as u64)) =>
            {
                Ok(Csr {
                    n: n[0],
                    offsets,
                    adj,
                })
            }
            _ => Err(
                "the arrays are not a CSR graph (n, offsets of n + 1, adjacency of offsets[n])"
                    .into(),
            ),
        }
    }
}

/// Drops the graph `shared` keeps.
pub fn release() {
    LAST.clear();
}

/// The first vertex with an edge at or after `start` (BFS roots must not be isolated).
pub fn root_with_edges(g: &Csr, start: u64) -> u64 {
    for k in 0..g.n {
        let v = (start + k) % g.n;
        if g.offsets[v as usize + 1] > g.offsets[v as usize] {
            return v;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The edge list as first written: one draw after the other, a branch per quadrant.
    fn edge_list_one_by_one(scale: u32, edge_factor: u64, seed: u64) -> Vec<(u32, u32)> {
        let n = 1u64 << scale;
        let mut rng = SplitMix64::derive(seed, "workload.rmat");
        let (a, b, c) = (0.57, 0.19, 0.19);
        let mut edges = Vec::new();
        for _ in 0..n * edge_factor {
            let (mut u, mut v) = (0u64, 0u64);
            for bit in 0..scale {
                let r = rng.next_f64();
                let (du, dv) = if r < a {
                    (0, 0)
                } else if r < a + b {
                    (0, 1)
                } else if r < a + b + c {
                    (1, 0)
                } else {
                    (1, 1)
                };
                u |= du << bit;
                v |= dv << bit;
            }
            edges.push((u as u32, v as u32));
        }
        let mut perm: Vec<u32> = (0..n as u32).collect();
        rng.shuffle(&mut perm);
        edges
            .iter()
            .map(|&(u, v)| (perm[u as usize], perm[v as usize]))
            .collect()
    }

    #[test]
    fn given_any_number_of_parts_then_the_edges_are_those_drawn_one_by_one() {
        for (scale, edge_factor, seed) in [(1, 1, 0), (4, 3, 1), (10, 16, 0), (11, 5, 7)] {
            let want = edge_list_one_by_one(scale, edge_factor, seed);
            for parts in [1, 2, 3, 7, 64] {
                assert_eq!(
                    edge_list_in_parts(scale, edge_factor, seed, parts),
                    want,
                    "scale {scale}, edge factor {edge_factor}, seed {seed}, {parts} parts"
                );
            }
            assert_eq!(edge_list(scale, edge_factor, seed), want);
        }
    }
}
