//! Streaming sources of records.
//!
//! Consumers pull records in batches into a buffer they own, so a trace of any length streams in
//! bounded memory and no per-record dynamic call or allocation happens.

use crate::record::Record;

/// Reads `src` to its end, `batch` records at a time, handing each record to `each` in order.
pub fn for_each_record(
    src: &mut dyn RecordSource,
    batch: usize,
    mut each: impl FnMut(&Record),
) -> Result<(), String> {
    let mut buf = Vec::with_capacity(batch);
    loop {
        buf.clear();
        if src.fill(&mut buf, batch)? == 0 {
            return Ok(());
        }
        for r in &buf {
            each(r);
        }
    }
}

/// Something that yields records in order.
///
/// Contract: `fill` appends at most `max` records to `out` (never clears it) and returns the
/// number appended; 0 means the source is exhausted and every later call also returns 0.
/// Errors (a corrupt file) are reported as a message naming the file and offset.
pub trait RecordSource {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String>;

    /// Total records if known up front (for progress bars).
    fn len_hint(&self) -> Option<u64> {
        None
    }

    /// Names of the regions that `Event::Region`/`PhaseBegin`/`PhaseEnd` refer to by index
    /// (a trace file keeps them in its header's `regions` list).
    fn region_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// Drops up to `n` of the next records, every one of them an access, without producing
    /// them, where the source can do that faster than `fill` (a generator that advances its
    /// state past them: `workloads::fast_forward`); returns how many it dropped, 0 when it
    /// cannot. What `fill` returns afterwards is what it would have returned after those records.
    fn skip_accesses(&mut self, _n: u64) -> Result<u64, String> {
        Ok(0)
    }

    /// Drops the next `n` records, events included, as fast as the source can: a trace file
    /// seeks to record `n` by its index, a generator advances past its accesses by its own
    /// `skip_accesses` and produces only its events (a restored checkpoint goes on from its
    /// record this way instead of reading and dropping everything before it). Returns how many
    /// it dropped, fewer than `n` only at the end. What `fill` returns afterwards is what it
    /// would have returned after those records; its batches are not shifted, as every source
    /// fills `max` records but at its end.
    fn skip_records(&mut self, n: u64) -> Result<u64, String> {
        skip_by_parts(self, n)
    }
}

/// `RecordSource::skip_records` from a source's `skip_accesses` and `fill`: the accesses it
/// can skip are skipped; where it cannot, one record is read (an event, after which it may
/// skip again), and after an access it could not skip, a batch of records (one record a call
/// would be slow where it cannot skip at all; a source that can again after a while, such as a
/// populated workload once its pages are stored, is asked again after each batch).
pub fn skip_by_parts<S: RecordSource + ?Sized>(src: &mut S, n: u64) -> Result<u64, String> {
    const BATCH: u64 = 1 << 12;
    let mut buf = Vec::new();
    let mut done = 0u64;
    while done < n {
        let k = src.skip_accesses(n - done)?;
        if k > 0 {
            done += k;
            continue;
        }
        buf.clear();
        if src.fill(&mut buf, 1)? == 0 {
            break;
        }
        done += 1;
        if matches!(buf[0], Record::Access(_)) && done < n {
            buf.clear();
            let got = src.fill(&mut buf, BATCH.min(n - done) as usize)?;
            if got == 0 {
                break;
            }
            done += got as u64;
        }
    }
    Ok(done)
}

/// A source over records already in memory (tests, small generated workloads).
pub struct VecSource {
    records: Vec<Record>,
    pos: usize,
}

impl VecSource {
    pub fn new(records: Vec<Record>) -> Self {
        VecSource { records, pos: 0 }
    }
}

impl RecordSource for VecSource {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let n = max.min(self.records.len() - self.pos);
        out.extend_from_slice(&self.records[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
    fn len_hint(&self) -> Option<u64> {
        Some(self.records.len() as u64)
    }
    fn skip_records(&mut self, n: u64) -> Result<u64, String> {
        let k = n.min((self.records.len() - self.pos) as u64);
        self.pos += k as usize;
        Ok(k)
    }
}

/// `first`'s records, then `rest`'s: events a run needs before a captured trace begins (the
/// page sizes of a mosaic's windows as `Event::Mmap`, `tlblab host predict`), without
/// rewriting the trace. Region names and skips are `rest`'s; `first` holds no region events.
pub struct Prefixed<S> {
    first: VecSource,
    rest: S,
}

impl<S: RecordSource> Prefixed<S> {
    pub fn new(first: Vec<Record>, rest: S) -> Self {
        Prefixed {
            first: VecSource::new(first),
            rest,
        }
    }
}

impl<S: RecordSource> RecordSource for Prefixed<S> {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let n = self.first.fill(out, max)?;
        if n > 0 {
            return Ok(n);
        }
        self.rest.fill(out, max)
    }
    fn len_hint(&self) -> Option<u64> {
        let left = (self.first.records.len() - self.first.pos) as u64;
        self.rest.len_hint().map(|n| n + left)
    }
    fn region_names(&self) -> Vec<String> {
        self.rest.region_names()
    }
    fn skip_accesses(&mut self, n: u64) -> Result<u64, String> {
        if self.first.pos < self.first.records.len() {
            return Ok(0); // the prefix's events must reach the engine first
        }
        self.rest.skip_accesses(n)
    }
    fn skip_records(&mut self, n: u64) -> Result<u64, String> {
        let k = self.first.skip_records(n)?;
        Ok(k + self.rest.skip_records(n - k)?)
    }
}

impl<S: RecordSource + ?Sized> RecordSource for Box<S> {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        (**self).fill(out, max)
    }
    fn len_hint(&self) -> Option<u64> {
        (**self).len_hint()
    }
    fn region_names(&self) -> Vec<String> {
        (**self).region_names()
    }
    fn skip_accesses(&mut self, n: u64) -> Result<u64, String> {
        (**self).skip_accesses(n)
    }
    fn skip_records(&mut self, n: u64) -> Result<u64, String> {
        (**self).skip_records(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Access, Event};
    use tlblab_types::{AccessKind, ThreadId, VirtAddr};

    #[test]
    fn given_a_prefix_when_read_then_its_events_come_first_then_the_rest_in_order() {
        let map = Record::Event(Event::Mmap {
            process: 0,
            start: VirtAddr(0x20_0000),
            len: 0x40_0000,
            prot: 3,
            page_shift: 21,
        });
        let acc =
            |a: u64| Record::Access(Access::new(ThreadId(0), AccessKind::Load, VirtAddr(a), 8));
        let rest = VecSource::new(vec![acc(0x1000), acc(0x2000), acc(0x3000)]);
        let mut src = Prefixed::new(vec![map], rest);
        assert_eq!(src.len_hint(), Some(4));
        let mut got = Vec::new();
        for_each_record(&mut src, 2, |r| got.push(*r)).unwrap();
        assert_eq!(got, vec![map, acc(0x1000), acc(0x2000), acc(0x3000)]);
    }
}
