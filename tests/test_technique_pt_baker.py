"""PT-Baker (seed 001) from Python and the CLI: parity (CLI = Python), the helper's effect on
the application's walk references by source, and bad input (one line, exit 2)."""

from __future__ import annotations

import tlblab
from cli_helpers import cli, simulate_both_ways

# 32 MiB table, 60k updates: small enough for a test, the helper sweeps it many times.
GUPS = "gups:log2_words=22,updates=60000"


def test_the_catalog_lists_pt_baker_with_its_modes_and_seed():
    t = {t["name"]: t for t in tlblab.techniques()}["pt_baker"]
    assert "seed 001" in t["seed"]
    assert {"mode", "stride", "nops", "sleep_us", "place", "pressure"} <= {p["name"] for p in t["params"]}


def test_the_cli_and_python_agree_and_show_the_helpers_counters():
    tech = "pt_baker:mode=kernel,stride=8"
    py = simulate_both_ways("zen3", GUPS, tech)
    c = py.technique["counters"]
    assert c["sweeps"] >= 1 and c["pte_reads"] > 0
    # A kernel-mode helper is no thread of the statistics' walks: the application's walk
    # references are all there is, and the helper's thread made no reference.
    helper = py.stats["threads"][str(0xF000)]
    assert helper["references"] == 0 and helper["walks"] == 0
    text = cli("simulate", "--machine", "zen3", "--workload", GUPS, "--technique", tech)
    assert "technique pt_baker" in text.stdout and "pte_reads_from_l3" in text.stdout
    # The text output gives the application's walk references by source beside the totals
    # (a user-mode helper's own walks are in the totals).
    assert "walk refs t0" in text.stdout and f"walk refs t{0xF000}" in text.stdout
    row = next(ln.split() for ln in text.stdout.splitlines() if ln.startswith("memory "))
    assert int(row[3]) == py.stats["threads"]["0"]["walk_refs_by_source"][-1]


def test_the_application_walk_sources_change_only_where_the_helper_shares_a_cache():
    base = tlblab.simulate("zen3", GUPS)
    near = tlblab.simulate("zen3", GUPS, technique="pt_baker:mode=kernel")
    app = lambda r: r.stats["threads"]["0"]["walk_refs_by_source"]  # noqa: E731
    assert sum(app(near)) == sum(app(base))
    assert app(near) != app(base)


def test_a_bad_parameter_is_one_line_and_exit_2():
    for bad, word in (("pt_baker:mode=fast", "'mode'"), ("pt_baker:stride=0", "'stride'"),
                      ("pt_baker:place=other_ccx", "other_ccx")):
        out = cli("simulate", "--machine", "zen3", "--workload", GUPS, "--technique", bad)
        assert out.returncode == 2, (bad, out.stderr)
        assert out.stderr.strip().count("\n") == 0 and word in out.stderr, out.stderr
        assert "Traceback" not in out.stderr


def test_the_host_prediction_runs_the_helper_over_the_chase_it_is_given():
    # `chase` announces no Region: host_ptwarm_prediction names the range, so every helper
    # variant warms the chase's PTEs (its DRAM walk references per access fall to almost none)
    # on a host-like preset whose L3 (4 MiB here) the 256 MiB chase outgrows.
    from tlblab.seeds.s001_pt_baker import experiments as seed001

    m = tlblab.machine_config(seed001.HOST_PRESET)
    for c in m["cache"]:
        if c["level"] == 3:
            c["size"], c["ways"] = 4 << 20, 16
    r = seed001.host_ptwarm_prediction(m, size_mib=256, passes=2)
    assert r["none/dram_walk_refs_per_access"] > 0.01
    for v in ("touch", "prefetch", "mincore"):
        assert r[f"{v}/dram_walk_refs_per_access"] < r["none/dram_walk_refs_per_access"] / 10, v


def test_the_placement_and_throttle_tables_at_scale_run_their_quick_forms_on_their_own_machines():
    # placement_at_scale and throttle_at_scale (seed 001 §4.4.5, §6.3.3) in --quick: every row they
    # declare has a value, each placement runs on its own machine against its own baseline, and the
    # helper on another CCX changes nothing (the structural zero of its consistency check).
    import tlblab.reproduce as rp
    from tlblab.seeds.s001_pt_baker import experiments as seed001

    assert seed001.placement_machine("smt")["threads_per_core"] == 2
    l3 = [c for c in seed001.placement_machine("other_ccx")["cache"] if c.get("shared")]
    assert l3 and all(c["cores_per_instance"] == 1 for c in l3)
    for name in ("001/placement_at_scale", "001/throttle_at_scale"):
        (rep,) = rp.select(name)
        o = rp.run_one(rep, quick=True)
        assert not o.error, o.error
        missing = [r["key"] for r in rep.rows if r["key"] not in o.ours]
        assert missing == [], (name, missing)
    p = rp.run_one(rp.select("001/placement_at_scale")[0], quick=True).ours
    for mode in ("kernel", "user"):
        assert p[f"other_ccx/{mode}/dram_cut"] == 0.0 and p[f"other_ccx/{mode}/speedup"] == 0.0
    runs = seed001.placement_runs(True)
    assert set(runs) == set(seed001.PLAN[("seed", "graph500_placement")])


def test_sensitivity_at_scale_runs_its_quick_form_with_every_row_and_the_vm_under_pressure():
    # sensitivity_at_scale (seed 001 Figs. 6.5, 6.7, 6.9, §6.3.1) in --quick: every row it declares
    # has a value, and Fig. 6.7's runs are the virtual machine with the stream stressors on the
    # DRAM channels the native pressure runs have, their DDR4 row activations included.
    import tlblab.reproduce as rp
    from tlblab.seeds.s001_pt_baker import experiments as seed001
    from tlblab.seeds.s001_pt_baker import runs

    vm = seed001._variant_machine("4KiB", "virt_stream")
    native = seed001._variant_machine("4KiB", "stream")
    assert vm["name"].startswith("zen3-virt") and vm["timing"]["dram"] == native["timing"]["dram"]
    assert vm["timing"]["dram"] == {**runs.ZEN3_DRAM, **runs.ZEN3_DRAM_ROWS}
    assert "ranks" not in runs.ZEN3_DRAM  # the machines take copies: the module's dict is left as it is
    assert seed001.VARIANTS["virt_stream_kernel_sleep1000"][2].endswith("sleep_us=1000,pressure=stream")
    (rep,) = rp.select("001/sensitivity_at_scale")
    o = rp.run_one(rep, quick=True)
    assert not o.error, o.error
    missing = [r["key"] for r in rep.rows if r["key"] not in o.ours]
    assert missing == []


def test_the_window_runs_made_in_two_processes_equal_those_made_in_turn():
    # prefetch_runs (seed 001's scale tables at full size run their windows two processes at a
    # time): the throttled LibLinear stand-in's quick runs, made in two spawned workers, give
    # every window's counters bit for bit as the same runs made one after another here.
    from tlblab.seeds.s001_pt_baker import experiments as seed001

    seed001._RUNS.clear()
    seed001.prefetch_runs(True, seed001.throttle_runs, workers=1)
    in_turn = dict(seed001._RUNS)
    seed001._RUNS.clear()
    seed001.prefetch_runs(True, seed001.throttle_runs, workers=2)
    assert len(in_turn) == len(seed001.PLAN[("seed", "liblinear_throttle")]) > 1
    assert seed001._RUNS == in_turn
    assert seed001.throttle_runs(True) == {k[2]: v for k, v in in_turn.items()}


def test_prepare_makes_every_run_the_reproductions_then_read():
    # tlblab.reproduce.prepare gathers the runs of every seed-001 reproduction it is given (each
    # experiment run whole on placeholders) and makes them up front: the reproductions then make
    # no run of their own, and read the same numbers as made in turn without it.
    import tlblab.reproduce as rp
    from tlblab.seeds.s001_pt_baker import experiments as seed001

    reps = [rp.select(n)[0] for n in ("001/helper_effect", "001/walk_locality", "001/throttle_at_scale")]
    seed001._RUNS.clear()
    (did,) = rp.prepare(reps, quick=True)
    made = dict(seed001._RUNS)
    assert did["seed"] == "001" and did["runs"] == len(made) > 20
    prepared = [repr(sorted(rp.run_one(rep, quick=True).ours.items())) for rep in reps]  # repr: nan == nan
    assert seed001._RUNS == made  # no run made after prepare
    seed001._RUNS.clear()
    assert [repr(sorted(rp.run_one(rep, quick=True).ours.items())) for rep in reps] == prepared


def test_liblinears_runs_under_pressure_and_virtualized_have_four_windows_the_hash_joins_two():
    # Issue 86: in 2 windows LibLinear's virtualized user-mode speedup had an interval of +-20 %
    # (Student's t with one degree of freedom). Its seed-scale runs under the stream stressors and
    # in the virtual machine (seed_scale's PV_PLAN, sensitivity_at_scale's "pv" plans) get 4;
    # the hash join's keep 2; the quick size keeps its own windows. Only gathered, none run.
    from tlblab.seeds.s001_pt_baker import experiments as ex

    jobs = ex.plan_runs(False, ex.pv_runs, ex.sensitivity_runs)
    ks = {}
    for (_, wl, variant, k, *_), job in jobs.items():  # (LibLinear's virtualized keys end in their warm-up)
        if job[2] in ("stream", "virt", "virt_stream"):
            ks.setdefault(wl.split(":")[0], set()).add(k)
    assert ks["liblinear"] == {4} and ks["hash_join"] == {2}
    assert ex.pv_windows("liblinear", True) is None and ex.pv_windows("gapbs_bc", False) == 2


def test_liblinears_runs_without_the_stream_stressors_warm_up_until_settled_the_others_keep_two_million():
    # Issue 86: LibLinear's baseline DRAM walk references kept rising until about 16 M references
    # of warm-up natively (1.85 -> 3.84 per 1,000) and virtualized (4.86 -> 7.80); under the stream
    # stressors they were the same at 2 and 4 M. So LibLinear's native and virtualized runs of
    # every table (standins, seed_scale's and sensitivity_at_scale's) carry SETTLED_WARM's warm-up
    # in their jobs and keys, its stream runs and every other workload's runs do not, and the quick
    # size keeps WINDOWS'. Only gathered, none run.
    from tlblab.seeds.s001_pt_baker import experiments as ex

    warm = ex.SETTLED_WARM["liblinear"][False]
    assert warm == ex.THROTTLE_WARM[False] > ex.WINDOWS[False][1]
    jobs = ex.plan_runs(False, ex.standin_runs, ex.pv_runs, ex.sensitivity_runs)
    seen = set()
    for key, job in jobs.items():
        wl, kind = job[3].split(":")[0], job[2]
        if wl == "liblinear" and kind not in ("stream", "virt_stream"):
            assert len(job) == 8 and job[-1] == warm and key[-1] == warm, (key, job)
            seen.add(kind)
        else:
            assert len(job) == 7, (key, job)
    assert seen == {"native", "virt"}
    # throttle_at_scale's baseline and unthrottled helpers are standins' runs (the same keys).
    throttle = ex.plan_runs(False, ex.throttle_runs)
    assert {k for k in throttle if k[2] in ("none", "kernel", "user")} <= set(jobs)
    assert not any(len(job) > 7 for job in ex.plan_runs(True, ex.standin_runs, ex.pv_runs).values())


def test_throttle_at_scales_runs_warm_up_longer_with_their_measured_parts_where_they_were():
    # Issue 86: LibLinear's helper with 1,000 NOPs a page sweeps x_space once in about 7 M of the
    # application's references, so throttle_at_scale's runs (its baseline and every helper) warm
    # up for THROTTLE_WARM references a window, the throttled helpers through all of it; the
    # other tables' runs keep WINDOWS' 2 M. The longer warm-up begins earlier: each window's
    # measured part (skip + warm-up, from the start of its stride) stays where it was.
    import re

    from tlblab.seeds.s001_pt_baker import experiments as ex
    from tlblab.seeds.s001_pt_baker import runs

    warm = ex.THROTTLE_WARM[False]
    assert warm > ex.WINDOWS[False][1]
    jobs = ex.plan_runs(False, ex.throttle_runs)
    assert len(jobs) == 13 and all(job[-1] == warm and key[-1] == warm for key, job in jobs.items())
    # standins' LibLinear runs share throttle_at_scale's baseline and unthrottled helpers since
    # they warm up as long (SETTLED_WARM); Canneal's keep WINDOWS' warm-up.
    for job in ex.plan_runs(False, ex.standin_runs).values():
        assert job[-1] == warm if job[3].startswith("liblinear:") else len(job) == 7
    assert f"{warm:,} references of warm-up" in ex._describe(next(iter(jobs.values())))
    assert ex.companion_warm("pt_baker:mode=kernel,nops=1000", False, warm) == warm
    assert ex.companion_warm("pt_baker:mode=kernel", False, warm) == ex.COMPANION_WARM[False]

    wl = "liblinear:instances=2048,features=28,iterations=1,populate=1"
    q0 = ex.WINDOWS[True][1]

    def fields(spec):
        return {k: int(v) for k, v in re.findall(r"(skip|warm|every|window_phase)=(\d+)", spec)}

    a, b = fields(runs.window_spec(wl, True)), fields(runs.window_spec(wl, True, None, 3 * q0, 3 * q0))
    assert b["warm"] == 3 * q0 and b["window_phase"] == 3 * q0 and b["every"] == a["every"]
    assert b["skip"] + b["warm"] == a["skip"] + a["warm"]
    # The runs' units are told apart at the longer warm-up: each window counts the units of its
    # measured part, as many as at WINDOWS' warm-up (the units' edges move by a whole number of units).
    counts = [[s["references"] for s in runs.window_sums(
        runs.machine(), wl, "pt_baker:mode=kernel,stride=8,region=x_space,nops=1000", True, None, w)]
        for w in (None, 3 * q0)]
    assert counts[0] == counts[1] and min(counts[0]) >= ex.WINDOWS[True][2] - ex.WINDOWS[True][3]
