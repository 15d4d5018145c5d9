//! Where fass puts a process's mappings (seed 002 §2.2, §2.3, §3.1): PID relocation into
//! the process's 32 MiB slot, data and stack packed into the slot's upper half, the rest in
//! 1 MiB blocks of the shared area, shared regions at one place for all their mappers.

use super::*;

impl Fass {
    /// The process's relocation slot (1..63; slot 0 is the unrelocated window), taken on its
    /// first mapping: the next free one after the last taken, round-robin, so that a slot
    /// freed lazily (§4.2: its lines may still be cached) is taken again as late as possible,
    /// as slots that follow the process ids do (the FCSE PID, §2.2). With more than 63 live
    /// processes two share a slot and collide.
    pub(super) fn slot_of(&mut self, p: u32) -> usize {
        if let Some(s) = self.proc(p).slot {
            return s;
        }
        let last = self.last_slot;
        let free = (1..SLOTS)
            .map(|k| 1 + (last + k - 1) % (SLOTS - 1))
            .find(|&s| self.slot_user[s] == 0);
        let s = match free {
            Some(s) => s,
            None => {
                self.slots_doubled += 1;
                1 + p as usize % (SLOTS - 1)
            }
        };
        self.slot_user[s] += 1;
        self.last_slot = s;
        let pr = self.proc(p);
        pr.slot = Some(s);
        pr.slot_next = SLOT / 2;
        s
    }

    /// `len` bytes of 1 MiB blocks of the shared area (seed 002 §2.3 item 3); None when full.
    pub(super) fn area_blocks(&mut self, len: u64) -> Option<u64> {
        let len = len.div_ceil(MIB) * MIB;
        if self.area_next + len > self.kernel_base {
            return None;
        }
        let at = self.area_next;
        self.area_next += len;
        Some(at)
    }

    /// Where the mapping `start..start+len` of process `p` goes (seed 002 §3.1).
    pub(super) fn place(
        &mut self,
        p: u32,
        start: u64,
        len: u64,
        object: Option<u32>,
        writable: bool,
    ) -> Placed {
        let end = start + len;
        let keep = |owner| Placed {
            start,
            end,
            to: start,
            owner,
        };
        if start >= self.kernel_base {
            return keep(Owner::Kernel);
        }
        if !self.relocate {
            return match object {
                // A shared region at its traced address: a domain of its own all the same
                // (§3.2), shared with the mappers that map it at the same address. Before
                // 2026-11-26 the object was not registered, so its first touch panicked
                // (no domain to allocate into; its twin found it).
                Some(o) if self.sharing && end > SLOT => {
                    self.objects.entry(o).or_insert(SharedObj {
                        base: start,
                        len,
                        domain: None,
                    });
                    self.proc(p).maps_shared(o, writable);
                    keep(Owner::Shared(o))
                }
                _ => keep(Owner::Space(p)),
            };
        }
        if end <= SLOT {
            // PID relocation (§2.2): the address in the process's slot.
            let slot = self.slot_of(p) as u64;
            return Placed {
                to: start + slot * SLOT,
                ..keep(Owner::Space(p))
            };
        }
        if let Some(o) = object.filter(|_| self.sharing) {
            // A shared region: one place for all its mappers, 1 MiB aligned (§2.3, §3.2).
            let obj = match self.objects.get(&o) {
                Some(obj) => *obj,
                None => {
                    let base = self.area_blocks(len).unwrap_or(start);
                    let obj = SharedObj {
                        base,
                        len,
                        domain: None,
                    };
                    self.objects.insert(o, obj);
                    obj
                }
            };
            let obj_w = self.objects.get_mut(&o).expect("inserted");
            if len > obj.len {
                obj_w.len = len;
            }
            self.proc(p).maps_shared(o, writable);
            return Placed {
                to: obj.base,
                ..keep(Owner::Shared(o))
            };
        }
        // Private data, bss, stack: into the slot's upper half while they fit (§3.1) ...
        let slot = self.slot_of(p) as u64;
        let pages = len.div_ceil(4096) * 4096;
        let pr = self.proc(p);
        if pr.slot_next + pages <= SLOT {
            let to = slot * SLOT + pr.slot_next + (start & 0xfff);
            pr.slot_next += pages;
            return Placed {
                to: to & !0xfff,
                ..keep(Owner::Space(p))
            };
        }
        // ... else grouped by process into 1 MiB blocks of the shared area (§3.1).
        if pr.block_next + pages > pr.block_end {
            match self.area_blocks(pages) {
                Some(at) => {
                    let pr = self.proc(p);
                    pr.block_next = at;
                    pr.block_end = at + pages.div_ceil(MIB) * MIB;
                }
                None => return keep(Owner::Space(p)),
            }
        }
        let pr = self.proc(p);
        let to = pr.block_next;
        pr.block_next += pages;
        Placed {
            to,
            ..keep(Owner::Space(p))
        }
    }

    /// The placed address of `va` in process `p` (addresses outside every mapping: relocated
    /// when below 32 MiB, as the hardware does, else as traced).
    pub(super) fn moved(&mut self, p: u32, va: u64) -> u64 {
        if let Some(pr) = self.procs.get(p as usize) {
            for m in pr.placed.iter().rev() {
                if va >= m.start && va < m.end {
                    return va - m.start + m.to;
                }
            }
        }
        if self.relocate && va < SLOT {
            return va + self.slot_of(p) as u64 * SLOT;
        }
        va
    }

    /// What owns `va` (a placed address) in process `space`.
    pub(super) fn owner_of(&self, space: usize, va: u64) -> Owner {
        if va >= self.kernel_base {
            return Owner::Kernel;
        }
        if let Some(pr) = self.procs.get(space) {
            for m in pr.placed.iter().rev() {
                let len = m.end - m.start;
                if va >= m.to && va < m.to + len {
                    return m.owner;
                }
            }
        }
        Owner::Space(space as u32)
    }
}
