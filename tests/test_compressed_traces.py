"""Compressed ChampSim traces decoded in-process (issue 47; crates/tlblab-trace/src/fileio.rs):
the same statistics as the uncompressed file for .xz, .gz and .bz2, concatenated streams read
whole, and a truncated or corrupt file refused with one message naming it and the byte reached.

The files are written by Python's own lzma, gzip and bz2 modules (liblzma, zlib and libbzip2),
so the decoders are checked against encoders that are not theirs.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import random
import struct
import subprocess
import sys

import pytest

import tlblab

RECORDS = 20_000
COMPRESS = {"xz": lzma.compress, "gz": gzip.compress, "bz2": bz2.compress}
TOOL = {"xz": "xz", "gz": "gzip", "bz2": "bzip2"}


def champsim_bytes(records: int = RECORDS, seed: int = 47) -> bytes:
    """ChampSim `input_instr` records: an ip, one load and (every other record) one store, over
    4096 pages, so the TLBs and the walker see misses of every kind."""
    rng = random.Random(seed)
    out = bytearray()
    for i in range(records):
        load = 0x1000_0000 + rng.randrange(4096) * 4096 + 8 * rng.randrange(512)
        store = 0x2000_0000 + rng.randrange(4096) * 4096 if i % 2 else 0
        out += struct.pack("<QBB2B4B2Q4Q", 0x40_0000 + 4 * (i % 1000), 0, 0, 0, 0, 0, 0, 0, 0,
                           store, 0, load, 0, 0, 0)
    return bytes(out)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """The plain trace, and each format as two concatenated streams (split inside a record, as
    `cat a.xz b.xz` or a parallel compressor may)."""
    d = tmp_path_factory.mktemp("cz")
    data = champsim_bytes()
    cut = len(data) // 3 + 7
    files = {"plain": d / "t.champsimtrace"}
    files["plain"].write_bytes(data)
    for ext, compress in COMPRESS.items():
        files[ext] = d / f"t.champsimtrace.{ext}"
        files[ext].write_bytes(compress(data[:cut]) + compress(data[cut:]))
    return files


@pytest.mark.parametrize("ext", list(COMPRESS))
def test_each_compressed_format_gives_the_uncompressed_files_statistics(traces, ext):
    plain = tlblab.simulate("champsim", str(traces["plain"]))
    got = tlblab.simulate("champsim", str(traces[ext]))
    assert plain.total["references"] == 2 * RECORDS + RECORDS // 2
    assert got.stats == plain.stats
    # And with ChampSim's warm-up and region of interest, which stop reading mid-stream.
    kw = dict(warmup_instructions=5_000, simulation_instructions=9_000)
    assert tlblab.simulate("champsim", str(traces[ext]), **kw).stats == \
        tlblab.simulate("champsim", str(traces["plain"]), **kw).stats


def simulate_cli(path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tlblab.cli", "simulate", "--machine", "champsim",
                           "--workload", str(path)], capture_output=True, text=True)


@pytest.mark.parametrize("ext", list(COMPRESS))
def test_a_truncated_file_is_one_message_naming_it_and_the_byte(traces, ext, tmp_path):
    whole = traces[ext].read_bytes()
    cut = tmp_path / f"cut.champsimtrace.{ext}"
    n = len(whole) * 2 // 3
    cut.write_bytes(whole[:n])
    p = simulate_cli(cut)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"{cut}: byte " in p.stderr
    assert f"the {TOOL[ext]} data ends early, at byte {n} of {n} of the compressed file" in p.stderr, p.stderr


@pytest.mark.parametrize("ext", list(COMPRESS))
def test_a_corrupt_file_is_one_message_and_leaves_no_output(traces, ext, tmp_path):
    """A byte flipped mid-file. gzip and bzip2 check their CRC at the end of a member or block,
    so the decoder may first hand on bytes that decode to other records: the reader refuses the
    first that is no ChampSim record (an address past 57 bits, a branch byte not 0 or 1) with
    its offset, or reads on to the check; either way one line, and no output file behind."""
    whole = traces[ext].read_bytes()
    bad = tmp_path / f"bad.champsimtrace.{ext}"
    flipped = bytearray(whole)
    flipped[len(whole) // 2] ^= 0x55
    bad.write_bytes(bytes(flipped))
    out = tmp_path / "out.tlbt"
    p = subprocess.run([sys.executable, "-m", "tlblab.cli", "trace", "convert", str(bad), str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"{bad}: byte " in p.stderr
    if "not a ChampSim trace" not in p.stderr:
        assert f"the {TOOL[ext]} data is corrupt at byte " in p.stderr, p.stderr
        assert f" of {len(whole)} of the compressed file" in p.stderr, p.stderr
    else:
        assert "(of the uncompressed stream): not a ChampSim trace: " in p.stderr, p.stderr
    assert sorted(os.listdir(tmp_path)) == [bad.name]
