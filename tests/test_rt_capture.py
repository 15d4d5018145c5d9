"""Seed 003's tasks as real programs (tlblab.seeds.s003_tlb_coloring.rt_capture): built, captured under tlblab's
Valgrind tool with their jobs marked, moved to a native run's layout, replayed rate-monotonic.
Small job counts keep each capture to a few seconds."""

from __future__ import annotations

import shutil

import pytest

import tlblab
from tlblab import _native
from tlblab.seeds.s003_tlb_coloring import rt_capture as rc
from tlblab.errors import UserError

pytestmark = pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind is not installed (make setup)")

PAIR = [rc.Task("stats", 4, 4, 1000, 2000, 400, colors=(3,)), rc.Task("bubble", 4, 4, 0, 4000, 1500, colors=(5,))]


def test_given_the_program_when_built_twice_then_it_is_one_cached_binary(tmp_path):
    assert rc.build(cache=tmp_path) == rc.build(cache=tmp_path)


def test_given_a_tlb_malloc_pair_when_captured_and_replayed_then_each_task_writes_only_its_color(tmp_path):
    cap = rc.capture("tlb", PAIR, jobs=2, repeat=1, cache=tmp_path)
    assert {"exe", "libc", "lib.libc.so.6", "stack.T1", "stack.T2", "heap.T1", "heap.T2"} <= set(cap.anchors)
    again = rc.capture("tlb", PAIR, jobs=2, repeat=1, cache=tmp_path)
    assert again.path == cap.path  # cached by content hash
    native = rc.layouts(cap, 1, aslr=False, cache=tmp_path)[0]
    trace = rc.replay(cap, PAIR, 2, native, hyperperiods=1, cache=tmp_path)
    r = tlblab.simulate("xeon-e5-2650", str(trace), tlb_only=True)
    jobs = r.job_frame()
    # One hyperperiod of 4 ms: T1 released at 1 and 3 ms, T2 at 0; plus each task's warm-up.
    assert sorted(jobs.groupby("task").size().tolist()) == [2, 3]
    # The heap pages of the replay: moved to the native arena, every one in its task's color
    # (the arena relocated by whole pages keeps the set bits tlb_malloc chose).
    rel = rc.relocations(cap.anchors, native, rc.parse_maps(_native.trace_maps(str(cap.path))))
    heap_lo = min(lo for lo, hi, d in rel if lo <= cap.anchors["heap.T1"] < hi)
    assert all(((lo + d) >> 12) % 16 == (lo >> 12) % 16 for lo, hi, d in rel if lo == heap_lo)
    # Linux 2.6.32's pages around the jobs (rt_replay): after each job the vDSO's page (where
    # the native run put it) then the vsyscall page (set 0), loads of the task's thread; at each
    # release the local APIC's page (set 12), a store.
    recs = [r for r in tlblab.trace.records(trace, 10_000_000) if "vaddr" in r]
    vsyscall = [r for r in recs if r["vaddr"] >> 12 == 0xffff_ff600]
    apic = [r for r in recs if r["vaddr"] >> 12 == 0xffff_ff5fc]
    vdso = [r for r in recs if r["vaddr"] >> 12 == native[rc.VDSO_ANCHOR] >> 12]
    assert len(vsyscall) == len(jobs) and len(vdso) >= len(jobs)
    assert {r["thread"] for r in vsyscall} == {0, 1} and all(r["kind"] == "load" for r in vsyscall)
    assert len(apic) == 3 and all(r["kind"] == "store" for r in apic)  # releases at 0, 1 and 3 ms
    # The dynamic loader's heap of link maps moves by its own anchor; Valgrind's preload
    # library, which no native process has, is in no job.
    assert "ldheap" in cap.anchors and "ldheap" in native
    moved = [(lo, hi, d) for lo, hi, d in rel if lo <= cap.anchors["ldheap"] < hi]
    assert moved and moved[0][2] == (native["ldheap"] & ~0xFFF) - (cap.anchors["ldheap"] & ~0xFFF)
    preload = [(lo, hi) for lo, hi, path in rc.parse_maps(_native.trace_maps(str(cap.path))) if "/vgpreload_" in path]
    assert preload and all((lo, hi, rc.DROP) in rel for lo, hi in preload)
    assert not [r for r in recs if any(lo <= r["vaddr"] < hi for lo, hi in preload)]


def test_given_a_malloc_pair_when_replayed_then_the_low_priority_task_is_preempted(tmp_path):
    cap = rc.capture("malloc", PAIR, jobs=2, repeat=1, cache=tmp_path)
    native = rc.layouts(cap, 2, aslr=True, cache=tmp_path)
    assert len(native) == 2 and native[0]["heap.T1"] % 4096 == cap.anchors["heap.T1"] % 4096
    trace = rc.replay(cap, PAIR, 2, native[0], hyperperiods=1, cache=tmp_path)
    info = tlblab.trace.info(trace)
    assert info["records"] > 1000
    switches = tlblab.simulate("xeon-e5-2650", str(trace), tlb_only=True).stats["os"]["context_switches"]
    assert switches >= 4  # T2 starts, T1 preempts it at 1 ms, T2 resumes, T1 again at 3 ms


def test_given_the_fig6_13_14_kernels_then_they_run_in_their_own_program_not_table6_1s(tmp_path):
    # Each of the seed's experiments is a program of its own (Alg. 4); the Fig. 6.13-6.14 kernels
    # in the Table 6.1 program moved its pages (and its noisy sets). The Table 6.1 program does
    # not know them: it refuses an fft task.
    assert rc.source_for(PAIR) == rc.SOURCE
    assert rc.source_for([rc.Task("fir", 5, 5, 1000, 7000, 2500)]) == rc.FIG6_13_14_SOURCE
    import subprocess

    table = rc.build(cache=tmp_path)
    r = subprocess.run([str(table), "malloc", "1", "1", "4", "0", "fft:32:8"], capture_output=True, text=True)
    assert r.returncode != 0 and "fft" in r.stderr


def test_given_a_bad_task_then_one_message_names_the_choices():
    with pytest.raises(UserError, match="unknown kernel 'heapsort'"):
        rc.argv_of("malloc", [rc.Task("heapsort", 4, 4, 0, 10, 1)], 1, 1, 4, 0)


@pytest.mark.skipif(not (rc.AUDIO_DIR / rc.AUDIO_FILES[0]).is_file(), reason="alsa-utils is not installed (make setup)")
def test_given_the_fig6_14_pair_when_captured_then_fir_and_the_mi_adpcm_touch_only_their_own_pages(tmp_path):
    # Fig. 6.14 (§6.0.10): FIR on 5 pages, the Mi adpcm streaming real speech through 2 block
    # buffers with read(2): its jobs touch its two buffers and no third heap page.
    pair = [rc.Task("fir", 5, 5, 1000, 7000, 2500, colors=(2, 3)), rc.Task("miadpcm", 2, 2, 0, 14000, 5300, colors=(4,))]
    audio = rc.audio_input(cache=tmp_path)
    assert audio.stat().st_size == rc.AUDIO_BYTES
    assert rc.argv_of("tlb", pair, 1, 1, 4, 0)[-1].startswith("audio=")
    cap = rc.capture("tlb", pair, jobs=2, repeat=1, cache=tmp_path)
    native = rc.layouts(cap, 1, aslr=False, cache=tmp_path)[0]
    trace = rc.replay(cap, pair, 2, native, hyperperiods=1, cache=tmp_path)
    jobs = tlblab.simulate("xeon-e5-2650", str(trace), tlb_only=True).job_frame()
    assert sorted(jobs.groupby("task").size().tolist()) == [2, 3]  # 14 ms: T1 at 1 and 8 ms, T2 at 0
    # The colors: the program's own report of each task's pages (its `task` lines), every
    # FIR page in sets 2-3, every adpcm buffer in set 4.
    printed = {f[1]: [int(a, 16) for a in f[3:]] for f in
               (ln.split() for ln in cap.path.with_suffix(".anchors.txt").read_text().splitlines()) if f[0] == "task"}
    assert {(p >> 12) % 16 for p in printed["T1"]} == {2, 3} and len(printed["T1"]) == 5
    assert {(p >> 12) % 16 for p in printed["T2"]} == {4} and len(printed["T2"]) == 2


def test_given_an_fft_and_adpcm_pair_when_run_natively_then_it_exits_cleanly(tmp_path):
    import subprocess

    pair = [rc.Task("fft", 32, 8, 1000, 4000, 2000), rc.Task("adpcm", 32, 12, 0, 20000, 4600)]
    binary = rc.build(cache=tmp_path, source=rc.source_for(pair))
    r = subprocess.run([str(binary), *rc.argv_of("malloc", pair, 2, 1, 4, 0)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = [ln.split() for ln in r.stdout.splitlines() if ln.startswith("task ")]
    assert [(f[1], f[2], len(f) - 3) for f in lines] == [("T1", "fft", 8), ("T2", "adpcm", 12)]


def test_given_a_malloc_pair_when_isolated_then_isolate_names_every_set_the_miss_log_shows(tmp_path):
    """`tlblab isolate` on a replayed real pair (pages from the trace) names, as conflicts (those the
    warm-ups cause included), every
    set where the engine's miss log shows a task missing a page another task's fill evicted."""
    from tlblab import isolation
    from tlblab.seeds.s003_tlb_coloring import experiments as ex

    tasks = [rc.Task("stats", 16, 16, 1000, 2000, 400), rc.Task("bubble", 16, 16, 0, 8000, 3000)]
    cap = rc.capture("malloc", tasks, jobs=2, repeat=1, cache=tmp_path)
    native = rc.layouts(cap, 1, aslr=False, cache=tmp_path)[0]
    trace = rc.replay(cap, tasks, 2, native, hyperperiods=2, cache=tmp_path)
    doc = ex.real_taskset_doc(trace, tasks)
    heap = ex.buffer_pages(cap, native)
    for i in (0, 1):  # each task's pages hold its 16 buffers (moved with its arena)
        assert heap[i] <= set(doc["task"][i]["pages"])
    rep = isolation.isolate(doc)
    assert rep.warmup_ordered  # the trace gives each task's order before the first job (issue 61)
    jobs, misses = ex.attributed_misses(trace)
    assert len(misses[misses["job"] >= 0]) == int(jobs["L1D_misses"].sum())  # a job's misses are its logged ones
    inter = ex.inter_task(misses)
    assert {int(s) for s in inter["set"]} <= {c["set"] for c in rep.conflicts + rep.warmup_conflicts}
    # The task-set file written for `tlblab isolate FILE` says the same.
    f = tmp_path / "real.toml"
    f.write_text(ex.taskset_toml(doc, "test"))
    again = isolation.isolate(f)
    assert (again.conflicts, again.warmup_conflicts) == (rep.conflicts, rep.warmup_conflicts)


def test_given_a_native_layout_then_papis_reads_sit_below_libc_after_the_exe_and_in_each_tasks_arena():
    # malloc: each task's objects follow its buffers in the arena its heap anchor is in; tlb_malloc:
    # a fresh 64 MiB-aligned arena per task, 128 MiB apart, below the lowest stack (issue 87).
    native = {"libc": 0x7f00_1234_5760, "exe": 0x5555_5555_8280, "stack.T1": 0x7f00_0e66_bd7c,
              "stack.T2": 0x7f00_0de6_bd7c, "heap.T1": 0x7f00_0800_1b80, "heap.T2": 0x7f00_0000_7be0}
    cap = lambda alloc: rc.Capture(rc.CACHE / "x.tlbt", {}, (alloc,), rc.CACHE / "x")  # noqa: E731
    libc, map_page, arenas = rc.papi_layout(cap("malloc"), PAIR, native)
    assert (libc, map_page) == (0x7f00_1234_5000, 0x5555_5555_9000)
    assert arenas == [(0x7f00_0800_1b80, 4), (0x7f00_0000_7be0, 4)]
    _, _, arenas = rc.papi_layout(cap("tlb"), PAIR, native)
    assert arenas == [(0x7f00_0800_0000, 0), (0x7f00_0000_0000, 0)]
    with pytest.raises(UserError, match="no anchor heap.T2"):
        rc.papi_layout(cap("malloc"), PAIR, {k: v for k, v in native.items() if k != "heap.T2"})


def test_given_two_checkouts_and_environments_then_a_capture_replays_the_same_jobs(tmp_path, monkeypatch):
    # Issue 87: Valgrind's client stack moved with the host's ASLR, the program's path and the
    # environment, and with it the jobs' stack pages; a capture now runs as ./rt_tasks in a
    # folder named by its cache entry, in tlblab.trace.FIXED_ENV, without ASLR, the native
    # runs in the same set-up. The capture file itself is not the same bytes: a thread that
    # runs inside another's region (Valgrind hands over at system calls, when the host lets it)
    # is recorded too, and the replay drops it (a job is its marking thread's references).
    # Without the fixed set-up the anchors differ (ASLR) and the native layout with them.
    made = []
    tool = tlblab.trace.tool_dir()
    for where, extra in (("a", "x"), ("a-much-longer-checkout-folder/out/seed003", "y" * 300)):
        cache = tmp_path / where
        cache.mkdir(parents=True)
        monkeypatch.setenv("TLBLAB_TEST_PADDING", extra)
        monkeypatch.chdir(cache)
        # Each checkout's own tool folder (its path is in the client's LD_PRELOAD).
        (cache / "tool").symlink_to(tool, target_is_directory=True)
        monkeypatch.setattr(tlblab.trace, "tool_dir", lambda: str(cache / "tool"))
        cap = rc.capture("tlb", PAIR, jobs=1, repeat=1, cache=cache)
        meta = tlblab.trace.info(cap.path)["meta"]
        assert meta["cwd"] == str(tlblab.trace.FIXED_ROOT / f"tlblab-rt-{cap.path.stem}")
        maps = _native.trace_maps(str(cap.path))
        assert str(tmp_path) not in maps  # neither the cache's path nor the tool's link's target
        native = rc.layouts(cap, 1, aslr=False, cache=cache)[0]
        trace = rc.replay(cap, PAIR, 1, native, hyperperiods=1, cache=cache, tick_hz=rc.TICK_HZ, papi=True)
        # The relocations, not the whole snapshot: Valgrind's own mappings (its translations)
        # grow with what the threads' interleaving made it translate.
        moved = rc.relocations(cap.anchors, native, rc.parse_maps(maps))
        made.append((cap.path.name, cap.anchors, meta, moved, native,
                     tlblab.trace.records(trace, int(tlblab.trace.info(trace)["records"]))))
    # Part by part, so that a difference names its part (and for the records, where).
    # (A job's references once moved with the clock: plus_time's carry came at another job
    # when the start time's microseconds differed; the harness now starts on a whole second.)
    parts = ("capture file", "anchors", "capture meta", "relocations", "native layout")
    for part, a, b in zip(parts, made[0], made[1]):
        assert a == b, part
    a, b = made[0][-1], made[1][-1]
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    assert a == b, (f"the replays differ first at record {first} of {len(a)} / {len(b)}: "
                    f"{a[first - 2:first + 3]} against {b[first - 2:first + 3]}")
