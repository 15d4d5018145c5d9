//! tlblab-floor: the floors, exact minimal kernels of what the `zen3` preset simulates for a
//! stream of one thread's loads, the yardsticks the engine's rates are measured against.
//!
//! Why: the engine's targets (issue 2: 200 M references a second TLB-only, 50 M in the full
//! model, on one host thread) are numbers on a host. A kernel with none of the engine's
//! generality (one page size, one address space, no tags, no locked entries, one-word payloads,
//! no statistics but its counters, every geometry a constant) that still computes exactly what
//! the engine computes on the same stream bounds what any exact simulation of it could reach on
//! that host. `tlblab bench engine` times the floors beside the engine (its `floors` block),
//! and `examples/all_miss_floor.rs` and `examples/full_miss_floor.rs` time variants of them.
//!
//! - TLB-only (`tlb::TlbPair`): zen3's L1D (64 entries, fully associative, LRU) over its L2D
//!   (2048 entries, 16-way, LRU, low VPN bits).
//! - Full model (`full::Floor`): those two levels, walks of an x86-64 4-level page table built
//!   on first touch, the PDE and PDPTE caches, L1D, L2 and L3, the preset's latencies, and the
//!   engine's host prefetch hints.
//!
//! A floor is a yardstick only while it is exact: [`check`] runs the engine on the same records
//! and compares every count the floor keeps (TLB misses per level; in the full model also walks,
//! page-walk-cache hits, cache misses per level and cycles). The tests here check it on the
//! engine benchmark's random and strided streams; the bench checks before it times.

pub mod full;
pub mod tlb;

use std::time::Instant;
use tlblab_core::system::{hint_record, BATCH};
use tlblab_core::{RunOptions, System};
use tlblab_trace::record::Record;
use tlblab_types::{AccessKind, ThreadId};

/// Which model a floor stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `RunOptions::tlb_only`: the TLB levels alone.
    TlbOnly,
    /// `RunOptions::default()`: TLBs, walks with page-walk caches, caches, data.
    Full,
}

impl Mode {
    /// `tlb_only` or `full` (the bench's names); anything else is an error naming both.
    pub fn parse(name: &str) -> Result<Mode, String> {
        match name {
            "tlb_only" => Ok(Mode::TlbOnly),
            "full" => Ok(Mode::Full),
            _ => Err(format!(
                "floor mode: expected tlb_only or full, found {name:?}"
            )),
        }
    }

    fn options(self) -> RunOptions {
        match self {
            Mode::TlbOnly => RunOptions::tlb_only(0),
            Mode::Full => RunOptions::default(),
        }
    }
}

/// The machine every floor models.
pub const MACHINE: &str = "zen3";

/// What a floor counts, and the engine's same counts: `tlb_misses` ([L1D, L2D]); in the full
/// model also `walks`, `pwc_hits`, `cache_misses` ([L1D, L2, L3]) and `cycles` (zero in a
/// TLB-only count, which keeps none of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Counts {
    pub tlb_misses: [u64; 2],
    pub walks: u64,
    pub pwc_hits: u64,
    pub cache_misses: [u64; 3],
    pub cycles: u64,
}

/// The virtual addresses of `records`, if a floor can take them: every record a load of
/// at most 8 bytes within one 4 KiB page, all by one thread. Otherwise an error naming the
/// first record that is not (its index, what was expected, what was found).
pub fn addresses(records: &[Record]) -> Result<Vec<u64>, String> {
    let mut thread: Option<ThreadId> = None;
    let mut out = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        let Record::Access(a) = r else {
            return Err(format!(
                "record {i}: a floor takes accesses only, found the event {r:?}"
            ));
        };
        if a.kind != AccessKind::Load {
            return Err(format!(
                "record {i}: a floor takes loads only, found a {:?}",
                a.kind
            ));
        }
        if *thread.get_or_insert(a.thread) != a.thread {
            return Err(format!(
                "record {i}: a floor takes one thread's accesses, found thread {} after thread {}",
                a.thread.0,
                thread.map_or(0, |t| t.0)
            ));
        }
        if a.size > 8 || (a.vaddr.0 & 0xfff) + a.size as u64 > 4096 {
            return Err(format!(
                "record {i}: a floor takes loads of at most 8 bytes within a 4 KiB page, found {} \
                 bytes at {:#x}",
                a.size, a.vaddr.0
            ));
        }
        out.push(a.vaddr.0);
    }
    Ok(out)
}

/// The floor of `mode` over `addrs` from an empty start: its counts and the seconds it took.
pub fn run(mode: Mode, addrs: &[u64]) -> (Counts, f64) {
    match mode {
        Mode::TlbOnly => {
            let mut f = tlb::TlbPair::new();
            let t = Instant::now();
            for &va in addrs {
                f.translate(va >> 12, |vpn| vpn);
            }
            (tlb_counts(&f), t.elapsed().as_secs_f64())
        }
        Mode::Full => {
            let (f, secs) = full::run(addrs);
            (
                Counts {
                    tlb_misses: [f.tlb.l1_misses, f.tlb.l2_misses],
                    walks: f.mem.walks,
                    pwc_hits: f.mem.pwc_hits,
                    cache_misses: f.mem.caches.misses,
                    cycles: f.cycles,
                },
                secs,
            )
        }
    }
}

/// How the references reach a floor: what it reads per reference, and from where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// 8-byte virtual addresses in memory, nothing to check ([`run`]): the kernel alone.
    Addresses,
    /// The engine's 32-byte `Record`s read in place from memory, each checked as the engine's
    /// pair loop checks it ([`run_records`]): the yardstick of the bench's `slice` feed.
    Records,
    /// The same records copied in batches of the engine's size into one reused buffer, only
    /// the kernel timed ([`run_batches`]): the yardstick of the bench's `source` feed.
    Batches,
}

impl Input {
    /// `addresses`, `records` or `batches` (the bench's names); anything else is an error.
    pub fn parse(name: &str) -> Result<Input, String> {
        match name {
            "addresses" => Ok(Input::Addresses),
            "records" => Ok(Input::Records),
            "batches" => Ok(Input::Batches),
            _ => Err(format!(
                "floor input: expected addresses, records or batches, found {name:?}"
            )),
        }
    }
}

/// The TLB-only floor over the engine's records in place, from an empty start: its counts
/// and the seconds it took, or an error naming the first record it cannot take (as
/// [`addresses`]). Each record is checked as the engine's pair loop checks it before its
/// reference (an access, not a fetch, the stream's thread, within one 4 KiB page), and the
/// host is hinted to fetch records ahead as the engine's loops are (`hint_record`): what an
/// exact kernel that reads the engine's input (32 bytes a reference, in host memory) can
/// reach, where [`run`] reads 8.
/// (TLB-only: the full model's floor over addresses is below its target already.)
pub fn run_records(records: &[Record]) -> Result<(Counts, f64), String> {
    let thread = stream_thread(records)?;
    let mut f = tlb::TlbPair::new();
    let t = Instant::now();
    for (n, r) in records.iter().enumerate() {
        hint_record(records, n);
        if !translate_record(&mut f, r, thread) {
            return Err(not_taken(n, r, thread));
        }
    }
    let secs = t.elapsed().as_secs_f64();
    Ok((tlb_counts(&f), secs))
}

/// The read bound: one pass over the engine's records in place that reads each record's
/// address (and an event's first word) and simulates nothing, hinted ahead as the engine's
/// loops hint (`hint_record`); returns a checksum (so the pass is not optimized away) and the
/// seconds it took. Any simulation that reads the same records in place, the engine's
/// `slice` feed among them, is bounded by this rate on the host: at 32 bytes a record it is the
/// host's memory bandwidth for a record stream once the records outgrow its caches. Unlike
/// the floors it takes any records (every kind, every thread, events too).
pub fn read_records(records: &[Record]) -> (u64, f64) {
    let t = Instant::now();
    let mut sum = 0u64;
    for (n, r) in records.iter().enumerate() {
        hint_record(records, n);
        let word = match r {
            Record::Access(a) => a.vaddr.0,
            Record::Event(_) => 1,
        };
        sum = sum.wrapping_add(std::hint::black_box(word));
    }
    (sum, t.elapsed().as_secs_f64())
}

/// [`run_records`] over the records copied `BATCH` at a time into one reused buffer, as a
/// trace decoder or generator delivers them to `System::run` (the copies not timed, the
/// records then in the host's caches): the yardstick of the bench's `source` feed.
pub fn run_batches(records: &[Record]) -> Result<(Counts, f64), String> {
    let thread = stream_thread(records)?;
    let mut f = tlb::TlbPair::new();
    let mut buf: Vec<Record> = Vec::with_capacity(BATCH);
    let mut secs = 0.0;
    for (b, chunk) in records.chunks(BATCH).enumerate() {
        buf.clear();
        buf.extend_from_slice(chunk);
        let t = Instant::now();
        for (n, r) in buf.iter().enumerate() {
            if !translate_record(&mut f, r, thread) {
                return Err(not_taken(b * BATCH + n, r, thread));
            }
        }
        secs += t.elapsed().as_secs_f64();
    }
    Ok((tlb_counts(&f), secs))
}

/// The thread of a stream's first record (the floors take one thread's loads).
fn stream_thread(records: &[Record]) -> Result<ThreadId, String> {
    match records.first() {
        Some(Record::Access(a)) => Ok(a.thread),
        Some(r) => Err(not_taken(0, r, ThreadId(0))),
        None => Ok(ThreadId(0)),
    }
}

/// One record's TLB-only reference, if the engine's pair loop would take the record (an
/// access, not a fetch, of `thread`, within one 4 KiB page); false, and nothing done, if not.
#[inline(always)]
fn translate_record(f: &mut tlb::TlbPair, r: &Record, thread: ThreadId) -> bool {
    let Record::Access(a) = r else {
        return false;
    };
    let va = a.vaddr.0;
    if a.kind.is_instr() || a.thread != thread || (va & 0xfff) + a.size as u64 > 4096 {
        return false;
    }
    f.translate(va >> 12, |vpn| vpn);
    true
}

/// Why record `n`, `r`, is not one `translate_record` takes.
#[cold]
fn not_taken(n: usize, r: &Record, thread: ThreadId) -> String {
    match r {
        Record::Access(a) => format!(
            "record {n}: a floor takes data references of thread {} within a 4 KiB page, \
             found {a:?}",
            thread.0
        ),
        _ => format!("record {n}: a floor takes accesses only, found the event {r:?}"),
    }
}

fn tlb_counts(f: &tlb::TlbPair) -> Counts {
    Counts {
        tlb_misses: [f.l1_misses, f.l2_misses],
        ..Counts::default()
    }
}

/// The engine (`System::run_slice` on the zen3 preset in `mode`) over `records`: its counts,
/// as a floor of that mode keeps them, and the seconds it took.
pub fn engine(mode: Mode, records: &[Record]) -> Result<(Counts, f64), String> {
    let cfg = tlblab_config::load_machine(MACHINE)?;
    let mut sys = System::new(cfg, mode.options()).map_err(|e| e.0)?;
    let t = Instant::now();
    sys.run_slice(records).map_err(|e| e.0)?;
    let secs = t.elapsed().as_secs_f64();
    let stats = sys.stats();
    let total = &stats.total;
    let tlb = |name: &str| -> Result<u64, String> {
        let i = stats.tlb_levels.iter().position(|n| n == name);
        Ok(total.tlb[i.ok_or(format!("{MACHINE} has no TLB level {name}"))?].misses)
    };
    let cache = |name: &str| -> Result<u64, String> {
        let i = stats.cache_levels.iter().position(|n| n == name);
        Ok(total.cache[i.ok_or(format!("{MACHINE} has no cache level {name}"))?].misses)
    };
    let mut counts = Counts {
        tlb_misses: [tlb("L1D")?, tlb("L2D")?],
        ..Counts::default()
    };
    if mode == Mode::Full {
        counts.walks = total.walks;
        counts.pwc_hits = total.pwc_hits;
        counts.cache_misses = [cache("L1D")?, cache("L2")?, cache("L3")?];
        counts.cycles = total.cycles;
    }
    Ok((counts, secs))
}

/// The floor's counts over `records` (see [`addresses`]) if they are the engine's, else an
/// error with both.
pub fn check(mode: Mode, records: &[Record]) -> Result<Counts, String> {
    let addrs = addresses(records)?;
    let (floor, _) = run(mode, &addrs);
    let (engine, _) = engine(mode, records)?;
    if floor != engine {
        return Err(format!(
            "the {mode:?} floor and the engine disagree: floor {floor:?}, engine {engine:?}"
        ));
    }
    if mode == Mode::TlbOnly {
        // The floors over the records are the same kernel: they must count the same.
        for (input, (counts, _)) in [
            ("records", run_records(records)?),
            ("batches", run_batches(records)?),
        ] {
            if counts != engine {
                return Err(format!(
                    "the TlbOnly floor over {input} and the engine disagree: floor {counts:?}, \
                     engine {engine:?}"
                ));
            }
        }
    }
    Ok(floor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlblab_trace::record::Access;
    use tlblab_trace::workloads;
    use tlblab_types::VirtAddr;

    fn stream(spec: &str) -> Vec<Record> {
        let (name, params) = workloads::parse_spec(spec).unwrap();
        let mut source = workloads::build(&name, &params, 0).unwrap();
        let mut records = Vec::new();
        while source.fill(&mut records, 1 << 16).unwrap() > 0 {}
        records
    }

    /// The engine benchmark's random stream, shortened: 300k references fill the levels in the
    /// first few thousand; in the full model a quarter of them are first touches.
    #[test]
    fn both_floors_count_what_the_engine_counts_on_a_random_stream() {
        let records = stream("random:pages=262144,accesses=300000");
        let tlb_only = check(Mode::TlbOnly, &records).unwrap();
        assert!(tlb_only.tlb_misses[1] > 290_000, "{tlb_only:?}");
        let full = check(Mode::Full, &records).unwrap();
        assert!(
            full.tlb_misses[1] > 290_000 && full.cache_misses[2] > 200_000,
            "{full:?}"
        );
        assert!(full.cycles > 0 && full.walks == full.tlb_misses[1]);
    }

    /// The benchmark's strided stream, four rounds of its 65536 pages: every reference misses
    /// both TLB levels, and the walks hit the PDE cache.
    #[test]
    fn both_floors_count_what_the_engine_counts_on_a_strided_stream() {
        let records = stream("strided:pages=65536,stride=4096,rounds=4");
        let tlb_only = check(Mode::TlbOnly, &records).unwrap();
        assert_eq!(tlb_only.tlb_misses, [262_144, 262_144]);
        let full = check(Mode::Full, &records).unwrap();
        assert!(full.pwc_hits > 250_000, "{full:?}");
    }

    /// The floors over the records stop at a record the engine's pair loop would not take,
    /// naming it, wherever it falls (in place, or in a later batch).
    #[test]
    fn the_floors_over_records_name_the_first_record_they_cannot_take() {
        let mut records = stream("random:pages=64,accesses=20000");
        let Record::Access(mut fetch) = records[BATCH + 5] else {
            panic!("the stream is all accesses")
        };
        fetch.kind = AccessKind::Instr;
        records[BATCH + 5] = Record::Access(fetch);
        for run in [run_records, run_batches] {
            let err = run(&records).unwrap_err();
            assert!(
                err.starts_with(&format!(
                    "record {}: a floor takes data references",
                    BATCH + 5
                )),
                "{err}"
            );
        }
        // The same stream before that record: both count what the engine counts.
        let (engine, _) = engine(Mode::TlbOnly, &records[..BATCH + 5]).unwrap();
        assert_eq!(run_records(&records[..BATCH + 5]).unwrap().0, engine);
        assert_eq!(run_batches(&records[..BATCH + 5]).unwrap().0, engine);
        assert!(engine.tlb_misses[0] > 0);
        assert!(Input::parse("slice")
            .unwrap_err()
            .contains("addresses, records or batches"));
    }

    /// The read bound reads every record: its checksum is the sum of the accesses' addresses
    /// and one for each event, whatever their kinds and threads (it takes what the floors do not).
    #[test]
    fn the_read_bound_reads_every_record_of_any_kind() {
        let mut records = stream("random:pages=64,accesses=5000");
        let expected: u64 = records
            .iter()
            .map(|r| match r {
                Record::Access(a) => a.vaddr.0,
                Record::Event(_) => 1,
            })
            .fold(0u64, u64::wrapping_add);
        assert_eq!(read_records(&records).0, expected);
        let Record::Access(mut store) = records[7] else {
            panic!("the stream is all accesses")
        };
        store.kind = AccessKind::Store;
        store.thread = ThreadId(3);
        store.vaddr = VirtAddr(store.vaddr.0 + 4096);
        records[7] = Record::Access(store);
        assert_eq!(read_records(&records).0, expected.wrapping_add(4096));
        assert_eq!(read_records(&[]).0, 0);
    }

    #[test]
    fn a_floor_names_the_first_record_it_cannot_take() {
        let load = |thread: u32, kind, vaddr: u64, size| {
            Record::Access(Access::new(ThreadId(thread), kind, VirtAddr(vaddr), size))
        };
        let ok = load(0, AccessKind::Load, 0x1000, 8);
        let cases = [
            (
                load(0, AccessKind::Store, 0x1000, 8),
                "record 1: a floor takes loads only",
            ),
            (
                load(1, AccessKind::Load, 0x1000, 8),
                "record 1: a floor takes one thread's accesses, found thread 1 after thread 0",
            ),
            (
                load(0, AccessKind::Load, 0x1ffc, 8),
                "record 1: a floor takes loads of at most",
            ),
            (
                load(0, AccessKind::Instr, 0x1000, 4),
                "record 1: a floor takes loads only",
            ),
        ];
        for (bad, expected) in cases {
            let err = addresses(&[ok, bad]).unwrap_err();
            assert!(err.starts_with(expected), "{err}");
        }
        assert_eq!(addresses(&[ok, ok]).unwrap(), vec![0x1000, 0x1000]);
        assert!(Mode::parse("no_caches")
            .unwrap_err()
            .contains("tlb_only or full"));
    }
}
