"""The `champsim` preset against ChampSim itself on a trace small enough to count by hand
(docs/champsim.md, "The restart rule"): ChampSim 2ff2501 (stock champsim_config.json,
scripts/champsim-parity.patch) run on exactly this trace with `--warmup-instructions 0
--simulation-instructions 100` issued 34 page-table reads over 8 walks (STLB misses), measured
2026-11-26; tlblab before its walker refreshed every PSCL that hits read 35."""

from __future__ import annotations

import struct

import tlblab


def _record(ip: int, load: int) -> bytes:
    # inc/trace_instruction.h `input_instr`: ip, is_branch, branch_taken, 2 destination and 4
    # source registers, 2 destination and 4 source memory addresses. A load (if any) of `load`
    # into register 10 whose address comes from register 10, so each load waits for the one
    # before it and ChampSim's out-of-order core walks them one at a time, in trace order.
    regs = (10, 0, 10, 0, 0, 0) if load else (0,) * 6
    return struct.pack("<QBB2B4B2Q4Q", ip, 0, 0, *regs, 0, 0, load, 0, 0, 0)


def test_a_pscl_lookup_refreshes_every_pscl_that_hits_as_champsim_does(tmp_path):
    # The instruction page 0x200000 is walked first (cold: 5 reads; P0's first 1 GiB, 2 MiB
    # region 1). Then, 512 GiB regions P0..P4 (pscl4, 1 set x 4 ways, keyed by the VA above bit
    # 39): P0 (pscl3 hit, 3 reads), P1, P2, P3 (pscl5 hits, re-read from the root: 5 each),
    # P0's first 2 MiB again (pscl2 hit, 2 reads; pscl3, pscl4 and pscl5 hit too and ChampSim
    # refreshes them all, src/ptw.cc:76-79), P4 (5 reads; fills pscl4, evicting P1: P0 was
    # refreshed), P0's second 1 GiB (pscl4 hits P0: 4 reads). 5 + 3 + 5 + 5 + 5 + 2 + 5 + 4.
    p = [k << 39 for k in range(5)]
    loads = [p[0] + 0x1000, p[1] + 0x1000, p[2] + 0x1000, p[3] + 0x1000, p[0] + 0x2000, p[4] + 0x1000,
             p[0] + 0x4000_1000]
    recs = [_record(0x20_0000 + 4 * i, a) for i, a in enumerate(loads)]
    recs += [_record(0x20_0000 + 4 * (len(loads) + i), 0) for i in range(200)]
    trace = tmp_path / "refresh.champsimtrace"
    trace.write_bytes(b"".join(recs))
    r = tlblab.simulate("champsim", str(trace), warmup_instructions=0, simulation_instructions=100)
    tlb = dict(zip(r.stats["tlb_levels"], r.total["tlb"]))
    assert r.total["walk_refs"] == 34
    assert r.total["walks"] == 8 and tlb["STLB"]["misses"] == 8
