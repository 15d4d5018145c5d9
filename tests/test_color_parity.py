"""Parity: the C coloring allocator places every allocation exactly where the documented placement
algorithm (docs/color.md, modelled in color_placement_model.py) says, address for address, on
random request sequences over several geometries. This is the check a simulator port must pass."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from color_placement_model import Arena  # noqa: E402

from tlblab.host._runtime import executable  # noqa: E402

GEOMETRIES = [
    dict(sets=16, ways=4, reserved=2, periods=4),
    dict(sets=128, ways=16, reserved=4, periods=0),
    dict(sets=8, ways=2, reserved=0, periods=3),
    dict(sets=32, ways=4, reserved=8, periods=2),
]


def _sequence(rng: random.Random, arena: Arena, n: int) -> list[str]:
    ncolors = arena.small + arena.large
    focus = [rng.randrange(ncolors) for _ in range(3)]
    live: list[int] = []
    count = 0
    lines = []
    for _ in range(n):
        r = rng.random()
        if r < 0.55 or not live:
            c = rng.choice(focus) if rng.random() < 0.9 else rng.randrange(ncolors)
            big = arena.slot if c < arena.small else arena.reserved * arena.slot
            size = rng.randrange(1, big) if rng.random() < 0.2 else rng.randrange(1, 600)
            if rng.random() < 0.15:
                lines.append(f"aligned {1 << rng.randrange(3, 12)} {size} {c}")
            else:
                lines.append(f"malloc {size} {c}")
            live.append(count)
            count += 1
        elif r < 0.8:
            i = live.pop(rng.randrange(len(live)))
            lines.append(f"free {i}")
        else:
            i = rng.choice(live)
            lines.append(f"realloc {i} {rng.randrange(1, 3000)}")
    return lines


def _model_output(arena: Arena, lines: list[str]) -> tuple[list[str], str]:
    """Replay the requests through the model; drop reallocs of indices that hold no block (freed or
    failed), which color_trace rejects as bad input. Returns (requests kept, expected output)."""
    ptrs: list[int | None] = []
    out = []
    kept = []
    for line in lines:
        t = line.split()
        if t[0] == "malloc":
            p = arena.malloc(int(t[1]), int(t[2]))
            ptrs.append(p)
            idx = len(ptrs) - 1
        elif t[0] == "aligned":
            p = arena.aligned(int(t[1]), int(t[2]), int(t[3]))
            ptrs.append(p)
            idx = len(ptrs) - 1
        elif t[0] == "free":
            arena.free(ptrs[int(t[1])])
            ptrs[int(t[1])] = None
            kept.append(line)
            continue
        else:
            idx = int(t[1])
            if idx >= len(ptrs) or ptrs[idx] is None:
                continue
            p = arena.realloc(ptrs[idx], int(t[2]))
            if p is not None:
                ptrs[idx] = p
        kept.append(line)
        out.append(f"{idx} {'-' if p is None else p}")
    return kept, "\n".join(out) + "\n"


def _color_trace(geo, requests: list[str]) -> subprocess.CompletedProcess:
    """The C allocator's placement of `requests` (color_trace), which must succeed."""
    args = [str(executable("color_trace")), "--sets", str(geo["sets"]), "--ways", str(geo["ways"]),
            "--reserved", str(geo["reserved"]), "--periods", str(geo["periods"])]
    proc = subprocess.run(args, input="\n".join(requests) + "\n", capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.parametrize("geo", GEOMETRIES, ids=lambda g: "M{sets}-N{ways}-R{reserved}-P{periods}".format(**g))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_given_random_requests_then_c_placement_equals_documented_algorithm(geo, seed):
    rng = random.Random(seed)
    arena = Arena(geo["sets"], geo["ways"], geo["reserved"], geo["periods"])
    kept, want = _model_output(arena, _sequence(rng, arena, 1500))
    proc = _color_trace(geo, kept)
    got_lines, want_lines = proc.stdout.splitlines(), want.splitlines()
    for k, (g, w) in enumerate(zip(got_lines, want_lines)):
        assert g == w, f"request #{k} differs: C says '{g}', the documented algorithm says '{w}'"
    assert len(got_lines) == len(want_lines)
    assert sum(1 for x in got_lines if not x.endswith(" -")) > 100  # the sequence really allocated


def test_given_a_bad_request_then_color_trace_names_the_line():
    proc = subprocess.run([str(executable("color_trace"))], input="100 0\nfree 7\n", capture_output=True, text=True)
    assert proc.returncode == 2
    assert "line 2" in proc.stderr and "earlier index" in proc.stderr


@pytest.mark.parametrize("geo", GEOMETRIES, ids=lambda g: "M{sets}-N{ways}-R{reserved}-P{periods}".format(**g))
@pytest.mark.parametrize("seed", [4, 5])
def test_given_random_requests_then_the_simulators_colored_placement_equals_the_c_allocator(geo, seed):
    """Parity tier: the Rust port in tlblab-core (memory/colored.rs) places every allocation where
    the C allocator does, address for address."""
    from tlblab import _native

    rng = random.Random(seed)
    arena = Arena(geo["sets"], geo["ways"], geo["reserved"], geo["periods"])
    kept, _ = _model_output(arena, _sequence(rng, arena, 1500))
    proc = _color_trace(geo, kept)
    requests = [line if line.split()[0] in ("malloc", "aligned", "free", "realloc") else f"malloc {line}" for line in kept]
    got = _native.colored_placement(geo["sets"], geo["ways"], geo["reserved"], geo["periods"], requests)
    want = proc.stdout.splitlines()
    for k, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"request #{k} differs: simulator says '{g}', C says '{w}'"
    assert len(got) == len(want)
    assert sum(1 for x in got if not x.endswith(" -")) > 100
