"""The set-up's own steps: `scripts/sysdeps.sh` says what it does while it installs, and
`make run` builds the C runtime's library and programs, not the test and sanitizer binaries."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _fake(bin_dir: Path, name: str, body: str) -> None:
    p = bin_dir / name
    p.write_text("#!/bin/bash\n" + body + "\n")
    p.chmod(0o755)


def test_sysdeps_says_what_it_installs_as_it_goes(tmp_path):
    # dpkg-query says only cmake is installed; apt-get prints what a real one would.
    _fake(tmp_path, "dpkg-query", '[[ "$*" == *cmake* ]] && { echo -n "install ok installed"; exit 0; }; exit 1')
    _fake(tmp_path, "apt-get", 'echo "Get:1 http://deb.debian.org/debian bookworm/main $*"; echo "Setting up valgrind"; '
                               'echo "Reading package lists..."')
    _fake(tmp_path, "sudo", '"$@"')
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    p = subprocess.run(["bash", str(ROOT / "scripts/sysdeps.sh")], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    lines = p.stderr.splitlines()
    assert lines[0].startswith("sysdeps: missing Debian packages: valgrind ")
    assert any(line.startswith("sysdeps:   Setting up valgrind") for line in lines)
    assert not any("Reading package lists" in line for line in lines)  # apt's noise stays out
    assert lines[-1].startswith("sysdeps: installed valgrind ")
    # A failing install says so and fails.
    _fake(tmp_path, "apt-get", '[[ "$1" == install ]] && { echo "E: Unable to locate package valgrind"; exit 100; }; true')
    p = subprocess.run(["bash", str(ROOT / "scripts/sysdeps.sh")], env=env, capture_output=True, text=True)
    assert p.returncode == 100 and "sysdeps:   E: Unable to locate package valgrind" in p.stderr
    assert p.stderr.splitlines()[-1].startswith("sysdeps: apt-get install failed (exit 100)")


def test_sysdeps_with_everything_installed_says_so():
    p = subprocess.run(["bash", str(ROOT / "scripts/sysdeps.sh")], capture_output=True, text=True)
    if p.returncode != 0 or "missing" in p.stderr:
        pytest.skip("this host lacks some of scripts/debian-packages.txt")
    assert p.stderr.strip() == "sysdeps: every Debian package of scripts/debian-packages.txt is installed"


@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("make") is None, reason="needs make and cmake")
def test_make_runs_runtime_step_builds_no_test_or_sanitizer_binary(tmp_path):
    build = tmp_path / "runtime"
    p = subprocess.run(["make", "-s", "runtime-tools", f"RUNTIME_BUILD={build}"], cwd=ROOT, capture_output=True,
                       text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    built = {f.name for f in build.iterdir() if f.is_file() and os.access(f, os.X_OK)}
    assert {"ptwarm_bench", "ptwarm_pid", "migrate_bench", "color_wcet", "color_sweep"} <= built, built
    assert (build / "libtlblab.a").is_file()
    assert not [b for b in built if b.startswith("test_")], built
