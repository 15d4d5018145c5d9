"""Native trace format: decode rate (M refs/s, one thread) and size (bytes/reference).

Inputs: a real program's references captured under Valgrind Lackey (`ls -lR /usr/share/doc`,
a window of N references; skipped when valgrind is missing), and two built-in workloads at the
extremes of compressibility: `strided` (predictable) and `random` (GUPS-like).
Each file is read sequentially several times, interleaved, into the engine's batch buffer; the
median and spread are reported. Target: >= 300 M refs/s, <= 4 bytes/ref typical.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile

NAME = "trace_decode"


def run(quick: bool) -> dict:
    from tlblab import trace

    n = 2_000_000 if quick else 20_000_000
    repeats = 3 if quick else 7
    out: dict = {}
    with tempfile.TemporaryDirectory() as d:
        files = {}
        if shutil.which("valgrind") and os.path.isdir("/usr/share/doc"):
            p = os.path.join(d, "ls.tlbt")
            rep = trace.record(["ls", "-lR", "/usr/share/doc"], p, limit=n // 2 if quick else n, stdout=os.devnull)
            files["lackey_ls"] = (p, rep["summary"]["accesses"])
        for name, params in (("strided", {"pages": 4096, "rounds": n // 4096}), ("random", {"accesses": n})):
            p = os.path.join(d, f"{name}.tlbt")
            s = trace.generate(name, p, seed=1, **params)
            files[name] = (p, s["accesses"])
        times: dict[str, list[float]] = {k: [] for k in files}
        cpu: dict[str, list[float]] = {k: [] for k in files}
        recs: dict[str, int] = {}
        for _ in range(repeats):  # interleave the inputs so machine noise hits all alike
            for k, (p, _) in files.items():
                r = trace.decode_bench(p, 1)
                times[k].append(r["seconds"][0])
                cpu[k].append(r["cpu_seconds"][0])
                recs[k] = r["records"]
        for k, (p, acc) in files.items():
            rates = sorted(recs[k] / t / 1e6 for t in times[k])
            out[k] = {
                "records": recs[k],
                "accesses": acc,
                "bytes": os.path.getsize(p),
                "bytes_per_ref": round(os.path.getsize(p) / max(acc, 1), 3),
                "decode_mrefs_per_s_median": round(statistics.median(rates), 1),
                "decode_mrefs_per_s_min": round(rates[0], 1),
                "decode_mrefs_per_s_max": round(rates[-1], 1),
                # Thread CPU time excludes time descheduled on a shared machine.
                "decode_mrefs_per_s_cpu_median": round(statistics.median(sorted(recs[k] / t / 1e6 for t in cpu[k])), 1),
                "repeats": repeats,
            }
    return out
