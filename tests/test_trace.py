"""`tlblab trace ...` and `tlblab.trace`: capture, conversion, inspection, bad input.

Each test states the behaviour it checks; the valgrind captures are of tiny Debian programs and
take about a second each.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tlblab import trace

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "tlblab.cli", *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"tlblab {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


LACKEY = """==42== Lackey, an example Valgrind tool
I  04001000,3
 L 1fff000758,8
 M 0421a2c0,4
 S 04223ff8,8
I  04001003,7
 L 04222ffc,8
"""


@pytest.fixture()
def lackey_file(tmp_path):
    p = tmp_path / "small.txt"
    p.write_text(LACKEY)
    return p


@needs_valgrind
def test_record_in_its_own_pid_namespace_runs_the_program_as_pid_one_and_keeps_its_maps(tmp_path):
    # Seed 004's troff formats its pid into memory (issue 89): `own_pid_namespace` runs Valgrind,
    # and so the program, as pid 1 of a namespace of its own on every machine. The maps poller
    # follows the wrapper's child, so the footer still names the program's mappings.
    from tlblab import _native

    words, why = _native.pid_namespace_wrapper()
    if why:
        pytest.skip(why)
    for tool in ("lackey", "tlblab"):
        out, said = tmp_path / f"{tool}.tlbt", tmp_path / f"{tool}.txt"
        r = trace.record(["/bin/sh", "-c", "echo $$; sleep 0.2"], out, tool=tool, stdout=said,
                         own_pid_namespace=True)
        assert r["exit_status"] == 0 and said.read_text().split() == ["1"], (tool, said.read_text())
        assert any("ld-linux" in m["name"] for m in trace.info(out).get("mappings", [])), tool
    trace.record(["/bin/sh", "-c", "echo $$"], tmp_path / "own.tlbt", tool="lackey", stdout=tmp_path / "own.txt")
    assert (tmp_path / "own.txt").read_text().split() != ["1"]


@needs_valgrind
def test_record_captures_a_real_program_with_maps_and_command_line(tmp_path):
    out = tmp_path / "true.tlbt"
    r = cli("trace", "record", "-o", str(out), "--", "/bin/true")
    assert "recorded" in r.stdout and out.exists()
    d = trace.info(out)
    assert d["accesses"]["instr"] > 10_000  # ld.so start-up alone is tens of thousands
    assert d["accesses"]["load"] > 0 and d["accesses"]["store"] > 0
    assert d["meta"]["argv"] == ["/bin/true"]
    assert d["meta"]["capture"]["tool"] == "valgrind-tlblab"
    assert d["footer"]["exit_status"] == 0
    # The maps snapshot attributes the footprint to real mappings (ld.so at least).
    assert any("ld-linux" in m["name"] for m in d.get("mappings", [])), d.get("mappings")


@needs_valgrind
def test_record_limit_captures_a_window_and_stops_the_program(tmp_path):
    out = tmp_path / "ls.tlbt"
    r = trace.record(["ls", "-lR", "/usr/share"], out, skip=5000, limit=20_000)
    assert r["killed_at_limit"] is True
    assert r["summary"]["accesses"] == 20_000
    assert trace.info(out)["accesses"]["total"] == 20_000


@needs_valgrind
def test_record_redirects_stdin_and_stdout_without_a_shell(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("hello tlblab\n" * 100)
    dst = tmp_path / "out.txt"
    out = tmp_path / "cat.tlbt"
    cli("trace", "record", "--stdin", str(src), "--stdout", str(dst), "-o", str(out), "--", "cat")
    assert dst.read_text() == src.read_text()
    assert trace.info(out)["meta"]["argv"] == ["cat"]


def test_lackey_import_splits_modify_and_keeps_64_bit_addresses(lackey_file, tmp_path):
    out = tmp_path / "a.tlbt"
    cli("trace", "convert", str(lackey_file), str(out))
    recs = trace.records(out, 100)
    kinds = [(r["kind"], r["vaddr"], r["size"]) for r in recs]
    assert kinds == [
        ("instr", 0x04001000, 3),
        ("load", 0x1FFF000758, 8),
        ("load", 0x0421A2C0, 4),
        ("store", 0x0421A2C0, 4),
        ("store", 0x04223FF8, 8),
        ("instr", 0x04001003, 7),
        ("load", 0x04222FFC, 8),
    ]
    # The last load (4 bytes before a page end, 8 bytes long) crosses a page boundary.
    assert trace.info(out)["page_crossing_accesses"] == 1


def test_lackey_round_trip_reproduces_the_text(lackey_file, tmp_path):
    t = tmp_path / "a.tlbt"
    back = tmp_path / "back.txt"
    cli("trace", "convert", str(lackey_file), str(t))
    cli("trace", "convert", str(t), str(back))
    assert back.read_text() == "".join(line + "\n" for line in LACKEY.splitlines()[1:])


@pytest.mark.parametrize("suffix", ["champsim", "champsim.xz", "champsim.gz"])
def test_champsim_export_and_import_preserve_fetches_loads_and_stores(lackey_file, tmp_path, suffix):
    t = tmp_path / "a.tlbt"
    cs = tmp_path / f"a.{suffix}"
    back = tmp_path / "b.tlbt"
    cli("trace", "convert", str(lackey_file), str(t))
    cli("trace", "convert", str(t), str(cs))
    if suffix == "champsim":
        assert os.path.getsize(cs) == 2 * 64  # two instructions, 64 bytes each
    cli("trace", "convert", str(cs), str(back), "--from", "champsim")
    got = [(r["kind"], r["vaddr"]) for r in trace.records(back, 100)]
    want = [(r["kind"], r["vaddr"]) for r in trace.records(t, 100)]
    assert got == want


def test_a_malformed_lackey_line_is_one_message_with_the_line_and_no_output_is_left(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("I  04001000,3\n L 0400zz00,8\n")
    out = tmp_path / "out.tlbt"
    p = cli("trace", "convert", str(bad), str(out), check=False)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert f"{bad}: line 2: bad hex digit" in p.stderr
    assert os.listdir(tmp_path) == ["bad.txt"]  # no output, no temporary file


def test_truncated_and_foreign_files_are_reported_with_byte_offsets(tmp_path):
    good = tmp_path / "w.tlbt"
    trace.generate("strided", good, pages=5000, rounds=100)
    data = good.read_bytes()
    cut = tmp_path / "cut.tlbt"
    cut.write_bytes(data[: len(data) // 2])
    p = cli("trace", "info", str(cut), check=False)
    assert p.returncode == 2 and "truncated" in p.stderr and "byte " in p.stderr
    wrong = tmp_path / "x.tlbt"
    wrong.write_bytes(b"\x7fELF" + bytes(100))
    p = cli("trace", "info", str(wrong), "--from", "tlbt", check=False)
    assert p.returncode == 2 and "byte 0: not a tlblab trace" in p.stderr
    ver = tmp_path / "v.tlbt"
    ver.write_bytes(data[:8] + b"\x07\x00" + data[10:])
    p = cli("trace", "head", str(ver), check=False)
    assert "unsupported trace format version 7" in p.stderr


def test_head_prints_records_from_an_offset(tmp_path):
    t = tmp_path / "s.tlbt"
    trace.generate("tlb_thrash", t, array_pages=16, n=100)
    lines = cli("trace", "head", str(t), "-n", "3", "--skip", "20").stdout.splitlines()
    assert len(lines) == 3 and lines[0].split()[0] == "20"
    assert all(" L 0x" in line for line in lines)


def test_every_catalog_workload_is_listed_with_its_seed_section():
    out = cli("trace", "workloads").stdout
    for w in trace.catalog():
        assert w["name"] in out
    seeds = " ".join(w["source"] for w in trace.catalog())
    for s in ("seed 000", "seed 001", "seed 002", "seed 003", "seed 004"):
        assert s in seeds


def test_gen_writes_a_workload_with_events_and_region_names(tmp_path):
    t = tmp_path / "ctx.tlbt"
    cli("trace", "gen", "lat_ctx", "-o", str(t), "-p", "procs=3", "-p", "kib=4", "-p", "rounds=2")
    d = trace.info(t)
    assert d["processes"] == [0, 1, 2]
    assert d["events"]["by_type"]["context_switch"] == 6
    assert d["meta"]["workload"]["params"]["procs"] == 3
    assert {r["name"] for r in d["regions"]} == {"text", "data", "stack"}
    p = cli("trace", "gen", "lat_ctx", "-o", str(t), "-p", "procz=3", check=False)
    assert p.returncode == 2 and "has no parameter 'procz'" in p.stderr


def test_decode_bench_reads_every_record(tmp_path):
    t = tmp_path / "g.tlbt"
    s = trace.generate("gups", t, log2_words=10, updates=5000)
    r = trace.decode_bench(t, 2)
    assert r["records"] == s["records"] and len(r["seconds"]) == 2


def test_a_fixed_folder_is_one_users_at_a_time_and_keeps_its_files_until_left(tmp_path, monkeypatch):
    # Two caches making the same entry (two checkouts, a test's two folders) name the same fixed
    # folder; each used to remove and remake it under the other. The second now waits.
    import threading

    monkeypatch.setattr(trace, "FIXED_ROOT", tmp_path)
    src = tmp_path / "prog"
    src.write_text("the program")
    second_in = threading.Event()
    seen = []

    def second():
        with trace.fixed_folder("entry", [src]) as d:
            second_in.set()
            seen.append(sorted(p.name for p in d.iterdir()))

    with trace.fixed_folder("entry", [src]) as d:
        (d / "output").write_text("the first run's")
        t = threading.Thread(target=second)
        t.start()
        assert not second_in.wait(0.5), "the second user entered while the first held the folder"
        assert (d / "output").read_text() == "the first run's"
    t.join(10)
    assert second_in.is_set() and seen == [["prog"]]  # a fresh folder: the first's output gone
    assert not (tmp_path / "entry").exists()
