//! The twin of `tlb_coloring`, from seed 003 (Panchamukhi 2014) §3.1: with an N-way DTLB of M
//! sets and R of them reserved for contiguous allocations, the virtual page p maps to set
//! p mod M; "small" color c is the page of set R + c in each run of M pages (Fig. 3.2), so two
//! pages of different colors never share a set; `tlb_malloc` (§4, Alg. 1) hands out a color's
//! pages in order from an arena of M pages a period set aside by `tlb_malloc_init`. §6.0.6
//! left the sets the OS disturbs unused (`first_color`).
//!
//! Naively, as the catalog's parameters say: each thread takes its colors in the order threads
//! first place a page (`per_thread`: thread k owns colors first_color + k·cpt … + cpt − 1, wrapping
//! over the M − R small colors; `same`: every thread the first cpt from first_color); a
//! thread's n-th new page goes to its (n mod cpt)-th color; a color's i-th page is the slot of
//! that color in the i-th period of the arena at `base`. A page is placed once per process (as
//! the records say: `ThreadStart`, else process 0) and keeps its offsets. An access across a
//! 4 KiB boundary is two accesses, one per page. Instruction fetches stay unless `fetches`.

use super::{boolean, choice, number, param, Twin};
use crate::machine::{MachineConfig, TechniqueSpec};
use crate::tlb::{IndexFn, TlbKind};
use tlblab_trace::{Access, Event, Record};
use tlblab_types::{AccessKind, PageSize, VirtAddr};

/// One page placed: (process, thread that placed it, its page, its colored page, its color).
struct Placed {
    process: u32,
    thread: u32,
    page: u64,
    colored: u64,
    color: u64,
}

pub(crate) struct ColoringTwin {
    sets: u64,
    reserved: u64,
    same: bool,
    first_color: u64,
    per_thread: u64,
    base_page: u64,
    fetches: bool,
    placed: Vec<Placed>,
    /// (thread, process) as `ThreadStart` records say.
    processes: Vec<(u32, u32)>,
    moved: u64,
    split: u64,
}

impl ColoringTwin {
    /// The colored page of `page` as `thread` touches it, placing it on its first touch.
    fn colored(&mut self, thread: u32, page: u64) -> u64 {
        let process = super::process_of(&self.processes, thread);
        if let Some(p) = self
            .placed
            .iter()
            .find(|p| p.process == process && p.page == page)
        {
            return p.colored;
        }
        // The thread's index: how many threads placed a page before it first did.
        let mut threads: Vec<u32> = Vec::new();
        for p in &self.placed {
            if !threads.contains(&p.thread) {
                threads.push(p.thread);
            }
        }
        let k = match self.same {
            true => 0,
            false => threads
                .iter()
                .position(|&t| t == thread)
                .unwrap_or(threads.len()) as u64,
        };
        let n = self.placed.iter().filter(|p| p.thread == thread).count() as u64;
        let small = self.sets - self.reserved;
        let color = (self.first_color + k * self.per_thread + n % self.per_thread) % small;
        let period = self.placed.iter().filter(|p| p.color == color).count() as u64;
        // seed 003 §3.1: small color c is set R + c of every period of M pages.
        let colored = self.base_page + period * self.sets + self.reserved + color;
        self.placed.push(Placed {
            process,
            thread,
            page,
            colored,
            color,
        });
        colored
    }

    fn moved(&mut self, a: Access) -> Access {
        let page = self.colored(a.thread.0, a.vaddr.0 / 4096);
        self.moved += 1;
        Access {
            vaddr: VirtAddr(page * 4096 + a.vaddr.0 % 4096),
            ..a
        }
    }
}

impl Twin for ColoringTwin {
    fn new(spec: &TechniqueSpec, m: &MachineConfig, _seed: u64) -> Result<ColoringTwin, String> {
        let name = param(spec, "level", "");
        let level = if name.is_empty() {
            m.tlbs
                .iter()
                .filter(|t| t.kind != TlbKind::Instr)
                .min_by_key(|t| t.level)
        } else {
            m.tlbs.iter().find(|t| t.name == name)
        }
        .ok_or("twin tlb_coloring: no such level")?;
        if level.index != IndexFn::LowBits || m.page_table.page_size != PageSize::Size4K {
            return Err("twin tlb_coloring: the level's sets are not colors of 4 KiB pages".into());
        }
        let ways = match level.ways {
            crate::tlb::Ways::N(n) => n,
            crate::tlb::Ways::Named(_) => level.entries,
        };
        let sets = (level.entries / ways) as u64;
        let reserved = number(spec, "reserved", "0")?;
        let first_color = number(spec, "first_color", "1")?;
        let per_thread = number(spec, "colors_per_thread", "1")?;
        let base = number(spec, "base", "0x40000000")?;
        if sets < 2
            || reserved >= sets
            || first_color >= sets - reserved
            || per_thread == 0
            || per_thread > sets - reserved
            || base % (sets * 4096) != 0
        {
            return Err("twin tlb_coloring: parameters out of range".into());
        }
        let same = choice(
            spec,
            "assign",
            "per_thread",
            &[("per_thread", false), ("same", true)],
        )?;
        let fetches = boolean(spec, "fetches", "false")?;
        Ok(ColoringTwin {
            sets,
            reserved,
            same,
            first_color,
            per_thread,
            base_page: base / 4096,
            fetches,
            placed: Vec::new(),
            processes: Vec::new(),
            moved: 0,
            split: 0,
        })
    }

    fn on_records(&mut self, records: &[Record]) -> Result<Vec<Record>, String> {
        let mut out = Vec::new();
        for &r in records {
            match r {
                Record::Event(Event::ThreadStart { thread, process }) => {
                    self.processes.push((thread.0, process));
                    out.push(r);
                }
                Record::Access(a) if self.fetches || a.kind != AccessKind::Instr => {
                    let off = a.vaddr.0 % 4096;
                    if a.size > 1 && off + a.size as u64 > 4096 {
                        let first = (4096 - off) as u32;
                        let lo = Access { size: first, ..a };
                        let hi = Access {
                            vaddr: VirtAddr(a.vaddr.0 + first as u64),
                            size: a.size - first,
                            ..a
                        };
                        out.push(Record::Access(self.moved(lo)));
                        out.push(Record::Access(self.moved(hi)));
                        self.split += 1;
                    } else {
                        out.push(Record::Access(self.moved(a)));
                    }
                }
                other => out.push(other),
            }
        }
        Ok(out)
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let mut threads: Vec<u32> = self.placed.iter().map(|p| p.thread).collect();
        threads.sort_unstable();
        threads.dedup();
        let mut colors: Vec<u64> = self.placed.iter().map(|p| p.color).collect();
        colors.sort_unstable();
        colors.dedup();
        vec![
            ("pages_placed".into(), self.placed.len() as u64),
            ("accesses_moved".into(), self.moved),
            ("accesses_split".into(), self.split),
            ("threads_colored".into(), threads.len() as u64),
            ("colors_used".into(), colors.len() as u64),
        ]
    }
}
