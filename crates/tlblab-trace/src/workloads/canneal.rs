//! Seed 001 §5.2: a PARSEC-canneal-like simulated-annealing placement (the seed's Canneal).
//!
//! As PARSEC 3.0 canneal: the netlist is an array of `netlist_elem` (netlist.h/netlist_elem.h:
//! the element's name string, its `fanin` and `fanout` vectors of element pointers, and
//! `present_loc`, a pointer to its cell of the chip's grid of `location_t {int x, y}`). Each
//! step of `annealer_thread::Run` (annealer_thread.cpp) keeps the previous step's `b` as `a`,
//! picks a new random element `b` (`netlist::get_random_element`), computes
//! `calculate_delta_routing_cost(a, b)`: `a->swap_cost(a_loc, b_loc) + b->swap_cost(b_loc,
//! a_loc)`, where `netlist_elem::swap_cost` reads every fan-in and fan-out element's
//! `present_loc` and that location's x and y (the Manhattan distances to the old and the new
//! place); `accept_move` takes a good move (cost < 0) or a bad one with probability
//! exp(-cost / T); an accepted move swaps the two elements' `present_loc`
//! (`netlist::swap_locations`). Every `swaps` steps the temperature drops (`T /= 1.5`).
//!
//! Memory, per element: the element (88 bytes: a 32-byte `std::string`, two 24-byte vectors,
//! the 8-byte location pointer), its fan-in and fan-out pointer arrays (each a heap block of
//! `degree` rounded up to a power of two 8-byte pointers, as `push_back` grows a vector, and a
//! 16-byte malloc header), its grid cell (8 bytes) and the node of the name map canneal's
//! parser keeps (`std::map<std::string, netlist_elem*>`: 80 bytes). With the default `degree`
//! of 6 that is 336 bytes an element, near Table 5.2's 20.6 GB over the seed's 6e7 elements
//! (343 bytes); the element array (5.3 GB at 6e7) is Table 5.2's 5.1 GB PT-Baker footprint and
//! the main region. Canneal's input netlists connect elements at random (its generated inputs):
//! here element i's j-th fan-in and fan-out are hashes of (seed, i, j), not a consistent graph
//! (the accesses are the same: random elements' `present_loc` and cells), so no host memory
//! holds the lists; element i starts in cell i (the netlist is read in file order).

use super::gen::*;
use super::WorkloadInfo;
use crate::record::prot;
use tlblab_types::SplitMix64;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "canneal",
    summary:
        "PARSEC-canneal-like annealing: random element pairs, fan-in/fan-out locations read, swaps",
    source: "seed 001 §5.2 (Canneal: 6e7 nets, 3e4 swaps per temperature step, T0 2000; Table 5.2)",
    in_default_set: true,
    params: populated_params! {
        elements: 1 << 16, "netlist elements (the seed's input: 6e7)";
        degree: 6, "fan-ins and fan-outs per element (each)";
        swaps: 30000, "swap attempts per temperature step (the seed's 3e4)";
        temp_steps: 2, "temperature steps (the seed ran 15000)";
        start_temp: 2000, "initial temperature (the seed's 2000)";
        thp: 1, "1: as THP: huge pages for elements only";
    },
};

/// sizeof(netlist_elem) on x86-64 and its fields' offsets.
pub(super) const ELEM: u64 = 88;
pub(super) const FANIN: u64 = 32;
pub(super) const FANOUT: u64 = 56;
const LOC: u64 = 80;

pub struct Canneal {
    n: u64,
    degree: u64,
    list_bytes: u64,
    width: u64,
    swaps: u64,
    temp_steps: u64,
    temp: f64,
    va_elems: u64,
    va_fanin: u64,
    va_fanout: u64,
    va_cells: u64,
    layout: Layout,
    /// Element -> its grid cell (present_loc).
    loc: Vec<u32>,
    seed: u64,
    rng: SplitMix64,
    /// The regions on the malloc heap (`thp`): given 4 KiB pages whatever the machine's size.
    heap: Vec<(u64, u64)>,
    b: u64,
    step_no: u64,
    started: bool,
}

/// canneal's memory (the annealer's and the netlist reader's, `canneal_read.rs`), for `n`
/// elements of `degree` fan-ins and fan-outs each.
pub(super) struct Memory {
    pub layout: Layout,
    /// One element's fan-in (or fan-out) block: `degree` rounded up to a power of two 8-byte
    /// pointers, as `push_back` grows a vector, and a 16-byte malloc header.
    pub list_bytes: u64,
    /// The grid's side: the smallest square holding every element (canneal's max_x * max_y).
    pub width: u64,
    /// The starts of the element array, the fan-in and fan-out lists, the grid and the name
    /// map's nodes (80 bytes each).
    pub va: [u64; 5],
    /// The regions on the malloc heap (`thp`): given 4 KiB pages whatever the machine's size.
    pub heap: Vec<(u64, u64)>,
}

pub(super) fn memory(n: u64, degree: u64, thp: bool) -> Memory {
    let list_bytes = degree.next_power_of_two() * 8 + 16;
    let width = (n as f64).sqrt().ceil() as u64;
    // Below 4 GiB, so 32-bit machines can run the default sizes too.
    let mut layout = Layout::new(0x1000_0000);
    let va_elems = layout.alloc("elements", n * ELEM, 1 << 21).1;
    let va_fanin = layout.alloc("fanin_lists", n * list_bytes, 1 << 21).1;
    let va_fanout = layout.alloc("fanout_lists", n * list_bytes, 1 << 21).1;
    let va_cells = layout.alloc("locations", width * width * 8, 1 << 21).1;
    let va_map = layout.alloc("name_map", n * 80, 1 << 21).1;
    // Transparent huge pages (the seed's 2 MB pages, §6.1.1 "2MB pages (THP)"): Linux backs
    // an anonymous fault with a 2 MiB page only where the aligned 2 MiB range lies inside the
    // mapping (mm/huge_memory.c, `do_huge_pmd_anonymous_page` after
    // `thp_vma_suitable_order`). canneal's element array is one `resize` of 5.3 GB, which
    // glibc's malloc maps with mmap (blocks of M_MMAP_THRESHOLD, 128 KiB, and more), so its
    // 2 MiB ranges fault in as huge pages; the fan-in and fan-out vectors (grown by
    // `push_back`), the grid's rows (`_locations`, one vector per column: 62 KB at 6e7) and the
    // name map's nodes are small blocks on the brk heap, which grows a few hundred KiB at a
    // time, so a 2 MiB range's first fault finds it outside the heap and gets 4 KiB pages.
    // Measured on PARSEC 3.0's canneal with THP `always` (docs/lab/measurements.md,
    // 2026-11-28): 389 MB of its 1.74 GB were huge pages at 5e6 elements, the element
    // array's 440 MB.
    let heap = if thp {
        layout.ranges[1..].to_vec()
    } else {
        Vec::new()
    };
    Memory {
        layout,
        list_bytes,
        width,
        va: [va_elems, va_fanin, va_fanout, va_cells, va_map],
        heap,
    }
}

impl Canneal {
    pub fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let n = in_range("canneal", "elements", get("elements"), 2, 1 << 31)?;
        let degree = in_range("canneal", "degree", get("degree"), 1, 64)?;
        let swaps = positive("canneal", "swaps", get("swaps"))?;
        let start = positive("canneal", "start_temp", get("start_temp"))?;
        // Each element's location, a u32.
        super::memory::need("canneal", &[("elements", n)], n * 4)?;
        let Memory {
            layout,
            list_bytes,
            width,
            va: [va_elems, va_fanin, va_fanout, va_cells, _],
            heap,
        } = memory(n, degree, get("thp") != 0);
        let mut rng = SplitMix64::derive(seed, "workload.canneal.moves");
        let b = rng.below(n);
        Ok(Canneal {
            n,
            degree,
            list_bytes,
            width,
            swaps,
            temp_steps: get("temp_steps"),
            temp: start as f64,
            va_elems,
            va_fanin,
            va_fanout,
            va_cells,
            layout,
            loc: (0..n as u32).collect(),
            seed,
            rng,
            heap,
            b,
            step_no: 0,
            started: false,
        })
    }

    /// Element `i`'s `j`-th fan-in (`side` 0) or fan-out (1).
    fn neighbour(&self, i: u64, side: u64, j: u64) -> u64 {
        neighbour(self.seed, self.n, i, side, j)
    }

    /// `netlist_elem::swap_cost(old, new)` for element `e`, with its records.
    ///
    /// Its loads, in the order of their dependences: the two vectors' begin and end pointers
    /// (addressed from `e`, a register); every fan-in and fan-out entry (through its vector's
    /// pointer); every neighbour's `present_loc` (through its entry); every neighbour's cell
    /// (through its `present_loc`). Each neighbour is a chain of three dependent loads, and the
    /// chains are independent of each other (the loop sums their costs). A mark says only
    /// "independent of every load in flight" (`Event::Independent`), so the records give the
    /// chains' loads level by level, a barrier before each level: the order in which an
    /// out-of-order core can issue them, each load as soon as the one it goes through is back,
    /// the core's window (`timing.mlp`) bounding how many are in flight. In program order, a
    /// barrier per dependent load would make each chain wait for the others' (before
    /// 2026-11-28: seed 001's canneal-not-helped).
    fn swap_cost(&self, e: u64, old: u64, new: u64, out: &mut Vec<Record>) -> i64 {
        let (ox, oy) = ((old % self.width) as i64, (old / self.width) as i64);
        let (nx, ny) = ((new % self.width) as i64, (new / self.width) as i64);
        let ea = self.va_elems + e * ELEM;
        let sides = [(0, FANIN, self.va_fanin), (1, FANOUT, self.va_fanout)];
        for &(_, field, _) in &sides {
            out.push(load(0, ea + field, 8));
            out.push(load(0, ea + field + 8, 8));
        }
        out.push(independent(0, true));
        for &(_, _, lists) in &sides {
            let list = lists + e * self.list_bytes + 16;
            for j in 0..self.degree {
                out.push(load(0, list + j * 8, 8));
            }
        }
        let neighbours = || {
            sides.iter().flat_map(move |&(side, _, _)| {
                (0..self.degree).map(move |j| self.neighbour(e, side, j))
            })
        };
        out.push(independent(0, true));
        for f in neighbours() {
            out.push(load(0, self.va_elems + f * ELEM + LOC, 8));
        }
        out.push(independent(0, true));
        let mut cost = 0i64;
        for f in neighbours() {
            let c = self.loc[f as usize] as u64;
            out.push(load(0, self.va_cells + c * 8, 8));
            let (fx, fy) = ((c % self.width) as i64, (c / self.width) as i64);
            cost += (fx - nx).abs() + (fy - ny).abs() - (fx - ox).abs() - (fy - oy).abs();
        }
        cost
    }
}

/// Element `i`'s `j`-th fan-in (`side` 0) or fan-out (1) in a netlist of `n` elements: the
/// annealer's and the netlist reader's (`canneal_read.rs`) one graph.
pub(super) fn neighbour(seed: u64, n: u64, i: u64, side: u64, j: u64) -> u64 {
    let mut h =
        SplitMix64::new(seed ^ (i * 128 + side * 64 + j).wrapping_mul(0xd6e8_feb8_6659_fd93));
    h.below(n)
}

/// The program's start (`Layout::start_once`), its heap's regions mapped on 4 KiB pages
/// (`Memory::heap`); true the first time.
pub(super) fn start_once(
    layout: &Layout,
    heap: &[(u64, u64)],
    started: &mut bool,
    out: &mut Vec<Record>,
) -> bool {
    if !layout.start_once(started, out) {
        return false;
    }
    for &(start, len) in heap {
        out.push(ev(map_private(0, start, len, prot::READ | prot::WRITE)));
    }
    true
}

impl Generator for Canneal {
    fn regions(&self) -> Vec<String> {
        self.layout.names.clone()
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if start_once(&self.layout, &self.heap, &mut self.started, out) {
            return self.temp_steps > 0;
        }
        if self.step_no == self.swaps * self.temp_steps {
            return false;
        }
        for _ in 0..1024 {
            if self.step_no == self.swaps * self.temp_steps {
                break;
            }
            if self.step_no.is_multiple_of(self.swaps) {
                self.temp /= 1.5;
            }
            self.step_no += 1;
            let a = self.b;
            // get_random_element: a new element other than a.
            let b = loop {
                let b = self.rng.below(self.n);
                if b != a {
                    break b;
                }
            };
            self.b = b;
            let (pa, pb) = (
                self.va_elems + a * ELEM + LOC,
                self.va_elems + b * ELEM + LOC,
            );
            // The two elements come from the RNG (`get_random_element`), in registers: their
            // `present_loc` loads are independent (a barrier first: `a` is the last step's
            // `b`, and the step's decision depended on its loads); the cells they point to
            // depend on them.
            out.push(independent(0, true));
            out.push(load(0, pa, 8));
            out.push(load(0, pb, 8));
            let (la, lb) = (self.loc[a as usize] as u64, self.loc[b as usize] as u64);
            out.push(independent(0, true));
            out.push(load(0, self.va_cells + la * 8, 8));
            out.push(load(0, self.va_cells + lb * 8, 8));
            let cost = self.swap_cost(a, la, lb, out) + self.swap_cost(b, lb, la, out);
            // accept_move: good below 0, else bad with probability exp(-cost / T): it waits
            // for every load of the step (the stores' branch depends on the cost).
            out.push(independent(0, true));
            let u = self.rng.next_f64();
            if cost < 0 || (-(cost as f64) / self.temp).exp() > u {
                out.push(store(0, pa, 8));
                out.push(store(0, pb, 8));
                self.loc.swap(a as usize, b as usize);
            }
        }
        if self.step_no == self.swaps * self.temp_steps {
            out.push(independent(0, false));
        }
        true
    }
}
