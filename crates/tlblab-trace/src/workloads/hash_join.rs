//! Seed 001 §5.2: a hash join (build then probe), as the seed's Hashjoin workload.
//!
//! Build: scan the inner table (16-byte tuples) sequentially, hash each key to a bucket, load the
//! bucket head, write a chain node (sequentially allocated) and store the new head. Probe: scan
//! the outer table sequentially, load the bucket head of each key's hash and walk the chain
//! (each node a dependent random load) until the key matches or the chain ends. The bucket
//! array is annotated as the main region (seed Table 5.2: the hash table dominates).

use super::gen::*;
use super::WorkloadInfo;
use tlblab_types::SplitMix64;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "hash_join",
    summary:
        "hash join: build a chained hash table from the inner table, probe it with the outer table",
    source:
        "seed 001 §5.2 (Hashjoin: table 1e8 buckets, inner 9e8, outer 1e7 rows; scaled down here)",
    in_default_set: true,
    params: populated_params! {
        buckets: 1 << 20, "hash table buckets (8-byte heads)";
        inner_rows: 1 << 20, "rows of the inner (build) table";
        outer_rows: 1 << 20, "rows of the outer (probe) table";
        iterations: 1, "probe passes (the seed ran 100)";
    },
};

pub struct HashJoin {
    buckets: u64,
    inner: u64,
    outer: u64,
    iterations: u64,
    va_buckets: u64,
    va_nodes: u64,
    va_inner: u64,
    va_outer: u64,
    layout: Layout,
    heads: Vec<u32>,
    next: Vec<u32>,
    keys: Vec<u64>,
    seed: u64,
    i: u64,
    /// Inner rows linked into `heads`/`next` so far. The build's addresses depend only on the
    /// row and its key, never on the chains, so the linking waits for the probe (`link`): a
    /// window in the build, and a skip to it, then cost the host no random write into the
    /// bucket array per row (1 GiB of heads at seed 001's size, tens of seconds a run).
    linked: u64,
    pass: u64,
    started: bool,
}

fn hash(k: u64, buckets: u64) -> u64 {
    (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 17) % buckets
}

impl HashJoin {
    pub fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let buckets = positive("hash_join", "buckets", get("buckets"))?;
        let inner = positive("hash_join", "inner_rows", get("inner_rows"))?;
        if inner >= u32::MAX as u64 {
            return Err(format!(
                "hash_join: inner_rows must be below 2^32 (got {inner})"
            ));
        }
        // The keys (8 bytes a row) and the chains (4 a row), the bucket heads (4 a bucket).
        super::memory::need(
            "hash_join",
            &[("buckets", buckets), ("inner_rows", inner)],
            (inner * 12).saturating_add(buckets.saturating_mul(4)),
        )?;
        // Below 4 GiB, so 32-bit machines can run the default sizes too.
        let mut layout = Layout::new(0x1000_0000);
        let va_buckets = layout.alloc("hashtable", buckets * 8, 1 << 21).1;
        let va_nodes = layout.alloc("chain_nodes", inner * 16, 1 << 21).1;
        let va_inner = layout.alloc("inner_table", inner * 16, 1 << 21).1;
        let outer = get("outer_rows");
        let va_outer = layout.alloc("outer_table", outer * 16, 1 << 21).1;
        let mut rng = SplitMix64::derive(seed, "workload.hash_join.keys");
        let keys = (0..inner).map(|_| rng.next_u64()).collect();
        Ok(HashJoin {
            buckets,
            inner,
            outer,
            iterations: get("iterations"),
            va_buckets,
            va_nodes,
            va_inner,
            va_outer,
            layout,
            heads: vec![u32::MAX; buckets as usize],
            next: vec![u32::MAX; inner as usize],
            keys,
            seed,
            i: 0,
            linked: 0,
            pass: 0,
            started: false,
        })
    }

    /// Links the inner rows built but not yet linked, in row order: each row's node points at
    /// its bucket's previous head and becomes the head, as the build does row by row.
    fn link(&mut self) {
        for r in self.linked..self.i.min(self.inner) {
            let b = hash(self.keys[r as usize], self.buckets) as usize;
            self.next[r as usize] = self.heads[b];
            self.heads[b] = r as u32;
        }
        self.linked = self.i.min(self.inner);
    }
}

/// A build row's accesses: its inner tuple's key, the bucket head, the chain node, the new head.
const BUILD_ACCESSES: u64 = 4;

impl Generator for HashJoin {
    fn regions(&self) -> Vec<String> {
        self.layout.names.clone()
    }
    /// Whole build rows while they fit in `n` (the probe's rows are generated): a row's
    /// accesses are `BUILD_ACCESSES`, and its linking waits for the probe (`linked`).
    fn skip(&mut self, n: u64) -> u64 {
        if !self.started || self.i >= self.inner {
            return 0;
        }
        let rows = (n / BUILD_ACCESSES).min(self.inner - self.i);
        self.i += rows;
        rows * BUILD_ACCESSES
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if self.layout.start_once(&mut self.started, out) {
            return true;
        }
        if self.i < self.inner {
            // Build phase.
            let end = (self.i + 4096).min(self.inner);
            for r in self.i..end {
                let k = self.keys[r as usize];
                out.push(load(0, self.va_inner + r * 16, 8));
                let b = hash(k, self.buckets);
                out.push(load(0, self.va_buckets + b * 8, 8));
                out.push(store(0, self.va_nodes + r * 16, 16));
                out.push(store(0, self.va_buckets + b * 8, 8));
            }
            self.i = end;
            return true;
        }
        if self.pass >= self.iterations {
            return false;
        }
        self.link();
        let r0 = self.i - self.inner;
        if r0 >= self.outer {
            self.pass += 1;
            self.i = self.inner;
            return self.pass < self.iterations;
        }
        let end = (r0 + 4096).min(self.outer);
        for r in r0..end {
            // Outer keys: half hit an inner key, half miss (a deterministic function of r).
            let mut h = SplitMix64::new(self.seed ^ r.wrapping_mul(0x2545_f491_4f6c_dd1d));
            let x = h.next_u64();
            let k = if x & 1 == 0 {
                self.keys[(x >> 1) as usize % self.inner as usize]
            } else {
                x | 1 << 63
            };
            out.push(load(0, self.va_outer + r * 16, 8));
            let b = hash(k, self.buckets);
            out.push(load(0, self.va_buckets + b * 8, 8));
            let mut n = self.heads[b as usize];
            while n != u32::MAX {
                out.push(load(0, self.va_nodes + n as u64 * 16, 16));
                if self.keys[n as usize] == k {
                    break;
                }
                n = self.next[n as usize];
            }
        }
        self.i = self.inner + end;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `skip` moves past whole build rows only, and none before the start or in the probe.
    #[test]
    fn given_a_skip_then_whole_build_rows_are_passed_and_no_probe_row() {
        let get = |k: &str| match k {
            "buckets" => 16,
            "inner_rows" => 10,
            "outer_rows" => 4,
            _ => 1,
        };
        let mut g = HashJoin::from_params(get, 1).unwrap();
        let mut out = Vec::new();
        assert_eq!(g.skip(8), 0, "before the thread starts");
        assert!(g.step(&mut out));
        assert_eq!(g.skip(7), 4);
        assert_eq!(g.skip(100), 36);
        assert_eq!(g.skip(100), 0, "the probe is generated");
        // The probe walks the chains the skipped build made: every key found is in one, so its
        // rows make more than their 2 accesses (outer tuple, bucket head) on average.
        out.clear();
        while g.step(&mut out) {}
        let probe = out
            .iter()
            .filter(|r| matches!(r, Record::Access(_)))
            .count();
        assert!(probe > 2 * 4, "{probe} probe accesses");
    }
}
