"""Capturing ARMv7 programs, the ISA of seed 004's Cortex-A9, under QEMU's user mode.

Seed 004 (Song, Park, Kim 2022, §IV-§V) profiled and ran ARMv7 MiBench binaries on a Cortex-A9.
An x86-64 capture under Valgrind has another ISA's code and data layout, a C library that picks
its string and memory routines by the host CPU, and stack addresses that move with the working
folder. Here a program is cross-compiled with Debian's armhf toolchain (gcc-arm-linux-gnueabihf,
libc6-dev-armhf-cross) and run under `qemu-arm -cpu cortex-a9` (Debian's qemu-user) with
tlblab's TCG plugin (runtime/qemu-plugin/), which writes the word stream of tlblab's Valgrind
tool; tlblab_trace::capture_qemu encodes it as a .tlbt while it streams, with the environment
emptied, argv[0] and the program's path of fixed length, and no folder or time in the file: the
same bytes on every host and in every folder. The x86-64 (Valgrind) path stays for x86 seeds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Sequence

from tlblab.errors import UserError

CROSS_CC = "arm-linux-gnueabihf-gcc"
QEMU = "qemu-arm"
# Debian's armhf sysroot (libc6-armhf-cross): the guest's dynamic loader and C library.
SYSROOT = Path("/usr/arm-linux-gnueabihf")
# Seed 004 §III, §V.1: an i.MX6 Quad's Cortex-A9; QEMU emulates that core (with NEON and VFPv3).
CPU = "cortex-a9"


def plugin() -> Path:
    """tlblab's QEMU plugin, built with the C runtime (built now if missing)."""
    from tlblab.host import _runtime

    return _runtime.executable("qemu-plugin/libtlblab_qemu.so")


def cross_compile(source: Path, out: Path, cflags: Sequence[str] = ("-O2",), libs: Sequence[str] = ()) -> Path:
    """Compiles C `source` for ARMv7 (hard-float EABI) into `out`, atomically."""
    from tlblab.files import atomic_write

    if shutil.which(CROSS_CC) is None:
        raise UserError(f"{CROSS_CC} is not installed (Debian packages gcc-arm-linux-gnueabihf and "
                        "libc6-dev-armhf-cross; scripts/debian-packages.txt)")

    def compile_to(tmp: str) -> None:
        r = subprocess.run([CROSS_CC, *cflags, "-o", tmp, str(source), *libs], capture_output=True, text=True)
        if r.returncode != 0:
            raise UserError(f"capture_qemu: compiling {source} with '{CROSS_CC} {' '.join(cflags)}' failed:\n"
                            f"{r.stderr.strip()}")

    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, compile_to)
    return out


def record(argv: Sequence[str], output: str | os.PathLike[str], *, limit: int | None = None,
           cpu: str = CPU, qemu: str = QEMU, sysroot: Path | None = SYSROOT,
           stdout: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Runs ARMv7 binary `argv[0]` (with `argv[1:]`) under QEMU's user mode and writes its
    references to `output`: every executed instruction's fetch, then its loads and stores,
    user space only (as Valgrind's tools see a program). `limit` stops it after that many."""
    from tlblab import _native

    if shutil.which(qemu) is None:
        raise UserError(f"{qemu} is not installed (Debian package qemu-user; scripts/debian-packages.txt)")
    return json.loads(_native.trace_record_qemu(
        [str(a) for a in argv], os.fspath(output), qemu, str(plugin()), cpu,
        None if sysroot is None else str(sysroot), limit, None if stdout is None else os.fspath(stdout)))


def toolchain_versions() -> str:
    """The cross compiler's and QEMU's versions, for cache keys."""
    from tlblab.files import tool_version

    return tool_version([CROSS_CC, "--version"], "capture_qemu") + tool_version([QEMU, "--version"], "capture_qemu")
