"""The techniques' registration on the Python side: one optional module per technique
(`tlblab/technique/<name>.py`), discovered; every technique of a seed has its reproductions.
The Rust side (one registry line, a twin for every technique) is
`crates/tlblab-core/tests/technique_registry.rs`."""

from __future__ import annotations

import re

import pytest

import tlblab
import tlblab.reproduce as rp
from tlblab import seeds, technique


def test_every_technique_module_is_named_as_a_registered_technique():
    registered = {t["name"] for t in tlblab.techniques()}
    assert technique.names(), "lockdown's module at least"
    assert technique.names() <= registered, technique.names() - registered


def test_every_technique_of_a_seed_has_its_reproduction_folder():
    # `seed` in the catalog begins "seed NNN §..." for the seeds' techniques ("none (...)" for a
    # host model such as foreign_entries).
    have = {r.seed for r in rp.catalog()}
    for t in tlblab.techniques():
        m = re.match(r"seed (\d{3})\b", t["seed"])
        if m:
            assert m.group(1) in have, f"{t['name']}: no python/tlblab/seeds/s{m.group(1)}_*/reproductions/*.toml"
            assert seeds.get(m.group(1)).reproductions.is_dir()


def test_a_spec_without_a_module_passes_unchanged():
    table = technique.table("tlb_coloring:assign=same")
    assert table == {"name": "tlb_coloring", "assign": "same"}
    assert technique.module("tlb_coloring") is None
    assert technique.resolve(table, "xeon-e5-2650") == table


def test_a_spec_and_a_table_are_parsed_by_the_engine_into_one_table():
    # One parser (Rust's `techniques::parse_spec`): the text form and a machine file's table
    # (numbers and booleans made text as the engine reads them) become the same table.
    assert technique.table(" lockdown : pages=0x1000 , count=2") == {"name": "lockdown", "pages": "0x1000",
                                                                       "count": "2"}
    assert technique.table({"name": "lockdown", "count": 2, "flag": True}) == {"name": "lockdown", "count": "2",
                                                                               "flag": "true"}
    with pytest.raises(ValueError, match="parameter 'count' is given twice"):
        technique.table("lockdown:count=1,count=2")
    with pytest.raises(ValueError, match="name"):
        technique.table({"count": 2})


def test_a_technique_module_is_discovered_by_adding_its_file(tmp_path, monkeypatch):
    # A throwaway technique's module, in a folder added to the package's path: no registration
    # beyond the file.
    (tmp_path / "switch_toll.py").write_text(
        "def resolve(technique, machine):\n"
        "    return {**technique, 'cycles': '1'} if technique.get('cycles') == 'fast' else technique\n")
    monkeypatch.setattr(technique, "__path__", [*technique.__path__, str(tmp_path)])
    technique.names.cache_clear()
    try:
        assert "switch_toll" in technique.names()
        assert technique.resolve(technique.table("switch_toll:cycles=fast"), "zen3") == {"name": "switch_toll",
                                                                                       "cycles": "1"}
    finally:
        technique.names.cache_clear()


def test_lockdown_resolves_a_profile_through_its_module_when_simulating(tmp_path):
    # `tlblab.simulate` hands the spec to the technique's module: pages=FILE.csv becomes the
    # profile's most-accessed pages, as the engine takes them.
    csv = tmp_path / "profile.csv"
    csv.write_text("rank,page,region,offset,process,loads,stores,fetches,accesses\n"
                   "1,0x40000000,-,0,0,90,10,0,100\n"
                   "2,0x40001000,-,0,0,50,0,0,50\n")
    resolved = technique.resolve(technique.table(f"lockdown:pages={csv},count=1"), "cortex-a9")
    assert resolved == {"name": "lockdown", "pages": "0x40000000"}
    r = tlblab.simulate("cortex-a9", "random:pages=64,accesses=2000", technique=f"lockdown:pages={csv},count=1")
    assert r.technique["params"]["pages"] == "0x40000000"


@pytest.mark.parametrize("name", sorted(technique.names()))
def test_a_technique_module_imports_without_the_simulator(name):
    # The modules sit below `tlblab.sim` (which calls them): none imports it, so no circle.
    import ast
    from pathlib import Path

    tree = ast.parse(Path(technique.__path__[0], f"{name}.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and (m == "tlblab.sim" or m.startswith("tlblab.seeds"))}


def test_a_machine_files_technique_table_is_resolved_by_the_techniques_module(tmp_path):
    # `[technique] pages = "FILE.csv"` in a machine file runs as `technique="lockdown:pages=FILE.csv"`.
    csv = tmp_path / "profile.csv"
    csv.write_text("rank,page,region,offset,process,loads,stores,fetches,accesses\n"
                   "1,0x40000000,-,0,0,90,10,0,100\n")
    machine = tmp_path / "a9-locked.toml"
    machine.write_text(tlblab.machine_toml("cortex-a9") +
                       f'\n[technique]\nname = "lockdown"\npages = "{csv}"\ncount = 1\n')
    workload = "random:pages=64,accesses=2000"
    from_table = tlblab.simulate(str(machine), workload)
    given = tlblab.simulate("cortex-a9", workload, technique=f"lockdown:pages={csv},count=1")
    assert from_table.technique == given.technique
    assert from_table.technique["params"]["pages"] == "0x40000000"
    assert from_table.total == given.total
