"""Do the hardware prefetchers stop at 4 KiB page boundaries on this host? `stream` in all-4 KiB
and all-2 MiB pages, measured (docs/host-predict.md, "Prefetchers and page boundaries").

    python -m tlblab.host.stream_study [--variants 8M:16:1,8M:16:1:shuffled,128M:1:1,128M:1:4]
                                       [--reps 21] [--cpu 1]

A variant BYTES:SWEEPS:STRIDE is `stream BYTES SWEEPS STRIDE 0 8`: every STRIDE-th line of a BYTES
region read in address order, SWEEPS times a round (runtime/bench/hostpredict/stream.c); with
`:shuffled`, `stream BYTES SWEEPS STRIDE 1 8`, its 4 KiB pieces in a random order (a stream cannot
run on from one piece into the next: against the in-order variant in 2 MiB pages, whether any
prefetcher crosses a 4 KiB boundary). bfs and radixsort gain 10-12% measured from all-2 MiB pages
but 2-3.5% simulated (issue 90); one untested explanation was a stream prefetcher that cannot cross
a 4 KiB page. An 8 MiB region lies inside the L2 DTLB's reach in 4 KiB pages (2048 of its 4096
entries) and past the L2 cache, so the TLB cannot make its two page sizes differ and a page-bound
prefetcher can; a 128 MiB region (32768 pages) is past the TLB's reach, where both do.

All variants' runs are interleaved: each repetition runs every variant in both page sizes (the two
in alternating order), so the load's drift reaches all; `reps` of each, isolated as `tlblab host
predict` isolates its runs (`predict.isolation`), each run's time the rounds after the first by CPU
time (`predict.run_seconds`). Beside the measured ratio, the model's (`predict.pagechase_model` on
this host's machine as `tlblab host predict` builds it, 4 KiB host pages). Nothing is fitted here.
Prints one JSON object (and a table on stderr)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from tlblab import paths
from tlblab.errors import UserError
from tlblab.host import chase_study
from tlblab.host import predict as hp

ROUNDS = 8


def variant(spec: str) -> tuple[hp.Program, int]:
    """`stream BYTES SWEEPS STRIDE SHUFFLE 8` from "BYTES:SWEEPS:STRIDE[:shuffled]", and the lines
    it reads a round."""
    parts = spec.split(":")
    try:
        if len(parts) == 4 and parts[3] != "shuffled":
            raise ValueError
        size, sweeps, stride = parts[:3]
        nbytes, nsweeps, nstride = hp._size_bytes(size), int(sweeps), int(stride)
    except (ValueError, KeyError, IndexError):
        raise UserError(f"--variants: expected BYTES:SWEEPS:STRIDE[:shuffled] (e.g. 8M:16:1), found '{spec}'") from None
    if len(parts) > 4 or nbytes % 4096 or nbytes == 0 or nsweeps < 1 or not 1 <= nstride <= 64:
        raise UserError(f"--variants: expected BYTES a multiple of 4K, SWEEPS >= 1 and STRIDE 1-64 lines, "
                        f"found '{spec}'")
    shuffle = "1" if len(parts) == 4 else "0"
    # The pool: twice the region (the allocator's own blocks beside it), at least 64 MiB.
    pool_mib = max(64, 2 * (-(-nbytes // (1 << 21)) * 2))
    args = (size, sweeps, stride, shuffle, str(ROUNDS))  # ROUNDS last: `Program.argv` sets it
    prog = hp.Program("stream", args, args, (size, "1", stride, shuffle, "2"), f"{pool_mib}M",
                      f"stream over {size}, every {stride} line(s), {sweeps} sweeps a round"
                      + (", 4 KiB pieces shuffled" if shuffle == "1" else ""))
    return prog, nsweeps * (nbytes // 4096) * -(-64 // nstride)


def study(specs: list[str], *, reps: int, cpu: int, out: Path, log=None) -> dict[str, Any]:
    say = log or (lambda s: None)
    variants = [variant(spec) for spec in specs]  # a bad one is refused before anything runs
    out.mkdir(parents=True, exist_ok=True)
    how = hp.isolation()
    placement = hp.guest_placement_of_host(out, say) if hp._is_vm() else None
    m, how_machine = hp.host_machine(None, placement=placement)
    setups = []
    for spec, (prog, lines) in zip(specs, variants):
        work = out / "work" / f"stream-{spec.replace(':', '-')}"
        work.mkdir(parents=True, exist_ok=True)
        layouts, predicted = hp.pagechase_model(m, work=work, size="full", cache=out / "sim-cache", log=say,
                                                program=prog)
        setups.append((spec, prog, lines, work, layouts, predicted))
    times: dict[str, dict[str, list[float]]] = {spec: {"4k": [], "2m": []} for spec in specs}
    loads = []
    for rep in range(reps):
        for spec, prog, _, work, layouts, _ in setups:
            for mo in (("4k", "2m") if rep % 2 == 0 else ("2m", "4k")):
                r = hp.run_program(prog, layouts[mo], work / f"{mo}.report.json", "full", cpu, how=how)
                if not r.ok:
                    raise UserError(f"stream {spec}: the {mo} mosaic did not happen ({json.dumps(r.report)[:200]})")
                times[spec][mo].append(r.seconds or 0.0)
                loads.append(r.load)
    rows = []
    for spec, _, lines, _, _, predicted in setups:
        tt = times[spec]
        med = {mo: statistics.median(t) for mo, t in tt.items()}
        # Each run's 2 MiB / 4 KiB ratio against the run beside it (the pairs share the machine's moment).
        pairs = sorted(b / a for a, b in zip(tt["4k"], tt["2m"]))
        row = {"variant": spec, "ns_line_4k": 1e9 * med["4k"] / (ROUNDS * lines),
               "ns_line_2m": 1e9 * med["2m"] / (ROUNDS * lines),
               "spread_4k_pct": 100 * (max(tt["4k"]) - min(tt["4k"])) / med["4k"],
               "spread_2m_pct": 100 * (max(tt["2m"]) - min(tt["2m"])) / med["2m"],
               "ratio_of_medians": med["2m"] / med["4k"], "pair_ratio_median": statistics.median(pairs),
               "pair_ratio_q1_q3": [pairs[len(pairs) // 4], pairs[(3 * len(pairs)) // 4]],
               "model_ratio": predicted["4KiB"]}
        rows.append(row)
        say(f"{spec}: {row['ns_line_4k']:.3f} / {row['ns_line_2m']:.3f} ns a line (spread "
            f"{row['spread_4k_pct']:.0f}% / {row['spread_2m_pct']:.0f}%), 2 MiB / 4 KiB {row['ratio_of_medians']:.3f}, "
            f"pairs {row['pair_ratio_median']:.3f} [{row['pair_ratio_q1_q3'][0]:.3f}, "
            f"{row['pair_ratio_q1_q3'][1]:.3f}], model {row['model_ratio']:.3f}")
    say(f"load (1-minute) over the runs: {min(loads):.1f}-{max(loads):.1f}, mean {statistics.fmean(loads):.1f}")
    return {"rows": rows, "machine": how_machine, "isolation": how, "reps": reps, "cpu": cpu,
            "load": [min(loads), statistics.fmean(loads), max(loads)]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tlblab.host.stream_study", description=__doc__.splitlines()[0])
    p.add_argument("--variants", default="8M:16:1,8M:16:1:shuffled,128M:1:1,128M:1:4")
    p.add_argument("--reps", type=int, default=21)
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--out", default=str(paths.out("host-predict")))
    a = p.parse_args(argv)
    return chase_study.print_study(lambda log: study(a.variants.split(","), reps=a.reps, cpu=a.cpu,
                                                     out=Path(a.out), log=log))


if __name__ == "__main__":
    sys.exit(main())
