"""`tlblab curve`: the misses of one TLB level at every size, from one pass (docs/curves.md)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("curve", help="miss curves of a TLB level for every size and associativity, in one pass")
    p.add_argument("--workload", required=True, help="workload spec NAME[:key=value,...] or a trace file")
    p.add_argument("--machine", default="zen3", help="preset name or machine .toml/.json file (default: zen3)")
    p.add_argument("--level", default=None,
                   help="TLB level by name (default: the machine's first data level); the levels above it "
                        "on its path are simulated exactly and the curves are of what they miss")
    p.add_argument("--sets", default="all", metavar="1,2,..|all|none",
                   help="set counts (powers of two) whose associativities 1..16 are computed (default: all = 1..4096)")
    p.add_argument("--max-entries", type=int, default=65536,
                   help="largest fully associative size (default: 65536)")
    p.add_argument("--sample", type=float, default=None, metavar="RATE",
                   help="a SHARDS-sampled fully associative curve at this rate instead of the exact one")
    p.add_argument("--seed", type=int, default=0, help="seed of a random workload (default: 0)")
    p.add_argument("--out", default=None, metavar="FILE.csv", help="write every point as CSV")
    p.add_argument("--plot", default=None, metavar="FILE.svg", help="plot the curves (.svg, .png or .pdf)")
    p.set_defaults(func=run)


def run(args) -> int:
    from tlblab.curve import curve, plot_curve, write_csv
    from tlblab.errors import UserError
    from tlblab.report_text import format_table

    if args.sample is not None and not 0 < args.sample <= 1:
        raise UserError(f"--sample: expected a rate in (0, 1], found {args.sample}")
    if args.max_entries < 1:
        raise UserError(f"--max-entries: expected a positive number, found {args.max_entries}")
    if args.plot and not args.plot.lower().endswith((".svg", ".png", ".pdf")):
        raise UserError(f"--plot: expected a .svg, .png or .pdf file name, found '{args.plot}'")
    if args.out and not args.out.lower().endswith(".csv"):
        raise UserError(f"--out: expected a .csv file name, found '{args.out}'")
    import os

    # A file that cannot be written is reported before the pass, not after it.
    for flag, path in (("--out", args.out), ("--plot", args.plot)):
        if path:
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                raise UserError(f"{flag} {path}: directory {folder} does not exist")
            if not os.access(folder, os.W_OK):
                raise UserError(f"{flag} {path}: directory {folder} is not writable")
    sets = None if args.sets.strip() == "none" else args.sets
    df = curve(args.workload, machine=args.machine, level=args.level, sets=sets,
               max_entries=args.max_entries, sample=args.sample, seed=args.seed)
    a = df.attrs
    above = ", ".join(a["upper"]) if a["upper"] else "none"
    print(f"{a['machine']} {a['level']} ({a['path']} path; levels above: {above}; "
          f"{'flushed at each address-space switch' if a['flush_on_switch'] else 'ASID-tagged'}), "
          f"workload {args.workload}: {a['records']} records")
    if a["sample_rate"] is not None:
        print(f"sampled at R = {a['sample_rate']:.6g} (SHARDS); sizes up to 8 entries exact")
    if a["machine_cores"] > 1:
        print(f"(curves model one core running every thread; the machine has {a['machine_cores']})")
    for g in dict.fromkeys(df["group"]):
        d = df[df["group"] == g]
        refs = int(d["references"].iloc[0]) if len(d) else 0
        print(f"\n[{g}] {refs} references reach {a['level']}")
        # One set of `e` ways is `e` entries fully associative: with a sampled curve, the exact
        # points of one set (up to 16 ways) stand beside the estimates; show the exact one.
        fa = (d[d["sets"] == 1].sort_values("exact", ascending=False, kind="stable")
              .drop_duplicates("entries").set_index("entries"))
        sizes = [e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
                 if e in fa.index]
        if sizes:
            rows = [[e, int(fa.loc[e, "misses"]), f"{fa.loc[e, 'miss_ratio']:.4f}"] for e in sizes]
            shown = fa.loc[sizes, "exact"]
            kind = "exact" if bool(shown.all()) else "sampled" if not bool(shown.any()) else "exact, then sampled"
            print(format_table([f"fully assoc. entries ({kind})", "misses", "miss ratio"], rows))
        multi = d[d["sets"] > 1]
        if len(multi):
            ways = [w for w in (1, 2, 4, 8, 16) if w in set(multi["ways"])]
            rows = []
            for s in sorted(multi["sets"].unique()):
                row = multi[multi["sets"] == s].set_index("ways")
                rows.append([s] + [f"{row.loc[w, 'miss_ratio']:.4f}" for w in ways])
            print(format_table(["sets \\ ways"] + [str(w) for w in ways], rows))
    if args.out:
        write_csv(df, args.out)
        print(f"\nwrote {len(df)} points to {args.out}")
    if args.plot:
        plot_curve(df, args.plot)
        print(f"plotted to {args.plot}")
    return 0
