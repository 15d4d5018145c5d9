//! The kernel's own work in the seed 002 benchmarks, traced as the process's accesses to the
//! kernel image (seed 002 §4.1-4.2, Table 1).
//!
//! A context switch on the SA-1100 costs little by itself; what the flushing kernel pays is the
//! kernel's and the process's working set refetched after every flush (≈ 70 cycles a cache
//! line, ≈ 45 a TLB entry, seed 002 §2). So the kernel's path around each switch (the system
//! calls, the pipe, socket or lock code, the scheduler) is traced: `instrs` instruction fetches
//! (about one cycle each on the single-issue StrongARM when they hit), straight-line through
//! `instrs / 8` cache lines of 32 bytes, or round a loop of `loop_lines` lines; one data access
//! every `DATA_EVERY` instructions over its own lines of kernel data, every other one a store.
//! The kernel image is one shared object mapped with 1 MiB sections at `KERNEL` (ARM Linux
//! maps its low memory with sections) in every process: the flushing kernel loses its
//! entries and lines at every switch, the FASS kernel keeps them in its own domain.
//!
//! A path's length (`instrs`) is the one constant each benchmark calibrates (seed 002 Table 1's
//! original column, see `docs/technique-fass.md`); the rest is the shape above.

use super::gen::*;
use crate::record::{prot, Event};
use tlblab_types::VirtAddr;

/// ARM Linux's PAGE_OFFSET: the kernel image and its data, above every user mapping.
pub const KERNEL: u64 = 0xc000_0000;
/// The kernel image's bytes (4 sections).
pub const KERNEL_BYTES: u64 = 4 << 20;
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
        prot: prot::READ | prot::WRITE | prot::EXEC,
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
                let k = i / DATA_EVERY;
                let a = data + (k % dlines) * 32 + (k / dlines % 8) * 4;
                out.push(if k % 2 == 1 {
                    store(t, a, 4)
                } else {
                    load(t, a, 4)
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
