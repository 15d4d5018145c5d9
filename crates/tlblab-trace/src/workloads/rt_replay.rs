//! Seed 003 §6: the jobs of real task programs, captured under Valgrind, replayed under
//! rate-monotonic scheduling with the phases, periods and execution times of Table 6.1.
//!
//! The capture (`python/tlblab/seeds/s003_tlb_coloring/rt_capture.py`, program `runtime/bench/seed003/rt_tasks.c`) holds
//! one region of interest (`PhaseBegin`/`PhaseEnd` of region 0) per job: first every task's
//! warm-up (job 0) in task order, then each task's periodic jobs in turn. `split_jobs` cuts the
//! capture there, keeping each job's references (instruction fetches, loads, stores) of the
//! thread that marked it, in program order, and moving each address by the relocation that covers it (a native run's ASLR layout:
//! the capture was made under Valgrind, whose layout is fixed).
//!
//! `Replay` schedules them as `rt_taskset::TaskSet` schedules its synthetic jobs: time in 1 µs
//! ticks, releases at phase + k × period, the ready task of the shortest period runs
//! (preempting), each job's references spread evenly over its execution time (a preemption
//! falls where that share of the job's references is done), an unfinished job abandoned at its
//! next release. Job k ≥ 1 of a task replays captured job ((k − 1) mod J) + 1 of its J. Events:
//! `ThreadStart`, `TaskRelease`, `JobStart`, `JobEnd`, `ContextSwitch`; task i is thread i of
//! process 0 (the seed's tasks are pthreads of one process, Alg. 4).
//!
//! Besides the jobs, the replay adds the two 4 KiB pages the seed's kernel (Linux 2.6.32,
//! x86-64, §5) puts in the L1 DTLB around them, at the addresses that kernel gives them (the
//! kernel's image, its direct map, stacks and task structs are 2 MiB pages, which the 4 KiB
//! L1 DTLB does not hold; threads of one process switch without a CR3 write, so nothing is
//! flushed):
//! - `VSYSCALL_GTOD`: after each job the task reads the time (Alg. 4 line 14, `gettimeofday`),
//!   which 2.6.32's vDSO reads from `vsyscall_gtod_data` in the vsyscall page at
//!   `VSYSCALL_ADDR` = -10 MiB (arch/x86/kernel/vmlinux.lds.S: `.vsyscall_gtod_data` follows
//!   `.vsyscall_0` and `.vsyscall_fn` in the first vsyscall page); a user-mode load, outside the
//!   job (Alg. 4 times `t1_job`). Under Valgrind the call is a system call, so the capture lacks it.
//!   2.6.32's vDSO finds that data through a pointer in its own image (arch/x86/vdso/vextern.h,
//!   `VEXTERN(vsyscall_gtod_data)`, patched at boot), so the call first loads from the vDSO's
//!   page (`Replay::with_vdso`: where the native run's kernel put the vDSO; 2.6.32 puts it at a
//!   random page of the 2 MiB above the stack, `vdso_addr`, so its set is as random).
//! - `LOCAL_APIC_EOI`: each release is a timer interrupt (the `nanosleep` of Alg. 4 line 16
//!   expires), which ends by writing the local APIC's EOI register (offset 0xB0, Intel SDM
//!   Vol. 3A Table 10-1) through the fixmap page `FIX_APIC_BASE` (arch/x86/include/asm/fixmap.h
//!   of 2.6.32: after the 2048 vsyscall pages, `VSYSCALL_HPET`, `FIX_DBGP_BASE` and
//!   `FIX_EARLYCON_MEM_BASE`, index 2051 below `FIXADDR_TOP` = -2 MiB - 4 KiB; xAPIC mode,
//!   `CONFIG_PROVIDE_OHCI1394_DMA_INIT` off). The store is made by the thread that runs after
//!   the release, before the job it starts (inside the job it resumes or continues, if any).
//! - The timer tick (`Replay::with_tick`, off unless given): `rt_noise::tick`'s store to the
//!   same page every 10^6 / `tick_hz` µs that finds a task running (NO_HZ stops the tick on an
//!   idle core: kernel/time/tick-sched.c, `tick_nohz_stop_sched_tick`), as the synthetic task
//!   sets do (`rt_taskset`'s `tick_hz`). A tick at a release is the release's interrupt (one
//!   APIC timer interrupt serves every hrtimer due): no second store.
//! - PAPI's reads (`Replay::with_papi`, off unless given): the seed's tasks read their DTLB
//!   counters with PAPI before and after each job (§4.0.3); the captured program calls no PAPI
//!   (its jobs are bracketed by tlblab's region marks, client requests that touch no memory),
//!   so the replay adds each read's user-side references as the synthetic task sets do
//!   (`rt_noise::PapiRead`, PAPI 5.3 on Linux 2.6.32), placed in the native run's layout
//!   (`papi_reads`). A job abandoned at its next release never reached its closing read.
//!
//! The vsyscall page falls in set 0 and the APIC's page in set 12 of the Xeon E5-2650's 16-set
//! L1 DTLB (virtual page number bits 0-3). Kernel addresses are written in the 48 bits the
//! 4-level format translates (the canonical upper half's sign extension dropped: same table
//! indices, same sets).

use super::gen::*;
use super::rt_glibc::{GlibcArena, HEAP_MAX_SIZE};
use super::rt_noise::PapiRead;
use crate::record::{Access, Event};
use crate::source::RecordSource;
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

/// The page of 2.6.32's `vsyscall_gtod_data` (0xffff_ffff_ff60_0000, see the module comment),
/// in 48 bits.
pub const VSYSCALL_GTOD: u64 = 0xffff_ff60_0000;
/// The local APIC's EOI register through 2.6.32's `FIX_APIC_BASE` fixmap page
/// (0xffff_ffff_ff5f_c000 + 0xB0, see the module comment), in 48 bits.
pub const LOCAL_APIC_EOI: u64 = 0xffff_ff5f_c0b0;

fn kernel_ref(thread: usize, kind: AccessKind, va: u64) -> Record {
    Record::Access(Access::new(ThreadId(thread as u32), kind, VirtAddr(va), 4))
}

/// One task: timing in µs and its captured jobs (index 0 the warm-up).
#[derive(Clone, Debug)]
pub struct ReplayTask {
    pub phase_us: u64,
    pub period_us: u64,
    pub exec_us: u64,
    pub jobs: Vec<Vec<Access>>,
}

/// Moves an address in `[lo, hi)` by `delta` bytes.
#[derive(Clone, Copy, Debug)]
pub struct Relocation {
    pub lo: u64,
    pub hi: u64,
    pub delta: i64,
}

/// A `Relocation::delta` that removes the references in its range instead of moving them: a
/// mapping the native process does not have (Valgrind's preload libraries, which the dynamic
/// loader's symbol lookups search first under Valgrind only).
pub const DROP: i64 = i64::MIN;

fn dropped(a: u64, rel: &[Relocation]) -> bool {
    rel.iter()
        .find(|r| a >= r.lo && a < r.hi)
        .is_some_and(|r| r.delta == DROP)
}

pub(crate) fn relocate(a: u64, rel: &[Relocation]) -> u64 {
    for r in rel {
        if a >= r.lo && a < r.hi {
            return a.wrapping_add(r.delta as u64);
        }
    }
    a
}

/// Cuts a capture of `tasks` tasks with `jobs` periodic jobs each into per-task job lists
/// (warm-ups first, in task order, then each task's jobs in turn), relocating every address.
/// `name` names the capture in errors.
pub fn split_jobs(
    src: &mut dyn RecordSource,
    name: &str,
    tasks: usize,
    jobs: usize,
    rel: &[Relocation],
) -> Result<Vec<Vec<Vec<Access>>>, String> {
    let mut regions: Vec<Vec<Access>> = Vec::new();
    let mut open = false;
    crate::source::for_each_record(src, 8192, |r| match r {
        Record::Event(Event::PhaseBegin { region: 0 }) if !open => {
            open = true;
            regions.push(Vec::new());
        }
        Record::Event(Event::PhaseEnd { region: 0 }) if open => open = false,
        Record::Access(a) if open && !dropped(a.vaddr.0, rel) => {
            let mut a = *a;
            a.vaddr = VirtAddr(relocate(a.vaddr.0, rel));
            regions.last_mut().expect("a region is open").push(a);
        }
        _ => {}
    })?;
    // A region holds the references of the thread that marked it: under Valgrind another
    // thread may run inside it (a task finishing its hand-over, a thread's exit, main binding
    // `pthread_join` in the PLT while the last task warms up), and its references are not the
    // job's. The marking thread is the one whose reference comes first: the mark is a client
    // request, and Valgrind switches threads only at system calls and every 100,000
    // superblocks, never at a client request. (Counting references instead gave the 3-task
    // set's last warm-up to main, whose lazy binding outnumbered the task's own references.)
    for region in regions.iter_mut() {
        if let Some(owner) = region.first().map(|a| a.thread.0) {
            region.retain(|a| a.thread.0 == owner);
        }
    }
    let want = tasks * (jobs + 1);
    if regions.len() != want {
        return Err(format!(
            "{name}: expected {want} regions of interest ({tasks} warm-ups and {jobs} jobs of each of {tasks} tasks), found {}",
            regions.len()
        ));
    }
    let mut it = regions.into_iter();
    let mut out: Vec<Vec<Vec<Access>>> = (0..tasks)
        .map(|_| vec![it.next().expect("counted")])
        .collect();
    for task in out.iter_mut() {
        task.extend(it.by_ref().take(jobs));
    }
    Ok(out)
}

/// Opens the capture at `path` and builds the replay of its jobs: `timing` is each task's
/// (phase, period, execution) in µs, `jobs` the periodic jobs captured per task.
pub fn from_capture(
    path: &std::path::Path,
    timing: &[(u64, u64, u64)],
    jobs: usize,
    rel: &[Relocation],
    hyperperiods: u64,
    vdso: Option<u64>,
    tick_hz: u64,
) -> Result<Replay, String> {
    let (mut src, _meta, _fmt) = crate::convert::open_source_with(path, None, Default::default())?;
    let name = path.display().to_string();
    let captured = split_jobs(src.as_mut(), &name, timing.len(), jobs, rel)?;
    let tasks = timing
        .iter()
        .zip(captured)
        .map(|(&(phase_us, period_us, exec_us), jobs)| ReplayTask {
            phase_us,
            period_us,
            exec_us,
            jobs,
        })
        .collect();
    Replay::new(tasks, hyperperiods)?
        .with_vdso(vdso)
        .with_tick(tick_hz)
}

/// PAPI's reads of each task in a native run's layout (`Replay::with_papi`): `libc_data` is
/// glibc's writable data page, `map` the page of the EventSet map, and per task its glibc
/// arena's heap (any address in it) and the page buffers the task `malloc`ed there before
/// PAPI's per-thread objects. The replay cannot move the captured buffers, so PAPI's objects
/// come after them (the order the synthetic sets' `papi = 2` takes), where glibc 2.12 places
/// them (`rt_glibc::GlibcArena`).
pub fn papi_reads(libc_data: u64, map: u64, arenas: &[(u64, u64)]) -> Vec<PapiRead> {
    arenas
        .iter()
        .map(|&(heap, buffers)| {
            let base = heap & !(HEAP_MAX_SIZE - 1);
            // `GlibcArena::new` takes the heap above the first; the large chunks' `mmap`s do
            // not occur (PAPI's objects are all below the threshold).
            let mut arena = GlibcArena::new(base + HEAP_MAX_SIZE, 0, base);
            for _ in 0..buffers {
                arena.malloc(4096);
            }
            PapiRead::allocate_at(&mut arena, libc_data, map)
        })
        .collect()
}

/// The rate-monotonic replay of captured jobs (see the module comment).
pub struct Replay {
    tasks: Vec<ReplayTask>,
    end: u64,
    t: u64,
    warm: bool,
    running: Option<usize>,
    job: Vec<u32>,
    remaining: Vec<u64>,
    started: Vec<bool>,
    cursor: Vec<usize>,
    vdso: Option<u64>,
    /// µs between timer ticks (0: none).
    tick_us: u64,
    /// Per task, what its `PAPI_read`s touch (empty: no PAPI reads).
    papi: Vec<PapiRead>,
}

impl Replay {
    /// `hyperperiods` hyperperiods of the task set after the warm-up.
    pub fn new(tasks: Vec<ReplayTask>, hyperperiods: u64) -> Result<Self, String> {
        if tasks.is_empty() {
            return Err("rt replay: the task set is empty".into());
        }
        for (i, t) in tasks.iter().enumerate() {
            if t.period_us == 0 || t.exec_us == 0 || t.jobs.len() < 2 {
                return Err(format!(
                    "rt replay: task {}: period and execution time must be positive and a warm-up and at least one job captured (period {} µs, execution {} µs, {} jobs)",
                    i + 1,
                    t.period_us,
                    t.exec_us,
                    t.jobs.len()
                ));
            }
        }
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let hyper = tasks
            .iter()
            .fold(1u64, |h, t| h / gcd(h, t.period_us) * t.period_us);
        let n = tasks.len();
        Ok(Replay {
            end: hyper * hyperperiods,
            tasks,
            t: 0,
            warm: false,
            running: None,
            job: vec![0; n],
            remaining: vec![0; n],
            started: vec![false; n],
            cursor: vec![0; n],
            vdso: None,
            tick_us: 0,
            papi: Vec::new(),
        })
    }

    /// `tick_hz` timer ticks a second while a task runs (0: none; see the module comment).
    pub fn with_tick(mut self, tick_hz: u64) -> Result<Self, String> {
        if tick_hz > 0 && !1_000_000u64.is_multiple_of(tick_hz) {
            return Err(format!(
                "rt replay: tick_hz must divide 1000000 (a whole number of µs between ticks), got {tick_hz}"
            ));
        }
        self.tick_us = 1_000_000u64.checked_div(tick_hz).unwrap_or(0);
        Ok(self)
    }

    /// PAPI's reads around every job (see the module comment): one `PapiRead` per task
    /// (`papi_reads`), or none.
    pub fn with_papi(mut self, papi: Vec<PapiRead>) -> Result<Self, String> {
        if !papi.is_empty() && papi.len() != self.tasks.len() {
            return Err(format!(
                "rt replay: PAPI's reads are given for {} tasks, the task set has {}",
                papi.len(),
                self.tasks.len()
            ));
        }
        self.papi = papi;
        Ok(self)
    }

    /// Task `i`'s job boundary with its `PAPI_read` around it, if any.
    fn job_mark(&self, i: usize, mark: Event, out: &mut Vec<Record>) {
        PapiRead::around(self.papi.get(i), i, mark, out);
    }

    /// The vDSO's address in the replayed layout: each `gettimeofday` loads its pointer to
    /// the time data there first (see the module comment). None: not in the layout.
    pub fn with_vdso(mut self, vdso: Option<u64>) -> Self {
        self.vdso = vdso;
        self
    }

    /// What Alg. 4's `gettimeofday` (line 14) loads after task `i`'s job: the vDSO's pointer,
    /// then the vsyscall page's time data.
    fn read_time(&self, i: usize, out: &mut Vec<Record>) {
        if let Some(v) = self.vdso {
            out.push(kernel_ref(i, AccessKind::Load, v));
        }
        out.push(kernel_ref(i, AccessKind::Load, VSYSCALL_GTOD));
    }

    fn current(&self, i: usize) -> &[Access] {
        let t = &self.tasks[i];
        let j = self.job[i] as usize;
        if j == 0 {
            &t.jobs[0]
        } else {
            &t.jobs[1 + (j - 1) % (t.jobs.len() - 1)]
        }
    }

    /// Emits task `i`'s references up to `upto` of its current job.
    fn emit(&mut self, i: usize, upto: usize, out: &mut Vec<Record>) {
        let from = self.cursor[i];
        let job = self.current(i);
        let upto = upto.min(job.len());
        out.extend(job[from.min(upto)..upto].iter().map(|a| {
            let mut a = *a;
            a.thread = ThreadId(i as u32);
            Record::Access(a)
        }));
        self.cursor[i] = upto.max(from);
    }

    fn switch_to(&mut self, to: Option<usize>, out: &mut Vec<Record>) {
        switch_running(&mut self.running, to, out);
    }
}

impl Generator for Replay {
    fn regions(&self) -> Vec<String> {
        Vec::new()
    }

    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        let n = self.tasks.len();
        if !self.warm {
            self.warm = true;
            for i in 0..n {
                out.push(ev(Event::ThreadStart {
                    thread: ThreadId(i as u32),
                    process: 0,
                }));
            }
            // Job 0, the warm-up, in task order (the tasks' t_init, Alg. 4 line 12).
            for i in 0..n {
                self.switch_to(Some(i), out);
                self.job_mark(
                    i,
                    Event::JobStart {
                        task: i as u32,
                        job: 0,
                    },
                    out,
                );
                self.cursor[i] = 0;
                self.emit(i, usize::MAX, out);
                self.job_mark(
                    i,
                    Event::JobEnd {
                        task: i as u32,
                        job: 0,
                    },
                    out,
                );
                self.read_time(i, out);
            }
            return true;
        }
        if self.t >= self.end {
            return false;
        }
        let stop = (self.t + 1000).min(self.end);
        while self.t < stop {
            let t = self.t;
            let mut released = false;
            for i in 0..n {
                let (ph, pe, ex) = (
                    self.tasks[i].phase_us,
                    self.tasks[i].period_us,
                    self.tasks[i].exec_us,
                );
                if t >= ph && (t - ph).is_multiple_of(pe) {
                    if self.remaining[i] > 0 && self.started[i] {
                        out.push(ev(Event::JobEnd {
                            task: i as u32,
                            job: self.job[i],
                        }));
                    }
                    self.job[i] += 1;
                    out.push(ev(Event::TaskRelease {
                        task: i as u32,
                        job: self.job[i],
                    }));
                    self.remaining[i] = ex;
                    self.started[i] = false;
                    self.cursor[i] = 0;
                    released = true;
                }
            }
            let pick = (0..n)
                .filter(|&i| self.remaining[i] > 0)
                .min_by_key(|&i| (self.tasks[i].period_us, i));
            self.switch_to(pick, out);
            if let Some(i) = pick {
                let tick = self.tick_us > 0 && t.is_multiple_of(self.tick_us);
                if released || tick {
                    out.push(kernel_ref(i, AccessKind::Store, LOCAL_APIC_EOI));
                }
                if !self.started[i] {
                    self.started[i] = true;
                    self.job_mark(
                        i,
                        Event::JobStart {
                            task: i as u32,
                            job: self.job[i],
                        },
                        out,
                    );
                }
                let ex = self.tasks[i].exec_us;
                self.remaining[i] -= 1;
                let done_us = ex - self.remaining[i];
                let len = self.current(i).len() as u64;
                let upto = (len * done_us).div_ceil(ex) as usize;
                self.emit(i, upto, out);
                if self.remaining[i] == 0 {
                    self.job_mark(
                        i,
                        Event::JobEnd {
                            task: i as u32,
                            job: self.job[i],
                        },
                        out,
                    );
                    self.read_time(i, out);
                }
            }
            self.t += 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::VecSource;

    fn acc(a: u64) -> Access {
        Access::new(ThreadId(7), AccessKind::Load, VirtAddr(a), 4)
    }

    fn job(pages: &[u64]) -> Vec<Access> {
        pages.iter().map(|&p| acc(p)).collect()
    }

    #[test]
    fn given_two_tasks_when_split_then_warm_ups_come_first_and_addresses_move() {
        let mut recs = Vec::new();
        for k in 0..6u64 {
            recs.push(ev(Event::PhaseBegin { region: 0 }));
            recs.push(Record::Access(acc(0x1000 * (k + 1))));
            recs.push(Record::Access(acc(0xdead_0040))); // in a dropped mapping: dropped
            recs.push(Record::Access(acc(0x1000 * (k + 1))));
            // another thread inside the region, with more references than the marking
            // thread (main binding a symbol while a task warms up): dropped
            for _ in 0..3 {
                let mut other = acc(0xbeef_0000);
                other.thread = ThreadId(3);
                recs.push(Record::Access(other));
            }
            recs.push(ev(Event::PhaseEnd { region: 0 }));
            recs.push(Record::Access(acc(0xdead_0000))); // outside: dropped
        }
        let rel = [
            Relocation {
                lo: 0x3000,
                hi: 0x4000,
                delta: 0x10_0000,
            },
            // a mapping only Valgrind has: its references go
            Relocation {
                lo: 0xdead_0000,
                hi: 0xdead_1000,
                delta: DROP,
            },
        ];
        let mut src = VecSource::new(recs);
        let jobs = split_jobs(&mut src, "t", 2, 2, &rel).unwrap();
        let addrs: Vec<Vec<u64>> = jobs
            .iter()
            .map(|t| t.iter().map(|j| j[0].vaddr.0).collect())
            .collect();
        assert!(jobs.iter().flatten().all(|j| j.len() == 2));
        assert_eq!(
            addrs,
            vec![
                vec![0x1000, 0x10_3000, 0x4000],
                vec![0x2000, 0x5000, 0x6000]
            ]
        );
        let mut src = VecSource::new(vec![ev(Event::PhaseBegin { region: 0 })]);
        assert!(split_jobs(&mut src, "t", 2, 2, &rel)
            .unwrap_err()
            .contains("expected 6 regions"));
    }

    /// T1 (phase 1, period 2, exec 1) over T2 (phase 0, period 4, exec 2): T2's 10-reference
    /// job is preempted once by T1's 2-reference job.
    fn preempted_pair() -> (ReplayTask, ReplayTask) {
        let t1 = ReplayTask {
            phase_us: 1,
            period_us: 2,
            exec_us: 1,
            jobs: vec![job(&[0x1000]), job(&[0x2000, 0x2000])],
        };
        let t2 = ReplayTask {
            phase_us: 0,
            period_us: 4,
            exec_us: 2,
            jobs: vec![job(&[0x9000]), job(&[0x8000; 10])],
        };
        (t1, t2)
    }

    #[test]
    fn given_a_long_low_priority_job_when_replayed_then_it_is_preempted_and_resumes_where_it_was() {
        // T1 (phase 1, period 2, exec 1) over T2 (phase 0, period 4, exec 2): T2 runs [0,1),
        // T1 [1,2), T2 [2,3), T1 [3,4); T2's 10 references split 5 + 5 around the preemption.
        // Each release's interrupt writes the APIC's page before the released job, each
        // finished job reads the vsyscall page.
        let (t1, t2) = preempted_pair();
        let mut g = Replay::new(vec![t1, t2], 1)
            .unwrap()
            .with_vdso(Some(0x7fff_0000));
        let mut out = Vec::new();
        while g.step(&mut out) {}
        let seq: Vec<String> = out
            .iter()
            .filter_map(|r| match r {
                Record::Access(a) if a.vaddr.0 == VSYSCALL_GTOD => {
                    Some(format!("{}:gtod", a.thread.0))
                }
                Record::Access(a) if a.vaddr.0 == 0x7fff_0000 => {
                    Some(format!("{}:vdso", a.thread.0))
                }
                Record::Access(a) if a.vaddr.0 == LOCAL_APIC_EOI => {
                    assert_eq!(a.kind, AccessKind::Store);
                    Some(format!("{}:eoi", a.thread.0))
                }
                Record::Access(a) => Some(format!("{}:{:x}", a.thread.0, a.vaddr.0)),
                Record::Event(Event::JobEnd { task, job }) => Some(format!("end{task}.{job}")),
                _ => None,
            })
            .collect();
        let mut want = vec![
            "0:1000", "end0.0", "0:vdso", "0:gtod", "1:9000", "end1.0", "1:vdso", "1:gtod", "1:eoi",
        ];
        want.extend(["1:8000"; 5]);
        want.extend(["0:eoi", "0:2000", "0:2000", "end0.1", "0:vdso", "0:gtod"]);
        want.extend(["1:8000"; 5]);
        want.extend(["end1.1", "1:vdso", "1:gtod"]);
        want.extend(["0:eoi", "0:2000", "0:2000", "end0.2", "0:vdso", "0:gtod"]);
        assert_eq!(seq, want);
        // Linux's pages fall in sets 0 and 12 of a 16-set DTLB.
        assert_eq!(
            ((VSYSCALL_GTOD >> 12) & 15, (LOCAL_APIC_EOI >> 12) & 15),
            (0, 12)
        );
    }

    #[test]
    fn given_a_tick_when_a_job_runs_then_each_tick_it_spans_writes_the_apic_page_and_none_idle() {
        // One task, period 1,000 µs, 300 µs of execution, ticks every 100 µs: each job is
        // released at k x 1,000 (the release's interrupt: one store), runs [k x 1,000, +300)
        // and takes the ticks at +100 and +200; the core is idle from +300 (no tick).
        let t = ReplayTask {
            phase_us: 0,
            period_us: 1000,
            exec_us: 300,
            jobs: vec![job(&[0x1000]), job(&[0x2000])],
        };
        let eois = |tick_hz| {
            let mut g = Replay::new(vec![t.clone()], 3)
                .unwrap()
                .with_tick(tick_hz)
                .unwrap();
            let mut out = Vec::new();
            while g.step(&mut out) {}
            out.iter()
                .filter(|r| matches!(r, Record::Access(a) if a.vaddr.0 == LOCAL_APIC_EOI))
                .count()
        };
        assert_eq!(eois(0), 3);
        assert_eq!(eois(10_000), 9);
        assert!(Replay::new(vec![t.clone()], 1)
            .unwrap()
            .with_tick(7)
            .is_err());
    }

    #[test]
    fn given_papi_when_replayed_then_each_job_window_holds_its_12_counted_reads_and_the_rest_is_unchanged(
    ) {
        // T1 (period 2, exec 1) over T2 (period 4, exec 2), one hyperperiod: T1's jobs 1 and 2
        // finish, T2's job 1 is preempted once and finishes. PAPI 5.3's read (rt_noise::PapiRead)
        // is 9 loads before the counters stop, 2 stores while stopped, 3 loads after the
        // restart: a job's window (JobStart..JobEnd) counts the opening read's 3 and the closing
        // read's 9, and each job adds 28 references in all. T2's preemption does not split a
        // read. The trace without the PAPI references is the trace without PAPI.
        let (t1, t2) = preempted_pair();
        // Each task's arena: 3 page buffers, then PAPI's objects (glibc 2.12's chunks).
        let papi = papi_reads(
            0x7f00_1234_5000,
            0x60_2000,
            &[(0x7f10_0000_0040, 3), (0x7f14_0000_0000, 3)],
        );
        let run = |papi: Vec<PapiRead>| {
            let mut g = Replay::new(vec![t1.clone(), t2.clone()], 1)
                .unwrap()
                .with_papi(papi)
                .unwrap();
            let mut out = Vec::new();
            while g.step(&mut out) {}
            out
        };
        let (plain, with) = (run(Vec::new()), run(papi.clone()));
        let ours: std::collections::HashSet<u64> = papi
            .iter()
            .flat_map(|p| p.head.iter().chain(&p.stop).chain(&p.tail).map(|r| r.0))
            .collect();
        let is_papi = |r: &Record| matches!(r, Record::Access(a) if ours.contains(&a.vaddr.0));
        // 2 warm-ups and 3 jobs, 28 references each
        assert_eq!(with.iter().filter(|r| is_papi(r)).count(), 5 * 28);
        assert!(!plain.iter().any(is_papi));
        let rest: Vec<&Record> = with.iter().filter(|r| !is_papi(r)).collect();
        assert_eq!(rest, plain.iter().collect::<Vec<_>>());
        // In each job's window: its own task's 12 counted reads, 9 + 3 of them loads.
        let mut open: Vec<Option<u32>> = vec![None; 2];
        let mut counted = vec![Vec::new(); 2];
        for r in &with {
            match r {
                Record::Event(Event::JobStart { task, .. }) => open[*task as usize] = Some(0),
                Record::Event(Event::JobEnd { task, .. }) => {
                    counted[*task as usize].push(open[*task as usize].take().unwrap())
                }
                Record::Access(a) if is_papi(r) => {
                    assert_eq!(
                        a.kind == AccessKind::Store,
                        papi[a.thread.0 as usize]
                            .stop
                            .iter()
                            .any(|s| s.0 == a.vaddr.0)
                    );
                    if let Some(n) = open[a.thread.0 as usize].as_mut() {
                        *n += 1;
                    }
                }
                _ => {}
            }
        }
        assert_eq!(counted, vec![vec![12, 12, 12], vec![12, 12]]);
        // The objects follow the 3 buffers (0x8c0 + 3 x 4112 into the 64 MiB-aligned heap),
        // libpapi's pages are the two below libc's data page.
        assert_eq!(papi[0].head[3].0, 0x7f10_0000_0000 + 0x8c0 + 3 * 4112 + 24);
        assert_eq!(papi[0].head[0].0, 0x7f00_1234_5000 - 0x1000 + 0x40);
        assert_eq!(papi[0].head[1].0, 0x60_2000 + 0x10);
        assert!(Replay::new(vec![t1.clone()], 1)
            .unwrap()
            .with_papi(papi)
            .is_err());
    }
}
