//! Helper threads: a thread bound to a hardware thread that generates its own access stream at a
//! rate — bursts of `burst` accesses, then a pause of `pause_cycles` — competing with the
//! application in the shared caches on the common timeline. This is what the PT-Baker model
//! needs (seed 001 §4: a helper touching the application's region, with NOP/sleep throttling).

use crate::system::{SimError, System};
use tlblab_trace::{Record, RecordSource};
use tlblab_types::ThreadId;

pub struct HelperThread {
    pub thread: ThreadId,
    /// Address space it runs in (the application's, for a user-level warmer).
    pub space: usize,
    pub cpu: usize,
    pub burst: u64,
    pub pause_cycles: u64,
    pub source: Box<dyn RecordSource + Send>,
}

/// Runs the application's `app` records alongside `helpers` until the application's stream
/// ends (a helper whose own stream ends simply stops). Before each application access, every
/// helper whose clock is behind the application's runs, smallest clock first, so the helpers'
/// loads reach the shared caches in time order with the application's.
pub fn run_with_helpers(
    sys: &mut System,
    app: &mut dyn RecordSource,
    mut helpers: Vec<HelperThread>,
) -> Result<(), SimError> {
    for h in &helpers {
        if h.cpu >= sys.cpu_count() {
            return Err(SimError(format!(
                "helper thread {}: cpu {} does not exist (machine has {})",
                h.thread.0,
                h.cpu,
                sys.cpu_count()
            )));
        }
        if h.burst == 0 {
            return Err(SimError(format!(
                "helper thread {}: burst must be positive",
                h.thread.0
            )));
        }
        sys.bind_thread(h.thread, h.space, h.cpu);
    }
    let mut app_buf: Vec<Record> = Vec::new();
    let mut app_pos = 0;
    let mut bufs: Vec<(Vec<Record>, usize, bool, u64)> =
        helpers.iter().map(|_| (Vec::new(), 0, false, 0)).collect();
    let app_cpu = |sys: &mut System, r: &Record| -> Result<Option<usize>, SimError> {
        match r {
            Record::Access(a) => Ok(Some(sys.thread_cpu(a.thread)?)),
            Record::Event(_) => Ok(None),
        }
    };
    loop {
        if app_pos == app_buf.len() {
            app_buf.clear();
            app_pos = 0;
            if app.fill(&mut app_buf, 4096).map_err(SimError)? == 0 {
                return Ok(());
            }
        }
        let r = app_buf[app_pos];
        let Some(acpu) = app_cpu(sys, &r)? else {
            if let Record::Event(e) = r {
                sys.event(e)?;
            }
            app_pos += 1;
            continue;
        };
        // Run every helper that is behind the application in time.
        loop {
            let mut best: Option<usize> = None;
            for (k, h) in helpers.iter().enumerate() {
                if !bufs[k].2
                    && sys.clock(h.cpu) < sys.clock(acpu)
                    && best.is_none_or(|b| sys.clock(h.cpu) < sys.clock(helpers[b].cpu))
                {
                    best = Some(k);
                }
            }
            let Some(k) = best else { break };
            let h = &mut helpers[k];
            let b = &mut bufs[k];
            if b.1 == b.0.len() {
                b.0.clear();
                b.1 = 0;
                if h.source.fill(&mut b.0, 4096).map_err(SimError)? == 0 {
                    b.2 = true;
                    continue;
                }
            }
            if let Record::Access(mut a) = b.0[b.1] {
                a.thread = h.thread;
                sys.access(a)?;
                b.3 += 1;
                if b.3.is_multiple_of(h.burst) {
                    sys.charge(h.cpu, h.pause_cycles);
                }
            }
            b.1 += 1;
        }
        if let Record::Access(a) = r {
            sys.access(a)?;
        }
        app_pos += 1;
    }
}
