"""`tlblab isolate` (seed 003, beyond the seed): the verifier proves a colored Table 6.1 set
isolated and names the conflicts of its malloc layout; the planner colors a set or says why not;
CLI = Python; bad input is one line with exit status 2; and the property that matters: on random
task sets, the per-job miss bound is never below what the engine simulates."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import tlblab
from tlblab import isolation

ROOT = Path(__file__).resolve().parents[1]
SETS = ROOT / "python" / "tlblab" / "seeds" / "s003_tlb_coloring" / "tasksets"
CLI = [sys.executable, "-m", "tlblab.cli"]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True)


def test_a_colored_table6_1_set_is_proved_isolated_with_zero_misses_per_job():
    for f in ("table6_1_2tasks_colored.toml", "table6_1_4tasks_colored.toml"):
        rep = tlblab.isolate(SETS / f)
        assert rep.isolated, rep.text()
        assert set(rep.bounds.values()) == {0}, rep.bounds


def test_the_malloc_layout_of_table6_1_names_the_conflicting_sets_and_pages():
    rep = tlblab.isolate(SETS / "table6_1_2tasks_malloc.toml")
    assert not rep.isolated
    # glibc's thread arenas are 64 MiB-aligned: both tasks' first and 17th pages fall in set 0,
    # where the vsyscall page and the GOT already hold two of the four ways.
    c = {x["set"]: x for x in rep.conflicts}
    assert 0 in c and set(c[0]["pages"]) == {"T1", "T2"}
    assert c[0]["total"] == 2 + 2 + 2
    assert any("0x7fffec000000" in p for p in c[0]["pages"]["T1"])
    # T1 (highest priority) is never preempted: its pages in set 0 reload once per job.
    assert rep.preemptions["T1"] == 0 and rep.bounds["T1"] == 2
    assert rep.bounds["T2"] == 2 * (1 + rep.preemptions["T2"])


def test_the_planner_colors_the_set_clear_of_noise_and_stacks_and_refuses_an_impossible_one():
    assignment, why = isolation.plan(SETS / "table6_1_2tasks_plan.toml")
    assert assignment is not None, why
    used = [c for a in assignment.values() for c in a["colors"]]
    assert len(used) == len(set(used)) and not {0, 1, 3, 11} & set(used)
    assert isolation.apply_plan(SETS / "table6_1_2tasks_plan.toml", assignment).isolated
    doc = {"machine": "xeon-e5-2650", "noise": {"0": 2},
           "task": [{"name": f"T{i}", "period": 2 + i, "allocations": [4000] * 24} for i in range(3)]}
    assignment, why = isolation.plan(doc)
    assert assignment is None and "clean ways run out" in why
    big = {"machine": "xeon-e5-2650", "reserved": 2,
           "task": [{"name": "T1", "period": 2, "allocations": [3 * 4096]}]}
    assignment, why = isolation.plan(big)
    assert assignment is None and "R = 2" in why


def test_cli_and_python_agree_and_bad_input_is_one_line_with_status_2(tmp_path):
    f = SETS / "table6_1_2tasks_malloc.toml"
    out = cli("isolate", str(f), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(json.dumps(tlblab.isolate(f).to_dict()))
    assert cli("isolate", str(f), "--check").returncode == 1
    assert cli("isolate", str(SETS / "table6_1_2tasks_colored.toml"), "--check").returncode == 0
    bad = tmp_path / "bad.toml"
    bad.write_text('machine = "xeon-e5-2650"\n[[task]]\nname = "T1"\nperiod = 2\ncolours = [1]\n')
    out = cli("isolate", str(bad))
    assert out.returncode == 2 and "colours" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    out = cli("isolate", str(tmp_path / "missing.toml"))
    assert out.returncode == 2 and "no such file" in out.stderr


def test_the_bound_is_never_below_the_simulated_misses_on_random_task_sets():
    # Property: for random pages in a 32-page window of the 16-set L1 DTLB (so sets overflow and
    # tasks collide), random periods and passes, every job after the warm-up misses at most the
    # verifier's bound. Periods are long enough that jobs end within them (the bound's premise).
    rng = random.Random(3)
    checked = collided = 0
    for _ in range(40):
        n = rng.randint(2, 4)
        tasks = []
        for i in range(n):
            # Private pages (task i's window starts 64 pages after task i-1's: same sets).
            pages = rng.sample(range(24), rng.randint(3, 12))
            tasks.append({"name": f"T{i + 1}", "period": rng.choice([0.01, 0.015, 0.02, 0.04]),
                          "phase": rng.choice([0, 0.001, 0.005]), "passes": rng.randint(1, 150),
                          "pages": [0x1000_0000 + (i * 64 + p) * 4096 for p in pages]})
        rep = tlblab.isolate({"machine": "xeon-e5-2650", "task": tasks})
        sim = isolation.simulate(rep, jobs=8, seed=rng.randint(0, 99))
        for name, s in sim.items():
            if s["deadline_missed"] or s["bound"] is None:
                continue
            checked += 1
            collided += s["max_misses"] > 0
            assert s["max_misses"] <= s["bound"], (name, s, rep.text())
    assert checked >= 60 and collided >= 10, (checked, collided)


def test_the_python_example_in_the_docs_runs_and_says_what_it_prints(monkeypatch):
    root = ROOT
    doc = (root / "docs" / "technique-tlb_coloring-isolation.md").read_text()
    block = doc.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(root)
    env: dict = {}
    exec(compile(block.replace("print(rep.text())", "text = rep.text()"), "doc", "exec"), env)
    assert env["rep"].bounds == {"T1": 2, "T2": 36} and not env["rep"].isolated
    assert env["assignment"] is not None


def test_with_the_warm_up_order_isolate_names_a_warm_up_conflict_only_when_lru_order_evicts():
    # Closed form, one set of the machine's L1 DTLB (ways read from the machine): T1's warm-up
    # touches its job page p and ways-2 pages of its own in set 0, then T2's warm-up touches its
    # job page q and one more page there. p is pushed out iff it is the oldest of T1's touches;
    # without the order isolate must assume the worst in both cases (ways + 1 pages > ways).
    g, _ = isolation.load({"machine": "xeon-e5-2650", "task": [{"name": "T1", "period": 1, "pages": [0]}]})
    assert g.replacement.lower() == "lru" and g.ways >= 3
    at = lambda k: 0x1000_0000 + k * g.sets * 4096  # noqa: E731 - the k-th page of set 0
    p, q, q2 = at(0), at(1), at(2)
    own = [at(3 + k) for k in range(g.ways - 2)]

    def doc(t1_order, ordered=True):
        key = "warmup_order" if ordered else "warmup_pages"
        return {"machine": "xeon-e5-2650", "task": [
            {"name": "T1", "period": 1, "pages": [p], key: t1_order},
            {"name": "T2", "period": 2, "pages": [q], key: [q, q2]}]}

    evicts = tlblab.isolate(doc([p, *own]))  # p oldest: T2's two fills push it out
    assert evicts.warmup_ordered and [c["set"] for c in evicts.warmup_conflicts] == [0]
    assert set(evicts.warmup_conflicts[0]["pages"]) == {"T1", "T2"}
    assert "pushed out by T2's warm-up" in evicts.text() and evicts.first_job_bounds["T1"] == 1
    keeps = tlblab.isolate(doc([*own, p]))  # p newest: T2's fills push out T1's own pages
    assert keeps.warmup_ordered and keeps.warmup_conflicts == [] and keeps.isolated
    for order in ([p, *own], [*own, p]):  # the page lists alone: today's conservative answer
        rep = tlblab.isolate(doc(order, ordered=False))
        assert not rep.warmup_ordered and [c["set"] for c in rep.warmup_conflicts] == [0]
    # One task without an order: every task is analysed without (the order of the whole warm-up
    # period is not known).
    mixed = doc([*own, p])
    del mixed["task"][1]["warmup_order"]
    mixed["task"][1]["warmup_pages"] = [q, q2]
    assert not tlblab.isolate(mixed).warmup_ordered
    # A first job that can push p out past the warm-ups' pages above it: T2's warm-up ends
    # with ways-1 pages above p, and T2's job page r is not among them.
    r = at(3 + g.ways)
    late = {"machine": "xeon-e5-2650", "task": [
        {"name": "T1", "period": 1, "pages": [p], "warmup_order": [p]},
        {"name": "T2", "period": 2, "pages": [r], "warmup_order": [at(20 + k) for k in range(g.ways - 1)]}]}
    rep = tlblab.isolate(late)
    assert [c["set"] for c in rep.warmup_conflicts] == [0] and "can push it out" in rep.text()
    late["task"][1]["pages"] = [late["task"][1]["warmup_order"][-1]]  # its job page already above p
    assert tlblab.isolate(late).warmup_conflicts == []


def test_a_warm_up_order_that_repeats_a_page_is_refused():
    import pytest

    from tlblab.errors import UserError

    base = {"machine": "xeon-e5-2650", "task": [{"name": "T1", "period": 1, "pages": [0x1000],
                                                 "warmup_order": [0x1000, 0x1000]}]}
    with pytest.raises(UserError, match="once"):
        tlblab.isolate(base)
    base["task"][0]["warmup_order"] = 0x1000
    with pytest.raises(UserError, match="list"):
        tlblab.isolate(base)


def test_the_ordered_warm_up_analysis_names_every_first_job_eviction_an_lru_set_can_show():
    # Property, against a plain LRU set (ways from the machine): random warm-up orders run one
    # task after another, then the first jobs touch their pages in random interleavings; every
    # job page another task pushed out (in the warm-ups or the first jobs) must be in a named
    # set with both tasks named. Only sets whose job pages fit (the steady state is another claim).
    g, _ = isolation.load({"machine": "xeon-e5-2650", "task": [{"name": "T1", "period": 1, "pages": [0]}]})
    at = lambda k: 0x2000_0000 + k * g.sets * 4096  # noqa: E731 - the k-th page of set 0
    rng = random.Random(61)
    seen = named = 0
    for _ in range(300):
        n = rng.randint(2, 3)
        pool = rng.sample(range(40), 40)
        jobs = [[pool.pop() for _ in range(rng.randint(1, max(1, g.ways // n)))] for _ in range(n)]
        warm: list[list[int]] = [[] for _ in range(n)]
        for i, j in enumerate(jobs):
            extra = [pool.pop() for _ in range(rng.randint(0, g.ways))]
            w = rng.sample(j, rng.randint(0, len(j))) + extra
            rng.shuffle(w)
            warm[i] = w
        doc = {"machine": "xeon-e5-2650", "task": [
            {"name": f"T{i + 1}", "period": i + 1, "pages": [at(k) for k in jobs[i]],
             "warmup_order": [at(k) for k in warm[i]]} for i in range(n)]}
        rep = tlblab.isolate(doc)
        assert rep.warmup_ordered and not rep.conflicts and not rep.overflows
        names = {c["set"]: set(c["pages"]) for c in rep.warmup_conflicts}
        named += bool(names)
        for _ in range(20):
            stack: list[int] = []
            by: dict[int, int] = {}

            def touch(task: int, k: int) -> bool:  # True: a miss whose page another task pushed out
                hit = k in stack
                inter = not hit and by.get(k, task) != task
                if hit:
                    stack.remove(k)
                by.pop(k, None)
                stack.insert(0, k)
                if len(stack) > g.ways:
                    by[stack.pop()] = task
                return inter

            for i in range(n):
                for k in warm[i]:
                    touch(i, k)
            left = [rng.sample(j, len(j)) for j in jobs]
            while any(left):
                i = rng.choice([t for t in range(n) if left[t]])
                k = left[i].pop(0)
                evictor = by.get(k)
                if touch(i, k):
                    seen += 1
                    assert 0 in names and {f"T{i + 1}", f"T{evictor + 1}"} <= names[0], (doc, rep.text())
    assert seen >= 20 and named >= 20, (seen, named)
