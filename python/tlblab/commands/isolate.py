"""`tlblab isolate TASKSET`: prove a task set TLB-isolated or name its conflicts, bound each
task's misses per job, plan colors (`--plan`) and check the bounds in simulation (`--simulate`)."""

from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("isolate", help="prove a task set's TLB isolation or name its conflicts (seed 003)")
    p.add_argument("taskset", help="task-set TOML file (docs/technique-tlb_coloring-isolation.md)")
    p.add_argument("--plan", action="store_true",
                   help="assign colors to the tlb_malloc tasks first (or say why no assignment exists)")
    p.add_argument("--simulate", type=int, metavar="JOBS", default=0,
                   help="also run the set in the engine for JOBS jobs per task and compare with the bounds")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--check", action="store_true", help="exit 1 when the set is not isolated")
    p.set_defaults(func=run)


def run(args) -> int:
    from tlblab import isolation
    from tlblab.errors import UserError

    if args.simulate < 0:
        raise UserError(f"--simulate {args.simulate}: expected a positive number of jobs")
    out: dict = {}
    if args.plan:
        assignment, why = isolation.plan(args.taskset)
        out["plan"] = {"assignment": assignment, "explanation": why}
        if assignment is None:
            if args.json:
                print(json.dumps(out, indent=2))
            else:
                print(f"no conflict-free color assignment: {why}")
            return 1 if args.check else 0
        rep = isolation.apply_plan(args.taskset, assignment)
    else:
        rep = isolation.isolate(args.taskset)
    out.update(rep.to_dict())
    sim = isolation.simulate(rep, args.simulate) if args.simulate else None
    if sim is not None:
        out["simulation"] = sim
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        if args.plan:
            print("plan: " + out["plan"]["explanation"])
            for name, a in out["plan"]["assignment"].items():
                print(f"  {name}: colors {a['colors']}" + (f", large colors {a['large_colors']}" if a["large_colors"] else ""))
        print(rep.text())
        if sim is not None:
            print(f"simulation ({args.simulate} jobs per task): most misses of any job after the warm-up")
            for name, s in sim.items():
                b = s["bound"]
                ok = "premise broken: a job missed its deadline" if s["deadline_missed"] else (
                    "within the bound" if b is None or s["max_misses"] <= b else "ABOVE THE BOUND")
                print(f"  {name}: {s['max_misses']} (bound {'none' if b is None else b}) {ok}")
    return 1 if args.check and not rep.isolated else 0
