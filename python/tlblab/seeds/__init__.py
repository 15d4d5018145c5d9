"""The five seeds, one folder each: `sNNN_<technique>/` holds a seed whole.

    sNNN_<technique>/
        __init__.py        CITE and CLAIMS: the citation and what the seed claims (report, docs)
        experiments.py     one function per reproduction: runs tlblab, returns our value per row
        reproductions/     one data file per table or figure (docs/reproductions.md)
        ...                what only this seed's reproduction uses (seed 003's task program
                           capture and task sets, seed 004's MiBench builds)

A seed is found by its folder's name, so adding one is adding a folder. What a user runs outside
the reproductions (`tlblab isolate`, `tlblab profile`, `tlblab.rt`, the techniques' Python) is
library code beside this package, not in it. `criteria.lock.toml` here pre-registers every
criterion of every seed (tlblab.prereg).

    >>> from tlblab import seeds
    >>> [s.number for s in seeds.all_seeds()]
    ['000', '001', '002', '003', '004']
    >>> seeds.get("004").reproductions.name
    'reproductions'
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).parent
_FOLDER = re.compile(r"s(\d{3})_[a-z0-9_]+")


@dataclass(frozen=True)
class Seed:
    number: str          # "000" ... as the reproduction files' `seed` field spells it
    folder: Path
    cite: str
    claims: str

    @property
    def package(self) -> str:
        return f"{__name__}.{self.folder.name}"

    @property
    def reproductions(self) -> Path:
        return self.folder / "reproductions"

    def experiments(self) -> ModuleType:
        return importlib.import_module(f"{self.package}.experiments")


@lru_cache(maxsize=None)
def all_seeds() -> tuple[Seed, ...]:
    """Every seed folder under this package, in number order."""
    out = []
    for d in sorted(ROOT.iterdir()):
        m = _FOLDER.fullmatch(d.name)
        if m and d.is_dir():
            mod = importlib.import_module(f"{__name__}.{d.name}")
            out.append(Seed(m.group(1), d, mod.CITE, mod.CLAIMS))
    return tuple(out)


def get(number: str) -> Seed | None:
    """The seed numbered `number` ("000"), or None."""
    return next((s for s in all_seeds() if s.number == number), None)


def reproduction_files(root: Path = ROOT) -> list[Path]:
    """Every reproduction data file under `root` (this package, or a copy of it), sorted."""
    return sorted(root.glob("s[0-9][0-9][0-9]_*/reproductions/*.toml"))


def number_of(path: Path) -> str:
    """The seed number of a reproduction file, from its seed folder's name."""
    return path.parent.parent.name[1:4]
