//! A record source read ahead on a thread of its own (`Threaded`): decompression and decoding
//! of a compressed Lackey or ChampSim trace overlap with the simulation that consumes it
//! (issue 47: an `.xz` ChampSim trace decoded at ~4.4 M records/s bounded a run whose
//! simulation alone ran at 10 M refs/s).
//!
//! The reading thread fills batches of `BATCH` records and hands them over a channel of
//! `DEPTH` batches; the consumer hands emptied buffers back, so after the first few batches
//! nothing is allocated. The records and their order are those of the inner source, and so is
//! its first error (delivered after the records before it). Dropping the `Threaded` stops the
//! thread at its next batch (its inner source, a decompressor included, is dropped there).

use crate::record::Record;
use crate::source::RecordSource;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Records per batch the reading thread fills (as the engine's run loop takes them).
const BATCH: usize = 1 << 14;
/// Batches read ahead: enough to ride out a pause of either side, 2 MiB of records.
const DEPTH: usize = 4;

enum Msg {
    Batch(Vec<Record>),
    Error(String),
}

pub struct Threaded {
    rx: Receiver<Msg>,
    /// Emptied buffers going back to the reading thread.
    back: SyncSender<Vec<Record>>,
    cur: Vec<Record>,
    pos: usize,
    done: bool,
    len_hint: Option<u64>,
    region_names: Vec<String>,
    thread: Option<JoinHandle<()>>,
}

impl Threaded {
    /// Starts reading `source` on a new thread.
    pub fn new(mut source: Box<dyn RecordSource + Send>) -> Threaded {
        let len_hint = source.len_hint();
        let region_names = source.region_names();
        let (tx, rx) = sync_channel::<Msg>(DEPTH);
        let (back, back_rx) = sync_channel::<Vec<Record>>(DEPTH + 2);
        let thread = std::thread::Builder::new()
            .name("tlblab-decode".into())
            .spawn(move || loop {
                let mut buf = back_rx
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(BATCH));
                buf.clear();
                let msg = match source.fill(&mut buf, BATCH) {
                    Ok(0) => return,
                    Ok(_) => Msg::Batch(buf),
                    Err(e) => Msg::Error(e),
                };
                let stop = matches!(msg, Msg::Error(_));
                // The consumer has gone (the run stopped at a limit, or failed): stop too.
                if tx.send(msg).is_err() || stop {
                    return;
                }
            })
            .expect("spawning the trace-reading thread");
        Threaded {
            rx,
            back,
            cur: Vec::new(),
            pos: 0,
            done: false,
            len_hint,
            region_names,
            thread: Some(thread),
        }
    }
}

impl RecordSource for Threaded {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let mut n = 0;
        while n < max && !self.done {
            if self.pos == self.cur.len() {
                match self.rx.recv() {
                    Ok(Msg::Batch(b)) => {
                        let old = std::mem::replace(&mut self.cur, b);
                        // (The thread may have more buffers than it needs: then drop this one.)
                        let _ = self.back.try_send(old);
                        self.pos = 0;
                    }
                    Ok(Msg::Error(e)) => {
                        self.done = true;
                        return Err(e);
                    }
                    // The thread ended: the source is exhausted.
                    Err(_) => self.done = true,
                }
                continue;
            }
            let k = (self.cur.len() - self.pos).min(max - n);
            out.extend_from_slice(&self.cur[self.pos..self.pos + k]);
            self.pos += k;
            n += k;
        }
        Ok(n)
    }

    fn len_hint(&self) -> Option<u64> {
        self.len_hint
    }

    fn region_names(&self) -> Vec<String> {
        self.region_names.clone()
    }
}

impl Drop for Threaded {
    fn drop(&mut self) {
        // Closing the channel makes the thread's next send fail; it then drops its source.
        let (_, dead) = sync_channel::<Msg>(0);
        drop(std::mem::replace(&mut self.rx, dead));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Access;
    use crate::source::VecSource;
    use tlblab_types::{AccessKind, ThreadId, VirtAddr};

    fn records(n: u64) -> Vec<Record> {
        (0..n)
            .map(|i| {
                Record::Access(Access::new(
                    ThreadId(0),
                    AccessKind::Load,
                    VirtAddr(i * 64),
                    8,
                ))
            })
            .collect()
    }

    /// Given 100 000 records, when read through the thread in odd-sized pieces, then they
    /// come out all, in order, and the end is sticky.
    #[test]
    fn records_come_out_in_order_in_any_pieces() {
        let want = records(100_000);
        let mut t = Threaded::new(Box::new(VecSource::new(want.clone())));
        assert_eq!(t.len_hint(), Some(100_000));
        let mut got = Vec::new();
        while t.fill(&mut got, 7_777).unwrap() > 0 {}
        assert_eq!(got, want);
        assert_eq!(t.fill(&mut got, 10).unwrap(), 0);
    }

    struct Failing(VecSource);
    impl RecordSource for Failing {
        fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
            match self.0.fill(out, max)? {
                0 => Err("x.champsim: byte 64: truncated".into()),
                n => Ok(n),
            }
        }
    }

    /// Given a source that fails after its records, then the records come first, then its error.
    #[test]
    fn an_error_follows_the_records_before_it() {
        let mut t = Threaded::new(Box::new(Failing(VecSource::new(records(20_000)))));
        let mut got = Vec::new();
        let err = loop {
            match t.fill(&mut got, 5_000) {
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert_eq!(got.len(), 20_000);
        assert!(err.contains("truncated"));
    }

    /// Given a run that stops early, when the source is dropped, then the thread ends.
    #[test]
    fn dropping_early_stops_the_thread() {
        let mut t = Threaded::new(Box::new(VecSource::new(records(1_000_000))));
        let mut got = Vec::new();
        t.fill(&mut got, 10).unwrap();
        drop(t);
    }
}
