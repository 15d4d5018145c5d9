"""`tlblab host coloring`: does TLB coloring isolate two tasks on this machine? (seed 003 §6.0.8)

Runs the C benchmark `color_sweep` (runtime/bench/color_sweep.c): two tasks alternate on one core
as jobs of a cyclic executive; each job sweeps all of the task's pages with a dependent chase. A's
sweep is timed right after B's. Three placements of the same pages are compared, in interleaved
rounds: `same` (A and B allocate from overlapping colors, so they share L2 DTLB sets beyond the
associativity), `diff` (disjoint colors), and `glibc` (malloc(4096) per page, as the seed did).
Timing only: this VM has no TLB-miss counters.

The colored TLB level is the host's L2 DTLB, taken from `--machine` (a machine file, e.g. what
`tlblab probe --out host.toml` writes, or a preset name), else from this host's probed machine
(`tlblab.host.geometry`: cached, or a quick probe now); `--sets`/`--ways` override it. Colors are
sets indexed by the low VPN bits (the probe's conflict sets, docs/probe.md: effective capacity halves with every
doubling of a power-of-two page stride). Each task sweeps more pages than the L1 DTLB holds, so that
its translations come from the colored level.

Two scenarios, sized from the geometry (W ways, S sets; `per` = ⌈0.75 W⌉ pages per color and task,
on C = max(8, ⌈(L1 + 1) / per⌉) colors):
  pair   A and B each sweep C × per pages on C colors: "same" puts 2 per = 1.5 W pages on each of
         A's sets (> W ways), "diff" per (< W). On Zen 3 (128 × 16): 96 pages on 8 colors, 24 vs 12.
  noisy  A as in pair, B (a noisy neighbour) 1.5 × S × W pages on the other S − C colors, more than
         the whole L2 DTLB: only disjoint colors keep A's translations in the TLB, but B's sweep also
         flushes A's data and page-table lines from the caches for every placement, so on this VM
         (2 vCPUs shared with other jobs) the TLB effect drowns in cache noise (docs/color.md).
The default is `pair`, the clean demonstration.

`--set-curve` (with `--predict`) first measures the ways one set keeps among others (`set_curve`)
and gives them to the model (`coloring_model.with_ways`). color_sweep runs as `tlblab host
predict`'s runs do (`predict.isolation`: SCHED_FIFO pinned to `--cpu` as root).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tlblab.errors import UserError
from tlblab.host._runtime import executable

SCENARIOS = ("pair", "noisy")

# The per-set curve's layout: A k pages on each of CURVE_COLORS colors, B one page a set on
# L1 + 12 other colors, enough to push A's translations out of the L1 DTLB between A's sweeps, so
# that A's sets hold A's pages only. Not the pair's layout (A's 9 colors of 12 pages beside B's 9
# of 12), so the ways it reads are not fitted to the same/diff ratio they predict. Few colors keep
# A's and B's lines in the L1D (each element is its own line on one of 32 line offsets: at 27
# colors of 12 the lines no longer fit, and the curve rises for the data cache).
CURVE_COLORS = 3


def scenario_sizes(scenario: str, sets: int, ways: int, l1_entries: int) -> dict:
    """Pages and colors of each task for a geometry (see the module docstring)."""
    per = -(-3 * ways // 4)
    colors = max(8, -(-(l1_entries + 1) // per))
    if scenario == "pair":
        return {"a_pages": colors * per, "a_colors": colors, "b_pages": colors * per, "b_colors": colors}
    return {"a_pages": colors * per, "a_colors": colors, "b_pages": 3 * sets * ways // 2,
            "b_colors": max(1, sets - colors)}


def register(sub) -> None:
    p = sub.add_parser("coloring", help="two tasks on one core: same vs different TLB colors vs glibc placement")
    p.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="pair",
                   help="pair (default), noisy (cache-dominated here), or all")
    p.add_argument("--machine", metavar="HOST.toml",
                   help="machine file (tlblab probe --out) or preset whose L2 DTLB to color; 'probe' probes "
                        "this host now (default: this host's cached probe, else a quick probe)")
    p.add_argument("--sets", type=int, help="sets of the colored TLB level (overrides --machine)")
    p.add_argument("--ways", type=int, help="associativity of the colored TLB level (overrides --machine)")
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds (each yields one median per variant)")
    p.add_argument("--jobs", type=int, default=201, help="job pairs per variant per round")
    p.add_argument("--cpu", type=int, default=0, help="CPU to pin the tasks to")
    p.add_argument("--seed", type=int, default=1, help="seed of the random page orders (default: 1)")
    p.add_argument("--threads", action="store_true",
                   help="run A and B as two threads on the CPU handing over with semaphores (context switches) "
                        "instead of one cyclic-executive thread")
    p.add_argument("--quick", action="store_true", help="5 rounds of 51 jobs (a smoke run)")
    p.add_argument("--predict", action="store_true",
                   help="also the model's prediction: the same sweeps (color_sweep --dump) simulated on this host's "
                        "machine file, A's ns per access per variant and the same/diff ratio beside the measured")
    p.add_argument("--set-curve", action="store_true",
                   help="with --predict: first measure the ways one set keeps among others (A k pages on each of "
                        f"{CURVE_COLORS} colors, B one page a set elsewhere, k up to ways + 4) and give the model those "
                        "ways and the replacement the curve reads (docs/host-predict.md)")
    p.add_argument("--json", action="store_true", help="print the raw JSON instead of a table")
    p.set_defaults(func=run)


def _sweep_json(args: list[str], cpu: int) -> dict:
    """color_sweep's JSON, run isolated as `tlblab host predict`'s runs are (`predict.isolation`)."""
    from tlblab.host import predict as hp
    from tlblab.host.ptwarm import run_json

    return run_json(Path(args[0]), args[1:], "color_sweep", hp._isolated(cpu, hp.isolation()))


def set_curve(*, sets: int, ways: int, l1_entries: int, cpu: int, reps: int = 7, jobs: int = 401,
              seed: int = 1) -> dict:
    """The per-set capacity curve: for k = ways/4 .. ways + 4 pages a set, A's ns per access in
    color_sweep's diff variant (A k pages on each of CURVE_COLORS colors, B one page a set on the
    next L1 + 12 colors) minus its glibc variant's (as many consecutive pages: the timer's share
    and the L2 DTLB hit), each rep one run of every k, the order rotated each rep. Returns
    {"points": [{"k", "excess_ns" (median over reps), "min", "max"}], "ways": effective_ways,
    "reps", "jobs", "a_colors", "b_colors"}."""
    import statistics

    from tlblab.host.coloring_model import effective_ways

    b_colors = min(l1_entries + 12, sets - CURVE_COLORS)
    ks = list(range(max(2, ways // 4), ways + 5))
    excess: dict[int, list[float]] = {k: [] for k in ks}
    exe = str(executable("color_sweep"))
    for r in range(reps):
        for k in ks[r % len(ks):] + ks[:r % len(ks)]:
            args = [exe, "--sets", str(sets), "--ways", str(ways), "--a-pages", str(CURVE_COLORS * k),
                    "--a-colors", str(CURVE_COLORS), "--b-pages", str(b_colors), "--b-colors", str(b_colors),
                    "--rounds", "5", "--jobs", str(jobs), "--cpu", str(cpu), "--seed", str(seed + r)]
            v = _sweep_json(args, cpu)["variants"]
            excess[k].append(v["diff"]["a_ns_per_access"]["median"] - v["glibc"]["a_ns_per_access"]["median"])
    points = [{"k": k, "excess_ns": statistics.median(x), "min": min(x), "max": max(x)} for k, x in excess.items()]
    return {"points": points, "ways": effective_ways(points), "reps": reps, "jobs": jobs,
            "a_colors": CURVE_COLORS, "b_colors": b_colors}


def measure(scenario: str, *, sets: int | None = None, ways: int | None = None, machine: str | None = None,
            rounds: int = 15, jobs: int = 201, cpu: int = 0, seed: int = 1, threads: bool = False,
            predict: bool = False, curve: bool = False) -> dict:
    """Run one scenario and return color_sweep's JSON as a dict (ns per access, medians and spread).
    The geometry: `sets`/`ways` where given, the rest from `machine` (tlblab.host.geometry).
    `predict`: the model's prediction beside it under "prediction" (`coloring_model.predict`), and
    the measured same/diff ratio of A's medians; `curve`: the model's colored level keeps the ways
    the per-set curve reads (`set_curve`, under "set_curve")."""
    from tlblab.host.geometry import geometry

    if scenario not in SCENARIOS:
        raise UserError(f"unknown scenario '{scenario}': expected one of {', '.join(SCENARIOS)}")
    for name, value, lo in (("sets", sets, 2), ("ways", ways, 1), ("rounds", rounds, 1), ("jobs", jobs, 1),
                            ("cpu", cpu, 0), ("seed", seed, 0)):
        if value is not None and value < lo:
            raise UserError(f"--{name} must be at least {lo}, found {value}")
    if sets is not None and sets & (sets - 1):
        raise UserError(f"--sets must be a power of two, found {sets}")
    g = geometry(machine)
    source = g.source if sets is None or ways is None else "--sets/--ways"
    sets = g.sets if sets is None else sets
    ways = g.ways if ways is None else ways
    sc = scenario_sizes(scenario, sets, ways, g.l1_entries)
    if sc["a_colors"] + sc["b_colors"] > sets:
        sc["b_colors"] = sets - sc["a_colors"]
        if sc["b_colors"] < 1:
            raise UserError(f"--sets {sets} is too small for scenario '{scenario}' "
                            f"(needs at least {sc['a_colors'] + 1} sets)")
    args = [str(executable("color_sweep"))]
    for k, v in {**sc, "sets": sets, "ways": ways, "rounds": rounds, "jobs": jobs, "cpu": cpu, "seed": seed,
                 "threads": int(threads)}.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    sc_curve = None
    if predict:
        from tlblab.host.coloring_model import curve_replacement
        from tlblab.host.coloring_model import predict as model

        kept, note, policy = None, "", None
        if curve:
            sc_curve = set_curve(sets=sets, ways=ways, l1_entries=g.l1_entries, cpu=cpu, seed=seed)
            kept = sc_curve["ways"]
            pts = ", ".join(f"{p['k']}: {p['excess_ns']:.2f}" for p in sc_curve["points"])
            note = (f"{kept} ways kept a set by the per-set curve (A k pages on each of {CURVE_COLORS} colors, B one "
                    f"page a set on {sc_curve['b_colors']} others; A's excess ns per access over consecutive pages, "
                    f"median of {sc_curve['reps']}, by k: {pts})")
            if kept is None or kept >= ways:
                kept = None  # the curve read no fewer ways than the structure's: the model keeps its level
            else:
                policy = curve_replacement(sc_curve["points"], kept)
                sc_curve["replacement"] = policy or "as the machine file"
                if policy:
                    note += (f"; replacement {policy}: from {kept + 1} to {kept + 4} pages a set the curve averages "
                             f"below 3/4 of its top, where an LRU set of {kept} ways misses every access")
        pred = model(args, machine, kept, note, policy)
    out = _sweep_json(args, cpu)
    out["scenario"] = scenario
    out["geometry_source"] = source
    out["geometry_note"] = g.note if source != "--sets/--ways" else ""
    if predict:
        v = out.get("variants", {})
        if "same" in v and "diff" in v and v["diff"]["a_ns_per_access"]["median"] > 0:
            pred["measured_same_over_diff"] = v["same"]["a_ns_per_access"]["median"] / v["diff"]["a_ns_per_access"]["median"]
        out["prediction"] = pred
    if sc_curve is not None:
        out["set_curve"] = sc_curve
    return out


def _fmt(s: dict) -> str:
    return f"{s['median']:7.2f} [{s['q1']:.2f}-{s['q3']:.2f}] ({s['min']:.2f}-{s['max']:.2f})"


def run(args) -> int:
    if args.set_curve and not args.predict:
        raise UserError("--set-curve gives the model its ways: it needs --predict")
    rounds, jobs = (5, 51) if args.quick else (args.rounds, args.jobs)
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    results = [measure(n, sets=args.sets, ways=args.ways, machine=args.machine, rounds=rounds, jobs=jobs, cpu=args.cpu, seed=args.seed,
                       threads=args.threads, predict=args.predict, curve=args.set_curve) for n in names]
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return 0
    for r in results:
        print(f"scenario {r['scenario']}: A {r['a_pages']} pages on {r['a_colors']} colors, "
              f"B {r['b_pages']} pages on {r['b_colors']} colors; {r['sets']} sets x {r['ways']} ways "
              f"(from {r['geometry_source']}); "
              f"{r['rounds']} rounds x {r['jobs']} jobs, cpu {r['cpu']}, tasks {r['mode']}")
        if r.get("geometry_note"):
            print(f"  the colored level: {r['geometry_note']}")
        print("  ns per access: median [q1-q3] (min-max) over rounds")
        print(f"  {'variant':8} {'max pages/set':>13} {'sets A∩B':>8}  {'task A (timed after B)':34} task B")
        for name, v in r["variants"].items():
            print(f"  {name:8} {v['max_pages_per_set']:13d} {v['sets_shared']:8d}  {_fmt(v['a_ns_per_access']):34} "
                  f"{_fmt(v['b_ns_per_access'])}")
        if "set_curve" in r:
            c = r["set_curve"]
            print(f"  per-set curve (A k pages on each of {c['a_colors']} colors; excess ns/access over consecutive "
                  f"pages): " + ", ".join(f"{p['k']}: {p['excess_ns']:.2f}" for p in c["points"])
                  + f"; ways kept a set: {c['ways']}, replacement {c.get('replacement', 'as the machine file')}")
        if "prediction" in r:
            p = r["prediction"]
            print("  the model (the same sweeps simulated): A's ns per access "
                  + ", ".join(f"{k} {x['a_ns_per_access']:.2f}" for k, x in p["variants"].items()))
            if "same_over_diff" in p and "measured_same_over_diff" in p:
                print(f"  same / diff: measured {p['measured_same_over_diff']:.3f}, predicted {p['same_over_diff']:.3f}")
            print(f"  the model's machine: {p['machine']}")
        print()
    return 0
