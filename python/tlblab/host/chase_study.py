"""Why the model gives too little of the 2 MiB gain: `pagechase` at sizes and memory-level
parallelism the predicted programs do not use, measured and simulated side by side
(docs/host-predict.md, "Walks overlap less than data").

    python -m tlblab.host.chase_study [--pages 2048,8192,32768] [--chains 1,2,4,8] [--reps 5] [--cpu 1]

Each variant is `pagechase PAGES 1M CHAINS 8`: a chase through one line of each of PAGES pages,
from CHAINS starting points at once (CHAINS independent misses in flight). Per variant the all-2 MiB
and all-4 KiB runs are interleaved, `reps` of each, isolated as `tlblab host predict` isolates its
runs (`predict.isolation`: SCHED_FIFO pinned to `cpu` as root), each run's time the rounds after
the first by CPU time (`predict.run_seconds`); beside the measured 2 MiB / 4 KiB ratio, the model's
(`predict.pagechase_model` on this host's machine, as `tlblab host predict` builds it, 4 KiB host
pages, with the guest placement of the variant's own all-4 KiB runs: `predict.own_placement`). The
model sums latencies in order, so its ratio barely moves with CHAINS; the host's moves
as far as its page walks overlap less (or more) than the data's own misses. Nothing here is fitted:
a measurement of the host on programs that are not among those predicted, with the model beside it.
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
from tlblab.host import predict as hp


def variant(pages: int, chains: int) -> hp.Program:
    """`pagechase PAGES 1M CHAINS 8`, its pool at least twice its pages (room for the permutation)."""
    pool_mib = max(256, 1 << (2 * pages * 4096 - 1).bit_length() >> 20)
    return hp.Program("pagechase", (str(pages), "1M", str(chains), "8"), (str(pages), "1M", str(chains), "8"),
                      (str(pages), "64k", str(chains), "2"), f"{pool_mib}M",
                      f"pagechase over {pages} pages, {chains} chains at once")


def study(pages: list[int], chains: list[int], *, reps: int, cpu: int, out: Path, log=None) -> dict[str, Any]:
    say = log or (lambda s: None)
    how = hp.isolation()
    outdir = out
    outdir.mkdir(parents=True, exist_ok=True)
    placement = hp.guest_placement_of_host(outdir, say) if hp._is_vm() else None
    m, how_machine = hp.host_machine(None, placement=placement)
    cache = outdir / "sim-cache"
    rows = []
    for n in pages:
        for k in chains:
            prog = variant(n, k)
            work = outdir / "work" / f"chase-{n}-{k}"
            work.mkdir(parents=True, exist_ok=True)
            layouts = hp.pagechase_layouts(work, prog)
            times: dict[str, list[float]] = {"4k": [], "2m": []}
            loads = []
            pagemaps = []
            for rep in range(reps):
                for mo in (("4k", "2m") if rep % 2 == 0 else ("2m", "4k")):
                    r = hp.run_program(prog, layouts[mo], work / f"{mo}.report.json", "full", cpu, how=how)
                    if not r.ok:
                        raise UserError(f"pagechase {n} pages: the {mo} mosaic did not happen "
                                        f"({json.dumps(r.report)[:200]})")
                    times[mo].append(r.seconds or 0.0)
                    loads.append(r.load)
                    if mo == "4k" and r.report["pools"]["heap"].get("pagemap"):
                        pagemaps.append(r.report["pools"]["heap"]["pagemap"])
            # The model on the chase's own placement (its median all-4 KiB run's frames), as
            # `host_page_check` and the programs: the 1 GiB sample's is not what its heap got.
            own, own_note = hp.own_placement(m, placement, pagemaps, f"pagechase {n}x{k}")
            if own_note:
                say(own_note)
            predicted = hp.pagechase_model(own, work=work, size="full", cache=cache, log=say, program=prog)[1]
            med = {mo: statistics.median(t) for mo, t in times.items()}
            steps = 8 * (1 << 20)
            row = {"pages": n, "chains": k, "ns_4k": 1e9 * med["4k"] / steps, "ns_2m": 1e9 * med["2m"] / steps,
                   "spread_4k_pct": 100 * (max(times["4k"]) - min(times["4k"])) / med["4k"],
                   "spread_2m_pct": 100 * (max(times["2m"]) - min(times["2m"])) / med["2m"],
                   "measured_ratio": med["2m"] / med["4k"], "model_ratio": predicted["4KiB"],
                   "load": statistics.fmean(loads)}
            rows.append(row)
            say(f"pages {n} chains {k}: {row['ns_4k']:.2f} / {row['ns_2m']:.2f} ns a step, 2 MiB / 4 KiB "
                f"{row['measured_ratio']:.3f} measured, {row['model_ratio']:.3f} model (load {row['load']:.1f})")
    return {"rows": rows, "machine": how_machine, "isolation": how, "reps": reps, "cpu": cpu}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tlblab.host.chase_study", description=__doc__.splitlines()[0])
    p.add_argument("--pages", default="2048,8192,32768")
    p.add_argument("--chains", default="1,2,4,8")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--out", default=str(paths.out("host-predict")))
    a = p.parse_args(argv)
    try:
        pages = [int(x) for x in a.pages.split(",")]
        chains = [int(x) for x in a.chains.split(",")]
    except ValueError:
        print(f"tlblab: --pages/--chains: expected comma-separated counts, found '{a.pages}' / '{a.chains}'",
              file=sys.stderr)
        return 2
    return print_study(lambda log: study(pages, chains, reps=a.reps, cpu=a.cpu, out=Path(a.out), log=log))


def print_study(run) -> int:
    """A study's command: `run(log)` with progress on stderr, its result printed as one JSON
    object; a UserError is one line and exit status 2 (stream_study's too)."""
    try:
        res = run(lambda s: print(f"tlblab: {s}", file=sys.stderr, flush=True))
    except UserError as e:
        print(f"tlblab: {e}", file=sys.stderr)
        return 2
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
