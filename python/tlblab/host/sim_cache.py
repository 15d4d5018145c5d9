"""The simulations of `tlblab host predict`, kept by content hash (docs/host-predict.md,
"Simulations kept"): a re-measurement of the same captures on the same model reuses them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tlblab import files


# The crates `_native.simulate_windows` runs: the engine, its trace reader and types, its machine
# files, and the binding.
SIM_CRATES = ("tlblab-core", "tlblab-trace", "tlblab-types", "tlblab-config", "tlblab-python")


def _engine_digest() -> str:
    """What determines a simulation besides its inputs: in a checkout, the sources of the crates a
    simulation runs (SIM_CRATES) and Cargo.lock; else the installed extension."""
    from tlblab import _native

    root = Path(__file__).resolve().parents[3]
    crates = [root / "crates" / c for c in SIM_CRATES]
    if all(c.is_dir() for c in crates) and (root / "Cargo.lock").is_file():
        parts: list[bytes | str] = []
        # A crate's integration tests and benchmarks (`tests/`, `benches/`) change no simulation.
        for p in [q for c in crates for q in sorted(c.rglob("*")) if q.suffix == ".rs" or q.name == "Cargo.toml"] \
                + [root / "Cargo.lock"]:
            if not {"target", "tests", "benches"} & set(p.relative_to(root).parts[2:]):
                parts += [str(p.relative_to(root)), p.read_bytes()]
        return files.content_digest(*parts)
    return files.content_digest(Path(_native.__file__).read_bytes())


_ENGINE: list[str] = []


def _without_sources(v: Any) -> Any:
    """A machine without its `source` and `description` texts (what was measured when), which
    change no simulated number: part of a simulation's cache key."""
    if isinstance(v, dict):
        return {k: _without_sources(x) for k, x in v.items()
                if not (k.endswith("source") or k == "description")}
    if isinstance(v, list):
        return [_without_sources(x) for x in v]
    return v


def simulate(m: dict[str, Any], trace: Path, spans: list[tuple[int, int, int]], warm: int, *,
             tlb_only: bool = False, cache: Path | None = None, independent: bool = False
             ) -> tuple[dict[str, Any], bool]:
    """The engine's statistics of `trace` on machine `m` with `spans` announced as 2 MiB mappings
    (`_native.simulate_windows`), and whether they came from `cache`: a directory of results keyed
    by the content of what determines them (the trace's sha256, the machine without its source
    texts, the spans, the warm-up, tlb_only and the engine's sources), so that a re-measurement
    reuses the simulations of the same captures and model. `independent`: the captured thread
    marked independent from its start (`timing.mlp`; part of the key when set)."""
    from tlblab import _native

    path = None
    if cache is not None:
        if not _ENGINE:
            _ENGINE.append(_engine_digest())
        parts = [files.file_digest(trace), json.dumps(_without_sources(m), sort_keys=True),
                 json.dumps(spans), str(warm), str(tlb_only), _ENGINE[0]]
        if independent:
            parts.append("independent")
        key = files.content_digest(*parts)
        path = cache / f"{key}.json"
        if path.is_file():
            try:
                return json.loads(path.read_text()), True
            except ValueError:
                pass  # a damaged entry is simulated again and rewritten
    raw = _native.simulate_windows(json.dumps(m), str(trace), spans, warmup=warm, tlb_only=tlb_only,
                                   machine_format="json", independent=independent)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.atomic_write(path, raw)
    return json.loads(raw), False
