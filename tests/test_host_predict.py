"""Tests of `tlblab host predict` (python/tlblab/host/predict.py, docs/host-predict.md): the mosaics'
windows, errors as one line with exit status 2, and a tiny run for function, not accuracy: one
program, two mosaics, one repetition, its capture and its simulation (seconds)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from tlblab import cli
from tlblab.errors import UserError
from tlblab.host import predict

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
THP_USABLE = THP.exists() and "[never]" not in THP.read_text()


def run_cli(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_given_a_used_heap_when_mosaics_are_cut_then_windows_are_2mib_aligned_and_inside_the_pool():
    used, pool = 300 * predict.MIB + 12345, 1 << 30
    for mo in predict.MOSAICS:
        for s, e in predict.windows(mo, used, pool):
            assert s % predict.HUGE == 0 and e % predict.HUGE == 0 and 0 <= s < e <= pool
    assert predict.windows("4k", used, pool) == []
    assert predict.windows("2m", used, pool) == [(0, pool)]
    assert predict.windows("first-half", used, pool) == [(0, 150 * predict.MIB)]
    with pytest.raises(UserError, match="--mosaics: expected some of 4k, 2m"):
        predict.windows("3m", used, pool)


def test_a_layout_is_what_the_allocator_reads():
    text = predict.layout_text(predict.PROGRAMS["hashjoin"], [(0, 4 * predict.MIB)])
    assert "pool heap 1G\n" in text and "window heap 0x0 0x400000 2M\n" in text


def test_given_hugetlb_backing_when_a_layout_is_written_then_its_windows_say_hugetlb_and_end_at_the_used_heap():
    prog = predict.PROGRAMS["gups"]  # a 2 GiB pool
    used = 300 * predict.MIB + 12345  # rounded up: 302 MiB
    wins = predict.used_windows(predict.windows("2m", used, 2 << 30), used)
    assert wins == [(0, 302 * predict.MIB)] and predict.hugetlb_pages(wins) == 151
    two = [(0, 100 * predict.MIB), (400 * predict.MIB, 2 << 30)]
    assert predict.used_windows(two, used) == [(0, 100 * predict.MIB)]
    text = predict.layout_text(prog, wins, "hugetlb")
    assert text.endswith("pool heap 2G\nwindow heap 0x0 0x12e00000 2M hugetlb\n")
    # THP stays the default, written as before.
    assert predict.layout_text(prog, wins) == text.replace(" hugetlb\n", "\n")


def _fake_pool(path: Path, nr: int, free: int, resv: int = 0) -> Path:
    """A stand-in for /sys/kernel/mm/hugepages/hugepages-2048kB whose 'kernel' reserves nothing."""
    path.mkdir()
    for name, v in (("nr_hugepages", nr), ("free_hugepages", free), ("resv_hugepages", resv)):
        (path / name).write_text(f"{v}\n")
    return path


def test_the_hugetlb_reservation_refuses_with_the_reason_and_sets_the_pool_back(tmp_path, monkeypatch):
    # Enough free already: nothing written.
    pool = _fake_pool(tmp_path / "enough", nr=20, free=20, resv=4)
    with predict.hugetlb_reserved(16, pool=pool) as got:
        assert got == {"pages": 16, "nr_before": 20, "nr_during": 20}
    # Too few and not root: refused, saying what to write.
    pool = _fake_pool(tmp_path / "few", nr=4, free=4)
    monkeypatch.setattr(predict.os, "geteuid", lambda: 1000)
    with pytest.raises(UserError, match=r"need 16 free 2 MiB hugetlb pages and .* has 4; reserving them needs root "
                                        r"\(as root: echo 16 > .*nr_hugepages\)"):
        with predict.hugetlb_reserved(16, pool=pool):
            pass
    # Root, but the kernel gives none (this pool is a plain file): refused, and set back.
    monkeypatch.setattr(predict.os, "geteuid", lambda: 0)
    said: list[str] = []
    with pytest.raises(UserError, match=r"asked the kernel for 16 pages of 2 MiB \(nr_hugepages 4 -> 16\) to have 16 "
                                        r"free, it reserved 16 and has 4 free: its memory is too fragmented"):
        with predict.hugetlb_reserved(16, said.append, pool=pool):
            pytest.fail("the block must not run without its pages")
    assert (pool / "nr_hugepages").read_text() == "4\n" and said == ["hugetlb: nr_hugepages set back to 4"]
    # No pool of 2 MiB pages at all.
    with pytest.raises(UserError, match="this kernel has no pool of 2 MiB hugetlb pages"):
        with predict.hugetlb_reserved(1, pool=tmp_path / "none"):
            pass


def test_a_bad_backing_and_a_kernel_without_hugetlb_pages_are_one_line_with_status_2(capsys, tmp_path, monkeypatch):
    status, out, err = run_cli(capsys, "host", "predict", "--backing", "hugepages", "--out", str(tmp_path))
    assert status == 2 and err.strip().count("\n") == 0
    assert "--backing: expected thp or hugetlb, found 'hugepages'" in err
    monkeypatch.setattr(predict, "HUGETLB_2M", tmp_path / "hugepages-2048kB")
    status, out, err = run_cli(capsys, "host", "predict", "--backing", "hugetlb", "--out", str(tmp_path))
    assert status == 2 and err.strip().count("\n") == 0
    assert "--backing hugetlb: " in err and "this kernel has no pool of 2 MiB hugetlb pages" in err


def test_the_docs_layout_is_read_by_the_allocator_and_its_bad_line_is_the_allocators(tmp_path):
    # docs/host-predict.md's example layout and its example of a bad line, run under the preloaded
    # allocator (a program that does nothing: the layout is read and mapped at start; a hugetlb
    # window the kernel refuses is said on stderr, and the program still runs).
    import subprocess

    from tlblab.host import _runtime

    doc = (Path(__file__).resolve().parents[1] / "docs" / "host-predict.md").read_text()
    section = doc.split("## The mosaic allocator", 1)[1]
    layout = [ln[4:] for ln in section.split("Preloaded, it replaces")[0].splitlines()
              if ln.startswith("    pool ") or ln.startswith("    window ")]
    assert any(ln.split("#")[0].split()[-1] == "hugetlb" for ln in layout)
    lib = str(_runtime.executable("libtlblab_mosaic.so"))
    (tmp_path / "doc.layout").write_text("\n".join(layout) + "\n")
    p = subprocess.run(["/bin/true"], env=dict(os.environ, TLBLAB_MOSAIC=str(tmp_path / "doc.layout"),
                                                TLBLAB_MOSAIC_REPORT=str(tmp_path / "r.json"), LD_PRELOAD=lib),
                       capture_output=True, text=True)
    assert p.returncode == 0 and all(ln.startswith("tlblab mosaic: window heap") for ln in p.stderr.splitlines())
    bad = next(ln.strip() for ln in section.splitlines() if ln.startswith("    tlblab mosaic: run.layout:3:"))
    (tmp_path / "run.layout").write_text("pool heap 2G\n\nwindow heap 0 1G 1G\n")
    p = subprocess.run(["/bin/true"], env=dict(os.environ, TLBLAB_MOSAIC="run.layout", LD_PRELOAD=lib),
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and p.stderr == bad + "\n"


def test_unknown_program_and_mosaic_are_one_line_with_status_2(capsys, tmp_path):
    if not THP_USABLE:
        pytest.skip("THP is never here: the check of the host comes first")
    status, out, err = run_cli(capsys, "host", "predict", "--programs", "nosuch", "--out", str(tmp_path))
    assert status == 2 and err.strip().count("\n") == 0 and "--programs: expected some of" in err
    status, out, err = run_cli(capsys, "host", "predict", "--mosaics", "2m", "--out", str(tmp_path))
    assert status == 2 and "expected 4k among them" in err


@pytest.mark.skipif(not THP_USABLE, reason="THP is never here: no mosaic can happen")
def test_given_one_program_and_two_mosaics_when_predicted_then_rows_csv_and_the_mosaic_happened(capsys, tmp_path):
    status, out, err = run_cli(capsys, "host", "predict", "--tiny", "--programs", "hashjoin", "--mosaics",
                               "4k,2m", "--reps", "1", "--machine", "zen3", "--out", str(tmp_path), "--json")
    assert status == 0, err
    # The host condition beside THP's mode: the kernel had a free 2 MiB page to give (a fragmented
    # host's memory may have none, and then no mosaic happened to test).
    report = json.loads((tmp_path / "work" / "hashjoin-2m.report.json").read_text())
    if report["pools"]["heap"]["huge_kb"] == 0:
        pytest.skip("the kernel gave no 2 MiB page (memory too fragmented): no mosaic happened")
    res = json.loads(out)
    rows = {r["mosaic"]: r for r in res["rows"]}
    assert set(rows) == {"4k", "2m"}
    assert set(rows["4k"]) == {"program", "mosaic", "measured_s", "spread_s", "predicted_s", "error_pct",
                               "linear_error_pct"}
    # The measured point is its own prediction; the all-2 MiB run happened (or it would not count).
    assert rows["4k"]["predicted_s"] == rows["4k"]["measured_s"] and rows["4k"]["error_pct"] == 0
    assert rows["2m"]["measured_s"] is not None and rows["2m"]["measured_s"] > 0
    # 2 MiB pages cut simulated cycles: the prediction is below the measured 4 KiB point.
    assert rows["2m"]["predicted_s"] < rows["4k"]["measured_s"]
    csv_text = (tmp_path / "hashjoin.csv").read_text().splitlines()
    assert csv_text[0].startswith("program,mosaic,windows,runs") and len(csv_text) == 3
    # Every counted run's rounds, the raw data of both estimates: the quiet one lies at or below
    # the median one, both from the same rounds.
    rounds = list(csv.DictReader((tmp_path / "hashjoin.rounds.csv").open()))
    assert {r["mosaic"] for r in rounds} == {"4k", "2m"} and all(float(r["cpu_s"]) > 0 for r in rounds)
    # Each run's L3 state just before it (the LLC probe): a reading or, where the probe cannot run
    # here (one CPU, or the other CPU not answering within its 500 ms), nothing; where it runs now,
    # every counted run has one.
    assert all(r["llc_probe_ns"] == "" or float(r["llc_probe_ns"]) > 0 for r in rounds), rounds[:3]
    from tlblab.host.predict import llc_state

    if llc_state(min(os.sched_getaffinity(0))) is not None:
        assert all(r["llc_probe_ns"] != "" for r in rounds), rounds[:3]
    by_mosaic = {r["mosaic"]: r for r in csv.DictReader((tmp_path / "hashjoin.csv").open())}
    for mo in ("4k", "2m"):
        assert 0 < float(by_mosaic[mo]["quiet_s"]) <= float(by_mosaic[mo]["measured_s"]) * (1 + 1e-9)
    assert report["ok"] is True and report["pools"]["heap"]["huge_kb"] > 0
    # Where the 4 KiB pages lie (/proc/self/pagemap): frame numbers only as root.
    pm = json.loads((tmp_path / "work" / "hashjoin-4k.report.json").read_text())["pools"]["heap"]["pagemap"]
    assert pm["present_pages"] > 0 and pm["consecutive"] <= pm["neighbour_pairs"] < pm["pfn_pages"] + 1
    if os.geteuid() == 0:
        assert pm["pfn_pages"] == pm["present_pages"] and 1 <= pm["frames_2m"] <= pm["pfn_pages"]
    # Simulating again (no measurement): every simulation comes from the cache the run filled.
    status, out, err = run_cli(capsys, "host", "predict", "--tiny", "--simulate-only", "--programs", "hashjoin",
                               "--mosaics", "4k,2m", "--machine", "zen3", "--out", str(tmp_path))
    assert status == 0, err
    assert err.count("(kept in the cache)") == 2 and "hashjoin   2m" in out


@pytest.mark.skipif(os.geteuid() != 0 or not predict.HUGETLB_2M.is_dir(),
                    reason="not root, or no 2 MiB hugetlb pool: no hugetlb page can be reserved")
def test_given_hugetlb_backing_when_predicted_as_root_then_the_pages_were_hugetlb_and_the_pool_is_set_back(
        capsys, tmp_path):
    nr = (predict.HUGETLB_2M / "nr_hugepages").read_text()
    status, out, err = run_cli(capsys, "host", "predict", "--tiny", "--programs", "hashjoin", "--mosaics",
                               "4k,2m", "--reps", "1", "--machine", "zen3", "--backing", "hugetlb",
                               "--out", str(tmp_path), "--json")
    assert (predict.HUGETLB_2M / "nr_hugepages").read_text() == nr  # set back, whatever happened
    if status == 2 and "too fragmented" in err:
        pytest.skip("the kernel could not reserve the 2 MiB pages (memory too fragmented)")
    assert status == 0, err
    layout = (tmp_path / "work" / "hashjoin-2m.layout").read_text()
    assert layout.rstrip().endswith("2M hugetlb")
    report = json.loads((tmp_path / "work" / "hashjoin-2m.report.json").read_text())
    heap = report["pools"]["heap"]
    assert report["ok"] is True and report["refused_windows"] == 0 and heap["huge_kb"] == 0
    assert heap["hugetlb_kb"] > 0 and heap["hugetlb_kb"] == heap["want_hugetlb_kb"]
    assert [w["backing"] for w in report["windows"]] == ["hugetlb"] and report["windows"][0]["refused"] is None
    # The window ends at the used heap, rounded up to 2 MiB: what it reserved, not the 1 GiB pool.
    assert report["windows"][0]["end"] == -(-heap["used_bytes"] // predict.HUGE) * predict.HUGE
    rows = {r["mosaic"]: r for r in json.loads(out)["rows"]}
    assert rows["2m"]["measured_s"] is not None and rows["2m"]["predicted_s"] < rows["4k"]["measured_s"]
    assert "reserved" in err and "nr_hugepages set back to" in err


def test_quiet_seconds_is_the_lower_quartile_of_the_pooled_rounds_after_the_first():
    # Two runs of 5 rounds; the first round of each is left out, as `run_seconds` leaves it out.
    # Pooled: 10, 10, 10, 10, 14, 14, 14, 14: lower quartile 10, so 5 x 10; the runs' own medians
    # (12 and 12) would say 5 x 12: a slow phase over half of each run moves them and not this.
    runs = [(99.0, 10.0, 10.0, 14.0, 14.0), (99.0, 14.0, 14.0, 10.0, 10.0)]
    assert predict.quiet_seconds(runs) == 50.0
    assert predict.run_seconds(list(runs[0])) == 60.0
    assert predict.quiet_seconds([]) is None
    assert predict.quiet_seconds([(3.0,)]) == 3.0


def test_the_report_draws_predicted_against_measured_with_the_identity_line_and_says_when_there_is_nothing():
    from tlblab.report import host_predict

    rows = [{"program": "gups", "mosaic": m, "measured_s": 1.0 + i / 10, "predicted_s": 1.0 + i / 9,
             "error_pct": float(i), "linear_error_pct": 2.0 * i} for i, m in enumerate(("4k", "2m", "first-half"))]
    html = "".join(host_predict.figures({"rows": rows}, "host-predict"))
    assert html.startswith('<figure id="host-predict-figure"><svg') and "y = x" in html
    assert "No row" in "".join(host_predict.figures({"rows": []}, "host-predict"))


def test_a_run_is_its_rounds_after_the_first_by_their_median_and_a_bad_line_is_one_error():
    # The first round is the model's warm-up; one slow round (a burst on the other CPU) moves nothing.
    assert predict.run_seconds([0.9, 0.10, 0.11, 0.50, 0.10]) == pytest.approx(5 * 0.105)
    assert predict.run_seconds([0.2]) == 0.2
    wall, cpu, rounds = predict.parse_output(
        "gups", "roi_seconds=0.5 roi_cpu_seconds=0.4 rounds=2 checksum=7 round_cpu_seconds=0.25,0.15\n")
    assert (wall, cpu, rounds) == (0.5, 0.4, [0.25, 0.15])
    with pytest.raises(UserError, match="gups: expected a line roi_seconds="):
        predict.parse_output("gups", "roi_seconds=0.5 rounds=2\n")


def test_isolation_is_fifo_as_root_and_pinned_otherwise():
    assert predict.isolation() == ("fifo" if os.geteuid() == 0 else "pinned")
    assert set(predict.ISOLATION_TEXT) == {"fifo", "boost", "pinned"}


@pytest.mark.skipif(not THP_USABLE, reason="THP is never here: no 2 MiB page can be measured")
def test_the_host_page_check_measures_pagechase_and_both_host_page_sizes_predict_differently(tmp_path):
    # Tiny: 64k steps, 2 rounds, one run of each chase; a function check, not the verdict
    # (docs/host-predict.md has the measured one). Under 2 MiB host pages a guest 2 MiB page also
    # removes the misses, so the model's all-2 MiB / all-4 KiB ratio must be lower than under 4 KiB.
    from tlblab import machine_config

    got = predict.host_page_check(machine_config("zen3-virt"), cpu=sorted(os.sched_getaffinity(0))[-1],
                                  how="pinned", reps=1, work=tmp_path, size="tiny")
    assert got["host_page_size"] in ("4KiB", "2MiB")
    assert 0 < got["predicted_ratio"]["2MiB"] < got["predicted_ratio"]["4KiB"] <= 1.0
    assert got["measured_ratio"] > 0 and got["reach_ratio"] > 0
    assert got["host_page_size"] == ("2MiB" if got["reach_ratio"] < predict.REACH_RATIO_BELOW else "4KiB")
    assert {k: len(v) for k, v in got["times"].items()} == {"4k": 1, "2m": 1, "2m-small": 1}


@pytest.mark.skipif(not THP_USABLE or os.geteuid() != 0,
                    reason="needs 2 MiB pages and, as root, the page frames in /proc/self/pagemap")
def test_the_host_page_check_simulates_the_chase_with_its_own_runs_placement(tmp_path):
    # The model's half of the check runs after the measurement, on the guest placement of the
    # chase's own all-4 KiB run (as the programs' own_placement): the 1 GiB sample's placement is
    # not what the chase's heap gets (docs/lab/2026-12-01-issue90-intel-host.md, 5).
    from tlblab import machine_config
    from tlblab.host import guest_placement

    sample = {"placement": {"type": "clustered", "consecutive": 1.0}, "memtotal_bytes": guest_placement.memory_bytes(),
              "guest_bytes": 4 << 30, "source": "a test's placement"}
    got = predict.host_page_check(machine_config("zen3-virt"), cpu=sorted(os.sched_getaffinity(0))[-1],
                                  how="pinned", reps=1, work=tmp_path, size="tiny", placement=sample)
    assert got["placement"] is not None and "pagechase's median all-4 KiB run" in got["placement"]
    report = json.loads((tmp_path / "pagechase-4k.report.json").read_text())
    assert f"{report['pools']['heap']['pagemap']['pfn_pages']} pages in" in got["placement"]
    assert 0 < got["predicted_ratio"]["2MiB"] < got["predicted_ratio"]["4KiB"] <= 1.0


def test_the_runtime_cycles_leave_out_the_l1_hits_at_the_machines_l1_latencies():
    # sources as the engine orders them (caches, then memory): 100 fetches hit L1I (latency 4),
    # 10 loads L1D (5), 3 from L2 and 2 from memory stay; 1000 cycles in all.
    m = {"cache": [{"name": "L1I", "level": 1, "latency": 4}, {"name": "L1D", "level": 1, "latency": 5},
                   {"name": "L2", "level": 2, "latency": 12}]}
    stats = {"cycles": 1000, "sources": ["L1I", "L1D", "L2", "memory"],
             "total": {"data_by_source": [100, 10, 3, 2]}}
    assert predict.runtime_cycles(stats, m) == 1000 - 100 * 4 - 10 * 5


def test_pagechase_runs_its_chains_at_once_and_refuses_more_than_it_has_room_for():
    # CHAINS independent chases over the same cycle (tlblab.host.chase_study): every chain steps
    # STEPS / CHAINS times, so the reads a round are the same; more than 16 chains is one line, 2.
    import subprocess

    exe = str(predict._runtime.executable("hostpredict/pagechase"))
    for chains in ("1", "4"):
        p = subprocess.run([exe, "1024", "64k", chains, "2"], capture_output=True, text=True)
        assert p.returncode == 0 and "rounds=2" in p.stdout
    p = subprocess.run([exe, "1024", "64k", "17", "2"], capture_output=True, text=True)
    assert p.returncode == 2 and "CHAINS" in p.stderr and p.stderr.count("\n") == 1
    from tlblab.host import chase_study

    assert chase_study.variant(131072, 4).argv("full")[1:] == ["131072", "1M", "4", "8"]
    assert chase_study.variant(131072, 4).heap == "1024M" and chase_study.variant(1024, 1).heap == "256M"


def test_stream_reads_every_strideth_line_in_either_order_and_refuses_a_bad_region():
    # stream (tlblab.host.stream_study): its checksum is the sum, over rounds x sweeps, of the first
    # word of every STRIDE-th line of every 4 KiB piece, the words drawn from xorshift64*
    # (hp_common.h) in order; shuffling the pieces (SHUFFLE 1) reads the same lines.
    import subprocess

    def words(n):
        s, mask = 0x243F6A8885A308D3, (1 << 64) - 1
        for _ in range(n):
            s ^= s >> 12
            s = (s ^ (s << 25)) & mask
            s ^= s >> 27
            yield (s * 0x2545F4914F6CDD1D) & mask

    exe = str(predict._runtime.executable("hostpredict/stream"))
    w = list(words(64 * 1024 // 8))
    for stride, sweeps, shuffle in ((1, 1, "0"), (4, 3, "0"), (4, 3, "1"), (3, 1, "1")):
        p = subprocess.run([exe, "64K", str(sweeps), str(stride), shuffle, "2"], capture_output=True, text=True)
        assert p.returncode == 0 and "rounds=2" in p.stdout
        want = (2 * sweeps * sum(w[i] for i in range(len(w)) if i % 512 % (8 * stride) == 0)) & ((1 << 64) - 1)
        assert f"checksum={want} " in p.stdout
    for bad, what in ((["64", "1", "2", "0", "2"], "BYTES"), (["64K", "1", "1", "2", "2"], "SHUFFLE"),
                      (["64K", "1", "1", "0", "65"], "ROUNDS")):
        p = subprocess.run([exe, *bad], capture_output=True, text=True)
        assert p.returncode == 2 and what in p.stderr and p.stderr.count("\n") == 1
    from tlblab.host import stream_study

    prog, lines = stream_study.variant("8M:16:4")
    assert prog.argv("full")[1:] == ["8M", "16", "4", "0", "8"] and lines == 16 * (8 << 20) // 64 // 4
    assert stream_study.variant("8M:1:3:shuffled")[0].argv("full", 2)[1:] == ["8M", "1", "3", "1", "2"]
    assert stream_study.variant("8M:1:3")[1] == 2048 * 22  # lines 0, 3, ..., 63 of each piece
    assert prog.heap == "64M" and stream_study.variant("128M:1:1")[0].heap == "256M"
    for bad in ("8M:16", "8M:16:1:sorted", "6K:1:1"):
        with pytest.raises(UserError, match="--variants"):
            stream_study.variant(bad)
    assert stream_study.main(["--variants", "8M:16:1,8M:1", "--out", "/nonexistent/x"]) == 2


def test_the_guest_placement_statistics_and_the_models_expectations_are_what_they_count():
    from tlblab.host import guest_placement as gp

    # Two runs of consecutive frames in one 2 MiB frame, a third page 1 GiB away.
    st = gp.statistics_of([512, 513, 514, 901, 900, 512 * 512])  # a descending pair counts too
    assert st == {"pages": 6, "distinct_2m_frames": 2, "consecutive_neighbours": 3,
                  "span_bytes": (512 * 512 - 512 + 1) * 4096}
    guest = 8 << 30  # R = 4096 frames of 2 MiB
    assert gp.expected_distinct({"type": "sequential"}, 8192, guest) == 16
    # Random: the occupancy of 8192 pages in 4096 bins, R (1 - (1 - 1/R)^n) = 3542.
    assert gp.expected_distinct({"type": "clustered", "consecutive": 0.0}, 8192, guest) == pytest.approx(3542, abs=1)
    # Every page after the first following its predecessor: one run, one frame (of the model's start).
    assert gp.expected_distinct({"type": "clustered", "consecutive": 1.0}, 8192, guest) == pytest.approx(1.0)
    # The memory the runs are drawn from, solved back from the distinct frames they gave.
    clustered = {"type": "clustered", "consecutive": 0.5}
    d = gp.expected_distinct(clustered, 8192, 12 << 30)
    assert abs(gp.drawn_bytes(clustered, 8192, round(d), 24 << 30) - (12 << 30)) <= 8 << 20
    assert gp.drawn_bytes(clustered, 8192, 10, 24 << 30) == gp.DRAWN_FLOOR  # never below the floor
    assert gp.drawn_bytes(clustered, 8192, 8000, 24 << 30) == 24 << 30  # nor above the guest's memory


def test_the_guest_placement_is_measured_as_root_and_says_why_not_otherwise():
    from tlblab.host import guest_placement as gp

    got = gp.measure(pages=512)
    if got["placement"] is None:  # not root, or no pagemap: one reason, nothing applied
        assert got["source"] and gp.apply({"x": 1}, got, 1 << 36) == {"x": 1}
        return
    p = got["placement"]
    assert p["type"] == "clustered" and 0.0 <= p["consecutive"] <= 1.0
    assert got["stats"]["pages"] == 512 and 1 <= got["stats"]["distinct_2m_frames"] <= 512
    assert "/proc/self/pagemap" in got["source"]
    nested = gp.apply({"host_page_size": "4KiB"}, got, 1 << 36)
    assert nested["guest_placement"] == p and nested["guest_memory_bytes"] == got["guest_bytes"]


def test_a_simulation_is_kept_by_the_content_of_what_determines_it(tmp_path):
    # The same trace, machine and windows again: from the cache, the same numbers; a source text
    # changed: still the cache; the guest's placement changed: simulated afresh (and different).
    from tlblab import machine_config, trace as tt

    trace = tmp_path / "r.tlbt"
    tt.generate("random", trace, seed=1, pages=4096, accesses=20000)
    m = machine_config("zen3-virt")
    cache = tmp_path / "cache"
    first, kept = predict.simulate(m, trace, [], 10000, cache=cache)
    assert not kept and len(list(cache.glob("*.json"))) == 1
    again, kept = predict.simulate(dict(m, source="measured again"), trace, [], 10000, cache=cache)
    assert kept and again == first
    scattered = dict(m, virtualization=dict(m["virtualization"], guest_placement={"type": "random"},
                                            guest_placement_source="a test"))
    other, kept = predict.simulate(scattered, trace, [], 10000, cache=cache)
    assert not kept and other["cycles"] != first["cycles"]
    # A scattered guest's data pages need the host's PTEs of many more lines: walks cost more.
    assert other["total"]["walk_cycles"] > first["total"]["walk_cycles"]
    _, kept = predict.simulate(m, trace, [(0x1000_0000, 2 << 20, 21)], 10000, cache=cache)
    assert not kept and len(list(cache.glob("*.json"))) == 3


def test_given_a_machine_file_on_a_vm_then_it_is_treated_as_the_hosts_probe_and_a_preset_as_given(tmp_path, monkeypatch):
    # A run with `--machine` naming the probe's own file got no guest placement before 2026-12-01
    # (docs/lab/2026-12-01-issue90-intel-host.md): a file is this host's probe, a preset is as given.
    from tlblab import machine_config
    from tlblab.host import predict

    f = tmp_path / "host.toml"
    f.write_text(predict.paths.repository_file("presets/zen3-virt.toml", "the zen3-virt preset").read_text())
    monkeypatch.setattr(predict, "_is_vm", lambda: True)
    got = {"placement": {"type": "clustered", "consecutive": 0.5}, "guest_bytes": 8 << 30,
           "source": "measured in a test"}
    m, how = predict.host_machine(str(f), check=None, placement=got)
    assert m["virtualization"]["guest_placement"] == got["placement"]
    assert m["memory"]["placement"] == got["placement"]  # 4 KiB host pages: the host's frames placed alike
    assert "given probe of this host" in how
    assert predict.probe_file(str(f)) and not predict.probe_file("zen3-virt") and not predict.probe_file(None)
    m, how = predict.host_machine("zen3-virt", check=None, placement=got)
    assert how == "machine zen3-virt as given"
    assert m == machine_config("zen3-virt")


def test_a_programs_mosaics_are_simulated_with_the_placement_of_its_own_all_4k_runs():
    # The anchor run's own page frames (its allocator report's pagemap), not the 1 GiB sample's:
    # the median run by distinct 2 MiB frames; nothing without a measured host placement.
    from tlblab import machine_config
    from tlblab.host import guest_placement

    m = machine_config("zen3-virt")
    sample = {"placement": {"type": "clustered", "consecutive": 0.99}, "guest_bytes": 12 << 30,
              "memtotal_bytes": 24 << 30, "source": "a sample"}
    runs = [{"pfn_pages": 32770, "frames_2m": f, "neighbour_pairs": 32769, "consecutive": c}
            for f, c in ((6000, 0), (6462, 12350), (7000, 30000))]
    got, note = predict.own_placement(m, sample, runs, "canneal")
    assert got["virtualization"]["guest_placement"] == {"type": "clustered", "consecutive": 0.38}
    assert got["memory"]["placement"] == {"type": "clustered", "consecutive": 0.38}  # the host's frames alike
    drawn = got["virtualization"]["guest_memory_bytes"]
    assert abs(guest_placement.expected_distinct({"type": "clustered", "consecutive": 0.38}, 32770, drawn) - 6462) < 20
    assert "canneal's median all-4 KiB run" in note and "6462 distinct 2 MiB frames" in note
    assert predict.own_placement(m, None, runs, "canneal") == (m, None)
    assert predict.own_placement(m, sample, [], "canneal") == (m, None)
    assert predict.own_placement(m, sample, [{"pfn_pages": 0}], "canneal") == (m, None)
    assert predict.own_placement(machine_config("zen3"), sample, runs, "canneal")[1] is None  # no 2D walk


def test_given_independent_then_simulate_windows_overlaps_the_misses_and_keeps_the_references():
    # A machine with memory-level parallelism: unmarked, every miss stalls in order; marked
    # from the start (`independent`), the random stream's misses overlap (16 slots), so the same
    # references take several times fewer cycles; without `timing.mlp` the mark changes nothing.
    from tlblab import _native, machine_config

    spec = "random:pages=65536,accesses=20000"
    m = machine_config("zen3")
    run = lambda mm, ind: json.loads(_native.simulate_windows(json.dumps(mm), spec, [], machine_format="json",
                                                              independent=ind))["total"]
    plain = run(m, True)
    assert plain == run(m, False)
    m["timing"] = dict(m.get("timing", {}), mlp={"miss_slots": 16, "walkers": 4, "window": 192})
    in_order, marked = run(m, False), run(m, True)
    assert in_order["references"] == marked["references"] == 20000
    assert in_order["cycles"] == plain["cycles"]
    assert marked["cycles"] * 4 < in_order["cycles"]


def test_the_out_of_order_model_is_the_probes_slots_and_walkers_a_window_and_a_streamer_on_the_l1d():
    from tlblab import machine_config

    m = predict.out_of_order_machine(machine_config("zen3"), 16, 40)
    mlp = m["timing"]["mlp"]
    # Walkers at most the slots (the engine's rule), the window and width the module's constants.
    assert (mlp["miss_slots"], mlp["walkers"], mlp["window"], mlp["issue_width"], mlp["steady_state"]) == (
        16, 16, predict.OOO_WINDOW, predict.OOO_ISSUE_WIDTH, True)
    l1d = [c for c in m["cache"] if c["name"] == "L1D"][0]
    assert l1d["prefetch"] == predict.OOO_STREAMER and l1d["prefetch"]["streams"] == 32
    # The engine takes it (a prefetcher beside timing.mlp), and gives it back the same.
    assert machine_config(m)["cache"] == m["cache"] and machine_config(m)["timing"]["mlp"] == mlp


def test_an_unknown_model_is_one_line_with_status_2(capsys, tmp_path):
    status, out, err = run_cli(capsys, "host", "predict", "--model", "superscalar", "--simulate-only", "--tiny",
                               "--programs", "hashjoin", "--mosaics", "4k,2m", "--machine", "zen3",
                               "--out", str(tmp_path))
    assert status == 2 and err.strip().count("\n") == 0 and "--model: expected in-order or out-of-order" in err


def test_given_the_out_of_order_model_then_the_capture_has_the_producers_and_the_machine_overlaps(capsys, tmp_path):
    # The probe's misses and walks in flight are measured on a CPU this process may use (any
    # host: the assertions below hold for any count of slots and walkers).
    cpu = str(min(os.sched_getaffinity(0)))
    status, out, err = run_cli(capsys, "host", "predict", "--model", "out-of-order", "--simulate-only", "--tiny",
                               "--programs", "hashjoin", "--mosaics", "4k,2m", "--machine", "zen3",
                               "--cpu", cpu, "--out", str(tmp_path), "--json")
    assert status == 0, err
    res = json.loads(out)
    assert any(n.startswith("out-of-order model: ") and "tlblab probe --sections mlp" in n for n in res["notes"])
    # Its own capture, with each load's producer (`depends` events), beside no in-order one.
    from tlblab import trace

    info = trace.info(tmp_path / "work" / "hashjoin-tiny-dep.tlbt")
    assert info["events"]["by_type"].get("depends", 0) > 0
    assert not (tmp_path / "work" / "hashjoin-tiny.tlbt").exists()
    rows = {r["mosaic"]: r for r in csv.DictReader((tmp_path / "hashjoin.csv").open())}
    # Simulated with the overlap: the runtime is all the cycles, and 2 MiB pages cut it.
    assert rows["4k"]["sim_runtime_cycles"] == rows["4k"]["sim_cycles"]
    assert float(rows["2m"]["sim_ratio"]) < 1
    # The in-order model on the same program simulates more cycles (nothing overlaps).
    status, out2, err = run_cli(capsys, "host", "predict", "--simulate-only", "--tiny", "--programs", "hashjoin",
                                "--mosaics", "4k", "--machine", "zen3", "--cpu", cpu,
                                "--out", str(tmp_path / "in-order"))
    assert status == 0, err
    inorder = next(csv.DictReader((tmp_path / "in-order" / "hashjoin.csv").open()))
    assert int(inorder["sim_cycles"]) > int(rows["4k"]["sim_cycles"])
