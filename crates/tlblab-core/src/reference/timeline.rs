//! The reference's records: one access, the run over every hardware thread's queue (always
//! the smallest clock next, an event once every access before it ran), warm-up, and the
//! companions a twin runs on the timeline.

use super::*;

impl ReferenceModel {
    /// `access(kind, va)` of thread 0 (the one `new` binds), one reference within a page.
    pub fn access(&mut self, kind: AccessKind, va: u64) -> RefOutcome {
        let mut out = RefOutcome::default();
        self.step_with(Access::new(ThreadId(0), kind, VirtAddr(va), 1), &mut out)
            .expect("the reference's access");
        out
    }

    /// One access of any thread, as `System::access`: a thread not running on its hardware
    /// thread is switched in first; an access crossing a 4 KiB boundary is two references.
    /// Returns the cycles of its references.
    pub fn step(&mut self, a: Access) -> Result<u64, String> {
        self.step_with(a, &mut RefOutcome::default())
    }

    pub(super) fn step_with(&mut self, a: Access, out: &mut RefOutcome) -> Result<u64, String> {
        let (mut space, cpu) = self.thread(a.thread)?;
        if self.cpus[cpu].current != Some(a.thread.0) {
            self.context_switch(cpu, Some(a.thread.0))?;
            space = self.thread(a.thread)?.0;
        }
        let off = a.vaddr.0 % 4096;
        if a.size > 1 && off + a.size as u64 > 4096 {
            let c1 = self.reference(cpu, space, a.kind, a.vaddr.0, out)?;
            *out = RefOutcome::default();
            let c2 = self.reference(cpu, space, a.kind, a.vaddr.0 + 4096 - off, out)?;
            return Ok(c1 + c2);
        }
        self.reference(cpu, space, a.kind, a.vaddr.0, out)
    }

    /// Runs `records` as `System::run` does (ARCHITECTURE.md "The engine in one paragraph", the multi-core timeline): in trace
    /// order while only the first hardware thread to have work has had any; from the first
    /// access of another on, every access waits in its hardware thread's queue and the one
    /// with the smallest clock (the lowest index among equals) runs its oldest; an event
    /// first runs every queued access. Nothing runs once `max_references` references have.
    /// (`run`'s look-ahead is a window of 64 Ki records: longer traces drain more often there.)
    pub fn run(&mut self, records: &[Record]) -> Result<(), String> {
        let limit = match self.opts.max_references {
            0 => u64::MAX,
            n => n,
        };
        // A technique's twin rewrites the records first, as its allocator would have placed
        // them (`Technique::on_batch`).
        let transformed;
        let records = match self.twin.as_mut() {
            Some(t) => {
                transformed = t.on_records(records)?;
                &transformed[..]
            }
            None => records,
        };
        self.check_warmup();
        let mut queues: Vec<VecDeque<Access>> = vec![VecDeque::new(); self.cpus.len()];
        let mut first_cpu = None;
        let mut multi = false;
        for &r in records {
            match r {
                Record::Access(a) => {
                    let cpu = self.thread(a.thread)?.1;
                    if !multi && *first_cpu.get_or_insert(cpu) != cpu {
                        multi = true;
                    }
                    if multi {
                        queues[cpu].push_back(a);
                    } else if self.references < limit {
                        self.companion_before(cpu)?;
                        self.step_record(a)?;
                        self.check_warmup();
                    }
                }
                Record::Event(e) => {
                    self.drain(&mut queues, limit)?;
                    if self.references >= limit {
                        return Ok(());
                    }
                    self.event(e)?;
                }
            }
        }
        self.drain(&mut queues, limit)
    }

    pub(super) fn drain(
        &mut self,
        queues: &mut [VecDeque<Access>],
        limit: u64,
    ) -> Result<(), String> {
        while self.references < limit {
            let next = (0..queues.len())
                .filter(|&c| !queues[c].is_empty())
                .min_by_key(|&c| (self.cpus[c].clock, c));
            let Some(c) = next else { break };
            let a = queues[c].pop_front().expect("not empty");
            self.companion_before(c)?;
            self.step_record(a)?;
            self.check_warmup();
        }
        Ok(())
    }

    /// `step` of one of the records' accesses: its references are charged the program's
    /// instructions before them (`timing.mlp.issue_instructions`), a twin's agents' are not.
    fn step_record(&mut self, a: Access) -> Result<u64, String> {
        self.stepping_record = true;
        let r = self.step(a);
        self.stepping_record = false;
        r
    }

    /// A technique's own hardware threads (pt_baker's helper, seed 001 §4.1) run up to the
    /// time of hardware thread `cpu`, whose access runs next, so that their loads and the
    /// records' meet the shared caches in time order (`Technique::on_clock`).
    pub(super) fn companion_before(&mut self, cpu: usize) -> Result<(), String> {
        if let Some(mut twin) = self.twin.take() {
            let until = self.cpus[cpu].clock;
            let r = twin.on_clock(self, until);
            self.twin = Some(twin);
            r?;
        }
        Ok(())
    }
}
