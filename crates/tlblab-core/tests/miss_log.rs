//! The miss log (`System::log_misses`): every miss of one level with its set, thread, job and
//! the page whose fill evicted it; and a run that logs counts what a run that does not counts.

mod common;

use common::*;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::{RunOptions, System};
use tlblab_trace::{Access, Event, Record, VecSource};
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

fn ld(t: u32, va: u64) -> Record {
    Record::Access(Access::new(ThreadId(t), AccessKind::Load, VirtAddr(va), 8))
}

/// Two threads of one process on a 4-set x 2-way L1 over a 16-entry L2 (the shapes the lanes
/// serve): T0 holds pages A and B of set 1, then T1 takes set 1 with C and D, then T0 comes back.
fn records() -> Vec<Record> {
    let page = |set: u64, k: u64| 0x4000_0000 + (k * 4 + set) * 4096;
    let (a, b, c, d) = (page(1, 0), page(1, 1), page(1, 2), page(1, 3));
    let mut r = vec![
        Record::Event(Event::ThreadStart {
            thread: ThreadId(0),
            process: 0,
        }),
        Record::Event(Event::ThreadStart {
            thread: ThreadId(1),
            process: 0,
        }),
        Record::Event(Event::JobStart { task: 0, job: 0 }),
        ld(0, a),
        ld(0, b),
        Record::Event(Event::JobEnd { task: 0, job: 0 }),
        ld(1, c),
        ld(1, d),
        Record::Event(Event::JobStart { task: 0, job: 1 }),
        ld(0, a),
        ld(0, b),
        ld(0, page(2, 0)),
        Record::Event(Event::JobEnd { task: 0, job: 1 }),
    ];
    // Enough of the same to let lanes start, were they allowed.
    for k in 0..200 {
        r.push(ld(1, page(3, k % 2)));
    }
    r
}

fn machine() -> tlblab_core::MachineConfig {
    shaped_machine((4, 2), (8, 2, ReplacementKind::Lru), 1, false)
}

fn run(log: bool) -> tlblab_core::Stats {
    let mut sys = System::new(machine(), RunOptions::default()).unwrap();
    if log {
        sys.log_misses("L1D").unwrap();
    }
    sys.run(&mut VecSource::new(records())).unwrap();
    sys.stats()
}

#[test]
fn given_two_threads_in_one_set_when_logged_then_each_miss_names_the_page_that_evicted_it() {
    let s = run(true);
    let log = s.misses.as_ref().expect("the run logged");
    assert_eq!(log.level, "L1D");
    let page = |set: u64, k: u64| 0x4000_0000 + (k * 4 + set) * 4096;
    let set1: Vec<_> = log.records.iter().filter(|r| r.set == 1).collect();
    // A, B (first touches), C, D (evicting A and B), then A and B again: evicted by C and D.
    assert_eq!(set1.len(), 6);
    assert_eq!(
        set1.iter().map(|r| r.page).collect::<Vec<_>>(),
        vec![
            page(1, 0),
            page(1, 1),
            page(1, 2),
            page(1, 3),
            page(1, 0),
            page(1, 1)
        ]
    );
    assert!(set1[..4].iter().all(|r| r.evicted_by.is_none()));
    assert_eq!(set1[2].victim, Some(page(1, 0)));
    assert_eq!(set1[3].victim, Some(page(1, 1)));
    assert_eq!(set1[4].evicted_by, Some((page(1, 2), 1)));
    assert_eq!(set1[5].evicted_by, Some((page(1, 3), 1)));
    assert_eq!((set1[4].thread, set1[4].job), (Some(0), Some(1)));
    assert_eq!((set1[2].thread, set1[2].job), (Some(1), None));
    assert_eq!((set1[0].thread, set1[0].job), (Some(0), Some(0)));
    // The per-set counts are the records counted, and they are every L1D miss of the run.
    let l1d = s.tlb_levels.iter().position(|n| n == "L1D").unwrap();
    assert_eq!(log.per_set.iter().sum::<u64>(), log.records.len() as u64);
    assert_eq!(log.per_set.iter().sum::<u64>(), s.total.tlb[l1d].misses);
    assert_eq!(log.per_set[1], 6);
}

#[test]
fn given_the_same_run_when_logged_or_not_then_every_counter_agrees() {
    let mut with = run(true);
    let without = run(false);
    assert!(without.misses.is_none());
    with.misses = None;
    assert_eq!(with, without);
}

#[test]
fn given_an_unknown_level_when_logging_then_the_error_names_the_levels() {
    let mut sys = System::new(machine(), RunOptions::default()).unwrap();
    let e = sys.log_misses("L9").unwrap_err().0;
    assert!(e.contains("'L9'") && e.contains("L1D"), "{e}");
}
