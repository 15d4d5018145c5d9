//! pt_baker's companions, one step at a time on the engine's timeline: the helper thread's
//! pass over the range's page-table entries (seed 001 §4.1-4.4: user loads, prefetches, or
//! the kernel's walk) and the stressors' cache pressure (§5.1, §5.3).

use super::*;

impl PtBaker {
    /// The helper's next step: one touched page (and its NOPs), or the end of a sweep.
    pub(super) fn helper_step(&mut self, sys: &mut System) -> Result<(), SimError> {
        let cpu = self.helper_cpu;
        let (start, end) = self.range.expect("stepped with a range");
        let va = start + self.cursor * 4096;
        if va >= end {
            // End of a sweep (Alg. 2 line 17, Alg. 4 lines 5-6): the system call's return in
            // kernel mode, then the sleep.
            self.sweeps += 1;
            self.cursor = 0;
            self.last_upper = [u64::MAX; 5];
            let mut busy = LOOP_CYCLES;
            if self.mode == Mode::Kernel {
                busy += self.syscall_cycles;
            }
            if self.sleep_cycles > 0 {
                busy += self.syscall_cycles;
            }
            sys.charge_busy(cpu, busy);
            self.busy_cycles += busy;
            if self.sleep_cycles > 0 {
                let t = sys.clock(cpu) + self.sleep_cycles;
                sys.idle_until(cpu, t);
                self.sleep_cycles_total += self.sleep_cycles;
            }
            return Ok(());
        }
        let mut busy = LOOP_CYCLES;
        // The load's (or the reads') cycles are on the helper's clock already: counted in
        // `busy_cycles`, not charged again.
        let mut waited = 0;
        let mut next = self.cursor + self.stride_pages;
        // Whether this step runs the NOP loop (after a visited page, or a PTE read).
        let mut nopped = false;
        match self.mode {
            Mode::User | Mode::Prefetch => {
                // Alg. 2 lines 13-15: the NOPs after every visited element.
                busy += self.nops * self.nop_cycles;
                nopped = true;
                // The seed's helper starts once the region is populated (§4.2): a page the
                // application has not touched yet is passed over (a real load would map the
                // shared zero page, not a frame of its own).
                if sys.is_mapped(self.space, VirtAddr(va)) {
                    let c = sys.access(Access::new(
                        HELPER_THREAD,
                        AccessKind::Load,
                        VirtAddr(va),
                        1,
                    ))?;
                    sys.uncount_companion_reference();
                    // What the helper's walk and load brought to its core stays visible to
                    // the application's in the L3 (`System::keep_in_shared_levels`): the
                    // walked entries and the data line.
                    let (path, leaf) = sys.page_table_path(self.space, VirtAddr(va));
                    for r in &path.refs[..path.len] {
                        if let Some(hpa) = sys.host_physical(*r) {
                            sys.keep_in_shared_levels(cpu, PhysAddr(hpa));
                        }
                    }
                    if let Some(leaf) = leaf {
                        let gpa = PhysAddr(leaf.pfn.base().0 + (va & (leaf.size.bytes() - 1)));
                        if let Some(hpa) = sys.host_physical(gpa) {
                            sys.keep_in_shared_levels(cpu, PhysAddr(hpa));
                        }
                    }
                    // (Before 2026-11-26 `busy` took these cycles and `charge_busy` charged
                    // them a second time: the reference's twin found it.)
                    if self.mode == Mode::Prefetch {
                        let keep = (c as f64 * PREFETCH_COST).round() as u64;
                        sys.overlap_last(cpu, c - keep);
                        waited = keep;
                    } else {
                        waited = c;
                    }
                    self.touches += 1;
                } else {
                    self.skipped_unmapped += 1;
                }
            }
            Mode::Kernel => {
                let (path, leaf) = sys.page_table_path(self.space, VirtAddr(va));
                let levels = sys.page_table_format().levels();
                let last = levels.len() - 1;
                for l in 0..path.len {
                    let pa = path.refs[l].0;
                    // Upper levels once per table they point to (Alg. 3 walks PGD -> PUD ->
                    // PMD -> PT and then the PTEs of that table).
                    if l < last && self.last_upper[l] == pa {
                        continue;
                    }
                    if l < last {
                        self.last_upper[l] = pa;
                    }
                    // An upper entry's value is the next table's address: the reads after it
                    // wait for it (on a machine with `timing.mlp`; the PTE reads overlap).
                    let awaited = l < last;
                    if let Some((c, src)) = sys.read_page_table_line(cpu, path.refs[l], awaited) {
                        // (the read's cycles are on the helper's clock already)
                        self.busy_cycles += c;
                        self.pte_reads += 1;
                        self.pte_reads_by_source[src] += 1;
                    }
                }
                let stop = path.len.saturating_sub(1);
                let next_va = if stop < last {
                    // A huge leaf or an empty upper entry: its whole span is done (the
                    // kernel's walker moves to the next entry of that level), and no PTE was
                    // read, so no NOPs (Alg. 3 lines 9-11 follow each PTE read).
                    let span = 1u64 << levels[stop].shift;
                    (va & !(span - 1)) + span
                } else {
                    busy += self.nops * self.nop_cycles;
                    nopped = true;
                    // Alg. 3 walks one last-level table per call of `walk_pte_range`, from
                    // that table's first address in the range, `stride` pages apart, up to the
                    // table's end (lines 12-16), and `walk_pmd_range` calls it again for the
                    // next table: the stride restarts at each table (found by the reference's
                    // twin, 2026-11-26: before, it ran on from the range's start across tables,
                    // so a stride not dividing the table's entries, or above them, touched
                    // other PTEs, or skipped tables).
                    let table = 1u64 << levels[last - 1].shift;
                    let table_end = (va & !(table - 1)) + table;
                    (va + self.stride_pages * 4096).min(table_end)
                };
                next = (next_va - start).div_ceil(4096).max(self.cursor + 1);
                if leaf.is_some() {
                    self.touches += 1;
                } else {
                    self.skipped_unmapped += 1;
                }
            }
            Mode::None => unreachable!("no helper steps in mode none"),
        }
        if nopped && self.nops > 0 && self.machine_mlp && self.mode != Mode::Prefetch {
            // The NOP loop fills the reorder buffer behind a load that has not returned
            // (Zen 3's 256 entries, AnandTech's Zen 3 deep dive; the seed's unoptimised loop,
            // §4.2, runs several instructions an iteration, so 100 NOPs are more than it
            // holds): the model's window counts loads only, so a throttled helper waits for
            // its misses before its NOPs, in order as before. A prefetch retires without its
            // line and holds no entry: its misses stay in flight (in their slots).
            waited += sys.drain_misses(cpu);
        }
        sys.charge_busy(cpu, busy);
        self.busy_cycles += busy + waited;
        self.cursor = next;
        Ok(())
    }

    /// A stressor's next step: one line of its buffer (cache: a read-modify-write of a random
    /// line; stream: the triad a = b + s*c over one line of each array).
    pub(super) fn stressor_step(&mut self, sys: &mut System, k: usize) -> Result<(), SimError> {
        let pressure = self.pressure;
        let (mlp, l1) = (self.stressor_mlp, self.l1_latency);
        let machine_mlp = self.machine_mlp;
        let s = &mut self.stressors[k];
        let lines = s.bytes / 64;
        let mut n = 0u64;
        let (cpu, thread) = (s.cpu, s.thread);
        let mut go = |sys: &mut System, kind: AccessKind, va: u64| -> Result<(), SimError> {
            let c = sys.access(Access::new(thread, kind, VirtAddr(va), 8))?;
            sys.uncount_companion_reference();
            // The stressor's accesses are independent: `mlp` of them in flight at once (on a
            // machine with `timing.mlp`, as many as its slots allow, charged there).
            if !machine_mlp {
                sys.overlap_last(cpu, c - c / mlp);
            }
            n += 1;
            Ok(())
        };
        let extra = match pressure {
            Pressure::Cache => {
                let line = s.rng.next_u64() % lines;
                let va = s.base + line * 64;
                go(sys, AccessKind::Load, va)?;
                go(sys, AccessKind::Store, va)?;
                LOOP_CYCLES
            }
            _ => {
                let line = s.pos % lines;
                s.pos += 1;
                let (a, b, c) = (s.base, s.base + s.bytes, s.base + 2 * s.bytes);
                go(sys, AccessKind::Load, b + line * 64)?;
                go(sys, AccessKind::Load, c + line * 64)?;
                go(sys, AccessKind::Store, a + line * 64)?;
                // The line's other 7 elements hit the L1 the line was just brought into; an
                // L1 hit changes no shared level, so they are charged, not simulated: a triad
                // element per cycle (Zen 3 issues 3 loads and 2 stores a cycle, AnandTech's
                // Zen 3 deep dive), at least the L1's latency for the line.
                7u64.max(l1)
            }
        };
        self.stressor_accesses += n;
        sys.charge_busy(cpu, extra);
        Ok(())
    }
}
