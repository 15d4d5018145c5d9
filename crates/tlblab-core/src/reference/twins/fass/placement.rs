//! Where the fass twin puts a process's mappings, from seed 002's text: §2.2 (the PID
//! register's 64 partitions of 32 MiB), §2.3 (the shared area above 2 GiB, 1 MiB aligned,
//! full when a mapping does not fit), §3.1 (data, bss and stack in the 32 MiB region; other
//! mappings grouped by process into 1 MiB blocks) and §3.2 (shared regions at one address).

use super::*;

impl FassTwin {
    /// The process's slot, taken on first need. §2.2: the PID register selects one of 64
    /// 32 MiB partitions, partition 0 being the unrelocated addresses, so up to 63 processes
    /// hold one each. The slots are handed out in turn: from the one after the last handed
    /// out, 1 to 63 and back to 1, the first no process holds; with all 63 held (the "more
    /// than 64 processes" case, §2.3 item 2), process p shares slot 1 + p mod 63.
    pub(super) fn slot(&mut self, p: u32) -> u64 {
        if let Some(s) = self.process(p).slot {
            return s;
        }
        let mut turn = self.last_slot;
        let mut free = None;
        for _ in 1..SLOTS {
            turn = if turn == SLOTS - 1 { 1 } else { turn + 1 };
            if self.slot_users[turn as usize] == 0 {
                free = Some(turn);
                break;
            }
        }
        let s = match free {
            Some(s) => s,
            None => {
                self.bump("slots_doubled");
                1 + p as u64 % (SLOTS - 1)
            }
        };
        self.slot_users[s as usize] += 1;
        self.last_slot = s;
        let pr = self.process(p);
        pr.slot = Some(s);
        pr.slot_next = SLOT / 2;
        s
    }

    /// Where `len` bytes of the shared area go: §2.3 item 3, mappings there are aligned to
    /// 1 MiB and the area is full when the next mapping does not fit below the kernel. The
    /// area is handed out from its bottom up, a whole number of megabytes each time (the
    /// blocks taken so far are `area_blocks`), and never given back.
    pub(super) fn blocks(&mut self, len: u64) -> Option<u64> {
        let megabytes = len.div_ceil(MIB);
        let at = SHARED_AREA + self.area_blocks * MIB;
        if at + megabytes * MIB > self.kernel_base {
            return None;
        }
        self.area_blocks += megabytes;
        Some(at)
    }

    /// Where process `p`'s new mapping `start..start+len` goes.
    pub(super) fn place(&mut self, p: u32, start: u64, len: u64) -> Mapping {
        let same = |owner| Mapping {
            start,
            len,
            to: start,
            owner,
        };
        if start >= self.kernel_base {
            return same(Owner::Kernel);
        }
        if !self.relocate {
            return same(Owner::Process(p));
        }
        if start + len <= SLOT {
            let to = start + self.slot(p) * SLOT;
            return Mapping {
                to,
                ..same(Owner::Process(p))
            };
        }
        // Data, bss, stack: in the slot while they fit (§3.1 "allocated in the 32MB
        // region"), packed page by page into its upper half ...
        let slot = self.slot(p);
        let bytes = len.div_ceil(4096) * 4096;
        let pr = self.process(p);
        if pr.slot_next + bytes <= SLOT {
            let to = slot * SLOT + pr.slot_next;
            pr.slot_next += bytes;
            return Mapping {
                to,
                ..same(Owner::Process(p))
            };
        }
        // ... else grouped by process into 1 MiB blocks of the shared area (§3.1).
        let (next, end) = pr.block;
        let next = if next + bytes > end {
            match self.blocks(bytes) {
                Some(at) => {
                    self.process(p).block = (at, at + bytes.div_ceil(MIB) * MIB);
                    at
                }
                None => return same(Owner::Process(p)),
            }
        } else {
            next
        };
        self.process(p).block.0 = next + bytes;
        Mapping {
            to: next,
            ..same(Owner::Process(p))
        }
    }

    /// Where process `p`'s mapping `start..start+len` of shared object `object` goes (§2.3,
    /// §3.2).
    pub(super) fn place_shared(&mut self, p: u32, start: u64, len: u64, object: u32) -> Mapping {
        if start >= self.kernel_base || start + len <= SLOT || !self.sharing {
            // The kernel's; program text (relocated, not shared); or no sharing: as private.
            return self.place(p, start, len);
        }
        let at = match self.regions.get(&object) {
            Some(region) => region.at,
            None => {
                let at = if self.relocate {
                    self.blocks(len).unwrap_or(start)
                } else {
                    start
                };
                self.regions.insert(object, Region { at });
                at
            }
        };
        // Without `relocate` every mapping stays where it was traced (sharing TLB entries
        // with the mappers at the same address only).
        let at = if self.relocate { at } else { start };
        Mapping {
            start,
            len,
            to: at,
            owner: Owner::Shared(object),
        }
    }

    /// Where `va` of process `p` is once placed: the newest mapping holding it moves it; an
    /// address of no mapping below 32 MiB is relocated into the slot (the hardware's PID
    /// relocation), any other stays.
    pub(super) fn moved(&mut self, p: u32, va: u64) -> u64 {
        if let Some(pr) = self.processes.get(p as usize) {
            for m in pr.mappings.iter().rev() {
                if va >= m.start && va < m.start + m.len {
                    return va - m.start + m.to;
                }
            }
        }
        if self.relocate && va < SLOT {
            return va + self.slot(p) * SLOT;
        }
        va
    }
}
