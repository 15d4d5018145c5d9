//! The benchmark kernels of seed 003 §6.0.9-6.0.10 as access patterns over a task's heap data:
//! the Mälardalen *bubble sort*, *insertion sort*, *nth largest* (`select`) and *statistics*
//! (`st`) used for Table 6.1, *fft* and *adpcm* (Fig. 6.13), and *FIR* with the Mi-bench-style
//! *adpcm* (Fig. 6.14). The seed "modified the benchmarks so that they use heap allocated
//! regions" and sized them to the table's pages; each runs here on real (seeded random) data,
//! so the data-dependent kernels (insertion sort, select) take the paths their data gives.
//!
//! Granularity: an element is one 64-byte line (a page holds 64). The TLB sees the page sequence
//! of the element-by-element kernel, with the 16 word accesses to one line collapsed into one
//! reference; this keeps a job (at `accesses_per_ms`) long enough to cover all its pages, as
//! the seed's 0.2-27 ms jobs at 2 GHz did many times over. A run is capped at `CAP` references
//! (a bubble sort of 1024 elements would take 10^6) and then starts again; every pass of every
//! kernel still sweeps all its pages.

use tlblab_types::SplitMix64;

/// One reference of a kernel: the line (element) index and whether it writes.
pub type Ref = (u32, bool);

/// References of one run at most (about 64 passes of a 16-page array).
pub const CAP: usize = 1 << 16;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kernel {
    /// Seed §6.0.8's synthetic task: one write to each page in turn (no kernel).
    Pages,
    Bubble,
    Insertion,
    Nth,
    Statistics,
    Fft,
    Adpcm,
    Fir,
}

impl Kernel {
    pub fn from_code(name: &str, code: u64) -> Result<Kernel, String> {
        Ok(match code {
            0 => Kernel::Pages,
            1 => Kernel::Bubble,
            2 => Kernel::Insertion,
            3 => Kernel::Nth,
            4 => Kernel::Statistics,
            5 => Kernel::Fft,
            6 => Kernel::Adpcm,
            7 => Kernel::Fir,
            _ => return Err(format!("{name}: kernel codes are 0 (pages), 1 (bubble), 2 (insertion), 3 (nth largest), 4 (statistics), 5 (fft), 6 (adpcm), 7 (fir); got {code}")),
        })
    }

    /// One run over `lines` elements, data drawn from `rng`.
    pub fn run(self, lines: u32, rng: &mut SplitMix64) -> Vec<Ref> {
        let n = lines.max(2);
        let mut out = Vec::with_capacity(CAP.min(64 * n as usize));
        let full = |o: &Vec<Ref>| o.len() >= CAP;
        let mut data: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
        match self {
            Kernel::Pages => {
                for p in 0..n.div_ceil(64) {
                    out.push((p * 64, true));
                }
            }
            Kernel::Bubble => {
                // Mälardalen bsort100: for i, for j < n-1-i: compare a[j], a[j+1], swap.
                'outer: for i in 0..n - 1 {
                    for j in 0..n - 1 - i {
                        out.push((j, false));
                        out.push((j + 1, false));
                        if data[j as usize] > data[j as usize + 1] {
                            data.swap(j as usize, j as usize + 1);
                            out.push((j, true));
                            out.push((j + 1, true));
                        }
                        if full(&out) {
                            break 'outer;
                        }
                    }
                }
            }
            Kernel::Insertion => {
                // Mälardalen insertsort: shift larger elements right, then insert the key. Its
                // elements are 256-byte records (four lines) so that a sort of random data
                // (n²/4 shifts) completes within a run and reaches every page.
                const REC: u32 = 4;
                let m = (n / REC).max(2) as usize;
                'outer: for i in 1..m {
                    let key = data[i];
                    out.push((i as u32 * REC, false));
                    let mut j = i;
                    while j > 0 {
                        out.push(((j as u32 - 1) * REC, false));
                        if data[j - 1] <= key {
                            break;
                        }
                        data[j] = data[j - 1];
                        out.push((j as u32 * REC, true));
                        j -= 1;
                        if full(&out) {
                            break 'outer;
                        }
                    }
                    data[j] = key;
                    out.push((j as u32 * REC, true));
                }
            }
            Kernel::Nth => {
                // Mälardalen select (Numerical Recipes): partition around a pivot until the
                // k-th (median) element is in place; repeated for successive k to fill the run.
                let mut k = n as usize / 2;
                while !full(&out) {
                    let (mut l, mut r) = (0usize, n as usize - 1);
                    while l < r && !full(&out) {
                        let pivot = data[r];
                        out.push((r as u32, false));
                        let mut s = l;
                        for i in l..r {
                            out.push((i as u32, false));
                            if data[i] < pivot {
                                data.swap(i, s);
                                out.push((i as u32, true));
                                out.push((s as u32, true));
                                s += 1;
                            }
                        }
                        data.swap(s, r);
                        out.push((s as u32, true));
                        out.push((r as u32, true));
                        if s == k {
                            break;
                        } else if s < k {
                            l = s + 1;
                        } else {
                            r = s.saturating_sub(1);
                        }
                    }
                    // Reshuffle the data so the next selection partitions again.
                    for v in data.iter_mut() {
                        *v = rng.next_u64() as u32;
                    }
                    k = (k * 7 + 1) % n as usize;
                }
            }
            Kernel::Statistics => {
                // Mälardalen st: Sum and Mean of A and B, Variance of each, then Correlation of
                // A with B: five sweeps, the last over both arrays together.
                let h = n / 2;
                while !full(&out) {
                    for base in [0, h] {
                        for i in 0..h {
                            out.push((base + i, false)); // Sum
                        }
                        for i in 0..h {
                            out.push((base + i, false)); // Variance
                        }
                    }
                    for i in 0..h {
                        out.push((i, false));
                        out.push((h + i, false)); // Correlation
                    }
                }
                out.truncate(CAP);
            }
            Kernel::Fft => {
                // Mälardalen fft1: real and imaginary arrays (halves), bit-reversal permutation,
                // then log2(m) stages of butterflies on pairs span apart.
                let m = (n / 2).next_power_of_two() / if (n / 2).is_power_of_two() { 1 } else { 2 };
                let im = n / 2;
                let bits = m.trailing_zeros();
                // A swap or a butterfly of two complex values: both read (the real half, then
                // the imaginary), then both written.
                let exchange = |out: &mut Vec<Ref>, a, b| {
                    for write in [false, true] {
                        for x in [a, b] {
                            out.push((x, write));
                            out.push((im + x, write));
                        }
                    }
                };
                while !full(&out) {
                    for i in 0..m {
                        let j = if bits == 0 {
                            0
                        } else {
                            i.reverse_bits() >> (32 - bits)
                        };
                        if j > i {
                            exchange(&mut out, i, j);
                        }
                    }
                    let mut span = 1;
                    while span < m {
                        for start in (0..m).step_by(2 * span as usize) {
                            for k in 0..span {
                                exchange(&mut out, start + k, start + k + span);
                            }
                        }
                        span *= 2;
                    }
                }
                out.truncate(CAP);
            }
            Kernel::Adpcm => {
                // Mälardalen adpcm: encode a sample stream into codes and decode them back. Its
                // tables (step sizes, index and quantiser tables) are the first line; input
                // samples the next 2/3 of the data, codes (a quarter of the samples' size) and
                // decoded samples share the rest.
                let input = (n - 1) * 2 / 3;
                let codes = 1 + input;
                let dec = codes + input.div_ceil(4);
                let last = n - 1;
                while !full(&out) {
                    for i in 0..input {
                        out.push((1 + i, false));
                        out.push((0, false)); // step and index tables
                        if i % 4 == 3 {
                            out.push(((codes + i / 4).min(last), true));
                        }
                    }
                    for i in 0..input {
                        if i % 4 == 0 {
                            out.push(((codes + i / 4).min(last), false));
                        }
                        out.push((0, false));
                        out.push(((dec + i % (last - dec + 1).max(1)).min(last), true));
                    }
                }
                out.truncate(CAP);
            }
            Kernel::Fir => {
                // Mälardalen fir: for every output, a dot product of the coefficients (the first
                // `taps` lines) with a sliding window of the input; outputs in the last lines.
                let taps = (n / 16).clamp(1, 32);
                let outs = (n / 8).max(1);
                let input = n - taps - outs;
                let first_out = taps + input;
                while !full(&out) {
                    for i in 0..input.saturating_sub(taps).max(1) {
                        for k in 0..taps {
                            out.push((k, false));
                            out.push(((taps + i + k).min(first_out - 1), false));
                        }
                        out.push((first_out + i % outs, true));
                    }
                }
                out.truncate(CAP);
            }
        }
        out.truncate(CAP);
        if out.is_empty() {
            out.push((0, true));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_touches_every_page_of_its_data_in_one_run() {
        for code in 1..=7 {
            let k = Kernel::from_code("t", code).unwrap();
            let lines = 16 * 64;
            let mut rng = SplitMix64::new(3);
            let run = k.run(lines, &mut rng);
            let pages: std::collections::HashSet<u32> = run.iter().map(|r| r.0 / 64).collect();
            assert_eq!(pages.len(), 16, "{k:?}");
            assert!(run.iter().all(|r| r.0 < lines), "{k:?}");
            assert!(run.len() <= CAP);
        }
    }
}
