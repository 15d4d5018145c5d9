"""tlblab installed as any other Python tool: the wheel maturin builds, installed into a clean
venv (no repository on its path), runs the main job's slice, a sweep and the README's Python
block; its dependencies are declared as requirements.txt pins them, and a command that needs an
extra that is not installed says which, in one line.

The wheel is built with the repository's target directory (the extension `make ext` built is
reused: only the wheel is packed) and the dependencies come from build/wheelhouse, downloaded
once from the pins (`pip download`), so a CI run after the first pays for the venv alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _pins(lines) -> dict[str, str]:
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"not pinned: {line}"
            out[name.strip().lower()] = version.strip()
    return out


def test_every_dependency_is_declared_and_pinned_as_requirements_txt_pins_it():
    req = _pins((ROOT / "requirements.txt").read_text().splitlines())
    project = PYPROJECT["project"]
    declared = _pins(project["dependencies"])
    for extra, deps in project["optional-dependencies"].items():
        declared.update(_pins(deps))
    # Every runtime dependency in requirements.txt is declared (maturin: the build's own), pinned the same.
    assert set(req) - {"maturin"} == set(declared), set(req) ^ set(declared)
    assert all(declared[k] == req[k] for k in declared), {k: (declared[k], req[k]) for k in declared}
    assert PYPROJECT["build-system"]["requires"] == [f"maturin=={req['maturin']}"]
    # The extras the missing-part message names exist.
    from tlblab.cli import EXTRAS

    assert set(EXTRAS.values()) <= set(project["optional-dependencies"])


def test_a_command_needing_a_missing_extra_says_which_in_one_line(capsys, monkeypatch):
    from tlblab import cli

    def needs_distributed(args):
        raise ModuleNotFoundError("No module named 'distributed'", name="distributed")

    status = cli._run(type("A", (), {"func": staticmethod(needs_distributed)})())
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert "tlblab[cluster]" in err and "'distributed'" in err, err

    def needs_tqdm(args):
        raise ModuleNotFoundError("No module named 'tqdm'", name="tqdm")

    status = cli._run(type("A", (), {"func": staticmethod(needs_tqdm)})())
    err = capsys.readouterr().err
    assert status == 2 and "pip install tqdm" in err and err.count("\n") == 1


def run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))}\nexit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A clean venv with the wheel (and its `cluster` extra) installed: its bin directory."""
    tmp = tmp_path_factory.mktemp("wheel")
    maturin = Path(sys.executable).parent / "maturin"
    run([maturin, "build", "--release", "--quiet", "--out", tmp / "dist"], cwd=ROOT)
    wheel = next((tmp / "dist").glob("tlblab-*.whl"))
    house = ROOT / "build/wheelhouse"
    reqs = [r for r in (ROOT / "requirements.txt").read_text().splitlines()
            if r.split("#")[0].strip() and not r.startswith(("maturin", "playwright", "pytest", "hypothesis"))]
    stamp = house / ".pins"
    if not stamp.is_file() or stamp.read_text() != "\n".join(reqs):
        run([sys.executable, "-m", "pip", "download", "--quiet", "--dest", house,
             *[r.split("#")[0].strip() for r in reqs]])
        stamp.write_text("\n".join(reqs))
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", venv])
    run([venv / "bin/python", "-m", "pip", "install", "--quiet", "--no-index", "--find-links", house,
         f"{wheel}[cluster]"])
    return venv / "bin"


def _env(tmp: Path) -> dict[str, str]:
    # Nothing of the repository: not on PYTHONPATH, not the working directory.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "XDG_CACHE_HOME", "TLBLAB_OUT", "TLBLAB_REPO")}
    env["HOME"] = str(tmp)
    return env


def test_the_installed_wheel_runs_the_study_a_sweep_and_the_readme_python(installed, tmp_path):
    env = _env(tmp_path)
    p = run([installed / "python", "-c", "import tlblab, sys; print(tlblab.__file__)"], cwd=tmp_path, env=env)
    assert "site-packages" in p.stdout and str(ROOT) not in p.stdout
    # The main job's slice (the README's), in seconds.
    p = run([installed / "tlblab", "study", "--quick", "--reproductions", "003/fig6_2", "--machines", "zen3",
             "--workloads", "random"], cwd=tmp_path, env=env, timeout=900)
    assert "Traceback" not in p.stderr
    # Outside a checkout the outputs go to the user's cache (tlblab.paths), not where it ran.
    assert (tmp_path / ".cache/tlblab/study/summary.csv").is_file() and not (tmp_path / "out").exists()
    # A sweep (Dask: the cluster extra) over a grid of its own.
    grid = tmp_path / "grid.toml"
    grid.write_text('[base]\nmachine = "zen3"\nmode = "tlb_only"\nmax_references = 20000\n\n'
                    '[axes]\n"machine.tlb.L1D.entries" = [32, 64]\nworkload = ["random:pages=4096,accesses=20000"]\n')
    p = run([installed / "tlblab", "sweep", grid, "--workers", "1"], cwd=tmp_path, env=env, timeout=900)
    assert "Traceback" not in p.stderr
    # The README's Python blocks.
    readme = (ROOT / "README.md").read_text()
    for i, block in enumerate(b.split("```", 1)[0] for b in readme.split("```python\n")[1:]):
        script = tmp_path / f"readme_{i}.py"
        script.write_text(block)
        run([installed / "python", script], cwd=tmp_path, env=env, timeout=900)


def test_a_reproduction_reading_the_repositorys_sources_says_what_it_needs_from_the_wheel(installed, tmp_path):
    """Seed 003's real-program reproductions compile its task programs from the repository's
    runtime/, which the wheel does not carry: one line naming it and TLBLAB_REPO, no traceback.
    The data a reproduction reads besides (the host machine files) is package data."""
    env = _env(tmp_path)
    p = subprocess.run([str(installed / "tlblab"), "reproduce", "003/table6_1_real", "--quick"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=600)
    # Its progress line, then the one line of the error.
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and err[-1].startswith("tlblab: error: ") and len(err) <= 2, p.stderr
    assert "runtime/bench/seed003" in err[-1] and "TLBLAB_REPO" in err[-1] and "Traceback" not in p.stderr
    p = run([installed / "python", "-c", "from pathlib import Path; from tlblab.host import migrate_model as m; "
             "from tlblab.seeds.s001_pt_baker import small_tables as s; import tlblab; "
             "print(tlblab.machine_config(m.HOST_PRESET)['name'], Path(s.HOST_PRESET).is_file())"],
            cwd=tmp_path, env=env)
    assert p.stdout.split() == ["host-xeon", "True"], p.stdout


def test_trace_record_from_the_wheel_says_how_to_get_the_valgrind_tool(installed, tmp_path):
    p = subprocess.run([str(installed / "tlblab"), "trace", "record", "-o", str(tmp_path / "t.tlbt"), "--", "true"],
                       cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "TLBLAB_RUNTIME_BUILD" in p.stderr and "--tool lackey" in p.stderr, p.stderr
    assert not re.search(r"Traceback", p.stderr)
