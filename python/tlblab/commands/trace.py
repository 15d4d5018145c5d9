"""`tlblab trace`: inspect, convert, capture and generate memory traces.

    tlblab trace record -o app.tlbt -- PROGRAM ARGS...   run under tlblab's Valgrind tool, streamed
    tlblab trace info app.tlbt                            counts, events, footprint per region
    tlblab trace head app.tlbt -n 20                      the first records as text
    tlblab trace convert in.txt out.tlbt                  tlbt <-> lackey <-> champsim(.xz/.gz)
    tlblab trace workloads                                the built-in workloads
    tlblab trace gen lat_ctx -o ctx.tlbt -p procs=4       write a built-in workload as a trace
"""

from __future__ import annotations

import json
import shutil
import sys

from tlblab.errors import UserError
from tlblab.cli import printable

FORMATS = ["tlbt", "lackey", "champsim"]


def register(sub) -> None:
    p = sub.add_parser("trace", help="memory traces: record real programs, convert, inspect, generate")
    tsub = p.add_subparsers(dest="trace_command", metavar="ACTION")
    tsub.required = True

    r = tsub.add_parser("record", help="run a program under Valgrind and write its trace")
    r.add_argument("-o", "--output", required=True, help="output .tlbt file")
    r.add_argument("--tool", choices=["tlblab", "lackey"], default="tlblab",
                   help="Valgrind tool: tlblab's own (default: binary, threads, regions of interest) or Lackey (text)")
    r.add_argument("--roi-only", action="store_true",
                   help="trace only between the program's TLBLAB_ROI_BEGIN()/END() (tlblab/roi.h); tlblab tool")
    r.add_argument("--skip-instructions", type=int, default=0, metavar="N",
                   help="run the first N instructions untraced (not instrumented), then trace; tlblab tool")
    r.add_argument("--max-instructions", type=int, default=None, metavar="N",
                   help="stop the program after N traced instructions; tlblab tool")
    r.add_argument("--dependence", action="store_true",
                   help="before each load whose address came from an earlier load, a depends event naming it "
                        "(followed by machines with timing.mlp); tlblab tool, not with --skip-instructions")
    r.add_argument("--skip", type=int, default=0, help="references to drop at the start (window start)")
    r.add_argument("--limit", type=int, default=None, help="references to keep, then stop the program")
    r.add_argument("--no-progress", action="store_true", help="do not print the progress line")
    r.add_argument("--valgrind", default="valgrind", help="valgrind executable")
    r.add_argument("--stdin", default=None, help="file to feed the program as stdin (default: empty)")
    r.add_argument("--stdout", default=None, help="file for the program's stdout (default: the terminal)")
    r.add_argument("argv", nargs="+", metavar="-- PROGRAM ARGS", help="the program and its arguments")
    r.set_defaults(func=_record)

    i = tsub.add_parser("info", help="counts, events, threads and page footprint of a trace")
    i.add_argument("path", help="the trace file")
    i.add_argument("--from", dest="from_fmt", choices=FORMATS, help="input format (default: detect)")
    i.add_argument("--json", action="store_true", help="print JSON")
    i.set_defaults(func=_info)

    h = tsub.add_parser("head", help="print the first records")
    h.add_argument("path", help="the trace file")
    h.add_argument("-n", type=int, default=20, help="records to print (default 20)")
    h.add_argument("--skip", type=int, default=0, help="start at this record")
    h.add_argument("--from", dest="from_fmt", choices=FORMATS, help="input format (default: detect)")
    h.set_defaults(func=_head)

    c = tsub.add_parser("convert", help="convert between tlbt, lackey and champsim (.xz/.gz)")
    c.add_argument("input", help="the trace to read")
    c.add_argument("output", help="the trace to write (its format from the name unless --to)")
    c.add_argument("--from", dest="from_fmt", choices=FORMATS, help="input format (default: detect)")
    c.add_argument("--to", dest="to_fmt", choices=FORMATS, help="output format (default: from the name)")
    c.add_argument("--skip", type=int, default=0, help="records to drop at the start")
    c.add_argument("--limit", type=int, default=None, help="records to keep")
    c.set_defaults(func=_convert)

    w = tsub.add_parser("workloads", help="list the built-in workloads and their parameters")
    w.add_argument("--json", action="store_true", help="print JSON")
    w.set_defaults(func=_workloads)

    g = tsub.add_parser("gen", help="write a built-in workload as a .tlbt trace")
    g.add_argument("name", help="the built-in workload (tlblab workloads lists them)")
    g.add_argument("-o", "--output", required=True, help="output .tlbt file")
    g.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                   help="workload parameter (repeatable; values as in workload specs: 4096, 0x1000, 64k, 2M)")
    g.add_argument("--seed", type=int, default=1, help="seed of the workload's random choices (default: 1)")
    g.set_defaults(func=_gen)


def _record(args) -> int:
    from tlblab import trace

    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UserError("nothing to record: give a program after --")
    if shutil.which(args.valgrind) is None:
        raise UserError(f"cannot find `{args.valgrind}`: install the Debian package valgrind")
    if shutil.which(argv[0]) is None:
        raise UserError(f"cannot find program `{argv[0]}`")
    for opt, v in (("--limit", args.limit), ("--max-instructions", args.max_instructions)):
        if v is not None and v < 1:
            raise UserError(f"{opt} must be at least 1, found {v}")
    if args.tool == "lackey" and (args.roi_only or args.skip_instructions or args.max_instructions is not None
                                  or args.dependence):
        raise UserError("--roi-only, --skip-instructions, --max-instructions and --dependence need the tlblab tool, "
                        "not --tool lackey")
    if args.dependence and args.skip_instructions:
        raise UserError("--dependence cannot be combined with --skip-instructions (the tool's translations made "
                        "while skipping carry no dependences); use --roi-only to start at a region of interest")
    rep = trace.record(
        argv, args.output, skip=args.skip, limit=args.limit, progress=not args.no_progress and sys.stderr.isatty(),
        valgrind=args.valgrind, stdin=args.stdin, stdout=args.stdout, tool=args.tool,
        roi_only=args.roi_only, skip_instructions=args.skip_instructions, max_instructions=args.max_instructions,
        dependence=args.dependence,
    )
    s = rep["summary"]
    rate = rep["references_seen"] / rep["seconds"] / 1e6 if rep["seconds"] > 0 else 0.0
    print(
        f"recorded {s['accesses']:,} references ({s['instr']:,} instr, {s['loads']:,} loads, {s['stores']:,} stores) "
        f"of {argv[0]} in {rep['seconds']:.1f} s ({rate:.2f} M refs/s) -> {args.output}"
        + (" [stopped at --limit]" if rep["killed_at_limit"]
           else " [stopped at --max-instructions]" if rep["stopped_at_max_instructions"]
           else f"; exit status {rep['exit_status']}")
    )
    return 0


def _fmt_int(v) -> str:
    return f"{v:,}" if isinstance(v, int) else str(v)


def _info(args) -> int:
    from tlblab import trace

    d = trace.info(args.path, args.from_fmt)
    if args.json:
        print(json.dumps(d, indent=2))
        return 0
    print(f"file        {d['file']} ({d['format']}, {d['bytes']:,} bytes"
          + (f", {d['bytes_per_access']:.2f} bytes/access" if "bytes_per_access" in d else "") + ")")
    if d["format"] == "tlbt":
        print(f"version     {d['version']}, {'complete' if d['complete'] else 'INCOMPLETE (no index)'}"
              + (f", {d['blocks']} blocks" if d.get("blocks") is not None else ""))
        foot = d.get("footer") or {}
        if foot.get("signal") is not None:
            # Kept only when the program died of its own fault (an interrupted capture is
            # removed): the trace ends where the program did.
            print(f"program     killed by signal {foot['signal']}: the trace ends where the program died")
        elif "exit_status" in foot:
            print(f"program     exit status {foot['exit_status']}"
                  + (" (stopped at --limit)" if foot.get("killed_at_limit") else "")
                  + (" (stopped at --max-instructions)" if foot.get("stopped_at_max_instructions") else ""))
        meta = d.get("meta", {})
        for k in ("program", "argv", "workload", "capture", "converted_from"):
            if k in meta:
                print(f"{k:<11} {json.dumps(meta[k]) if not isinstance(meta[k], str) else printable(meta[k])}")
    a = d["accesses"]
    print(f"records     {d['records']:,}")
    print(f"accesses    {a['total']:,} (instr {a['instr']:,}, load {a['load']:,}, store {a['store']:,});"
          f" {d['page_crossing_accesses']:,} cross a 4 KiB page")
    ev = d["events"]
    print(f"events      {ev['total']:,}" + (" (" + ", ".join(f"{k} {v:,}" for k, v in ev["by_type"].items()) + ")" if ev["by_type"] else ""))
    print(f"threads     {len(d['threads'])}: {d['threads'][:16]}" + (" ..." if len(d["threads"]) > 16 else ""))
    if d["processes"]:
        print(f"processes   {d['processes']}")
    if d["tasks"]:
        print(f"tasks       {d['tasks']}")
    if "address_range" in d:
        print(f"addresses   {d['address_range'][0]} .. {d['address_range'][1]}")
    print(f"footprint   {d['footprint_pages_4k']:,} pages of 4 KiB")
    for title, key in (("regions", "regions"), ("mappings", "mappings")):
        rows = d.get(key) or []
        if rows:
            print(f"{title}:")
            for r in rows:
                print(f"  {r['start']:>16}-{r['end']:<16} {r['pages_touched']:>9,} pages {r['page_references']:>13,} refs  {r['name']}")
    return 0


def _head(args) -> int:
    from tlblab import trace

    try:
        for line in trace.head(args.path, args.n, args.skip, args.from_fmt):
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:  # `tlblab trace head ... | head -3` is not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _convert(args) -> int:
    from tlblab import trace

    rep = trace.convert(args.input, args.output, from_fmt=args.from_fmt, to_fmt=args.to_fmt, skip=args.skip, limit=args.limit)
    msg = f"converted {rep['records_out']:,} records in {rep['seconds']:.1f} s -> {args.output}"
    if rep["events_not_representable"]:
        msg += f" ({rep['events_not_representable']:,} events dropped: the output format cannot hold them)"
    print(msg)
    return 0


def _workloads(args) -> int:
    from tlblab import trace

    cat = trace.catalog()
    if args.json:
        print(json.dumps(cat, indent=2))
        return 0
    for w in cat:
        print(f"{w['name']:<22} {w['summary']}")
        if w["source"]:
            print(f"{'':<22} follows {w['source']}")
        print(f"{'':<22} params: " + ", ".join(f"{p['name']}={p['default']}" for p in w["params"]))
    return 0


def _gen(args) -> int:
    from tlblab import trace

    from tlblab import _native

    # The parameters are read by the one workload-spec parser (suffixes, duplicates, empty
    # items), as `simulate --workload NAME:KEY=VALUE,...` reads them.
    spec = args.name + (":" + ",".join(args.param) if args.param else "")
    name, params = _native.parse_workload_spec(spec)
    s = trace.generate(name, args.output, seed=args.seed, **params)
    print(f"wrote {s['records']:,} records ({s['accesses']:,} accesses, {s['events']:,} events) -> {args.output}")
    return 0
