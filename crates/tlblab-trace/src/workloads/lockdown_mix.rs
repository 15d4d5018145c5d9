//! Seed 004 §V.1: single-core and multi-core scenarios mixing one real-time process with
//! background processes, for TLB lockdown of the most-accessed pages.
//!
//! The seed ran MiBench: real-time (SCHED_FIFO) `basicmath`, `qsort` or `susan`; background
//! (SCHED_OTHER) `cjpeg`, `djpeg`, `typeset` (seed Table 1). Single-core: cjpeg, then djpeg,
//! then the real-time program, on one core, repeated (the seed measured the real-time process
//! 100 times). Multi-core: cores 1-3 loop cjpeg, djpeg and typeset; core 0 (the seed's core 4)
//! runs cjpeg, djpeg, then the real-time program. Each real-time run is job k of task 0
//! (`JobStart`/`JobEnd`), so per-run miss counts can be compared with and without lockdown.
//!
//! The programs here are *kernels with the programs' memory behaviour*, computed for real on
//! seeded data: qsort sorts string pointers by their strings (MiBench qsort_small); susan runs
//! its 37-pixel circular mask with a brightness look-up table over a greyscale image; basicmath
//! is compute-bound (a few stack slots per iteration); cjpeg/djpeg stream an RGB image through
//! 8×8 blocks with DCT workspace, quantisation and Huffman tables; typeset streams text through
//! a word hash table. To use the real programs instead, capture them with
//! `tlblab trace record` (docs/traces.md names the Debian packages).

use super::gen::*;
use super::WorkloadInfo;
use crate::record::Event;
use tlblab_types::{SplitMix64, ThreadId};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "lockdown_mix",
    summary: "a real-time MiBench-like program amid cjpeg/djpeg/typeset-like background processes, 1 or 4 cores",
    source: "seed 004 §V.1 (scenarios), Table 1 (benchmarks)",
    in_default_set: true,
    params: params! {
        rt: 1, "real-time program: 0 = basicmath, 1 = qsort, 2 = susan";
        cores: 1, "1 = single-core scenario, 4 = multi-core scenario (any n >= 2: n-1 background cores)";
        repeats: 10, "real-time runs (the seed measured 100)";
        scale: 1, "input size multiplier of every program";
    },
};

// A 32-bit ARM Linux user layout (TASK_SIZE 0xbf00_0000): the seed's own 32-bit machines can run
// it, and the same addresses are valid on 64-bit ones.
const HEAP: u64 = 0x0100_0000;
const STACK: u64 = 0xbeff_0000;

/// One program's memory behaviour, produced in bounded chunks; `restart` begins a new run.
trait Kernel: Send {
    fn next(&mut self, t: u32, out: &mut Vec<Record>) -> bool;
    fn restart(&mut self);
}

/// MiBench qsort_small: sort pointers to strings with strcmp.
struct Qsort {
    trace: Vec<(bool, u64)>,
    pos: usize,
}

impl Qsort {
    fn new(n: usize, seed: u64) -> Self {
        let mut rng = SplitMix64::derive(seed, "workload.lockdown.qsort");
        let keys: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
        // String pool after the pointer array; each string 16..64 bytes.
        let ptrs = HEAP;
        let mut addr = HEAP + (n as u64 * 8).div_ceil(4096) * 4096;
        let mut str_at = Vec::with_capacity(n);
        for _ in 0..n {
            str_at.push(addr);
            addr += 16 + rng.below(49);
        }
        let mut idx: Vec<usize> = (0..n).collect();
        let mut tr = Vec::new();
        // Iterative Hoare quicksort, recording each pointer load/store and strcmp's load.
        let mut stack = vec![(0isize, n as isize - 1)];
        while let Some((lo, hi)) = stack.pop() {
            if lo >= hi {
                continue;
            }
            let mid = ((lo + hi) / 2) as usize;
            tr.push((false, ptrs + mid as u64 * 8));
            let pivot = idx[mid];
            let (mut i, mut j) = (lo - 1, hi + 1);
            loop {
                loop {
                    i += 1;
                    tr.push((false, ptrs + i as u64 * 8));
                    tr.push((false, str_at[idx[i as usize]]));
                    tr.push((false, str_at[pivot]));
                    if keys[idx[i as usize]] >= keys[pivot] {
                        break;
                    }
                }
                loop {
                    j -= 1;
                    tr.push((false, ptrs + j as u64 * 8));
                    tr.push((false, str_at[idx[j as usize]]));
                    tr.push((false, str_at[pivot]));
                    if keys[idx[j as usize]] <= keys[pivot] {
                        break;
                    }
                }
                if i >= j {
                    break;
                }
                idx.swap(i as usize, j as usize);
                tr.push((true, ptrs + i as u64 * 8));
                tr.push((true, ptrs + j as u64 * 8));
            }
            stack.push((lo, j));
            stack.push((j + 1, hi));
        }
        Qsort { trace: tr, pos: 0 }
    }
}

impl Kernel for Qsort {
    fn next(&mut self, t: u32, out: &mut Vec<Record>) -> bool {
        let end = (self.pos + 4096).min(self.trace.len());
        for &(w, a) in &self.trace[self.pos..end] {
            out.push(if w { store(t, a, 8) } else { load(t, a, 8) });
        }
        self.pos = end;
        self.pos < self.trace.len()
    }
    fn restart(&mut self) {
        self.pos = 0;
    }
}

/// MiBench susan (smoothing/edges): 37-pixel circular mask + brightness LUT per pixel.
struct Susan {
    w: u64,
    h: u64,
    row: u64,
}

const SUSAN_MASK: [(i64, i64); 37] = [
    (-3, -1),
    (-3, 0),
    (-3, 1),
    (-2, -2),
    (-2, -1),
    (-2, 0),
    (-2, 1),
    (-2, 2),
    (-1, -3),
    (-1, -2),
    (-1, -1),
    (-1, 0),
    (-1, 1),
    (-1, 2),
    (-1, 3),
    (0, -3),
    (0, -2),
    (0, -1),
    (0, 0),
    (0, 1),
    (0, 2),
    (0, 3),
    (1, -3),
    (1, -2),
    (1, -1),
    (1, 0),
    (1, 1),
    (1, 2),
    (1, 3),
    (2, -2),
    (2, -1),
    (2, 0),
    (2, 1),
    (2, 2),
    (3, -1),
    (3, 0),
    (3, 1),
];

impl Kernel for Susan {
    fn next(&mut self, t: u32, out: &mut Vec<Record>) -> bool {
        let img = HEAP;
        let lut = HEAP + 0x10_0000;
        let outp = HEAP + 0x20_0000;
        let y = self.row + 3;
        for x in 3..self.w - 3 {
            let c = img + y * self.w + x;
            for &(dy, dx) in &SUSAN_MASK {
                let p = (c as i64 + dy * self.w as i64 + dx) as u64;
                out.push(load(t, p, 1));
                // bp[centre - pixel]: 516-byte table, index depends on the brightness difference.
                out.push(load(
                    t,
                    lut + 258 + ((p.wrapping_mul(0x9e37) >> 7) % 256) - 128,
                    1,
                ));
            }
            out.push(store(t, outp + y * self.w + x, 1));
        }
        self.row += 1;
        self.row + 6 < self.h
    }
    fn restart(&mut self) {
        self.row = 0;
    }
}

/// MiBench basicmath: cubic roots, integer square roots, angle conversion — compute-bound, a few
/// stack slots per iteration.
struct Basicmath {
    iters: u64,
    i: u64,
}

impl Kernel for Basicmath {
    fn next(&mut self, t: u32, out: &mut Vec<Record>) -> bool {
        let end = (self.i + 512).min(self.iters);
        for i in self.i..end {
            let f = STACK + 0xe00 - (i % 3) * 0x40;
            for k in 0..4 {
                out.push(load(t, f + k * 8, 8));
            }
            out.push(store(t, f + 32, 8));
            out.push(store(t, f + 40, 8));
        }
        self.i = end;
        self.i < self.iters
    }
    fn restart(&mut self) {
        self.i = 0;
    }
}

/// cjpeg (encode=true) / djpeg (encode=false): an RGB image through 8×8 blocks.
struct Jpeg {
    encode: bool,
    w: u64,
    h: u64,
    block: u64,
    rng: SplitMix64,
}

impl Kernel for Jpeg {
    fn next(&mut self, t: u32, out: &mut Vec<Record>) -> bool {
        let raw = HEAP; // RGB pixels
        let coded = HEAP + 0x100_0000; // compressed stream
        let work = STACK + 0x800; // DCT workspace, 64 × 4 B
        let quant = HEAP + 0x200_0000;
        let huff = quant + 0x1000; // Huffman tables
        let bw = self.w / 8;
        let (bx, by) = (self.block % bw, self.block / bw);
        let rows: Vec<u64> = (0..8)
            .map(|r| raw + ((by * 8 + r) * self.w + bx * 8) * 3)
            .collect();
        if self.encode {
            for &r in &rows {
                out.push(load(t, r, 8));
                out.push(load(t, r + 8, 8));
                out.push(load(t, r + 16, 8));
            }
        } else {
            out.push(load(t, coded + self.block * 12, 8));
        }
        for k in 0..64 {
            out.push(store(t, work + k * 4, 4));
        }
        for k in 0..64 {
            out.push(load(t, work + k * 4, 4));
            out.push(load(t, quant + k * 2, 2));
        }
        for _ in 0..12 {
            out.push(load(t, huff + self.rng.below(1600), 4));
        }
        if self.encode {
            out.push(store(t, coded + self.block * 12, 8));
        } else {
            for &r in &rows {
                out.push(store(t, r, 8));
                out.push(store(t, r + 8, 8));
                out.push(store(t, r + 16, 8));
            }
        }
        self.block += 1;
        self.block < bw * (self.h / 8)
    }
    fn restart(&mut self) {
        self.block = 0;
    }
}

/// typeset: stream text, look each word up in a hash table, write the output.
struct Typeset {
    bytes: u64,
    pos: u64,
    rng: SplitMix64,
}

impl Kernel for Typeset {
    fn next(&mut self, t: u32, out: &mut Vec<Record>) -> bool {
        let text = HEAP;
        let table = HEAP + 0x100_0000;
        let outp = HEAP + 0x200_0000;
        let end = (self.pos + 4096).min(self.bytes);
        let mut p = self.pos;
        while p < end {
            out.push(load(t, text + p, 8));
            if p.is_multiple_of(48) {
                let slot = self.rng.below(32768);
                out.push(load(t, table + slot * 8, 8));
                if slot.is_multiple_of(8) {
                    out.push(store(t, table + slot * 8, 8));
                }
            }
            out.push(store(t, outp + p, 8));
            p += 8;
        }
        self.pos = end;
        self.pos < self.bytes
    }
    fn restart(&mut self) {
        self.pos = 0;
    }
}

struct Slot {
    /// The programs this core runs in turn: (kernel index, thread, is the real-time one).
    plan: Vec<(usize, u32, bool)>,
    step: usize,
}

pub struct LockdownMix {
    kernels: Vec<Box<dyn Kernel>>,
    slots: Vec<Slot>,
    repeats: u64,
    rt_done: u64,
    cur: usize,
    started: bool,
    region_names: Vec<String>,
}

impl LockdownMix {
    pub fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        // The sizes below are multiples of the scale up to 64 Ki times it: 2^40 keeps them in u64.
        let s = in_range("lockdown_mix", "scale", get("scale"), 1, 1 << 40)?;
        let cores = positive("lockdown_mix", "cores", get("cores"))?;
        if cores > 256 {
            return Err(format!(
                "lockdown_mix: cores must be at most 256 (got {cores})"
            ));
        }
        let rt: Box<dyn Kernel> = match get("rt") {
            0 => Box::new(Basicmath {
                iters: 20000 * s,
                i: 0,
            }),
            1 => {
                // qsort's keys, strings and index (8 bytes an element each) and its recorded
                // references, 16 bytes each: at most 8 per element and level of the sort.
                let n = 2000 * s;
                let levels = 64 - n.leading_zeros() as u64;
                super::memory::need(
                    "lockdown_mix",
                    &[("scale", s), ("rt", 1)],
                    n.saturating_mul(24 + 128 * levels),
                )?;
                Box::new(Qsort::new(n as usize, seed))
            }
            2 => Box::new(Susan {
                w: 96 * s.min(8),
                h: 72 * s.min(8),
                row: 0,
            }),
            v => {
                return Err(format!(
                    "lockdown_mix: rt must be 0 (basicmath), 1 (qsort) or 2 (susan), got {v}"
                ))
            }
        };
        let mk = |k: u64, seed: u64| -> Box<dyn Kernel> {
            let rng = SplitMix64::derive(seed, "workload.lockdown.bg");
            match k {
                0 => Box::new(Jpeg {
                    encode: true,
                    w: 128 * s.min(8),
                    h: 96 * s.min(8),
                    block: 0,
                    rng,
                }),
                1 => Box::new(Jpeg {
                    encode: false,
                    w: 128 * s.min(8),
                    h: 96 * s.min(8),
                    block: 0,
                    rng,
                }),
                _ => Box::new(Typeset {
                    bytes: 64 * 1024 * s,
                    pos: 0,
                    rng,
                }),
            }
        };
        // Kernel 0 = real-time; then each background program instance has its own state.
        let mut kernels = vec![rt];
        let mut slots = Vec::new();
        kernels.push(mk(0, seed)); // core 0's cjpeg
        kernels.push(mk(1, seed)); // core 0's djpeg
        slots.push(Slot {
            plan: vec![(1, 1, false), (2, 2, false), (0, 0, true)],
            step: 0,
        });
        for c in 1..cores {
            let k = (c - 1) % 3;
            kernels.push(mk(k, seed ^ c));
            slots.push(Slot {
                plan: vec![(kernels.len() - 1, 2 + c as u32, false)],
                step: 0,
            });
        }
        Ok(LockdownMix {
            kernels,
            slots,
            repeats: get("repeats"),
            rt_done: 0,
            cur: 0,
            started: false,
            region_names: vec!["heap".into(), "stack".into()],
        })
    }
}

impl Generator for LockdownMix {
    fn regions(&self) -> Vec<String> {
        self.region_names.clone()
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if !self.started {
            self.started = true;
            // Core 0 runs thread 0 (the real-time process 0), thread 1 (cjpeg, process 1) and
            // thread 2 (djpeg, process 2); background core c runs thread 2+c in process 2+c.
            for s in &self.slots {
                for &(_, t, _) in &s.plan {
                    out.push(ev(Event::ThreadStart {
                        thread: ThreadId(t),
                        process: t,
                    }));
                }
            }
            for (c, s) in self.slots.iter().enumerate() {
                out.push(switch(c as u16, None, Some(s.plan[0].1)));
            }
            if self.repeats > 0 {
                out.push(ev(Event::TaskRelease { task: 0, job: 0 }));
            }
            return self.repeats > 0;
        }
        if self.rt_done >= self.repeats {
            return false;
        }
        // Round-robin over cores, one chunk each.
        let c = self.cur;
        self.cur = (self.cur + 1) % self.slots.len();
        let slot = &mut self.slots[c];
        let (k, t, is_rt) = slot.plan[slot.step];
        if !self.kernels[k].next(t, out) {
            self.kernels[k].restart();
            if is_rt {
                out.push(ev(Event::JobEnd {
                    task: 0,
                    job: self.rt_done as u32,
                }));
                self.rt_done += 1;
                if self.rt_done < self.repeats {
                    out.push(ev(Event::TaskRelease {
                        task: 0,
                        job: self.rt_done as u32,
                    }));
                }
            }
            slot.step = (slot.step + 1) % slot.plan.len();
            let (_, nt, nrt) = slot.plan[slot.step];
            if nt != t {
                out.push(switch(c as u16, Some(t), Some(nt)));
            }
            if nrt && self.rt_done < self.repeats {
                out.push(ev(Event::JobStart {
                    task: 0,
                    job: self.rt_done as u32,
                }));
            }
        }
        true
    }
}
