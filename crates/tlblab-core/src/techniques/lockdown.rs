//! TLB lockdown (seed 004, Song, Park, Kim 2022): the N most-accessed pages of a real-time
//! program, found by memory profiling, locked into the lockable entries of the main TLB at the
//! program's start (seed 004 §I, §IV; the Cortex-A9 has 4 lockable data main-TLB entries, §III).
//!
//! The model: when a thread of `process` is first switched in (Linux's `finish_task_switch`,
//! the program's start), each page of `pages` is translated by a walk on that hardware thread
//! (the Cortex-A9 loads a lockdown entry by a walk with the lockdown register's P bit set, TRM
//! DDI0388 §4.3.15) and inserted, locked, into the lockable data TLB level of its core
//! (`cores=one`) or of every core (`cores=all`). A locked entry is never a replacement victim
//! and survives flushes (context switches, ASID rollover, `Flush` events: `Tlb::invalidate_*`
//! skip it), but not a shootdown of its own range (munmap, mprotect: `Tlb::shoot_down_va`),
//! after which the page is translated and cached as any other. The same lock (and unlock) can
//! come from the record stream as `Event::TlbLock`, without this technique.
//!
//! Which pages: a profile (`tlblab profile`, ranked by accesses, seed 004 §IV) read by the CLI or
//! Python (`pages=FILE.csv`; the engine does no I/O), or explicit addresses. Selection
//! strategies (most frequent, simulation-guided) are in `python/tlblab/lockdown.py`.

use super::{Model, ParamInfo, Params, TechniqueInfo};
use crate::machine::MachineConfig;
use crate::system::{Declaration, SimError, System, Technique};
use crate::tlb::TlbKind;
use tlblab_types::{ThreadId, VirtAddr};

pub const INFO: TechniqueInfo = TechniqueInfo {
    name: "lockdown",
    summary: "the most-accessed pages of a program locked into the lockable main-TLB entries at its start",
    seed: "seed 004 §III (4 lockable main-TLB entries), §IV (profiling, remapping), §V (Tables 2-3)",
    params: &[
        ParamInfo {
            name: "pages",
            default: "",
            meaning: "the pages to lock: addresses joined by '+' (0x10000+0x11000), or a profile FILE.csv (read by the CLI/Python, its top rows)",
        },
        ParamInfo {
            name: "count",
            default: "0",
            meaning: "with pages=FILE.csv: how many of its top pages (0: the level's lockable entries)",
        },
        ParamInfo {
            name: "process",
            default: "0",
            meaning: "the process (address space) whose pages are locked, at its first switch-in",
        },
        ParamInfo {
            name: "cores",
            default: "one",
            meaning: "one: the core the program starts on; all: every core's lockable level",
        },
        ParamInfo {
            name: "level",
            default: "",
            meaning: "the TLB level to lock into (default: the data path's level with lockable entries)",
        },
    ],
};

pub struct Lockdown {
    pages: Vec<u64>,
    process: u32,
    all_cores: bool,
    level: String,
    done: bool,
    pages_locked: u64,
    lock_cycles: u64,
}

/// The lockable level of `machine` named `level` (empty: the first data-path level with
/// lockable entries). The error says why none fits.
pub fn lockable_level<'m>(
    machine: &'m MachineConfig,
    level: &str,
) -> Result<&'m crate::tlb::TlbConfig, String> {
    if level.is_empty() {
        let mut data: Vec<_> = machine
            .tlbs
            .iter()
            .filter(|t| t.kind != TlbKind::Instr && t.lockable > 0)
            .collect();
        data.sort_by_key(|t| t.level);
        return data.first().copied().ok_or_else(|| {
            format!(
                "technique lockdown: machine {} has no data TLB level with lockable entries (TlbConfig.lockable)",
                machine.name
            )
        });
    }
    let t = super::tlb_level_named("lockdown", machine, level)?;
    if t.lockable == 0 || t.kind == TlbKind::Instr {
        return Err(format!(
            "technique lockdown: TLB level {} has no lockable data entries",
            t.name
        ));
    }
    Ok(t)
}

/// Page addresses joined by '+' (hex with 0x, or decimal); each rounded down to its 4 KiB page.
pub fn parse_pages(text: &str) -> Result<Vec<u64>, String> {
    let mut pages = Vec::new();
    for item in text.split('+').map(str::trim).filter(|s| !s.is_empty()) {
        let v = tlblab_trace::workloads::parse_number(item).ok_or_else(|| {
            if item.ends_with(".csv") {
                format!("technique lockdown: parameter 'pages' is a profile '{item}': the CLI and Python read profiles; in Rust give addresses joined by '+'")
            } else {
                format!("technique lockdown: parameter 'pages' expects addresses joined by '+' (0x10000+0x11000), found '{item}'")
            }
        })?;
        let page = v & !0xfff;
        if !pages.contains(&page) {
            pages.push(page);
        }
    }
    Ok(pages)
}

impl Model for Lockdown {
    fn build(p: &Params, machine: &MachineConfig, _seed: u64) -> Result<Self, String> {
        let level = lockable_level(machine, p.text("level"))?;
        let pages = parse_pages(p.text("pages"))?;
        // seed 004 §III: the Cortex-A9 has 4 lockable entries; asking for more is the user's
        // error, not a silent truncation.
        if pages.len() > level.lockable {
            return Err(format!(
                "technique lockdown: {} pages given, but TLB level {} has {} lockable entries",
                pages.len(),
                level.name,
                level.lockable
            ));
        }
        let count = p.u64("count")?;
        if count as usize > level.lockable {
            return Err(format!(
                "technique lockdown: parameter 'count' asks for {count} pages, but TLB level {} has {} lockable entries",
                level.name, level.lockable
            ));
        }
        let all_cores = p.choice("cores", &["one", "all"])? == "all";
        Ok(Lockdown {
            pages,
            process: p.u64_in("process", 0, u32::MAX as u64)? as u32,
            all_cores,
            level: level.name.clone(),
            done: false,
            pages_locked: 0,
            lock_cycles: 0,
        })
    }
}

impl Technique for Lockdown {
    fn declaration(&self) -> Declaration {
        Declaration {
            name: INFO.name,
            levels: &["pages_requested", "entries_locked"],
            reports_stall_cycles: true,
            ..Declaration::named(INFO.name)
        }
    }

    fn on_switch_in(
        &mut self,
        sys: &mut System,
        cpu: usize,
        thread: ThreadId,
    ) -> Result<u64, SimError> {
        if self.done {
            return Ok(0);
        }
        let st = sys.thread_state(thread)?;
        if st.space as u32 != self.process {
            return Ok(0);
        }
        self.done = true;
        let cores = if self.all_cores {
            (0..sys.config.cores).collect()
        } else {
            vec![sys.cpu_core(cpu)]
        };
        let mut cycles = 0;
        for &page in &self.pages {
            let (c, n) = sys.lock_page(st.space, VirtAddr(page), cpu, &cores, &self.level)?;
            cycles += c;
            self.pages_locked += n as u64;
        }
        self.lock_cycles += cycles;
        Ok(cycles)
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![
            ("pages_requested".to_string(), self.pages.len() as u64),
            ("entries_locked".to_string(), self.pages_locked),
            ("lock_cycles".to_string(), self.lock_cycles),
        ]
    }
}
