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
}
