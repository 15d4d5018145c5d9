//! The technique framework and its first client, TLB coloring (seed 003): behaviour tests.
//!
//! - a technique's run takes the general path and agrees, count for count, with a technique-free
//!   run (lanes on) of the records the technique produced;
//! - the hooks are called where the contract says and their cycles are charged;
//! - phases give each marked stretch's counters;
//! - tlb_coloring's closed forms (seed 003 §6.0.8): threads in different colors never evict each
//!   other, threads in one color of a 4-way set thrash once they own more than 4 pages.

mod common;

use common::{machine, tlb};
use std::collections::BTreeMap;
use tlblab_core::machine::TechniqueSpec;
use tlblab_core::os::SwitchPolicy;
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::{registry, techniques};
use tlblab_core::{Declaration, RunOptions, SimError, System, Technique};
use tlblab_trace::record::NO_THREAD;
use tlblab_trace::{Access, Event, Record, VecSource};
use tlblab_types::{AccessKind, CoreId, ThreadId, VirtAddr};

/// The Xeon E5-2650's L1 DTLB: 16 sets x 4 ways, LRU (seed 003 Ch. 5).
fn xeon_l1() -> tlblab_core::MachineConfig {
    machine(
        PageTableFormat::X86_64_4level,
        vec![tlb("L1D", 1, 64, 4, ReplacementKind::Lru)],
    )
}

fn tlb_only() -> RunOptions {
    RunOptions::tlb_only(7)
}

fn load(thread: u32, va: u64) -> Record {
    Record::Access(Access::new(
        ThreadId(thread),
        AccessKind::Load,
        VirtAddr(va),
        8,
    ))
}

fn spec(text: &str) -> TechniqueSpec {
    techniques::parse_spec(text).unwrap()
}

/// Two threads alternating: `rounds` rounds of each touching its `pages` pages in turn. Every
/// page's original address is in set 0 of a 16-set TLB (a stride of 16 pages), the worst case a
/// malloc could produce.
fn alternating(pages: u64, rounds: u64) -> Vec<Record> {
    let mut out = Vec::new();
    for _ in 0..rounds {
        for t in 0..2u32 {
            for p in 0..pages {
                let page = (t as u64 * pages + p) * 16;
                out.push(load(t, 0x1000_0000 + page * 4096 + 8 * p));
            }
        }
    }
    out
}

fn run(records: &[Record], technique: Option<&str>) -> System {
    let mut sys = System::new(xeon_l1(), tlb_only()).unwrap();
    if let Some(t) = technique {
        registry::install(&mut sys, &spec(t)).unwrap();
    }
    sys.run(&mut VecSource::new(records.to_vec())).unwrap();
    sys
}

#[test]
fn given_two_threads_in_different_colors_when_they_alternate_then_neither_misses_after_its_first_touches(
) {
    let records = alternating(4, 50);
    let colored = run(&records, Some("tlb_coloring:assign=per_thread"));
    let st = colored.stats();
    // 8 pages, each missed once (its first touch), never again.
    assert_eq!(st.total.tlb[0].misses, 8);
    let t = st.technique.as_ref().unwrap();
    assert_eq!(t.name, "tlb_coloring");
    assert_eq!(t.counters["pages_placed"], 8);
    assert_eq!(t.counters["colors_used"], 2);
    assert_eq!(t.params["assign"], "per_thread");
    assert_eq!(t.params["reserved"], "0", "defaults are listed too");
    // Without the technique the 8 pages share set 0 of 4 ways: LRU misses on every access.
    let plain = run(&records, None).stats();
    assert_eq!(plain.total.tlb[0].misses, records.len() as u64);
}

#[test]
fn given_one_color_for_both_threads_when_they_own_more_pages_than_ways_then_they_thrash() {
    let records = alternating(4, 50);
    let st = run(&records, Some("tlb_coloring:assign=same")).stats();
    assert_eq!(st.total.tlb[0].misses, records.len() as u64);
    assert_eq!(st.technique.unwrap().counters["colors_used"], 1);
    // Two pages each fit the 4 ways together: only the first touches miss.
    let st = run(&alternating(2, 50), Some("tlb_coloring:assign=same")).stats();
    assert_eq!(st.total.tlb[0].misses, 4);
}

#[test]
fn given_a_colored_page_then_its_set_is_the_color_after_the_reserved_sets_and_offsets_are_kept() {
    // seed 003 §3.1: small color c is set R + c; the n-th page of a color is in period n.
    let mut t = registry::build(
        &spec("tlb_coloring:reserved=2,first_color=3,base=0x40000000"),
        &xeon_l1(),
        0,
    )
    .unwrap();
    let mut records = vec![
        load(0, 0x7fff_1234),
        load(0, 0x1234_5678),
        load(0, 0x7fff_1ff8),
    ];
    t.on_batch(&mut records).unwrap();
    let va = |r: &Record| match r {
        Record::Access(a) => a.vaddr.0,
        _ => unreachable!(),
    };
    let base_vpn = 0x40000000u64 >> 12;
    assert_eq!(
        va(&records[0]) >> 12,
        base_vpn + 2 + 3,
        "set R + c of period 0"
    );
    assert_eq!(va(&records[0]) & 0xfff, 0x234);
    assert_eq!(va(&records[1]) >> 12, base_vpn + 16 + 2 + 3, "period 1");
    assert_eq!(
        va(&records[2]) >> 12,
        va(&records[0]) >> 12,
        "same page, same place"
    );
    assert_eq!(va(&records[2]) & 0xfff, 0xff8);
}

#[test]
fn given_an_access_across_a_page_boundary_then_its_two_pages_are_placed_apart_and_both_counted() {
    let mut t = registry::build(&spec("tlb_coloring"), &xeon_l1(), 0).unwrap();
    let mut records = vec![Record::Access(Access::new(
        ThreadId(0),
        AccessKind::Store,
        VirtAddr(0x5000_0ffc),
        8,
    ))];
    t.on_batch(&mut records).unwrap();
    assert_eq!(records.len(), 2);
    let (a, b) = match (records[0], records[1]) {
        (Record::Access(a), Record::Access(b)) => (a, b),
        _ => unreachable!(),
    };
    assert_eq!((a.size, b.size), (4, 4));
    assert_eq!(a.vaddr.0 & 0xfff, 0xffc);
    assert_eq!(b.vaddr.0 & 0xfff, 0);
    assert_ne!(
        a.vaddr.0 >> 12,
        (b.vaddr.0 >> 12) - 1,
        "the next page went to the next period"
    );
}

#[test]
fn given_a_technique_run_then_it_equals_a_plain_run_with_lanes_on_the_records_it_produced() {
    // The general path (every access queued on the timeline) against run_direct with the memo
    // lane and the fast lane, on the same records: the framework changes no count by itself.
    let mut rng = tlblab_types::SplitMix64::new(11);
    let mut records = Vec::new();
    for i in 0..20_000u64 {
        let t = (i / 97 % 3) as u32;
        let page = rng.next_u64() % 40;
        records.push(load(
            t,
            0x2000_0000 + t as u64 * 0x100_0000 + page * 4096 + (i % 512) * 8,
        ));
    }
    for opts in [RunOptions::tlb_only(3), RunOptions::no_caches(3)] {
        let mut with = System::new(xeon_l1(), opts).unwrap();
        registry::install(&mut with, &spec("tlb_coloring:colors_per_thread=2")).unwrap();
        with.run(&mut VecSource::new(records.clone())).unwrap();

        let mut t =
            registry::build(&spec("tlb_coloring:colors_per_thread=2"), &xeon_l1(), 3).unwrap();
        let mut moved = records.clone();
        t.on_batch(&mut moved).unwrap();
        let mut plain = System::new(xeon_l1(), opts).unwrap();
        plain.run_slice(&moved).unwrap();

        let mut a = with.stats();
        a.technique = None;
        assert_eq!(a, plain.stats());
    }
}

/// A test technique that answers every switch itself and counts its calls.
#[derive(Default)]
struct Counting {
    switches: u64,
    switch_ins: u64,
    migrations: u64,
    events: u64,
}

impl Technique for Counting {
    fn declaration(&self) -> Declaration {
        Declaration::named("counting")
    }

    fn on_space_switch(
        &mut self,
        _sys: &mut System,
        _cpu: usize,
        _from: Option<usize>,
        _to: usize,
    ) -> Result<Option<u64>, SimError> {
        self.switches += 1;
        Ok(Some(5))
    }
    fn on_switch_in(&mut self, _: &mut System, _: usize, _: ThreadId) -> Result<u64, SimError> {
        self.switch_ins += 1;
        Ok(0)
    }
    fn on_migrate(
        &mut self,
        _: &mut System,
        _: ThreadId,
        _: usize,
        _: usize,
        _: usize,
    ) -> Result<u64, SimError> {
        self.migrations += 1;
        Ok(100)
    }
    fn on_event(&mut self, _: &mut System, _: usize, _: &Event) -> Result<u64, SimError> {
        self.events += 1;
        Ok(0)
    }
    fn counters(&self) -> Vec<(String, u64)> {
        vec![
            ("switches".into(), self.switches),
            ("switch_ins".into(), self.switch_ins),
            ("migrations".into(), self.migrations),
            ("events".into(), self.events),
        ]
    }
}

fn two_processes() -> Vec<Record> {
    let ev = Record::Event;
    vec![
        ev(Event::ThreadStart {
            thread: ThreadId(0),
            process: 0,
        }),
        ev(Event::ThreadStart {
            thread: ThreadId(1),
            process: 1,
        }),
        load(0, 0x1000),
        ev(Event::ContextSwitch {
            core: CoreId(0),
            from: ThreadId(0),
            to: ThreadId(1),
        }),
        load(1, 0x1000),
        ev(Event::ContextSwitch {
            core: CoreId(0),
            from: ThreadId(1),
            to: NO_THREAD,
        }),
    ]
}

#[test]
fn given_a_technique_that_answers_switches_then_it_replaces_the_policy_and_its_cycles_are_charged()
{
    let mut opts = tlb_only();
    opts.os.switch = SwitchPolicy::Hook;
    let mut sys = System::new(xeon_l1(), opts).unwrap();
    sys.install_technique(Box::new(Counting::default()))
        .unwrap();
    sys.run(&mut VecSource::new(two_processes())).unwrap();
    let st = sys.stats();
    let c = &st.technique.as_ref().unwrap().counters;
    // Thread 0's first switch-in (no space before: still a change of address space) and 0 -> 1.
    assert_eq!(c["switches"], 2);
    assert_eq!(c["switch_ins"], 2);
    assert_eq!(c["events"], 4);
    assert_eq!(st.os.tlb_flushes, 0, "the policy did not run");
    assert_eq!(st.os.switch_cycles, 10);
}

#[test]
fn given_the_hook_policy_and_no_technique_then_the_first_switch_is_an_error_that_says_so() {
    let mut opts = tlb_only();
    opts.os.switch = SwitchPolicy::Hook;
    let mut sys = System::new(xeon_l1(), opts).unwrap();
    let e = sys.run(&mut VecSource::new(two_processes())).unwrap_err();
    assert!(
        e.0.contains("os.switch = \"hook\"") && e.0.contains("none is installed"),
        "{e}"
    );
}

#[test]
fn given_a_migration_then_the_technique_is_called_and_its_cycles_go_to_the_new_cpu() {
    let mut cfg = xeon_l1();
    cfg.cores = 2;
    let mut sys = System::new(cfg, tlb_only()).unwrap();
    sys.install_technique(Box::new(Counting::default()))
        .unwrap();
    let records = vec![
        load(0, 0x1000),
        Record::Event(Event::Migrate {
            thread: ThreadId(0),
            core: CoreId(1),
        }),
        load(0, 0x1000),
    ];
    sys.run(&mut VecSource::new(records)).unwrap();
    let st = sys.stats();
    assert_eq!(st.technique.unwrap().counters["migrations"], 1);
    assert!(
        sys.clock(1) >= 100,
        "the migration's 100 cycles are charged to cpu 1"
    );
}

#[test]
fn given_marked_phases_then_each_has_the_counters_of_its_own_stretch() {
    let mut records = vec![Record::Event(Event::PhaseBegin { region: 0 })];
    records.extend((0..10u64).map(|p| load(0, p * 4096)));
    records.push(Record::Event(Event::PhaseEnd { region: 0 }));
    records.push(Record::Event(Event::PhaseBegin { region: 0 }));
    records.extend((0..10u64).map(|p| load(0, p * 4096)));
    records.push(Record::Event(Event::PhaseEnd { region: 0 }));
    let mut sys = System::new(xeon_l1(), tlb_only()).unwrap();
    sys.run_slice(&records).unwrap();
    let st = sys.stats();
    assert_eq!(st.phases.len(), 2);
    let (first, second) = (&st.phases[0], &st.phases[1]);
    assert_eq!((first.occurrence, second.occurrence), (0, 1));
    assert_eq!(first.name, "region 0");
    assert_eq!(first.stats.references, 10);
    // 10 pages over 16 sets x 4 ways: the first pass misses all, the second none.
    assert_eq!(first.stats.tlb[0].misses, 10);
    assert_eq!(second.stats.tlb[0].misses, 0);
    assert_eq!(first.stats.walks, 10);
    assert_eq!(
        first.elapsed_cycles() + second.elapsed_cycles(),
        st.cycles,
        "the phases cover the whole run"
    );
    let mut bad = System::new(xeon_l1(), tlb_only()).unwrap();
    let e = bad
        .run_slice(&[Record::Event(Event::PhaseEnd { region: 3 })])
        .unwrap_err();
    assert!(e.0.contains("PhaseEnd of region 3"), "{e}");
}

#[test]
fn given_a_machine_file_technique_table_then_its_values_of_any_type_are_read_as_text() {
    let toml_like = serde_json::json!({"name": "tlb_coloring", "reserved": 2, "fetches": false});
    let spec: TechniqueSpec = serde_json::from_value(toml_like).unwrap();
    let mut want = BTreeMap::new();
    want.insert("reserved".to_string(), "2".to_string());
    want.insert("fetches".to_string(), "false".to_string());
    assert_eq!(spec.params, want);
    assert!(registry::build(&spec, &xeon_l1(), 0).is_ok());
}
