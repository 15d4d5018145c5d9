"""TLB migration (seed 000) from Python and the CLI: the same statistics both ways, per-phase
first/second access with and without the technique, bad parameters in one line with exit 2."""

from __future__ import annotations

import pytest
import tlblab
from cli_helpers import cli, simulate_both_ways

WL = "migration_68k:pages=32,iterations=2"


def _phase_cycles(r, name):
    ph = r.phase_frame()
    return list(ph[ph["name"] == name]["cycles"])


def test_v4_restores_so_the_second_access_is_about_half_the_first_and_off_is_not():
    on = tlblab.simulate("gem5-a7", WL, technique="tlb_migration:interface=v4")
    off = tlblab.simulate("gem5-a7", WL)
    first_on, second_on = _phase_cycles(on, "first_access"), _phase_cycles(on, "second_access")
    first_off, second_off = _phase_cycles(off, "first_access"), _phase_cycles(off, "second_access")
    assert all(s < 0.7 * f for f, s in zip(first_on, second_on))
    assert all(abs(s - f) <= 0.05 * f for f, s in zip(first_off, second_off))
    c = on.technique["counters"]
    assert c["saves"] == 2 and c["restores"] == 2 and c["entries_restored"] == 64
    assert on.technique["params"]["interface"] == "v4"


@pytest.mark.parametrize("pages", [1, 16, 64])
def test_given_the_loops_fetches_on_gem5_each_access_phase_costs_2_cycles_an_instruction_a_page_more(pages):
    """migration_68k's loop_instr=4 on gem5-a7: the loop's page is in the ITB (latency 0) and its
    line in the L1I (2 cycles, TimingSimpleCPU's fetch) from the fetch before each phase, so both
    access phases cost exactly 4 * 2 cycles a page more, with and without v4; the save and the
    restore do not move (they read the data TLB only)."""
    wl = f"migration_68k:pages={pages},iterations=2"
    for technique in (None, "tlb_migration:interface=v4"):
        a = tlblab.simulate("gem5-a7", wl, technique=technique)
        b = tlblab.simulate("gem5-a7", wl + ",loop_instr=4", technique=technique)
        for phase in ("first_access", "second_access"):
            assert [y - x for x, y in zip(_phase_cycles(a, phase), _phase_cycles(b, phase))] == [8 * pages] * 2
        if technique:
            ca, cb = a.technique["counters"], b.technique["counters"]
            assert (ca["save_cycles"], ca["restore_cycles"]) == (cb["save_cycles"], cb["restore_cycles"])


def test_the_cli_and_python_give_the_same_statistics():
    py = simulate_both_ways("gem5-a7", WL, "tlb_migration:interface=v4")
    text = cli("simulate", "--machine", "gem5-a7", "--workload", WL,
               "--technique", "tlb_migration:interface=v4")
    assert text.returncode == 0
    assert "second_access" in text.stdout and "restore_cycles" in text.stdout


def test_a_bad_parameter_gives_one_line_and_exit_2():
    for tech, word in (("tlb_migration:interface=v9", "interface"),
                       ("tlb_migration:interface=v3,filter=none", "filter"),
                       ("tlb_migration:limit=lots", "limit")):
        out = cli("simulate", "--machine", "gem5-a7", "--workload", WL, "--technique", tech)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and word in lines[0] and "Traceback" not in out.stderr


def test_the_host_prediction_follows_the_llc_sharing_and_the_measured_rewarm():
    # host_migrate_prediction (the model beside `tlblab host migrate --predict`): given a shared
    # L3 (the LLC probe under 40 ns per line) the migrated chase finds its lines and PTEs there,
    # so it costs far less than with each CPU's own L3; a re-warm measured at 510 ns + 1 ns per
    # page pays at 64 pages and not at 1, and one measured dear never pays.
    from tlblab.host import migrate_model

    cheap = {"pages": [1, 384], "ns_median": {"4096": [511, 894]}}
    dear = {"pages": [1, 384], "ns_median": {"4096": [5000, 500000]}}
    kw = dict(ns=(1, 64), strides=(4096,), evict_pages=256, iterations=1)
    shared = migrate_model.host_migrate_prediction(cheap, 20.0, **kw)
    apart = migrate_model.host_migrate_prediction(cheap, 90.0, **kw)
    assert shared["4096/64/dep"] < 0.7 * apart["4096/64/dep"]
    assert shared["4096/1/gain"] < 1.0 < shared["4096/64/gain"] and shared["4096/first_win_n"] == 64
    assert shared["4096/64/rewarm+dep"] > 510 + 64
    never = migrate_model.host_migrate_prediction(dear, 20.0, **kw)
    assert never["4096/first_win_n"] == 0 and never["4096/best_gain"] < 1.0
    assert any("LLC probe" in n for n in shared["notes"])


# Seed 000 Tables A.1-A.2: the cost model's calibration benchmarks (tlblab.technique.tlb_migration),
# held to closed forms on small N: one L1D fill a preload, three misses for the first page (both
# descriptor lines and the page), one a further page, one more where the descriptors cross a
# 64-byte line; the loop and the fill's extra cycles counted as `pld_burst` counts them.


from tlblab.technique import tlb_migration as tm  # noqa: E402

LINE_START = 0x2000_0000   # descriptor 0 of a second-level descriptor line
LINE_END = 0x2000_C000     # descriptor 12: the fifth page is the next line's


@pytest.mark.parametrize("pages", [1, 2, 3, 4, 5, 6])
def test_given_pages_within_one_descriptor_line_the_first_misses_three_times_and_each_further_once(pages):
    b = tm.pld_benchmark("cortex-a7", pages, base=LINE_START)
    assert b["level"] == "L1D"
    assert b["walks"] == pages and b["accesses"] == pages
    assert b["data_by_source"]["memory"] == pages          # every fill from memory: caches flushed
    assert b["walk_misses"] == 2 and b["data_misses"] == pages
    assert b["misses"] == pages + 2 == b["walk_misses"] + b["data_misses"]
    assert b["cache"]["L1D"]["accesses"] == 3 * pages      # two descriptors and a fill a page


def test_given_the_descriptors_cross_a_line_one_more_walk_misses():
    b = tm.pld_benchmark("cortex-a7", 5, base=LINE_END)
    assert b["walk_misses"] == 3 and b["misses"] == 5 + 3
    assert tm.pld_benchmark("cortex-a7", 4, base=LINE_END)["misses"] == 4 + 2


def test_given_a_burst_cap_the_fills_stop_and_the_walks_go_on():
    b = tm.pld_benchmark("cortex-a7", 5, base=LINE_START, costs={"pld_burst_fills": 3})
    assert b["walks"] == 5 and b["accesses"] == 3 and b["misses"] == 3 + 2


@pytest.mark.parametrize("pages", [1, 2, 3, 4])
def test_given_a_free_fill_slot_for_every_preload_each_loop_cycle_counts_once_a_page(pages):
    def cycles(loop):
        return tm.pld_benchmark("cortex-a7", pages, base=LINE_START,
                                costs={"pld_slots": 4, "pld_loop": loop})["cycles"]
    assert cycles(26) - cycles(16) == 10 * pages


def test_given_one_fill_slot_the_second_preload_waits_out_the_first_fills_extra_cycles():
    def cycles(slots, extra):
        return tm.pld_benchmark("cortex-a7", 2, base=LINE_START,
                                costs={"pld_slots": slots, "pld_fill_extra": extra})["cycles"]
    assert cycles(1, 42) - cycles(1, 32) == 10
    assert cycles(2, 42) == cycles(2, 32)                   # two slots (Fig. 4.5): no wait


def test_the_read_cost_is_the_registers_and_the_loop_an_entry():
    # §4.1: a write of the operation register takes 4 cycles, a data-register read 1 (three of
    # them, Listing 3.1): 7, and 3 of loop (Table A.1: 10 a further entry).
    assert [tm.read_cycles(n) for n in (0, 1, 2, 64)] == [0, 10, 20, 640]
    assert tm.read_cycles(5, costs={"read_loop": 0}) == 5 * 7
    # gem5 (§5.2): 2 cycles an instruction, a 10-cycle loop; v2 reads two data registers.
    assert tm.read_cycles(3, cpu="gem5") == 3 * (2 + 3 * 2 + 10)
    assert tm.read_cycles(3, cpu="gem5", interface="v2") == 3 * (2 + 2 * 2 + 10)


@pytest.mark.parametrize("call, words", [
    (lambda: tm.pld_benchmark("cortex-a7", 0), ["pages", "1 to 4096", "found 0"]),
    (lambda: tm.pld_benchmark("cortex-a7", 2, stride=100), ["stride", "multiple of 4096", "100"]),
    (lambda: tm.pld_benchmark("cortex-a7", 2, base=0x2000_0010), ["base", "page-aligned"]),
    (lambda: tm.pld_benchmark("cortex-a7", 2, cpu="m1"), ["cpu", "a7 or gem5", "m1"]),
    (lambda: tm.pld_benchmark("cortex-a7", 2, costs={"pld_lop": 1}), ["pld_lop", "pld_loop"]),
    (lambda: tm.pld_benchmark("cortex-a7", 2, costs={"pld_slots": 9}), ["pld_slots", "1 to 4"]),
    (lambda: tm.pld_benchmark("cortex-a7", 2, costs={"pld_loop": -1}), ["pld_loop", "non-negative"]),
    (lambda: tm.pld_benchmark("cortex-a7", 1 << 20, stride=1 << 20), ["pages"]),
    (lambda: tm.pld_benchmark("cortex-a7", 4096, stride=1 << 20), ["32-bit"]),
    (lambda: tm.pld_benchmark("no-such-machine", 2), ["no-such-machine"]),
    (lambda: tm.read_cycles(-1), ["entries", "-1"]),
    (lambda: tm.read_cycles(1, interface="v9"), ["interface", "v9"]),
])
def test_bad_input_to_the_calibration_benchmarks_is_one_clear_error(call, words):
    with pytest.raises(ValueError) as e:
        call()
    text = str(e.value)
    assert all(w in text for w in words), text
