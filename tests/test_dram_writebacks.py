"""The DRAM channels' writebacks and row activations (`timing.dram`, ARCHITECTURE.md "Timing")
through the Python API: a run of stores over more than the caches hold reports the dirty lines it
wrote back in its statistics and summary, with `writebacks = false` (the reads-only model) none;
with row activations its random lines each open a row."""

import pytest

import tlblab


def _machine(writebacks: bool) -> dict:
    m = tlblab.machine_config("zen3")
    m["timing"]["dram"] = {"channels": 2, "mega_transfers": 4000, "writebacks": writebacks}
    return m


def test_a_store_stream_past_the_caches_writes_dirty_lines_back():
    # gups updates random words of a table of 256 MiB, eight times the zen3 preset's 32 MiB L3: each
    # update reads a line and dirties it, and the L3's evictions of dirty lines go to memory.
    wl = "gups:log2_words=25,updates=200000"
    on = tlblab.simulate(_machine(True), wl)
    off = tlblab.simulate(_machine(False), wl)
    s = on.summary()
    assert s["dram_writeback_lines"] > 0, s
    assert on.stats["dram"]["writeback_lines"] == s["dram_writeback_lines"]
    assert off.summary()["dram_writeback_lines"] == 0
    # The same lines are read either way; the writes only delay later reads.
    assert off.stats["dram"]["lines"] == s["dram_lines"]
    assert on.cycles >= off.cycles


def test_random_lines_take_row_activations_and_a_bad_timing_is_one_error():
    wl = "gups:log2_words=25,updates=50000"
    m = _machine(True)
    m["timing"]["dram"].update({"ranks": 2, "banks": 16, "row_bytes": 8192, "t_rrd_ps": 2500, "t_faw_ps": 21250})
    s = tlblab.simulate(m, wl).summary()
    # Nearly every line of a random 256 MiB table is in a row its bank does not have open.
    assert s["dram_activations"] > 0.5 * s["dram_lines"], s
    assert tlblab.simulate(_machine(True), wl).summary()["dram_activations"] == 0
    m["timing"]["dram"]["t_faw_ps"] = 1000
    with pytest.raises(ValueError, match="timing.dram.t_faw_ps"):
        tlblab.simulate(m, wl)
