//! TLB migration (seed 000, Landsberg 2018): when a thread moves to another core, its TLB
//! entries are read on the source core, filtered, stored in memory, and written into the
//! destination core's TLB before the thread runs there (seed 000 §3.1, steps 1-4).
//!
//! The model acts at the two moments of the seed's Linux integration (§7): `on_migrate`
//! (`move_queued_task`) saves, `on_switch_in` (the first `finish_task_switch` on the new core)
//! restores. A thread that migrates back to the core it was saved from before it ran elsewhere
//! restores nothing (its entries are still there); a thread that migrates on before running
//! keeps the set saved from the core it ran on. An ASID rollover between save and restore makes
//! the saved entries stale (§3.3: ASIDs are reassigned), so they are dropped.
//!
//! Every step is simulated on the machine, not assumed: the source TLB level is read entry by
//! entry (cost per entry: Table A.1 on the Cortex-A7, the gem5 interface's register operations
//! on gem5, §5.2); the kept entries are stored word by word through the source core's caches
//! (`System::kernel_access`, real cache accesses; with `os.kernel_pages` > 0, through the
//! kernel's global mapping, `System::kernel_touch`, so the save area takes a data TLB entry
//! beside the thread's as the `task_struct` does in §7); the restore loads them back through the
//! destination's caches and writes the TLB:
//!
//! - `pld_direct` (§3.3, §4.2): a preload of each page. The walk happens in the foreground
//!   (simulated through the caches, filling every data TLB level); the line fill of the page's
//!   first line runs in the background with two fills outstanding (Fig. 4.5); a back-to-back
//!   burst of preloads with no other load between them starts at most 17 fills (Table A.2: the
//!   cache accesses stay at 17 from 17 pages on; §4.3 saw no such limit in the restore loop,
//!   whose loads of saved addresses come between the preloads).
//! - `pld_indirect` (§3.3, §4.3): the first-level descriptor is loaded and the second-level
//!   descriptor's line preloaded; no TLB entry is written, the thread's own access then walks
//!   from cached descriptors.
//! - `v1`-`v4`, seed §5: gem5 interfaces that write entries directly (no walk). v1: 92-bit
//!   layout in three data registers plus a commit write (Table A.8); v2: 64 bits in two, the
//!   second write commits (Table A.9); v3: the hardware streams the valid entries of an ASID
//!   (layout v3, 55 bits in two registers, Table A.10): no per-entry read or software filter,
//!   a zero entry ends the stream; v4: v3's stream byte-packed to 7 bytes per entry, its
//!   restore stream ended by two zero writes, and the used bit filtered in hardware (§5.2).
//!
//! The save reads the level in the interface's order and the restore writes the entries back in
//! that order: the A7's main TLB by index and way; gem5's table (v1-v4) by index, which gem5
//! keeps in recency order (`Tlb::entries_newest_first`), so a gem5 restore reverses it.
//!
//! Filters (§3.1): `none` keeps every slot read, `valid` the valid entries, `asid` the valid
//! entries whose ASID field is the thread's (the seed's; on gem5's interfaces this includes the
//! kernel's global entries filled under that ASID, whose layouts carry the global bit), `used` those of them used since they were filled
//! (§5.2's used bit: `System::track_tlb_use` counts uses on the general path). The storage limit
//! (§7: room in `task_struct`) keeps the first `limit` entries. The selective-restore predictor
//! of the seed's future work (§9; Reza and Byrd's age predictor, §2.3) is one more filter:
//! `uses` keeps entries used at least `min_uses` times since filled, `age` those used within
//! the last `max_age` references before the migration.
//!
//! The cost constants are per CPU model (`cpu`): the Cortex-A7's from Tables A.1-A.2 only, gem5's
//! from the text of §5-6 only; each is named below with its source (docs/technique-tlb_migration.md
//! lists them). Memory latencies are never constants here: they are the machine's caches.

mod bench;
mod save;

pub use bench::{pld_benchmark, read_cycles, PldBench, PldBenchLayout, PLD_BENCH_MAX_PAGES};

use super::{Model, ParamInfo, Params, TechniqueInfo};
use crate::machine::MachineConfig;
use crate::system::{Declaration, SimError, System, Technique};
use crate::tlb::TlbEntry;
use std::collections::HashMap;
use tlblab_types::{Asid, ThreadId, VirtAddr};

pub const INFO: TechniqueInfo = TechniqueInfo {
    name: "tlb_migration",
    summary: "a migrating thread's TLB entries saved on the source core and restored on the destination",
    seed: "seed 000 §3-4 (Cortex-A7 pld), §5-6 (gem5 interfaces v1-v4), §7 (Linux), §9 (predictor)",
    params: &[
        ParamInfo {
            name: "interface",
            default: "pld_direct",
            meaning: "pld_direct, pld_indirect (Cortex-A7, §3.3), v1, v2, v3, v4 (gem5, §5.2)",
        },
        ParamInfo {
            name: "filter",
            default: "asid",
            meaning: "none, valid, asid (valid and the thread's ASID), used (asid and used since filled)",
        },
        ParamInfo {
            name: "limit",
            default: "0",
            meaning: "most entries saved per migration (§7's storage limit); 0: the size of the TLB level read",
        },
        ParamInfo {
            name: "predict",
            default: "none",
            meaning: "selective restore (§9 future work): none, uses (>= min_uses uses), age (used within max_age references)",
        },
        ParamInfo {
            name: "min_uses",
            default: "2",
            meaning: "predict=uses: uses since filled an entry needs to be carried",
        },
        ParamInfo {
            name: "max_age",
            default: "10000",
            meaning: "predict=age: an entry is carried if used within this many references before the migration",
        },
        ParamInfo {
            name: "cpu",
            default: "auto",
            meaning: "cost model: a7 (Tables A.1-A.2), gem5 (§5-6), auto (gem5 for machines named gem5*, else a7)",
        },
        ParamInfo {
            name: "asid_update",
            default: "false",
            meaning: "true: v1 and v2's restore inserts the current ASID into each entry before writing it (§5.2; v3 and v4 need not, pld walks), one instruction an entry",
        },
        ParamInfo {
            name: "save_base",
            default: "0",
            meaning: "physical address of the per-thread save areas (4 KiB each); 0: 64 MiB below the top of memory",
        },
    ],
};

/// How entries get into the destination TLB.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Interface {
    PldDirect,
    PldIndirect,
    V1,
    V2,
    V3,
    V4,
}

impl Interface {
    /// The interfaces by their `interface=` names.
    pub const NAMES: [&'static str; 6] = ["pld_direct", "pld_indirect", "v1", "v2", "v3", "v4"];

    /// The interface named `name` (`interface=`), or an error listing the names.
    pub fn named(name: &str) -> Result<Interface, String> {
        Ok(match name {
            "pld_direct" => Interface::PldDirect,
            "pld_indirect" => Interface::PldIndirect,
            "v1" => Interface::V1,
            "v2" => Interface::V2,
            "v3" => Interface::V3,
            "v4" => Interface::V4,
            _ => {
                return Err(format!(
                    "tlb_migration: interface expects one of {}, found '{name}'",
                    Self::NAMES.join(", ")
                ))
            }
        })
    }

    /// Whether the hardware streams the entries of an ASID (v3, v4: §5.2), so the software
    /// neither reads every slot nor filters.
    fn streams(self) -> bool {
        matches!(self, Interface::V3 | Interface::V4)
    }

    /// Whether it is one of gem5's interfaces (§5.2), read by index from gem5's table.
    fn gem5(self) -> bool {
        !matches!(self, Interface::PldDirect | Interface::PldIndirect)
    }

    /// Bits stored per entry: the VA word for pld (§3.3: "only needs a virtual address");
    /// Table 5.1's totals for v1-v3, padded to the 32-bit data registers; v4 packs 55 bits into
    /// 7 bytes (§5.2: "save 1 B for each entry").
    fn bytes_per_entry(self) -> u64 {
        match self {
            Interface::PldDirect | Interface::PldIndirect => 4,
            Interface::V1 => 12,
            Interface::V2 | Interface::V3 => 8,
            Interface::V4 => 7,
        }
    }

    /// Data-register reads per entry read (Listing 3.1: three on the A7; v1 three, v2 two, §5.2).
    fn data_regs(self) -> u64 {
        match self {
            Interface::PldDirect | Interface::PldIndirect | Interface::V1 => 3,
            Interface::V2 | Interface::V3 | Interface::V4 => 2,
        }
    }
}

/// Which entries are saved.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Filter {
    None,
    Valid,
    Asid,
    Used,
}

impl Filter {
    /// Fields the software tests per entry (valid, ASID, used).
    fn checks(self) -> u64 {
        match self {
            Filter::None => 0,
            Filter::Valid => 1,
            Filter::Asid => 2,
            Filter::Used => 3,
        }
    }
}

/// The selective-restore predictor (§9).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Predict {
    None,
    Uses(u32),
    Age(u64),
}

/// A CPU's cost constants in cycles (memory latencies come from the simulated caches).
#[derive(Clone, Copy, Debug)]
pub struct Costs {
    /// Per call of save or of restore: entering the routine, timers, loop set-up.
    pub fixed: u64,
    /// Write of the operation register (selects the entry, starts a stream, commits a write).
    pub op_write: u64,
    /// Read or write of one data register.
    pub data_reg: u64,
    /// Loop overhead per entry read in software (index update, compare, branch).
    pub read_loop: u64,
    /// Per field tested by the software filter.
    pub filter_check: u64,
    /// Loop overhead per entry streamed (v3/v4) or written back.
    pub stream_loop: u64,
    /// Issue cost per word stored or loaded, beyond the cache's latency.
    pub word: u64,
    /// pld: loop overhead per preload.
    pub pld_loop: u64,
    /// pld: cycles a line fill holds its slot beyond the latency of the line's first access.
    pub pld_fill_extra: u64,
    /// pld: line fills outstanding at once.
    pub pld_slots: usize,
    /// pld: most line fills a back-to-back burst of preloads starts.
    pub pld_burst_fills: u64,
    /// pld_indirect: address arithmetic per entry (first- and second-level descriptor address).
    pub indirect_addr: u64,
    /// v1/v2 with `asid_update`: inserting the current ASID into an entry's ASID field before
    /// its registers are written (§5.2: "Where it was necessary to update each entry every time
    /// before writing it"). Not in the seed: one ARMv7 bit-field insert (`bfi`, ARM ARM DDI 0406C
    /// §A8.8.19) an entry, the entry's words being in registers already for the data-register
    /// writes; the current ASID is read once per call, within `fixed`.
    pub asid_insert: u64,
}

impl Costs {
    /// A CPU's constants by the technique's `cpu=` name: `a7` (`A7`) or `gem5` (`GEM5`).
    pub fn named(cpu: &str) -> Result<Costs, String> {
        match cpu {
            "a7" => Ok(A7),
            "gem5" => Ok(GEM5),
            _ => Err(format!(
                "tlb_migration: cpu expects a7 or gem5, found '{cpu}'"
            )),
        }
    }

    /// Sets the constant named `name` (a field of `Costs`) to `value`: to redo a fit (the
    /// calibration against Table A.2, docs/technique-tlb_migration.md).
    pub fn set(&mut self, name: &str, value: u64) -> Result<(), String> {
        let field = match name {
            "fixed" => &mut self.fixed,
            "op_write" => &mut self.op_write,
            "data_reg" => &mut self.data_reg,
            "read_loop" => &mut self.read_loop,
            "filter_check" => &mut self.filter_check,
            "stream_loop" => &mut self.stream_loop,
            "word" => &mut self.word,
            "pld_loop" => &mut self.pld_loop,
            "pld_fill_extra" => &mut self.pld_fill_extra,
            "pld_burst_fills" => &mut self.pld_burst_fills,
            "indirect_addr" => &mut self.indirect_addr,
            "asid_insert" => &mut self.asid_insert,
            "pld_slots" => {
                if !(1..=4).contains(&value) {
                    return Err(format!(
                        "tlb_migration: pld_slots expects 1 to 4 fills outstanding, found {value}"
                    ));
                }
                self.pld_slots = value as usize;
                return Ok(());
            }
            _ => {
                return Err(format!(
                    "tlb_migration: no cost constant named '{name}' (expected one of fixed, op_write, data_reg, read_loop, filter_check, stream_loop, word, pld_loop, pld_fill_extra, pld_slots, pld_burst_fills, indirect_addr, asid_insert)"
                ))
            }
        };
        *field = value;
        Ok(())
    }
}

/// Cortex-A7 (Raspberry Pi 2), calibrated on Tables A.1-A.2 only.
pub const A7: Costs = Costs {
    // The seed gives no call overhead apart from the benchmark tables (A.3-A.7, not used).
    fixed: 0,
    // §4.1: "a write to the operation register takes 4 cycles, while a read from a data register
    // takes 1 cycle".
    op_write: 4,
    data_reg: 1,
    // Table A.1: 13 cycles for one entry, 10 per further entry = 7 register cycles + 3 of loop.
    read_loop: 3,
    // Not in the seed: a test and a branch per field at one instruction per cycle (in-order A7).
    filter_check: 2,
    // Not in the seed: increment, compare, branch per entry written back.
    stream_loop: 3,
    // Not in the seed: one store/load instruction per word on the in-order A7.
    word: 1,
    // Fitted to Table A.2 (pld of 1-64 consecutive pages, least squares with the walks simulated on
    // the cortex-a7 preset, whose memory takes 160 cycles): 16 cycles of loop per preload and a fill
    // holding its slot 32 cycles past the first word (a 64-byte line's burst).
    pld_loop: 16,
    pld_fill_extra: 32,
    // §4.2, Fig. 4.5: "this limit seems to be at two".
    pld_slots: 2,
    // Table A.2: cache accesses stay at 17 for 17, 18, 32 and 64 pages.
    pld_burst_fills: 17,
    // Not in the seed: two shifts and an add for each descriptor address.
    indirect_addr: 6,
    // One instruction at one cycle (in-order A7); the A7 has no v1/v2 interface, kept for `cpu=a7`.
    asid_insert: 1,
};

/// gem5's TimingSimpleCPU at 900 MHz (Listing 6.1), calibrated on the text of §6.2 only.
///
/// TimingSimpleCPU fetches every instruction through the L1I and issues the next fetch only once
/// the last one's response is sunk (gem5 src/cpu/simple/timing.cc), so an instruction that does
/// not touch memory costs the L1I's hit latency, 2 cycles (configs/common/Caches.py: L1Cache tag
/// and data latency 2): the register accesses and the assumed loops count 2 cycles an
/// instruction; a load or store costs its fetch (`word`) plus its simulated data access.
pub const GEM5: Costs = Costs {
    // Fitted: least squares (relative) over §6.2's stated save times — v1/v2 "about 2600 ns" for
    // one page, 4904 (v1) and 3712 ns (v2) for 64 pages, v3/v4 "about 800 ns" for one page —
    // with the stores simulated on gem5-a7 (walks to the L2, memory 116 cycles): 582 cycles of
    // call and 10 of loop per entry read in software (every fitted time within 6%).
    fixed: 582,
    // One instruction each (mcr/mrc), 2 cycles: the fetch.
    op_write: 2,
    data_reg: 2,
    read_loop: 10,
    // Not in the seed: a test and a branch per field (two instructions).
    filter_check: 4,
    // Not in the seed: a test, a branch and an increment per streamed or written entry (three
    // instructions).
    stream_loop: 6,
    // One store or load instruction's fetch; its data access is simulated.
    word: 2,
    // gem5 does not implement pld as the A7 does (§6.1); the A7's constants stand in.
    pld_loop: 16,
    pld_fill_extra: 32,
    pld_slots: 2,
    pld_burst_fills: 17,
    indirect_addr: 6,
    // One instruction: its fetch, 2 cycles.
    asid_insert: 2,
};

/// A set of entries saved for a thread.
#[derive(Clone, Debug)]
struct Saved {
    /// The hardware thread it was read on.
    from: usize,
    /// The ASID generation of the thread's space at the save.
    generation: u64,
    entries: Vec<TlbEntry>,
}

pub struct TlbMigration {
    pub interface: Interface,
    pub filter: Filter,
    pub predict: Predict,
    pub limit: u64,
    pub costs: Costs,
    /// v1/v2's restore rewrites each entry's ASID (§5.2); off unless `asid_update=1`.
    pub asid_update: bool,
    save_base: u64,
    pending: HashMap<ThreadId, Saved>,
    c: Counters,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    migrations: u64,
    saves: u64,
    entries_read: u64,
    entries_saved: u64,
    filtered_invalid: u64,
    filtered_other_asid: u64,
    filtered_unused: u64,
    filtered_predictor: u64,
    dropped_limit: u64,
    restores: u64,
    entries_restored: u64,
    returned_before_running: u64,
    rollover_discards: u64,
    save_cycles: u64,
    restore_cycles: u64,
    pld_fills: u64,
    pld_fills_dropped: u64,
}

impl Model for TlbMigration {
    fn build(p: &Params, machine: &MachineConfig, _seed: u64) -> Result<Self, String> {
        let interface = Interface::named(p.choice("interface", &Interface::NAMES)?)?;
        let filter = match p.choice("filter", &["none", "valid", "asid", "used"])? {
            "none" => Filter::None,
            "valid" => Filter::Valid,
            "asid" => Filter::Asid,
            _ => Filter::Used,
        };
        if interface.streams() && matches!(filter, Filter::None | Filter::Valid) {
            return Err(format!(
                "technique tlb_migration: parameter 'filter' expects asid or used with interface {} (its hardware streams the entries of one ASID, §5.2), found '{}'",
                p.text("interface"),
                p.text("filter")
            ));
        }
        let predict = match p.choice("predict", &["none", "uses", "age"])? {
            "none" => Predict::None,
            "uses" => Predict::Uses(p.u64_in("min_uses", 1, u32::MAX as u64)? as u32),
            _ => Predict::Age(p.u64_in("max_age", 1, u64::MAX)?),
        };
        let cpu = p.choice("cpu", &["auto", "a7", "gem5"])?;
        let costs = match cpu {
            "a7" => A7,
            "gem5" => GEM5,
            _ if machine.name.starts_with("gem5") => GEM5,
            _ => A7,
        };
        let data = machine
            .tlbs
            .iter()
            .filter(|t| t.kind != crate::tlb::TlbKind::Instr)
            .max_by_key(|t| t.level)
            .ok_or("technique tlb_migration: the machine has no data TLB to migrate")?;
        let limit = p.u64("limit")?;
        let limit = if limit == 0 {
            data.entries as u64
        } else {
            limit
        };
        let asid_update = p.bool("asid_update")?;
        let mut save_base = p.u64("save_base")?;
        if save_base == 0 {
            save_base = machine.memory.bytes.saturating_sub(64 << 20);
        }
        if save_base % 4096 != 0 {
            return Err(format!(
                "technique tlb_migration: parameter 'save_base' expects a multiple of 4096, found '{}'",
                p.text("save_base")
            ));
        }
        Ok(TlbMigration {
            interface,
            filter,
            predict,
            limit,
            costs,
            asid_update,
            save_base,
            pending: HashMap::new(),
            c: Counters::default(),
        })
    }
}

impl TlbMigration {
    /// Whether the filters need the engine's use counts.
    fn needs_use(&self) -> bool {
        self.filter == Filter::Used || self.predict != Predict::None
    }

    /// The save area of `thread`: one 4 KiB page per thread (room for 256 entries of 12 bytes,
    /// the largest layout: the seed's `task_struct` fields, §7).
    fn area(&self, thread: ThreadId) -> u64 {
        self.save_base + (thread.0 as u64 % 4096) * 4096
    }

    /// The TLB level the interface reads and writes on `core`: the last data level (the A7's
    /// main TLB, §3.3: the micro TLBs cannot be read; gem5's data TLB, §5.2).
    fn level(sys: &System, core: usize) -> Option<usize> {
        sys.data_tlbs_of(core).last().copied()
    }

    /// Stores or loads `n` entries' bytes at the save area, word by word through `cpu`'s caches
    /// (real simulated accesses). Returns the cycles.
    fn move_words(
        &self,
        sys: &mut System,
        cpu: usize,
        thread: ThreadId,
        n: u64,
        write: bool,
    ) -> Result<u64, SimError> {
        let words = (n * self.interface.bytes_per_entry()).div_ceil(4);
        let base = self.area(thread);
        let mut cycles = 0;
        for w in 0..words {
            cycles += self.costs.word + Self::area_word(sys, cpu, thread, base + w * 4, write)?;
        }
        Ok(cycles)
    }

    /// One word of the save area (in the `task_struct`, §7): through the kernel's global
    /// mapping, taking a TLB entry beside the thread's, when the kernel's translations are
    /// traced (`System::kernel_traced`, the Linux integration); else a physical access.
    fn area_word(
        sys: &mut System,
        cpu: usize,
        thread: ThreadId,
        pa: u64,
        write: bool,
    ) -> Result<u64, SimError> {
        if sys.kernel_traced() {
            sys.kernel_touch(cpu, thread, pa, write)
        } else {
            Ok(sys.kernel_access(cpu, pa, write))
        }
    }
}

/// The timing state of a sequence of preloads: the clock, when each fill slot frees, and the
/// fills started since the last other load.
struct Pld {
    t: u64,
    free: [u64; 4],
    burst: u64,
}

impl Pld {
    fn new(k: Costs) -> Pld {
        assert!(k.pld_slots >= 1 && k.pld_slots <= 4);
        Pld {
            t: 0,
            free: [0; 4],
            burst: 0,
        }
    }
}

/// Preloads `vas` back to back on hardware thread `cpu` for `thread` (Table A.2's benchmark:
/// a loop of `pld` with nothing between), with the model's timing; returns the cycles. For
/// the calibration check against Table A.2.
pub fn pld_burst(
    sys: &mut System,
    costs: Costs,
    cpu: usize,
    thread: ThreadId,
    vas: &[VirtAddr],
) -> Result<u64, SimError> {
    let mut m = TlbMigration {
        interface: Interface::PldDirect,
        filter: Filter::Asid,
        predict: Predict::None,
        limit: u64::MAX,
        costs,
        asid_update: false,
        save_base: 0,
        pending: HashMap::new(),
        c: Counters::default(),
    };
    let mut pld = Pld::new(costs);
    for &va in vas {
        m.pld(sys, &mut pld, cpu, thread, va, true)?;
    }
    Ok(pld.t)
}

impl Technique for TlbMigration {
    fn declaration(&self) -> Declaration {
        Declaration::named("tlb_migration")
    }

    fn on_install(&mut self, sys: &mut System) -> Result<(), SimError> {
        if self.needs_use() {
            sys.track_tlb_use();
        }
        Ok(())
    }

    fn on_migrate(
        &mut self,
        sys: &mut System,
        thread: ThreadId,
        _space: usize,
        from: usize,
        to: usize,
    ) -> Result<u64, SimError> {
        self.c.migrations += 1;
        if let Some(p) = self.pending.get(&thread) {
            // It has not run since the last save: its entries are on `p.from`'s TLB still.
            if p.from == to {
                self.pending.remove(&thread);
                self.c.returned_before_running += 1;
            }
            return Ok(0);
        }
        self.save(sys, thread, from)
    }

    fn on_switch_in(
        &mut self,
        sys: &mut System,
        cpu: usize,
        thread: ThreadId,
    ) -> Result<u64, SimError> {
        match self.pending.remove(&thread) {
            Some(saved) if saved.from != cpu => self.restore(sys, cpu, thread, saved),
            _ => Ok(0),
        }
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let c = &self.c;
        [
            ("migrations", c.migrations),
            ("saves", c.saves),
            ("entries_read", c.entries_read),
            ("entries_saved", c.entries_saved),
            ("filtered_invalid", c.filtered_invalid),
            ("filtered_other_asid", c.filtered_other_asid),
            ("filtered_unused", c.filtered_unused),
            ("filtered_predictor", c.filtered_predictor),
            ("dropped_limit", c.dropped_limit),
            ("restores", c.restores),
            ("entries_restored", c.entries_restored),
            ("returned_before_running", c.returned_before_running),
            ("rollover_discards", c.rollover_discards),
            ("save_cycles", c.save_cycles),
            ("restore_cycles", c.restore_cycles),
            ("pld_fills", c.pld_fills),
            ("pld_fills_dropped", c.pld_fills_dropped),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}
