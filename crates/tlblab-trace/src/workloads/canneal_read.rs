//! Seed 001 §5.2: PARSEC canneal's netlist reading, the part of canneal's run before the
//! annealer (canneal.rs): `netlist::netlist` (PARSEC 3.0, pkgs/kernels/canneal/src/netlist.cpp).
//!
//! The seed times canneal whole ("execution time", perf-stat, §5.3), and its helper is spawned
//! once "the memory allocations have been issued and any necessary parameters have been
//! initialized" (§4.2), before the "main algorithm" (§4.1, Algorithm 1): the annealer. So
//! the reading runs without a helper, and at the seed's 6e7 elements it is most of the run
//! (docs/lab/measurements.md, 2026-11-28: 65-72 %).
//!
//! Per line of the netlist file (`name type fanin... END`, one line per element, element `e`
//! on line `e` as the annealer assumes), in program order, every load depending on the one
//! before (no `Independent` marks: a tree search and the pointers it yields):
//! 1. `create_elem_if_necessary(name)`: `_elem_names.find(name)` on the
//!    `std::map<std::string, netlist_elem*>`, a red-black tree of 80-byte nodes on the brk heap
//!    in insertion order (`name_map`). Each node on the search path: its key's `std::string`
//!    (pointer and size at +32, the short name's characters in place at +48) and the child
//!    pointer taken (+16 or +24). A name not in the map yet is inserted: `_elem_names[name] =
//!    rval` searches again and writes a new node (+0, +32, +48, +64) at the heap's end and its
//!    parent's child pointer.
//! 2. `present_elem->item_name = name`: a store into the element (`elements`).
//! 3. Per fan-in name: `create_elem_if_necessary` as in 1; `present_elem->fanin.push_back`
//!    (the vector's end and capacity loaded, the entry and the new end stored; when full, the
//!    vector grows to twice its size: its entries copied, begin and capacity stored); then
//!    `fanin_elem->fanout.push_back(present_elem)` on the fan-in's own element.
//!
//! The tree's shape is drawn, not kept: a name's search path is the root and then, at depth
//! `j`, a node drawn from the first `j` bits of the name's hash among the nodes inserted so far
//! (names sharing a prefix share ancestors, so the top of the tree is reused as a real search's
//! is, and the depth is the height of a balanced tree of that many nodes: a red-black tree's is
//! between log2(m + 1) and 2 log2(m + 1)); a name found ends at a node of its own. Which names
//! are new is drawn too: the netlist's fan-ins are uniform (canneal.rs's `neighbour`, the
//! annealer's graph), so a name not yet defined was named by none of the `e · degree` fan-ins
//! before line `e` with probability exp(-e · degree / n), and the map then holds
//! `e + (n - e)(1 - exp(-e · degree / n))` names. So every line is a function of its number
//! alone and `skip` passes whole lines in O(degree). Left out: the parser's own loads (the
//! 8 KiB file buffer, always cached: instructions, `timing.mlp.issue_instructions` in seed
//! 001's runs), malloc's bookkeeping, the tree's rebalancing rotations, the fan-out vectors'
//! growth (a fan-out lands in its element's final block), and the grid's construction before
//! the first line (one sequential pass).

use super::canneal::{memory, neighbour, start_once, Memory, ELEM, FANIN, FANOUT};
use super::gen::*;
use super::WorkloadInfo;
use tlblab_types::SplitMix64;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "canneal_read",
    summary: "PARSEC canneal's netlist reading: std::map lookups and inserts of every element's and fan-in's name, fan-in and fan-out vectors' push_back",
    source: "seed 001 §5.2 (Canneal: 6e7 nets), PARSEC 3.0 canneal netlist.cpp",
    params: populated_params! {
        elements: 1 << 16, "netlist elements, one line each (the seed's input: 6e7)";
        degree: 6, "fan-ins per line (as canneal's `degree`)";
        thp: 1, "1: as THP: huge pages for elements only (as canneal)";
    },
    in_default_set: false,
};

/// An 80-byte `std::map` node's fields: the key's pointer and size, its characters in place,
/// the left child (the right is 8 bytes on).
const KEY: u64 = 32;
const CHARS: u64 = 48;
const LEFT: u64 = 16;
const VALUE: u64 = 64;
const NODE: u64 = 80;
/// Lines written per step.
const LINES_PER_STEP: u64 = 16;

pub struct CannealRead {
    n: u64,
    degree: u64,
    list_bytes: u64,
    seed: u64,
    va_elems: u64,
    va_fanin: u64,
    va_fanout: u64,
    va_map: u64,
    layout: Layout,
    heap: Vec<(u64, u64)>,
    line: u64,
    started: bool,
}

/// A uniform draw in [0, 1) from a hash of its arguments.
fn unit(seed: u64, a: u64, b: u64) -> f64 {
    SplitMix64::new(seed ^ a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b).next_f64()
}

impl CannealRead {
    pub fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let n = in_range("canneal_read", "elements", get("elements"), 2, 1 << 31)?;
        let degree = in_range("canneal_read", "degree", get("degree"), 1, 64)?;
        // The annealer's memory (canneal.rs), so that both read one netlist.
        let Memory {
            layout,
            list_bytes,
            va: [va_elems, va_fanin, va_fanout, _, va_map],
            heap,
            ..
        } = memory(n, degree, get("thp") != 0);
        Ok(CannealRead {
            n,
            degree,
            list_bytes,
            seed: SplitMix64::new(seed ^ 0x006e_6574_6c69_7374).next_u64(),
            va_elems,
            va_fanin,
            va_fanout,
            va_map,
            layout,
            heap,
            line: 0,
            started: false,
        })
    }

    /// The probability that a name not defined before line `e` was named by no fan-in before it.
    fn unseen(&self, e: u64) -> f64 {
        (-(e as f64) * self.degree as f64 / self.n as f64).exp()
    }

    /// The names in the map when line `e` begins.
    fn names_before(&self, e: u64) -> u64 {
        let m = e as f64 + (self.n - e) as f64 * (1.0 - self.unseen(e));
        (m as u64).min(self.n)
    }

    /// The node at depth `j` of `key`'s search path in a map of `m` names.
    fn node(&self, key: u64, j: u32, m: u64) -> u64 {
        let h = SplitMix64::new(self.seed ^ key).next_u64();
        let prefix = if j == 0 { 0 } else { h >> (64 - j) };
        let i = SplitMix64::new(self.seed ^ ((j as u64) << 40 | prefix)).next_u64() % m;
        self.va_map + i * NODE
    }

    /// One search of `key` in a map of `m` names (`found`: it ends at a node of its own).
    fn search(
        &self,
        key: u64,
        m: u64,
        found: bool,
        out: &mut Option<&mut Vec<Record>>,
        c: &mut u64,
    ) {
        let depth = 64 - m.leading_zeros();
        if out.is_none() {
            // Only counted (`skip`, `Generator::accesses_left`): three records per node, and the
            // nodes' hashes, most of a line's cost, are not drawn.
            *c += 3 * u64::from(depth);
            return;
        }
        for j in 0..depth {
            let node = if found && j + 1 == depth {
                self.va_map + SplitMix64::new(self.seed ^ key ^ 1).next_u64() % m * NODE
            } else {
                self.node(key, j, m)
            };
            put(out, c, load(0, node + KEY, 16));
            put(out, c, load(0, node + CHARS, 8));
            let side = (key >> (j % 64)) & 1;
            put(out, c, load(0, node + LEFT + 8 * side, 8));
        }
    }

    /// `create_elem_if_necessary(key)` on a map of `*m` names; a new name is inserted.
    fn create(
        &self,
        key: u64,
        m: &mut u64,
        new: bool,
        out: &mut Option<&mut Vec<Record>>,
        c: &mut u64,
    ) {
        self.search(key, *m, !new, out, c);
        if !new {
            return;
        }
        // `_elem_names[name] = rval`: the same search, then the new node and its parent's link.
        self.search(key, *m, false, out, c);
        // (Drawn, the count can pass n near the file's end: the last node stands in.)
        let node = self.va_map + (*m).min(self.n - 1) * NODE;
        for field in [0, KEY, CHARS, VALUE] {
            put(out, c, store(0, node + field, 8));
        }
        if *m > 0 {
            let depth = 64 - m.leading_zeros();
            let parent = self.node(key, depth - 1, *m);
            put(out, c, store(0, parent + LEFT + 8 * (key & 1), 8));
        }
        *m = (*m + 1).min(self.n);
    }

    /// Line `e`'s records (written to `out` when given); returns how many.
    fn read_line(&self, e: u64, out: &mut Option<&mut Vec<Record>>) -> u64 {
        let mut c = 0;
        let mut m = self.names_before(e);
        let p = self.unseen(e);
        self.create(e, &mut m, unit(self.seed, e, u64::MAX) < p, out, &mut c);
        let ea = self.va_elems + e * ELEM;
        put(out, &mut c, store(0, ea, 8));
        let fanin = self.va_fanin + e * self.list_bytes + 16;
        for j in 0..self.degree {
            let f = neighbour(self.seed, self.n, e, 0, j);
            self.create(f, &mut m, f > e && unit(self.seed, e, j) < p, out, &mut c);
            // present_elem->fanin.push_back(fanin_elem): end and capacity, growth when full
            // (capacity 0, 1, 2, 4, ...), the entry, the new end.
            put(out, &mut c, load(0, ea + FANIN + 8, 8));
            put(out, &mut c, load(0, ea + FANIN + 16, 8));
            if j == 0 || j.is_power_of_two() {
                for k in 0..j {
                    put(out, &mut c, load(0, fanin + k * 8, 8));
                    put(out, &mut c, store(0, fanin + k * 8, 8));
                }
                put(out, &mut c, store(0, ea + FANIN, 8));
                put(out, &mut c, store(0, ea + FANIN + 16, 8));
            }
            put(out, &mut c, store(0, fanin + j * 8, 8));
            put(out, &mut c, store(0, ea + FANIN + 8, 8));
            // fanin_elem->fanout.push_back(present_elem), in its element's block.
            let fa = self.va_elems + f * ELEM;
            let slots = (self.list_bytes - 16) / 8;
            let slot = SplitMix64::new(self.seed ^ f ^ e.rotate_left(32)).next_u64() % slots;
            put(out, &mut c, load(0, fa + FANOUT + 8, 8));
            put(out, &mut c, load(0, fa + FANOUT + 16, 8));
            put(
                out,
                &mut c,
                store(0, self.va_fanout + f * self.list_bytes + 16 + slot * 8, 8),
            );
            put(out, &mut c, store(0, fa + FANOUT + 8, 8));
        }
        c
    }
}

impl Generator for CannealRead {
    fn regions(&self) -> Vec<String> {
        self.layout.names.clone()
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if start_once(&self.layout, &self.heap, &mut self.started, out) {
            return true;
        }
        let end = (self.line + LINES_PER_STEP).min(self.n);
        while self.line < end {
            self.read_line(self.line, &mut Some(out));
            self.line += 1;
        }
        self.line < self.n
    }
    fn skip(&mut self, n: u64) -> u64 {
        let mut done = 0;
        while self.started && self.line < self.n {
            let c = self.read_line(self.line, &mut None);
            if done + c > n {
                break;
            }
            done += c;
            self.line += 1;
        }
        done
    }
}
