//! The hot-page profile of seed 004 §IV: accesses per 4 KiB page of each process, loads, stores
//! and fetches apart, from any record source (a Lackey capture, a native trace, a workload).
//! Ranking, naming pages by their mapping and remapping them to another run are the Python
//! layer's (`python/tlblab/profile.py`); this is the pass over the records, which must keep up
//! with the trace (a Lackey capture of a small MiBench program is tens of millions of records).

use crate::record::{Event, Record};
use crate::source::RecordSource;
use std::collections::HashMap;
use tlblab_types::AccessKind;

/// Accesses to one page: [loads, stores, fetches].
pub type PageCounts = [u64; 3];

/// Counts the accesses per (process, 4 KiB page number) of every record `src` delivers. An
/// access crossing a page boundary counts once on each page (the hardware translates both;
/// Lackey reports it as one line, its `size` past the boundary: lackey/lk_main.c's trace_load). A thread's process comes from its
/// `ThreadStart` event (0 before one, as the engine binds an unknown thread).
pub fn page_counts(src: &mut dyn RecordSource) -> Result<HashMap<(u32, u64), PageCounts>, String> {
    let mut counts: HashMap<(u32, u64), PageCounts> = HashMap::new();
    let mut process_of: HashMap<u32, u32> = HashMap::new();
    crate::source::for_each_record(src, 16384, |r| match *r {
        Record::Event(Event::ThreadStart { thread, process }) => {
            process_of.insert(thread.0, process);
        }
        Record::Access(a) => {
            let process = process_of.get(&a.thread.0).copied().unwrap_or(0);
            let k = match a.kind {
                AccessKind::Load => 0,
                AccessKind::Store => 1,
                AccessKind::Instr => 2,
            };
            let first = a.vaddr.0 >> 12;
            let last = (a.vaddr.0 + (a.size.max(1) as u64) - 1) >> 12;
            for page in first..=last {
                counts.entry((process, page)).or_default()[k] += 1;
            }
        }
        _ => {}
    })?;
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Access;
    use crate::source::VecSource;
    use tlblab_types::{ThreadId, VirtAddr};

    #[test]
    fn counts_kinds_apart_per_process_and_splits_page_crossings() {
        let t = |id| ThreadId(id);
        let recs = vec![
            Record::Event(Event::ThreadStart {
                thread: t(1),
                process: 3,
            }),
            Record::Access(Access::new(t(0), AccessKind::Load, VirtAddr(0x1008), 8)),
            Record::Access(Access::new(t(0), AccessKind::Store, VirtAddr(0x1ffc), 8)),
            Record::Access(Access::new(t(0), AccessKind::Instr, VirtAddr(0x1000), 4)),
            Record::Access(Access::new(t(1), AccessKind::Load, VirtAddr(0x1000), 4)),
        ];
        let c = page_counts(&mut VecSource::new(recs)).unwrap();
        assert_eq!(c[&(0, 1)], [1, 1, 1]);
        assert_eq!(c[&(0, 2)], [0, 1, 0], "the store's second half");
        assert_eq!(c[&(3, 1)], [1, 0, 0]);
        assert_eq!(c.len(), 3);
    }
}
