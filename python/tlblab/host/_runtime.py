"""Locating (and if needed building) the C runtime's executables under build/runtime."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tlblab.errors import UserError

REPO_ROOT = Path(__file__).resolve().parents[3]


def build_dir() -> Path:
    return Path(os.environ.get("TLBLAB_RUNTIME_BUILD", REPO_ROOT / "build" / "runtime"))


def executable(name: str) -> Path:
    """Path of a runtime executable, building the runtime with CMake first if it is missing."""
    path = build_dir() / name
    if not path.exists():
        src = REPO_ROOT / "runtime"
        if not (src / "CMakeLists.txt").exists():
            # An installed wheel carries the Python package, not the C runtime: say how to get it.
            raise UserError(f"'{name}' is part of the C runtime, which an installed tlblab does not carry: build it in "
                            f"a clone of tlblab (cmake -S runtime -B build/runtime && cmake --build build/runtime; "
                            f"the Valgrind tool needs the Debian package valgrind) and set "
                            f"TLBLAB_RUNTIME_BUILD to that build/runtime")
        subprocess.run(["cmake", "-S", str(src), "-B", str(build_dir()), "-DCMAKE_BUILD_TYPE=Release"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", str(build_dir()), "-j2"], check=True, stdout=subprocess.DEVNULL)
    if not path.exists():
        raise UserError(f"runtime executable '{name}' was not built (looked in {build_dir()})")
    return path
