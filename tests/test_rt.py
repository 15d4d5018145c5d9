"""Model tier, seed 003 §6 through the Python API: rate-monotonic task sets whose pages share an
L1 DTLB set interfere; colored apart (the simulator's port of tlb_malloc), they do not."""

from __future__ import annotations

import pytest

import tlblab.rt as rt
from tlblab.errors import UserError

XEON_L1 = dict(sets=16, ways=4, reserved=0, periods=4)  # seed 003 Ch. 5: 64 entries, 4-way


def _t1_misses(r):
    jobs = r.job_frame()
    return int(jobs.query("task == 0 and job > 0")["L1D_misses"].sum())


def test_colored_pages_lie_in_their_colors_set():
    pages = rt.colored_pages(XEON_L1, color=5, count=4)
    assert len(set(pages)) == 4
    assert {(p >> 12) % 16 for p in pages} == {5}


def test_tasks_on_one_color_interfere_and_on_two_colors_do_not():
    def run(c1, c2):
        t1 = rt.task("T1", period=20_000, pages=rt.colored_pages(XEON_L1, c1, 3), passes=20)
        t2 = rt.task("T2", period=40_000, pages=rt.colored_pages(XEON_L1, c2, 3, base=0x2000_0000), passes=20)
        return rt.simulate_taskset("xeon-e5-2650", [t1, t2], jobs=8)

    diff, same = run(1, 2), run(1, 1)
    assert _t1_misses(diff) == 0
    assert _t1_misses(same) > 0
    assert len(diff.job_frame().query("task == 0")) == 9  # warm-up + 8 jobs


def test_a_color_too_small_for_the_request_is_a_clear_error():
    with pytest.raises((UserError, ValueError), match="color 3"):
        rt.colored_pages(dict(sets=16, ways=4, reserved=0, periods=1), color=3, count=5)
