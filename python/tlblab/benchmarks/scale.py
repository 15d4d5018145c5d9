"""Scale: graph500 BFS on zen3, the full detailed run against the SMARTS-sampled run (docs/sampling.md).

The largest scale run here is 20 (2^20 vertices, 16 edges a vertex: issue 59 measured a full
run of it at 52 s on this two-core machine; seed 001 Table 5.2 runs scale 24, 9.1 GB, which
takes 16 times longer); `--quick` runs scale 16. Both runs execute every reference (the sampled
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

    scale = 16 if quick else 20
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
        "interval_parallel": "not built: with the full model as the only warming, a functional pass "
                             "writing interval checkpoints costs the whole run; no mode that keeps the "
                             "caches' state can be 3x faster here (tlblab bench functional, "
                             "docs/checkpoints.md)",
    }
