//! Captured programs run side by side on several cores, each core running its own list of
//! programs one after another (seed 004 §V.1's scenarios: on one core cjpeg, djpeg and then the
//! real-time program; on four, the same on core 0 while cores 1-3 loop cjpeg, djpeg and typeset).
//!
//! Each core has a plan: a list of single-thread captures (no events: Lackey's captures), run in
//! order, and looped when the plan says so. Every run of a program is a process of its own (a
//! new `exec`: a new address space, so its pages fault again), and its one thread has the
//! process's number. The final program of core 0's plan is process 0, thread 0 (the program
//! whose statistics a study reads); the others are numbered from 1 in the order they start. A
//! program's end is its thread's `ThreadExit`, its process's `ProcessExit` (Linux's `exit_mmap`,
//! which flushes the process's translations on every core: on the Cortex-A9 one broadcast
//! TLBIASIDIS, `OsConfig::tlb_maintenance`) and a `ContextSwitch` on its core to the next.
//! A program may carry the system calls its capture does not record (`Syscall`, traced apart):
//! each is its process's `KernelEntry` (a system call: the kernel entered on its core), and a
//! munmap or mprotect its `Munmap`/`Mprotect` event after it, after the number of its
//! references each names. With a timer (`Corun::with_tick`) every core's running process also
//! takes a `KernelEntry` tick every so many of that core's references (the periodic tick of
//! every busy core, which a user-space capture does not see either).
//!
//! The cores advance in turns of `chunk` references each (round robin in core order): the
//! cores run at one reference rate, the accesses of each core in program order, and the shared
//! levels (the L2) see them interleaved. The composition ends when core 0's plan ends (core 0's
//! plan must not loop). A program's addresses move by its relocations (a 64-bit capture's stack
//! into a 32-bit layout), and every address must then fit `address_bits`.

use super::rt_replay::{relocate, Relocation};
use crate::record::{Event, Record};
use crate::source::RecordSource;
use std::path::PathBuf;
use tlblab_types::{CoreId, ThreadId, VirtAddr};

/// One program of a core's plan: its capture, where its addresses move, and the system calls
/// its capture does not record (Lackey's records none) that change its mappings.
#[derive(Clone, Debug)]
pub struct Program {
    pub capture: PathBuf,
    pub relocations: Vec<Relocation>,
    /// In order of `at`; a call at or past the capture's end comes before the program's exit.
    pub syscalls: Vec<Syscall>,
}

/// A system call of a program: `at` references of its run come before it. Each becomes the
/// `KernelEntry` (a system call) of the run's process, and one that changes its mappings the
/// `Munmap`/`Mprotect` event after it (addresses moved by the program's relocations), whose TLB
/// maintenance the OS model does. `start` and `len` mean nothing for `Other`.
#[derive(Clone, Debug, PartialEq)]
pub struct Syscall {
    pub at: u64,
    pub kind: SyscallKind,
    pub start: u64,
    pub len: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SyscallKind {
    Munmap,
    Mprotect {
        prot: u8,
    },
    /// A call that changes no mapping (read, write, openat, brk that grows, ...): the entry alone.
    Other,
}

/// What one core runs: `programs` in order; again from the first when `repeat`.
#[derive(Clone, Debug)]
pub struct CorePlan {
    pub programs: Vec<Program>,
    pub repeat: bool,
}

struct Running {
    src: Box<dyn RecordSource + Send>,
    name: String,
    thread: u32,
    relocations: Vec<Relocation>,
    syscalls: Vec<Syscall>,
    /// Index in `syscalls` of the next call.
    next_call: usize,
    /// Records of this run read so far (for errors; Lackey's captures hold accesses only, so
    /// also the references before the next call).
    read: u64,
}

struct Core {
    plan: CorePlan,
    /// Index in `plan.programs` of the program running (or next to run).
    step: usize,
    running: Option<Running>,
    done: bool,
    /// References of this core since its last timer tick (`Corun::with_tick`).
    since_tick: u64,
    /// References of the core's first program skipped at its first start
    /// (`Corun::with_offsets`); 0 once it started.
    offset: u64,
}

/// The composition (see the module comment); a `RecordSource`.
pub struct Corun {
    cores: Vec<Core>,
    chunk: usize,
    /// References of a core between its timer ticks (0: no ticks).
    tick: u64,
    address_limit: u64,
    next_process: u32,
    started: bool,
    finished: bool,
    turn: usize,
    buf: Vec<Record>,
    pos: usize,
    scratch: Vec<Record>,
}

impl Corun {
    /// `plans[c]` is core c's plan; an empty plan leaves its core idle.
    pub fn new(plans: Vec<CorePlan>, chunk: usize, address_bits: u32) -> Result<Self, String> {
        if plans.is_empty() || plans[0].programs.is_empty() {
            return Err("corun: core 0 has no programs (its plan's end ends the run)".into());
        }
        if plans[0].repeat {
            return Err("corun: core 0's plan must not repeat (its end ends the run)".into());
        }
        if plans.len() > u16::MAX as usize {
            return Err(format!(
                "corun: {} cores given (at most 65535)",
                plans.len()
            ));
        }
        if chunk == 0 {
            return Err("corun: the turn's length (chunk) must be at least one reference".into());
        }
        if !(12..=64).contains(&address_bits) {
            return Err(format!(
                "corun: address_bits must be 12..64, not {address_bits}"
            ));
        }
        for (c, p) in plans.iter().enumerate() {
            for prog in &p.programs {
                if prog.syscalls.windows(2).any(|w| w[1].at < w[0].at) {
                    return Err(format!(
                        "corun: core {c}: the system calls of {} are not in order of position",
                        prog.capture.display()
                    ));
                }
                if !prog.capture.is_file() {
                    return Err(format!(
                        "corun: core {c}: capture {} not found",
                        prog.capture.display()
                    ));
                }
            }
        }
        Ok(Corun {
            cores: plans
                .into_iter()
                .map(|plan| Core {
                    done: plan.programs.is_empty(),
                    plan,
                    step: 0,
                    running: None,
                    since_tick: 0,
                    offset: 0,
                })
                .collect(),
            chunk,
            tick: 0,
            address_limit: if address_bits == 64 {
                u64::MAX
            } else {
                (1u64 << address_bits) - 1
            },
            next_process: 1,
            started: false,
            finished: false,
            turn: 0,
            buf: Vec::new(),
            pos: 0,
            scratch: Vec::new(),
        })
    }

    /// The timer: every core's running process takes a `KernelEntry` tick after each `every`
    /// references of that core (0: none). The composition advances the cores at one reference
    /// rate, so a tick period in time is one in references: the caller converts.
    pub fn with_tick(mut self, every: u64) -> Self {
        self.tick = every;
        self
    }

    /// Where each core's plan starts: core c's first program is started `offsets[c]` references
    /// into its run (those references and the system calls before them are read and dropped: the
    /// core joins its loop mid-way, as a measurement that starts while the other cores are busy
    /// does). Cores past the list start at 0. An offset past the first program's end is an error
    /// when the program starts.
    pub fn with_offsets(mut self, offsets: &[u64]) -> Self {
        for (core, &o) in self.cores.iter_mut().zip(offsets) {
            core.offset = o;
        }
        self
    }

    /// Starts core `c`'s program at `step`: its process number, `ThreadStart` and the switch.
    fn start(&mut self, c: usize, from: Option<u32>, out: &mut Vec<Record>) -> Result<(), String> {
        let core = &mut self.cores[c];
        let last_of_core0 = c == 0 && core.step + 1 == core.plan.programs.len();
        let thread = if last_of_core0 {
            0
        } else {
            let t = self.next_process;
            self.next_process += 1;
            t
        };
        let prog = &core.plan.programs[core.step];
        let (mut src, _meta, _fmt) = crate::convert::open_source(&prog.capture, None)?;
        let skip = std::mem::take(&mut core.offset);
        let mut dropped = 0;
        while dropped < skip {
            self.scratch.clear();
            let n = src.fill(&mut self.scratch, (skip - dropped).min(1 << 16) as usize)?;
            if n == 0 {
                return Err(format!(
                    "corun: core {c}: offset {skip} is past the end of {} ({dropped} records)",
                    prog.capture.display()
                ));
            }
            dropped += n as u64;
        }
        self.scratch.clear();
        core.running = Some(Running {
            src,
            name: prog.capture.display().to_string(),
            thread,
            relocations: prog.relocations.clone(),
            syscalls: prog.syscalls.clone(),
            next_call: prog.syscalls.partition_point(|call| call.at < skip),
            read: skip,
        });
        out.push(Record::Event(Event::ThreadStart {
            thread: ThreadId(thread),
            process: thread,
        }));
        out.push(Record::Event(Event::ContextSwitch {
            core: CoreId(c as u16),
            from: from.map(ThreadId).unwrap_or(crate::record::NO_THREAD),
            to: ThreadId(thread),
        }));
        Ok(())
    }

    /// Core `c`'s next turn: up to `chunk` references of its program, and the program's end
    /// (exit, the next program's start) when its capture ends within the turn.
    fn turn(&mut self, c: usize, out: &mut Vec<Record>) -> Result<(), String> {
        let mut left = self.chunk;
        while left > 0 && !self.cores[c].done {
            let limit = self.address_limit;
            let core = &mut self.cores[c];
            let run = core
                .running
                .as_mut()
                .expect("a core that is not done runs a program");
            // The system calls due before the next reference, then references up to the next.
            Self::calls(run, limit, false, out)?;
            let mut upto = match run.syscalls.get(run.next_call) {
                Some(call) => left.min((call.at - run.read) as usize),
                None => left,
            };
            if self.tick > 0 {
                upto = upto.min((self.tick - core.since_tick) as usize);
            }
            self.scratch.clear();
            let n = run.src.fill(&mut self.scratch, upto)?;
            for r in self.scratch.drain(..) {
                run.read += 1;
                match r {
                    Record::Access(mut a) => {
                        if a.thread.0 != 0 {
                            return Err(format!(
                                "corun: {}: record {}: access of thread {}; only single-thread captures (thread 0) are composed",
                                run.name, run.read - 1, a.thread.0
                            ));
                        }
                        let va = relocate(a.vaddr.0, &run.relocations);
                        if va > limit {
                            return Err(format!(
                                "corun: {}: record {}: address {:#x} (relocated from {:#x}) does not fit the machine's {} address bits",
                                run.name, run.read - 1, va, a.vaddr.0, 64 - limit.leading_zeros()
                            ));
                        }
                        a.vaddr = VirtAddr(va);
                        a.thread = ThreadId(run.thread);
                        out.push(Record::Access(a));
                    }
                    Record::Event(e) => {
                        return Err(format!(
                            "corun: {}: record {}: event {:?}; only captures without events (Lackey's) are composed",
                            run.name, run.read - 1, e
                        ));
                    }
                }
            }
            if n > 0 {
                left = left.saturating_sub(n);
                if self.tick > 0 {
                    core.since_tick += n as u64;
                    if core.since_tick >= self.tick {
                        core.since_tick = 0;
                        out.push(Record::Event(Event::KernelEntry {
                            process: run.thread,
                            path: crate::record::kernel_entry::TICK,
                        }));
                    }
                }
                continue;
            }
            // This program's capture is over: its calls left, its exit, then the next program or
            // the plan's end.
            Self::calls(run, limit, true, out)?;
            let thread = run.thread;
            core.running = None;
            out.push(Record::Event(Event::ThreadExit {
                thread: ThreadId(thread),
            }));
            // Its address space goes with it (the kernel's exit_mmap: the process's
            // translations flushed on every core, `Event::ProcessExit`).
            out.push(Record::Event(Event::ProcessExit { process: thread }));
            core.step += 1;
            if core.step == core.plan.programs.len() {
                if core.plan.repeat {
                    core.step = 0;
                } else {
                    core.done = true;
                    out.push(Record::Event(Event::ContextSwitch {
                        core: CoreId(c as u16),
                        from: ThreadId(thread),
                        to: crate::record::NO_THREAD,
                    }));
                    if c == 0 {
                        self.finished = true;
                    }
                    return Ok(());
                }
            }
            self.start(c, Some(thread), out)?;
        }
        Ok(())
    }

    /// The system calls of `run` due now (every one left when the capture has `ended`) as
    /// events of its process.
    fn calls(
        run: &mut Running,
        limit: u64,
        ended: bool,
        out: &mut Vec<Record>,
    ) -> Result<(), String> {
        while let Some(call) = run.syscalls.get(run.next_call) {
            if !ended && call.at > run.read {
                break;
            }
            let process = run.thread;
            out.push(Record::Event(Event::KernelEntry {
                process,
                path: crate::record::kernel_entry::SYSCALL,
            }));
            if call.kind == SyscallKind::Other {
                run.next_call += 1;
                continue;
            }
            let start = relocate(call.start, &run.relocations);
            if start > limit || call.len > limit - start + 1 {
                return Err(format!(
                    "corun: {}: system call {} ({:#x}, {} bytes, relocated to {:#x}) does not fit the machine's {} address bits",
                    run.name, run.next_call, call.start, call.len, start, 64 - limit.leading_zeros()
                ));
            }
            let start = VirtAddr(start);
            out.push(Record::Event(match call.kind {
                SyscallKind::Munmap => Event::Munmap {
                    process,
                    start,
                    len: call.len,
                },
                SyscallKind::Mprotect { prot } => Event::Mprotect {
                    process,
                    start,
                    len: call.len,
                    prot,
                },
                SyscallKind::Other => unreachable!("handled above"),
            }));
            run.next_call += 1;
        }
        Ok(())
    }

    fn step(&mut self, out: &mut Vec<Record>) -> Result<(), String> {
        if !self.started {
            self.started = true;
            for c in 0..self.cores.len() {
                if !self.cores[c].done {
                    self.start(c, None, out)?;
                }
            }
            return Ok(());
        }
        let c = self.turn;
        self.turn = (self.turn + 1) % self.cores.len();
        if !self.cores[c].done {
            self.turn(c, out)?;
        }
        Ok(())
    }
}

impl RecordSource for Corun {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let (mut buf, mut pos) = (std::mem::take(&mut self.buf), self.pos);
        let n = super::gen::fill_from_steps(&mut buf, &mut pos, out, max, |b| {
            if self.finished {
                return Ok(false);
            }
            self.step(b)?;
            Ok(true)
        });
        (self.buf, self.pos) = (buf, pos);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::writer::write_source;
    use crate::format::WriterOptions;
    use crate::record::Access;
    use crate::source::VecSource;
    use tlblab_types::AccessKind;

    fn capture(dir: &std::path::Path, name: &str, addrs: &[u64]) -> PathBuf {
        let recs: Vec<Record> = addrs
            .iter()
            .map(|&a| Record::Access(Access::new(ThreadId(0), AccessKind::Load, VirtAddr(a), 4)))
            .collect();
        let path = dir.join(name);
        let mut src = VecSource::new(recs);
        write_source(
            &mut src,
            &path,
            &serde_json::json!({}),
            WriterOptions::default(),
        )
        .map_err(|e| e.message)
        .unwrap();
        path
    }

    fn tempdir(what: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tlblab-corun-{what}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn all(mut c: Corun) -> Vec<Record> {
        let mut out = Vec::new();
        while c.fill(&mut out, 7).unwrap() > 0 {}
        out
    }

    fn prog(p: &std::path::Path) -> Program {
        Program {
            capture: p.to_path_buf(),
            relocations: vec![],
            syscalls: vec![],
        }
    }

    /// A system call at reference `at` that changes no mapping.
    fn call(at: u64) -> Syscall {
        Syscall {
            at,
            kind: SyscallKind::Other,
            start: 0,
            len: 0,
        }
    }

    #[test]
    fn given_two_cores_then_turns_alternate_and_core0s_last_program_is_process_0() {
        let d = tempdir("turns");
        let a = capture(&d, "a.tlbt", &[0x1000, 0x2000, 0x3000]);
        let rt = capture(&d, "rt.tlbt", &[0x9000, 0xa000]);
        let bg = capture(&d, "bg.tlbt", &[0x5000]);
        let plans = vec![
            CorePlan {
                programs: vec![prog(&a), prog(&rt)],
                repeat: false,
            },
            CorePlan {
                programs: vec![prog(&bg)],
                repeat: true,
            },
        ];
        let recs = all(Corun::new(plans, 2, 32).unwrap());
        let acc: Vec<(u32, u64)> = recs
            .iter()
            .filter_map(|r| match r {
                Record::Access(a) => Some((a.thread.0, a.vaddr.0)),
                _ => None,
            })
            .collect();
        // Core 0: a (thread 1) then rt (thread 0); core 1: bg looped, a new process each run
        // (threads 2, 3, ...), one reference a run. A turn is 2 references, across a program's
        // end: core 1 runs bg twice a turn, core 0's second turn ends a and starts rt.
        assert_eq!(
            acc,
            vec![
                (1, 0x1000),
                (1, 0x2000),
                (2, 0x5000),
                (3, 0x5000),
                (1, 0x3000),
                (0, 0x9000),
                (4, 0x5000),
                (5, 0x5000),
                (0, 0xa000)
            ]
        );
        assert!(recs.contains(&Record::Event(Event::ThreadStart {
            thread: ThreadId(0),
            process: 0
        })));
        assert!(recs.contains(&Record::Event(Event::ThreadExit {
            thread: ThreadId(1)
        })));
        // Every run that ends tears its address space down, right after its thread's exit (a
        // run is over when its core's next turn finds its capture ended; core 1's last one is
        // still running when core 0's plan ends the composition).
        let exits: Vec<u32> = recs
            .iter()
            .filter_map(|r| match r {
                Record::Event(Event::ProcessExit { process }) => Some(*process),
                _ => None,
            })
            .collect();
        assert_eq!(exits, vec![2, 1, 3, 4, 0]);
        let at = recs
            .iter()
            .position(|r| *r == Record::Event(Event::ProcessExit { process: 1 }))
            .unwrap();
        assert_eq!(
            recs[at - 1],
            Record::Event(Event::ThreadExit {
                thread: ThreadId(1)
            })
        );
        assert!(
            matches!(recs.last(), Some(Record::Event(Event::ContextSwitch { to, .. })) if *to == crate::record::NO_THREAD)
        );
    }

    #[test]
    fn given_an_address_past_the_bits_then_the_error_names_file_and_record() {
        let d = tempdir("bits");
        let rt = capture(&d, "rt.tlbt", &[0x1000, 0x1_0000_0000]);
        let plans = vec![CorePlan {
            programs: vec![prog(&rt)],
            repeat: false,
        }];
        let mut c = Corun::new(plans.clone(), 8, 32).unwrap();
        let mut out = Vec::new();
        let e = loop {
            match c.fill(&mut out, 8) {
                Ok(0) => panic!("no error"),
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert!(
            e.contains("rt.tlbt: record 1") && e.contains("32 address bits"),
            "{e}"
        );
        // Relocated below 4 GiB it composes.
        let plans = vec![CorePlan {
            programs: vec![Program {
                capture: rt,
                relocations: vec![Relocation {
                    lo: 0x1_0000_0000,
                    hi: 0x1_0001_0000,
                    delta: -0x4000_0000,
                }],
                syscalls: vec![],
            }],
            repeat: false,
        }];
        let recs = all(Corun::new(plans, 8, 32).unwrap());
        assert!(recs
            .iter()
            .any(|r| matches!(r, Record::Access(a) if a.vaddr.0 == 0xc000_0000)));
    }

    #[test]
    fn given_system_calls_then_each_comes_at_its_position_as_its_process_event() {
        let d = tempdir("calls");
        let rt = capture(&d, "rt.tlbt", &[0x1000, 0x2000, 0x3000]);
        let call = |at, kind, start| Syscall {
            at,
            kind,
            start,
            len: 0x2000,
        };
        let plans = vec![CorePlan {
            programs: vec![Program {
                capture: rt,
                relocations: vec![Relocation {
                    lo: 0x8000,
                    hi: 0x9000,
                    delta: 0x1000,
                }],
                syscalls: vec![
                    call(0, SyscallKind::Mprotect { prot: 1 }, 0x8000),
                    call(2, SyscallKind::Munmap, 0x4000),
                    call(2, SyscallKind::Munmap, 0x6000),
                    call(9, SyscallKind::Munmap, 0x7000),
                ],
            }],
            repeat: false,
        }];
        // Turns of 2 references: a call at 2 lands at a turn's border, one past the end before
        // the exit.
        let recs = all(Corun::new(plans, 2, 32).unwrap());
        let seq: Vec<String> = recs
            .iter()
            .filter_map(|r| match r {
                Record::Access(a) => Some(format!("a{:x}", a.vaddr.0)),
                Record::Event(Event::Munmap {
                    process: 0,
                    start,
                    len: 0x2000,
                }) => Some(format!("u{:x}", start.0)),
                Record::Event(Event::Mprotect {
                    process: 0,
                    start,
                    len: 0x2000,
                    prot: 1,
                }) => Some(format!("p{:x}", start.0)),
                Record::Event(Event::ProcessExit { .. }) => Some("exit".into()),
                _ => None,
            })
            .collect();
        assert_eq!(
            seq,
            ["p9000", "a1000", "a2000", "u4000", "u6000", "a3000", "u7000", "exit"]
        );
        // Out of order: refused.
        let d2 = capture(&d, "rt2.tlbt", &[0x1000]);
        let e = Corun::new(
            vec![CorePlan {
                programs: vec![Program {
                    capture: d2,
                    relocations: vec![],
                    syscalls: vec![
                        call(2, SyscallKind::Munmap, 0),
                        call(1, SyscallKind::Munmap, 0),
                    ],
                }],
                repeat: false,
            }],
            2,
            32,
        )
        .err()
        .unwrap();
        assert!(e.contains("not in order"), "{e}");
    }

    #[test]
    fn given_a_timer_and_calls_then_each_call_is_an_entry_and_each_core_ticks_every_n_references() {
        let d = tempdir("ticks");
        let rt = capture(&d, "rt.tlbt", &[0x1000, 0x2000, 0x3000, 0x4000, 0x5000]);
        let bg = capture(&d, "bg.tlbt", &[0x1000, 0x2000]);
        let plans = vec![
            CorePlan {
                programs: vec![Program {
                    capture: rt,
                    relocations: vec![],
                    syscalls: vec![
                        call(1),
                        Syscall {
                            at: 4,
                            kind: SyscallKind::Munmap,
                            start: 0x4000,
                            len: 0x1000,
                        },
                    ],
                }],
                repeat: false,
            },
            CorePlan {
                programs: vec![prog(&bg)],
                repeat: true,
            },
        ];
        // Turns of 3 references, a tick every 2 references of a core.
        let recs = all(Corun::new(plans, 3, 32).unwrap().with_tick(2));
        let seq: Vec<String> = recs
            .iter()
            .filter_map(|r| match r {
                Record::Access(a) => Some(format!("{}a{:x}", a.thread.0, a.vaddr.0)),
                Record::Event(Event::KernelEntry { process, path }) => Some(format!(
                    "{process}{}",
                    if *path == 0 { "sys" } else { "tick" }
                )),
                Record::Event(Event::Munmap { process, start, .. }) => {
                    Some(format!("{process}u{:x}", start.0))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            seq,
            [
                // core 0's turn: a reference, the call at 1, a reference, the tick at 2, one more
                "0a1000", "0sys", "0a2000", "0tick", "0a3000",
                // core 1's: two references and a tick, then the next run's first reference
                "1a1000", "1a2000", "1tick", "2a1000",
                // core 0's: the call at 4 (an entry, then its munmap), the tick at 4, the last
                "0a4000", "0tick", "0sys", "0u4000", "0a5000",
            ]
        );
    }

    #[test]
    fn given_an_offset_then_the_core_joins_its_first_program_mid_way_and_loops_from_the_start() {
        let d = tempdir("offsets");
        let rt = capture(&d, "rt.tlbt", &[0x1000, 0x2000]);
        let bg = capture(&d, "bg.tlbt", &[0x1000, 0x2000, 0x3000]);
        let plans = vec![
            CorePlan {
                programs: vec![prog(&rt)],
                repeat: false,
            },
            CorePlan {
                programs: vec![Program {
                    capture: bg.clone(),
                    relocations: vec![],
                    syscalls: vec![call(1), call(2)],
                }],
                repeat: true,
            },
        ];
        let recs = all(Corun::new(plans.clone(), 2, 32)
            .unwrap()
            .with_offsets(&[0, 2]));
        let seq: Vec<String> = recs
            .iter()
            .filter_map(|r| match r {
                Record::Access(a) => Some(format!("{}a{:x}", a.thread.0, a.vaddr.0)),
                Record::Event(Event::KernelEntry { process, .. }) => Some(format!("{process}sys")),
                _ => None,
            })
            .collect();
        // Core 1 starts 2 references in: the call at 1 is dropped, the one at 2 comes first;
        // its next run starts from the beginning.
        assert_eq!(seq, ["0a1000", "0a2000", "1sys", "1a3000", "2a1000"]);
        let e = Corun::new(plans, 2, 32).unwrap().with_offsets(&[0, 4]);
        let mut out = Vec::new();
        let mut e = e;
        let err = e.fill(&mut out, 100).err().unwrap();
        assert!(err.contains("offset 4 is past the end"), "{err}");
    }

    #[test]
    fn given_a_repeating_core0_then_refused() {
        let d = tempdir("repeat");
        let rt = capture(&d, "rt.tlbt", &[0x1000]);
        let e = Corun::new(
            vec![CorePlan {
                programs: vec![prog(&rt)],
                repeat: true,
            }],
            8,
            32,
        )
        .err()
        .unwrap();
        assert!(e.contains("must not repeat"), "{e}");
    }
}
