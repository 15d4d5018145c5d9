//! Behaviour of the built-in workloads: every one builds, is deterministic, and emits
//! well-formed events; closed-form checks for the seeds' benchmarks.

use std::collections::{BTreeMap, HashSet};
use tlblab_trace::record::{Event, Record, NO_THREAD};
use tlblab_trace::workloads::{build, catalog, Params};
use tlblab_types::{AccessKind, ThreadId};

mod common;
use common::{accesses, all, params};

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
        "canneal_read" => &[("elements", 512)],
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

/// The 68k-benchmark with `loop_instr` = k: per access step, one fetch of the loop right before
/// its phase, then per page the load's fetch, the load and k - 1 more fetches, all on one code page
/// in a 16 MiB of its own; so 2·I·N·k fetches in the phases and 2·I outside, for I iterations of N
/// pages. The data loads are those of `loop_instr` = 0 in the same order; 0 fetches nothing, more
/// than a page of instructions is refused.
#[test]
fn the_68k_benchmark_with_loop_instr_fetches_k_instructions_per_page_and_the_loop_before_each_step()
{
    let with_k =
        |k: u64| -> Params { params(&[("pages", 5), ("iterations", 3), ("loop_instr", k)]) };
    let (n, it) = (5u64, 3u64);
    for k in [1u64, 4, 7] {
        let (r, _) = all("migration_68k", &with_k(k), 1);
        let mut in_phase = false;
        let (mut inside, mut outside) = (0u64, 0u64);
        let mut code_pages = HashSet::new();
        let mut run = Vec::new(); // kinds between two loads, inside a phase
        for (i, rec) in r.iter().enumerate() {
            match rec {
                Record::Event(Event::PhaseBegin { .. }) => in_phase = true,
                Record::Event(Event::PhaseEnd { .. }) => in_phase = false,
                Record::Access(acc) if acc.kind == AccessKind::Instr => {
                    code_pages.insert(acc.vaddr.0 >> 12);
                    if in_phase {
                        inside += 1;
                        run.push(acc.vaddr.0 & 0xfff);
                    } else {
                        outside += 1;
                        assert!(
                            matches!(r[i + 1], Record::Event(Event::PhaseBegin { .. })),
                            "the warming fetch comes right before the phase"
                        );
                    }
                }
                Record::Access(_) if in_phase => {
                    // A load: the loop's first fetch (the ldr's) was just before it.
                    assert_eq!(run.last(), Some(&0), "k={k}: the load's own fetch first");
                    run.clear();
                }
                _ => {}
            }
        }
        assert_eq!(inside, 2 * it * n * k, "k={k}: fetches in the phases");
        assert_eq!(outside, 2 * it, "k={k}: one warming fetch per access step");
        assert_eq!(code_pages.len(), 1, "one code page");
        let code = *code_pages.iter().next().unwrap() << 12;
        let loads: Vec<(u32, AccessKind, u64)> = accesses(&r)
            .into_iter()
            .filter(|x| x.1 != AccessKind::Instr)
            .collect();
        for x in &loads {
            assert_ne!(x.2 >> 24, code >> 24, "code in a 16 MiB of its own");
        }
        let (r0, _) = all("migration_68k", &with_k(0), 1);
        let a0 = accesses(&r0);
        assert!(a0.iter().all(|x| x.1 != AccessKind::Instr));
        assert_eq!(loads, a0, "k={k}: the same loads as without the loop");
    }
    let (d, _) = all("migration_68k", &with_k(0), 1);
    let (none, _) = all(
        "migration_68k",
        &params(&[("pages", 5), ("iterations", 3)]),
        1,
    );
    assert_eq!(d, none, "loop_instr defaults to 0");
    assert!(build("migration_68k", &with_k(1024), 1).is_ok());
    assert!(build("migration_68k", &with_k(1025), 1).is_err());
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
fn given_a_1000_hz_tick_then_each_running_ms_boundary_stores_once_to_the_apic_page() {
    // seed 003 §6.0.6 ("interrupts"), Linux 2.6.32's tick (rt_noise::tick): T2 (0, 16, 7.88 ms)
    // runs at 0, 2, 4, 6 and 8 ms (done at 9.84), T1 (1, 2, 0.392 ms) at every odd ms; the
    // core idles at 10, 12 and 14 ms, where NO_HZ stops the tick. So T1 takes 8 ticks a
    // hyperperiod and T2 5; without tick_hz, none, and the rest of the trace is unchanged.
    let apic = tlblab_trace::workloads::rt_replay::LOCAL_APIC_EOI;
    let ticks = |hz: u64| {
        let p: Params = params(&[("hyperperiods", 1), ("noise", 1), ("tick_hz", hz)]);
        let (r, _) = all("rt_same_diff_set", &p, 1);
        let mut n = [0u64; 2];
        for (t, k, a) in accesses(&r) {
            if a == apic {
                assert_eq!(k, AccessKind::Store);
                n[t as usize] += 1;
            }
        }
        let rest: Vec<Record> = r
            .into_iter()
            .filter(|x| !matches!(x, Record::Access(a) if a.vaddr.0 == apic))
            .collect();
        (n, rest)
    };
    let (on, with) = ticks(1000);
    let (off, without) = ticks(0);
    assert_eq!(on, [8, 5]);
    assert_eq!(off, [0, 0]);
    assert_eq!(with, without);
    // 250 Hz: every 4 ms, at 0, 4 and 8 ms (T2) and 12 ms (idle): T2 3, T1 0.
    assert_eq!(ticks(250).0, [0, 3]);
    let bad = build("rt_same_diff_set", &params(&[("tick_hz", 1000)]), 1)
        .err()
        .unwrap();
    assert!(bad.contains("tick_hz") && bad.contains("noise"), "{bad}");
    let bad = build(
        "rt_same_diff_set",
        &params(&[("noise", 1), ("tick_hz", 7)]),
        1,
    )
    .err()
    .unwrap();
    assert!(bad.contains("tick_hz must divide 1000000"), "{bad}");
}

#[test]
fn given_papi_then_each_job_counts_the_reads_user_side_before_the_stop_and_after_the_restart() {
    // seed 003 counted each job with PAPI (rt_noise::PapiRead, PAPI 5.3 on Linux 2.6.32): a
    // job's window holds the first read's part after its counters restart (3 loads) and the
    // second read's part up to their stop (9 loads); the counts' stores (2 a read) fall outside
    // it. rt_same_diff_set over one hyperperiod: T1 8 jobs, T2 1, plus each task's job 0. So
    // each job's window holds 12 PAPI references and each job 28 in all; without papi the trace
    // is the same less those references (tlb_malloc's pages do not move: PAPI's objects are in
    // the threads' glibc arenas).
    use tlblab_trace::workloads::{rt_glibc::GlibcArena, rt_noise::PapiRead};
    let papi_of = |i: u64| PapiRead::allocate(&mut GlibcArena::new(0x7fff_f000_0000, i, 0), (0, 0));
    let run = |papi: u64| {
        let p: Params = params(&[("hyperperiods", 1), ("noise", 1), ("papi", papi)]);
        all("rt_same_diff_set", &p, 1).0
    };
    let with = run(1);
    let mut inside = [0u64; 2];
    let mut total = [0u64; 2];
    let mut jobs = [0u64; 2];
    let mut open = [false; 2];
    for r in &with {
        match r {
            Record::Event(Event::JobStart { task, .. }) => {
                open[*task as usize] = true;
                jobs[*task as usize] += 1;
            }
            Record::Event(Event::JobEnd { task, .. }) => open[*task as usize] = false,
            Record::Access(a) => {
                let t = a.thread.0 as usize;
                let p = papi_of(t as u64);
                let is_papi = p
                    .head
                    .iter()
                    .chain(&p.stop)
                    .chain(&p.tail)
                    .any(|&(x, _)| x == a.vaddr.0);
                if is_papi {
                    total[t] += 1;
                    if open[t] {
                        inside[t] += 1;
                    }
                }
            }
            _ => {}
        }
    }
    assert_eq!(jobs, [9, 2]);
    assert_eq!(inside, [12 * 9, 12 * 2]);
    assert_eq!(total, [28 * 9, 28 * 2]);
    let papi_addrs: HashSet<u64> = (0..2)
        .flat_map(|i| {
            let p = papi_of(i);
            p.head
                .iter()
                .chain(&p.stop)
                .chain(&p.tail)
                .map(|&(x, _)| x)
                .collect::<Vec<_>>()
        })
        .collect();
    let less: Vec<Record> = with
        .into_iter()
        .filter(|r| !matches!(r, Record::Access(a) if papi_addrs.contains(&a.vaddr.0)))
        .collect();
    assert_eq!(less, run(0));
    let bad = build("rt_same_diff_set", &params(&[("papi", 1)]), 1)
        .err()
        .unwrap();
    assert!(bad.contains("papi") && bad.contains("noise"), "{bad}");
}

#[test]
fn given_papi_objects_before_malloc_buffers_then_the_buffers_move_by_their_bytes_and_after_not() {
    // PAPI's per-thread objects take 14,000-odd bytes of the task's glibc arena (ThreadInfo_t,
    // the contexts, the EventSet, its 8,232-byte pe_control_t and arrays): allocated first
    // (papi = 1) they push the task's malloc'd buffers up by that much; after (papi = 2) the
    // buffers are where they are without PAPI.
    let bufs = |papi: u64| -> Vec<u64> {
        let p: Params = params(&[
            ("hyperperiods", 1),
            ("noise", 1),
            ("papi", papi),
            ("layout", 3),
        ]);
        let (r, _) = all("rt_same_diff_set", &p, 1);
        // T1's 4-byte stores are its warm-up's, one a buffer in call order (its jobs load).
        r.iter()
            .filter_map(|x| match x {
                Record::Access(a)
                    if a.thread.0 == 0 && a.kind == AccessKind::Store && a.size == 4 =>
                {
                    Some(a.vaddr.0)
                }
                _ => None,
            })
            .collect()
    };
    let (none, first, after) = (bufs(0), bufs(1), bufs(2));
    assert_eq!(none, after);
    let shift = first[0] - none[0];
    assert!(shift > 14_000 && shift < 16_000, "{shift}");
    assert!(first.iter().zip(&none).all(|(f, n)| f - n == shift));
}

#[test]
fn given_idle_flush_then_the_tlb_is_flushed_each_time_the_core_goes_idle_and_only_then() {
    // Another process can run only on an idle core (the tasks are SCHED_FIFO). rt_same_diff_set
    // over one hyperperiod: T2 (0, 16, 7.88 ms) with T1's five preemptions ends at 9.84 ms, then
    // T1 (1, 2, 0.392 ms) runs alone at 11, 13 and 15 ms: the core goes idle 4 times, each a
    // flush; without idle_flush the trace is the same less those flushes.
    let run = |f: u64| {
        all(
            "rt_same_diff_set",
            &params(&[("hyperperiods", 1), ("idle_flush", f)]),
            1,
        )
        .0
    };
    let is_flush = |r: &Record| matches!(r, Record::Event(Event::Flush { .. }));
    let with = run(1);
    assert_eq!(with.iter().filter(|r| is_flush(r)).count(), 4);
    let less: Vec<Record> = with.into_iter().filter(|r| !is_flush(r)).collect();
    assert_eq!(less, run(0));
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

/// Every record of `s` from where it is, read in batches of 777.
fn rest_of(s: &mut dyn tlblab_trace::source::RecordSource) -> Vec<Record> {
    let mut out = Vec::new();
    while s.fill(&mut out, 777).unwrap() > 0 {}
    out
}

#[test]
fn given_any_workload_when_its_first_n_records_are_skipped_then_the_rest_is_what_reading_gives() {
    // `skip_records` is how a restored checkpoint goes on from its record: whatever the
    // source skips by its own means (a generator's `skip`, a step of a position), the records
    // after are those a run that read and dropped the first n would see. Populated and
    // fast-forwarded graph and hash-join workloads too (their generators skip themselves).
    let mut cases: Vec<(String, Params)> = catalog()
        .iter()
        .map(|w| (w.name.to_string(), small(w.name)))
        .collect();
    for (name, extra) in [
        ("graph500_bfs", &[("populate", 1)][..]),
        (
            "graph500_list",
            &[("populate", 1), ("skip", 300), ("warm", 50), ("take", 200)][..],
        ),
        (
            "gapbs_bc",
            &[
                ("populate", 1),
                ("skip", 100),
                ("warm", 20),
                ("take", 100),
                ("every", 400),
            ][..],
        ),
        ("hash_join", &[("populate", 1)][..]),
    ] {
        let mut p = small(name);
        p.extend(params(extra));
        cases.push((name.to_string(), p));
    }
    for (name, p) in &cases {
        let (whole, _) = all(name, p, 7);
        let len = whole.len() as u64;
        for n in [
            0,
            1,
            5,
            len / 3,
            len / 2 + 1,
            len.saturating_sub(1),
            len,
            len + 5,
        ] {
            let mut s = build(name, p, 7).unwrap();
            let k = s.skip_records(n).unwrap();
            assert_eq!(k, n.min(len), "{name}: skipped {k} of {n} ({len} records)");
            let rest = rest_of(s.as_mut());
            assert!(
                rest == whole[k as usize..],
                "{name} {p:?}: after skipping {n} of {len} records the rest differs"
            );
        }
    }
}

#[test]
fn proc_create_under_vfork_flushes_nothing_in_the_fork_test_and_under_fork_a_fixed_count() {
    // Per fork round the stock kernel flushes (proc_create.rs): dup_mmap's and exit_mmap's
    // flush_cache_mm, libc's 256 KiB text VMA whole at exit (over MAX_AREA_SIZE); four VMAs
    // of at most 32 KiB line by line at exit and two copy-on-write faults (FlushRange). Under
    // vfork the child borrows the parent's space: none of them.
    let flushes = |vfork: u64| {
        let p = params(&[("mode", 0), ("rounds", 3), ("vfork", vfork)]);
        let (r, _) = all("proc_create", &p, 1);
        let mut n = (0, 0, 0);
        for x in &r {
            match x {
                Record::Event(Event::Flush { .. }) => n.0 += 1,
                Record::Event(Event::FlushRange { .. }) => n.1 += 1,
                Record::Event(Event::ThreadStart { process, .. }) if *process != 0 => n.2 += 1,
                _ => {}
            }
        }
        n
    };
    assert_eq!(flushes(0), (3 * 3, 6 * 3, 3));
    assert_eq!(flushes(1), (0, 0, 0));
}

#[test]
fn proc_create_with_dash_footprint_adds_its_16_vmas_teardown_and_10_faults_a_round() {
    // The captured dash's further VMAs: 10 of at most 32 KiB (FlushRange at exit), 6 over it
    // (whole flushes), all 16 unmapped; and 10 copy-on-write faults (FlushRange) a round.
    let count = |footprint: u64| {
        let p = params(&[
            ("mode", 2),
            ("rounds", 2),
            ("kernel_instrs", 2000),
            ("sh_footprint", footprint),
        ]);
        let (r, _) = all("proc_create", &p, 1);
        let mut n = (0i64, 0i64, 0i64);
        for x in &r {
            match x {
                Record::Event(Event::Flush { .. }) => n.0 += 1,
                Record::Event(Event::FlushRange { .. }) => n.1 += 1,
                Record::Event(Event::Munmap { .. }) => n.2 += 1,
                _ => {}
            }
        }
        n
    };
    let (a, b) = (count(0), count(1));
    assert_eq!((b.0 - a.0, b.1 - a.1, b.2 - a.2), (6 * 2, 20 * 2, 16 * 2));
}

#[test]
fn given_offsets_0_when_the_synthetic_jobs_write_then_every_write_is_at_a_page_start() {
    // seed 003 Appendix A.2: "Our experiments were originally set up such that we always access
    // the first four bytes of each page. This results in L1 data cache conflicts"; §6.0.8's
    // modification (Fig. 6.8) puts each page's access in its own L1 data-cache set instead.
    // rt_same_diff_set without noise: 4 pages per task, nothing but the tasks' accesses (the
    // warm-up's writes and the jobs' reads).
    let offsets = |o: u64| {
        let p: Params = params(&[("hyperperiods", 1), ("offsets", o)]);
        let (r, _) = all("rt_same_diff_set", &p, 1);
        let mut per_task: [HashSet<u64>; 2] = [HashSet::new(), HashSet::new()];
        for (t, _, a) in accesses(&r) {
            per_task[t as usize].insert(a % 4096);
        }
        per_task
    };
    let first = offsets(0);
    assert_eq!(first[0], HashSet::from([0]));
    assert_eq!(first[1], HashSet::from([0]));
    // The default (1): page k of a task's 4 at byte 64 k, four L1D sets (the warm-up's write
    // at each page start among them).
    let spread = offsets(1);
    assert_eq!(spread[0], HashSet::from([0, 64, 128, 192]));
    assert_eq!(spread[1], HashSet::from([0, 64, 128, 192]));
    let e = build("rt_same_diff_set", &params(&[("offsets", 2)]), 1)
        .err()
        .unwrap();
    assert!(e.contains("offsets must be 0 or 1"), "{e}");
}

#[test]
fn given_variant_1_then_rt_table6_1_runs_appendix_a2s_statistics_and_bubble_sort_pair() {
    // seed 003 Appendix A.2 (Figs. A.11-A.12): "T1 (1ms, 2ms, 0.45ms), T2 (0 ms, 54ms, 20ms).
    // Each task accesses 14 pages. T1 and T2 represent the statistics and the bubble sort
    // benchmarks". One 54 ms hyperperiod: T1 released at 1, 3, ..., 53 ms (27 times), T2 once.
    let p: Params = params(&[
        ("tasks", 2),
        ("variant", 1),
        ("hyperperiods", 1),
        ("accesses_per_ms", 100),
    ]);
    let (r, _) = all("rt_table6_1", &p, 1);
    let rel = |t: u32| {
        r.iter()
            .filter(|x| matches!(x, Record::Event(Event::TaskRelease { task, .. }) if *task == t))
            .count()
    };
    assert_eq!((rel(0), rel(1)), (27, 1));
    let mut pages: [HashSet<u64>; 2] = [HashSet::new(), HashSet::new()];
    for (t, _, a) in accesses(&r) {
        pages[t as usize].insert(a >> 12);
    }
    assert_eq!((pages[0].len(), pages[1].len()), (14, 14));
    let e = build("rt_table6_1", &params(&[("tasks", 3), ("variant", 1)]), 1)
        .err()
        .unwrap();
    assert!(e.contains("needs tasks = 2"), "{e}");
}
