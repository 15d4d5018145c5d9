//! The fast lane's data paths (`FullPair`, `Single`: tlb/pair.rs, with their unchecked
//! indexing and fingerprint-row pointer casts) on streams small enough for Miri, each checked
//! against the same records run access by access. `scripts/miri.sh` runs this file under Miri
//! (nightly, not part of `make test`); `cargo test` runs it as an ordinary test.
//!
//! Each machine is one the lane compiles a path for, with levels small enough to fill within a
//! few hundred references, so the path runs on most of the stream: a 64-way fully associative
//! first level over 16-way LRU sets (zen3's shape), a 4-way set-associative one over 8-way
//! random sets (the Cortex-A9's), and a 32-way fully associative level alone.
mod common;
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::replacement::ReplacementKind::{self, Lru, Random};
use tlblab_core::tlb::TlbKind;
use tlblab_core::{RunOptions, System};
use tlblab_trace::{Access, Record};
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

/// Random loads on 300 pages at any offset (some crossing a page), a fetch every 97th.
fn stream(n: usize) -> Vec<Record> {
    let mut x = 12345u64;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let kind = if i % 97 == 0 {
                AccessKind::Instr
            } else {
                AccessKind::Load
            };
            let va = 0x4000_0000 + (x % 300) * 4096 + (x >> 40) % 4096;
            Record::Access(Access::new(ThreadId(0), kind, VirtAddr(va), 8))
        })
        .collect()
}

fn system(
    (sets, ways): (usize, usize),
    second: Option<(usize, usize, ReplacementKind)>,
    opts: RunOptions,
    caches: bool,
) -> System {
    let level = |name: &str, level: u8, kind, sets: usize, ways: usize, repl| {
        let mut t = common::tlb(name, level, sets * ways, ways, repl);
        t.kind = kind;
        t
    };
    let mut tlbs = vec![
        level("L1D", 1, TlbKind::Data, sets, ways, ReplacementKind::Lru),
        level("L1I", 1, TlbKind::Instr, sets, ways, ReplacementKind::Lru),
    ];
    if let Some((s, w, repl)) = second {
        tlbs.push(level("L2D", 2, TlbKind::Data, s, w, repl));
    }
    let mut cfg = common::machine(PageTableFormat::X86_64_4level, tlbs);
    cfg.memory.bytes = 16 << 20;
    if caches {
        cfg.caches = vec![
            common::cache("L1", 1, 2048, 4, 2),
            common::cache("L2", 2, 8192, 8, 8),
        ];
    }
    let mut sys = System::new(cfg, opts).unwrap();
    let space = sys.create_space().unwrap();
    sys.bind_thread(ThreadId(0), space, 0);
    sys
}

/// `run_slice` over the stream and `access` record by record end with the same statistics
/// and TLB contents.
fn agrees_access_by_access(
    first: (usize, usize),
    second: Option<(usize, usize, ReplacementKind)>,
    opts: RunOptions,
    caches: bool,
) {
    let records = stream(2500);
    let mut by_run = system(first, second, opts, caches);
    by_run.run_slice(&records).unwrap();
    let mut by_access = system(first, second, opts, caches);
    for r in &records {
        let Record::Access(a) = *r else {
            unreachable!()
        };
        by_access.access(a).unwrap();
    }
    assert!(by_run.stats().total.references >= 2500);
    common::end_state_difference(&by_run, &by_access).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn fully_associative_over_lru_sets_tlb_only() {
    agrees_access_by_access((1, 64), Some((8, 16, Lru)), RunOptions::tlb_only(1), false);
}

#[test]
fn fully_associative_over_lru_sets_with_walks_and_caches() {
    agrees_access_by_access((1, 64), Some((8, 16, Lru)), RunOptions::default(), true);
}

#[test]
fn set_associative_over_random_sets_tlb_only() {
    agrees_access_by_access(
        (16, 4),
        Some((4, 8, Random)),
        RunOptions::tlb_only(2),
        false,
    );
}

#[test]
fn one_fully_associative_level_with_walks() {
    agrees_access_by_access((1, 32), None, RunOptions::no_caches(3), false);
}
