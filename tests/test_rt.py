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


def test_given_idle_flush_when_a_job_follows_an_idle_gap_then_it_misses_all_its_pages_and_others_none():
    # rt_same_diff_set in different colors: T1 (1, 2, 0.392 ms) and T2 (0, 16, 7.88 ms), 4 pages
    # each. T2's job ends at 9.84 ms; T1's jobs 6-8 (11, 13, 15 ms) and, in the next hyperperiod,
    # T2's job 2 (16 ms) and T1's job 9 (17 ms, its pages flushed in the gap before T2's) follow
    # an idle gap, where another process's CR3 write (idle_flush) empties the TLB: each misses its
    # 4 pages; every other job after the warm-up misses none, as without idle_flush.
    import tlblab

    def misses(flush: int) -> dict[tuple[int, int], int]:
        r = tlblab.simulate("xeon-e5-2650", f"rt_same_diff_set:layout=1,hyperperiods=2,idle_flush={flush}")
        j = r.job_frame()
        return {(int(t), int(k)): int(m) for t, k, m in zip(j["task"], j["job"], j["L1D_misses"]) if int(k) > 0}

    after_idle = {(0, 6), (0, 7), (0, 8), (1, 2), (0, 9), (0, 14), (0, 15), (0, 16)}
    assert misses(1) == {k: 4 if k in after_idle else 0 for k in misses(0)}
    assert set(misses(0).values()) == {0}


def _job_misses(machine, workload: str, technique: str | None = None):
    import tlblab

    r = tlblab.simulate(machine, workload, technique=technique)
    j = r.job_frame()
    return {(int(t), int(k)): int(m) for t, k, m in zip(j["task"], j["job"], j["L1D_misses"]) if int(k) > 0}, r


def test_given_a_dtlb_statically_partitioned_by_ways_when_each_task_owns_a_full_color_then_every_access_misses():
    # Issue 87, the sibling hyperthread (seed 003): a busy sibling under a static partition
    # leaves the task's logical processor 2 of the L1 DTLB's 4 ways. rt_same_diff_set in
    # different colors puts each task's 4 pages in a set of its own; cycling 4 pages through 2
    # LRU ways misses on every access, so each job after the warm-up misses as many times as it
    # references (T1 392, T2 7,880); on the whole DTLB none.
    import tlblab
    from tlblab.seeds.s003_tlb_coloring.sibling import partitioned_machine

    workload = "rt_same_diff_set:layout=1,hyperperiods=1"
    r = tlblab.simulate(partitioned_machine("ways"), workload)
    j = r.job_frame().query("job > 0")
    assert list(j["L1D_misses"]) == list(j["references"])
    assert set(j["references"]) == {392, 7880}
    whole, _ = _job_misses("xeon-e5-2650", workload)
    assert set(whole.values()) == {0}


def test_given_a_dtlb_statically_partitioned_by_sets_then_colors_8_apart_behave_as_one_color():
    # Under the partition by sets (8 sets of 4 ways) tlb_malloc's colors 1 and 9 index one set:
    # the pair in those colors misses job for job as the pair in one color on the whole DTLB
    # (Fig. 6.2's same set: T1's jobs 1-6 of a hyperperiod 4 each, 7-8 none, T2 20 then 24),
    # and on the whole DTLB colors 1 and 9 miss nothing.
    from tlblab.seeds.s003_tlb_coloring.sibling import partitioned_machine

    colors_1_and_9 = f"rt_same_diff_set:layout=1,hyperperiods=2,avoid_sets={0xFFFF & ~(1 << 1 | 1 << 9)}"
    halved, _ = _job_misses(partitioned_machine("sets"), colors_1_and_9)
    same, _ = _job_misses("xeon-e5-2650", "rt_same_diff_set:layout=2,hyperperiods=2")
    assert halved == same
    assert [same[(0, k)] for k in range(1, 9)] == [4, 4, 4, 4, 4, 4, 0, 0]
    assert (same[(1, 1)], same[(1, 2)]) == (20, 24)
    whole, _ = _job_misses("xeon-e5-2650", colors_1_and_9)
    assert set(whole.values()) == {0}


def test_given_a_sharing_sibling_then_foreign_entries_come_every_n_references_and_none_beyond_the_run():
    # The competitively shared DTLB's sibling: foreign_entries inserts one entry into L1D of each
    # of the machine's 2 cores after every N references; N beyond the run's references inserts
    # none and leaves every job's misses as they were.
    from tlblab.seeds.s003_tlb_coloring.sibling import foreign

    workload = "rt_same_diff_set:layout=1,hyperperiods=2"
    plain, _ = _job_misses("xeon-e5-2650", workload)
    _, r = _job_misses("xeon-e5-2650", workload, foreign(1000))
    refs = int(r.job_frame()["references"].sum())
    assert r.stats["technique"]["counters"]["foreign_inserted"] == 2 * (refs // 1000)
    beyond, r = _job_misses("xeon-e5-2650", workload, foreign(refs + 1))
    assert r.stats["technique"]["counters"]["foreign_inserted"] == 0
    assert beyond == plain
