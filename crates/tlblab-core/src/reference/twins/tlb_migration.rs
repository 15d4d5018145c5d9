//! The twin of `tlb_migration`, from seed 000 (Landsberg 2018). A migration is four steps
//! (§3.1): (1) read every entry of the source core's TLB, (2) drop the irrelevant ones
//! (invalid, another address space's, unused), (3) store the rest in memory, (4) write them
//! into the new core's TLB. Linux does 1-3 in `move_queued_task` and sets a flag; the first
//! `finish_task_switch` of the task restores and clears the flag (§7).
//!
//! Naively, as the catalog's parameters say:
//!
//! - At a `Migrate` of a thread with nothing saved, the last data TLB level of the source
//!   core (the A7's main TLB: the micro TLBs cannot be read, §3.3; gem5's data TLB, §5.2) is
//!   scanned slot by slot (gem5's interfaces: each set most recently used first, as gem5's
//!   table is kept and read by index; the A7's: way by way). A thread that migrates again
//!   before it ran keeps what it has saved (its entries are on the core it ran on), and one
//!   that migrates back to that hardware thread before it ran drops it (they are still there).
//! - Software interfaces (`pld_direct`, `pld_indirect`, `v1`, `v2`) read every slot at the
//!   interface's register cost (Listing 3.1 on the A7: one operation-register write and three
//!   data-register reads; v1 three, v2 two, §5.2) and test the filter's fields; `v3`/`v4`
//!   stream only the valid entries of the ASID (§5.2), two registers an entry (v4: 7 bytes
//!   packed), ended by two zeroed registers.
//! - Filters (§3.1): `none` every slot (empty ones too), `valid`, `asid` (valid and the
//!   thread's ASID), `used` (also used since filled: §5.2's used bit). The predictor of §9:
//!   `uses` (at least `min_uses` uses), `age` (a use within the last `max_age` references).
//!   A save clears the uses of what it keeps ("accessed since the last migration", §3.1).
//! - At most `limit` entries are stored (§7's room in `task_struct`; 0: the level's size),
//!   word by word into the thread's 4 KiB save area at `save_base` through the source core's
//!   data caches: 4 bytes an entry for pld (§3.3: "only needs a virtual address"), 12 for v1
//!   (92 bits, Table A.8, three 32-bit registers), 8 for v2 and v3 (64 and 55 bits, Tables A.9
//!   and A.10, two registers), 7 for v4 (§5.2: "save 1 B for each entry").
//! - At the thread's next switch-in on another hardware thread the words are loaded back
//!   through that core's caches, unless an ASID rollover gave the space a new generation
//!   (§3.3: the saved ASIDs are stale; nothing is restored). Then:
//!   `pld_direct` preloads each page (§4.2: the walk in the foreground, every data level
//!   filled; the line fill in the background, two at a time, Fig. 4.5); `pld_indirect`
//!   loads the first-level descriptor and preloads the line of the last one (§3.3, §4.3);
//!   v1-v4 write each entry into the level it was read from (§5.2: three registers and a
//!   commit for v1, two for v2/v3, v4's packed stream and its two zeroed writes). A written
//!   or preloaded entry starts unused; no layout of Tables A.8-A.10 carries a lock, so a
//!   restored entry is never locked.
//!
//! Cycle constants: the A7's register costs from §4.1 and Table A.1, its pld slots from §4.2
//! and its burst limit from Table A.2; the rest (fitted or assumed) as the catalog's
//! documentation lists them (docs/technique-tlb_migration.md, "Constants and their sources").

use super::{boolean, choice, number, param, Twin, TwinCycles};
use crate::machine::{MachineConfig, TechniqueSpec};
use crate::reference::parts::{Entry, Who};
use crate::reference::{RefOutcome, ReferenceModel};
use crate::tlb::TlbKind;
use std::collections::BTreeMap;

/// A CPU's cycle costs.
#[derive(Clone, Copy)]
struct Cpu {
    call: u64,
    op_reg: u64,
    data_reg: u64,
    read_loop: u64,
    check: u64,
    write_loop: u64,
    word: u64,
    pld_loop: u64,
    fill_tail: u64,
    fill_slots: usize,
    burst_fills: u64,
    descriptor_math: u64,
    /// §5.2's ASID update of an entry before v1/v2 write it: one instruction (a bit-field insert).
    asid_field: u64,
}

/// Cortex-A7.
const CORTEX_A7: Cpu = Cpu {
    call: 0,
    // §4.1: "a write to the operation register takes 4 cycles, while a read from a data
    // register takes 1 cycle".
    op_reg: 4,
    data_reg: 1,
    // Table A.1: 10 cycles per further entry, 7 of them the registers.
    read_loop: 3,
    check: 2,
    write_loop: 3,
    word: 1,
    pld_loop: 16,
    fill_tail: 32,
    // §4.2: "this limit seems to be at two".
    fill_slots: 2,
    // Table A.2: the cache accesses stay at 17 from 17 pages on.
    burst_fills: 17,
    descriptor_math: 6,
    asid_field: 1,
};

/// gem5's TimingSimpleCPU (two cycles an instruction: each is fetched through the L1I and
/// waited for); its pld is the A7's (§6.1).
const GEM5: Cpu = Cpu {
    call: 582,
    op_reg: 2,
    data_reg: 2,
    read_loop: 10,
    check: 4,
    write_loop: 6,
    word: 2,
    asid_field: 2,
    ..CORTEX_A7
};

#[derive(Clone, Copy, PartialEq)]
enum Way {
    PldDirect,
    PldIndirect,
    V1,
    V2,
    V3,
    V4,
}

/// What a thread has saved: the hardware thread it was read on, its space's ASID generation
/// then, the stored slots in order (None: an empty slot stored under `filter=none`).
struct Saved {
    thread: u32,
    from: usize,
    generation: u64,
    slots: Vec<Option<Entry>>,
}

/// The counters the technique reports (docs/technique-tlb_migration.md, "Counters"), by name:
/// the events of seed 000's save (§5.2: entries read, filtered, stored), restore (§7: the
/// entries put back, pld's fills) and the migrations themselves, and their cycles. Every
/// counter is reported, zero or not.
const COUNTERS: [&str; 17] = [
    "migrations",
    "saves",
    "entries_read",
    "entries_saved",
    "filtered_invalid",
    "filtered_other_asid",
    "filtered_unused",
    "filtered_predictor",
    "dropped_limit",
    "restores",
    "entries_restored",
    "returned_before_running",
    "rollover_discards",
    "save_cycles",
    "restore_cycles",
    "pld_fills",
    "pld_fills_dropped",
];

pub(crate) struct MigrationTwin {
    way: Way,
    /// 0 none, 1 valid, 2 asid, 3 used: the number of fields tested, too.
    filter: u64,
    /// Least uses an entry needs to be carried (0: no such rule).
    min_uses: u32,
    /// Oldest last use carried, in references (None: no such rule).
    max_age: Option<u64>,
    limit: u64,
    cpu: Cpu,
    /// §5.2: v1 and v2 set each entry's ASID to the current one before writing it.
    asid_update: bool,
    save_base: u64,
    saved: Vec<Saved>,
    /// Each counter of `COUNTERS` by name, as it stands.
    n: BTreeMap<&'static str, u64>,
}

/// The timing of one restore's preloads: its clock, when each fill slot is free, and the
/// fills started since the last other load.
struct Preloads {
    t: u64,
    free: Vec<u64>,
    burst: u64,
}

impl MigrationTwin {
    /// Adds `amount` to the counter `name` (one of `COUNTERS`).
    fn add(&mut self, name: &'static str, amount: u64) {
        debug_assert!(COUNTERS.contains(&name), "{name}");
        *self.n.entry(name).or_insert(0) += amount;
    }

    /// Whether the entries must count their uses.
    pub(super) fn counts_uses(&self) -> bool {
        self.filter == 3 || self.min_uses > 0 || self.max_age.is_some()
    }

    fn bytes_per_entry(&self) -> u64 {
        match self.way {
            Way::PldDirect | Way::PldIndirect => 4,
            Way::V1 => 12,
            Way::V2 | Way::V3 => 8,
            Way::V4 => 7,
        }
    }

    fn area(&self, thread: u32) -> u64 {
        self.save_base + (thread as u64 % 4096) * 4096
    }

    /// One load or store of physical `pa` by the kernel on hardware thread `cpu`: its core's
    /// data caches, no TLB (the kernel's linear map). Returns its latency.
    fn kernel(r: &mut ReferenceModel, cpu: usize, pa: u64, write: bool) -> u64 {
        let path = r.cores[r.cpus[cpu].core].dcache.clone();
        let (lat, src) = r.load(cpu, &path, pa, write);
        r.counters[cpu].data_by_source[src] += 1;
        lat
    }

    /// One word of `thread`'s save area (the `task_struct`, §7): through the kernel's global
    /// mapping when the kernel's translations are traced (`os.kernel_pages` or
    /// `os.kernel_return_pages` > 0), else as `kernel`.
    fn area_word(
        r: &mut ReferenceModel,
        cpu: usize,
        thread: u32,
        pa: u64,
        write: bool,
    ) -> Result<u64, String> {
        let os = &r.opts.os;
        if os.kernel_pages > 0 || os.kernel_return_pages > 0 || os.migrate_kernel_pages > 0 {
            r.kernel_touch(cpu, thread, pa, write)
        } else {
            Ok(Self::kernel(r, cpu, pa, write))
        }
    }

    /// Stores (or loads) the words of `entries` entries at `thread`'s save area.
    fn words(
        &self,
        r: &mut ReferenceModel,
        cpu: usize,
        thread: u32,
        entries: u64,
        write: bool,
    ) -> Result<u64, String> {
        let words = (entries * self.bytes_per_entry()).div_ceil(4);
        let mut cycles = 0;
        for i in 0..words {
            let pa = self.area(thread) + 4 * i;
            cycles += self.cpu.word + Self::area_word(r, cpu, thread, pa, write)?;
        }
        Ok(cycles)
    }

    /// Steps 1-3 of §3.1 on hardware thread `from`.
    fn save(&mut self, r: &mut ReferenceModel, thread: u32, from: usize) -> Result<u64, String> {
        let core = r.cpus[from].core;
        let Some(&(level, _)) = r.cores[core].dtlb.last() else {
            return Ok(0);
        };
        let space = r.threads[&thread].0;
        let asid = r.spaces[space].asid;
        let generation = r.spaces[space].generation;
        let now = r.references;
        let c = self.cpu;
        let tlb = &mut r.tlbs[level];
        let ways = tlb.sets.ways;
        let sets = tlb.sets.slots.len();
        // The lockable array's slots (`TlbConfig::lockable_array`) are read after the sets'.
        let slots = (sets * ways + tlb.array.len()) as u64;
        let mut kept: Vec<Entry> = Vec::new();
        let mut stored: Vec<Option<Entry>> = Vec::new();
        let mut valid = 0;
        // gem5's interfaces read its table by index, and gem5 keeps the table most recent
        // first (insert at index 0, a hit moved there: gem5 src/arch/arm/tlb.cc); the A7's main
        // TLB is read by index and way (Table 3.2). The restore writes in the order read.
        let gem5 = !matches!(self.way, Way::PldDirect | Way::PldIndirect);
        // (set, way), or (sets, i) for slot i of the lockable array.
        let mut positions: Vec<(usize, usize)> = Vec::new();
        for set in 0..sets {
            let order: Vec<usize> = if gem5 {
                tlb.sets.valid_ways_newest_first(set)
            } else {
                (0..ways).collect()
            };
            positions.extend(order.into_iter().map(|way| (set, way)));
        }
        positions.extend((0..tlb.array.len()).map(|i| (sets, i)));
        {
            for (set, way) in positions {
                let cell = if set < sets {
                    &mut tlb.sets.slots[set][way]
                } else {
                    &mut tlb.array[way]
                };
                let Some(e) = cell.clone() else {
                    continue;
                };
                valid += 1;
                // The ASID field decides (§3.2, §5.2); gem5's layouts carry the global bit
                // (Tables A.8-A.10), so its interfaces keep the kernel's entries filled under
                // the thread's ASID; the A7's pld restore leaves them out.
                if self.filter >= 2 && ((e.global && !gem5) || e.asid != asid) {
                    self.add("filtered_other_asid", 1);
                    continue;
                }
                if self.filter == 3 && e.uses == 0 {
                    self.add("filtered_unused", 1);
                    continue;
                }
                let by_uses = self.min_uses == 0 || e.uses >= self.min_uses;
                let by_age = self
                    .max_age
                    .is_none_or(|a| e.uses > 0 && now - e.last_use <= a);
                if !(by_uses && by_age) {
                    self.add("filtered_predictor", 1);
                    continue;
                }
                // What is read is used no more (§3.1: "accessed since the last migration").
                let held = cell.as_mut().expect("valid");
                held.uses = 0;
                held.last_use = 0;
                kept.push(e.clone());
                stored.push(Some(e));
            }
        }
        if self.filter > 0 {
            self.add("filtered_invalid", slots - valid);
        } else {
            // `none` stores the empty slots too, after the valid entries (the engine's order:
            // the seed always filters, §3.1 step 2, so it says nothing of where they go; under
            // a `limit` this keeps valid entries first).
            stored.extend((valid..slots).map(|_| None));
        }
        let mut cycles = c.call;
        if matches!(self.way, Way::V3 | Way::V4) {
            // The stream: the ASID written, each entry's registers read, two zeroed ones.
            let n = (kept.len() as u64).min(self.limit);
            let reads = if self.way == Way::V4 {
                (7 * n).div_ceil(4)
            } else {
                2 * n
            };
            cycles += c.op_reg + (reads + 2) * c.data_reg + n * c.write_loop;
            self.add("entries_read", kept.len() as u64);
        } else {
            let regs = if self.way == Way::V2 { 2 } else { 3 };
            cycles += slots * (c.op_reg + regs * c.data_reg + c.read_loop + self.filter * c.check);
            self.add("entries_read", slots);
        }
        if stored.len() as u64 > self.limit {
            self.add("dropped_limit", stored.len() as u64 - self.limit);
            stored.truncate(self.limit as usize);
        }
        cycles += self.words(r, from, thread, stored.len() as u64, true)?;
        self.add("saves", 1);
        self.add("entries_saved", stored.len() as u64);
        self.add("save_cycles", cycles);
        self.saved.push(Saved {
            thread,
            from,
            generation,
            slots: stored,
        });
        Ok(cycles)
    }

    /// Step 4 of §3.1 on hardware thread `cpu`.
    fn restore(
        &mut self,
        r: &mut ReferenceModel,
        cpu: usize,
        thread: u32,
        saved: Saved,
    ) -> Result<u64, String> {
        let space = r.threads[&thread].0;
        if r.spaces[space].generation != saved.generation {
            self.add("rollover_discards", 1);
            return Ok(0);
        }
        let asid = r.spaces[space].asid;
        let c = self.cpu;
        let mut cycles = c.call;
        if matches!(self.way, Way::PldDirect | Way::PldIndirect) {
            let mut p = Preloads {
                t: 0,
                free: vec![0; c.fill_slots],
                burst: 0,
            };
            for (i, slot) in saved.slots.iter().enumerate() {
                // The saved address loaded: a load between the preloads (§4.3).
                let pa = self.area(thread) + 4 * i as u64;
                p.t += c.word + Self::area_word(r, cpu, thread, pa, false)?;
                p.t += c.write_loop;
                p.burst = 0;
                let Some(e) = slot else { continue };
                let va = e.vpn << e.size.shift();
                if self.way == Way::PldDirect {
                    self.preload_page(r, &mut p, cpu, space, va)?;
                    if e.asid == asid && !e.global {
                        self.add("entries_restored", 1);
                    }
                    continue;
                }
                let Some((size, _)) = r.spaces[space].tables.mapping(va) else {
                    continue;
                };
                let descriptors = r.spaces[space].tables.path(r.levels, 0, va, size);
                if descriptors.len() < 2 {
                    continue;
                }
                p.t += c.descriptor_math + c.word + Self::kernel(r, cpu, descriptors[0], false);
                p.burst = 0;
                p.t += c.pld_loop;
                let last = descriptors[descriptors.len() - 1];
                self.fill(r, &mut p, cpu, last);
                self.add("entries_restored", 1);
            }
            cycles += p.t;
        } else {
            let n = saved.slots.len() as u64;
            cycles += self.words(r, cpu, thread, n, false)?;
            cycles += match self.way {
                Way::V1 => n * (3 * c.data_reg + c.op_reg),
                Way::V2 | Way::V3 => n * 2 * c.data_reg,
                _ => ((7 * n).div_ceil(4) + 2) * c.data_reg,
            };
            cycles += n * c.write_loop;
            // §5.2: "Where it was necessary to update each entry every time before writing it,
            // it is now handled implicitly during the initialization of the stream" (v3, v4).
            if self.asid_update && matches!(self.way, Way::V1 | Way::V2) {
                cycles += n * c.asid_field;
            }
            let core = r.cpus[cpu].core;
            let level = r.cores[core].dtlb.last().map(|&(t, _)| t);
            if let Some(level) = level {
                let hw_thread = r.cpus[cpu].hw_thread;
                for e in saved.slots.into_iter().flatten() {
                    let e = Entry {
                        hw_thread,
                        locked: false,
                        uses: 0,
                        last_use: 0,
                        ..e
                    };
                    let who = Who {
                        asid: e.asid,
                        vmid: e.vmid,
                        hw_thread,
                    };
                    let va = e.vpn << e.size.shift();
                    let mine = !e.global && e.asid == asid;
                    r.tlbs[level].insert(e);
                    Self::unused(r, level, va, who);
                    if mine {
                        self.add("entries_restored", 1);
                    }
                }
            }
        }
        self.add("restores", 1);
        self.add("restore_cycles", cycles);
        Ok(cycles)
    }

    /// The entry of `level` translating `va` for `who` starts with no use.
    fn unused(r: &mut ReferenceModel, level: usize, va: u64, who: Who) {
        if let Some(e) = r.tlbs[level].held_mut(va, who) {
            e.uses = 0;
            e.last_use = 0;
        }
    }

    /// `pld` of page `va` of `space` (§3.3, §4.2): the core's data TLB levels looked up in
    /// order, each at its latency; on a hit the levels above it filled; after a miss in all,
    /// a page that is mapped walked in the foreground and every level filled (a preload
    /// does not fault: an unmapped page is left alone). Then the fill of the page's first
    /// line.
    fn preload_page(
        &mut self,
        r: &mut ReferenceModel,
        p: &mut Preloads,
        cpu: usize,
        space: usize,
        va: u64,
    ) -> Result<(), String> {
        p.t += self.cpu.pld_loop;
        let core = r.cpus[cpu].core;
        let path = r.cores[core].dtlb.clone();
        let who = Who {
            asid: r.spaces[space].asid,
            vmid: r.vmid(),
            hw_thread: r.cpus[cpu].hw_thread,
        };
        let mut found = None;
        for (i, &(t, _)) in path.iter().enumerate() {
            p.t += r.tlbs[t].latency;
            if let Some(e) = r.tlbs[t].lookup(va, who) {
                found = Some((i, e.pfn, e.size, e.global));
                break;
            }
        }
        let translation = match found {
            Some(f) => Some(f),
            None if r.spaces[space].tables.mapping(va).is_some() => {
                let (pfn, size, cycles) =
                    r.translate(cpu, space, va, &mut RefOutcome::default())?;
                p.t += cycles;
                let global = r.walked_global(space, va);
                Some((path.len(), pfn, size, global))
            }
            None => None,
        };
        if let Some((above, pfn, size, global)) = translation {
            for &(t, _) in &path[..above] {
                let mut e = Entry::filled(va >> size.shift(), size, pfn, who);
                e.global = global;
                r.tlbs[t].insert(e);
            }
        }
        // What the preload put in (or found) has not been used by the thread.
        for &(t, _) in &path {
            Self::unused(r, t, va, who);
        }
        if let Some((_, pfn, size, _)) = translation {
            let pa = (pfn << 12) + (va & (size.bytes() - 1));
            self.fill(r, p, cpu, pa);
        }
        Ok(())
    }

    /// The background fill of `pa`'s line: it waits for a free slot (Fig. 4.5) and holds it
    /// for the line's latency, and the fill's tail when the line came from memory; a burst of
    /// preloads with no load between them starts at most 17 fills (Table A.2).
    fn fill(&mut self, r: &mut ReferenceModel, p: &mut Preloads, cpu: usize, pa: u64) {
        if p.burst >= self.cpu.burst_fills {
            self.add("pld_fills_dropped", 1);
            return;
        }
        let mut slot = 0;
        for i in 1..p.free.len() {
            if p.free[i] < p.free[slot] {
                slot = i;
            }
        }
        p.t = p.t.max(p.free[slot]);
        let lat = Self::kernel(r, cpu, pa / 64 * 64, false);
        let tail = if lat >= r.config.memory.latency {
            self.cpu.fill_tail
        } else {
            0
        };
        p.free[slot] = p.t + lat + tail;
        p.burst += 1;
        self.add("pld_fills", 1);
    }
}

impl Twin for MigrationTwin {
    fn on_install(&mut self, r: &mut ReferenceModel) {
        r.track_uses |= self.counts_uses();
    }

    fn new(spec: &TechniqueSpec, m: &MachineConfig, _seed: u64) -> Result<MigrationTwin, String> {
        let bad = |name: &str| format!("twin tlb_migration: parameter {name}");
        let way = choice(
            spec,
            "interface",
            "pld_direct",
            &[
                ("pld_direct", Way::PldDirect),
                ("pld_indirect", Way::PldIndirect),
                ("v1", Way::V1),
                ("v2", Way::V2),
                ("v3", Way::V3),
                ("v4", Way::V4),
            ],
        )?;
        let filter = choice(
            spec,
            "filter",
            "asid",
            &[("none", 0), ("valid", 1), ("asid", 2), ("used", 3)],
        )?;
        // §5.2: v3/v4 hardware streams the entries of one ASID; it cannot give all of them.
        if matches!(way, Way::V3 | Way::V4) && filter < 2 {
            return Err(bad("filter"));
        }
        let (mut min_uses, mut max_age) = (0, None);
        match param(spec, "predict", "none") {
            "none" => {}
            "uses" => {
                let n = number(spec, "min_uses", "2")?;
                if n == 0 || n > u32::MAX as u64 {
                    return Err(bad("min_uses"));
                }
                min_uses = n as u32;
            }
            "age" => {
                let n = number(spec, "max_age", "10000")?;
                if n == 0 {
                    return Err(bad("max_age"));
                }
                max_age = Some(n);
            }
            _ => return Err(bad("predict")),
        }
        let cpu = match param(spec, "cpu", "auto") {
            "a7" => CORTEX_A7,
            "gem5" => GEM5,
            "auto" if m.name.starts_with("gem5") => GEM5,
            "auto" => CORTEX_A7,
            _ => return Err(bad("cpu")),
        };
        // The level read: the last of the data path (the same on every core).
        let last = m
            .tlbs
            .iter()
            .filter(|t| t.kind != TlbKind::Instr)
            .map(|t| t.level)
            .max()
            .ok_or("twin tlb_migration: no data TLB")?;
        let size = m
            .tlbs
            .iter()
            .filter(|t| t.kind != TlbKind::Instr && t.level == last)
            .map(|t| t.entries)
            .next_back()
            .unwrap_or(0) as u64;
        let limit = match number(spec, "limit", "0")? {
            0 => size,
            n => n,
        };
        let save_base = match number(spec, "save_base", "0")? {
            0 => m.memory.bytes.saturating_sub(64 << 20),
            b => b,
        };
        if save_base % 4096 != 0 {
            return Err(bad("save_base"));
        }
        let asid_update = boolean(spec, "asid_update", "false")?;
        Ok(MigrationTwin {
            way,
            filter,
            min_uses,
            max_age,
            limit,
            cpu,
            asid_update,
            save_base,
            saved: Vec::new(),
            n: BTreeMap::new(),
        })
    }

    fn on_migrate(
        &mut self,
        r: &mut ReferenceModel,
        thread: u32,
        from: usize,
        to: usize,
    ) -> TwinCycles {
        self.add("migrations", 1);
        if let Some(i) = self.saved.iter().position(|s| s.thread == thread) {
            if self.saved[i].from == to {
                self.saved.remove(i);
                self.add("returned_before_running", 1);
            }
            return Ok(0);
        }
        self.save(r, thread, from)
    }

    fn on_switch_in(&mut self, r: &mut ReferenceModel, cpu: usize, thread: u32) -> TwinCycles {
        let Some(i) = self.saved.iter().position(|s| s.thread == thread) else {
            return Ok(0);
        };
        let saved = self.saved.remove(i);
        if saved.from == cpu {
            return Ok(0);
        }
        self.restore(r, cpu, thread, saved)
    }

    fn counters(&self) -> Vec<(String, u64)> {
        COUNTERS
            .iter()
            .map(|&name| (name.to_string(), self.n.get(name).copied().unwrap_or(0)))
            .collect()
    }
}
