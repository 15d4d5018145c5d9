//! Seed 001 §5.2: GUPS, the HPCC RandomAccess benchmark.
//!
//! `ran = (ran << 1) ^ (ran < 0 ? POLY : 0); table[ran & (size-1)] ^= ran` with HPCC's
//! primitive polynomial POLY = 7: a load and a store of one 8-byte word at a pseudo-random index
//! per update. The table is the single region PT-Baker warms (seed Table 5.2: 32 GB).

use super::gen::*;
use super::WorkloadInfo;
use tlblab_types::SplitMix64;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "gups",
    summary: "HPCC RandomAccess: read-modify-write of random 8-byte words of a 2^log2_words table",
    source: "seed 001 §5.2 (GUPS, Table 5.2)",
    in_default_set: true,
    params: populated_params! {
        log2_words: 22, "table size: 2^log2_words 8-byte words (22 = 32 MiB; the seed used 32 GB)";
        updates: 1 << 22, "number of updates (HPCC: 4 x table words)";
    },
};

const POLY: u64 = 7;

pub struct Gups {
    mask: u64,
    updates: u64,
    i: u64,
    ran: u64,
    base: u64,
    layout: Layout,
}

impl Gups {
    pub fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let lw = in_range("gups", "log2_words", get("log2_words"), 1, 40)?;
        // Below 4 GiB, so 32-bit machines can run the default sizes too.
        let mut layout = Layout::new(0x1000_0000);
        let (_, base) = layout.alloc("table", 8 << lw, 1 << 21);
        // HPCC starts at HPCC_starts(0) = 1; other seeds start elsewhere on the same sequence.
        let ran = if seed == 0 {
            1
        } else {
            SplitMix64::derive(seed, "workload.gups").next_u64() | 1
        };
        Ok(Gups {
            mask: (1 << lw) - 1,
            updates: get("updates"),
            i: 0,
            ran,
            base,
            layout,
        })
    }
}

impl Generator for Gups {
    fn regions(&self) -> Vec<String> {
        self.layout.names.clone()
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if self.i == self.updates {
            return false;
        }
        if self.i == 0 {
            self.layout.start_one_thread(out);
            // Every update's address comes from `ran`, in a register: none depends on a load
            // (HPCC RandomAccess, `Table[ran & (TableSize-1)] ^= ran`), so the updates are
            // independent and an out-of-order core keeps several in flight.
            out.push(independent(0, true));
        }
        let end = (self.i + 32768).min(self.updates);
        for _ in self.i..end {
            self.ran = (self.ran << 1) ^ if (self.ran as i64) < 0 { POLY } else { 0 };
            let a = self.base + (self.ran & self.mask) * 8;
            out.push(load(0, a, 8));
            out.push(store(0, a, 8));
        }
        self.i = end;
        if self.i == self.updates {
            // The run's end waits for the updates in flight.
            out.push(independent(0, false));
        }
        true
    }
}
