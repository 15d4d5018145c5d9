//! Round-robin scheduling with a quantum over the machine's hardware threads.
//!
//! Each software thread brings its own record stream. A hardware thread runs its current thread
//! until the quantum (in cycles) expires or the thread's stream ends, then takes the next ready
//! thread from one global FIFO queue (or its own queue when threads are pinned). With `rotate`,
//! a thread whose quantum expired moves to the next hardware thread round-robin instead — the
//! forced migration of seed 000 §8 ("run on the next core"). As everywhere, the hardware thread
//! with the smallest clock advances first. Context switches and migrations go through the
//! system's switch and migration policies.

use crate::system::{SimError, System};
use std::collections::VecDeque;
use tlblab_trace::{Record, RecordSource};
use tlblab_types::ThreadId;

/// A software thread for the scheduler.
pub struct RrThread {
    pub thread: ThreadId,
    /// Address space (process) index; created on demand.
    pub process: u32,
    /// Pin to this hardware thread (None = any).
    pub pinned: Option<usize>,
    pub source: Box<dyn RecordSource + Send>,
}

#[derive(Clone, Copy, Debug)]
pub struct RrConfig {
    pub quantum_cycles: u64,
    /// After each quantum, move the thread to the next hardware thread (seed 000 §8).
    pub rotate: bool,
}

struct Live {
    t: RrThread,
    buf: Vec<Record>,
    pos: usize,
    done: bool,
    /// Hardware thread it last ran on.
    last_cpu: Option<usize>,
}

impl Live {
    /// Whether the stream has no more records (refilling the buffer to find out).
    fn exhausted(&mut self) -> Result<bool, SimError> {
        if self.pos == self.buf.len() && !self.done {
            self.buf.clear();
            self.pos = 0;
            if self.t.source.fill(&mut self.buf, 4096).map_err(SimError)? == 0 {
                self.done = true;
            }
        }
        Ok(self.pos == self.buf.len())
    }

    /// The next record, refilling from the stream.
    fn next(&mut self) -> Result<Option<Record>, SimError> {
        if self.exhausted()? {
            return Ok(None);
        }
        self.pos += 1;
        Ok(Some(self.buf[self.pos - 1]))
    }
}

/// Runs `threads` to completion under round-robin scheduling.
pub fn run_round_robin(
    sys: &mut System,
    threads: Vec<RrThread>,
    cfg: RrConfig,
) -> Result<(), SimError> {
    if cfg.quantum_cycles == 0 {
        return Err(SimError(
            "round-robin: quantum_cycles must be positive".into(),
        ));
    }
    let ncpu = sys.cpu_count();
    let mut live: Vec<Live> = Vec::new();
    for t in threads {
        let space = {
            while sys.spaces.len() <= t.process as usize {
                sys.create_space()?;
            }
            t.process as usize
        };
        let cpu = t.pinned.unwrap_or(0) % ncpu;
        sys.bind_thread(t.thread, space, cpu);
        live.push(Live {
            t,
            buf: Vec::new(),
            pos: 0,
            done: false,
            last_cpu: None,
        });
    }
    // Ready queues: one global, plus one per hardware thread for pinned and rotated threads.
    let mut global: VecDeque<usize> = VecDeque::new();
    let mut local: Vec<VecDeque<usize>> = vec![VecDeque::new(); ncpu];
    for (i, l) in live.iter().enumerate() {
        match l.t.pinned {
            Some(c) => local[c % ncpu].push_back(i),
            None => global.push_back(i),
        }
    }
    let mut running: Vec<Option<(usize, u64)>> = vec![None; ncpu]; // (thread index, slice start)
    let mut remaining = live.len();
    while remaining > 0 {
        // Give idle hardware threads work.
        for c in 0..ncpu {
            if running[c].is_none() {
                let next = local[c].pop_front().or_else(|| global.pop_front());
                if let Some(i) = next {
                    let th = live[i].t.thread;
                    if let Some(prev) = live[i].last_cpu.filter(|&p| p != c) {
                        let _ = prev;
                        sys.migrate(th, c)?;
                    } else {
                        sys.bind_thread_cpu(th, c)?;
                    }
                    sys.context_switch(c, Some(th))?;
                    live[i].last_cpu = Some(c);
                    running[c] = Some((i, sys.clock(c)));
                }
            }
        }
        // Advance the busy hardware thread with the smallest clock by one record.
        let Some(c) = (0..ncpu)
            .filter(|&c| running[c].is_some())
            .min_by_key(|&c| sys.clock(c))
        else {
            break;
        };
        let (i, start) = running[c].unwrap();
        match live[i].next()? {
            Some(Record::Access(mut a)) => {
                a.thread = live[i].t.thread;
                sys.access(a)?;
            }
            Some(Record::Event(e)) => sys.event(e)?,
            None => {
                remaining -= 1;
                running[c] = None;
                sys.context_switch(c, None)?;
                continue;
            }
        }
        if live[i].exhausted()? {
            // Finished: leave the core idle rather than requeue a thread with nothing to run.
            remaining -= 1;
            running[c] = None;
            sys.context_switch(c, None)?;
        } else if sys.clock(c) - start >= cfg.quantum_cycles {
            running[c] = None;
            let target = if cfg.rotate {
                Some((c + 1) % ncpu)
            } else {
                live[i].t.pinned.map(|p| p % ncpu)
            };
            match target {
                Some(t) => local[t].push_back(i),
                None => global.push_back(i),
            }
        }
    }
    Ok(())
}
