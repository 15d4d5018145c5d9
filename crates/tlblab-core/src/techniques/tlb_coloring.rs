//! TLB coloring (seed 003, Panchamukhi 2014): each task's pages are placed where `tlb_malloc`
//! would place them, so that tasks in different colors use disjoint sets of a TLB level and
//! cannot evict each other's translations (seed 003 Ch. 3-4; §6.0.8, Figs. 6.2-6.8).
//!
//! The model is a placement: it moves each thread's data pages, in the order the thread first
//! touches them, to pages of the thread's colors in a colored arena (seed 003 §3.1: with M sets
//! and R reserved sets, small color c owns the slot of set R + c in every period of M pages; the
//! n-th page placed in a color lands in the n-th period), keeping every offset within a page. It
//! acts on the record stream (`Technique::on_batch`) before the engine sees it, as the
//! allocator acts before the program runs: the engine's TLBs, walks and caches then simulate the
//! colored layout like any other. Instruction fetches keep their addresses unless `fetches` is
//! on (code is not allocated with `tlb_malloc`). An access that crosses a page boundary is split
//! in two, since its two pages land in different places.
//!
//! Colors are the sets of one TLB level (`level`, by default the core's first data level), which
//! must be indexed by the low bits of the page number (seed 003 §5, Alg. 3 finds those bits on
//! the real machine; `tlblab probe` does on the host). Seed 003 §6.0.6 avoided sets used by the
//! OS ("noisy sets") by starting at color 1; `first_color` says where the colors start.

use super::{Model, ParamInfo, Params, TechniqueInfo};
use crate::machine::MachineConfig;
use crate::system::{Declaration, SimError, Technique};
use crate::tlb::{IndexFn, TlbKind};
use std::collections::HashMap;
use tlblab_trace::{Access, Event, Record};
use tlblab_types::{AccessKind, PageSize, ThreadId, VirtAddr};

pub const INFO: TechniqueInfo = TechniqueInfo {
    name: "tlb_coloring",
    summary: "each thread's data pages placed in its own TLB colors, as tlb_malloc places them",
    seed: "seed 003 §3.1 (colors, reserved sets), §6.0.6 (noisy sets), §6.0.8 (Figs. 6.2-6.8)",
    params: &[
        ParamInfo {
            name: "level",
            default: "",
            meaning: "the TLB level whose sets are the colors (default: the core's first data level)",
        },
        ParamInfo {
            name: "reserved",
            default: "0",
            meaning: "R: sets reserved for large allocations, not given to threads",
        },
        ParamInfo {
            name: "assign",
            default: "per_thread",
            meaning: "per_thread: each thread its own colors, in order of first access; same: every thread in the same colors",
        },
        ParamInfo {
            name: "first_color",
            default: "1",
            meaning: "the first color handed out (seed 003 §6.0.6 left color 0 to OS noise)",
        },
        ParamInfo {
            name: "colors_per_thread",
            default: "1",
            meaning: "colors each thread's pages are spread over, round robin",
        },
        ParamInfo {
            name: "base",
            default: "0x40000000",
            meaning: "virtual address of the colored arena (aligned to sets x 4 KiB)",
        },
        ParamInfo {
            name: "fetches",
            default: "false",
            meaning: "also move instruction fetches' pages",
        },
    ],
};

/// How threads get their colors.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Assign {
    PerThread,
    Same,
}

pub struct TlbColoring {
    sets: u64,
    reserved: u64,
    assign: Assign,
    first_color: u64,
    colors_per_thread: u64,
    base_vpn: u64,
    fetches: bool,
    /// Process of each thread, from `ThreadStart` events (0 until one says otherwise, as the
    /// engine binds a thread it has not seen).
    process_of: HashMap<ThreadId, u32>,
    /// Order in which threads first placed a page (their index for `PerThread`).
    thread_index: HashMap<ThreadId, u64>,
    /// Pages placed so far by each thread (round robin over its colors).
    placed_by_thread: HashMap<ThreadId, u64>,
    /// Pages placed so far in each color (the next one goes to that period).
    placed_in_color: Vec<u64>,
    /// (process, original page) -> colored page.
    moved: HashMap<(u32, u64), u64>,
    /// The batch being rebuilt when an access must be split (kept to reuse its room).
    scratch: Vec<Record>,
    accesses_moved: u64,
    accesses_split: u64,
}

impl Model for TlbColoring {
    fn build(p: &Params, machine: &MachineConfig, _seed: u64) -> Result<Self, String> {
        // The parameters that do not depend on the machine first: a bad value is named as such,
        // not hidden behind what the machine's geometry does not allow.
        let assign = match p.choice("assign", &["per_thread", "same"])? {
            "same" => Assign::Same,
            _ => Assign::PerThread,
        };
        let fetches = p.bool("fetches")?;
        let level = p.text("level");
        let tlb = if level.is_empty() {
            machine
                .tlbs
                .iter()
                .filter(|t| t.kind != TlbKind::Instr)
                .min_by_key(|t| t.level)
                .ok_or("technique tlb_coloring: the machine has no data TLB level to color")?
        } else {
            super::tlb_level_named("tlb_coloring", machine, level)?
        };
        if tlb.index != IndexFn::LowBits {
            return Err(format!(
                "technique tlb_coloring: TLB level {} is not indexed by the low bits of the page number, so its sets are not colors",
                tlb.name
            ));
        }
        if machine.page_table.page_size != PageSize::Size4K {
            return Err("technique tlb_coloring: colors are 4 KiB slots, the machine's base page size must be 4 KiB".into());
        }
        let sets = tlb.sets() as u64;
        if sets < 2 {
            return Err(format!(
                "technique tlb_coloring: TLB level {} has one set (fully associative): it has no colors",
                tlb.name
            ));
        }
        let reserved = p.u64_in("reserved", 0, sets - 1)?;
        let small = sets - reserved;
        let first_color = p.u64_in("first_color", 0, small - 1)?;
        let colors_per_thread = p.u64_in("colors_per_thread", 1, small)?;
        let base = p.u64("base")?;
        let period = sets * 4096;
        if base % period != 0 {
            return Err(format!(
                "technique tlb_coloring: parameter 'base' expects a multiple of sets x 4 KiB ({period:#x}), found '{}'",
                p.text("base")
            ));
        }
        Ok(TlbColoring {
            sets,
            reserved,
            assign,
            first_color,
            colors_per_thread,
            base_vpn: base >> 12,
            fetches,
            process_of: HashMap::new(),
            thread_index: HashMap::new(),
            placed_by_thread: HashMap::new(),
            placed_in_color: vec![0; small as usize],
            moved: HashMap::new(),
            scratch: Vec::new(),
            accesses_moved: 0,
            accesses_split: 0,
        })
    }
}

impl TlbColoring {
    /// The small color of the `n`-th page `thread` places.
    fn color_for(&mut self, thread: ThreadId, n: u64) -> u64 {
        let small = self.sets - self.reserved;
        let next = self.thread_index.len() as u64;
        let index = match self.assign {
            Assign::PerThread => *self.thread_index.entry(thread).or_insert(next),
            Assign::Same => 0,
        };
        (self.first_color + index * self.colors_per_thread + n % self.colors_per_thread) % small
    }

    /// The colored page of `vpn` as `thread` touches it (placing it on its first touch).
    fn place(&mut self, thread: ThreadId, vpn: u64) -> u64 {
        let process = self.process_of.get(&thread).copied().unwrap_or(0);
        if let Some(&v) = self.moved.get(&(process, vpn)) {
            return v;
        }
        let n = *self.placed_by_thread.get(&thread).unwrap_or(&0);
        self.placed_by_thread.insert(thread, n + 1);
        let color = self.color_for(thread, n);
        let period = self.placed_in_color[color as usize];
        self.placed_in_color[color as usize] += 1;
        // seed 003 §3.1: small color c is the slot of set R + c in each period of M slots.
        let v = self.base_vpn + period * self.sets + self.reserved + color;
        self.moved.insert((process, vpn), v);
        v
    }

    fn moves(&self, a: &Access) -> bool {
        self.fetches || a.kind != AccessKind::Instr
    }

    fn moved_access(&mut self, a: Access) -> Access {
        let vpn = a.vaddr.0 >> 12;
        let v = self.place(a.thread, vpn);
        self.accesses_moved += 1;
        Access {
            vaddr: VirtAddr((v << 12) | (a.vaddr.0 & 0xfff)),
            ..a
        }
    }
}

fn crosses_page(a: &Access) -> bool {
    a.size > 1 && (a.vaddr.0 & 0xfff) + a.size as u64 > 4096
}

impl Technique for TlbColoring {
    fn declaration(&self) -> Declaration {
        Declaration::named(INFO.name)
    }

    fn on_batch(&mut self, records: &mut Vec<Record>) -> Result<(), SimError> {
        // Pages are placed in the order of the records (first touch), so a batch with an
        // access across a page boundary is rebuilt in one pass, not moved in place first and
        // split after: that placed the crossing access's pages after every later page of the
        // batch (found by the reference's twin, 2026-11-25).
        let split = records
            .iter()
            .any(|r| matches!(r, Record::Access(a) if self.moves(a) && crosses_page(a)));
        if !split {
            for r in records.iter_mut() {
                match *r {
                    Record::Event(Event::ThreadStart { thread, process }) => {
                        self.process_of.insert(thread, process);
                    }
                    Record::Access(a) if self.moves(&a) => {
                        *r = Record::Access(self.moved_access(a));
                    }
                    _ => {}
                }
            }
            return Ok(());
        }
        // Rare (Lackey reports an access across a page boundary as one line): rebuild the
        // batch with each crossing access as its two halves, each in its own page's place.
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        for r in records.iter() {
            match *r {
                Record::Event(Event::ThreadStart { thread, process }) => {
                    self.process_of.insert(thread, process);
                    out.push(*r);
                }
                Record::Access(a) if self.moves(&a) && crosses_page(&a) => {
                    let first = 4096 - (a.vaddr.0 & 0xfff);
                    let lo = Access {
                        size: first as u32,
                        ..a
                    };
                    let hi = Access {
                        vaddr: VirtAddr(a.vaddr.0 + first),
                        size: a.size - first as u32,
                        ..a
                    };
                    out.push(Record::Access(self.moved_access(lo)));
                    out.push(Record::Access(self.moved_access(hi)));
                    self.accesses_split += 1;
                }
                Record::Access(a) if self.moves(&a) => {
                    out.push(Record::Access(self.moved_access(a)));
                }
                other => out.push(other),
            }
        }
        std::mem::swap(records, &mut out);
        self.scratch = out;
        Ok(())
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let mut c = vec![
            ("pages_placed".to_string(), self.moved.len() as u64),
            ("accesses_moved".to_string(), self.accesses_moved),
            ("accesses_split".to_string(), self.accesses_split),
            (
                "threads_colored".to_string(),
                self.placed_by_thread.len() as u64,
            ),
        ];
        c.push((
            "colors_used".to_string(),
            self.placed_in_color.iter().filter(|&&n| n > 0).count() as u64,
        ));
        c
    }
}
