"""Scale: graph500 BFS on zen3, the full detailed run against the SMARTS-sampled run (docs/sampling.md),
and the same run cut in intervals that run on a Dask LocalCluster of 2 workers (docs/intervals.md).

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
    """The run cut in `k` intervals (docs/intervals.md): the pass, then the intervals in one
    process and on a LocalCluster of `workers` (started and its workers' imports done before
    the clock starts: reported apart), and the merged statistics held against `full`'s."""
    import logging
    import shutil
    import tempfile
    import time

    from distributed import Client, LocalCluster

    from tlblab.intervals import intervals

    out = tempfile.mkdtemp(prefix="tlblab-bench-intervals-")
    try:
        here = intervals("zen3", spec, k, max_references=n, serial=True, out=out)
        sizes = [p.stat().st_size for p in here.directory.glob("*.ckpt")]
        for f in (here.directory / "results").iterdir():
            f.unlink()
        t0 = time.perf_counter()
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.ERROR)
        client = Client(cluster)
        client.run(lambda: __import__("tlblab.intervals"))
        start = time.perf_counter() - t0
        try:
            there = intervals("zen3", spec, k, max_references=n, scheduler=cluster.scheduler_address, out=out)
        finally:
            client.close()
            cluster.close()
    finally:
        shutil.rmtree(out, ignore_errors=True)
    busy: dict = {}
    for i in there.intervals:
        busy[i["host_process"]] = round(busy.get(i["host_process"], 0.0) + i["host_cpu_seconds"], 3)
    serial_wall = full.run["wall_seconds"]
    end_to_end = here.pass_seconds + there.interval_seconds
    return {
        "intervals": k, "workers": workers,
        "pass_wall_seconds": round(here.pass_seconds, 3),
        "interval_phase_one_process_wall_seconds": round(here.interval_seconds, 3),
        "interval_phase_two_workers_wall_seconds": round(there.interval_seconds, 3),
        "interval_phase_speedup": round(here.interval_seconds / there.interval_seconds, 3)
        if there.interval_seconds else None,
        "each_interval_host_seconds": [round(i["host_seconds"], 3) for i in here.intervals],
        # CPU time does not grow with the host's load as wall time does: the pass's process CPU,
        # and the intervals' thread CPU summed (restores and skipped records included).
        "pass_cpu_seconds": here.pass_result.run["cpu_seconds"],
        "interval_phase_cpu_seconds_one_process": round(sum(i["host_cpu_seconds"] for i in here.intervals), 3),
        "interval_phase_cpu_seconds_two_workers": round(sum(i["host_cpu_seconds"] for i in there.intervals), 3),
        "uninterrupted_cpu_seconds": full.run["cpu_seconds"],
        # The two workers' CPU seconds each (the intervals each ran): the interval phase's time
        # on two cores of its own, and the one process's CPU seconds over the busier worker's:
        # the speed-up a host not shared with other work would show.
        "interval_phase_cpu_seconds_per_worker": sorted(busy.values()),
        "interval_phase_speedup_by_cpu": round(sum(i["host_cpu_seconds"] for i in here.intervals)
                                               / max(busy.values()), 3) if busy else None,
        "cluster_start_seconds": round(start, 3),
        "end_to_end_wall_seconds": round(end_to_end, 3),
        "uninterrupted_wall_seconds": serial_wall,
        "end_to_end_over_uninterrupted": round(end_to_end / serial_wall, 3) if serial_wall else None,
        "checkpoint_megabytes": [round(b / 1e6, 1) for b in sorted(sizes)],
        "merged_equals_uninterrupted": here.result.stats == full.stats and there.result.stats == full.stats,
    }


def _host() -> str:
    """The host's CPU model, as /proc/cpuinfo names it, and its logical CPUs."""
    import os

    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return f"{model or 'unknown CPU'}, {os.cpu_count()} logical CPUs"
