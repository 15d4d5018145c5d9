//! Seed 002 §4.1: lmbench `lat_ctx`.
//!
//! "It forks n processes, each of which touches k kilobytes of private data and then uses a pipe
//! to pass a token round-robin to the next process." Processes are forked from one parent, so
//! their data, stack and text sit at the *same* virtual addresses; the data and stack are
//! private (`Mmap` per process) while the text is shared (`MapShared`, object 0), which is what
//! makes address-space tags and TLB entry sharing matter (seed 002 §2-§3, Fig. 2). Per turn: the
//! process loads its token from its stack (after `read`), sums its k KiB (a 4-byte load per word
//! with an instruction fetch of the summing loop per word when `instr`=1; with `footprint`=1,
//! lmbench 2's own `sumit`, `SUMIT`), stores the token
//! (before `write`) and the core switches to the next process. With `kernel` on (the default)
//! the kernel's pipe path is traced too, as in `hot_potato` with `ipc=0` (`kernel_path.rs`).
//!
//! With `footprint=1`, each process also brings what lmbench's own process brings of its own
//! (lat_ctx.c): a pipe of lmbench's ring (process i reads pipe i and writes pipe i + 1), the
//! executable's data page (the pipe array, the GOT), libc's `read` and `write` stubs (a shared
//! file mapping above 32 MiB), and, with `kernel` on, its kernel task block and its pipes'
//! objects and buffers (`kernel_path::ProcessKernelState`). This is what makes capacity pressure
//! grow with the processes on a kernel that no longer flushes (seed 002 §4.2, Fig. 2).

use super::gen::*;
use super::WorkloadInfo;
use crate::record::{prot, Event};
use tlblab_types::ThreadId;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "lat_ctx",
    summary: "lmbench lat_ctx: n processes each summing k KiB of private data, passing a token round-robin",
    source: "seed 002 §4.1 (lat_ctx, Fig. 2)",
    in_default_set: true,
    params: params! {
        procs: 8, "n, the number of processes (seed Fig. 2: 2..20)";
        kib: 16, "k, KiB of private data each process sums per turn (seed: 0, 4, 8, 16, ...)";
        rounds: 100, "times the token goes around";
        instr: 1, "1 = also emit instruction fetches of the summing loop";
        kernel: 1, "1 = trace the kernel's pipe path around each switch";
        footprint: 0, "1 = lmbench's per-process footprint: a pipe per process, the executable's data page, libc's read and write stubs, and (with kernel=1) each task's and pipe's own kernel state";
    },
};

// A 32-bit ARM Linux user layout (TASK_SIZE 0xbf00_0000): the seed's own 32-bit machines can run
// it, and the same addresses are valid on 64-bit ones.
pub const TEXT: u64 = 0x0040_0000;
pub const DATA: u64 = 0x1000_0000;
pub const STACK: u64 = 0xbeff_f000;
/// The executable's data and bss page (`footprint`=1): lat_ctx's global pipe array `p` and the
/// GOT entries of `read` and `write`, which `doit` reads every turn.
pub const EXE_DATA: u64 = TEXT + 0x1_0000;
/// libc's text (`footprint`=1), mapped by the dynamic loader above 32 MiB at ARM Linux 2.4's
/// `TASK_UNMAPPED_BASE` (`TASK_SIZE / 3`, include/asm-arm/processor.h; rounded here to
/// 0x4000_0000) and shared by every forked process (a file mapping, object 1).
pub const LIBC: u64 = 0x4000_0000;
/// libc's text bytes mapped (glibc 2.2's libc.so text is about a megabyte).
pub const LIBC_BYTES: u64 = 1 << 20;
/// The `read` and `write` system-call stubs: two small functions from different object files
/// of libc (sysdeps/unix/syscalls.list), on two pages here (an assumption: libc's layout on the
/// seed's machine is not known).
pub const LIBC_READ: u64 = LIBC + 0x9_4000;
pub const LIBC_WRITE: u64 = LIBC + 0x9_6000;
/// Shared-object id of libc's text.
pub const LIBC_OBJECT: u32 = 1;
/// `footprint`=1: lmbench's `sumit` (lat_ctx.c, lmbench 2): `#define A sum+=d[0]+...+d[127];
/// d+=128;` and `#define TWOKB A A A A`, looped `for (done = 0; done < howmuch; done += 2048)`:
/// a straight-line body of 512 word loads per 2 KiB. Each load with its add is two ARM
/// instructions, 8 bytes of text a word (an assumption: no load-multiple combining), so the
/// body is 4 KiB of text, on the executable's second page.
pub const SUMIT: u64 = TEXT + 0x1000;
pub const SUMIT_BODY_WORDS: u64 = 512;
pub const SUMIT_BYTES_PER_WORD: u64 = 8;
/// The executable's text with `footprint`=1: its first page (main, doit, the PLT) and sumit's.
const TEXT_BYTES_FOOTPRINT: u64 = 8192;

/// Processes 0 and 1 started (`process_start`), each with the kernel's mappings when `kernel`
/// (`kernel_path::map_kernel`) and `data_len` bytes of read-write data at `DATA`: the two ends
/// of lmbench's IPC benchmarks.
pub fn start_two_processes_with_data(out: &mut Vec<Record>, kernel: bool, data_len: u64) {
    for p in 0..2 {
        process_start(out, p, 4096);
        if kernel {
            super::kernel_path::map_kernel(out, p);
        }
        out.push(ev(map_private(p, DATA, data_len, prot::READ | prot::WRITE)));
    }
}

/// Per-process set-up shared by the seed 002 workloads: thread = process = `p`, shared text
/// (object 0), a private stack page.
pub fn process_start(out: &mut Vec<Record>, p: u32, text_bytes: u64) {
    out.push(ev(Event::ThreadStart {
        thread: ThreadId(p),
        process: p,
    }));
    out.push(ev(map_shared(
        p,
        TEXT,
        text_bytes,
        prot::READ | prot::EXEC,
        0,
    )));
    out.push(ev(map_private(p, STACK, 4096, prot::READ | prot::WRITE)));
}

pub struct LatCtx {
    procs: u32,
    words: u64,
    rounds: u64,
    instr: bool,
    footprint: bool,
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
            footprint: get("footprint") != 0,
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
            let text_bytes = if self.footprint {
                TEXT_BYTES_FOOTPRINT
            } else {
                4096
            };
            for p in 0..self.procs {
                process_start(out, p, text_bytes);
                if self.paths.is_some() {
                    super::kernel_path::map_kernel(out, p);
                }
                if self.footprint {
                    out.push(ev(map_private(p, EXE_DATA, 4096, prot::READ | prot::WRITE)));
                    out.push(ev(map_shared(
                        p,
                        LIBC,
                        LIBC_BYTES,
                        prot::READ | prot::EXEC,
                        LIBC_OBJECT,
                    )));
                }
                if self.words > 0 {
                    out.push(ev(map_private(
                        p,
                        DATA,
                        (self.words * 4).div_ceil(4096) * 4096,
                        prot::READ | prot::WRITE,
                    )));
                }
            }
            regions(
                out,
                &[
                    (TEXT, 4096),
                    (DATA, (self.words * 4).max(1).div_ceil(4096) * 4096),
                    (STACK, 4096),
                ],
            );
            if total > 0 {
                out.push(switch(0, None, Some(0)));
            }
        }
        if self.turn == total {
            return false;
        }
        let p = (self.turn % self.procs as u64) as u32;
        // lmbench's ring (create_daemons): process p reads pipe p and writes pipe p + 1.
        let (pipe_in, pipe_out) = (p as u64, (p as u64 + 1) % self.procs as u64);
        let state = super::kernel_path::ProcessKernelState::of(p);
        let footprint = self.footprint && self.paths.is_some();
        if let Some((recv_path, _)) = &self.paths {
            if self.turn > 0 && self.procs > 1 {
                super::kernel_path::switch_path().run(out, p);
            }
            recv_path.run(out, p);
            if footprint {
                // The rest of the blocked read: the token copied out of pipe p, back to user.
                state.pipe_call(out, p, pipe_in, false);
                state.exit(out, p);
            }
        }
        if self.footprint {
            out.push(fetch(p, LIBC_READ, 4)); // read()'s return, in libc
            out.push(fetch(p, LIBC_READ + 0x20, 4));
        }
        out.push(fetch(p, TEXT + 0x100, 4));
        out.push(load(p, STACK + 0xf00, 4)); // the token read from the pipe
        if self.footprint {
            // lmbench's sumit (lat_ctx.c): an unrolled body of 512 word loads, run once per
            // 2 KiB (`for (done = 0; done < howmuch; done += 2048) TWOKB`), so the data read is
            // k rounded up to 2 KiB and the loop's text is the whole body.
            let words = self.words.div_ceil(SUMIT_BODY_WORDS) * SUMIT_BODY_WORDS;
            for w in 0..words {
                if self.instr {
                    let at = SUMIT + (w % SUMIT_BODY_WORDS) * SUMIT_BYTES_PER_WORD;
                    out.push(fetch(p, at, 4)); // ldr
                    out.push(fetch(p, at + 4, 4)); // add
                }
                out.push(load(p, DATA + w * 4, 4));
            }
        } else {
            for w in 0..self.words {
                if self.instr {
                    out.push(fetch(p, TEXT + 0x200 + (w % 4) * 4, 4));
                }
                out.push(load(p, DATA + w * 4, 4));
            }
        }
        out.push(store(p, STACK + 0xf00, 4)); // the token written to the next pipe
        out.push(fetch(p, TEXT + 0x140, 4));
        if self.footprint {
            // doit's loop reads its pipe array and calls write through the PLT and the GOT;
            // the call pushes a frame on the user stack.
            out.push(load(p, EXE_DATA + 0x100, 4)); // p[wr][1]
            out.push(fetch(p, TEXT + 0x800, 4)); // write@plt
            out.push(load(p, EXE_DATA + 0x10, 4)); // its GOT entry
            out.push(store(p, STACK + 0xee0, 4));
            out.push(fetch(p, LIBC_WRITE, 4));
            out.push(fetch(p, LIBC_WRITE + 0x20, 4));
        }
        if footprint {
            // write(): entry, the token copied into pipe p + 1, exit.
            state.enter(out, p);
            state.pipe_call(out, p, pipe_out, true);
            state.exit(out, p);
        }
        if self.footprint {
            // Then read() on pipe p, the same way; it blocks in the kernel.
            out.push(load(p, EXE_DATA + 0x100 + 8, 4)); // p[rd][0]
            out.push(fetch(p, TEXT + 0x80c, 4)); // read@plt
            out.push(load(p, EXE_DATA + 0x14, 4));
            out.push(fetch(p, LIBC_READ, 4));
        }
        if let Some((_, send_path)) = &self.paths {
            if footprint {
                state.enter(out, p);
            }
            // The kernel's pipe path (the write's and the blocking read's common code).
            send_path.run(out, p);
        }
        pass_token(out, &mut self.turn, total, self.procs, p);
        true
    }
}
