"""`tlblab.sim.reusing`: inside it a run whose inputs equal an earlier one's is made once
(`tlblab reproduce` runs each seed's reproductions inside one), and nothing changes outside it."""

from __future__ import annotations

import tlblab
from tlblab import _native, sim

WL = "random:pages=64,accesses=2000"


def _counting(monkeypatch) -> list[str]:
    calls: list[str] = []
    real = _native.simulate

    def counted(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(_native, "simulate", counted)
    return calls


def test_given_reusing_when_the_same_run_is_asked_twice_then_it_is_made_once_and_equal(monkeypatch):
    calls = _counting(monkeypatch)
    with sim.reusing():
        a = tlblab.simulate("cortex-a9", WL, technique="lockdown:process=0", stall_cycles=True)
        # The technique's parameter at its default is the same run.
        b = tlblab.simulate("cortex-a9", WL, technique="lockdown:process=0,cores=one", stall_cycles=True)
        b.stats["total"]["references"] = -1  # a copy: the kept run is not changed by its reader
        c = tlblab.simulate("cortex-a9", WL, technique="lockdown:process=0", stall_cycles=True)
        # Another option is another run.
        d = tlblab.simulate("cortex-a9", WL, technique="lockdown:process=0", stall_cycles=True,
                            max_references=500)
    assert len(calls) == 2
    assert c.stats == a.stats
    assert d.total["references"] == 500 != a.total["references"]


def test_given_a_machine_given_as_a_table_then_its_runs_are_reused_too(monkeypatch):
    # The machine's JSON is no file name, however long.
    calls = _counting(monkeypatch)
    m = tlblab.machine_config("cortex-a7")
    with sim.reusing():
        a = tlblab.simulate(m, WL, tlb_only=True)
        b = tlblab.simulate(dict(m), WL, tlb_only=True)
    assert len(calls) == 1 and a.stats == b.stats


def test_given_no_reusing_then_every_run_is_made(monkeypatch):
    calls = _counting(monkeypatch)
    a = tlblab.simulate("zen3", WL, tlb_only=True)
    b = tlblab.simulate("zen3", WL, tlb_only=True)
    assert len(calls) == 2 and a.stats == b.stats


def test_given_a_trace_file_rewritten_then_the_run_is_made_again(tmp_path, monkeypatch):
    # A trace file is known by its content, not its name.
    from tlblab.trace import generate

    trace = tmp_path / "t.tlbt"
    calls = _counting(monkeypatch)
    with sim.reusing():
        generate("random", trace, pages=64, accesses=2000)
        a = tlblab.simulate("zen3", str(trace), tlb_only=True)
        tlblab.simulate("zen3", str(trace), tlb_only=True)
        generate("random", trace, pages=64, accesses=3000)
        b = tlblab.simulate("zen3", str(trace), tlb_only=True)
    assert len(calls) == 2
    assert (a.total["references"], b.total["references"]) == (2000, 3000)
