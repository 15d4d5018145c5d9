//! Ctrl-C and progress for the native loops.
//!
//! The bindings run their loops with the GIL released (`py.detach`), so Python's own SIGINT
//! handler only marks the signal pending: nothing raises `KeyboardInterrupt` until the loop
//! returns, which for a long simulation or a trace of hundreds of megabytes is minutes later
//! (and a writer would have completed its file). Every loop here therefore asks Python, about
//! every `CHECK_EVERY`, whether a signal is pending (`Python::check_signals`, which runs the
//! handler and returns its exception). When it is, the loop fails with "interrupted" and the
//! binding returns Python's exception (`KeyboardInterrupt`) instead of a `ValueError`; writers
//! dropped on that error remove their temporary files, so an interrupted command leaves no
//! output behind.
//!
//! `Watched` is the `RecordSource` wrapper that does this for any loop that pulls records, and
//! optionally prints a progress line on stderr (references done, rate, time left when the total
//! is known), as `trace record` does.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::time::{Duration, Instant};
use tlblab_trace::record::Record;
use tlblab_trace::source::RecordSource;

/// How often a loop asks Python for pending signals: well within the one second a user waits
/// for Ctrl-C to act, and rare enough that taking the GIL costs nothing measurable (one
/// `Instant::now` per batch of thousands of records otherwise).
const CHECK_EVERY: Duration = Duration::from_millis(50);

/// How often the progress line is redrawn.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

thread_local! {
    // The loops run on the calling thread (`detach` releases the GIL, it does not move the
    // closure), so the exception a check found waits here for the binding to return it.
    static PENDING: RefCell<Option<PyErr>> = const { RefCell::new(None) };
    static LAST_CHECK: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The message a loop fails with when a signal is pending; `finish` replaces it by Python's
/// exception.
pub const INTERRUPTED: &str = "interrupted";

/// Whether a signal handler raised (Ctrl-C) since the last check; at most one real check per
/// `CHECK_EVERY`. A plain function, so it can ride in options structs (`CaptureOptions::stop`).
pub fn interrupted() -> bool {
    let now = Instant::now();
    let due = LAST_CHECK.with(|c| match c.get() {
        Some(t) if now.duration_since(t) < CHECK_EVERY => false,
        _ => {
            c.set(Some(now));
            true
        }
    });
    if PENDING.with(|p| p.borrow().is_some()) {
        return true;
    }
    if !due {
        return false;
    }
    match Python::attach(|py| py.check_signals()) {
        Ok(()) => false,
        Err(e) => {
            PENDING.with(|p| *p.borrow_mut() = Some(e));
            true
        }
    }
}

/// Clears what an earlier call left (a binding starts every loop with no pending exception).
pub fn start() {
    PENDING.with(|p| *p.borrow_mut() = None);
    LAST_CHECK.with(|c| c.set(Some(Instant::now())));
}

/// The binding's result: Python's exception if a check found one (the loop's "interrupted"
/// error is only its echo), else the loop's own error as a `ValueError`.
pub fn finish<T>(r: Result<T, String>) -> PyResult<T> {
    if let Some(e) = PENDING.with(|p| p.borrow_mut().take()) {
        return Err(e);
    }
    r.map_err(|e| {
        // A loop stopped by a signal Python did not see (valgrind killed by the terminal's
        // Ctrl-C before our check ran) is an interrupt too, not bad input.
        if e.starts_with(INTERRUPTED) {
            pyo3::exceptions::PyKeyboardInterrupt::new_err(e)
        } else {
            PyValueError::new_err(e)
        }
    })
}

/// A progress line on stderr: `VERB: 12.3 M of 200.0 M references, 45.1 M refs/s, 4 s left`,
/// redrawn in place; `done` erases it so the command's output starts on a clean line.
pub struct Progress {
    verb: &'static str,
    total: Option<u64>,
    t0: Instant,
    last: Instant,
    shown: bool,
}

impl Progress {
    pub fn new(verb: &'static str, total: Option<u64>) -> Progress {
        let now = Instant::now();
        Progress {
            verb,
            total,
            t0: now,
            last: now,
            shown: false,
        }
    }

    /// Redraws the line if `PROGRESS_EVERY` has passed; `done` is the count so far.
    pub fn tick(&mut self, done: u64) {
        let now = Instant::now();
        if now.duration_since(self.last) < PROGRESS_EVERY {
            return;
        }
        self.last = now;
        let secs = now.duration_since(self.t0).as_secs_f64();
        let rate = done as f64 / secs.max(1e-9);
        let mut line = format!("\r{}: {:.1} M", self.verb, done as f64 / 1e6);
        if let Some(t) = self.total {
            line += &format!(" of {:.1} M", t as f64 / 1e6);
        }
        line += &format!(" references, {:.1} M refs/s", rate / 1e6);
        if let Some(t) = self.total.filter(|&t| t > done && rate > 0.0) {
            line += &format!(", {:.0} s left", (t - done) as f64 / rate);
        }
        line += "   ";
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(line.as_bytes());
        let _ = err.flush();
        self.shown = true;
    }

    pub fn done(&mut self) {
        if self.shown {
            // Erase the line (carriage return, clear to the end of the line).
            eprint!("\r\x1b[K");
            self.shown = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done();
    }
}

/// A record source that stops with "interrupted" on Ctrl-C and, with a `Progress`, reports
/// how many records it has delivered.
pub struct Watched<S> {
    inner: S,
    delivered: u64,
    progress: Option<Progress>,
}

impl<S: RecordSource> Watched<S> {
    pub fn new(inner: S, progress: Option<Progress>) -> Self {
        Watched {
            inner,
            delivered: 0,
            progress,
        }
    }
}

impl<S: RecordSource> RecordSource for Watched<S> {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        if interrupted() {
            if let Some(p) = &mut self.progress {
                p.done();
            }
            return Err(INTERRUPTED.into());
        }
        let n = self.inner.fill(out, max)?;
        self.delivered += n as u64;
        if let Some(p) = &mut self.progress {
            if n == 0 {
                p.done();
            } else {
                p.tick(self.delivered);
            }
        }
        Ok(n)
    }
    fn len_hint(&self) -> Option<u64> {
        self.inner.len_hint()
    }
    fn region_names(&self) -> Vec<String> {
        self.inner.region_names()
    }
    fn skip_records(&mut self, n: u64) -> Result<u64, String> {
        let k = self.inner.skip_records(n)?;
        self.delivered += k;
        Ok(k)
    }
}
