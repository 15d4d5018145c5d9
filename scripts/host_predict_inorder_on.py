"""The in-order model's predictions on a measuring run of `tlblab host predict --model
out-of-order`, so that the two models are compared on one measurement (issue 90; docs/lab/
2026-12-01-issue90-dataflow.md): the run's measured medians (its CSVs), its guest placement and
each program's last all-4 KiB report's pagemap (the command takes every all-4 KiB run's; the
last one's is what a run keeps), the in-order captures (`out/host-predict/work`, made if missing)
and the in-order runtime (the simulated cycles without the L1 hits). Prints a JSON line per row
and each model's max and median |error|.

    PYTHONPATH=python python scripts/host_predict_inorder_on.py RUN_DIR gups hashjoin ...
"""
import csv, json, sys, statistics
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from tlblab.host import predict as P
from tlblab.host.sim_cache import simulate

run = Path(sys.argv[1])
from tlblab import paths

work = paths.out("host-predict") / "work"
work.mkdir(parents=True, exist_ok=True)
placement = json.loads((run / 'guest-placement.json').read_text()) if (run / 'guest-placement.json').exists() else None
m, how = P.host_machine(None, check=None, placement=placement)
print("machine:", how, file=sys.stderr)
out = []
for name in sys.argv[2:]:
    prog = P.PROGRAMS[name]
    lay = work / f"{name}-4k.layout"
    lay.write_text(P.layout_text(prog, []))
    cap = P.capture(prog, lay, work, "full", lambda s: print(s, file=sys.stderr, flush=True))
    rep = json.loads((run / 'work' / f'{name}-4k.report.json').read_text())
    pm, note = P.own_placement(m, placement, [rep['pools']['heap']['pagemap']], name)
    used = int(cap["report"]["pools"]["heap"]["used_bytes"]); base = int(cap["report"]["pools"]["heap"]["base"])
    pool = P._size_bytes(prog.heap)
    rows = list(csv.DictReader(open(run / f'{name}.csv')))
    def one(mo):
        spans = [(base + s, e - s, 21) for s, e in P.windows(mo, used, pool)]
        return simulate(pm, work / f"{name}-full.tlbt", spans, cap["references"] // 2, cache=run / 'sim-cache-inorder')[0]
    with ThreadPoolExecutor(2) as ex:
        sims = dict(zip([r['mosaic'] for r in rows], ex.map(one, [r['mosaic'] for r in rows])))
    r4 = P.runtime_cycles(sims['4k'], m)
    m4 = float(rows[0]['measured_s'])
    for r in rows:
        if r['mosaic'] == '4k' or not r['measured_s']:
            continue
        pred = m4 * P.runtime_cycles(sims[r['mosaic']], m) / r4
        line = {"program": name, "mosaic": r['mosaic'], "inorder_error_pct": round(100 * (pred - float(r['measured_s'])) / m4, 2),
                "ooo_error_pct": round(float(r['error_pct']), 2),
                "linear_error_pct": round(float(r['linear_error_pct']), 2) if r['linear_error_pct'] else None}
        print(json.dumps(line), flush=True)
        out.append(line)
for k in ("ooo_error_pct", "inorder_error_pct"):
    v = [abs(x[k]) for x in out]
    print(k, "max", round(max(v), 2), "median", round(statistics.median(v), 2), "n", len(v))
v = [abs(x['linear_error_pct']) for x in out if x['mosaic'] != '2m' and x['linear_error_pct'] is not None]
print("linear (mixed mosaics)", "max", round(max(v), 2), "median", round(statistics.median(v), 2), "n", len(v))
