"""The model's prediction beside `tlblab host coloring` (`--predict`): the very sweeps color_sweep
measures, simulated on the machine file the probe wrote for this host.

color_sweep prints its placement with `--dump 1` (each variant's A and B sweeps as the addresses
they read, in order: the colored arena's and glibc's real addresses), so the model runs the same
pages in the same order, not a re-derivation of the placement. The trace per variant is the
benchmark's loop: a warm-up job pair (A, B), then `jobs` job pairs (B, then A timed after it);
the model's statistics cover the last A only (the references before it are the warm-up), its
cycles per access at the machine file's clock. The machine is what `tlblab host predict` runs
(`predict.host_machine`: on a VM the hypervisor's 2D walk, 4 KiB host pages unless the machine
file says otherwise). Nothing is fitted to the measurement it stands beside."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any


# Job pairs before the predicted A: enough for the TLBs and caches to settle into the cycle the
# measurement's 201 jobs settle into (each pair sweeps every page of both tasks once).
JOBS = 3


def dump(args: list[str]) -> dict[str, dict[str, list[int]]]:
    """color_sweep's sweeps (`args`: its command line without --dump) as addresses in order."""
    from tlblab.host.ptwarm import run_json

    return run_json(Path(args[0]), [*args[1:], "--dump", "1"], "color_sweep --dump")


def predict(args: list[str], machine: str | None) -> dict[str, Any]:
    """{"variants": {name: {"a_ns_per_access", "a_cycles_per_access"}}, "same_over_diff",
    "machine": how the machine was determined}."""
    from tlblab import _native
    from tlblab.host import predict as hp
    from tlblab.host.sim_cache import simulate

    m, how = hp.host_machine(machine)
    ghz = float(m["frequency_mhz"]) / 1000.0
    out: dict[str, Any] = {"variants": {}, "machine": how}
    with tempfile.TemporaryDirectory(prefix="tlblab-coloring-") as tmp:
        for name, v in dump(args).items():
            a, b = v["a"], v["b"]
            seq = a + b + (b + a) * JOBS + b
            text = Path(tmp) / f"{name}.txt"
            text.write_text("".join(f" L {x:x},8\n" for x in seq + a))
            trace = Path(tmp) / f"{name}.tlbt"
            _native.trace_convert(str(text), str(trace), "lackey", "tlbt")
            stats = simulate(m, trace, [], len(seq))[0]
            cpa = stats["cycles"] / len(a)
            out["variants"][name] = {"a_cycles_per_access": cpa, "a_ns_per_access": cpa / ghz}
    got = out["variants"]
    if "same" in got and "diff" in got and got["diff"]["a_ns_per_access"] > 0:
        out["same_over_diff"] = got["same"]["a_ns_per_access"] / got["diff"]["a_ns_per_access"]
    return out
