"""Checkpoints through the Python API and the CLI (issue 59, docs/checkpoints.md): a run saved
where its region of interest begins and restored ends as the uninterrupted one on a machine of
several hardware threads; a technique given to the restored run starts there; `tlblab.checkpoint`
saves once per content; every bad file or combination is one line, exit 2, and no file left."""

import json
import subprocess
import sys

import tlblab
import tlblab.trace

CLI = [sys.executable, "-m", "tlblab.cli"]
SPEC = "gups:log2_words=15,updates=30000,populate=1"


def _two_cores():
    m = tlblab.machine_config("zen3")
    m["cores"] = 2
    m["name"] = "zen3-2c"
    return m


def test_a_run_restored_at_the_roi_ends_as_the_uninterrupted_one(tmp_path):
    m = _two_cores()
    f = tmp_path / "roi.ckpt"
    whole = tlblab.simulate(m, SPEC)
    saved = tlblab.simulate(m, SPEC, checkpoint_at="roi", save_checkpoint=f)
    restored = tlblab.simulate(m, SPEC, from_checkpoint=f)
    assert f.is_file()
    # Saved at the first batch of records (16,384) read after the population: most of the run is after.
    assert tlblab.checkpoint_info(f)["records"] == 16384
    assert saved.stats == whole.stats
    assert restored.stats == whole.stats
    # The populate phase is the warm-up: the checkpoint sits after it.
    assert restored.stats["warmup"]["references"] == (8 << 15) // 4096


def test_a_restored_trace_file_seeks_to_the_checkpoint_and_ends_as_the_uninterrupted_run(tmp_path):
    # A native trace file goes on from the checkpoint's record by its block index
    # (`RecordSource::skip_records`), not by reading the records before it: the run's counters
    # are the uninterrupted run's, at the roi and at a count of references alike.
    trace = tmp_path / "gups.tlbt"
    tlblab.trace.generate("gups", trace, seed=0, log2_words=15, updates=30000, populate=1)
    m = _two_cores()
    whole = tlblab.simulate(m, str(trace))
    for at in ("roi", 50_000):
        f = tmp_path / f"{at}.ckpt"
        tlblab.simulate(m, str(trace), checkpoint_at=at, save_checkpoint=f)
        assert tlblab.checkpoint_info(f)["records"] > 0
        assert tlblab.simulate(m, str(trace), from_checkpoint=f).stats == whole.stats


def test_a_technique_given_to_the_restored_run_starts_at_the_checkpoint(tmp_path):
    m = _two_cores()
    path = tlblab.checkpoint(m, SPEC, at="roi", directory=tmp_path)
    again = tlblab.checkpoint(m, SPEC, at="roi", directory=tmp_path)
    assert again == path and len(list(tmp_path.iterdir())) == 1
    base = tlblab.simulate(m, SPEC, from_checkpoint=path)
    helped = tlblab.simulate(m, SPEC, from_checkpoint=path, technique="pt_baker:mode=kernel,stride=8")
    counters = helped.stats["technique"]["counters"]
    assert counters["range_pages"] == (8 << 15) // 4096
    assert counters["sweeps"] > 0 and counters["pte_reads"] > 0
    # The application's references are the same records either way; the helper ran only in the
    # window after the checkpoint (it starts at the application's time, not at 0).
    app = base.stats["threads"]["0"]
    assert helped.stats["threads"]["0"]["references"] == app["references"]
    assert 0 < counters["helper_busy_cycles"] <= app["cycles"]


def _cli(*args):
    return subprocess.run(CLI + ["simulate", "--machine", "zen3", "--workload", SPEC, *args],
                          capture_output=True, text=True)


def test_the_cli_saves_restores_and_refuses_bad_checkpoints_in_one_line(tmp_path):
    f = tmp_path / "c.ckpt"
    a = _cli("--checkpoint-at", "roi", "--save-checkpoint", str(f), "--json")
    assert a.returncode == 0, a.stderr
    b = _cli("--from-checkpoint", str(f), "--json")
    assert b.returncode == 0, b.stderr
    strip = lambda out: {k: v for k, v in json.loads(out).items() if k != "run"}  # noqa: E731
    assert strip(a.stdout) == strip(b.stdout)

    def one_line_error(p, *needles):
        assert p.returncode == 2, p.stdout + p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and all(n in lines[0] for n in needles), lines

    bad = tmp_path / "bad.ckpt"
    data = bytearray(f.read_bytes())
    data[-1] ^= 0x40
    bad.write_bytes(bytes(data))
    one_line_error(_cli("--from-checkpoint", str(bad)), str(bad), "corrupt engine state: expected checksum")
    bad.write_bytes(b"hello")
    one_line_error(_cli("--from-checkpoint", str(bad)), "not a tlblab checkpoint")
    other = subprocess.run(CLI + ["simulate", "--machine", "zen3", "--workload",
                                  "gups:log2_words=15,updates=31000,populate=1", "--from-checkpoint", str(f)],
                           capture_output=True, text=True)
    one_line_error(other, "saved on workload 'gups:log2_words=15,updates=30000,populate=1'")
    one_line_error(_cli("--from-checkpoint", str(f), "--tlb-only"), "saved with other run options")
    late = tmp_path / "late.ckpt"
    one_line_error(_cli("--checkpoint-at", "10000000", "--save-checkpoint", str(late)),
                   "--checkpoint-at 10000000: the run ended at reference", "nothing saved")
    assert not late.exists()
    one_line_error(_cli("--checkpoint-at", "roi"), "give --save-checkpoint FILE too")
    one_line_error(_cli("--checkpoint-at", "soon", "--save-checkpoint", str(late)),
                   "expected `roi` or a count of references (e.g. 2M), found 'soon'")
    one_line_error(_cli("--checkpoint-at", "roi", "--save-checkpoint", str(late), "--technique", "pt_baker"),
                   "a run with a technique cannot be saved")
    assert not late.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.ckpt", "c.ckpt"]
