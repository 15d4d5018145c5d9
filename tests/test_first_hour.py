"""A newcomer's first hour (issue 48): interrupts, bad numbers, one spec parser, the study's
edges, labelled JSON.

Interrupt tests send SIGINT to a real `tlblab` process, as a terminal's Ctrl-C does, and check
that it stops promptly with status 130 and leaves no output file behind. Each run they
interrupt would otherwise take minutes, so the bound on the time to stop (a few seconds, for a
busy machine) tells a working check from none.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tlblab.cli import main

CLI = [sys.executable, "-m", "tlblab.cli"]
# Far longer than any test waits: minutes of work at any plausible rate.
ENDLESS = "random:pages=262144,accesses=4G"


def run_cli(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(argv), capture_output=True, text=True, timeout=120, **kw)


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    """Reads a pty until `needle` appears (or the time is up); returns what was read."""
    seen = b""
    end = time.monotonic() + timeout
    while needle not in seen and time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def _interrupt(p: subprocess.Popen, group: bool = False) -> float:
    """SIGINT to the process (or its whole process group, as a terminal sends Ctrl-C); the
    seconds it took to exit."""
    t0 = time.monotonic()
    if group:
        os.killpg(p.pid, signal.SIGINT)
    else:
        p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        pytest.fail("still running 30 s after SIGINT")
    return time.monotonic() - t0


def _wait_for(pred, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            pytest.fail("timed out waiting for the process to get going")
        time.sleep(0.05)


# --- Ctrl-C -----------------------------------------------------------------------------------

def test_simulate_on_a_terminal_shows_progress_and_stops_on_ctrl_c():
    """Given a simulation of billions of references with stderr on a terminal, the progress
    line appears (references, rate, time left), and SIGINT stops it within seconds with 130."""
    master, slave = pty.openpty()
    p = subprocess.Popen(CLI + ["simulate", "--tlb-only", "--workload", ENDLESS],
                         stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    try:
        seen = _read_until(master, b"s left", timeout=60)
        assert b"simulate:" in seen and b"references" in seen and b"M refs/s" in seen, seen
        took = _interrupt(p)
        rest = _read_until(master, b"interrupted", timeout=5)
    finally:
        os.close(master)
    assert p.returncode == 130
    assert b"tlblab: interrupted" in rest and b"Traceback" not in rest, rest
    assert took < 5, f"took {took:.1f} s to stop"
    assert p.stdout.read() == ""


def test_trace_gen_interrupted_leaves_no_file(tmp_path):
    """Given `trace gen` writing a multi-gigabyte trace, Ctrl-C (to the process group, as a
    terminal sends it) stops it, exit 130, and neither the trace nor a temporary file stays."""
    out = tmp_path / "big.tlbt"
    p = subprocess.Popen(CLI + ["trace", "gen", "random", "-p", "accesses=4G", "-o", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    # Started writing: its temporary file is there and has grown past the header.
    _wait_for(lambda: any(f.stat().st_size > 1 << 16 for f in tmp_path.iterdir()))
    took = _interrupt(p, group=True)
    err = p.stderr.read()
    assert p.returncode == 130, err
    assert err.strip() == "tlblab: interrupted"
    assert took < 5, f"took {took:.1f} s to stop"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.parametrize("group", [False, True], ids=["tlblab-only", "process-group"])
def test_trace_record_interrupted_leaves_no_file(tmp_path, group):
    """Given `trace record` of a program that never ends, SIGINT to tlblab alone, or to the
    whole group (valgrind dies of it too), ends with 130 and no trace that `trace info` would
    call complete."""
    out = tmp_path / "loop.tlbt"
    loop = tmp_path / "loop.sh"
    loop.write_text("#!/bin/sh\nwhile :; do :; done\n")
    loop.chmod(0o755)
    p = subprocess.Popen(CLI + ["trace", "record", "--no-progress", "-o", str(out), "--", "/bin/sh", str(loop)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    # The temporary trace appears before valgrind starts; give valgrind time to get the
    # program running (a block of the trace is written only every 256 Ki references).
    _wait_for(lambda: any(f.name != "loop.sh" for f in tmp_path.iterdir()), 60)
    time.sleep(2)
    assert p.poll() is None, p.stderr.read()
    took = _interrupt(p, group=group)
    err = p.stderr.read()
    assert p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err, err
    assert took < 5, f"took {took:.1f} s to stop"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["loop.sh"]


# --- numbers and specs ------------------------------------------------------------------------

@pytest.mark.parametrize("argv,flag", [
    (["simulate", "--seed", "-1"], "--seed"),
    (["simulate", "--seed", "100000000000000000000000"], "--seed"),
    (["simulate", "--max-references", "-5"], "--max-references"),
    (["simulate", "--max-references", "99999999999999999999999"], "--max-references"),
    (["trace", "head", "x.tlbt", "-n", "-1"], "-n"),
    (["trace", "gen", "random", "-o", "x.tlbt", "--seed", "-3"], "--seed"),
    (["study", "--seed", "1e23"], "--seed"),
])
def test_numeric_flags_out_of_range_are_one_message_naming_the_flag(capsys, argv, flag):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "non-negative integer" in err, err
    assert "Traceback" not in err


def test_counts_take_the_suffixes_of_workload_specs():
    """`--max-references 1k` is 1024, as `accesses=1k` is in a spec."""
    r = run_cli("simulate", "--tlb-only", "--workload", "random:pages=64,accesses=1M",
                "--max-references", "1k")
    assert r.returncode == 0, r.stderr
    assert " 1024 references" in r.stdout


@pytest.mark.parametrize("spec,msg", [
    ("random:pages=4096,pages=8192", "parameter 'pages' is given twice"),
    ("random:pages=64,,accesses=10", "empty item"),
    ("random:pages=64,", "empty item"),
    ("random:accesses=0", "make no references (accesses=0)"),
])
def test_bad_workload_specs_are_rejected(spec, msg):
    r = run_cli("simulate", "--tlb-only", "--workload", spec)
    assert r.returncode == 2, r.stdout
    assert msg in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_trace_gen_params_read_like_specs(tmp_path):
    """`-p pages=64k` has the suffix the README promises; a duplicate is an error, as in specs."""
    out = tmp_path / "s.tlbt"
    r = run_cli("trace", "gen", "strided", "-p", "pages=1k", "-p", "rounds=1", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "wrote 1,024 records" in r.stdout
    r = run_cli("trace", "gen", "strided", "-p", "pages=1k", "-p", "pages=2", "-o", str(out))
    assert r.returncode == 2 and "given twice" in r.stderr


def test_simulate_of_an_unknown_file_format_does_not_suggest_a_flag_it_lacks(tmp_path):
    f = tmp_path / "odd.bin"
    f.write_bytes(b"\x00\x01\x02 not a trace")
    r = run_cli("simulate", "--workload", str(f))
    assert r.returncode == 2
    assert "use --from" not in r.stderr and "tlblab trace convert --from" in r.stderr, r.stderr


def test_machine_errors_name_ranges_in_words(tmp_path):
    text = run_cli("presets", "zen3").stdout.replace("entries = 64", "entries = -1", 1)
    m = tmp_path / "m.toml"
    m.write_text(text)
    r = run_cli("simulate", "--machine", str(m))
    assert r.returncode == 2
    assert "expected a non-negative integer" in r.stderr and "usize" not in r.stderr, r.stderr
    r = run_cli("simulate", "--os", "asid_bits=x")
    assert r.returncode == 2
    assert "u8" not in r.stderr and "from 0 to 255" in r.stderr, r.stderr


# --- the study --------------------------------------------------------------------------------

def test_study_takes_full_workload_specs(tmp_path):
    r = run_cli("study", "--reproductions", "none", "--machines", "zen3", "--out", str(tmp_path),
                "--workloads", "random:pages=512,accesses=10k,chase:pages=64,accesses=2k")
    assert r.returncode == 0, r.stderr
    assert "[1/2] zen3 × random:" in r.stderr and "accesses=10240" in r.stderr
    assert "[2/2] zen3 × chase:" in r.stderr
    # The study's columns are explained under its table.
    assert "refs/walk" in r.stdout and "page-table entries read per walk" in r.stdout
    # CSVs get the umask's mode, not the temporary file's 0600.
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "summary.csv").stat().st_mode & 0o777 == 0o666 & ~umask


def test_study_rejects_a_bad_spec_before_any_run(tmp_path):
    r = run_cli("study", "--reproductions", "none", "--machines", "zen3", "--out", str(tmp_path), "--workloads", "chase,random:pages=0")
    assert r.returncode == 2
    assert "unknown workload" not in r.stderr and "random" in r.stderr and "[1/" not in r.stderr, r.stderr


def test_study_checks_out_is_writable_before_running(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = run_cli("study", "--machines", "zen3", "--workloads", "chase", "--out", str(blocker / "sub"))
    assert r.returncode == 2
    assert "--out" in r.stderr and "[1/" not in r.stderr, r.stderr


def test_study_runs_the_seed_002_workloads_on_x86_without_arm_kernel_sections(tmp_path):
    """`make run` (every default workload on every preset) must end clean: the seed 002 workloads
    map ARM Linux's kernel with 1 MiB sections, which x86 page tables cannot map, so on x86 the
    study runs them with kernel=0 and says so; on the SA-1100 they keep their kernel path."""
    r = run_cli("study", "--reproductions", "none", "--machines", "zen3,sa1100", "--out", str(tmp_path),
                "--workloads", "lat_ctx:rounds=2,l4_ipc:ipcs=100")
    assert r.returncode == 0, r.stderr
    assert "zen3 × lat_ctx:rounds=2,kernel=0" in r.stderr and "zen3 × l4_ipc:ipcs=100,kernel=0" in r.stderr
    on_sa1100 = [ln for ln in r.stderr.splitlines() if "] sa1100 × " in ln]
    assert len(on_sa1100) == 2 and not any("kernel=0" in ln for ln in on_sa1100), r.stderr
    assert "on zen3: the seed 002 workloads with kernel=0" in r.stdout
    assert "not run" not in r.stderr
    # Asked for by name, the kernel path is the user's choice: the run is reported, not adapted.
    r = run_cli("study", "--reproductions", "none", "--machines", "zen3", "--out", str(tmp_path / "k"),
                "--workloads", "lat_ctx:rounds=2,kernel=1")
    assert r.returncode == 1, r.stderr
    assert "not run: zen3 × lat_ctx:kernel=1,rounds=2: page size 1MiB is not supported" in r.stderr
    assert "Traceback" not in r.stderr and "No columns" not in r.stdout


def test_sa1100_runs_gups_at_the_study_size(tmp_path):
    """The default set on the smallest preset (32 MB) runs clean: gups at the study's size fits."""
    r = run_cli("study", "--reproductions", "none", "--machines", "sa1100", "--workloads", "gups", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "not run" not in r.stderr


# --- output -----------------------------------------------------------------------------------

def test_simulate_json_names_levels_and_sources():
    r = run_cli("simulate", "--workload", "random:pages=64,accesses=1k", "--json")
    d = json.loads(r.stdout)
    core = d["cores"][0]
    assert [lv["level"] for lv in core["tlb"]] == d["tlb_levels"]
    assert [lv["level"] for lv in core["cache"]] == d["cache_levels"]
    assert list(core["walk_refs_by_source"]) == d["sources"]
    assert sum(core["data_by_source"].values()) == core["references"]


def test_tlb_only_output_says_hits_cost_nothing_by_design():
    r = run_cli("simulate", "--tlb-only", "--workload", "random:pages=64,accesses=1k")
    assert "first-level hit costs 0 cycles by design" in r.stdout


def test_control_characters_in_messages_are_escaped(tmp_path):
    """An escape sequence in a corrupt file or an argument reaches the terminal as text."""
    r = run_cli("simulate", "--workload", "ran\x1b[2Jdom")
    assert r.returncode == 2
    assert "\x1b" not in r.stderr and "ran\\x1b[2Jdom" in r.stderr, r.stderr
    f = tmp_path / "c.txt"
    f.write_bytes(b"I  zz\x1b[31m\x9b,4\n")
    r = run_cli("simulate", "--workload", str(f))
    assert r.returncode == 2
    assert "\x1b" not in r.stderr and "\x9b" not in r.stderr, r.stderr


# --- make -------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_does_not_rebuild_an_extension_built_from_the_current_sources():
    """After `make setup` (which `make test` runs before pytest), the extension's stamp is newer
    than every Rust source, so `make test` goes straight to testing: `make -q ext` says "up to
    date". (A failure here after editing Rust without `make` means the extension is stale.)"""
    r = subprocess.run(["make", "-q", "ext"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, "make would rebuild the extension: " + subprocess.run(
        ["make", "-n", "ext"], cwd=ROOT, capture_output=True, text=True).stdout
