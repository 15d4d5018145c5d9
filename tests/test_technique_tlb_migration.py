"""TLB migration (seed 000) from Python and the CLI: the same statistics both ways, per-phase
first/second access with and without the technique, bad parameters in one line with exit 2."""

from __future__ import annotations

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
