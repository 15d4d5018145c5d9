//! TLB migration (seed 000): behaviour tests with closed-form answers.
//!
//! - with the ASID filter (and in v3/v4's hardware stream) an entry of another address space is
//!   never restored; with `valid` it is (the filter is what keeps it out);
//! - a restored entry hits on the destination's first access, for every interface that writes
//!   the TLB (pld direct, v1-v4); pld indirect writes none but warms the descriptors;
//! - the storage limit (§7) caps the entries carried;
//! - an ASID rollover between save and restore discards the saved entries (§3.3);
//! - a thread that migrates back before running restores nothing (§7);
//! - the used filter (§5.2) and the selective-restore predictor (§9) carry only what was used;
//! - a technique run without migrations counts exactly what a technique-free run counts;
//! - v1's and v2's per-entry ASID update (§5.2, `asid_update`) costs one instruction an entry.

mod common;

use common::{assert_counters, cache, machine, tlb};
use tlblab_core::os::{OsConfig, SwitchPolicy};
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::{registry, techniques};
use tlblab_core::{MachineConfig, RunOptions, Stats, System};
use tlblab_trace::record::NO_THREAD;
use tlblab_trace::{Access, Event, Record, VecSource};
use tlblab_types::{AccessKind, CoreId, ThreadId, VirtAddr};

const BASE: u64 = 0x2000_0000;
/// 17 pages: each page has its own second-level descriptor line (seed 000 §4.3's 68k stride).
const STRIDE: u64 = 17 * 4096;

/// `cores` cores, each with a 16-entry fully associative LRU data TLB, a private L1 and a shared
/// L2: an ARMv7 machine like gem5-a7 (seed 000 Listing 6.1), smaller.
fn machine_of(cores: usize) -> MachineConfig {
    let mut t = tlb("DTB", 1, 16, 16, ReplacementKind::Lru);
    t.kind = tlblab_core::tlb::TlbKind::Data;
    let mut i = tlb("ITB", 1, 16, 16, ReplacementKind::Lru);
    i.kind = tlblab_core::tlb::TlbKind::Instr;
    let mut m = machine(PageTableFormat::Armv7Short, vec![i, t]);
    m.cores = cores;
    m.name = "gem5-test".into();
    let l1 = cache("L1D", 1, 32 << 10, 2, 2);
    let mut l2 = cache("L2", 2, 512 << 10, 8, 20);
    l2.shared = true;
    m.caches = vec![l1, l2];
    m.memory.bytes = 1 << 30;
    m.memory.latency = 90;
    m
}

fn sys(cores: usize, asid_bits: u8, technique: Option<&str>) -> System {
    sys_with(
        cores,
        OsConfig {
            switch: SwitchPolicy::AsidTagged,
            asid_bits,
            ..OsConfig::default()
        },
        technique,
    )
}

/// `machine_of(cores)` under `os`, with `technique` installed if given.
fn sys_with(cores: usize, os: OsConfig, technique: Option<&str>) -> System {
    let mut s = System::new(
        machine_of(cores),
        RunOptions {
            os,
            ..RunOptions::default()
        },
    )
    .unwrap();
    if let Some(t) = technique {
        registry::install(&mut s, &techniques::parse_spec(t).unwrap()).unwrap();
    }
    s
}

fn ev(e: Event) -> Record {
    Record::Event(e)
}

fn load(thread: u32, va: u64) -> Record {
    Record::Access(Access::new(
        ThreadId(thread),
        AccessKind::Load,
        VirtAddr(va),
        4,
    ))
}

fn start(thread: u32, process: u32, core: u16) -> Vec<Record> {
    vec![
        ev(Event::ThreadStart {
            thread: ThreadId(thread),
            process,
        }),
        switch_in(thread, core),
    ]
}

fn switch_in(thread: u32, core: u16) -> Record {
    ev(Event::ContextSwitch {
        core: CoreId(core),
        from: NO_THREAD,
        to: ThreadId(thread),
    })
}

fn migrate(thread: u32, core: u16) -> Record {
    ev(Event::Migrate {
        thread: ThreadId(thread),
        core: CoreId(core),
    })
}

fn touch(thread: u32, pages: impl IntoIterator<Item = u64>) -> Vec<Record> {
    pages
        .into_iter()
        .map(|p| load(thread, BASE + p * STRIDE + 64))
        .collect()
}

fn phase(region: u32, body: Vec<Record>) -> Vec<Record> {
    let mut v = vec![ev(Event::PhaseBegin { region })];
    v.extend(body);
    v.push(ev(Event::PhaseEnd { region }));
    v
}

fn run(s: &mut System, records: Vec<Record>) -> Stats {
    s.run(&mut VecSource::new(records)).unwrap();
    s.stats()
}

fn counter(st: &Stats, name: &str) -> u64 {
    st.technique.as_ref().unwrap().counters[name]
}

/// The misses of the last phase (the destination's first access).
fn last_phase_misses(st: &Stats) -> u64 {
    let dtb = st.tlb_levels.iter().position(|n| n == "DTB").unwrap();
    st.phases.last().unwrap().stats.tlb[dtb].misses
}

/// Thread 0 touches `pages` pages on core 0, migrates to core 1, is switched in there and
/// touches them again inside a phase.
fn migrate_and_retouch(pages: u64, technique: Option<&str>) -> (System, Stats) {
    let mut s = sys(2, 8, technique);
    let st = touch_migrate_retouch(&mut s, pages);
    (s, st)
}

/// On `s`: thread 0 touches `pages` pages on core 0, migrates to core 1, is switched in there
/// and touches them again inside a phase.
fn touch_migrate_retouch(s: &mut System, pages: u64) -> Stats {
    let mut r = start(0, 0, 0);
    r.extend(touch(0, 0..pages));
    r.push(migrate(0, 1));
    r.push(switch_in(0, 1));
    r.extend(phase(0, touch(0, 0..pages)));
    run(s, r)
}

#[test]
fn given_a_migration_when_entries_were_restored_then_the_destinations_first_accesses_all_hit() {
    let (_, off) = migrate_and_retouch(8, None);
    assert_eq!(
        last_phase_misses(&off),
        8,
        "without migration every page misses"
    );
    for iface in ["pld_direct", "v1", "v2", "v3", "v4"] {
        let (s, st) = migrate_and_retouch(8, Some(&format!("tlb_migration:interface={iface}")));
        assert_eq!(
            last_phase_misses(&st),
            0,
            "{iface}: a restored entry must hit"
        );
        assert_eq!(counter(&st, "entries_restored"), 8, "{iface}");
        assert_eq!(counter(&st, "entries_saved"), 8, "{iface}");
        assert!(counter(&st, "save_cycles") > 0 && counter(&st, "restore_cycles") > 0);
        let dest = s.data_tlbs_of(1)[0];
        assert_eq!(s.tlbs[dest].valid_count(), 8, "{iface}");
    }
    // pld indirect writes no entry: every page misses, but its walk finds the descriptor cached.
    let (_, st) = migrate_and_retouch(8, Some("tlb_migration:interface=pld_indirect"));
    assert_eq!(last_phase_misses(&st), 8);
    let cold = off.phases.last().unwrap().stats.walk_refs_by_source.clone();
    let warm = st.phases.last().unwrap().stats.walk_refs_by_source.clone();
    // Walk references served by the destination's L1 (the sources are L1D, L2, memory): all
    // 16 (two per page) after the indirect restore, fewer cold.
    assert_eq!(warm[0], 16, "indirect: {warm:?}");
    assert!(cold[0] < 16, "cold: {cold:?}");
}

/// Seed 000 §5.2: v1 and v2 write each entry's ASID as it was saved, so "it was necessary to
/// update each entry every time before writing it"; v3 and v4 do that "implicitly during the
/// initialization of the stream". With `asid_update`, v1's and v2's restore of n entries costs
/// n bit-field inserts more (gem5's CPU: one instruction, 2 cycles); v3's, v4's and pld's
/// restores, and every save, are unchanged, and so is what is restored.
#[test]
fn given_asid_update_when_v1_or_v2_restores_n_entries_then_it_costs_n_inserts_more() {
    for pages in [1u64, 5, 12] {
        for iface in ["pld_direct", "v1", "v2", "v3", "v4"] {
            let plain = format!("tlb_migration:interface={iface}");
            let (_, off) = migrate_and_retouch(pages, Some(&plain));
            let (_, on) = migrate_and_retouch(pages, Some(&format!("{plain},asid_update=true")));
            let extra = if matches!(iface, "v1" | "v2") {
                2 * pages
            } else {
                0
            };
            assert_eq!(
                counter(&on, "restore_cycles"),
                counter(&off, "restore_cycles") + extra,
                "{iface}, {pages} pages"
            );
            assert_eq!(
                counter(&on, "save_cycles"),
                counter(&off, "save_cycles"),
                "{iface}"
            );
            assert_eq!(counter(&on, "entries_restored"), pages, "{iface}");
            assert_eq!(last_phase_misses(&on), 0, "{iface}");
        }
    }
}

/// Threads 0 (process 0) and 1 (process 1) share core 0, each touching its own pages; then
/// thread 0 migrates to core 1.
fn two_processes_then_migrate(technique: &str) -> (System, Stats) {
    let mut s = sys(2, 8, Some(technique));
    let mut r = start(0, 0, 0);
    r.extend(touch(0, 0..5));
    r.push(ev(Event::ThreadStart {
        thread: ThreadId(1),
        process: 1,
    }));
    r.push(switch_in(1, 0));
    r.extend(touch(1, 100..106));
    r.push(switch_in(0, 0));
    r.push(migrate(0, 1));
    r.push(switch_in(0, 1));
    let st = run(&mut s, r);
    (s, st)
}

#[test]
fn given_another_address_spaces_entries_when_the_filter_is_asid_then_none_is_restored() {
    for spec in [
        "tlb_migration:interface=pld_direct",
        "tlb_migration:interface=v1",
        "tlb_migration:interface=v2,filter=asid",
        "tlb_migration:interface=v3",
        "tlb_migration:interface=v4",
        "tlb_migration:interface=v4,filter=used",
    ] {
        let (s, st) = two_processes_then_migrate(spec);
        let asid0 = s.spaces[0].asid;
        let dest = s.data_tlbs_of(1)[0];
        let entries: Vec<_> = s.tlbs[dest].entries().collect();
        assert_eq!(entries.len(), 5, "{spec}: {entries:?}");
        assert!(entries.iter().all(|e| e.asid == asid0), "{spec}");
        assert_eq!(counter(&st, "entries_saved"), 5, "{spec}");
        if !spec.contains("v3") && !spec.contains("v4") {
            assert_eq!(counter(&st, "filtered_other_asid"), 6, "{spec}");
            assert_eq!(counter(&st, "filtered_invalid"), 16 - 11, "{spec}");
        }
    }
    // Only the filter keeps them out: `valid` carries all 11 (v2 writes each with its own ASID).
    let (s, st) = two_processes_then_migrate("tlb_migration:interface=v2,filter=valid");
    let dest = s.data_tlbs_of(1)[0];
    assert_eq!(s.tlbs[dest].valid_count(), 11);
    assert_eq!(counter(&st, "entries_saved"), 11);
    // `none` stores every slot, the 5 invalid ones too, and restores the 11 valid.
    let (s, st) = two_processes_then_migrate("tlb_migration:interface=v1,filter=none");
    assert_eq!(counter(&st, "entries_saved"), 16);
    assert_eq!(s.tlbs[s.data_tlbs_of(1)[0]].valid_count(), 11);
}

#[test]
fn given_a_storage_limit_when_more_entries_pass_the_filter_then_only_limit_are_carried() {
    for iface in ["pld_direct", "v2", "v4"] {
        let (_, st) =
            migrate_and_retouch(8, Some(&format!("tlb_migration:interface={iface},limit=3")));
        assert_eq!(counter(&st, "entries_saved"), 3, "{iface}");
        assert_eq!(counter(&st, "dropped_limit"), 5, "{iface}");
        assert_eq!(counter(&st, "entries_restored"), 3, "{iface}");
        assert_eq!(last_phase_misses(&st), 5, "{iface}");
    }
    // The default limit is the TLB's size (§7): nothing dropped.
    let (_, st) = migrate_and_retouch(16, Some("tlb_migration:interface=v4"));
    assert_counters(&st, &[("dropped_limit", 0), ("entries_saved", 16)]);
}

#[test]
fn given_an_asid_rollover_between_save_and_restore_then_the_saved_entries_are_discarded() {
    // 2-bit ASIDs: three per generation. Thread 0 (process 0) migrates to core 1; before it
    // runs there, threads of processes 1-3 run on core 1, and the third needs a fourth ASID.
    let records = |rollover: bool| {
        let mut r = start(0, 0, 0);
        r.extend(touch(0, 0..6));
        r.push(migrate(0, 1));
        let others: &[u32] = if rollover { &[1, 2, 3] } else { &[1] };
        for &t in others {
            r.push(ev(Event::ThreadStart {
                thread: ThreadId(t),
                process: t,
            }));
            r.push(switch_in(t, 1));
            r.extend(touch(t, [200 + t as u64]));
        }
        r.push(switch_in(0, 1));
        r.extend(phase(0, touch(0, 0..6)));
        r
    };
    let mut s = sys(2, 2, Some("tlb_migration:interface=v4"));
    let st = run(&mut s, records(true));
    assert_eq!(st.os.asid_rollovers, 1);
    assert_counters(&st, &[("rollover_discards", 1), ("entries_restored", 0)]);
    assert_eq!(last_phase_misses(&st), 6);
    // The same without the rollover restores all six.
    let mut s = sys(2, 2, Some("tlb_migration:interface=v4"));
    let st = run(&mut s, records(false));
    assert_eq!(st.os.asid_rollovers, 0);
    assert_eq!(counter(&st, "rollover_discards"), 0);
    assert_eq!(last_phase_misses(&st), 0);
}

#[test]
fn given_a_thread_that_migrates_back_before_running_then_nothing_is_restored() {
    // Four pages touched on core 0, the thread migrated to core 1, then on to `then`, where it
    // runs first and touches them again.
    let via_core_1_to = |then| {
        let mut s = sys(3, 8, Some("tlb_migration:interface=v2"));
        let mut r = start(0, 0, 0);
        r.extend(touch(0, 0..4));
        r.push(migrate(0, 1));
        r.push(migrate(0, then));
        r.push(switch_in(0, then));
        r.extend(phase(0, touch(0, 0..4)));
        run(&mut s, r)
    };
    let st = via_core_1_to(0);
    assert_counters(
        &st,
        &[
            ("saves", 1),
            ("returned_before_running", 1),
            ("restores", 0),
        ],
    );
    assert_eq!(
        last_phase_misses(&st),
        0,
        "its entries were still on core 0"
    );
    // Migrating on (0 -> 1 -> 2) before running keeps the set read on core 0.
    let st = via_core_1_to(2);
    assert_counters(&st, &[("saves", 1), ("restores", 1)]);
    assert_eq!(last_phase_misses(&st), 0);
}

#[test]
fn given_entries_restored_but_not_used_when_the_thread_migrates_again_then_used_carries_only_the_used(
) {
    // 8 pages on core 0; on core 1 (all 8 restored) only pages 0-2 are touched; then core 2.
    let records = || {
        let mut r = start(0, 0, 0);
        r.extend(touch(0, 0..8));
        r.push(migrate(0, 1));
        r.push(switch_in(0, 1));
        r.extend(touch(0, 0..3));
        r.push(migrate(0, 2));
        r.push(switch_in(0, 2));
        r
    };
    let mut s = sys(3, 8, Some("tlb_migration:interface=v4,filter=used"));
    let st = run(&mut s, records());
    assert_counters(&st, &[("entries_saved", 8 + 3), ("filtered_unused", 5)]);
    assert_eq!(s.tlbs[s.data_tlbs_of(2)[0]].valid_count(), 3);
    let mut s = sys(3, 8, Some("tlb_migration:interface=v4,filter=asid"));
    let st = run(&mut s, records());
    assert_eq!(counter(&st, "entries_saved"), 8 + 8);
}

/// The uses predictor (min_uses=2) at a migration after pages `hot` were touched three times,
/// then pages `cold` once.
fn uses_predictor_after(hot: std::ops::Range<u64>, cold: std::ops::Range<u64>) -> Stats {
    let mut s = sys(
        2,
        8,
        Some("tlb_migration:interface=v4,predict=uses,min_uses=2"),
    );
    let mut r = start(0, 0, 0);
    for _ in 0..3 {
        r.extend(touch(0, hot.clone()));
    }
    r.extend(touch(0, cold));
    r.push(migrate(0, 1));
    r.push(switch_in(0, 1));
    run(&mut s, r)
}

#[test]
fn given_the_uses_predictor_then_only_entries_used_often_enough_are_carried() {
    // Pages 0-3 touched three times, pages 4-9 once, then a migration.
    let st = uses_predictor_after(0..4, 4..10);
    assert_counters(&st, &[("entries_saved", 4), ("filtered_predictor", 6)]);
    // Age: only the six touched last are within 6 references of the migration.
    let mut s = sys(
        2,
        8,
        Some("tlb_migration:interface=v4,predict=age,max_age=6"),
    );
    let mut r = start(0, 0, 0);
    r.extend(touch(0, 0..10));
    r.push(migrate(0, 1));
    r.push(switch_in(0, 1));
    let st = run(&mut s, r);
    assert_eq!(counter(&st, "entries_saved"), 6, "{:?}", st.technique);
}

#[test]
fn given_no_migration_then_a_technique_run_counts_what_a_technique_free_run_counts() {
    let mut r = start(0, 0, 0);
    for round in 0..4 {
        r.extend(touch(0, (0..24).map(|p| (p * 7 + round) % 24)));
    }
    r.extend(start(1, 1, 1));
    r.extend(touch(1, 0..30));
    let off = run(&mut sys(2, 8, None), r.clone());
    for spec in [
        "tlb_migration:interface=pld_direct",
        "tlb_migration:interface=v4,filter=used",
        "tlb_migration:interface=v4,predict=uses",
    ] {
        let on = run(&mut sys(2, 8, Some(spec)), r.clone());
        assert_eq!(on.total, off.total, "{spec}");
        assert_eq!(on.cycles, off.cycles, "{spec}");
    }
}

#[test]
fn bad_parameters_name_the_parameter() {
    let m = machine_of(2);
    let e = |t: &str| {
        registry::build(&techniques::parse_spec(t).unwrap(), &m, 0)
            .err()
            .unwrap()
    };
    assert!(e("tlb_migration:interface=v5").contains("'interface' expects one of"));
    assert!(e("tlb_migration:interface=v4,filter=valid").contains("'filter' expects asid or used"));
    assert!(e("tlb_migration:save_base=12").contains("'save_base'"));
    assert!(e("tlb_migration:predict=lru").contains("'predict'"));
}

// Found by the reference's twin (tests/reference_techniques.rs,
// `tlb_migration_agrees_with_its_twin`, 2026-11-26): each failed before its fix.

#[test]
fn given_entries_that_replaced_much_used_ones_then_their_uses_count_from_their_fill() {
    // 16 pages touched three times fill the 16-entry level; 16 others touched once replace
    // them. Each new entry has one use since it was filled (seed 000 §5.2: a used bit is
    // clear in a new entry), so none reaches min_uses=2. Before the fix a new entry
    // inherited its slot's count (3 + 1) and all 16 were carried.
    let st = uses_predictor_after(0..16, 16..32);
    assert_counters(&st, &[("entries_saved", 0), ("filtered_predictor", 16)]);
}

#[test]
fn given_a_locked_entry_when_v1_restores_it_then_it_arrives_unlocked() {
    // No layout of the gem5 interfaces has a lock field (seed 000 Tables A.8-A.10): the copy
    // on the destination is an ordinary entry. Before the fix it took a lock there.
    let mut cfg = machine_of(2);
    for t in &mut cfg.tlbs {
        t.lockable = 4;
    }
    let opts = RunOptions {
        os: OsConfig {
            switch: SwitchPolicy::AsidTagged,
            asid_bits: 8,
            ..OsConfig::default()
        },
        ..RunOptions::default()
    };
    let mut s = System::new(cfg, opts).unwrap();
    let spec = techniques::parse_spec("tlb_migration:interface=v1").unwrap();
    registry::install(&mut s, &spec).unwrap();
    let mut r = start(0, 0, 0);
    r.extend(touch(0, 0..2));
    r.push(ev(Event::TlbLock {
        process: 0,
        page: VirtAddr(BASE),
        core: CoreId(0),
        lock: true,
    }));
    r.push(migrate(0, 1));
    r.push(switch_in(0, 1));
    let st = run(&mut s, r);
    assert_eq!(counter(&st, "entries_restored"), 2);
    let held = |core: usize| -> Vec<(u64, bool)> {
        s.tlbs[s.data_tlbs_of(core)[0]]
            .entries()
            .map(|e| (e.vpn.0 << 12, e.locked))
            .collect()
    };
    assert!(held(0).contains(&(BASE, true)));
    assert!(held(1).contains(&(BASE, false)), "{:?}", held(1));
    assert!(held(1).iter().all(|&(_, locked)| !locked));
}

#[test]
fn given_a_preload_that_hit_then_the_threads_next_access_is_counted_as_a_use() {
    // Page 0 on core 0, then core 1 (restored by a walk, used), then core 0 again, where the
    // preload hits the entry still there; the access after it is a use, so the next save
    // with filter=used keeps the page. Before the fix the preload's lookup left the level's
    // last-hit memo on the entry, the access hit the memo, which counts no use, and the page
    // was filtered as unused.
    let mut s = sys(2, 8, Some("tlb_migration:interface=pld_direct,filter=used"));
    let mut r = start(0, 0, 0);
    r.extend(touch(0, [0]));
    for core in [1, 0] {
        r.push(migrate(0, core));
        r.push(switch_in(0, core));
        r.extend(touch(0, [0]));
    }
    r.push(migrate(0, 1));
    let st = run(&mut s, r);
    assert_counters(
        &st,
        &[("saves", 3), ("filtered_unused", 0), ("entries_saved", 3)],
    );
}

/// Thread 0 fills core 0's 16-entry TLB with its 16 pages, migrates to core 1 under v4 and
/// touches them again, with the kernel's own pages traced (`os`): `kernel_pages` before the
/// restore, `kernel_return_pages` after it (seed 000 §7: the restore is in finish_task_switch,
/// the kernel's way back to the task follows). Returns the misses of the retouch.
fn retouch_misses_with_kernel(
    kernel_pages: u32,
    kernel_return_pages: u32,
    technique: Option<&str>,
) -> u64 {
    let mut s = System::new(
        machine_of(2),
        RunOptions {
            os: OsConfig {
                switch: SwitchPolicy::AsidTagged,
                kernel_pages,
                kernel_return_pages,
                ..OsConfig::default()
            },
            ..RunOptions::default()
        },
    )
    .unwrap();
    if let Some(t) = technique {
        registry::install(&mut s, &techniques::parse_spec(t).unwrap()).unwrap();
    }
    let mut r = start(0, 0, 0);
    r.extend(touch(0, 0..16));
    r.push(migrate(0, 1));
    r.push(switch_in(0, 1));
    r.extend(phase(0, touch(0, 0..16)));
    last_phase_misses(&run(&mut s, r))
}

/// gem5 keeps its TLB table most recent first and the interfaces read it by index (§5.2), so a
/// v4 restore writes the page used last first and the page used first last: after it, the
/// entries the kernel's later pages displace are the ones used last before the migration, and
/// the thread's retouch misses exactly those (each miss evicts an older kernel entry), not all
/// 16 (as a restore in use order would make every retouch evict the next page needed). Kernel
/// pages touched before the restore displace nothing of the thread's.
#[test]
fn given_kernel_pages_after_the_restore_when_the_tlb_is_full_then_exactly_that_many_retouches_miss()
{
    let v4 = Some("tlb_migration:interface=v4");
    assert_eq!(
        retouch_misses_with_kernel(0, 3, None),
        16,
        "without migration all miss"
    );
    assert_eq!(retouch_misses_with_kernel(0, 0, v4), 0);
    assert_eq!(
        retouch_misses_with_kernel(3, 0, v4),
        0,
        "before the restore: displaced by it"
    );
    for k in [1, 3, 5] {
        assert_eq!(
            retouch_misses_with_kernel(0, k, v4),
            k as u64,
            "{k} kernel pages after"
        );
        assert_eq!(
            retouch_misses_with_kernel(2, k, v4),
            k as u64,
            "2 before, {k} after"
        );
    }
}

/// The kernel's page counts are bounded together (`KERNEL_PAGES_MAX`, 512): one page more
/// than the room the others leave is refused with the field's name, the room itself is not.
#[test]
fn kernel_page_counts_beyond_the_limit_are_refused_with_the_field() {
    let with = |field: &str, n: u32| {
        let mut os = OsConfig {
            kernel_pages: 500,
            ..OsConfig::default()
        };
        match field {
            "os.kernel_return_pages" => os.kernel_return_pages = n,
            _ => os.migrate_kernel_pages = n,
        }
        os.validate()
    };
    for field in ["os.kernel_return_pages", "os.migrate_kernel_pages"] {
        let e = with(field, 13).unwrap_err();
        assert!(e.contains(field) && e.contains("found 13"), "{e}");
        assert!(with(field, 12).is_ok(), "{field}");
    }
}

/// Thread 0 touches `pages` of its pages on core 0 of 16-entry TLBs, migrates to core 1 with
/// the migration path's `migrate_kernel_pages` kernel pages touched on core 0 first, is switched
/// in and retouches them. Returns (the retouch's misses, entries saved, entries of the thread
/// restored).
fn retouch_after_migration_path(
    pages: u64,
    migrate_kernel_pages: u32,
    technique: Option<&str>,
) -> (u64, u64, u64) {
    let mut s = sys_with(
        2,
        OsConfig {
            switch: SwitchPolicy::AsidTagged,
            migrate_kernel_pages,
            ..OsConfig::default()
        },
        technique,
    );
    let st = touch_migrate_retouch(&mut s, pages);
    let (saved, restored) = if technique.is_some() {
        (
            counter(&st, "entries_saved"),
            counter(&st, "entries_restored"),
        )
    } else {
        (0, 0)
    };
    (last_phase_misses(&st), saved, restored)
}

/// The migration path's kernel pages (`os.migrate_kernel_pages`) are touched on the old core
/// before the save (seed 000 §7 saves in `move_queued_task`), with the thread's ASID current:
/// under v4 (the ASID filter of gem5's hardware stream) they are saved and restored with the
/// thread's entries, and in a full TLB they have displaced the thread's M oldest pages before
/// the save, so exactly those M miss after the restore (each miss evicts a restored kernel
/// entry, the oldest after the reversed restore). Below capacity nothing of the thread's is lost.
/// The A7's pld restore leaves the global entries out.
#[test]
fn given_migration_path_pages_when_the_tlb_is_full_then_the_thread_loses_that_many_before_the_save()
{
    let v4 = Some("tlb_migration:interface=v4");
    assert_eq!(retouch_after_migration_path(16, 3, None).0, 16);
    assert_eq!(retouch_after_migration_path(16, 0, v4), (0, 16, 16));
    for m in [1u32, 3, 5] {
        let m64 = m as u64;
        assert_eq!(
            retouch_after_migration_path(16, m, v4),
            (m64, 16, 16 - m64),
            "{m} kernel pages on the migration path, 16 pages"
        );
        assert_eq!(
            retouch_after_migration_path(10, m, v4),
            (0, 10 + m64, 10),
            "{m} kernel pages, 10 pages: all fit"
        );
    }
    let pld = Some("tlb_migration:interface=pld_direct");
    assert_eq!(
        retouch_after_migration_path(10, 3, pld).1,
        10,
        "pld leaves the kernel's out"
    );
}
