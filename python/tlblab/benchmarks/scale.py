"""Scale: graph500 BFS on zen3, the full detailed run against the SMARTS-sampled run (docs/sampling.md),
and the same run cut in intervals whose phase runs on a Dask LocalCluster of 1 worker and of 2
(docs/intervals.md): `interval_parallel` says what each side includes (`what_each_side_includes`),
the speed-up by wall time (`speedup_wall`) and by CPU time (`speedup_cpu`: the one worker's CPU
seconds over the busier of the two's, the speed-up two cores of their own would show), what the
graph cache did on each side (`graph`: read, held, built) and the load average before and after.

The scale run here is 20 (2^20 vertices, 16 edges a vertex: issue 59 measured a full run of it
at 52 s on a two-core machine); `--quick` runs scale 16. `TLBLAB_BENCH_SCALE=N` runs scale N
instead (seed 001 Table 5.2 runs scale 24, 9.1 GB: a full run 16 times scale 20's, and the
bench runs it four times over: full, sampled, the pass and its intervals twice). Both runs execute every reference (the sampled
run warms the state between its units with the full model itself), so their rates are
compared to show what the sampling's bookkeeping costs, and every statistic's estimate is
held against the full run's value: its error, its interval's half-width, and whether the value
lies inside. A benchmark: it prints numbers, it never fails.
"""

from __future__ import annotations

NAME = "scale"


def run(quick: bool = False) -> dict:
    import tlblab
    from tlblab.sampling import full_run_value, unit_counters

    import os

    scale = 16 if quick else 20
    if os.environ.get("TLBLAB_BENCH_SCALE", "").isdigit():
        scale = int(os.environ["TLBLAB_BENCH_SCALE"])
    load_before = os.getloadavg()
    spec = f"graph500_bfs:scale={scale}"
    unit, period = (10_000, 20) if quick else (100_000, 50)
    full = tlblab.simulate("zen3", spec)
    n = full.total["references"]
    cut = n // unit * unit
    # The population is the run's whole units: the value each estimate is held against is the
    # full run over them (its last references, fewer than a unit, left out).
    truth_run = full if cut == n else tlblab.simulate("zen3", spec, max_references=cut)
    s = tlblab.sample("zen3", spec, unit=unit, period=period)
    truth = unit_counters(truth_run.stats)
    stats = {}
    inside = 0
    for name, e in s.estimates().items():
        value = full_run_value(truth, name, cut)
        err = e.value - value
        ok = abs(err) <= e.half_width + 1e-12
        inside += ok
        stats[name] = {"full": value, "estimate": e.value, "error": err,
                       "relative_error": err / value if value else 0.0,
                       "half_width": e.half_width, "inside": ok}
    return {
        "host_note": "numbers from the host this ran on; see lscpu",
        "workload": spec, "machine": "zen3", "references": n,
        "sample": {"unit": unit, "period": period, "offset": s.offset, "measured_units": s.measured,
                   "population_units": s.population, "confidence": s.confidence},
        "full": full.run, "sampled": s.run,
        "sampled_over_full_wall": round(s.run["wall_seconds"] / full.run["wall_seconds"], 3)
        if full.run["wall_seconds"] else None,
        "inside_interval": f"{inside}/{len(stats)}",
        "statistics": stats,
        "interval_parallel": interval_parallel(spec, n, full, k=4),
        "host": _host(), "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def interval_parallel(spec: str, n: int, full, k: int, workers: int = 2) -> dict:
    """The run cut in `k` intervals (docs/intervals.md): the pass, then the interval phase three
    ways, and the merged statistics held against `full`'s. The comparison is LocalCluster
    against LocalCluster: one worker process against `workers`, each started (and its workers'
    imports done) before the clock starts, each a fresh process that reads graph500's graph from
    the graph cache the pass wrote (docs/checkpoints.md, "Graph cache"): the same set-up on both
    sides, and the same Dask task overheads. The intervals run in the pass's own process too
    (which holds the pass's graph and reads nothing): reported, not the baseline."""
    import shutil
    import tempfile
    import time
    from pathlib import Path

    from distributed import Client

    import tlblab
    from tlblab.intervals import intervals
    from tlblab.sweeps.run import local_cluster

    out = tempfile.mkdtemp(prefix="tlblab-bench-intervals-")
    sides = {}
    try:
        here = intervals("zen3", spec, k, max_references=n, serial=True, out=out)
        sizes = [p.stat().st_size for p in here.directory.glob("*.ckpt")]
        graphs = {p.name: round(p.stat().st_size / 1e6, 1) for p in (Path(out) / "graphs").glob("*.graph")}
        # Each task's fixed cost: restoring its checkpoint and skipping the records before it
        # (`skip_records`: the graph generators advance past their accesses without writing
        # them), timed as a restored run that stops at once (the next batch boundary).
        fixed = []
        for c in sorted(here.directory.glob("*.ckpt")):
            c0 = time.thread_time()
            tlblab.simulate("zen3", spec, max_references=n, from_checkpoint=c,
                            stop_at=tlblab.checkpoint_info(c)["references"])
            fixed.append(round(time.thread_time() - c0, 3))
        for w in (1, workers):
            for f in (here.directory / "results").iterdir():
                f.unlink()
            t0 = time.perf_counter()
            cluster = local_cluster(w)
            client = Client(cluster)
            client.run(lambda: __import__("tlblab.intervals"))
            start = time.perf_counter() - t0
            noop = []
            for _ in range(5):
                t1 = time.perf_counter()
                client.submit(int, 0, pure=False).result()
                noop.append(time.perf_counter() - t1)
            try:
                there = intervals("zen3", spec, k, max_references=n, scheduler=cluster.scheduler_address, out=out)
            finally:
                client.close()
                cluster.close()
            sides[w] = (there, start, sorted(noop)[len(noop) // 2])
    finally:
        shutil.rmtree(out, ignore_errors=True)

    def side(run, start=None, noop=None) -> dict:
        busy: dict = {}
        for i in run.intervals:
            busy[i["host_process"]] = round(busy.get(i["host_process"], 0.0) + i["host_cpu_seconds"], 3)
        d = {"wall_seconds": round(run.interval_seconds, 3),
             "cpu_seconds": round(sum(i["host_cpu_seconds"] for i in run.intervals), 3),
             "cpu_seconds_per_process": sorted(busy.values()),
             "each_interval_cpu_seconds": [round(i["host_cpu_seconds"], 3) for i in run.intervals],
             "each_interval_wall_seconds": [round(i["host_seconds"], 3) for i in run.intervals],
             "graph": {key: sum(i["graph"].get(key, 0) for i in run.intervals)
                       for key in ("loaded", "built", "kept")}
             | {"seconds": round(sum(i["graph"].get("seconds", 0) for i in run.intervals), 3)},
             "merged_equals_uninterrupted": run.result.stats == full.stats}
        if start is not None:
            d["cluster_start_seconds_not_counted"] = round(start, 3)
            d["dask_noop_task_round_trip_seconds"] = round(noop, 4)
        return d

    one, two = side(*sides[1]), side(*sides[workers])
    serial_wall = full.run["wall_seconds"]
    end_to_end = here.pass_seconds + sides[workers][0].interval_seconds
    return {
        "intervals": k, "workers": workers,
        "what_each_side_includes": (
            "both sides: a LocalCluster started before the clock (its start reported, not counted), fresh "
            "worker processes that each read the graph from the graph cache the pass wrote (graph.loaded: "
            "once a process; graph.kept: intervals after the first in a process), restore their checkpoints "
            "and read (to drop) the records before them; wall: submit to last result; CPU: the tasks' thread "
            "CPU time, reading the graph included"),
        "pass_wall_seconds": round(here.pass_seconds, 3),
        "pass_cpu_seconds": here.pass_result.run["cpu_seconds"],
        "pass_graph": here.pass_graph,
        "graph_cache_files_megabytes": graphs,
        "checkpoint_megabytes": [round(b / 1e6, 1) for b in sorted(sizes)],
        "each_task_restore_and_skip_cpu_seconds": fixed,
        "one_worker": one,
        f"{workers}_workers": two,
        "speedup_wall": round(one["wall_seconds"] / two["wall_seconds"], 3) if two["wall_seconds"] else None,
        # One worker's CPU seconds over the busier of the two: the speed-up on two cores of
        # its own (CPU time does not grow with the host's load as wall time does).
        "speedup_cpu": round(one["cpu_seconds"] / max(two["cpu_seconds_per_process"]), 3),
        # For information: the intervals run in the pass's own process (the graph held already,
        # no Dask), the bench's baseline before the graph cache.
        "in_the_pass_process": side(here),
        "speedup_wall_over_the_pass_process": round(here.interval_seconds / two["wall_seconds"], 3)
        if two["wall_seconds"] else None,
        "uninterrupted_wall_seconds": serial_wall,
        "uninterrupted_cpu_seconds": full.run["cpu_seconds"],
        "end_to_end_wall_seconds": round(end_to_end, 3),
        "end_to_end_over_uninterrupted": round(end_to_end / serial_wall, 3) if serial_wall else None,
    }


def _host() -> str:
    """The host's CPU model, as /proc/cpuinfo names it, and its logical CPUs."""
    import os

    from tlblab.reproduce_timings import cpu_model

    return f"{cpu_model() or 'unknown CPU'}, {os.cpu_count()} logical CPUs"
