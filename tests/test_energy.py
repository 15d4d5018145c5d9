"""The energy model (`tlblab.energy`, docs/energy.md): closed forms, the `[energy]` table's checks,
and what `tlblab simulate` reports (text, --json, Python)."""

from __future__ import annotations

import copy
import json
import math

import pytest

import tlblab
from tlblab.energy import energy_of, run_energy, sum_units

from cli_helpers import cli

TABLE = {"tlb_pj": {"L1I": 1.0, "L1D": 10.0, "L2I": 2.0, "L2D": 20.0},
         "cache_pj": {}, "walk_pj": 50.0, "dram_line_nj": 2.0,
         "core_active_w": 3.0, "core_idle_w": 0.5, "uncore_w": 1.0}


def test_given_known_counts_then_the_energy_is_the_sum_of_each_term():
    # 1,000 L1D lookups (10 pJ), 100 L2D (20 pJ), 10 walks (50 pJ), 40 lines (2 nJ); two cores at
    # 1 GHz over 1,000 cycles (1 us): one busy 600 cycles, one 0; uncore 1 W.
    e = energy_of(TABLE, tlb_accesses={"L1D": 1000, "L2D": 100}, cache_accesses={}, walks=10, memory_lines=40,
                  busy_cycles=[600, 0], cycles=1000, frequency_mhz=1000.0)
    us = 1e-6
    parts = {"tlb": 1000 * 10e-12 + 100 * 20e-12, "cache": 0.0, "walk": 10 * 50e-12, "dram": 40 * 2e-9,
             "core_active": 0.6 * us * 3.0, "core_idle": (0.4 + 1.0) * us * 0.5, "uncore": us * 1.0}
    assert e["parts"] == pytest.approx(parts, rel=1e-12)
    assert e["energy_j"] == pytest.approx(sum(parts.values()), rel=1e-12)
    assert e["avg_power_w"] == pytest.approx(sum(parts.values()) / us, rel=1e-12)
    assert e["package_j"] == pytest.approx(sum(parts.values()) - parts["dram"], rel=1e-12)
    assert e["seconds"] == pytest.approx(us)


def test_a_core_busier_than_the_run_counts_the_run_and_no_idle_time():
    # Two hardware threads of one core, both busy the whole run: one core's power, no more.
    e = energy_of(TABLE, tlb_accesses={}, cache_accesses={}, walks=0, memory_lines=0,
                  busy_cycles=[2000], cycles=1000, frequency_mhz=1000.0)
    assert e["parts"]["core_active"] == pytest.approx(1e-6 * 3.0)
    assert e["parts"]["core_idle"] == 0.0


def test_a_level_without_an_energy_is_an_error_not_free():
    with pytest.raises(ValueError, match="energy.tlb_pj: no energy for level L3T"):
        energy_of(TABLE, tlb_accesses={"L3T": 1}, cache_accesses={}, walks=0, memory_lines=0,
                  busy_cycles=[], cycles=1, frequency_mhz=1.0)


def uncached_zen3() -> dict:
    """zen3's TLB levels, no cache and no page-walk cache: every page-table entry and every data
    reference from memory, so each count is known in closed form."""
    m = tlblab.machine_config("zen3")
    m["cache"] = []
    m["walker"]["pwc"] = []
    m["cores"] = 1
    m["energy"] = copy.deepcopy(TABLE)
    return m


def test_given_a_run_of_16_pages_without_caches_then_its_energy_follows_from_its_counts():
    # 16 pages touched 100 times each in turn: 1,600 L1D lookups, 16 misses into the L2D, 16
    # walks of 4 entries each from memory (no page-walk cache), 1,600 data lines from memory.
    m = uncached_zen3()
    r = tlblab.simulate(m, "strided:pages=16,stride=4096,rounds=100")
    t, names = r.total, r.stats["tlb_levels"]
    assert t["tlb"][names.index("L1D")]["accesses"] == 1600
    assert t["tlb"][names.index("L2D")]["accesses"] == 16
    assert t["walks"] == 16 and t["walk_refs_by_source"][-1] == 64 and t["data_by_source"][-1] == 1600
    seconds = r.cycles / (m["frequency_mhz"] * 1e6)
    expect = (1600 * 10e-12 + 16 * 20e-12 + 16 * 50e-12 + (64 + 1600) * 2e-9
              + seconds * 3.0 + seconds * 1.0)  # one core, busy the whole run; the uncore
    assert r.energy_j == pytest.approx(expect, rel=1e-9)
    assert r.avg_power_w == pytest.approx(expect / seconds, rel=1e-9)
    assert r.summary()["energy_j"] == r.energy_j


def test_the_last_cache_levels_misses_are_the_lines_from_memory():
    r = tlblab.simulate("zen3", "random:pages=4096,accesses=20000")
    m = tlblab.machine_config("zen3")
    e = run_energy(m, r.stats)
    l3 = r.stats["cache_levels"].index("L3")
    lines = r.total["cache"][l3]["misses"]
    assert lines > 0
    assert e["parts"]["dram"] == pytest.approx(lines * 5.7e-9)
    # Every reference of this workload is the application's: its lines from memory are the L3's misses.
    assert lines == r.total["walk_refs_by_source"][-1] + r.total["data_by_source"][-1]


def test_zen3s_package_with_one_and_two_busy_cores_is_its_sourced_constants():
    # docs/energy.md: a busy core is the 142 W PPT less the 4 W idle SoC over the 8 cores the
    # 5900X reaches it with; idle cores sleep (0 W). With no references, one second of four
    # cores of which one (then two) are busy is the uncore and one (then two) busy cores.
    for name in ("zen3", "zen3-virt"):
        table = tlblab.machine_config(name)["energy"]
        assert table["core_active_w"] == pytest.approx((142 - table["uncore_w"]) / 8)
        assert table["core_idle_w"] == 0.0
        one, two = (energy_of(table, tlb_accesses={}, cache_accesses={}, walks=0, memory_lines=0,
                              busy_cycles=[1e9] * busy + [0] * (4 - busy), cycles=1e9, frequency_mhz=1000.0)
                    for busy in (1, 2))
        assert one["package_power_w"] == pytest.approx(17.25 + 4.0)
        assert two["package_power_w"] == pytest.approx(2 * 17.25 + 4.0)


def test_a_machine_without_an_energy_table_reports_none():
    r = tlblab.simulate("xeon-e5-2650", "random:pages=64,accesses=1000")
    assert r.energy_j is None and r.avg_power_w is None and "energy" not in r.stats
    assert "energy_j" not in r.summary()


def test_sum_units_adds_counters_and_level_lists():
    a = {"references": 2, "tlb": [{"accesses": 1, "misses": 0}], "walk_refs_by_source": [1, 2]}
    b = {"references": 3, "tlb": [{"accesses": 4, "misses": 1}], "walk_refs_by_source": [0, 5]}
    assert sum_units([a, b]) == {"references": 5, "tlb": [{"accesses": 5, "misses": 1}],
                                 "walk_refs_by_source": [1, 7]}


def test_simulate_prints_the_energy_line_and_json_carries_what_python_returns():
    w = "random:pages=4096,accesses=20000"
    out = cli("simulate", "--machine", "zen3", "--workload", w)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("energy "))
    assert "average power" in line and " W" in line and "core_active" in line
    py = tlblab.simulate("zen3", w)
    js = cli("simulate", "--machine", "zen3", "--workload", w, "--json")
    assert js.returncode == 0, js.stderr
    e = json.loads(js.stdout)["energy"]
    assert e == py.stats["energy"]
    assert f"{py.energy_j:.6g} J" in line and f"{py.avg_power_w:.4g} W" in line
    assert math.isfinite(py.avg_power_w) and py.avg_power_w > 0


@pytest.mark.parametrize("edit, message", [
    (lambda e: e["tlb_pj"].pop("L2D"), "energy.tlb_pj: expected an energy for every level, found none for L2D"),
    (lambda e: e["tlb_pj"].update(L3D=1.0), "energy.tlb_pj.L3D: no level of that name"),
    (lambda e: e.update(core_active_w=-1.0), "energy.core_active_w: expected a finite number >= 0, found -1"),
], ids=["missing-level", "unknown-level", "negative"])
def test_a_bad_energy_table_is_one_line_naming_the_field_and_exit_2(tmp_path, edit, message):
    m = tlblab.machine_config("zen3")
    edit(m["energy"])
    path = tmp_path / "m.json"
    path.write_text(json.dumps(m))
    out = cli("simulate", "--machine", str(path), "--workload", "random:pages=64,accesses=100")
    assert out.returncode == 2
    err = out.stderr.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "m.json" in err[0], out.stderr
    assert out.stdout == ""


def test_intervals_merge_into_the_energy_of_the_uninterrupted_run(tmp_path):
    # The energy of a run cut in intervals is the model over the merged counters: the same as
    # the uninterrupted run's (docs/intervals.md: the counters merge exactly).
    w = "gups:log2_words=18,updates=60k,populate=1"
    run = tlblab.intervals("zen3", w, 2, serial=True, out=tmp_path, max_references=100_000)
    whole = tlblab.simulate("zen3", w, max_references=100_000)
    assert whole.energy_j is not None
    assert run.result.stats["energy"] == whole.stats["energy"]
    assert run.pass_result.stats["energy"] == whole.stats["energy"]
