"""Warm-up and region of interest, the rate block and ChampSim's import options (issue 47), from
Python and the CLI. The engine's exactness (a warm-up run equals the difference of two plain
runs in every counter, multi-core and events included) is `crates/tlblab-config/tests/warmup.rs`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tlblab
import tlblab.trace

CLI = [sys.executable, "-m", "tlblab.cli"]
SPEC = "random:pages=4096,accesses=20000"


def _minus(a, b):
    """a - b for the engine's stats dicts, number by number (lists of phases/jobs: a's tail)."""
    if isinstance(a, dict):
        # (frequency_mhz: the machine's clock, added by `tlblab.simulate`, is no counter.)
        return {k: _minus(v, b[k]) if k in b and k != "frequency_mhz" else v for k, v in a.items()}
    if isinstance(a, list):
        return [_minus(x, y) for x, y in zip(a, b)]
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        return a - b
    return a


def test_a_warmup_run_is_the_difference_of_two_plain_runs():
    whole = tlblab.simulate("zen3", SPEC, max_references=13_000).stats
    first = tlblab.simulate("zen3", SPEC, max_references=5_001).stats
    roi = tlblab.simulate("zen3", SPEC, warmup=5_001, roi=7_999)
    for stats in (whole, first, roi.stats):
        stats.pop("energy")  # the energy model's result over each run's counters (tlblab.energy), no counter
    assert roi.stats.pop("warmup") == {"references": 5_001, "cycles": first["cycles"]}
    assert roi.stats == _minus(whole, first)
    assert roi.total["references"] == 7_999
    assert roi.run["references"] == 13_000 and roi.run["roi_references"] == 7_999


def test_cli_warmup_and_rate_block():
    p = subprocess.run(CLI + ["simulate", "--machine", "zen3", "--workload", SPEC, "--warmup", "5001",
                              "--roi", "7999", "--json"], check=True, capture_output=True, text=True)
    d = json.loads(p.stdout)
    assert d["warmup"]["references"] == 5001 and d["total"]["references"] == 7999
    run = d["run"]
    assert run["references"] == 13000 and run["wall_seconds"] > 0 and run["refs_per_second"] > 0
    assert run["cpu_seconds"] >= 0
    human = subprocess.run(CLI + ["simulate", "--machine", "zen3", "--workload", SPEC, "--warmup", "5001"],
                           check=True, capture_output=True, text=True).stdout
    assert "warm-up: 5001 references before the region of interest" in human
    assert "rate: 20000 references simulated in " in human and " M refs/s" in human


@pytest.mark.parametrize("args, message", [
    (["--warmup", "30000"], "--warmup 30000: the warm-up is longer than the run (20000 references)"),
    (["--roi", "0"], "roi (--roi): expected a positive integer count, found 0"),
    (["--warmup", "10", "--roi", "5", "--max-references", "100"], "roi (--roi) and max_references"),
    (["--warmup", "100", "--max-references", "100"], "is within the warm-up (--warmup 100)"),
    (["--warmup-instructions", "10"], "need a ChampSim trace file"),
    (["--fetches", "off"], "need a ChampSim trace file"),
    (["--warmup", "5", "--simulation-instructions", "10"], "give one pair"),
])
def test_bad_warmup_values_are_one_line_and_exit_status_2(args, message):
    p = subprocess.run(CLI + ["simulate", "--workload", SPEC, *args], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert message in p.stderr
    assert "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["-5", "1.5", "lots"])
def test_negative_or_non_integer_warmup_is_rejected_by_the_parser(value):
    p = subprocess.run(CLI + ["simulate", "--workload", SPEC, "--warmup", value], capture_output=True, text=True)
    assert p.returncode == 2
    assert "--warmup: expected a non-negative integer" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("kwargs", [dict(warmup=-1), dict(warmup=1.5), dict(roi=0), dict(warmup=True)])
def test_python_rejects_bad_counts_naming_the_option(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        tlblab.simulate("zen3", SPEC, **kwargs)


def write_champsim(path, loads, seed=1):
    """A ChampSim trace (`input_instr`, 64 bytes a record, xz): one record per load, its ip
    stepping 4 bytes and its one source operand the load's address."""
    import lzma
    import random
    import struct

    rng = random.Random(seed)
    out = bytearray()
    for i in range(loads):
        addr = 0x1000_0000 + rng.randrange(2048) * 4096 + 8 * rng.randrange(512)
        out += struct.pack("<QBB2B4B2Q4Q", 0x40_0000 + 4 * i, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, addr, 0, 0, 0)
    path.write_bytes(lzma.compress(bytes(out)))
    return str(path)


@pytest.fixture(scope="module")
def champsim_trace(tmp_path_factory):
    """A ChampSim trace of 3000 records (a fetch and a load each), xz-compressed."""
    return write_champsim(tmp_path_factory.mktemp("cs") / "r.champsim.xz", 3000)


def test_champsim_instruction_warmup_is_the_difference_of_two_instruction_limited_runs(champsim_trace):
    whole = tlblab.simulate("champsim", champsim_trace, simulation_instructions=2_500).stats
    first = tlblab.simulate("champsim", champsim_trace, simulation_instructions=1_000).stats
    roi = tlblab.simulate("champsim", champsim_trace, warmup_instructions=1_000, simulation_instructions=1_500)
    warm = roi.stats.pop("warmup")
    assert warm["references"] == first["total"]["references"] == 2_000
    assert roi.stats == _minus(whole, first)
    assert roi.total["references"] == 3_000  # 1500 instructions: a fetch and a load each


def test_champsim_fetches_off_counts_data_references(champsim_trace):
    on = tlblab.simulate("champsim", champsim_trace)
    off = tlblab.simulate("champsim", champsim_trace, fetches=False, max_references=1_000)
    assert on.total["references"] == 6_000 and on.total["instr_references"] == 3_000
    assert off.total["references"] == 1_000 and off.total["instr_references"] == 0


def test_champsim_warmup_past_the_trace_is_an_error(champsim_trace):
    with pytest.raises(ValueError, match="--warmup-instructions 5000: the trace has fewer instructions"):
        tlblab.simulate("champsim", champsim_trace, warmup_instructions=5_000)


def test_a_sweep_grid_takes_warmup_and_roi_and_refuses_a_bad_one():
    from tlblab.errors import UserError
    from tlblab.sweeps import expand, parse
    from tlblab.sweeps.run import run_point

    g = parse({"base": {"machine": "zen3", "workload": SPEC, "warmup": 5001}, "axes": {"roi": [7999, 100]}})
    pts = expand(g, check=False)
    assert [(p.warmup, p.roi) for p in pts] == [(5001, 7999), (5001, 100)]
    out = run_point(pts[0].task())
    assert out["metrics"]["references"] == 7999
    with pytest.raises(UserError, match=r"roi \(--roi\): expected a positive integer count, found 0"):
        expand(parse({"base": {"machine": "zen3", "workload": SPEC}, "axes": {"roi": [0]}}), check=False)
