//! Seed 002 §4.1: lmbench `lat_ctx`.
//!
//! "It forks n processes, each of which touches k kilobytes of private data and then uses a pipe
//! to pass a token round-robin to the next process." Processes are forked from one parent, so
//! their data, stack and text sit at the *same* virtual addresses; the data and stack are
//! private (`Mmap` per process) while the text is shared (`MapShared`, object 0), which is what
//! makes address-space tags and TLB entry sharing matter (seed 002 §2-§3, Fig. 2). Per turn: the
//! process loads its token from its stack (after `read`), sums its k KiB (a 4-byte load per word
//! with an instruction fetch of the summing loop per word when `instr`=1), stores the token
//! (before `write`) and the core switches to the next process. With `kernel` on (the default)
//! the kernel's pipe path is traced too, as in `hot_potato` with `ipc=0` (`kernel_path.rs`).

use super::gen::*;
use super::WorkloadInfo;
use crate::record::{prot, Event};
use tlblab_types::{ThreadId, VirtAddr};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "lat_ctx",
    summary: "lmbench lat_ctx: n processes each summing k KiB of private data, passing a token round-robin",
    source: "seed 002 §4.1 (lat_ctx, Fig. 2)",
    params: &[
        ("procs", 8, "n, the number of processes (seed Fig. 2: 2..20)"),
        ("kib", 16, "k, KiB of private data each process sums per turn (seed: 0, 4, 8, 16, ...)"),
        ("rounds", 100, "times the token goes around"),
        ("instr", 1, "1 = also emit instruction fetches of the summing loop"),
        ("kernel", 1, "1 = trace the kernel's pipe path around each switch"),
    ],
    in_default_set: true,
};

// A 32-bit ARM Linux user layout (TASK_SIZE 0xbf00_0000): the seed's own 32-bit machines can run
// it, and the same addresses are valid on 64-bit ones.
pub const TEXT: u64 = 0x0040_0000;
pub const DATA: u64 = 0x1000_0000;
pub const STACK: u64 = 0xbeff_f000;

/// Per-process set-up shared by the seed 002 workloads: thread = process = `p`, shared text
/// (object 0), a private stack page.
pub fn process_start(out: &mut Vec<Record>, p: u32, text_bytes: u64) {
    out.push(ev(Event::ThreadStart {
        thread: ThreadId(p),
        process: p,
    }));
    out.push(ev(Event::MapShared {
        process: p,
        start: VirtAddr(TEXT),
        len: text_bytes,
        prot: prot::READ | prot::EXEC,
        page_shift: 12,
        object: 0,
    }));
    out.push(ev(Event::Mmap {
        process: p,
        start: VirtAddr(STACK),
        len: 4096,
        prot: prot::READ | prot::WRITE,
        page_shift: 12,
    }));
}

pub struct LatCtx {
    procs: u32,
    words: u64,
    rounds: u64,
    instr: bool,
    turn: u64,
    names: Vec<String>,
    paths: Option<(
        super::kernel_path::KernelPath,
        super::kernel_path::KernelPath,
    )>,
}

impl LatCtx {
    pub fn from_params(get: impl Fn(&str) -> u64) -> Result<Self, String> {
        let procs = positive("lat_ctx", "procs", get("procs"))?;
        if procs > 65536 {
            return Err(format!(
                "lat_ctx: procs must be at most 65536 (got {procs})"
            ));
        }
        Ok(LatCtx {
            procs: procs as u32,
            words: get("kib") * 1024 / 4,
            rounds: get("rounds"),
            instr: get("instr") != 0,
            turn: 0,
            names: vec!["text".into(), "data".into(), "stack".into()],
            paths: (get("kernel") != 0).then(|| super::hot_potato::ipc_paths(0, 0)),
        })
    }
}

impl Generator for LatCtx {
    fn regions(&self) -> Vec<String> {
        self.names.clone()
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        let total = self.rounds * self.procs as u64;
        if self.turn == 0 {
            for p in 0..self.procs {
                process_start(out, p, 4096);
                if self.paths.is_some() {
                    super::kernel_path::map_kernel(out, p);
                }
                if self.words > 0 {
                    out.push(ev(Event::Mmap {
                        process: p,
                        start: VirtAddr(DATA),
                        len: (self.words * 4).div_ceil(4096) * 4096,
                        prot: prot::READ | prot::WRITE,
                        page_shift: 12,
                    }));
                }
            }
            out.push(ev(Event::Region {
                region: 0,
                start: VirtAddr(TEXT),
                len: 4096,
            }));
            out.push(ev(Event::Region {
                region: 1,
                start: VirtAddr(DATA),
                len: (self.words * 4).max(1).div_ceil(4096) * 4096,
            }));
            out.push(ev(Event::Region {
                region: 2,
                start: VirtAddr(STACK),
                len: 4096,
            }));
            if total > 0 {
                out.push(switch(0, None, Some(0)));
            }
        }
        if self.turn == total {
            return false;
        }
        let p = (self.turn % self.procs as u64) as u32;
        if let Some((recv_path, _)) = &self.paths {
            if self.turn > 0 && self.procs > 1 {
                super::kernel_path::switch_path().run(out, p);
            }
            recv_path.run(out, p);
        }
        out.push(fetch(p, TEXT + 0x100, 4));
        out.push(load(p, STACK + 0xf00, 4)); // the token read from the pipe
        for w in 0..self.words {
            if self.instr {
                out.push(fetch(p, TEXT + 0x200 + (w % 4) * 4, 4));
            }
            out.push(load(p, DATA + w * 4, 4));
        }
        out.push(store(p, STACK + 0xf00, 4)); // the token written to the next pipe
        out.push(fetch(p, TEXT + 0x140, 4));
        if let Some((_, send_path)) = &self.paths {
            send_path.run(out, p);
        }
        self.turn += 1;
        let next = (self.turn % self.procs as u64) as u32;
        if self.turn < total && next != p {
            out.push(switch(0, Some(p), Some(next)));
        }
        true
    }
}
