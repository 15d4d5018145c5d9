"""`cmake --install` of libtlblab, used as an installed library is: the README's C example
(runtime/tests/test_color_example.c, the block the README shows) built out of tree against the
installed prefix, once with pkg-config and once with CMake's find_package(tlblab), and run.

Uses the runtime `make setup` built (build/runtime); installs into a temporary prefix."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build/runtime"
EXAMPLE = ROOT / "runtime/tests/test_color_example.c"

pytestmark = pytest.mark.skipif(not (BUILD / "CMakeCache.txt").is_file() or shutil.which("cmake") is None,
                                reason="the C runtime is not configured (make setup builds build/runtime)")


def run(*cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))}:\n{p.stdout}\n{p.stderr}"
    return p


@pytest.fixture(scope="module")
def prefix(tmp_path_factory) -> Path:
    run("cmake", "--build", BUILD, "-j2", "--target", "tlblab", "tlblab_shared")
    p = tmp_path_factory.mktemp("prefix")
    run("cmake", "--install", BUILD, "--prefix", p)
    return p


def test_install_puts_the_libraries_headers_and_package_files_under_the_prefix(prefix):
    lib = prefix / "lib"
    for f in ["lib/libtlblab.a", "lib/libtlblab.so", "include/tlblab/color.h", "include/tlblab/ptwarm.h",
              "include/tlblab/tlbmig.h", "include/tlblab/roi.h", "include/tlblab/version.h",
              "lib/pkgconfig/tlblab.pc", "lib/cmake/tlblab/tlblabConfig.cmake",
              "lib/cmake/tlblab/tlblabConfigVersion.cmake", "lib/cmake/tlblab/tlblabTargets.cmake"]:
        assert (prefix / f).is_file(), f
    assert any(p.name.startswith("libtlblab.so.0") for p in lib.iterdir())
    # Nothing of the build tree leaks into the installed package (a relocated prefix must work).
    for f in (lib / "cmake/tlblab").iterdir():
        assert str(ROOT) not in f.read_text(), f


@pytest.mark.skipif(shutil.which("pkg-config") is None, reason="pkg-config is not installed")
def test_the_readme_example_builds_with_pkg_config_and_runs(prefix, tmp_path):
    env = {**os.environ, "PKG_CONFIG_PATH": str(prefix / "lib/pkgconfig")}
    assert run("pkg-config", "--modversion", "tlblab", env=env).stdout.strip() == "0.1.0"
    flags = run("pkg-config", "--cflags", "--libs", "tlblab", env=env).stdout.split()
    exe = tmp_path / "example"
    cc = os.environ.get("CC", "cc")
    run(cc, "-std=c11", "-Wall", "-Werror", EXAMPLE, "-o", exe, *flags, f"-Wl,-rpath,{prefix / 'lib'}")
    run(exe)
    # The static library, with the same headers.
    cflags = run("pkg-config", "--cflags", "tlblab", env=env).stdout.split()
    run(cc, "-std=c11", EXAMPLE, "-o", tmp_path / "example-static", *cflags, prefix / "lib/libtlblab.a", "-pthread")
    run(tmp_path / "example-static")


def test_the_readme_example_builds_with_find_package_and_runs(prefix, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(EXAMPLE, src / "example.c")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\n"
        "project(example C)\n"
        "find_package(tlblab 0.1 REQUIRED)\n"
        "add_executable(example example.c)\n"
        "target_link_libraries(example PRIVATE tlblab::tlblab)\n"
        "add_executable(example_shared example.c)\n"
        "target_link_libraries(example_shared PRIVATE tlblab::tlblab_shared)\n")
    build = tmp_path / "build"
    run("cmake", "-S", src, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release")
    run("cmake", "--build", build)
    run(build / "example")
    run(build / "example_shared")
    # A version the package does not offer is refused by its version file.
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.20)\nproject(example C)\n"
                                        "find_package(tlblab 9.0 REQUIRED)\n")
    p = subprocess.run(["cmake", "-S", str(src), "-B", str(tmp_path / "b2"), f"-DCMAKE_PREFIX_PATH={prefix}"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "9.0" in p.stderr
