//! Behaviour of the built-in workloads: every one builds, is deterministic, and emits
//! well-formed events; closed-form checks for the seeds' benchmarks.

use std::collections::{BTreeMap, HashSet};
use tlblab_trace::record::{Event, Record, NO_THREAD};
use tlblab_trace::source::RecordSource;
use tlblab_trace::workloads::{build, catalog, Params};
use tlblab_types::{AccessKind, ThreadId};

/// Small parameters so every workload runs in milliseconds.
fn small(name: &str) -> Params {
    let p: &[(&str, u64)] = match name {
        "strided" => &[("pages", 64), ("rounds", 2)],
        "random" => &[("pages", 64), ("accesses", 1000)],
        "sequential" => &[("bytes", 65536), ("rounds", 1)],
        "chase" => &[("pages", 64), ("accesses", 1000)],
        "migration_4k" | "migration_68k" => &[("pages", 8), ("iterations", 3)],
        "rr_migration" => &[("pages", 4), ("iterations", 2)],
        "host_migrate" => &[
            ("pages", 8),
            ("evict", 16),
            ("evict_lines", 16),
            ("iterations", 2),
        ],
        "tlb_thrash" => &[("array_pages", 64), ("n", 1000)],
        "gups" => &[("log2_words", 12), ("updates", 1000)],
        "graph500_bfs" => &[("scale", 8), ("roots", 2)],
        "graph500_list" => &[("scale", 8), ("roots", 2)],
        "gapbs_bc" => &[("scale", 8), ("sources", 2)],
        "hash_join" => &[("buckets", 256), ("inner_rows", 500), ("outer_rows", 500)],
        "canneal" => &[("elements", 512), ("swaps", 200)],
        "liblinear" => &[("instances", 300), ("iterations", 2)],
        "lat_ctx" => &[("procs", 4), ("kib", 4), ("rounds", 3)],
        "hot_potato" => &[("rounds", 10)],
        "extreme" => &[("procs", 3), ("pages", 8), ("rounds", 4)],
        "l4_ipc" => &[("clients", 3), ("ipcs", 50)],
        "proc_create" => &[("mode", 2), ("rounds", 2), ("kernel_instrs", 2000)],
        "rt_table6_1" | "rt_same_diff_set" | "rt_malloc_vs_tlb_malloc" => &[("hyperperiods", 1)],
        "rt_benchmark_pair" | "rt_noisy_sets" => &[("hyperperiods", 1), ("noise", 1)],
        "lockdown_mix" => &[("repeats", 2), ("cores", 4)],
        _ => &[],
    };
    params(p)
}

fn all(name: &str, params: &Params, seed: u64) -> (Vec<Record>, Vec<String>) {
    let mut s = build(name, params, seed).unwrap();
    let mut out = Vec::new();
    while s.fill(&mut out, 777).unwrap() > 0 {
        assert!(out.len() < 20_000_000, "{name} runs away");
    }
    (out, s.region_names())
}

#[test]
fn every_workload_builds_is_deterministic_and_well_formed() {
    for w in catalog() {
        let p = small(w.name);
        let (a, regions) = all(w.name, &p, 7);
        let (b, _) = all(w.name, &p, 7);
        assert!(!a.is_empty(), "{} produced nothing", w.name);
        assert_eq!(a, b, "{} is not deterministic", w.name);
        assert!(
            a.iter().any(|r| matches!(r, Record::Access(_))),
            "{} has no accesses",
            w.name
        );
        let mut started: HashSet<u32> = HashSet::new();
        let mut any_start = false;
        let mut open_jobs: BTreeMap<(u32, u32), i32> = BTreeMap::new();
        for r in &a {
            match *r {
                Record::Event(Event::ThreadStart { thread, .. }) => {
                    started.insert(thread.0);
                    any_start = true;
                }
                Record::Event(
                    Event::Region { region, .. }
                    | Event::PhaseBegin { region }
                    | Event::PhaseEnd { region },
                ) => {
                    assert!(
                        (region as usize) < regions.len(),
                        "{}: region {region} has no name",
                        w.name
                    )
                }
                Record::Event(Event::ContextSwitch { from, to, .. }) => {
                    for t in [from, to] {
                        assert!(
                            t == NO_THREAD || started.contains(&t.0),
                            "{}: switch involves unstarted thread {t:?}",
                            w.name
                        );
                    }
                }
                Record::Event(Event::JobStart { task, job }) => {
                    *open_jobs.entry((task, job)).or_default() += 1
                }
                Record::Event(Event::JobEnd { task, job }) => {
                    *open_jobs.entry((task, job)).or_default() -= 1
                }
                Record::Access(x) if any_start => {
                    assert!(
                        started.contains(&x.thread.0),
                        "{}: access by unstarted thread {:?}",
                        w.name,
                        x.thread
                    )
                }
                _ => {}
            }
        }
        for ((t, j), c) in open_jobs {
            assert!(
                c == 0 || c == 1,
                "{}: job {t}/{j} started {c} more times than it ended",
                w.name
            );
        }
        // A different seed changes randomized workloads but must still work.
        let _ = all(w.name, &p, 8);
    }
}

#[test]
fn unknown_parameters_and_bad_values_are_named() {
    let mut p = Params::new();
    p.insert("pagez".into(), 3);
    let e = build("tlb_thrash", &p, 1).err().unwrap();
    assert!(e.contains("has no parameter 'pagez'"), "{e}");
    let mut p = Params::new();
    p.insert("tasks".into(), 5);
    let e = build("rt_table6_1", &p, 1).err().unwrap();
    assert!(e.contains("tasks must be 2, 3 or 4"), "{e}");
}

fn accesses(recs: &[Record]) -> Vec<(u32, AccessKind, u64)> {
    recs.iter()
        .filter_map(|r| {
            if let Record::Access(a) = r {
                Some((a.thread.0, a.kind, a.vaddr.0))
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn tlb_thrash_follows_alg5() {
    // 4 pages, step 3 pages: indices 0, 3, 2 (6 mod 4), 1 (9 mod 4), 0, ...
    let p: Params = params(&[("array_pages", 4), ("page_step", 3), ("n", 6)]);
    let (r, _) = all("tlb_thrash", &p, 1);
    let a = accesses(&r);
    let base = a[0].2;
    let pages: Vec<u64> = a.iter().map(|x| (x.2 - base) / 4096).collect();
    assert_eq!(pages, vec![0, 3, 2, 1, 0, 3]);
}

#[test]
fn the_68k_benchmark_touches_every_17th_page_twice_per_iteration_around_a_migration() {
    let p: Params = params(&[("pages", 4), ("iterations", 1)]);
    let (r, _) = all("migration_68k", &p, 1);
    let a = accesses(&r);
    assert_eq!(a.len(), 8);
    assert_eq!(a[1].2 - a[0].2, 17 * 4096);
    assert_eq!(a[..4], a[4..]);
    let mig = r
        .iter()
        .position(|x| matches!(x, Record::Event(Event::Migrate { .. })))
        .unwrap();
    let first_second = r.iter().filter(|x| matches!(x, Record::Access(_))).count();
    assert_eq!(first_second, 8);
    assert!(
        r[..mig]
            .iter()
            .filter(|x| matches!(x, Record::Access(_)))
            .count()
            == 4
    );
}

/// rr_migration with `code=1`: before each of the four runs one instruction fetch, outside the
/// run's phase, on a page in the same 16 MiB span as every data page (one first-level descriptor
/// line, seed 000 §8.1); `code=0` fetches nothing; other values are refused.
#[test]
fn rr_migration_with_code_fetches_the_loop_before_each_run_within_the_datas_16_mib() {
    let params =
        |code: u64| -> Params { params(&[("pages", 3), ("iterations", 1), ("code", code)]) };
    let (r, _) = all("rr_migration", &params(1), 1);
    let a = accesses(&r);
    let fetches: Vec<u64> = a
        .iter()
        .filter(|x| x.1 == AccessKind::Instr)
        .map(|x| x.2)
        .collect();
    assert_eq!(fetches.len(), 4, "one per run");
    for x in a.iter().filter(|x| x.1 != AccessKind::Instr) {
        assert_eq!(x.2 >> 24, fetches[0] >> 24, "data in the code's 16 MiB");
    }
    for (i, rec) in r.iter().enumerate() {
        if let Record::Access(acc) = rec {
            if acc.kind == AccessKind::Instr {
                assert!(
                    matches!(r[i + 1], Record::Event(Event::PhaseBegin { .. })),
                    "the fetch comes right before the run's phase"
                );
            }
        }
    }
    let (r0, _) = all("rr_migration", &params(0), 1);
    assert!(accesses(&r0).iter().all(|x| x.1 != AccessKind::Instr));
    assert!(build("rr_migration", &params(2), 1).is_err());
}

#[test]
fn host_migrate_evicts_on_b_chases_on_a_three_times_then_once_more_on_b() {
    // migrate_bench (runtime/bench/migrate_bench.c): 5 evicting pages and 3 lines on B, three
    // chases of 4 pages on A, a migration to B, then (rewarm=1) one load per line and the chase.
    for rewarm in [0u64, 1] {
        let p: Params = params(&[
            ("pages", 4),
            ("stride", 69632),
            ("evict", 5),
            ("evict_lines", 3),
            ("iterations", 1),
            ("rewarm", rewarm),
        ]);
        let (r, names) = all("host_migrate", &p, 1);
        let a = accesses(&r);
        assert_eq!(a.len() as u64, 5 + 3 + 3 * 4 + 4 + 4 * rewarm);
        let chased: Vec<u64> = a[8..12].to_vec().iter().map(|x| x.2).collect();
        // Element i: page i at a 68 KiB stride, line (i + (i >> 4)) & 63, visited once per pass.
        let mut sorted = chased.clone();
        sorted.sort_unstable();
        let base = sorted[0];
        let want: Vec<u64> = (0..4).map(|i| base + i * 69632 + i * 64).collect();
        assert_eq!(sorted, want);
        assert_eq!(a[12..16], a[8..12]);
        let retouch = a.len() - 4;
        assert_eq!(a[retouch..].iter().map(|x| x.2).collect::<Vec<_>>(), chased);
        let migrations: Vec<u16> = r
            .iter()
            .filter_map(|x| match x {
                Record::Event(Event::Migrate { core, .. }) => Some(core.0),
                _ => None,
            })
            .collect();
        assert_eq!(migrations, vec![1, 0, 1]);
        let phases: Vec<&str> = r
            .iter()
            .filter_map(|x| match x {
                Record::Event(Event::PhaseBegin { region }) => {
                    Some(names[*region as usize].as_str())
                }
                _ => None,
            })
            .collect();
        let want: &[&str] = if rewarm == 1 {
            &["rewarm", "retouch"]
        } else {
            &["retouch"]
        };
        assert_eq!(phases, want);
    }
}

#[test]
fn rate_monotonic_t2_is_preempted_five_times_per_hyperperiod() {
    // seed 003 §6.0.8 / Fig. 6.2: "Every job of T2 is preempted five times."
    let p: Params = params(&[("hyperperiods", 1)]);
    let (r, _) = all("rt_same_diff_set", &p, 1);
    let start = r
        .iter()
        .position(|x| matches!(x, Record::Event(Event::TaskRelease { .. })))
        .unwrap();
    let preempt = r[start..]
        .iter()
        .filter(|x| matches!(x, Record::Event(Event::ContextSwitch { from, to, .. }) if *from == ThreadId(1) && *to == ThreadId(0)))
        .count();
    assert_eq!(preempt, 5);
    // 8 releases of T1 (period 2 ms, phase 1 ms, 16 ms hyperperiod) and 1 of T2.
    let rel = |t: u32| {
        r.iter()
            .filter(|x| matches!(x, Record::Event(Event::TaskRelease { task, .. }) if *task == t))
            .count()
    };
    assert_eq!((rel(0), rel(1)), (8, 1));
}

#[test]
fn same_set_layout_puts_all_pages_in_one_dtlb_set_and_different_set_layout_separates_tasks() {
    let sets_of = |layout: u64| -> Vec<HashSet<u64>> {
        let p: Params = params(&[("hyperperiods", 1), ("layout", layout)]);
        let (r, _) = all("rt_same_diff_set", &p, 1);
        let mut s = vec![HashSet::new(), HashSet::new()];
        for (t, _, a) in accesses(&r) {
            s[t as usize].insert((a >> 12) % 16);
        }
        s
    };
    let same = sets_of(2);
    assert_eq!(same[0].len(), 1);
    assert_eq!(same[0], same[1]);
    let diff = sets_of(1);
    assert!(diff[0].is_disjoint(&diff[1]));
}

#[test]
fn every_table_6_1_task_set_builds_in_every_layout() {
    for tasks in [2, 3, 4] {
        for layout in [0, 1, 2] {
            let p: Params = params(&[
                ("tasks", tasks),
                ("layout", layout),
                ("hyperperiods", 1),
                ("accesses_per_ms", 10),
            ]);
            let (r, _) = all("rt_table6_1", &p, 1);
            let threads: HashSet<u32> = accesses(&r).iter().map(|a| a.0).collect();
            assert_eq!(threads.len() as u64, tasks, "tasks={tasks} layout={layout}");
        }
    }
}

#[test]
fn lat_ctx_passes_the_token_round_robin_among_n_processes() {
    let (r, _) = all("lat_ctx", &small("lat_ctx"), 1);
    let sw: Vec<(u32, u32)> = r
        .iter()
        .filter_map(|x| {
            if let Record::Event(Event::ContextSwitch { from, to, .. }) = x {
                Some((from.0, to.0))
            } else {
                None
            }
        })
        .collect();
    assert_eq!(sw[0], (NO_THREAD.0, 0));
    assert_eq!(sw.len(), 4 * 3);
    for w in sw[1..].iter() {
        assert_eq!(w.1, (w.0 + 1) % 4);
    }
    // Each turn sums 4 KiB = 1024 words.
    assert_eq!(
        accesses(&r)
            .iter()
            .filter(|a| a.1 == AccessKind::Load && a.2 >= 0x1000_0000 && a.2 < 0x1000_1000)
            .count(),
        1024 * 12
    );
}

#[test]
fn lat_ctx_with_lmbench_footprint_gives_each_process_its_own_kernel_state_and_pipe() {
    // footprint=1: each process's kernel task block (its saved registers at the block's top)
    // and each pipe's buffer page are its own (kernel_path.rs), so n processes touch n of each.
    let kernel = 0xc000_0000u64 + (4 << 20);
    for procs in [2u64, 5] {
        let p: Params = params(&[
            ("procs", procs),
            ("kib", 0),
            ("rounds", 2),
            ("footprint", 1),
        ]);
        let (r, _) = all("lat_ctx", &p, 1);
        let acc = accesses(&r);
        let blocks: HashSet<u64> = acc
            .iter()
            .filter(|a| a.2 >= kernel && a.2 < kernel + (512 << 10))
            .map(|a| (a.2 - kernel) / 8192)
            .collect();
        assert_eq!(blocks.len() as u64, procs);
        // Every process reads its own pipe's first line and writes the next one's.
        let buffers: HashSet<u64> = acc
            .iter()
            .filter(|a| a.2 >= kernel + (512 << 10) && a.2 < kernel + (768 << 10))
            .map(|a| a.2)
            .collect();
        assert_eq!(buffers.len() as u64, procs);
        // libc's read and write stubs are fetched every turn, from its shared mapping.
        let libc = acc
            .iter()
            .filter(|a| a.1 == AccessKind::Instr && a.2 >= 0x4000_0000 && a.2 < 0x4010_0000)
            .count() as u64;
        assert_eq!(libc, 2 * procs * 5);
        assert!(r
            .iter()
            .any(|x| matches!(x, Record::Event(Event::MapShared { object: 1, .. }))));
    }
    // The default (footprint=0) stream has none of it.
    let (r, _) = all("lat_ctx", &small("lat_ctx"), 1);
    assert!(accesses(&r)
        .iter()
        .all(|a| !(kernel..kernel + (1 << 20)).contains(&a.2)
            && !(0x4000_0000..0x4010_0000).contains(&a.2)));
}

#[test]
fn l4_ipc_with_footprint_touches_each_threads_own_page_mapped_tcb() {
    // footprint=1: every thread (the server and each client) saves and restores its context
    // in its own 4 KiB TCB, a page of the kernel's TCB area (Pistachio's ARM layout).
    let tcbs = 0xc000_0000u64 + (8 << 20);
    let p: Params = params(&[("clients", 5), ("ipcs", 200), ("footprint", 1)]);
    let (r, _) = all("l4_ipc", &p, 3);
    let pages: HashSet<(u32, u64)> = accesses(&r)
        .iter()
        .filter(|a| a.2 >= tcbs && a.2 < tcbs + (1 << 20))
        .map(|a| (a.0, (a.2 - tcbs) / 4096))
        .collect();
    assert_eq!(pages.len(), 6);
    assert!(pages.iter().all(|&(t, page)| t as u64 == page));
    assert!(r.iter().any(|x| matches!(
        x,
        Record::Event(Event::MapShared {
            page_shift: 12,
            len: 24576,
            ..
        })
    )));
}

#[test]
fn extreme_shared_pages_are_one_object_private_pages_one_mapping_each() {
    let count = |shared: u64| {
        let p: Params = params(&[
            ("procs", 3),
            ("pages", 4),
            ("rounds", 1),
            ("shared", shared),
        ]);
        let (r, _) = all("extreme", &p, 1);
        let ms = r
            .iter()
            .filter(|x| matches!(x, Record::Event(Event::MapShared { object: 1, .. })))
            .count();
        let mm = r
            .iter()
            .filter(|x| matches!(x, Record::Event(Event::Mmap { len: 16384, .. })))
            .count();
        (ms, mm)
    };
    assert_eq!(count(1), (3, 0));
    assert_eq!(count(0), (0, 3));
}

#[test]
fn bfs_visits_each_reachable_vertex_once_per_search() {
    let p: Params = params(&[("scale", 6), ("roots", 1)]);
    let (r, names) = all("graph500_bfs", &p, 3);
    let q = names.iter().position(|n| n == "queue").unwrap() as u32;
    let (qs, ql) = r
        .iter()
        .find_map(|x| {
            if let Record::Event(Event::Region { region, start, len }) = x {
                (*region == q).then_some((start.0, *len))
            } else {
                None
            }
        })
        .unwrap();
    let stores: Vec<u64> = accesses(&r)
        .iter()
        .filter(|a| a.1 == AccessKind::Store && a.2 >= qs && a.2 < qs + ql)
        .map(|a| a.2)
        .collect();
    let loads = accesses(&r)
        .iter()
        .filter(|a| a.1 == AccessKind::Load && a.2 >= qs && a.2 < qs + ql)
        .count();
    let uniq: HashSet<_> = stores.iter().collect();
    assert_eq!(uniq.len(), stores.len(), "a vertex was queued twice");
    assert_eq!(loads, stores.len(), "every queued vertex is dequeued once");
}

fn rt(name: &str, kv: &[(&str, u64)]) -> Vec<(u32, AccessKind, u64)> {
    accesses(&all(name, &params(kv), 5).0)
}

#[test]
fn glibc_placement_puts_both_tasks_arenas_in_the_same_dtlb_sets() {
    // seed 003 §6.0.8 with malloc: thread arenas are 64 MiB-aligned, so the n-th malloc(4096) of
    // each task lands in the same set. The synthetic job writes one word per buffer, at
    // 64-byte steps: buffer k at 0x8c0 + 4112 k, word at + 64 k, so 16 buffers touch pages 0-15.
    let acc = rt(
        "rt_table6_1",
        &[
            ("tasks", 2),
            ("kernels", 0),
            ("layout", 3),
            ("hyperperiods", 1),
        ],
    );
    let pages =
        |t: u32| -> HashSet<u64> { acc.iter().filter(|a| a.0 == t).map(|a| a.2 >> 12).collect() };
    let (p1, p2) = (pages(0), pages(1));
    assert!(p1.contains(&(0x7fff_ec00_0000u64 >> 12)));
    assert!(p2.contains(&(0x7fff_e800_0000u64 >> 12)));
    let sets = |p: &HashSet<u64>| -> HashSet<u64> { p.iter().map(|v| v % 16).collect() };
    assert_eq!(sets(&p1), sets(&p2));
    assert_eq!(p1.len(), 16);
}

#[test]
fn os_noise_touches_the_stack_tops_of_every_task_in_one_set_and_the_vsyscall_page() {
    let acc = rt("rt_same_diff_set", &[("noise", 1), ("hyperperiods", 1)]);
    let stack_sets: HashSet<u64> = acc
        .iter()
        .filter(|a| a.2 >> 32 == 0x7fff && (a.2 >> 12) & 0xfff == 0xa0b)
        .map(|a| (a.2 >> 12) % 16)
        .collect();
    assert_eq!(stack_sets.len(), 1);
    for t in [0, 1] {
        assert!(acc.iter().any(|a| a.0 == t && a.2 >> 12 == 0x7fff_ff600));
    }
    let quiet = rt("rt_same_diff_set", &[("hyperperiods", 1)]);
    assert!(!quiet.iter().any(|a| a.2 >> 12 == 0x7fff_ff600));
}

#[test]
fn the_noisy_set_probe_puts_both_tasks_pages_in_the_color_asked() {
    let acc = rt(
        "rt_noisy_sets",
        &[("color", 7), ("pages", 2), ("hyperperiods", 1)],
    );
    let sets: HashSet<u64> = acc.iter().map(|a| (a.2 >> 12) % 16).collect();
    assert_eq!(sets, HashSet::from([7]));
    let pages: HashSet<u64> = acc.iter().map(|a| a.2 >> 12).collect();
    assert_eq!(pages.len(), 4);
}

#[test]
fn tlb_malloc_colors_skip_the_sets_marked_noisy() {
    let acc = rt(
        "rt_table6_1",
        &[
            ("tasks", 2),
            ("layout", 1),
            ("avoid_sets", 0x80b),
            ("hyperperiods", 1),
        ],
    );
    let sets: HashSet<u64> = acc.iter().map(|a| (a.2 >> 12) % 16).collect();
    assert!(sets.is_disjoint(&HashSet::from([0, 1, 3, 11])), "{sets:?}");
    assert_eq!(sets.len(), 8);
}

/// `populate=1`: the events before the first access, then one 8-byte store per 4 KiB page of
/// every region (address order, the first access's thread), then the region of interest's
/// mark, then exactly the records of the workload without it. Read in odd batch sizes, so the
/// hand-over between the parts falls inside a batch.
#[test]
fn populate_touches_every_region_page_once_then_begins_the_roi() {
    use tlblab_trace::record::ROI_REGION;
    for name in [
        "gups",
        "graph500_bfs",
        "graph500_list",
        "gapbs_bc",
        "hash_join",
        "canneal",
        "liblinear",
        "tlb_thrash",
    ] {
        let plain = all(name, &small(name), 3).0;
        let mut p = small(name);
        p.insert("populate".into(), 1);
        let populated = all(name, &p, 3).0;
        let first = plain
            .iter()
            .position(|r| matches!(r, Record::Access(_)))
            .unwrap();
        assert_eq!(populated[..first], plain[..first], "{name}: events before");
        let mut regions: Vec<(u64, u64)> = plain[..first]
            .iter()
            .filter_map(|r| match r {
                Record::Event(Event::Region { start, len, .. }) => Some((start.0, *len)),
                _ => None,
            })
            .collect();
        regions.sort_unstable();
        assert!(!regions.is_empty(), "{name} announces its regions");
        let thread = match plain[first] {
            Record::Access(a) => a.thread,
            _ => unreachable!(),
        };
        let mut expected = Vec::new();
        for (s, l) in regions {
            for page in (s..s + l).step_by(4096) {
                expected.push((page, thread));
            }
        }
        let stores: Vec<(u64, ThreadId)> = populated[first..first + expected.len()]
            .iter()
            .map(|r| match r {
                Record::Access(a) if a.kind == AccessKind::Store && a.size == 8 => {
                    (a.vaddr.0, a.thread)
                }
                other => panic!("{name}: expected a population store, found {other:?}"),
            })
            .collect();
        assert_eq!(stores, expected, "{name}: one store per page");
        assert_eq!(
            populated[first + expected.len()],
            Record::Event(Event::PhaseBegin { region: ROI_REGION }),
            "{name}: the ROI begins after the population"
        );
        assert_eq!(
            populated[first + expected.len() + 1..],
            plain[first..],
            "{name}: the workload itself unchanged"
        );
    }
}

#[test]
fn populate_takes_zero_or_one_and_only_where_regions_are_announced() {
    let mut p = small("gups");
    p.insert("populate".into(), 2);
    let e = build("gups", &p, 0).err().unwrap();
    assert!(e.contains("populate must be 0 or 1 (got 2)"), "{e}");
    let mut p = small("random");
    p.insert("populate".into(), 1);
    let e = build("random", &p, 0).err().unwrap();
    assert!(e.contains("has no parameter 'populate'"), "{e}");
}

/// Building `workload` with one parameter set to a bad value fails with `message`.
fn refused(workload: &str, param: (&str, u64), message: &str) {
    match build(workload, &params(&[param]), 1) {
        Ok(_) => panic!("{workload} with {param:?} was built"),
        Err(e) => assert!(e.contains(message), "{e}"),
    }
}

fn params(kv: &[(&str, u64)]) -> Params {
    kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The regions a workload announces, by name: (start, len).
fn region_map(name: &str, p: &Params) -> BTreeMap<String, (u64, u64)> {
    let s = build(name, p, 1).unwrap();
    let names = s.region_names();
    let mut out = BTreeMap::new();
    let mut s = build(name, p, 1).unwrap();
    let mut recs = Vec::new();
    s.fill(&mut recs, 64).unwrap();
    for r in recs {
        if let Record::Event(Event::Region { region, start, len }) = r {
            out.insert(names[region as usize].clone(), (start.0, len));
        }
    }
    out
}

/// Canneal's footprint (seed Table 5.2: 20.6 GB in all, 5.1 GB the element array PT-Baker
/// sweeps, for 6e7 elements), checked at 2^20 elements and scaled: 336 bytes an element, 88 of
/// them the element.
#[test]
fn canneal_footprint_follows_the_netlist_structures() {
    let n = 1u64 << 20;
    let r = region_map("canneal", &params(&[("elements", n)]));
    assert_eq!(r["elements"].1, n * 88);
    assert_eq!(r["fanin_lists"].1, n * 80);
    assert_eq!(r["fanout_lists"].1, n * 80);
    assert_eq!(r["locations"].1, n * 8);
    assert_eq!(r["name_map"].1, n * 80);
    let total: u64 = r.values().map(|v| v.1).sum();
    assert_eq!(total, n * 336);
    // At 6e7: 20.2 GB against Table 5.2's 20.6 GB; the element array 5.3 GB against 5.1 GB.
    assert!((6e7 * 336.0 / 20.6e9 - 1.0f64).abs() < 0.03);
}

/// As transparent huge pages back canneal (`thp`, the default): every region but the element
/// array is mapped with 4 KiB pages before the first access, so a machine of 2 MiB pages gives
/// large pages to the element array only; `thp=0` maps nothing (every region at the machine's
/// size).
#[test]
fn canneal_keeps_its_heap_on_small_pages_as_thp_does() {
    let mappings = |thp: u64| -> Vec<(u64, u64, u8)> {
        let p = params(&[("elements", 4096), ("swaps", 10), ("thp", thp)]);
        let (r, _) = all("canneal", &p, 1);
        let first = r
            .iter()
            .position(|r| matches!(r, Record::Access(_)))
            .unwrap();
        r[..first]
            .iter()
            .filter_map(|r| match r {
                Record::Event(Event::Mmap {
                    start,
                    len,
                    page_shift,
                    ..
                }) => Some((start.0, *len, *page_shift)),
                _ => None,
            })
            .collect()
    };
    let r = region_map("canneal", &params(&[("elements", 4096)]));
    let mut heap: Vec<(u64, u64, u8)> = ["fanin_lists", "fanout_lists", "locations", "name_map"]
        .iter()
        .map(|n| (r[*n].0, r[*n].1, 12))
        .collect();
    heap.sort_unstable();
    let mut mapped = mappings(1);
    mapped.sort_unstable();
    assert_eq!(mapped, heap);
    assert!(mapped
        .iter()
        .all(|&(s, l, _)| s + l <= r["elements"].0 || s >= r["elements"].0 + r["elements"].1));
    assert!(mappings(0).is_empty());
}

/// Each step: the two elements' present_loc and cells, then per element its two lists'
/// begin/end and per neighbour (2 x degree) the list entry, its present_loc and its cell; an
/// accepted move stores both present_loc.
#[test]
fn canneal_steps_read_every_neighbours_location() {
    let p = params(&[
        ("elements", 1000),
        ("degree", 3),
        ("swaps", 50),
        ("temp_steps", 2),
    ]);
    let (r, names) = all("canneal", &p, 5);
    assert_eq!(names[0], "elements");
    let acc = accesses(&r);
    let loads = acc.iter().filter(|a| a.1 == AccessKind::Load).count();
    let stores = acc.iter().filter(|a| a.1 == AccessKind::Store).count();
    // 4 + 2 x (2 x 2 + 2 x 3 x 3) = 48 loads a step, 100 steps.
    assert_eq!(loads, 100 * 48);
    // The marks: the two elements' present_loc, their cells, per element the three levels of
    // its neighbours' chains (entries, present_loc, cells), the move's decision: 9 a step,
    // whatever the degree; then the end of the marked phase.
    let marks = |begin: bool| {
        r.iter()
            .filter(
                |x| matches!(x, Record::Event(Event::Independent { begin: b, .. }) if *b == begin),
            )
            .count()
    };
    assert_eq!((marks(true), marks(false)), (100 * 9, 1));
    // Level by level: between two marks of an element's chains, one kind of load only (all
    // entries, all present_loc or all cells), so the 2 x 3 = 6 chains' loads of a level
    // follow each other.
    let per_level: Vec<usize> = r
        .split(|x| matches!(x, Record::Event(Event::Independent { .. })))
        .map(|run| {
            run.iter()
                .filter(|x| matches!(x, Record::Access(_)))
                .count()
        })
        .collect();
    assert!(
        per_level.iter().filter(|&&n| n == 6).count() >= 100 * 2 * 2,
        "{per_level:?}"
    );
    assert_eq!(stores % 2, 0);
    assert!(
        stores > 0 && stores < 200,
        "{stores} stores: some moves are accepted, not all"
    );
    refused(
        "canneal",
        ("degree", 0),
        "canneal: degree must be in 1..=64 (got 0)",
    );
    refused(
        "canneal",
        ("elements", 1),
        "canneal: elements must be in 2..=2^31 (got 1)",
    );
}

/// HIGGS (seed §5.2: 11e6 instances x 28 features): x_space 29 nodes of 16 bytes a row (5.1
/// GB), 5.5 GB in all (Table 5.2); checked at 2^16 rows and scaled.
#[test]
fn liblinear_footprint_and_one_pass() {
    let l = 1u64 << 16;
    let r = region_map("liblinear", &params(&[("instances", l)]));
    assert_eq!(r["x_space"].1, l * 29 * 16);
    let per_row: f64 = r.values().map(|v| v.1 as f64).sum::<f64>() / l as f64;
    assert!(
        (11e6 * per_row / 5.5e9 - 1.0).abs() < 0.05,
        "{per_row} bytes a row"
    );
    // One iteration over 10 rows of 3 features: the shuffle (4 a row), then per row 3 + 3 x 3
    // + 1 (dot) + 3 + 3 x 4 + 1 (axpy) = 29 accesses; every row read twice.
    let p = params(&[("instances", 10), ("features", 3), ("iterations", 1)]);
    let (recs, _) = all("liblinear", &p, 2);
    let acc = accesses(&recs);
    assert_eq!(acc.len(), 10 * 4 + 10 * 29);
    let x = region_map("liblinear", &p)["x_space"];
    let mut rows: BTreeMap<u64, usize> = BTreeMap::new();
    for a in acc.iter().filter(|a| a.2 >= x.0 && a.2 < x.0 + x.1) {
        *rows.entry((a.2 - x.0) / 64).or_default() += 1;
    }
    assert_eq!(rows.len(), 10);
    assert!(rows.values().all(|&c| c == 2 * (3 * 2 + 1)));
    refused(
        "liblinear",
        ("features", 0),
        "liblinear: features must be in 1..=4096 (got 0)",
    );
}

/// graph500_list (graph500 v2 seq-list): the regions are the program's allocations with its
/// element sizes; the construction makes 2 stores + 2 loads per edge, 2 stores and 1 load per
/// vertex, and 12 more references per edge that is not a self-loop; a search stores every
/// `bfs_tree` entry once (the root's twice), then per reached vertex loads `vlist` and `head`,
/// per chain entry loads `IJ`, `bfs_tree` and `next`, and per newly reached vertex stores
/// `bfs_tree` and `vlist`; it reaches exactly the root's component, each vertex once, and walks
/// each vertex's chain from its last edge back to its first.
#[test]
fn graph500_list_makes_seq_lists_references() {
    use tlblab_trace::workloads::graph500_list::list_graph;
    let (scale, ef, seed) = (7u32, 4u64, 5u64);
    let p: Params = params(&[("scale", scale as u64), ("edge_factor", ef), ("roots", 1)]);
    let (r, names) = all("graph500_list", &p, seed);
    assert_eq!(names, ["edges", "head", "bfs_tree", "vlist"]);
    let g = list_graph(scale, ef, seed);
    let (m, nv) = (g.ij.len() as u64, g.nv);
    assert_eq!(m, ef << scale);
    let regions: Vec<(u64, u64)> = r
        .iter()
        .filter_map(|x| match x {
            Record::Event(Event::Region { start, len, .. }) => Some((start.0, *len)),
            _ => None,
        })
        .collect();
    let page = |b: u64| b.div_ceil(4096) * 4096;
    let want = [m * 16, (2 * nv + 2 * m) * 8, (1 << scale) * 8, nv * 8];
    for (i, (&(_, len), bytes)) in regions.iter().zip(want).enumerate() {
        assert_eq!(len, page(bytes), "region {}", names[i]);
    }
    let (ij, head, tree, vlist) = (regions[0].0, regions[1].0, regions[2].0, regions[3].0);
    let next = head + 2 * nv * 8;
    let acc = accesses(&r);
    for a in &acc {
        assert!(
            regions.iter().any(|&(s, l)| a.2 >= s && a.2 + 8 <= s + l),
            "access {a:?} outside the regions"
        );
    }
    let self_loops = g.ij.iter().filter(|e| e.0 == e.1).count() as u64;
    let construction = 2 * m + 2 * m + 2 * nv + 2 * m + 12 * (m - self_loops) + nv;
    // make_graph's stores, in edge order.
    for k in 0..m as usize {
        assert_eq!(acc[2 * k], (0, AccessKind::Store, ij + 16 * k as u64));
        assert_eq!(
            acc[2 * k + 1],
            (0, AccessKind::Store, ij + 16 * k as u64 + 8)
        );
    }
    let search = &acc[construction as usize..];
    // The set-up: bfs_tree[root] twice, vlist[0], then every other entry of bfs_tree.
    let root = (search[0].2 - tree) / 8;
    assert_eq!(search[1], search[0]);
    assert_eq!(search[2], (0, AccessKind::Store, vlist));
    let setup = 3 + (nv - 1) as usize;
    let reset: HashSet<u64> = search[3..setup].iter().map(|a| a.2).collect();
    assert_eq!(reset.len() as u64, nv - 1);
    assert!(!reset.contains(&search[0].2));
    // The root's component, by an independent search over the edge list.
    let mut adj = vec![Vec::new(); nv as usize];
    for &(i, j) in g.ij.iter().filter(|e| e.0 != e.1) {
        adj[i as usize].push(j);
        adj[j as usize].push(i);
    }
    let mut seen = vec![false; nv as usize];
    let mut stack = vec![root as u32];
    seen[root as usize] = true;
    let mut comp_edges = 0u64;
    while let Some(v) = stack.pop() {
        comp_edges += adj[v as usize].len() as u64;
        for &w in &adj[v as usize] {
            if !seen[w as usize] {
                seen[w as usize] = true;
                stack.push(w);
            }
        }
    }
    let reached = seen.iter().filter(|&&s| s).count() as u64;
    let bfs = &search[setup..];
    let in_range = |a: &(u32, AccessKind, u64), s: u64, l: u64| a.2 >= s && a.2 < s + l;
    let count = |kind: AccessKind, s: u64, l: u64| {
        bfs.iter()
            .filter(|a| a.1 == kind && in_range(a, s, l))
            .count() as u64
    };
    assert_eq!(count(AccessKind::Load, vlist, nv * 8), reached);
    assert_eq!(count(AccessKind::Load, head, nv * 8), reached);
    assert_eq!(count(AccessKind::Load, ij, m * 16), comp_edges);
    assert_eq!(count(AccessKind::Load, tree, nv * 8), comp_edges);
    assert_eq!(count(AccessKind::Load, next, 2 * m * 8), comp_edges);
    assert_eq!(count(AccessKind::Store, vlist, nv * 8), reached - 1);
    assert_eq!(count(AccessKind::Store, tree, nv * 8), reached - 1);
    assert_eq!(
        bfs.len() as u64,
        2 * reached + 3 * comp_edges + 2 * (reached - 1)
    );
    // Every reached vertex is stored into the tree once, and it is the component.
    let stored: Vec<u64> = bfs
        .iter()
        .filter(|a| a.1 == AccessKind::Store && in_range(a, tree, nv * 8))
        .map(|a| (a.2 - tree) / 8)
        .collect();
    let distinct: HashSet<u64> = stored.iter().copied().collect();
    assert_eq!(distinct.len(), stored.len());
    assert!(stored.iter().all(|&v| seen[v as usize] && v != root));
    // make_bfs_tree transcribed from seq-list.c over head/next linked as
    // create_graph_from_edgelist links them: the same references in the same order.
    let (mut hd, mut nx) = (vec![-1i64; nv as usize], vec![-1i64; 2 * m as usize]);
    for (k, &(i, j)) in g.ij.iter().enumerate() {
        if i != j {
            let t = 2 * k as i64 + 1;
            nx[t as usize] = hd[i as usize];
            hd[i as usize] = t;
            nx[t as usize - 1] = hd[j as usize];
            hd[j as usize] = t - 1;
        }
    }
    let (mut bt, mut vl) = (vec![-1i64; nv as usize], vec![root as i64]);
    bt[root as usize] = root as i64;
    let mut want = Vec::new();
    let (ld, st) = (AccessKind::Load, AccessKind::Store);
    let mut k = 0;
    while k < vl.len() {
        let parent = vl[k];
        want.push((0, ld, vlist + 8 * k as u64));
        want.push((0, ld, head + 8 * parent as u64));
        let mut p = hd[parent as usize];
        while p >= 0 {
            let (v0, v1) = g.ij[(p / 2) as usize];
            let newv = if p % 2 == 1 { v1 } else { v0 } as i64;
            want.push((0, ld, ij + 16 * (p as u64 / 2) + 8 * (p as u64 % 2)));
            want.push((0, ld, tree + 8 * newv as u64));
            if bt[newv as usize] < 0 {
                bt[newv as usize] = parent;
                want.push((0, st, tree + 8 * newv as u64));
                want.push((0, st, vlist + 8 * vl.len() as u64));
                vl.push(newv);
            }
            want.push((0, ld, next + 8 * p as u64));
            p = nx[p as usize];
        }
        k += 1;
    }
    assert_eq!(bfs[..], want[..]);
    // init=0: the same searches, without the construction.
    let mut p0 = p.clone();
    p0.insert("init".into(), 0);
    let acc0 = accesses(&all("graph500_list", &p0, seed).0);
    assert_eq!(acc0[..], search[..]);
}
