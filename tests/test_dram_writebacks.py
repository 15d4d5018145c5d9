"""The DRAM channels' writebacks (`timing.dram.writebacks`, ARCHITECTURE.md "Timing") through the
Python API: a run of stores over more than the caches hold reports the dirty lines it wrote back in
its statistics and summary; with `writebacks = false` (the reads-only model) none."""

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
