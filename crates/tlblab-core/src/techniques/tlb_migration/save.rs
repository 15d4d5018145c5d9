//! The two halves of seed 000's technique: saving a migrating thread's TLB entries on the
//! source core (§5.2: read, filtered, stored) and restoring them on the destination (§7: the
//! pld preloads or the hardware interface's writes).

use super::*;

impl TlbMigration {
    /// Step 1-3 of §3.1 on hardware thread `from`: read, filter, store.
    pub(super) fn save(
        &mut self,
        sys: &mut System,
        thread: ThreadId,
        from: usize,
    ) -> Result<u64, SimError> {
        let core = sys.core_of_cpu(from);
        let Some(t) = Self::level(sys, core) else {
            return Ok(0);
        };
        let (space, generation) = sys.space_and_generation(thread)?;
        let asid = sys.spaces[space].asid;
        let k = self.costs;
        let now = sys.references_so_far();
        let tlb = &sys.tlbs[t];
        let capacity = tlb.capacity() as u64;
        let mut kept: Vec<(usize, TlbEntry)> = Vec::new();
        let mut cycles = k.fixed;
        let mut valid = 0u64;
        // The order the interface reads the level in, which is the order the restore writes
        // back: the A7's main TLB by index and way (§3.3, Table 3.2), gem5's table by index
        // (§5.2), which gem5 keeps most recent first. Each written entry becomes the most
        // recent, so a gem5 restore reverses the order: the entry used longest ago before the
        // migration is the newest after it, and later fills evict the ones used last.
        let read_order: Vec<(usize, TlbEntry)> = if self.interface.gem5() {
            tlb.entries_newest_first()
        } else {
            tlb.entries_with_slots().collect()
        };
        for (slot, e) in read_order {
            valid += 1;
            // The filter tests the ASID field (§3.2: Valid, VA and ASID are the fields that
            // matter; §5.2: v3/v4 stream "all valid TLB entries matching this ASID"). A global
            // kernel entry filled while the thread's ASID was current carries it too (gem5's
            // table walker tags every entry with the current ASID), and gem5's layouts keep the
            // global bit (Tables A.8-A.10; v3/v4 drop asid and valid but not it), so the gem5
            // interfaces save and restore the kernel's entries of the migration path with the
            // thread's. The pld restore (A7) preloads user addresses only: it leaves them out.
            let mine = e.asid == asid && (self.interface.gem5() || !e.global);
            if matches!(self.filter, Filter::Asid | Filter::Used) && !mine {
                self.c.filtered_other_asid += 1;
                continue;
            }
            let (uses, last) = tlb.uses_of(slot);
            if self.filter == Filter::Used && uses == 0 {
                self.c.filtered_unused += 1;
                continue;
            }
            let carried = match self.predict {
                Predict::None => true,
                Predict::Uses(min) => uses >= min,
                Predict::Age(max) => uses > 0 && now.saturating_sub(last) <= max,
            };
            if !carried {
                self.c.filtered_predictor += 1;
                continue;
            }
            kept.push((slot, e));
        }
        if self.filter != Filter::None {
            self.c.filtered_invalid += capacity - valid;
        }
        if self.interface.streams() {
            // §5.2: writing the ASID starts the stream; each entry is read from the data
            // registers (v4: packed, 7 bytes of 8 per entry); zeroed registers end it.
            let stored = (kept.len() as u64).min(self.limit);
            let reads = if self.interface == Interface::V4 {
                (stored * 7).div_ceil(4)
            } else {
                stored * 2
            };
            cycles += k.op_write + (reads + 2) * k.data_reg + stored * k.stream_loop;
            self.c.entries_read += kept.len() as u64;
        } else {
            // Every slot is read (§3.1 step 1), then filtered in software.
            let per_entry = bench::read_cycles_per_entry(k, self.interface);
            cycles += capacity * (per_entry + self.filter.checks() * k.filter_check);
            self.c.entries_read += capacity;
        }
        let mut entries: Vec<TlbEntry> = kept.iter().map(|&(_, e)| e).collect();
        if self.filter == Filter::None {
            // Invalid slots are stored too: as entries that restore nothing.
            let invalid = capacity - valid;
            entries.reserve(invalid as usize);
            for _ in 0..invalid {
                entries.push(TlbEntry::new(
                    tlblab_types::Vpn(u64::MAX >> 12),
                    tlblab_types::PageSize::Size4K,
                    tlblab_types::Pfn(0),
                    Asid(u16::MAX),
                ));
            }
        }
        if entries.len() as u64 > self.limit {
            self.c.dropped_limit += entries.len() as u64 - self.limit;
            entries.truncate(self.limit as usize);
        }
        // The saved entries count as read: a used bit starts over (§3.1, "accessed since the
        // last migration").
        if sys.tlbs[t].tracks_use() {
            for &(slot, _) in &kept {
                sys.tlbs[t].clear_uses(slot);
            }
        }
        cycles += self.move_words(sys, from, thread, entries.len() as u64, true)?;
        self.c.saves += 1;
        self.c.entries_saved += entries.len() as u64;
        self.c.save_cycles += cycles;
        self.pending.insert(
            thread,
            Saved {
                from,
                generation,
                entries,
            },
        );
        Ok(cycles)
    }

    /// Step 4 of §3.1 on hardware thread `cpu`.
    pub(super) fn restore(
        &mut self,
        sys: &mut System,
        cpu: usize,
        thread: ThreadId,
        saved: Saved,
    ) -> Result<u64, SimError> {
        let (space, generation) = sys.space_and_generation(thread)?;
        if generation != saved.generation {
            // §3.3: the space's ASID was reassigned by a rollover; the saved entries name an
            // ASID that may now be another process's.
            self.c.rollover_discards += 1;
            return Ok(0);
        }
        let k = self.costs;
        let core = sys.core_of_cpu(cpu);
        let n = saved.entries.len() as u64;
        let mut cycles = k.fixed;
        let asid = sys.spaces[space].asid;
        match self.interface {
            Interface::PldDirect | Interface::PldIndirect => {
                let mut pld = Pld::new(k);
                let base = self.area(thread);
                for (i, e) in saved.entries.iter().enumerate() {
                    // The saved address, loaded (a load between preloads: §4.3).
                    let addr = base + i as u64 * 4;
                    pld.t +=
                        k.word + Self::area_word(sys, cpu, thread, addr, false)? + k.stream_loop;
                    pld.burst = 0;
                    if e.vpn.0 == u64::MAX >> 12 {
                        continue; // an invalid slot saved under filter=none
                    }
                    let va = VirtAddr(e.vpn.0 << e.size.shift());
                    if self.interface == Interface::PldDirect {
                        let mine = !e.global && e.asid == asid;
                        self.pld(sys, &mut pld, cpu, thread, va, true)?;
                        if mine {
                            self.c.entries_restored += 1;
                        }
                    } else {
                        let desc = sys.descriptor_addresses(thread, va)?;
                        if desc.len() < 2 {
                            continue;
                        }
                        // Load the first-level descriptor, then preload the second-level one
                        // (a kernel address, translated by the kernel's own mapping).
                        pld.t += k.indirect_addr + k.word + sys.kernel_access(cpu, desc[0], false);
                        pld.burst = 0;
                        self.pld(
                            sys,
                            &mut pld,
                            cpu,
                            thread,
                            VirtAddr(desc[desc.len() - 1]),
                            false,
                        )?;
                        self.c.entries_restored += 1;
                    }
                }
                cycles += pld.t;
            }
            Interface::V1 | Interface::V2 | Interface::V3 | Interface::V4 => {
                cycles += self.move_words(sys, cpu, thread, n, false)?;
                let writes = match self.interface {
                    // Three data registers and the commit to the operation register (§5.2).
                    Interface::V1 => n * (3 * k.data_reg + k.op_write),
                    // The second data register's write commits (§5.2).
                    Interface::V2 | Interface::V3 => n * 2 * k.data_reg,
                    // The packed stream, ended by two zeroed data registers (§5.2, §6.2).
                    _ => ((n * 7).div_ceil(4) + 2) * k.data_reg,
                };
                cycles += writes + n * k.stream_loop;
                if self.asid_update && matches!(self.interface, Interface::V1 | Interface::V2) {
                    // §5.2: v1 and v2 write each entry's ASID field as saved, so the software
                    // updates it to the space's current ASID before every write (a rollover may
                    // have reassigned it); v3 and v4 do it "implicitly during the
                    // initialization of the stream".
                    cycles += n * k.asid_insert;
                }
                if let Some(t) = Self::level(sys, core) {
                    let hw = sys.hw_thread_of(cpu);
                    for e in &saved.entries {
                        if e.vpn.0 == u64::MAX >> 12 {
                            continue;
                        }
                        let mut e = *e;
                        e.hw_thread = hw;
                        // No layout of the interface carries a lock (Tables A.8-A.10): an entry
                        // locked on the source core arrives as an ordinary one.
                        e.locked = false;
                        sys.tlbs[t].insert(e);
                        if sys.tlbs[t].tracks_use() {
                            if let Some(slot) = sys.tlbs[t].slot_of(
                                VirtAddr(e.vpn.0 << e.size.shift()),
                                crate::tlb::Requester {
                                    asid: e.asid,
                                    vmid: e.vmid,
                                    hw_thread: e.hw_thread,
                                },
                            ) {
                                sys.tlbs[t].clear_uses(slot);
                            }
                        }
                        if e.asid == asid && !e.global {
                            self.c.entries_restored += 1;
                        }
                    }
                }
            }
        }
        self.c.restores += 1;
        self.c.restore_cycles += cycles;
        Ok(cycles)
    }

    /// One preload at time `pld.t` (`user`: a page of the thread, walked in the foreground; else
    /// a kernel address whose translation is the kernel's, assumed held).
    pub(super) fn pld(
        &mut self,
        sys: &mut System,
        pld: &mut Pld,
        cpu: usize,
        thread: ThreadId,
        va: VirtAddr,
        user: bool,
    ) -> Result<(), SimError> {
        let k = self.costs;
        pld.t += k.pld_loop;
        let pa = if user {
            let (walk, pa) = sys.preload_translate(cpu, thread, va)?;
            pld.t += walk;
            // Preloaded entries start with no use (seed 000 §5.2's used bit).
            let core = sys.core_of_cpu(cpu);
            for t in sys.data_tlbs_of(core) {
                if sys.tlbs[t].tracks_use() {
                    let (space, _) = sys.space_and_generation(thread)?;
                    let req = crate::tlb::Requester {
                        asid: sys.spaces[space].asid,
                        vmid: sys.spaces[space].vmid,
                        hw_thread: sys.hw_thread_of(cpu),
                    };
                    if let Some(slot) = sys.tlbs[t].slot_of(va, req) {
                        sys.tlbs[t].clear_uses(slot);
                    }
                }
            }
            pa
        } else {
            Some(va.0)
        };
        let Some(pa) = pa else {
            return Ok(());
        };
        if pld.burst >= k.pld_burst_fills {
            self.c.pld_fills_dropped += 1;
            return Ok(());
        }
        // The fill waits for a free slot (Fig. 4.5), then holds it for the line's latency.
        let slot = (0..k.pld_slots)
            .min_by_key(|&i| pld.free[i])
            .expect("at least one slot");
        if pld.free[slot] > pld.t {
            pld.t = pld.free[slot];
        }
        let line = pa & !63;
        let lat = sys.kernel_access(cpu, line, false);
        let extra = if lat >= sys.memory_latency() {
            k.pld_fill_extra
        } else {
            0
        };
        pld.free[slot] = pld.t + lat + extra;
        pld.burst += 1;
        self.c.pld_fills += 1;
        Ok(())
    }
}
