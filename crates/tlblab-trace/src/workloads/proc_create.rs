//! Seed 002 §4.1: lmbench `proc_create`, Table 1's process-creation rows.
//!
//! "the *fork test* tests the latency of `fork()` followed by an immediate `exit()` in the
//! child. In the *exec test* the child performs an `exec()` to a program which immediately
//! exits. The *shell test* times the latency of the `system()` service." (§4.1)
//!
//! Each round the parent (process 0, dynamically linked: its text, libc's text in the shared
//! area, libc's data and its own data private) forks a child, which
//! - `mode=0` (fork): exits at once;
//! - `mode=1` (exec): execs a small program (`hello`), whose dynamic loader relocates libc and
//!   which exits;
//! - `mode=2` (shell): execs `/bin/sh`, which loads, parses its command (`sh_instrs` of the
//!   shell's own work), forks, and its child execs `hello`; the shell waits and exits.
//!
//! and the parent waits for it. Every new address space is a new process id (a new `mm`: exec
//! gives the same task a new one, so the old one exits), with a fresh thread of the same id.
//!
//! The kernel's work is traced as paths over the kernel image (`kernel_path.rs`): fork's
//! (`do_fork`, `copy_mm`), exit's (`do_exit`, `exit_mmap`), wait's (`wait4`, reaping) and
//! exec's (`do_execve`, the binary loader), each a loop over its own lines of kernel code and
//! data. Around them the stock ARM Linux 2.4 kernel flushes for the address space it changes
//! (`flush_cache_mm`/`flush_tlb_mm` in `dup_mmap` and `exit_mmap`: a `Flush` event with
//! `flush::ADDRESS_SPACE`), besides the flush at every context switch (the switch policy), and
//! exec's switch to the new `mm` is a context switch; the dynamic loader's mapping calls in
//! an exec'd program (`LOADER_RANGES`) and each VMA's `zap_page_range` in `exit_mmap` run
//! `flush_cache_range` (the whole I-cache, the range's D-cache lines one by one: a
//! `FlushRange` event; over 32 KiB both caches whole), and the first write to a page after a
//! fork (and a relocation's write to libc's private data) takes a copy-on-write fault whose
//! `do_wp_page` runs `flush_cache_page` and `flush_tlb_page` (a `FlushRange` of the page).
//! The fast kernel defers these cache flushes (seed 002 §4.2, lazy flushing;
//! `techniques/fass.rs`) and keeps the TLB's.
//!
//! The one constant calibrated per mode is the length of its own path (fork: the fork, exit
//! and wait paths together; exec: the exec path; shell: the shell's own work), so that the
//! flushing kernel on the `sa1100` preset gives Table 1's original column; the fast column is
//! the prediction (docs/technique-fass.md). The footprints below are assumptions, not seed
//! figures: they set how much each flush costs to refetch, and are stated where they are.

use super::gen::*;
use super::kernel_path::{self, KernelPath};
use super::lat_ctx::{DATA, STACK, TEXT};
use super::WorkloadInfo;
use crate::record::{flush, prot, Event};
use tlblab_types::{CoreId, ThreadId, VirtAddr};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "proc_create",
    summary:
        "lmbench proc_create: fork and exit, fork and exec, or system() of a program that exits",
    source: "seed 002 §4.1 (proc_create, Table 1)",
    in_default_set: false,
    params: params! {
        mode: 0, "0 = fork (the child exits), 1 = exec (the child execs a program that exits), 2 = shell (system(): sh runs the program)";
        rounds: 20, "processes created (shell: sh and its child per round)";
        kernel_instrs: 0, "instructions of the mode's calibrated path per round (fork: fork+exit+wait; exec: exec; shell: the shell's work); 0 = calibrated";
        vfork: 0, "1 = the benchmark's own fork is a vfork() (the child borrows the parent's address space until it execs or exits)";
        sh_vfork: 0, "1 = sh runs its command with vfork() (as dash 0.5.12 does), 0 = with fork()";
        sh_footprint: 0, "1 = sh has a captured dash's further 16 VMAs and first writes to 10 pages it read first (copy-on-write faults)";
    },
};

/// Calibrated lengths, instructions per round (the flush-all policy on the `sa1100` preset, 20
/// rounds of fork and exec, 2 of shell; cycles grow 1.25 per instruction, so each is solved
/// from two runs; docs/technique-fass.md): the fork, exit and wait paths together, so that
/// fork is Table 1's 4,061 us; the exec path, so that exec is 4,321 us (exec's two extra
/// flushes, their refills, the loader's mapping calls with their range flushes and the
/// loader's lines are most of its 260 us over fork: the path is short, and near its first pass
/// over its lines the cycles are not monotone in its length, so it was found by a scan, 100-300
/// in steps of 50: 150 gives 4,322 us; 2,000 before the loader's calls were traced); the
/// shell's own work, so that shell is 54,533 us (7,170,655 before).
/// Refit in issue 60's sixth session, when the per-page and per-range flushes went in
/// (`FlushRange`: copy-on-write faults, the loader's ranges' D-cache lines, `exit_mmap`'s
/// per-VMA `flush_cache_range`): fork from 588,270 and the shell from 7,160,788 by the 1.25
/// cycles an instruction. The exec path stays 138: with the range flushes' per-line loops the
/// flushing kernel's exec is above Table 1's 4,321 us even with fork refit, and no exec path
/// length can take it lower (docs/technique-fass.md).
pub const FORK_ROUND_INSTRS: u64 = 579_784;
pub const EXEC_INSTRS: u64 = 138;
pub const SH_INSTRS: u64 = 7_118_372;

/// Shares of a fork round's kernel work: fork 60%, exit 25%, wait 15% (an assumption).
const FORK_SHARE: (u64, u64, u64) = (60, 25, 15);
/// Lines of code each path loops over (assumptions): fork 8 KiB, exit 4 KiB, wait 2 KiB,
/// exec 8 KiB of ARM code; their data lines follow (`KernelPath::data_lines`).
const LOOP_LINES: (u64, u64, u64, u64) = (256, 128, 64, 256);

/// The shared area above 2 GiB where the libraries' text is mapped (seed 002 §3.2: "the code
/// is mapped into the shared area above 2GB"); their data stays in the lower 32 MiB.
pub const LIBC_TEXT: u64 = 0x8000_0000;
pub const LIBC_TEXT_BYTES: u64 = 256 << 10;
pub const LIBC_DATA: u64 = 0x0180_0000;
pub const LIBC_DATA_BYTES: u64 = 16 << 10;
/// Text bytes of the programs: the benchmark, `hello`, `/bin/sh` (assumptions).
const BENCH_TEXT: u64 = 16 << 10;
const HELLO_TEXT: u64 = 4 << 10;
const SH_TEXT: u64 = 96 << 10;
/// Private data of each program.
const PROG_DATA: u64 = 16 << 10;
/// Each address space's private mappings: the program's data, libc's data, the stack.
const PRIVATE: [(u64, u64); 3] = [
    (DATA, PROG_DATA),
    (LIBC_DATA, LIBC_DATA_BYTES),
    (STACK, 4096),
];
/// Lines of libc text and data the dynamic loader touches to start a program (an assumption).
const LOADER_TEXT_LINES: u64 = 128;
const LOADER_DATA_LINES: u64 = 64;
/// The dynamic loader's mapping calls for one library and its cache, in the order glibc's
/// loader makes them (`_dl_map_object_from_fd`, `_dl_unload_cache`): the hole between libc's
/// text and data made inaccessible (`mprotect(PROT_NONE)`), its data segment mapped
/// `MAP_FIXED` over the reservation of the whole file, the rest of its bss mapped `MAP_FIXED`
/// anonymous, ld.so.cache unmapped. Each runs the stock kernel's `flush_cache_range`
/// (`change_protection`; `zap_page_range` in the `do_munmap` a `MAP_FIXED` mapping or munmap
/// makes first: ARM Linux 2.4, mm/mprotect.c, mm/memory.c). Sizes (assumptions): the hole
/// 28 KiB (under ARM's 32 KiB segment alignment), the data segment libc's data above, the bss
/// rest 4 KiB, ld.so.cache 4 KiB: every one at most 32 KiB, the I-cache invalidated whole and
/// the range's D-cache lines cleaned and invalidated one by one (`MAX_AREA_SIZE`,
/// arch/arm/mm/proc-sa110.S; the per-line loop's instructions are not traced).
const LOADER_RANGES: [(u64, u64); 3] = [
    (LIBC_DATA + LIBC_DATA_BYTES, 28 << 10),
    (LIBC_DATA, LIBC_DATA_BYTES),
    (LIBC_DATA + LIBC_DATA_BYTES - 4096, 4096),
];
/// Where the loader maps ld.so.cache (a private read-only mapping), and its size.
const LD_SO_CACHE: u64 = 0x01a0_0000;
const LD_SO_CACHE_BYTES: u64 = 4 << 10;
/// Instructions of the kernel's path for one mapping call (`sys_mmap2`/`sys_mprotect`/
/// `sys_munmap` down to `do_mmap_pgoff`, `mprotect_fixup`, `do_munmap`), straight-line: "a
/// few hundred instructions" like the switch path (seed 002 §1; an assumption).
const MM_CALL_INSTRS: u64 = 400;
/// ARM Linux 2.4's `MAX_AREA_SIZE` (arch/arm/mm/proc-sa110.S): a `flush_cache_range` over more
/// bytes cleans and invalidates both caches whole instead of the range's lines.
const MAX_AREA_SIZE: u64 = 32 << 10;

/// Lines of the loader's own mapping code (`_dl_map_object_from_fd` and the system-call
/// stubs) it runs around each call: the same lines every time (an assumption).
const LOADER_MAP_LINES: u64 = 32;

/// What a captured dash 0.5.12 (`sh -c` of lmbench's hello under tlblab's Valgrind tool and
/// /proc/PID/maps; docs/lab/2026-11-29-issue87-captured-sh.md) has beyond the model's sh: the
/// sizes in KiB of its 16 VMAs other than its text, libc's text, its data, libc's data and its
/// stack (dash's and the two libraries' read-only and RELRO segments, bss, heap and anonymous
/// maps), placed from `SH_EXTRA` on with a page between; and the pages it writes after reading
/// them first (10 of its 27 written pages), one in each of the first ten of these VMAs here.
const SH_EXTRA_KIB: [u64; 16] = [16, 24, 8, 8, 132, 12, 152, 332, 16, 52, 8, 4, 152, 40, 8, 8];
const SH_EXTRA: u64 = 0x0200_0000;
const SH_READ_THEN_WRITTEN: usize = 10;

fn sh_extra_vmas() -> impl Iterator<Item = (u64, u64)> {
    SH_EXTRA_KIB.iter().scan(SH_EXTRA, |at, kib| {
        let start = *at;
        *at += (kib << 10) + 4096;
        Some((start, kib << 10))
    })
}

/// Shared-object ids: libc's text, then each program's text (fork-shared between a parent and
/// its child until exec).
const LIBC_OBJECT: u32 = 1;
const BENCH_OBJECT: u32 = 0;
const HELLO_OBJECT: u32 = 2;
const SH_OBJECT: u32 = 3;
/// Instructions run per step of a long path (bounds the generator's buffer).
const CHUNK: u64 = 1 << 16;

#[derive(Clone, Copy, Debug)]
enum Program {
    Bench,
    Hello,
    Sh,
}

impl Program {
    fn text(self) -> (u32, u64) {
        match self {
            Program::Bench => (BENCH_OBJECT, BENCH_TEXT),
            Program::Hello => (HELLO_OBJECT, HELLO_TEXT),
            Program::Sh => (SH_OBJECT, SH_TEXT),
        }
    }
}

/// One item of a round's script.
enum Op {
    Record(Record),
    /// A kernel path run by thread `t`, from instruction `done` on.
    Path {
        path: KernelPath,
        t: u32,
        done: u64,
    },
    /// The shell's own work: `instrs` instructions round its text, one data access in four.
    Shell {
        t: u32,
        instrs: u64,
        done: u64,
    },
}

pub struct ProcCreate {
    mode: u64,
    rounds: u64,
    round: u64,
    next_id: u32,
    fork: KernelPath,
    exit: KernelPath,
    wait: KernelPath,
    exec: KernelPath,
    sh_instrs: u64,
    /// Whether the benchmark's fork and sh's fork of its command are vforks.
    vfork: bool,
    sh_vfork: bool,
    /// Threads made by vfork, each borrowing its parent's address space (until exec or exit).
    borrowed: std::collections::HashSet<u32>,
    /// Processes that vforked: their pages were not write-protected, so their first write
    /// after the wait takes no copy-on-write fault.
    vforked: std::collections::HashSet<u32>,
    /// Whether sh has the captured dash's further VMAs and faults, and the spaces that have them.
    sh_footprint: bool,
    footprint: std::collections::HashSet<u32>,
    /// The program each live address space runs (its text VMA at teardown).
    programs: std::collections::HashMap<u32, Program>,
    script: std::collections::VecDeque<Op>,
}

fn path(slot: u64, instrs: u64, loop_lines: u64) -> KernelPath {
    KernelPath {
        text: kernel_path::text_slot(slot),
        instrs,
        loop_lines,
        data: kernel_path::data_slot(slot),
    }
}

impl ProcCreate {
    pub fn from_params(get: impl Fn(&str) -> u64) -> Result<Self, String> {
        let mode = get("mode");
        if mode > 2 {
            return Err(format!(
                "proc_create: mode must be 0 (fork), 1 (exec) or 2 (shell) (got {mode})"
            ));
        }
        let k = get("kernel_instrs");
        let fork_round = if mode == 0 && k > 0 {
            k
        } else {
            FORK_ROUND_INSTRS
        };
        let exec = if mode == 1 && k > 0 { k } else { EXEC_INSTRS };
        let sh_instrs = if mode == 2 && k > 0 { k } else { SH_INSTRS };
        let (_, e, w) = FORK_SHARE;
        let (lf, le, lw, lx) = LOOP_LINES;
        Ok(ProcCreate {
            mode,
            rounds: get("rounds"),
            round: 0,
            next_id: 1,
            // Slots 0-3 of the kernel image: this workload runs none of the IPC paths there.
            // Whatever the shares leave by rounding goes to fork: the three sum to the round.
            fork: path(
                0,
                fork_round - fork_round * e / 100 - fork_round * w / 100,
                lf,
            ),
            exit: path(1, fork_round * e / 100, le),
            wait: path(2, fork_round * w / 100, lw),
            exec: path(3, exec, lx),
            sh_instrs,
            vfork: get("vfork") != 0,
            sh_vfork: get("sh_vfork") != 0,
            borrowed: Default::default(),
            vforked: Default::default(),
            sh_footprint: get("sh_footprint") != 0,
            footprint: Default::default(),
            programs: Default::default(),
            script: Default::default(),
        })
    }

    fn rec(&mut self, r: Record) {
        self.script.push_back(Op::Record(r));
    }

    fn run(&mut self, path: KernelPath, t: u32) {
        self.script.push_back(Op::Path { path, t, done: 0 });
    }

    /// The kernel's flush for an address space it changes (`flush_cache_mm` + `flush_tlb_mm`).
    fn mm_flush(&mut self) {
        self.rec(ev(Event::Flush {
            core: CoreId(0),
            what: flush::TLB | flush::CACHES | flush::ADDRESS_SPACE,
        }));
    }

    /// One of the loader's mapping calls: its own mapping code, then the kernel's path.
    fn mm_call(&mut self, t: u32) {
        for i in 0..LOADER_MAP_LINES {
            self.rec(fetch(t, LIBC_TEXT + 0x2_0000 + i * 32, 4));
        }
        self.run(path(4, MM_CALL_INSTRS, 0), t);
    }

    /// The stock kernel's `flush_cache_range` over `start..start+len` of `p` (ARM Linux 2.4,
    /// include/asm-arm/proc-armv/cache.h: the I-cache flag always set): at most 32 KiB, the
    /// range's D-cache lines one by one and the I-cache whole (`FlushRange`); more, both caches
    /// whole (`cpu_sa1100_cache_clean_invalidate_all`). A technique may defer it (fass, §4.2).
    /// Its `flush_tlb_range` is the `Munmap`/`Mprotect` event's shootdown.
    fn range_flush(&mut self, p: u32, start: u64, len: u64) {
        self.rec(ev(if len > MAX_AREA_SIZE {
            Event::Flush {
                core: CoreId(0),
                what: flush::CACHES | flush::ADDRESS_SPACE,
            }
        } else {
            Event::FlushRange {
                process: p,
                start: VirtAddr(start),
                len,
                what: flush::CACHES | flush::INSTR_CACHES,
            }
        }));
    }

    /// `t` writes the page at `page` for the first time since it was write-protected (a fork,
    /// or a private file page read first): a copy-on-write fault. `do_wp_page` (ARM Linux 2.4,
    /// mm/memory.c; `break_cow`, or the reuse of a page no longer shared) runs
    /// `flush_cache_page` (the page's D-cache lines one by one; not executable: no I-cache)
    /// and `flush_tlb_page` (`establish_pte`): one `FlushRange` of the page. The rest of the
    /// fault (the abort handler, `handle_mm_fault`, the page's copy through the SA-1100's
    /// mini-cache, `flush_page_to_ram` of the new frame) is work both kernels do alike and is
    /// not traced apart: it is inside the calibrated path lengths (a path of its own would add
    /// a code footprint of assumed size to the I-cache's, which the fork, exit and wait paths'
    /// assumed 14 KiB already nearly fill).
    fn cow_fault(&mut self, t: u32, page: u64) {
        self.rec(ev(Event::FlushRange {
            process: t,
            start: VirtAddr(page & !0xfff),
            len: 4096,
            what: flush::CACHES | flush::TLB,
        }));
    }

    /// A new address space running `prog`, with libc: thread = process = a fresh id.
    fn new_space(&mut self, prog: Program) -> u32 {
        let p = self.next_id;
        self.next_id += 1;
        self.programs.insert(p, prog);
        let mut recs = Vec::new();
        start_space(&mut recs, p, prog);
        self.script.extend(recs.into_iter().map(Op::Record));
        p
    }

    /// `p`'s address space goes (exit_mmap: `flush_cache_mm`, then each VMA's
    /// `zap_page_range` with its `flush_cache_range`, the address space being still the
    /// active one at exit and at exec: ARM Linux 2.4 mm/mmap.c, fs/exec.c `exec_mmap`) and its
    /// task ends.
    fn end_space(&mut self, p: u32) {
        self.mm_flush();
        let prog = self.programs.remove(&p).unwrap_or(Program::Bench);
        let extra: Vec<(u64, u64)> = if self.footprint.remove(&p) {
            sh_extra_vmas().collect()
        } else {
            Vec::new()
        };
        let vmas = [(TEXT, prog.text().1), (LIBC_TEXT, LIBC_TEXT_BYTES)];
        for (start, len) in vmas.into_iter().chain(PRIVATE).chain(extra.clone()) {
            self.range_flush(p, start, len);
        }
        for (start, len) in PRIVATE.into_iter().chain(extra) {
            self.rec(ev(Event::Munmap {
                process: p,
                start: VirtAddr(start),
                len,
            }));
        }
        self.rec(ev(Event::ThreadExit {
            thread: ThreadId(p),
        }));
    }

    /// `p` forks: the fork path and the parent's flush; returns the child (scheduled next).
    fn fork(&mut self, p: u32, prog: Program) -> u32 {
        self.rec(fetch(p, LIBC_TEXT + 0x1000, 4)); // fork() in libc
        self.run(self.fork, p);
        self.mm_flush();
        let c = self.new_space(prog);
        self.rec(switch(0, Some(p), Some(c)));
        self.run(kernel_path::switch_path(), c);
        self.rec(fetch(c, LIBC_TEXT + 0x1040, 4)); // fork() returns in the child
        self.cow_fault(c, STACK); // its first write, to its stack
        self.rec(store(c, STACK + 0xf00, 4));
        c
    }

    /// `p` vforks (Linux 2.4 `do_fork` with `CLONE_VM | CLONE_VFORK`): the fork path (its
    /// length as fork's, an assumption), but no `dup_mmap`, so no flush and no write
    /// protection; the child is a thread of `p`'s address space until it execs or exits, and
    /// the switch to it stays in one `mm`, where ARM Linux's `switch_mm` flushes nothing (the
    /// engine flushes only when the space changes). Returns the child (scheduled next).
    fn vfork(&mut self, p: u32) -> u32 {
        self.rec(fetch(p, LIBC_TEXT + 0x1080, 4)); // vfork() in libc
        self.run(self.fork, p);
        let c = self.next_id;
        self.next_id += 1;
        self.borrowed.insert(c);
        self.vforked.insert(p);
        self.rec(ev(Event::ThreadStart {
            thread: ThreadId(c),
            process: p,
        }));
        self.rec(switch(0, Some(p), Some(c)));
        self.run(kernel_path::switch_path(), c);
        self.rec(fetch(c, LIBC_TEXT + 0x10c0, 4)); // vfork() returns in the child
        self.rec(store(c, STACK + 0xe00, 4)); // the parent's stack, writable: no fault
        c
    }

    /// `c` leaves its address space at exit or exec: a vforked child drops its borrowed one
    /// (`mm_users` was 2: no `exit_mmap`, fs/exec.c `exec_mmap`, kernel/fork.c `mmput`); any
    /// other's goes (`end_space`).
    fn leave_space(&mut self, c: u32) {
        if self.borrowed.remove(&c) {
            self.rec(ev(Event::ThreadExit {
                thread: ThreadId(c),
            }));
        } else {
            self.end_space(c);
        }
    }

    /// `c` exits and its parent `p`, waiting, runs again and reaps it.
    fn exit(&mut self, c: u32, p: u32) {
        self.run(self.exit, c);
        self.leave_space(c);
        self.rec(switch(0, Some(c), Some(p)));
        self.run(kernel_path::switch_path(), p);
        self.run(self.wait, p);
        self.rec(fetch(p, LIBC_TEXT + 0x2000, 4)); // wait() returns
                                                   // The parent's first write since its fork, to its stack: the page is no longer shared
                                                   // (the child is gone), so do_wp_page reuses it, with the same flushes. After a vfork
                                                   // the page was never write-protected.
        if !self.vforked.remove(&p) {
            self.cow_fault(p, STACK);
        }
        self.rec(store(p, STACK + 0xf00, 4));
    }

    /// `c` execs `prog`: the exec path, its old address space goes, the new one starts (a
    /// switch to the new `mm`) and the dynamic loader relocates libc. Returns the new id.
    fn exec(&mut self, c: u32, prog: Program) -> u32 {
        self.run(self.exec, c);
        self.leave_space(c);
        let n = self.new_space(prog);
        self.rec(switch(0, Some(c), Some(n)));
        // The loader maps ld.so.cache, searches it, maps libc (LOADER_RANGES), unloads the
        // cache, then relocates libc (its text and data lines).
        self.rec(ev(map_private(
            n,
            LD_SO_CACHE,
            LD_SO_CACHE_BYTES,
            prot::READ,
        )));
        self.mm_call(n);
        for i in 0..8 {
            self.rec(load(n, LD_SO_CACHE + i * 512, 4));
        }
        for (start, len) in LOADER_RANGES {
            self.rec(ev(Event::Mprotect {
                process: n,
                start: VirtAddr(start),
                len,
                prot: prot::READ | prot::WRITE,
            }));
            self.mm_call(n);
            self.range_flush(n, start, len);
        }
        self.rec(ev(Event::Munmap {
            process: n,
            start: VirtAddr(LD_SO_CACHE),
            len: LD_SO_CACHE_BYTES,
        }));
        self.mm_call(n);
        self.range_flush(n, LD_SO_CACHE, LD_SO_CACHE_BYTES);
        for i in 0..LOADER_TEXT_LINES {
            self.rec(fetch(n, LIBC_TEXT + 0x4000 + i * 32, 4));
        }
        // Relocations add the load address to each GOT slot: a read, then a write. The first
        // write to libc's private data page (read first: the page cache's page, mapped
        // read-only) is a copy-on-write fault.
        for i in 0..LOADER_DATA_LINES {
            if i == 0 {
                self.rec(load(n, LIBC_DATA, 4));
                self.cow_fault(n, LIBC_DATA);
            }
            self.rec(load(n, LIBC_DATA + i * 32, 4));
            self.rec(store(n, LIBC_DATA + i * 32, 4));
        }
        self.rec(fetch(n, TEXT + 0x100, 4)); // main
        self.rec(store(n, STACK + 0xf00, 4));
        n
    }

    fn script_round(&mut self) {
        let parent = 0;
        self.rec(fetch(parent, TEXT + 0x200, 4)); // the benchmark's loop
        self.rec(load(parent, STACK + 0xf00, 4));
        let c = if self.vfork {
            self.vfork(parent)
        } else {
            self.fork(parent, Program::Bench)
        };
        match self.mode {
            0 => self.exit(c, parent),
            1 => {
                let n = self.exec(c, Program::Hello);
                self.exit(n, parent);
            }
            _ => {
                let sh = self.exec(c, Program::Sh);
                if self.sh_footprint {
                    // dash's further mappings, then its first writes to pages it read first.
                    self.footprint.insert(sh);
                    for (start, len) in sh_extra_vmas() {
                        self.rec(ev(map_private(sh, start, len, prot::READ | prot::WRITE)));
                    }
                    for (start, _) in sh_extra_vmas().take(SH_READ_THEN_WRITTEN) {
                        self.rec(load(sh, start, 4));
                        self.cow_fault(sh, start);
                        self.rec(store(sh, start, 4));
                    }
                }
                self.script.push_back(Op::Shell {
                    t: sh,
                    instrs: self.sh_instrs,
                    done: 0,
                });
                let g = if self.sh_vfork {
                    self.vfork(sh)
                } else {
                    self.fork(sh, Program::Sh)
                };
                let h = self.exec(g, Program::Hello);
                self.exit(h, sh);
                self.exit(sh, parent);
            }
        }
    }
}

/// Thread = process `p` starts, running `prog`: the kernel image, the program's text (shared
/// with the process it was forked from), libc's text in the shared area, private data, libc's
/// data and a stack.
fn start_space(out: &mut Vec<Record>, p: u32, prog: Program) {
    let (object, text) = prog.text();
    out.push(ev(Event::ThreadStart {
        thread: ThreadId(p),
        process: p,
    }));
    kernel_path::map_kernel(out, p);
    for (start, len, object) in [
        (TEXT, text, object),
        (LIBC_TEXT, LIBC_TEXT_BYTES, LIBC_OBJECT),
    ] {
        out.push(ev(map_shared(
            p,
            start,
            len,
            prot::READ | prot::EXEC,
            object,
        )));
    }
    for (start, len) in PRIVATE {
        out.push(ev(map_private(p, start, len, prot::READ | prot::WRITE)));
    }
}

/// Lines of the shell's own loop (parsing, its interpreter): 4 KiB of code and 2 KiB of data
/// (an assumption); the first pass over its text touches every line once.
const SH_LOOP_LINES: u64 = 128;

/// The shell's own work, instructions `from..to`: once through its whole text, then round its
/// loop, one data access in four, in pairs (a load, then a store to its line).
fn shell_work(out: &mut Vec<Record>, t: u32, from: u64, to: u64) {
    let once = SH_TEXT / 4;
    let dlines = SH_LOOP_LINES / 2;
    for i in from..to {
        let line = if i < once {
            i / 8
        } else {
            (i - once) / 8 % SH_LOOP_LINES
        };
        out.push(fetch(t, TEXT + line * 32 + (i % 8) * 4, 4));
        if i % 4 == 3 {
            // A load, then a store to the same line, as `KernelPath::run_range` pairs them
            // (on the SA-1100's read-allocate D-cache a store hits only a line read before).
            let k = i / 4;
            let a = DATA + (k / 2 % dlines) * 32;
            out.push(if k % 2 == 1 {
                store(t, a + 16, 4)
            } else {
                load(t, a, 4)
            });
        }
    }
}

impl Generator for ProcCreate {
    fn regions(&self) -> Vec<String> {
        vec![]
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if self.round == 0 && self.script.is_empty() {
            if self.rounds == 0 {
                return false;
            }
            let p = 0;
            start_space(out, p, Program::Bench);
            out.push(switch(0, None, Some(p)));
            self.script_round();
            self.round = 1;
        }
        while out.len() < CHUNK as usize {
            let Some(op) = self.script.front_mut() else {
                if self.round == self.rounds {
                    return !out.is_empty();
                }
                self.round += 1;
                self.script_round();
                continue;
            };
            match op {
                Op::Record(r) => {
                    out.push(*r);
                    self.script.pop_front();
                }
                Op::Path { path, t, done } => {
                    let to = (*done + CHUNK).min(path.instrs);
                    path.run_range(out, *t, *done, to);
                    *done = to;
                    if to == path.instrs {
                        self.script.pop_front();
                    }
                }
                Op::Shell { t, instrs, done } => {
                    let to = (*done + CHUNK).min(*instrs);
                    shell_work(out, *t, *done, to);
                    *done = to;
                    if to == *instrs {
                        self.script.pop_front();
                    }
                }
            }
        }
        true
    }
}
