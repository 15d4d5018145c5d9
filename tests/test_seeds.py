"""The seed folders (tlblab.seeds): each seed is found whole in one folder, and a reproduction file
that names another seed or a missing experiment is refused with its path."""

from __future__ import annotations

import shutil

import pytest

import tlblab.reproduce as rp
from tlblab import seeds
from tlblab.errors import UserError


def test_every_seed_folder_has_its_citation_claims_experiments_and_reproductions():
    found = seeds.all_seeds()
    assert [s.number for s in found] == ["000", "001", "002", "003", "004"]
    for s in found:
        assert s.cite and s.claims, s.folder
        assert s.experiments().__name__ == f"tlblab.seeds.{s.folder.name}.experiments"
        files = sorted(s.reproductions.glob("*.toml"))
        assert files, f"{s.folder}: no reproductions"
        assert all(seeds.number_of(p) == s.number for p in files)


def test_every_reproduction_names_an_experiment_of_its_own_seed_folder():
    for rep in rp.catalog():
        fn = rp._experiment(rep)
        assert callable(fn), rep.name
        # experiments.py (or a module of the folder it re-exports: seed 001's tables are split by
        # table, issue 84), or another module of the same folder named by the reproduction
        # ("seed001:power.fig6_12").
        module = rep.experiment.partition(":")[2].rpartition(".")[0]
        if module:
            assert fn.__module__ == f"{seeds.get(rep.seed).package}.{module}", rep.name
        else:
            assert fn.__module__.startswith(f"{seeds.get(rep.seed).package}."), rep.name
            assert getattr(seeds.get(rep.seed).experiments(), fn.__name__) is fn, rep.name


def _copy(tmp_path):
    root = tmp_path / "seeds"
    shutil.copytree(seeds.ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root / "s002_arm_domains" / "reproductions" / "fig5.toml"


def test_a_reproduction_filed_under_another_seed_is_refused_with_its_path(tmp_path):
    f = _copy(tmp_path)
    f.write_text(f.read_text().replace('seed = "002"', 'seed = "003"', 1))
    with pytest.raises(UserError, match=r"fig5\.toml.*'seed' is '003' but the file is in seed 002's folder"):
        rp.load_file(f)


def test_an_experiment_that_names_no_seed_folder_is_refused_with_its_path(tmp_path):
    f = _copy(tmp_path)
    text = f.read_text()
    experiment = next(line for line in text.splitlines() if line.startswith("experiment = "))
    f.write_text(text.replace(experiment, 'experiment = "seed009:fig5"', 1))
    with pytest.raises(UserError, match=r"fig5\.toml.*expected seedNNN:FUNCTION naming a seed folder"):
        rp._experiment(rp.load_file(f))
