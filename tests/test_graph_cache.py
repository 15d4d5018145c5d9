"""The graph cache (docs/checkpoints.md, "Graph cache"; `tlblab_trace::workloads::graph_cache`):
the graph workloads' graphs written once under a run's out/ and read by the processes that
would build them again. A miss builds and writes, a hit reads and builds nothing, a damaged or
foreign file is built again and replaced (said once, never a wrong graph), and a run on a graph
read from the cache gives the statistics of a run on a graph built."""

from __future__ import annotations

import json

import pytest

import tlblab
from tlblab import _native
from tlblab.intervals import graph_cache

BFS = "graph500_bfs:scale=11,roots=1"
LIST = "graph500_list:scale=10,roots=1"


def _drop_kept_graphs() -> None:
    """A run of another workload drops the graphs this process keeps (`rmat::release`)."""
    tlblab.simulate("zen3", "random:pages=16,accesses=100", tlb_only=True)


def _run(workload: str, folder, tag: str = "t"):
    _drop_kept_graphs()
    with graph_cache(folder, tag) as did:
        r = tlblab.simulate("zen3", workload, max_references=30_000)
    return r, did


def _same(a: dict, b: dict) -> None:
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize("workload, kind", [(BFS, "rmat_csr"), (LIST, "graph500_list")])
def test_a_miss_builds_and_writes_a_hit_reads_and_both_run_the_same(tmp_path, workload, kind):
    _drop_kept_graphs()
    built = tlblab.simulate("zen3", workload, max_references=30_000)  # no cache
    miss, did = _run(workload, tmp_path)
    assert (did["loaded"], did["built"], did["written"], did["defects"]) == (0, 1, 1, [])
    (f,) = tmp_path.glob("*.graph")
    assert f.name.startswith(f"{kind}.scale1") and f.name.endswith(".t.graph")
    hit, did = _run(workload, tmp_path)
    assert (did["loaded"], did["built"], did["written"], did["defects"]) == (1, 0, 0, [])
    _same(miss.stats, built.stats)
    _same(hit.stats, built.stats)
    # Off again after the block: a run builds its graph and reads nothing.
    _drop_kept_graphs()
    before = json.loads(_native.graph_cache_stats())
    tlblab.simulate("zen3", workload, max_references=1000)
    after = json.loads(_native.graph_cache_stats())
    assert (after["loaded"], after["built"]) == (before["loaded"], before["built"] + 1)


def test_a_graph_the_process_holds_is_written_when_the_file_is_missing(tmp_path):
    tlblab.simulate("zen3", BFS, max_references=1000)  # built, kept, no cache
    with graph_cache(tmp_path, "t") as did:
        tlblab.simulate("zen3", BFS, max_references=1000)
    assert (did["kept"], did["built"], did["written"]) == (1, 0, 1)
    assert len(list(tmp_path.glob("*.graph"))) == 1


def _flip_a_payload_byte(b: bytes) -> bytes:
    i = len(b) - 100
    return b[:i] + bytes([b[i] ^ 1]) + b[i + 1:]


@pytest.mark.parametrize("damage, said", [
    (_flip_a_payload_byte, "checksum"),
    (lambda b: b[:-1000], "truncated or extended"),
    (lambda b: b"NOTAGRAF" + b[8:], "not a tlblab graph"),
    (lambda b: b[:8] + (9).to_bytes(4, "little") + b[12:], "format version 9"),
    (lambda b: b[:12], "truncated"),
])
def test_a_damaged_file_is_built_again_and_replaced(tmp_path, damage, said):
    good, _ = _run(BFS, tmp_path)
    (f,) = tmp_path.glob("*.graph")
    whole = f.read_bytes()
    f.write_bytes(damage(whole))
    again, did = _run(BFS, tmp_path)
    assert (did["loaded"], did["built"], did["written"]) == (0, 1, 1)
    assert len(did["defects"]) == 1 and str(f) in did["defects"][0] and said in did["defects"][0]
    _same(again.stats, good.stats)
    assert f.read_bytes() == whole  # replaced, bit for bit what the build writes
    _, did = _run(BFS, tmp_path)
    assert (did["loaded"], did["built"], did["defects"]) == (1, 0, [])


def test_a_file_of_another_graph_under_this_ones_name_is_not_read(tmp_path):
    _run("graph500_bfs:scale=10,roots=1", tmp_path)
    (small,) = tmp_path.glob("*.graph")
    good, _ = _run(BFS, tmp_path)
    (big,) = [f for f in tmp_path.glob("*.graph") if f != small]
    big.write_bytes(small.read_bytes())
    again, did = _run(BFS, tmp_path)
    assert did["built"] == 1 and "params" in did["defects"][0] and "scale" in did["defects"][0]
    _same(again.stats, good.stats)
    # Another tag (another engine) has its own file: nothing is read across tags.
    _, did = _run(BFS, tmp_path, tag="u")
    assert (did["loaded"], did["built"], did["written"]) == (0, 1, 1)


def test_a_cache_that_cannot_be_written_costs_time_not_results(tmp_path, capfd):
    blocker = tmp_path / "file"
    blocker.write_text("")
    good = tlblab.simulate("zen3", BFS, max_references=30_000)
    r, did = _run(BFS, blocker / "graphs")
    assert (did["built"], did["written"]) == (1, 0)
    assert "graph cache" in capfd.readouterr().err
    _same(r.stats, good.stats)


def test_intervals_on_a_localcluster_read_the_graph_the_pass_wrote(tmp_path, cluster):
    w = "graph500_bfs:scale=12,roots=1"
    whole = tlblab.simulate("zen3", w)
    n = whole.run["references"]
    run = tlblab.intervals("zen3", w, 3, max_references=n, scheduler=cluster, out=tmp_path)
    _same(run.result.stats, whole.stats)
    assert run.pass_graph["written"] == 1
    assert len(list((tmp_path / "graphs").glob("rmat_csr.scale12.*.graph"))) == 1
    # No worker built the graph: each read it, or held it from an earlier interval of the run.
    assert all(i["graph"]["built"] == 0 and i["graph"]["loaded"] + i["graph"]["kept"] == 1 for i in run.intervals)
    assert sum(i["graph"]["loaded"] for i in run.intervals) >= 1
