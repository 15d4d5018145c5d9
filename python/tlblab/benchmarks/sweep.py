"""Sweep throughput: a 200-point grid over a real captured trace, one process vs a 2-worker LocalCluster.

The trace is a Valgrind Lackey capture of `ls -lR /usr/share/doc` (skipped when valgrind is
missing), written once into a temporary directory every worker reads. The grid: the Zen 3 preset's
L1 DTLB entries (5) x ways (5) x L2 DTLB entries (4) x L1 DTLB replacement (2) = 200 points.

Reported: points per second in one process (`tlblab.sweep(serial=True)`) and on a LocalCluster of 2
worker processes, and their ratio (sweeps on a Dask cluster, docs/sweeps.md; issue 45 asks for >= 1.7x on
2 cores). The machine is shared and noisy, so the two ways alternate (serial, cluster, serial, ...)
for `rounds` rounds on one cluster, and each figure is the median with its range; the ratio is the
median of the rounds' ratios. The cluster's start-up is timed once and shown apart, and also folded
into a second ratio: it is paid once per sweep, whatever the grid.

Two point sizes: 400 K references a point (a point costs the engine about 7 ms, as much as a Dask
task costs, so queueing shows) and, without `--quick`, 2 M (what a sweep over a real trace is
more like). A benchmark: it prints numbers, it never fails.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time

NAME = "sweep"
POINTS = 200


def grid(trace: str, references: int) -> dict:
    return {
        "base": {"machine": "zen3", "workload": trace, "max_references": references, "mode": "full"},
        "axes": {
            "machine.tlb.L1D.entries": [16, 32, 64, 128, 256],
            "machine.tlb.L1D.ways": ["full", 1, 2, 4, 8],
            "machine.tlb.L2D.entries": [512, 1024, 2048, 4096],
            "machine.tlb.L1D.replacement": ["lru", "fifo"],
        },
    }


def _spread(xs: list[float], digits: int = 2) -> dict:
    return {"median": round(statistics.median(xs), digits), "min": round(min(xs), digits),
            "max": round(max(xs), digits)}


def _compare(path: str, refs: int, scheduler: str, rounds: int, startup: float) -> dict:
    import tlblab
    from tlblab.sweeps import LAST

    g = grid(path, refs)
    serial_s, cluster_s, ratios, cpu_serial, cpu_cluster = [], [], [], [], []
    same = True
    for _ in range(rounds):
        t0 = time.monotonic()
        serial = tlblab.sweep(g, serial=True, progress=False)
        serial_s.append(time.monotonic() - t0)
        cpu_serial.append(LAST.cpu_seconds)
        t0 = time.monotonic()
        df = tlblab.sweep(g, scheduler=scheduler, progress=False)
        cluster_s.append(time.monotonic() - t0)
        cpu_cluster.append(LAST.cpu_seconds)
        ratios.append(serial_s[-1] / cluster_s[-1])
        same = same and bool(df.equals(serial))
    med_serial, med_cluster = statistics.median(serial_s), statistics.median(cluster_s)
    return {
        "references_per_point": refs,
        "rounds": rounds,
        "serial_points_per_s": _spread([POINTS / s for s in serial_s]),
        "cluster_points_per_s": _spread([POINTS / s for s in cluster_s]),
        # The same engine work per point in a worker as in one process means the cluster's cost
        # is its queueing, not slower runs.
        "engine_cpu_ms_per_point": {"serial": round(1000 * statistics.median(cpu_serial) / POINTS, 2),
                                    "cluster": round(1000 * statistics.median(cpu_cluster) / POINTS, 2)},
        "speedup": _spread(ratios),
        "speedup_with_startup": round(med_serial / (med_cluster + startup), 2),
        "met_1.7x": statistics.median(ratios) >= 1.7,
        "same_frame": same,
    }


def run(quick: bool) -> dict:
    from distributed import Client

    from tlblab import trace
    from tlblab.sweeps.run import local_cluster

    if not shutil.which("valgrind"):
        return {"skipped": "valgrind is not installed: no real trace to sweep over"}
    sizes = [100_000] if quick else [400_000, 2_000_000]
    rounds = 2 if quick else 3
    out: dict = {"points": POINTS}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ls.tlbt")
        rep = trace.record(["ls", "-lR", "/usr/share/doc"], path, limit=max(sizes), stdout=os.devnull)
        out["trace"] = {"program": "ls -lR /usr/share/doc", "accesses": rep["summary"]["accesses"],
                        "bytes": os.path.getsize(path)}
        t0 = time.monotonic()
        cluster = local_cluster(2)
        client = Client(cluster)
        startup = time.monotonic() - t0
        out["cluster_startup_seconds"] = round(startup, 2)
        try:
            for refs in sizes:
                out[f"points_of_{refs // 1000}k_references"] = _compare(
                    path, refs, cluster.scheduler_address, rounds, startup)
        finally:
            client.close()
            cluster.close()
    out["host_cpus"] = os.cpu_count()
    # On a shared host the load says how many other runnable threads took the cores: with more
    # than two, neither way had both cores, and the ratio says little about the cluster.
    out["load_average_1min"] = round(os.getloadavg()[0], 2)
    return out
