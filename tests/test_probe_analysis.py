"""tlblab probe's analysis through the Python binding, on synthetic curves with known answers
(the Rust unit tests cover the same functions in more depth), and the preset conversion."""

from __future__ import annotations

import json
import random

import pytest

from tlblab import _native


def _curve(l1: int, l2: int, noise: float, seed: int) -> list[dict]:
    rng = random.Random(seed)
    ns, x = [], 8.0
    while x < 32768:
        ns.append(int(round(x)) + 1)
        x *= 2 ** 0.25
    pts = []
    for n in ns:
        data = 1.25 if n <= 512 else 3.75
        tlb = 0.0 if n <= l1 else (2.2 if n <= l2 else 7.0)
        t = (data + tlb) * (1 + rng.gauss(0, noise))
        c = data * (1 + rng.gauss(0, noise))
        pts.append({"n": n, "test": t, "control": c, "noise": (data + tlb) * noise * 1.9})
    return pts


@pytest.mark.parametrize("seed", range(5))
def test_given_a_noisy_two_level_curve_then_two_knees_bracket_both_capacities(seed):
    knees = json.loads(_native.probe_find_knees(json.dumps(_curve(64, 2048, 0.02, seed))))
    assert len(knees) == 2
    assert knees[0]["lo"] <= 64 < knees[0]["hi"]
    assert knees[1]["lo"] <= 2048 < knees[1]["hi"]


def test_given_a_flat_curve_then_no_knee():
    assert json.loads(_native.probe_find_knees(json.dumps(_curve(1 << 30, 1 << 30, 0.01, 3)))) == []


def test_ramp_fit_finds_a_step_at_64():
    pts = [[n, 0.0 if n <= 64 else 2.2] for n in range(48, 80)]
    fit = json.loads(_native.probe_fit_ramp(json.dumps(pts)))
    assert fit["capacity"] == 64 and fit["width"] == 1  # the ramp ends at the first missing N


def test_index_inference_tells_fully_associative_from_16x4():
    fa = [{"log2_stride": k, "capacity": 64.0} for k in range(10)]
    assert json.loads(_native.probe_infer_indexing(json.dumps(fa)))["kind"] == "fully_associative"
    sk = [{"log2_stride": k, "capacity": max(64.0 / 2 ** k, 4.0)} for k in range(8)]
    got = json.loads(_native.probe_infer_indexing(json.dumps(sk)))
    assert got == {"kind": "linear", "sets": 16, "ways": 4, "index_bits": [0, 1, 2, 3]}


def test_bad_json_is_a_value_error_naming_the_position():
    with pytest.raises(ValueError, match="line 1, column"):
        _native.probe_fit_ramp("[[1, 2], oops]")
    with pytest.raises(ValueError, match="unknown field"):
        _native.probe(json.dumps({"quik": True}))


def test_unknown_section_is_a_user_error_from_the_cli(capsys):
    from tlblab.cli import main

    assert main(["probe", "--sections", "dtlb,nonsense"]) == 2
    assert "unknown probe section 'nonsense'" in capsys.readouterr().err


def _report(l1=64, l2=2048, conf="high"):
    from tlblab.probe import ProbeResult

    def m(name, value, unit="entries", note="", confidence=conf):
        return {"name": name, "value": value, "unit": unit, "spread": [value, value], "confidence": confidence,
                "cpuid": None, "disagrees": False, "note": note}

    return ProbeResult({"summary": [
        m("L1 DTLB entries (4K)", l1), m("L2 DTLB entries (4K)", l2),
        m("L1 DTLB associativity", None, "", "fully associative (64 entries at every stride)"),
        m("load, L1 DTLB hit (L1D hit)", 1.25, "ns"), m("L1 DTLB miss, L2 DTLB hit (extra)", 2.2, "ns"),
        m("L1 ITLB entries (4K)", 20, confidence="unclear"),
    ], "random_sweep": []})


def test_host_preset_takes_the_measured_values_and_keeps_the_rest():
    from tlblab import machine_config
    from tlblab.probe import host_machine

    m = host_machine(_report(l1=64, l2=1856))
    tlb = {(t["kind"], t["level"]): t for t in m["tlb"]}
    assert tlb[("data", 1)]["entries"] == 64 and tlb[("data", 1)]["ways"] == "full"
    # 1856 rounded to whole sets of the base preset's 16 ways.
    assert tlb[("data", 2)]["entries"] == 1856 and tlb[("data", 2)]["entries"] % 16 == 0
    assert tlb[("data", 2)]["latency"] == 7  # 2.2 ns at 4 cycles / 1.25 ns = 3.2 GHz
    assert m["frequency_mhz"] == 3200
    # An unclear measurement is not used: the base value stays, and the source says so.
    assert tlb[("instr", 1)]["entries"] == 64 and "not measured clearly" in tlb[("instr", 1)]["source"]
    # And the simulator accepts it.
    assert machine_config(m)["tlb"][1]["entries"] in (64, 1856)


def test_host_toml_round_trips_through_the_simulator(tmp_path):
    from tlblab import simulate
    from tlblab.probe import host_toml, write_atomic

    path = tmp_path / "host.toml"
    write_atomic(str(path), host_toml(_report(l2=1504)))
    r = simulate(str(path), "chase:pages=256,accesses=20000")
    assert r.total["references"] >= 20000
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


def test_validate_without_a_sweep_is_a_user_error():
    from tlblab.errors import UserError
    from tlblab.probe import validate

    with pytest.raises(UserError, match="--validate"):
        validate(_report(), "zen3")


def test_a_probe_run_in_a_vm_writes_a_preset_with_nested_walks(tmp_path, monkeypatch):
    import tlblab.probe as tp

    r = _report()
    r.raw["cpuid"] = {"hypervisor": "KVMKVMKVM"}
    assert tp.default_base(r) == "zen3-virt"
    assert tp.host_machine(r)["virtualization"] is not None
    # CPUID without a signature: the cpuinfo flag decides.
    r.raw["cpuid"] = {"hypervisor": None}
    info = tmp_path / "cpuinfo"
    monkeypatch.setattr(tp, "_CPUINFO", str(info))
    info.write_text("processor : 0\nflags : fpu vme hypervisor avx\n")
    assert tp.default_base(r) == "zen3-virt"
    info.write_text("processor : 0\nflags : fpu vme avx\n")
    assert tp.default_base(r) == "zen3"
    assert tp.host_machine(r).get("virtualization") is None


def test_a_set_associative_first_level_keeps_its_measured_ways():
    from tlblab.probe import host_machine

    r = _report(l1=97)
    for m in r.raw["summary"]:
        if m["name"] == "L1 DTLB associativity":
            m["note"], m["confidence"] = "6-way, 16 sets, set = VPN bits [0, 1, 2, 3]", "medium"
            break
    else:
        r.raw["summary"].append({"name": "L1 DTLB associativity", "value": None, "unit": "", "spread": None,
                                 "confidence": "medium", "cpuid": None, "disagrees": False,
                                 "note": "6-way, 16 sets, set = VPN bits [0, 1, 2, 3]"})
    tlb = {(t["kind"], t["level"]): t for t in host_machine(r)["tlb"]}
    assert (tlb[("data", 1)]["entries"], tlb[("data", 1)]["ways"]) == (96, 6)


def test_the_host_preset_takes_the_private_caches_from_sysfs(tmp_path, monkeypatch):
    import tlblab.probe as tp

    for i, (level, kind, size, ways) in enumerate([(1, "Data", "48K", 12), (1, "Instruction", "64K", 16),
                                                   (2, "Unified", "2048K", 16), (3, "Unified", "491520K", 16)]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        for f, v in {"level": level, "type": kind, "size": size, "ways_of_associativity": ways,
                     "coherency_line_size": 64}.items():
            (d / f).write_text(f"{v}\n")
    monkeypatch.setattr(tp, "_SYSFS_CACHE", str(tmp_path))
    assert tp.sysfs_caches()[0] == {"level": 1, "kind": "data", "size": 48 << 10, "ways": 12, "line": 64}
    caches = {c["name"]: c for c in tp.host_machine(_report(), base="zen3")["cache"]}
    assert (caches["L1D"]["size"], caches["L1D"]["ways"]) == (48 << 10, 12)
    assert (caches["L2"]["size"], caches["L2"]["ways"]) == (2 << 20, 16)
    # The shared level (491520 sets: not a power of two, and not credible in a VM) stays the base's.
    assert caches["L3"]["size"] == 32 << 20 and "sysfs" not in caches["L3"]["source"]
    assert caches["L1D"]["latency"] == 4  # latencies stay the base's


def test_the_probe_reads_a_simulated_host_deterministically():
    from tlblab.probe import probe_simulated

    a = probe_simulated("xeon-e5-2650", quick=True, sections=["dtlb"], reps=1, trials=1, seed=3)
    b = probe_simulated("xeon-e5-2650", quick=True, sections=["dtlb"], reps=1, trials=1, seed=3)
    assert a.raw["summary"] == b.raw["summary"]
    l1 = a.measured("L1 DTLB entries")
    assert l1["cpuid"] == "64 entries, 4-way"  # the machine declares its own TLBs
    assert abs(l1["value"] - 64) <= 3


@pytest.mark.parametrize("name", ["host.toml", "host.json"])
def test_given_a_simulated_host_when_its_preset_is_written_then_it_reads_back_as_the_same_machine(tmp_path, name):
    """preset -> probe -> preset: the probe's reading of a simulated xeon-e5-2650 written as a
    machine file (by the Rust configuration crate) loads back as the machine written, with the
    L1 DTLB the simulated host has."""
    from tlblab import machine_config
    from tlblab.probe import host_machine, probe_simulated, write_preset

    r = probe_simulated("xeon-e5-2650", quick=True, sections=["dtlb"], reps=1, trials=1, seed=3)
    m = host_machine(r, base="xeon-e5-2650", sysfs=False)
    path = tmp_path / name
    write_preset(str(path), m)
    back = machine_config(str(path))
    assert back == machine_config(m)
    l1 = next(t for t in back["tlb"] if (t["kind"], t["level"]) == ("data", 1))
    assert abs(l1["entries"] - 64) <= 4 and l1["entries"] % l1["ways"] == 0, l1
    assert "tlblab probe" in l1["source"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


@pytest.mark.parametrize("argv, words", [
    (["probe", "--simulate", "zen3", "--sections", "itlb"], "cannot run on a simulated host"),
    (["probe", "--simulate", "zen3", "--validate"], "does not apply with --simulate"),
    (["probe", "--simulate", "/nonexistent.toml", "--quick"], "neither a preset"),
])
def test_simulate_errors_are_one_line_with_status_2(argv, words, capsys):
    from tlblab.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert words in err[-1]


def _xor7_set_index(**kw):
    # What the probe measured on the Intel VM (docs/probe.md): VPN bits 0-6 XOR 7-13, 128 sets.
    si = {"ways": 16, "ways_lo": 14, "ways_hi": 18, "top_log2": 14, "basis": list(range(7)),
          "folds": [[7 + j, 1 << j] for j in range(7)], "stride_capacities": [], "ways_curve": [],
          "confidence": "high", "unclear": None}
    si.update(kw)
    return si


def test_a_measured_xor_fold_is_written_to_the_preset_and_colored_by_the_bits_it_reads(tmp_path):
    from tlblab import machine_config
    from tlblab.host.geometry import from_machine
    from tlblab.probe import host_machine, host_toml, write_atomic, xor_index

    assert xor_index(_xor7_set_index()) == {"type": "xor", "a": [12, 18], "b": [19, 25]}
    # A low-bits index, a fold the engine cannot express, an unclear measurement: nothing.
    assert xor_index(_xor7_set_index(folds=[[7 + j, 0] for j in range(7)])) is None
    assert xor_index(_xor7_set_index(folds=[[7, 3]] + [[8 + j, 2 << j] for j in range(6)])) is None
    assert xor_index(_xor7_set_index(confidence="unclear")) is None
    r = _report(l2=2048, conf="unclear")  # entries unclear: kept from the base (2048 x 16)
    r.raw["l2_set_index"] = _xor7_set_index()
    tlb = {(t["kind"], t["level"]): t for t in host_machine(r)["tlb"]}
    assert tlb[("data", 2)]["index"] == {"type": "xor", "a": [12, 18], "b": [19, 25]}
    path = tmp_path / "host.toml"
    write_atomic(str(path), host_toml(r))
    g = from_machine(machine_config(str(path)), str(path))
    # Colors are the 14 VPN bits the hash reads, and the geometry says why.
    assert (g.sets, g.ways) == (16384, 16)
    assert "hashed index" in g.note and "19-25" in g.note


def test_the_measured_walk_past_the_l2_sets_the_walkers_latency():
    """The probe's chain past the L2 DTLB costs `ex` ns per access (the capacity sweep's median
    excess); the written preset's walker then costs that, less the L2 lookup, per simulated walk."""
    from tlblab import simulate
    from tlblab.probe import host_machine

    def row(n, ex):
        s = {"median": ex, "q1": ex, "q3": ex}
        return {"n": n, "excess": s, "test_low": ex + 1.0, "control_low": 1.5}

    r = _report(l2=2048)
    base = host_machine(r)["walker"]["latency"]  # no sweep rows: the base preset's
    r.raw["dtlb_sweep"] = [row(1448, 5.0), row(2896, 19.0), row(3444, 21.0), row(4224, 20.0), row(5793, 20.5)]
    m = host_machine(r)
    ghz = m["frequency_mhz"] / 1000
    l2d = next(t for t in m["tlb"] if (t["kind"], t["level"]) == ("data", 2))
    assert "walker latency from tlblab probe: walk past the L2 DTLB 20.5 ns" in l2d["source"]
    assert m["walker"]["latency"] > base
    n = 4224
    a = simulate(m, f"chase:pages={n},accesses=101376", seed=0).total
    b = simulate(m, f"chase:pages={n},accesses=202752", seed=0).total
    per_walk = (b["walk_cycles"] - a["walk_cycles"]) / (b["walks"] - a["walks"])
    assert abs(per_walk + l2d["latency"] - 20.5 * ghz) <= 1.5, (per_walk, l2d["latency"], ghz)


def _one_level(sets, ways, every=None):
    """A machine of one data TLB level (`sets` x `ways`, LRU, low-bit index), TLB-only use."""
    from tlblab import machine_config

    m = machine_config("zen3")
    l2 = next(t for t in m["tlb"] if (t["kind"], t["level"]) == ("data", 2))
    l2.update(name="STLB", level=1, kind="unified", entries=sets * ways, ways=ways)
    m["tlb"] = [l2]
    m.pop("energy")  # zen3's energies are per zen3 level (docs/energy.md): this machine has other levels
    if every is not None:
        m["technique"] = {"name": "foreign_entries", "every": every, "level": "STLB"}
    return m


def test_the_foreign_entries_closed_form_matches_the_engine_on_the_probes_chain():
    """`foreign_miss_fraction` (what the probe inverts) against the engine running the technique
    on the probe's chain: 128 x 16 LRU, one foreign entry every 4 references. The closed form
    leaves out only the binomial's rounding of n / N; criterion written before the run: within
    0.04 at each point, and no misses past the first touches without the technique."""
    from tlblab import simulate
    from tlblab.probe import foreign_miss_fraction

    for n in (1218, 1722, 1920):
        acc = 24 * n
        res = [simulate(_one_level(128, 16, 4), f"chase:pages={n},accesses={a}", tlb_only=True, seed=1).total
               for a in (acc, 2 * acc)]
        sim = (res[1]["tlb"][0]["misses"] - res[0]["tlb"][0]["misses"]) / acc
        want = foreign_miss_fraction(n, 4, 128, 16)
        assert abs(sim - want) <= 0.04, (n, sim, want)
    plain = simulate(_one_level(128, 16), "chase:pages=1920,accesses=40000", tlb_only=True).total
    assert plain["tlb"][0]["misses"] == 1920


def test_the_probe_writes_foreign_entries_from_the_capacity_sweeps_half_miss_point():
    """A capacity sweep whose miss fraction, (excess − 2.2) / (20.2 − 2.2), crosses 0.5 at 1700
    pages (13.3 a set of 128 x 16) gives N from the closed form; one that crosses only past the
    entries (as an LRU level alone does) gives no technique."""
    from tlblab import simulate
    from tlblab.probe import foreign_miss_fraction, host_machine, host_toml

    def row(n, ex):
        s = {"median": ex, "q1": ex, "q3": ex}
        return {"n": n, "excess": s, "test_low": ex + 1.0, "control_low": 1.5}

    walk = [row(n, 20.2) for n in (2896, 3444, 4224, 5793)]
    r = _report(l2=2048)
    r.raw["dtlb_sweep"] = [row(1448, 2.2 + 0.2 * 18), row(1952, 2.2 + 0.8 * 18)] + walk
    m = host_machine(r)
    t = m["technique"]
    assert t["name"] == "foreign_entries" and t["level"] == "L2D"
    # n50 = 1448 + (0.5 − 0.2) / 0.6 × 504 = 1700; the closed form at N = every is near 0.5 there.
    assert abs(foreign_miss_fraction(1700, t["every"], 128, 16) - 0.5) < 0.25
    assert foreign_miss_fraction(1700, t["every"] + 1, 128, 16) < 0.5 < foreign_miss_fraction(
        1700, max(1, t["every"] - 1), 128, 16)
    l2d = next(x for x in m["tlb"] if x["name"] == "L2D")
    assert "reaches 0.5 at 1700 pages (13.3 a set, 16 ways)" in l2d["source"], l2d["source"]
    # The written file runs with it.
    assert "foreign_entries" in host_toml(r)
    res = simulate(m, "chase:pages=1024,accesses=20000", seed=0)
    # One insertion after every N references, into each core's L2D.
    assert res.technique["counters"]["foreign_inserted"] == m["cores"] * (19999 // t["every"])
    r.raw["dtlb_sweep"] = [row(1448, 2.2), row(1952, 2.2 + 0.02 * 18), row(2112, 2.2 + 0.6 * 18)] + walk
    assert "technique" not in host_machine(r)
    # The Intel VM, 2026-11-26 08:35 (run 3): 36% of the chain missing at 1722 pages, 63% at 2112,
    # n50 = 1722 + 0.14 / 0.27 × 390 = 1924: above one page a set below the entries (1920), below
    # the entries, and far below where LRU alone crosses 0.5 (≈ 2100): foreign entries.
    r.raw["dtlb_sweep"] = [row(1448, 2.2 + 0.11 * 18), row(1722, 2.2 + 0.36 * 18), row(2112, 2.2 + 0.63 * 18)] + walk
    assert host_machine(r)["technique"]["name"] == "foreign_entries"


def test_the_l2_cache_latency_is_the_packed_controls_between_4x_the_l1d_and_half_the_l2():
    """The capacity sweep's control (lines packed 64 to a page) at footprints from 4x the L1D to
    half the L2 is the L2's load-to-use latency; points outside that range do not count."""
    from tlblab.probe import l2_cache_latency

    def row(n, ctl):
        return {"n": n, "control": {"median": ctl, "q1": ctl, "q3": ctl}}

    r = _report(l2=2048)
    # 48 KiB L1D (768 lines), 2 MiB L2: lines 3072..16384 count.
    r.raw["dtlb_sweep"] = [row(512, 1.3), row(2112, 3.9), row(3444, 4.2), row(4224, 4.3), row(8448, 4.25),
                           row(20000, 9.0)]
    lat = l2_cache_latency(r, 48 << 10, 2 << 20)
    assert lat["points"] == 3 and (lat["n_lo"], lat["n_hi"]) == (3444, 8448)
    assert lat["ns"] == 4.25 and lat["range"] == [4.2, 4.3]
    r.raw["dtlb_sweep"] = [row(3444, 4.2)]
    assert l2_cache_latency(r, 48 << 10, 2 << 20) is None


def _chase_point(mib, ns):
    """A windowed-chase point (`ProbeReport::memory_chase`) of `mib` MiB read at `ns`."""
    return {"bytes": mib << 20, "ns": {"median": ns, "q1": ns, "q3": ns}, "thp": True}


def _fake_sysfs(monkeypatch, l1: tuple[int, int], l2: tuple[int, int], l3: tuple[int, int]) -> None:
    """sysfs's data caches as (bytes, ways) per level, 64 B lines, for `host_machine`."""
    from tlblab import probe

    monkeypatch.setattr(probe, "sysfs_caches", lambda root=None: [
        {"level": 1, "kind": "data", "size": l1[0], "ways": l1[1], "line": 64},
        {"level": 2, "kind": "unified", "size": l2[0], "ways": l2[1], "line": 64},
        {"level": 3, "kind": "unified", "size": l3[0], "ways": l3[1], "line": 64}])


def test_the_l3_and_memory_latencies_are_the_windowed_chase_in_their_ranges(monkeypatch):
    """Criteria written before the first run: on a 1 MiB L2 / 32 MiB L3 the points from 4 to 16 MiB
    give the L3's latency (their median), those from 128 MiB on memory's (the median of two: their mean); the 2 and 32-64 MiB points
    count for neither; the machine file takes them in cycles at the probe's clock, naming the
    range, and a report without the chase leaves the base's latencies."""
    from tlblab.probe import host_machine, l3_and_memory_latency

    pt = _chase_point

    r = _report(l2=2048)
    r.raw["memory_chase"] = [pt(2, 4.0), pt(4, 14.0), pt(8, 15.0), pt(16, 17.0), pt(32, 40.0), pt(64, 80.0),
                             pt(128, 110.0), pt(256, 120.0)]
    lat = l3_and_memory_latency(r, 1 << 20, 32 << 20)
    assert lat["L3"] == {"ns": 15.0, "points": 3, "mib": [4, 16], "range": [14.0, 17.0]}
    assert lat["memory"]["ns"] == 115.0 and lat["memory"]["points"] == 2 and lat["memory"]["mib"] == [128, 256]
    _fake_sysfs(monkeypatch, (48 << 10, 12), (1 << 20, 16), (32 << 20, 16))
    base = host_machine(_report(l2=2048))
    m = host_machine(r)
    ghz = m["frequency_mhz"] / 1000
    l3 = next(c for c in m["cache"] if c["level"] == 3)
    assert l3["latency"] == round(15.0 * ghz) and "over 4-16 MiB (3 points" in l3["source"], l3
    assert m["memory"]["latency"] == round(115.0 * ghz) and "over 128-256 MiB" in m["memory"]["source"]
    assert next(c for c in base["cache"] if c["level"] == 3)["latency"] != l3["latency"]
    assert base["memory"]["latency"] != m["memory"]["latency"]


def test_a_guest_that_gets_a_share_of_the_l3_is_written_with_that_share(monkeypatch):
    """Criteria written before the first run, from the Zen 4 guest's chase (2026-11-30 16:11 UTC,
    ns: 2 MiB 12.9, 4 14.2, 6 14.7, 8 77.7, 12 92.1, 16 95.7, 24 96.3, 32 96.1, 64 94.6, 128 97.3,
    256 95.4; sysfs: 1 MiB L2, 32 MiB 16-way L3): memory is the median of 128 and 256 MiB (96.35);
    the L3's candidates are 4-16 MiB, the midpoint between the fastest (14.2) and memory 55.275,
    so the plateau is 4 and 6 MiB (latency their median, 14.45 ns) and 8 MiB is past it; the share
    is sqrt(6 x 8) MiB, written as whole sets of the 16 ways of 64 B (7094 sets, 7,264,256 bytes),
    the source naming sysfs's 32 MiB and both footprints. A host whose chase stays on the plateau
    to half the L3 keeps sysfs's size (the test above: no share). A second reading (16:12 UTC: 4 MiB
    15.2, 6 21.0, 8 36.4, 12 96.1) puts 8 MiB on the plateau (short of the midpoint) but not in the
    latency (above 1.25 x 15.2 = 19.0, as is 6 MiB's 21.0): latency 15.2, the share sqrt(8 x 12) MiB."""
    from tlblab.probe import host_machine, l3_and_memory_latency

    pt = _chase_point

    r = _report(l2=2048)
    r.raw["memory_chase"] = [pt(2, 12.9), pt(4, 14.2), pt(6, 14.7), pt(8, 77.7), pt(12, 92.1), pt(16, 95.7),
                             pt(24, 96.3), pt(32, 96.1), pt(64, 94.6), pt(128, 97.3), pt(256, 95.4)]
    lat = l3_and_memory_latency(r, 1 << 20, 32 << 20)
    assert lat["memory"]["ns"] == 96.35
    assert lat["cut_ns"] == (14.2 + 96.35) / 2
    assert lat["L3"]["ns"] == 14.45 and lat["L3"]["mib"] == [4, 6] and lat["L3"]["points"] == 2
    assert lat["L3"]["share_bytes"] == int((48 << 40) ** 0.5) and lat["L3"]["share_between"] == [6, 8, 77.7]
    _fake_sysfs(monkeypatch, (32 << 10, 8), (1 << 20, 8), (32 << 20, 16))
    m = host_machine(r)
    l3 = next(c for c in m["cache"] if c["level"] == 3)
    assert l3["ways"] == 16 and l3["size"] == 7094 * 16 * 64, l3
    assert "sysfs lists 32 MiB" in l3["source"] and "up to 6 MiB and not at 8 MiB" in l3["source"]
    assert l3["latency"] == round(14.45 * m["frequency_mhz"] / 1000)
    r.raw["memory_chase"][1:5] = [pt(4, 15.2), pt(6, 21.0), pt(8, 36.4), pt(12, 96.1)]
    lat = l3_and_memory_latency(r, 1 << 20, 32 << 20)
    assert lat["L3"]["ns"] == 15.2 and lat["L3"]["points"] == 1
    assert lat["L3"]["share_between"] == [8, 12, 96.1] and lat["L3"]["share_bytes"] == int((96 << 40) ** 0.5)


def test_a_chase_short_of_four_times_a_socket_sized_l3_reads_memory_from_its_last_points(monkeypatch):
    """Criteria written before the first run, from the Intel Xeon VM's chase (2026-12-01 01:28 UTC,
    medians, ns: 2 MiB 15.4, 4 35.6, 6 40.6, 8 45.7, 12 56.6, 16 57.7, 24 79.4, 32 100.6, 64 105.1,
    128 105.5, 256 103.8; sysfs: 2 MiB L2, a 480 MiB 16-way L3 shared by both vCPUs): no point
    reaches 4x the L3, so memory is the chase's last points within 10% of their median (32-256 MiB,
    median 104.45), which count because 104.45 is at least twice the fastest point past 4x the L2
    before them (8 MiB, 45.7); the midpoint to memory (75.075) puts 8-16 MiB on the L3's plateau and
    24 MiB past it: latency the median of 8 and 12 MiB (within 25% of 45.7: 51.15), the share
    sqrt(16 x 24) MiB as whole sets of sysfs's 16 ways, the memory source saying the tail stood in.
    A chase that stays flat from 4x its L2 to its end (a host that owns a large L3) has no tail:
    memory and the share stay unmeasured. Nor does a tail of one point, or one spanning less than
    2x in footprint. Revised the same day, before any run on a host: at first the tail needed 3
    points spanning 4x, which the quick probe's chase (4, 6, 8, 16, 128, 256 MiB) can never give,
    so the host tools' cached probe would have kept the base's memory latency there; a tail of 2
    points spanning 2x (its 128 and 256 MiB) now counts, the flatness and the 2x-the-L3 bounds
    unchanged."""
    from tlblab.probe import host_machine, l3_and_memory_latency

    pt = _chase_point

    chase = [pt(2, 15.4), pt(4, 35.6), pt(6, 40.6), pt(8, 45.7), pt(12, 56.6), pt(16, 57.7), pt(24, 79.4),
             pt(32, 100.6), pt(64, 105.1), pt(128, 105.5), pt(256, 103.8)]
    r = _report(l2=2048)
    r.raw["memory_chase"] = chase
    lat = l3_and_memory_latency(r, 2 << 20, 480 << 20)
    assert lat["memory"]["mib"] == [32, 256] and lat["memory"]["points"] == 4 and lat["memory"]["tail"]
    assert lat["memory"]["ns"] == (103.8 + 105.1) / 2
    assert lat["cut_ns"] == (45.7 + lat["memory"]["ns"]) / 2
    assert lat["L3"]["mib"] == [8, 12] and lat["L3"]["ns"] == (45.7 + 56.6) / 2
    assert lat["L3"]["share_between"] == [16, 24, 79.4] and lat["L3"]["share_bytes"] == int((384 << 40) ** 0.5)
    _fake_sysfs(monkeypatch, (48 << 10, 12), (2 << 20, 16), (480 << 20, 16))
    m = host_machine(r)
    l3 = next(c for c in m["cache"] if c["level"] == 3)
    assert l3["size"] == (int((384 << 40) ** 0.5) // 1024) * 1024 and "sysfs lists 480 MiB" in l3["source"]
    assert m["memory"]["latency"] == round(lat["memory"]["ns"] * m["frequency_mhz"] / 1000)
    assert "does not reach 4x the 480 MiB L3" in m["memory"]["source"]
    flat = [pt(2, 15.4)] + [pt(mib, 40.0 + i * 0.5) for i, mib in enumerate((4, 6, 8, 12, 16, 24, 32, 64, 128, 256))]
    r.raw["memory_chase"] = flat
    lat = l3_and_memory_latency(r, 2 << 20, 480 << 20)
    assert "memory" not in lat and "share_bytes" not in lat["L3"]
    r.raw["memory_chase"] = chase[:-2]      # a tail of 32 and 64 MiB: two points, 2x apart
    assert l3_and_memory_latency(r, 2 << 20, 480 << 20)["memory"]["mib"] == [32, 64]
    quick = [pt(4, 35.6), pt(6, 40.6), pt(8, 45.7), pt(16, 57.7), pt(128, 105.5), pt(256, 103.8)]
    r.raw["memory_chase"] = quick           # the quick probe's points
    lat = l3_and_memory_latency(r, 2 << 20, 480 << 20)
    assert lat["memory"]["mib"] == [128, 256] and lat["L3"]["share_between"] == [16, 128, 105.5]
    r.raw["memory_chase"] = chase[:8]       # the chase ends at 32 MiB: a tail of one point
    assert "memory" not in l3_and_memory_latency(r, 2 << 20, 480 << 20)
    r.raw["memory_chase"] = chase[:7] + [pt(32, 100.6), pt(48, 104.0)]   # 1.5x in footprint
    assert "memory" not in l3_and_memory_latency(r, 2 << 20, 480 << 20)


def _random_like_report(conf="medium"):
    """The Zen 4 host (2026-11-26): conflict sets 128 x 24 = 3072, the stride-1 trials' rise at
    2403 pages, the envelope past it random-like (share 0.29), a capacity sweep past the L2."""
    r = _report(l2=3072, conf=conf)
    r.raw["summary"].append({"name": "L2 DTLB organisation", "value": None, "unit": "", "spread": None,
                             "confidence": "high", "cpuid": None, "disagrees": False,
                             "note": "24-way, 128 sets, set = VPN bits [0, 1, 2, 3, 4, 5, 6]"})
    r.raw["l2_replacement"] = {"shape": {"share": 0.29, "shape": "RandomLike", "at": 2595, "top_at": 3364,
                                         "plateau": 2.2, "at_ns": 4.0, "top_ns": 9.0},
                               "sets": 128, "chain_pages": 2403}

    def row(n, ex):
        s = {"median": ex, "q1": ex, "q3": ex}
        return {"n": n, "excess": s, "test_low": ex + 1.0, "control_low": 1.5}

    r.raw["dtlb_sweep"] = [row(2112, 2.2), row(4224, 14.0), row(4871, 16.0), row(5793, 19.0), row(6889, 21.0)]
    return r


def test_a_random_like_l2_is_written_random_with_the_ways_a_random_chain_keeps(tmp_path):
    """Criteria written before the first run: 2403 pages over 128 sets is 18.8 a set, rounded down
    to 18 ways (2304 entries), replacement random, the level's 3072 named in the source and its 24
    ways in hardware_ways, which the host tools color for (128 x 24, 3072 entries, read back from
    the written file); without the reading, or with an unclear L2 line, the level is written as
    before (LRU, 24 ways or the base's, no hardware_ways)."""
    from tlblab import machine_config
    from tlblab.host.geometry import from_machine
    from tlblab.probe import host_machine, host_toml, write_atomic

    m = host_machine(_random_like_report())
    l2d = next(t for t in m["tlb"] if t["name"] == "L2D")
    assert (l2d["entries"], l2d["ways"], l2d["replacement"]) == (2304, 18, "random"), l2d
    assert l2d["hardware_ways"] == 24
    assert "18 of the 24 ways written" in l2d["source"] and "128 x 24 = 3072" in l2d["source"]
    assert "technique" not in m  # a random level takes no foreign entries (LRU's closed form)
    path = tmp_path / "host.toml"
    write_atomic(str(path), host_toml(_random_like_report()))
    g = from_machine(machine_config(str(path)), str(path))
    assert (g.sets, g.ways, g.l2_entries) == (128, 24, 3072), g
    r = _random_like_report()
    del r.raw["l2_replacement"]
    l2d = next(t for t in host_machine(r)["tlb"] if t["name"] == "L2D")
    assert (l2d["entries"], l2d["ways"], l2d["replacement"]) == (3072, 24, "lru")
    assert "hardware_ways" not in l2d
    l2d = next(t for t in host_machine(_random_like_report(conf="unclear"))["tlb"] if t["name"] == "L2D")
    assert l2d["replacement"] == "lru" and "not measured clearly" in l2d["source"]
    assert "hardware_ways" not in l2d


def test_an_l2_whose_organisation_is_read_is_written_with_the_sets_read():
    """Zen 5, the host tools' quick probe (2026-11-29 19:19 UTC): 4078 entries, organisation
    16-way, 256 sets; rounded to whole sets of 16 ways it was written as 4080 = 255 sets, which
    `tlblab host coloring` refused. The written level is the 256 sets and 16 ways read."""
    from tlblab.host.geometry import from_machine
    from tlblab.probe import host_machine

    r = _report(l1=96, l2=4078)
    r.raw["summary"].append({"name": "L2 DTLB organisation", "value": None, "unit": "", "spread": None,
                             "confidence": "medium", "cpuid": None, "disagrees": False,
                             "note": "16-way, 256 sets, set = VPN bits [0, 1, 2, 3, 4, 5, 6, 7]"})
    m = host_machine(r)
    l2d = next(t for t in m["tlb"] if t["name"] == "L2D")
    assert (l2d["entries"], l2d["ways"]) == (4096, 16), l2d
    g = from_machine(m, "probed")
    assert (g.sets, g.ways) == (256, 16)


def test_an_l2_read_from_the_conflict_sets_keeps_their_ways_when_the_organisation_line_is_unclear():
    """Zen 4 batch 5 run f1 (2026-11-26): the entries line read "from the conflict sets: 128 sets x
    24 ways = 3072", the organisation line was unclear (the trials disagreed at one stride), and
    the file was written with the base's 16 ways: 3072 x 16 = 192 sets, a geometry nothing read,
    random replacement of which keeps 3072 pages (--validate -61% at 2896 pages). Criteria
    written before the first run: the written level is the random chain's 18 of the conflict
    sets' 24 ways over 128 sets, hardware_ways 24, and the source says where the ways came from."""
    from tlblab.probe import host_machine

    r = _random_like_report()
    for x in r.raw["summary"]:
        if x["name"] == "L2 DTLB organisation":
            x["confidence"] = "unclear"
            x["note"] = "unclear: the trials disagree at a stride of 256 pages; their vote reads as 24-way, 128 sets"
        if x["name"].startswith("L2 DTLB entries"):
            x["note"] = "from the conflict sets: 128 sets × 24 ways = 3072 (capacity × stride 3072..3456)"
    l2d = next(t for t in host_machine(r)["tlb"] if t["name"] == "L2D")
    assert (l2d["entries"], l2d["ways"], l2d["hardware_ways"], l2d["replacement"]) == (2304, 18, 24, "random"), l2d
    assert "24 ways measured (conflict sets, with the entries" in l2d["source"], l2d["source"]


def test_the_walkers_latency_of_a_random_level_counts_the_accesses_that_still_hit():
    """Under random replacement a chain of 1.8-2.9x the level's entries still hits on part of its
    accesses: the written walker makes the simulated cost per access at the median sweep point
    (5793 pages, 19.0 ns of excess) what the probe measured, within 1.5 cycles a walk."""
    from tlblab import simulate
    from tlblab.probe import host_machine

    m = host_machine(_random_like_report())
    ghz = m["frequency_mhz"] / 1000
    l2d = next(t for t in m["tlb"] if t["name"] == "L2D")
    n = 5793
    a = simulate(m, f"chase:pages={n},accesses={24 * n}", seed=0).total
    b = simulate(m, f"chase:pages={n},accesses={48 * n}", seed=0).total
    walks = b["walks"] - a["walks"]
    share = walks / (24 * n)
    assert 0.3 < share < 0.98, share
    per_access = l2d["latency"] + share * (b["walk_cycles"] - a["walk_cycles"]) / walks
    assert abs(per_access - 19.0 * ghz) <= 1.5 * share + 0.5, (per_access, 19.0 * ghz, share)


def test_validate_says_when_the_host_ran_at_another_speed_than_when_the_probe_measured_it():
    """Zen 4 batch 6 run f3 (2026-11-26): the probe read 1.157 ns for an L1 DTLB hit, the
    validation sweep 1.08 at 17-66 pages. Criteria written before the first run: a note naming
    both and "7% slower"; none for run f2's 1.084 against 1.10-1.16 (its median 1.12, 3.3% off:
    the first run took a 3% tolerance and noted it; the tolerance is now 5%, see the function)."""
    from tlblab.probe import validation_speed_note

    r = _report(l1=72)
    hit = next(x for x in r.raw["summary"] if x["name"].startswith("load, L1 DTLB hit"))

    def rows(ns):
        return [{"pages": n, "measured_ns": x} for n, x in zip([17, 19, 23, 27, 33, 38, 45, 54, 66, 76], ns)]

    hit["value"] = 1.157
    note = validation_speed_note(r, rows([1.08, 1.08, 1.08, 1.10, 1.08, 1.08, 1.10, 1.08, 1.10, 2.98]))
    assert note is not None and "1.16 ns" in note and "1.08 ns" in note and "7% slower" in note, note
    assert "up to 36 pages" in note  # only the points below half the L1 DTLB
    hit["value"] = 1.084
    assert validation_speed_note(r, rows([1.14, 1.10, 1.11, 1.12, 1.16, 1.14, 1.11, 1.18, 1.15, 3.0])) is None
    assert validation_speed_note(r, rows([1.14, 1.10])) is None  # too few points to say
