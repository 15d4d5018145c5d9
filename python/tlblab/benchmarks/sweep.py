"""Sweep throughput: a 200-point grid over a real captured trace, one process vs a 2-worker LocalCluster.

The trace is a Valgrind Lackey capture of `ls -lR /usr/share/doc` (skipped when valgrind is
missing), written once into a temporary directory every worker reads. The grid: the Zen 3 preset's
L1 DTLB entries (5) x ways (5) x L2 DTLB entries (4) x L1 DTLB replacement (2) = 200 points. Reported:
points per second in one process (`tlblab.sweep(serial=True)`) and on a LocalCluster of 2 worker
processes (cluster start-up included, and also without it), and the ratio (DESIGN.md: sweeps on a
Dask cluster; the issue asks for >= 1.7x on 2 cores). A benchmark: it prints numbers, it never fails.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

NAME = "sweep"


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


def run(quick: bool) -> dict:
    import logging

    from distributed import Client, LocalCluster

    import tlblab
    from tlblab import trace
    from tlblab.sweeps import LAST

    if not shutil.which("valgrind"):
        return {"skipped": "valgrind is not installed: no real trace to sweep over"}
    refs = 100_000 if quick else 400_000
    out: dict = {"points": 200, "references_per_point": refs}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ls.tlbt")
        rep = trace.record(["ls", "-lR", "/usr/share/doc"], path, limit=refs, stdout=os.devnull)
        out["trace"] = {"program": "ls -lR /usr/share/doc", "accesses": rep["summary"]["accesses"],
                        "bytes": os.path.getsize(path)}
        g = grid(path, refs)

        t0 = time.monotonic()
        serial = tlblab.sweep(g, serial=True, progress=False)
        t_serial = time.monotonic() - t0
        cpu_serial = LAST.cpu_seconds

        t0 = time.monotonic()
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.ERROR)
        client = Client(cluster)
        t_start = time.monotonic() - t0
        try:
            t1 = time.monotonic()
            df = tlblab.sweep(g, scheduler=cluster.scheduler_address, progress=False)
            t_run = time.monotonic() - t1
            cpu_cluster = LAST.cpu_seconds
        finally:
            client.close()
            cluster.close()
        same = bool(df.equals(serial))
    out["serial"] = {"seconds": round(t_serial, 2), "points_per_s": round(200 / t_serial, 2),
                     "engine_cpu_ms_per_point": round(1000 * cpu_serial / 200, 2)}
    out["cluster_2_workers"] = {
        "seconds": round(t_run, 2), "points_per_s": round(200 / t_run, 2),
        "startup_seconds": round(t_start, 2),
        "points_per_s_with_startup": round(200 / (t_run + t_start), 2),
        # The same engine work per point in a worker as in one process means the cluster's cost
        # is its queueing; a wall-clock ratio below 2 on an idle 2-core host is that cost.
        "engine_cpu_ms_per_point": round(1000 * cpu_cluster / 200, 2),
    }
    out["speedup"] = round(t_serial / t_run, 2)
    out["speedup_with_startup"] = round(t_serial / (t_run + t_start), 2)
    out["same_frame"] = same
    out["host_cpus"] = os.cpu_count()
    # On a shared host the load says how many other runnable threads took the cores: with more
    # than two, neither run had both cores, and the ratio says little about the cluster.
    out["load_average_1min"] = round(os.getloadavg()[0], 2)
    return out
