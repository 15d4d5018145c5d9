//! Seed 002 §4.1: the L4 IPC ping-pong benchmark.
//!
//! "A server process fires up a number of client processes, each of which IPCs back to the
//! server (for synchronisation) and waits. The server process then IPCs random client
//! processes, which immediately reply." Thread/process 0 is the server, 1..=n the clients (one
//! executable, text shared as object 1; the server's text is object 0). Message registers live in
//! each thread's UTCB page (private, same address in every space): the sender stores its
//! `msg_words`, the receiver loads them. With `kernel` on (the default) the L4 kernel's IPC
//! path is traced around each switch (`kernel_path.rs`): `kernel_instrs` per one-way IPC,
//! calibrated so that the flushing kernel on `sa1100` gives Fig. 5's 135 us round trip (seed
//! 002 §4.2).
//!
//! With `footprint=1` (and `kernel` on) each IPC also saves the sender's context in its kernel
//! TCB and restores the receiver's from its own: Pistachio's 4 KiB TCBs, mapped page by page, so
//! each thread adds a data-TLB entry and lines of its own (`KTCB_AREA`).

use super::gen::*;
use super::kernel_path::{self, KernelPath};
use super::WorkloadInfo;

/// Instructions of the L4 kernel's path per one-way IPC, calibrated to Fig. 5's standard kernel
/// (135 us per round trip on the flushing kernel, seed 002 §4.2; docs/technique-fass.md): ours
/// 136.98 us at one client, 2,000 IPCs (656 instructions give 120.09: a sawtooth, see
/// `hot_potato::IPC_PATHS`).
pub const L4_IPC_INSTRS: u64 = 657;
use crate::record::{prot, Event};
use tlblab_types::{SplitMix64, ThreadId};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "l4_ipc",
    summary: "L4 IPC: a server ping-pongs with randomly chosen clients out of n",
    source: "seed 002 §4.1 (L4 benchmark, Fig. 5)",
    in_default_set: true,
    params: params! {
        clients: 8, "client processes (seed Fig. 5: 1..~30)";
        ipcs: 100000, "round-trip IPCs (the seed averaged 100,000)";
        msg_words: 2, "message registers transferred each way";
        kernel: 1, "1 = trace the L4 kernel's IPC path around each switch";
        kernel_instrs: 0, "instructions of the kernel's path per one-way IPC (0 = the calibrated length)";
        footprint: 0, "1 = each thread's kernel TCB (4 KiB, mapped page by page in the kernel's TCB area: a TLB entry of its own) is touched by its IPCs (with kernel=1)";
    },
};

// A 32-bit ARM Linux user layout (TASK_SIZE 0xbf00_0000): the seed's own 32-bit machines can run
// it, and the same addresses are valid on 64-bit ones.
const TEXT: u64 = 0x0040_0000;
const UTCB: u64 = 0xbefe_0000;
/// L4Ka::Pistachio's kernel TCBs on ARM (`footprint`=1): 4 KiB each (`KTCB_BITS` 12), in a
/// virtual array indexed by thread number and mapped with 4 KiB pages (`KTCB_PGSIZE`
/// size_4k; kernel/include/glue/v4-arm/config.h), so every thread's TCB takes a data-TLB entry
/// of its own, and its lines are its own in the virtually indexed cache. Placed here above the
/// kernel image (in the kernel's domain, like every kernel mapping).
const KTCB_AREA: u64 = kernel_path::KERNEL + (8 << 20);
const KTCB_BYTES: u64 = 4096;
/// Shared-object id of the TCB area.
const KTCB_OBJECT: u32 = kernel_path::KERNEL_OBJECT + 1;
/// The user context the kernel saves on IPC entry at the top of the TCB (its kernel stack) and
/// restores on return: 17 words (r0-r14, pc, cpsr). The TCB's fields the IPC path reads and
/// writes (state, partner, the saved stack pointer) are its first line. Assumptions on the
/// shape of Pistachio's ARM IPC path, not seed figures.
const KTCB_CONTEXT_WORDS: u64 = 17;

pub struct L4Ipc {
    clients: u32,
    ipcs: u64,
    words: u64,
    i: u64,
    rng: SplitMix64,
    started: bool,
    paths: Option<(KernelPath, KernelPath)>,
    footprint: bool,
}

impl L4Ipc {
    pub fn from_params(get: impl Fn(&str) -> u64, seed: u64) -> Result<Self, String> {
        let clients = positive("l4_ipc", "clients", get("clients"))?.min(65535) as u32;
        Ok(L4Ipc {
            clients,
            ipcs: get("ipcs"),
            words: get("msg_words"),
            i: 0,
            rng: SplitMix64::derive(seed, "workload.l4_ipc"),
            started: false,
            paths: (get("kernel") != 0).then(|| {
                let n = match get("kernel_instrs") {
                    0 => L4_IPC_INSTRS,
                    n => n,
                };
                let half = |i: u64, k: u64| KernelPath {
                    text: kernel_path::text_slot(10 + i),
                    instrs: k,
                    loop_lines: 0,
                    data: kernel_path::data_slot(10 + i),
                };
                (half(0, n / 2), half(1, n - n / 2))
            }),
            footprint: get("footprint") != 0 && get("kernel") != 0,
        })
    }

    fn ktcb(t: u32) -> u64 {
        KTCB_AREA + (t as u64 % 65536) * KTCB_BYTES
    }

    fn send(&self, out: &mut Vec<Record>, t: u32) {
        out.push(fetch(t, TEXT + 0x100, 4));
        for w in 0..self.words {
            out.push(store(t, UTCB + 0x100 + w * 8, 8));
        }
        if self.footprint {
            // IPC entry: the sender's context saved at its TCB's top, its state set.
            let tcb = Self::ktcb(t);
            let top = tcb + KTCB_BYTES - KTCB_CONTEXT_WORDS * 4;
            for w in 0..KTCB_CONTEXT_WORDS {
                out.push(store(t, top + w * 4, 4));
            }
            out.push(load(t, tcb, 4));
            out.push(store(t, tcb + 4, 4));
        }
        if let Some((send, _)) = &self.paths {
            send.run(out, t);
        }
    }
    fn receive(&self, out: &mut Vec<Record>, t: u32) {
        if let Some((_, recv)) = &self.paths {
            recv.run(out, t);
        }
        if self.footprint {
            // The receiver's state and partner checked, its context restored.
            let tcb = Self::ktcb(t);
            out.push(load(t, tcb, 4));
            out.push(store(t, tcb + 4, 4));
            let top = tcb + KTCB_BYTES - KTCB_CONTEXT_WORDS * 4;
            for w in 0..KTCB_CONTEXT_WORDS {
                out.push(load(t, top + w * 4, 4));
            }
        }
        out.push(fetch(t, TEXT + 0x140, 4));
        for w in 0..self.words {
            out.push(load(t, UTCB + 0x100 + w * 8, 8));
        }
    }
}

impl Generator for L4Ipc {
    fn regions(&self) -> Vec<String> {
        vec!["text".into(), "utcb".into()]
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if !self.started {
            self.started = true;
            for p in 0..=self.clients {
                out.push(ev(Event::ThreadStart {
                    thread: ThreadId(p),
                    process: p,
                }));
                let object = if p == 0 { 0 } else { 1 };
                out.push(ev(map_shared(
                    p,
                    TEXT,
                    4096,
                    prot::READ | prot::EXEC,
                    object,
                )));
                if self.paths.is_some() {
                    kernel_path::map_kernel(out, p);
                }
                if self.footprint {
                    out.push(ev(map_shared(
                        p,
                        KTCB_AREA,
                        (self.clients as u64 + 1) * KTCB_BYTES,
                        prot::READ | prot::WRITE,
                        KTCB_OBJECT,
                    )));
                }
                out.push(ev(map_private(p, UTCB, 4096, prot::READ | prot::WRITE)));
            }
            regions(out, &[(TEXT, 4096), (UTCB, 4096)]);
            // Start-up: the server starts each client, which IPCs back and waits.
            out.push(switch(0, None, Some(0)));
            for c in 1..=self.clients {
                self.send(out, 0);
                out.push(switch(0, Some(0), Some(c)));
                self.send(out, c);
                out.push(switch(0, Some(c), Some(0)));
                self.receive(out, 0);
            }
            return true;
        }
        if self.i >= self.ipcs {
            return false;
        }
        let end = (self.i + 1024).min(self.ipcs);
        for _ in self.i..end {
            let c = 1 + self.rng.below(self.clients as u64) as u32;
            self.send(out, 0);
            out.push(switch(0, Some(0), Some(c)));
            self.receive(out, c);
            self.send(out, c);
            out.push(switch(0, Some(c), Some(0)));
            self.receive(out, 0);
        }
        self.i = end;
        true
    }
}
