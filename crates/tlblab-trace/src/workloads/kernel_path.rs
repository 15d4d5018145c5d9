//! The kernel's own work in the seed 002 benchmarks, traced as the process's accesses to the
//! kernel image (seed 002 §4.1-4.2, Table 1).
//!
//! A context switch on the SA-1100 costs little by itself; what the flushing kernel pays is the
//! kernel's and the process's working set refetched after every flush (≈ 70 cycles a cache
//! line, ≈ 45 a TLB entry, seed 002 §2). So the kernel's path around each switch (the system
//! calls, the pipe, socket or lock code, the scheduler) is traced: `instrs` instruction fetches
//! (about one cycle each on the single-issue StrongARM when they hit), straight-line through
//! `instrs / 8` cache lines of 32 bytes, or round a loop of `loop_lines` lines; one data access
//! every `DATA_EVERY` instructions over its own lines of kernel data, in pairs: a load, then a
//! store to the same line.
//! The kernel image is one shared object mapped with 1 MiB sections at `KERNEL` (ARM Linux
//! maps its low memory with sections, global: the nG bit clear) in every process: the flushing kernel loses its
//! entries and lines at every switch, the FASS kernel keeps them in its own domain.
//!
//! A path's length (`instrs`) is the one constant each benchmark calibrates (seed 002 Table 1's
//! original column, see `docs/technique-fass.md`); the rest is the shape above.

use super::gen::*;
use crate::record::{prot, Event};
use tlblab_types::VirtAddr;

/// ARM Linux's PAGE_OFFSET: the kernel image and its data, above every user mapping.
pub const KERNEL: u64 = 0xc000_0000;
/// The kernel image's bytes (5 sections: text and the paths' data in the first four, the
/// per-process and per-pipe state of `ProcessKernelState` in the fifth).
pub const KERNEL_BYTES: u64 = 5 << 20;
/// Shared-object id of the kernel image.
pub const KERNEL_OBJECT: u32 = 0x7fff_0000;
/// Kernel data lives in the upper half of the image.
const DATA_BASE: u64 = KERNEL + (2 << 20);
/// One data access per this many instructions (loads and stores are about a quarter of
/// integer code; an assumption, not a seed figure).
pub const DATA_EVERY: u64 = 4;
/// New data lines: one per this many instructions of straight-line code (an assumption).
pub const INSTRS_PER_DATA_LINE: u64 = 16;

/// Maps the kernel image into `process`'s address space (each seed 002 workload, once per
/// process, when its `kernel` parameter is on).
pub fn map_kernel(out: &mut Vec<Record>, process: u32) {
    out.push(ev(Event::MapShared {
        process,
        start: VirtAddr(KERNEL),
        len: KERNEL_BYTES,
        // Global: ARM Linux sets the nG bit only on user pages (Linux 4.14
        // arch/arm/include/asm/pgtable.h, set_pte_at: `addr < TASK_SIZE` gets PTE_EXT_NG);
        // the kernel's sections (create_mapping in arch/arm/mm/mmu.c) have none, so they
        // translate for every ASID and survive a rollover.
        prot: prot::READ | prot::WRITE | prot::EXEC | prot::GLOBAL,
        page_shift: 20,
        object: KERNEL_OBJECT,
    }));
}

/// One kernel path: `instrs` instructions of text at offset `text` of the image, straight-line
/// (`loop_lines` 0) or round a loop of `loop_lines` lines, with its data at offset `data` of
/// the kernel's data.
#[derive(Clone, Copy, Debug)]
pub struct KernelPath {
    pub text: u64,
    pub instrs: u64,
    pub loop_lines: u64,
    pub data: u64,
}

impl KernelPath {
    /// Lines of text the path touches.
    pub fn text_lines(&self) -> u64 {
        if self.loop_lines > 0 {
            self.loop_lines.min(self.instrs.div_ceil(8))
        } else {
            self.instrs.div_ceil(8)
        }
    }

    /// Lines of data the path touches.
    pub fn data_lines(&self) -> u64 {
        (self.text_lines() * 8 / INSTRS_PER_DATA_LINE).max(1)
    }

    /// Appends the path as thread `t` runs it.
    pub fn run(&self, out: &mut Vec<Record>, t: u32) {
        self.run_range(out, t, 0, self.instrs);
    }

    /// Appends instructions `from..to` of the path (a long path is written in pieces).
    pub fn run_range(&self, out: &mut Vec<Record>, t: u32, from: u64, to: u64) {
        let text = KERNEL + self.text;
        let wrap = self.text_lines() * 8;
        let dlines = self.data_lines();
        let data = DATA_BASE + self.data;
        for i in from..to.min(self.instrs) {
            out.push(fetch(t, text + (i % wrap) * 4, 4));
            if i % DATA_EVERY == DATA_EVERY - 1 {
                // Data accesses go in pairs, a load then a store to the same line (another
                // word of it): the kernel writes fields of the structures it has read. On a
                // read-allocate D-cache (the SA-1100's, `[timing.write_buffer]`) a store hits
                // only a line a load brought in; pairing them keeps that independent of how
                // many lines the path has (alternating loads and stores over an even number
                // of lines left half the lines stored and never read, an artifact).
                let k = i / DATA_EVERY;
                let pair = k / 2;
                let line = pair % dlines;
                let word = pair / dlines % 8;
                out.push(if k % 2 == 1 {
                    store(t, data + line * 32 + ((word + 4) % 8) * 4, 4)
                } else {
                    load(t, data + line * 32 + word * 4, 4)
                });
            }
        }
    }
}

/// Text offsets of the paths, 256 KiB apart, so no two share lines.
pub const fn text_slot(i: u64) -> u64 {
    i * (256 << 10)
}

/// Data offsets of the paths, 64 KiB apart.
pub const fn data_slot(i: u64) -> u64 {
    i * (64 << 10)
}

/// Instructions of the scheduler's switch path (`schedule`, `switch_to`), run by the process
/// switched in, only when a switch happens: "a few dozen (or at worst a few hundred)
/// instructions" (seed 002 §1). lmbench's `lat_ctx` subtracts the cost of its pipe calls
/// measured without switches, which this path is not part of.
pub const SWITCH_INSTRS: u64 = 300;

/// The scheduler's switch path.
pub const fn switch_path() -> KernelPath {
    KernelPath {
        text: text_slot(14),
        instrs: SWITCH_INSTRS,
        loop_lines: 0,
        data: data_slot(14),
    }
}

/// Where each process's and each pipe's own kernel state lives: the fifth section of the image
/// (low memory, section-mapped like the rest, so one TLB entry covers it for every process,
/// while its cache lines are each process's own in the virtually indexed caches).
const PER_PROCESS: u64 = KERNEL + (4 << 20);
/// ARM Linux 2.4 allocates a task's `task_struct` and its kernel stack together, one 8 KiB
/// block per task (`union task_union`, two pages: include/asm-arm/processor.h,
/// `alloc_task_struct()`); the stack grows down from the block's top.
pub const TASK_UNION_BYTES: u64 = 8192;
/// Task blocks in the section before their addresses wrap (512 KiB of it).
const TASK_SLOTS: u64 = 64;
/// The user registers saved at the top of the kernel stack on every system-call entry and
/// restored on exit: ARM's `struct pt_regs`, 18 words (r0-r15, cpsr, ORIG_r0;
/// include/asm-arm/proc-armv/ptrace.h).
pub const PT_REGS_WORDS: u64 = 18;
/// The kernel stack below `pt_regs` that a pipe `read` or `write` uses (`sys_read`,
/// `pipe_read`, `pipe_wait`, `schedule`: their frames and locals). An assumption (no seed
/// figure): 256 bytes, 8 lines.
pub const SYSCALL_STACK_BYTES: u64 = 256;
/// Lines of `task_struct` a pipe system call reads (`current->files`, state, signal and
/// scheduling fields, `need_resched`). An assumption: 4 lines of its ~1.5 KiB.
pub const TASK_LINES: u64 = 4;
/// A pipe's buffer: one page per pipe in Linux 2.4 (`PIPE_SIZE` = `PAGE_SIZE`, fs/pipe.c,
/// include/linux/pipe_fs_i.h), allocated when the pipe is made; `pipe_read` resets the start
/// to 0 when the pipe empties, so a one-word token uses the page's first line every time.
pub const PIPE_BUFFER_BYTES: u64 = 4096;
const PIPE_BUFFERS: u64 = PER_PROCESS + (512 << 10);
const PIPE_SLOTS: u64 = 64;

/// Pipe `pipe`'s buffer page in the kernel image.
pub const fn pipe_buffer(pipe: u64) -> u64 {
    PIPE_BUFFERS + (pipe % PIPE_SLOTS) * PIPE_BUFFER_BYTES
}
/// Each pipe's objects besides its buffer, one line each: the `struct file` of its end, its
/// `inode`, its `pipe_inode_info` and the wait queue head (fs/pipe.c): 4 lines, 128 bytes.
pub const PIPE_OBJECT_LINES: u64 = 4;
const PIPE_OBJECTS: u64 = PER_PROCESS + (768 << 10);
/// The process's `files_struct` (the fd table `fget` reads): one line.
const FILES: u64 = PER_PROCESS + (896 << 10);

/// The kernel state a pipe system call touches that is the calling process's own (its task
/// block: `pt_regs`, its stack frames, `task_struct`; its fd table) and the pipe's own (the
/// pipe's objects and buffer): what makes each added process bring its own lines into the
/// caches, which the flushing kernel refetches after every switch and the fast kernel keeps
/// until they overflow (seed 002 §4.2, Fig. 2: "increased competition for TLB entries and
/// cache lines").
#[derive(Clone, Copy, Debug)]
pub struct ProcessKernelState {
    /// The task's block (wraps at 64 tasks).
    pub task: u64,
}

impl ProcessKernelState {
    pub const fn of(process: u32) -> Self {
        ProcessKernelState {
            task: process as u64 % TASK_SLOTS,
        }
    }

    fn block(&self) -> u64 {
        PER_PROCESS + self.task * TASK_UNION_BYTES
    }

    /// A system call's entry: the user registers stored at the top of the kernel stack.
    pub fn enter(&self, out: &mut Vec<Record>, t: u32) {
        let top = self.block() + TASK_UNION_BYTES - PT_REGS_WORDS * 4;
        for w in 0..PT_REGS_WORDS {
            out.push(store(t, top + w * 4, 4));
        }
    }

    /// A system call's exit: the user registers loaded back.
    pub fn exit(&self, out: &mut Vec<Record>, t: u32) {
        let top = self.block() + TASK_UNION_BYTES - PT_REGS_WORDS * 4;
        for w in 0..PT_REGS_WORDS {
            out.push(load(t, top + w * 4, 4));
        }
    }

    /// The body of a pipe `read` (`write` = false) or `write` on pipe `pipe`: the task's
    /// fields and fd table, the call chain's stack frames (a store and a load a line), the
    /// pipe's objects, and the one-word copy out of or into the pipe's buffer.
    pub fn pipe_call(&self, out: &mut Vec<Record>, t: u32, pipe: u64, write: bool) {
        let block = self.block();
        for l in 0..TASK_LINES {
            out.push(load(t, block + l * 32, 4));
        }
        out.push(load(t, FILES + self.task * 32, 4));
        let frames = block + TASK_UNION_BYTES - PT_REGS_WORDS * 4 - SYSCALL_STACK_BYTES;
        for l in 0..SYSCALL_STACK_BYTES / 32 {
            out.push(store(t, frames + l * 32, 4));
            out.push(load(t, frames + l * 32 + 4, 4));
        }
        let objects = PIPE_OBJECTS + (pipe % PIPE_SLOTS) * PIPE_OBJECT_LINES * 32;
        for l in 0..PIPE_OBJECT_LINES {
            out.push(load(t, objects + l * 32, 4));
        }
        out.push(store(t, objects + 2 * 32 + 4, 4)); // pipe_inode_info's length
        let buffer = pipe_buffer(pipe);
        out.push(if write {
            store(t, buffer, 4)
        } else {
            load(t, buffer, 4)
        });
    }
}
