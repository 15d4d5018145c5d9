"""`tlblab simulate`: run one workload on one machine and print the statistics."""

from __future__ import annotations

import json
import sys

from tlblab.paths import out
from tlblab.report_text import format_table


def register(sub) -> None:
    p = sub.add_parser("simulate", help="simulate a workload on a machine")
    p.add_argument("--machine", default="zen3", help="preset name or machine .toml/.json file (default: zen3)")
    p.add_argument("--workload", default="random", help="workload spec NAME[:key=value,...] (default: random)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the workload's and the replacement policies' random choices (default: 0): same seed, same numbers")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--tlb-only", action="store_true",
                      help="the TLB levels alone: no page walks (a miss in every level counts as a walk "
                           "of the walker's fixed latency), no caches, no data accesses")
    mode.add_argument("--no-caches", action="store_true",
                      help="TLB levels and page walks, every page-table entry read from memory; no caches, "
                           "no data accesses")
    p.add_argument("--max-references", type=int, default=0,
                   help="stop after this many references (default 0: no limit)")
    p.add_argument("--warmup", type=int, default=0, metavar="N",
                   help="simulate N references first, then reset the statistics: they cover what follows "
                        "(the region of interest) only")
    p.add_argument("--roi", type=int, default=None, metavar="N",
                   help="the region of interest: stop N references after the warm-up (default: to the end)")
    p.add_argument("--warmup-instructions", type=int, default=0, metavar="N",
                   help="ChampSim traces: warm up with the first N instructions (as ChampSim's option)")
    p.add_argument("--simulation-instructions", type=int, default=None, metavar="N",
                   help="ChampSim traces: simulate N instructions after the warm-up, then stop")
    p.add_argument("--fetches", choices=("on", "off"), default="on",
                   help="ChampSim traces: each record's instruction fetch on (default) or off (reference "
                        "counts then count data references)")
    p.add_argument("--os", default="", metavar="KEY=VALUE,...",
                   help="OS model: switch=auto|flush_all|asid_tagged|hook (hook: the technique handles each address-space "
                        "switch, e.g. fass), asid_bits=N, switch_cycles=N, ipi_cycles=N, kernel_pages=N (kernel pages "
                        "every switch touches as global mappings), kernel_return_pages=N (more, after a technique's "
                        "switch-in work), fault_kernel_pages=N (kernel pages every demand-paging fault touches), "
                        "migrate_kernel_pages=N (kernel pages a migration touches on the old core before a technique's save), "
                        "tlb_maintenance=ipi|broadcast (how munmap, mprotect and a process's exit reach the other cores' "
                        "TLBs: x86-style shootdown with IPIs, or ARMv7's broadcast operations, which flush the micro TLBs), "
                        "syscall_kernel_pages=N and tick_kernel_pages=N (kernel pages a trace's KernelEntry events "
                        "touch: a system call's, a timer tick's)")
    p.add_argument("--technique", default="", metavar="NAME[:KEY=VALUE,...]",
                   help="switch on a technique (see `tlblab techniques`); overrides a machine file's [technique]")
    p.add_argument("--stall-cycles", action="store_true",
                   help="count data TLB stall cycles per level (seed 004 Tables 2-3); every reference takes "
                        "the engine's general path")
    p.add_argument("--miss-log", default=None, metavar="LEVEL",
                   help="attribute every miss of TLB level LEVEL (e.g. L1D): print the misses per set and, per "
                        "set, which thread missed pages whose fill by which thread had evicted them (--json: "
                        "every miss under \"misses\"); every reference takes the engine's general path")
    checkpoints = p.add_argument_group("checkpoints (docs/checkpoints.md)")
    checkpoints.add_argument("--checkpoint-at", default=None, metavar="roi|N",
                             help="with --save-checkpoint: pause where the region of interest began (roi) or at "
                                  "the first batch read from N references on, save the engine's whole state, run on")
    checkpoints.add_argument("--save-checkpoint", default=None, metavar="FILE", help="where --checkpoint-at saves")
    checkpoints.add_argument("--from-checkpoint", default=None, metavar="FILE",
                             help="start from a saved checkpoint (same machine, options and workload) and run the rest; "
                                  "--technique then starts at the checkpoint")
    sampling = p.add_argument_group("sampling (docs/sampling.md)")
    sampling.add_argument("--sample", default=None, metavar="UNIT:PERIOD[:OFFSET]",
                          help="systematic sampling (SMARTS): measure every PERIOD-th unit of UNIT references, from unit "
                               "OFFSET (default: drawn from --seed) on, and print each statistic's estimate with its "
                               "confidence interval (docs/sampling.md)")
    sampling.add_argument("--sample-head", type=int, default=1, metavar="N",
                          help="with --sample: measure the first N units in full (default 1: the cold start)")
    sampling.add_argument("--confidence", type=float, default=0.95, metavar="P",
                          help="with --sample: the intervals' confidence (default 0.95)")
    cut = p.add_mutually_exclusive_group()
    cut.add_argument("--intervals", type=int, default=None, metavar="K",
                     help="one pass writes checkpoints at K-1 boundaries (of --max-references, or the workload's "
                          "length), the K intervals run in parallel on Dask, their statistics merge into one result "
                          "(docs/intervals.md); with --technique, each interval starts from the pass's state with "
                          "the technique installed at its boundary")
    cut.add_argument("--interval-length", type=int, default=None, metavar="N",
                     help="as --intervals, with intervals of N references each")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                       help="with --intervals: run them on this existing Dask scheduler (default: a LocalCluster "
                            "over this machine's cores)")
    where.add_argument("--serial", action="store_true", help="with --intervals: run them in this process")
    p.add_argument("--workers", type=int, default=0, help="with --intervals: LocalCluster worker processes "
                                                          "(default: one per core)")
    p.add_argument("--out", default=str(out("intervals")), metavar="DIR",
                   help="with --intervals: where the pass's checkpoints and each interval's result are kept, by "
                        "content, so a killed run re-run resumes (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the full statistics as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from tlblab import simulate
    from tlblab.study import KERNEL_SECTION, kernel_remedy, spec_on

    workload = args.workload
    if ":" in workload or workload.isidentifier():  # a spec, not a trace file
        import tlblab

        catalog = {w["name"]: w for w in tlblab.workloads()}
        try:
            sizes = tlblab.page_sizes(args.machine)
        except ValueError:
            sizes = None  # the run reports the machine's error
        if sizes is not None:
            workload = spec_on(args.machine, workload, catalog, sizes)
            if workload != args.workload:
                print(f"note: {args.machine}'s page table has no {KERNEL_SECTION} sections for ARM Linux's kernel "
                      f"image: running {workload} (the user process alone; kernel=1 needs a preset such as sa1100)",
                      file=sys.stderr)
    if args.sample is not None:
        # Sampling and intervals are two ways to cut one run; a sampled run once dropped
        # --intervals without a word.
        cut = "--intervals" if args.intervals is not None else "--interval-length"
        if args.intervals is not None or args.interval_length is not None:
            raise ValueError(f"--sample with {cut}: a run is either sampled or cut in intervals, not both")
        return _run_sampled(args, workload)
    if args.intervals is not None or args.interval_length is not None:
        return _run_intervals(args, workload)
    for flag, given in (("--scheduler", args.scheduler), ("--serial", args.serial), ("--workers", args.workers)):
        if given:
            raise ValueError(f"{flag} is for a run cut in intervals: give --intervals K too")
    try:
        r = _simulate(simulate, args, workload)
    except ValueError as e:
        raise ValueError(kernel_remedy(str(e), workload)) from None
    _print(args, r)
    return 0


def _simulate(simulate, args, workload):
    return simulate(args.machine, workload, seed=args.seed, tlb_only=args.tlb_only,
                 caches=not args.no_caches, data_accesses=not args.no_caches,
                 max_references=args.max_references, os=parse_os(args.os), technique=args.technique or None,
                 progress=sys.stderr.isatty(), stall_cycles=args.stall_cycles,
                 warmup=args.warmup, roi=args.roi, warmup_instructions=args.warmup_instructions,
                 simulation_instructions=args.simulation_instructions, fetches=args.fetches == "on",
                 checkpoint_at=args.checkpoint_at, save_checkpoint=args.save_checkpoint,
                 from_checkpoint=args.from_checkpoint, miss_log=args.miss_log)


def _run_sampled(args, workload) -> int:
    from tlblab.sampling import parse_sample, sample

    for flag, given in (("--roi", args.roi is not None), ("--warmup-instructions", args.warmup_instructions),
                        ("--simulation-instructions", args.simulation_instructions is not None),
                        ("--stall-cycles", args.stall_cycles), ("--miss-log", args.miss_log),
                        ("--checkpoint-at", args.checkpoint_at),
                        ("--save-checkpoint", args.save_checkpoint), ("--from-checkpoint", args.from_checkpoint)):
        if given:
            raise ValueError(f"--sample with {flag}: a sampled run covers the run from its start "
                             f"(--max-references and --warmup apply; {flag} does not)")
    unit, period, offset = parse_sample(args.sample)
    s = sample(args.machine, workload, unit=unit, period=period, offset=offset, head=args.sample_head, seed=args.seed,
               confidence=args.confidence, tlb_only=args.tlb_only, caches=not args.no_caches,
               data_accesses=not args.no_caches, max_references=args.max_references, os=parse_os(args.os),
               technique=args.technique or None, progress=sys.stderr.isatty(), warmup=args.warmup)
    if args.json:
        print(json.dumps(s.to_dict(), indent=2))
        return 0
    warm = f" ({s.warmup} of them a warm-up, outside the units and the estimates)" if s.warmup else ""
    print(f"machine {s.machine}, workload {s.workload}: {s.references} references{warm}; sampled {s.measured} of "
          f"{s.population} units of {s.unit} references (the first {s.head}, then every {s.period}th from unit "
          f"{s.head + s.offset})")
    pct = f"{s.confidence * 100:g}%"
    print(f"estimates per reference (miss rates: per access) with {pct} intervals: SMARTS systematic sampling, "
          f"Student t with finite-population correction (docs/sampling.md)")
    rows = []
    for e in s.estimates().values():
        if e.value == 0 and e.half_width == 0:
            continue  # a level or source the run never used (--json keeps every statistic)
        rel = f"{e.half_width / abs(e.value) * 100:.2f}%" if e.value else "-"
        total = f"{e.total:.4g}" if e.total is not None else ""
        rows.append([e.name, f"{e.value:.6g}", f"{e.half_width:.3g}", rel, total])
    print(format_table(["statistic", "estimate", f"± ({pct})", "relative", "run total"], rows))
    print(rate_line(s.run))
    return 0


def _run_intervals(args, workload) -> int:
    from tlblab.intervals import intervals

    for flag, given in (("--roi", args.roi is not None), ("--warmup-instructions", args.warmup_instructions),
                        ("--simulation-instructions", args.simulation_instructions is not None),
                        ("--fetches off", args.fetches == "off"),
                        ("--stall-cycles", args.stall_cycles), ("--miss-log", args.miss_log),
                        ("--checkpoint-at", args.checkpoint_at), ("--save-checkpoint", args.save_checkpoint),
                        ("--from-checkpoint", args.from_checkpoint)):
        if given:
            raise ValueError(f"--intervals with {flag}: a run cut in intervals takes --max-references, --warmup, "
                             f"--os, --technique and the run modes; {flag} does not apply")
    if args.workers < 0:
        raise ValueError(f"--workers: expected a positive number, found {args.workers}")
    iv = intervals(args.machine, workload, args.intervals, every=args.interval_length,
                   technique=args.technique or None, seed=args.seed, tlb_only=args.tlb_only,
                   caches=not args.no_caches, data_accesses=not args.no_caches,
                   max_references=args.max_references, warmup=args.warmup, os=parse_os(args.os),
                   scheduler=args.scheduler, workers=args.workers or None, serial=args.serial,
                   out=args.out, progress=sys.stderr.isatty())
    _print(args, iv.result)
    if not args.json:
        starts = ", ".join(str(i["begin"]) for i in iv.intervals)
        print(f"intervals: {iv!r}; they begin at references {starts} (checkpoints in {iv.directory})")
        if args.technique:
            print(f"each interval starts from the pass's state (run without a technique) with {args.technique} "
                  f"installed at its boundary")
    return 0


def _print(args, r) -> None:
    if args.json:
        import copy

        from tlblab.sim import label_levels

        print(json.dumps({**label_levels(copy.deepcopy(r.stats)), "run": r.run}, indent=2))
        return
    t = r.total
    print(f"machine {r.machine}, workload {r.workload}: {t['references']} references, "
          f"{r.cycles} cycles ({t['cycles'] / max(t['references'], 1):.2f} per reference)")
    w = r.stats.get("warmup")
    if w:
        print(f"warm-up: {w['references']} references before the region of interest, left out of every "
              f"count here ({w['cycles']} cycles)")
    if args.roi is not None and t["references"] < args.roi:
        print(f"note: the workload ended {t['references']} references into the region of interest "
              f"(--roi {args.roi}): every count here covers those")
    print(format_table(["TLB level", "accesses", "hits", "misses", "evictions", "miss rate"],
                       _level_rows(r.stats["tlb_levels"], t["tlb"])))
    if t.get("data_stall_cycles"):
        # seed 004 Tables 2-3: a level's stall is the next level's lookups, or the walks.
        rows = [[name, "total", c] for name, c in r.stall_cycles().items()]
        for p in sorted(r.stats["processes"], key=int):
            rows += [[name, f"process {p}", c] for name, c in r.stall_cycles(f"process {p}").items()]
        print(format_table(["TLB level", "unit", "data stall cycles"], rows))
    if r.stats.get("misses") is not None:
        _print_miss_log(r)
    if args.tlb_only:
        print(f"walks {t['walks']} (TLB-only: page tables, caches and data are not simulated)")
        print("cycles count TLB lookups past the first level and each walk's fixed latency: "
              "a first-level hit costs 0 cycles by design (it is looked up beside the L1 cache)")
    else:
        print(f"walks {t['walks']}, walk references {t['walk_refs']}, page-walk-cache hits {t['pwc_hits']}, "
              f"first-touch page faults {t['page_faults']}")
        rows = [[src, w, d] for src, w, d in zip(r.stats["sources"], t["walk_refs_by_source"], t["data_by_source"])]
        head = ["served by", "walk refs", "data refs"]
        threads = r.stats.get("threads", {})
        if r.technique and len(threads) > 1:
            # A technique with threads of its own (seed 001's helper, its stressors): the totals
            # mix theirs with the records', so each thread's walk references get a column.
            for tid in sorted(threads, key=int)[:8]:
                head.append(f"walk refs t{tid}")
                for row, n in zip(rows, threads[tid]["walk_refs_by_source"]):
                    row.append(n)
        print(format_table(head, rows))
        if not args.no_caches and r.stats["cache_levels"]:
            print(format_table(["cache level", "accesses", "hits", "misses", "evictions", "miss rate"],
                               _level_rows(r.stats["cache_levels"], t["cache"])))
    o = r.stats["os"]
    if o["context_switches"] or o["migrations"] or o["shootdowns"]:
        print(f"OS: {o['context_switches']} context switches ({o['address_space_switches']} changing address space), "
              f"{o['tlb_flushes']} TLB flushes, {o['asid_rollovers']} ASID rollovers, {o['migrations']} migrations, "
              f"{o['shootdowns']} shootdowns ({o['ipis']} IPIs), {o['cache_flush_cycles']} cycles flushing caches")
    if r.technique:
        params = ", ".join(f"{k}={v}" for k, v in r.technique["params"].items())
        counters = ", ".join(f"{k} {v}" for k, v in r.technique["counters"].items())
        print(f"technique {r.technique['name']} ({params}): {counters}")
    phases = r.phase_frame()
    if len(phases):
        cols = [c for c in phases.columns if c.endswith("_misses")]
        print(format_table(["phase", "#", "cycles", "ns", "references", *cols, "walks"],
                           [[p["name"], p["occurrence"], p["cycles"], f"{p['ns']:.1f}", p["references"],
                             *[p[c] for c in cols], p["walks"]] for _, p in phases.iterrows()]))
    if r.stats["jobs"]:
        print(f"{len(r.stats['jobs'])} jobs recorded (use --json or tlblab.simulate(...).job_frame())")
    if r.energy_j is not None:
        print(energy_line(r.stats["energy"]))
    print(rate_line(r.run))


def energy_line(e: dict) -> str:
    """The energy model's result as one line (`tlblab.energy`): joules, average watts, and the
    share of each part."""
    total = e["energy_j"] or 1.0
    parts = ", ".join(f"{name} {100.0 * j / total:.3g}%" for name, j in e["parts"].items() if j)
    return (f"energy {e['energy_j']:.6g} J over {e['seconds'] * 1e3:.6g} ms simulated, average power "
            f"{e['avg_power_w']:.4g} W, package (all but DRAM) {e['package_power_w']:.4g} W (the machine's "
            f"[energy] table, docs/energy.md): {parts}")


def rate_line(run: dict) -> str:
    """The rate block as one line: references simulated, wall and CPU seconds, refs/s."""
    return (f"rate: {run['references']} references simulated in {run['wall_seconds']:.3f} s wall, "
            f"{run['cpu_seconds']:.3f} s CPU: {run['refs_per_second'] / 1e6:.2f} M refs/s")


def parse_os(text: str) -> dict:
    """`switch=flush_all,asid_bits=8` → {"switch": "flush_all", "asid_bits": 8}."""
    from tlblab.errors import UserError

    out: dict = {}
    for kv in filter(None, (x.strip() for x in text.split(","))):
        if "=" not in kv:
            raise UserError(f"--os: expected key=value, found '{kv}'")
        k, v = (x.strip() for x in kv.split("=", 1))
        out[k] = int(v) if v.isdigit() else v
    return out


def _level_rows(names, levels) -> list[list]:
    """Table rows of TLB or cache levels: name, accesses, hits, misses, evictions, miss rate."""
    return [[name, lv["accesses"], lv["hits"], lv["misses"], lv["evictions"],
             f"{lv['misses'] / lv['accesses']:.4f}" if lv["accesses"] else "-"]
            for name, lv in zip(names, levels)]


def _print_miss_log(r) -> None:
    """`--miss-log`: misses per set, then per set who missed pages whose fill by whom evicted them."""
    m = r.miss_frame()
    level = r.stats["misses"]["level"]
    per_set = r.stats["misses"]["per_set"]
    print(format_table(["set", f"{level} misses"], [[s, n] for s, n in enumerate(per_set) if n]))
    if m.empty:
        return
    who = lambda t: "-" if t < 0 else ("kernel" if t == 4294967295 else f"thread {t}")  # noqa: E731
    rows = []
    for (s, t, b), n in m.groupby(["set", "thread", "evicted_by_thread"]).size().items():
        rows.append([s, who(t), "first touch or invalidated" if b < 0 else who(b), n])
    print(format_table(["set", "missed by", "page evicted by", "misses"], rows))
