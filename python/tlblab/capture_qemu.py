"""Capturing ARMv7 programs, the ISA of seed 004's Cortex-A9, under QEMU's user mode.

Seed 004 (Song, Park, Kim 2022, §IV-§V) profiled and ran ARMv7 MiBench binaries on a Cortex-A9.
An x86-64 capture under Valgrind has another ISA's code and data layout, a C library that picks
its string and memory routines by the host CPU, and stack addresses that move with the working
folder. Here a program is cross-compiled for Debian's armhf port (clang targeting
arm-linux-gnueabihf, linked by binutils-arm-linux-gnueabihf against Debian's armhf C library and
libgcc, libc6-dev-armhf-cross and libgcc-12-dev-armhf-cross) and run under `qemu-arm -cpu cortex-a9` (Debian's qemu-user) with
tlblab's TCG plugin (runtime/qemu-plugin/), which writes the word stream of tlblab's Valgrind
tool; tlblab_trace::capture_qemu encodes it as a .tlbt while it streams, with the environment
emptied (or exactly the variables a caller gives, `record`'s `env`), argv[0] and the program's
path of fixed length, and no folder or time in the file: the same bytes on every host and in
every folder. The x86-64 (Valgrind) path stays for x86 seeds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Mapping, Sequence

from tlblab.errors import UserError

# The cross compiler: clang, not Debian's gcc-arm-linux-gnueabihf, which conflicts with
# gcc-multilib (Debian 12: gcc-12-arm-linux-gnueabihf "Conflicts: gcc-multilib"), and seed 004's
# x86 path builds its programs with gcc -m32; installing either removed the other. Its code is
# Debian's armhf baseline, as the port's gcc makes it (configured --with-arch=armv7-a
# --with-fpu=vfpv3-d16 --with-float=hard --with-mode=thumb: Thumb-2 code).
CROSS_CC = "clang"
CROSS_TARGET = ["--target=arm-linux-gnueabihf", "-march=armv7-a", "-mfpu=vfpv3-d16", "-mfloat-abi=hard",
                "-mthumb"]
# The linker clang runs for that target (binutils-arm-linux-gnueabihf).
CROSS_LD = "arm-linux-gnueabihf-ld"
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

    if shutil.which(CROSS_CC) is None or shutil.which(CROSS_LD) is None:
        raise UserError(f"{CROSS_CC} or {CROSS_LD} is not installed (Debian packages clang, "
                        "binutils-arm-linux-gnueabihf, libc6-dev-armhf-cross and libgcc-12-dev-armhf-cross; "
                        "scripts/debian-packages.txt)")

    def compile_to(tmp: str) -> None:
        r = subprocess.run([CROSS_CC, *CROSS_TARGET, *cflags, "-o", tmp, str(source), *libs],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise UserError(f"capture_qemu: compiling {source} with '{CROSS_CC} {' '.join([*CROSS_TARGET, *cflags])}' "
                            "failed:\n"
                            f"{r.stderr.strip()}")

    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, compile_to)
    return out


def record(argv: Sequence[str], output: str | os.PathLike[str], *, limit: int | None = None,
           cpu: str = CPU, qemu: str = QEMU, sysroot: Path | None = SYSROOT,
           stdout: str | os.PathLike[str] | None = None,
           files: Sequence[str | os.PathLike[str]] = (), env: Mapping[str, str] | None = None,
           own_pid_namespace: bool = False) -> dict[str, Any]:
    """Runs ARMv7 binary `argv[0]` (with `argv[1:]`) under QEMU's user mode and writes its
    references to `output`: every executed instruction's fetch, then its loads and stores,
    user space only (as Valgrind's tools see a program), and its system calls in the trace's
    footer (`syscalls`: [at, number, arg1, arg2, arg3, result] each, `at` the references before
    the call; `syscalls_of` reads them). `limit` stops it after that many references. `files`
    are copied into the guest's working folder first, for argv to name by file name alone (no
    host folder on the guest's stack). `env` is the guest's whole environment, in its order (by
    default none; QEMU's own stays empty either way), and the trace's metadata names it.
    `own_pid_namespace` runs QEMU (and so the guest) as pid 1 of a PID namespace of its own
    (`tlblab.trace.record`'s)."""
    from tlblab import _native, phases

    if shutil.which(qemu) is None:
        raise UserError(f"{qemu} is not installed (Debian package qemu-user; scripts/debian-packages.txt)")
    with phases.phase(phases.CAPTURE):  # tlblab reproduce's timings: a real program's run
        return json.loads(_native.trace_record_qemu(
            [str(a) for a in argv], os.fspath(output), qemu, str(plugin()), cpu,
            None if sysroot is None else str(sysroot), limit, None if stdout is None else os.fspath(stdout),
            [os.fspath(f) for f in files], list((env or {}).items()), own_pid_namespace))


# Debian's armhf port as a board would run it: its packages unpacked into one folder, the guest's
# root under QEMU's -L, with an /etc/ld.so.cache made by the port's own ldconfig. Without a cache
# in the root, the guest's loader reads the host's (QEMU falls back to host paths: an x86-64
# cache whose i386 entries it opens and rejects) and then probes every hardware-capability
# folder for each library (94 failed openat and statx calls in a MiBench run), kernel entries a
# native armhf system, whose loader finds each library in its cache, does not make.
SYSROOT_BASE = ("libc6", "libc-bin")


def debian_sysroot(packages: Sequence[str], cache: Path) -> Path:
    """A root folder of Debian's armhf `packages` (with SYSROOT_BASE) under `cache`, made once:
    each package's current bookworm .deb fetched with apt-get (a private package list, not the
    host's), unpacked with dpkg-deb, and its ld.so.cache made by the port's ldconfig under
    qemu-arm (`-r`: a chroot, so as root). Its `PACKAGES` file names the .debs (their versions),
    what `sysroot_id` gives the captures' cache keys."""
    import tempfile

    names = sorted(set(SYSROOT_BASE) | set(packages))
    from tlblab.files import content_digest

    out = Path(cache) / f"armhf-{content_digest(*names)}"
    if (out / "PACKAGES").is_file():
        return out
    for tool in ("apt-get", "dpkg-deb", QEMU):
        if shutil.which(tool) is None:
            raise UserError(f"capture_qemu: making the armhf root needs {tool} (Debian's apt, dpkg, qemu-user)")
    if os.geteuid() != 0:
        raise UserError("capture_qemu: making the armhf root runs the port's ldconfig in a chroot, which needs root")
    Path(cache).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{out.name}.", dir=cache) as tmp:
        t = Path(tmp)
        for d in ("lists/partial", "archives/partial", "debs", "root"):
            (t / d).mkdir(parents=True)
        (t / "status").touch()
        apt = ["apt-get", "-q", "-o", "APT::Architecture=armhf", "-o", "APT::Architectures::=armhf",
               "-o", f"Dir::State::Lists={t / 'lists'}", "-o", f"Dir::Cache={t}",
               "-o", f"Dir::State::status={t / 'status'}", "-o", "APT::Sandbox::User=root"]
        # An index that fails to update (a mirror mid-sync: one of bookworm, -updates, -security)
        # is not fatal while the packages still download.
        update = subprocess.run([*apt, "update"], cwd=t, capture_output=True, text=True)
        r = subprocess.run([*apt, "download", *names], cwd=t / "debs", capture_output=True, text=True)
        if r.returncode != 0:
            raise UserError(f"capture_qemu: apt-get download for the armhf root failed: {r.stderr.strip()[-300:]} "
                            f"(apt-get update said: {update.stderr.strip()[-200:] or 'nothing'})")
        debs = sorted(p.name for p in (t / "debs").glob("*.deb"))
        for deb in debs:
            r = subprocess.run(["dpkg-deb", "-x", str(t / "debs" / deb), str(t / "root")], capture_output=True, text=True)
            if r.returncode != 0:
                raise UserError(f"capture_qemu: unpacking {deb}: {r.stderr.strip()}")
        root = t / "root"
        r = subprocess.run([QEMU, str(root / "sbin" / "ldconfig"), "-X", "-r", str(root)], capture_output=True,
                           text=True, env={})
        if r.returncode != 0 or not (root / "etc" / "ld.so.cache").is_file():
            raise UserError(f"capture_qemu: the armhf ldconfig failed: {r.stderr.strip()}")
        (root / "PACKAGES").write_text("".join(f"{d}\n" for d in debs))
        try:
            root.rename(out)
        except OSError:
            if not (out / "PACKAGES").is_file():  # not another process's finished root
                raise
    return out


def sysroot_id(root: Path) -> str:
    """What identifies a `debian_sysroot` in a cache key: its packages' file names (versions)."""
    return (Path(root) / "PACKAGES").read_text()


def toolchain_versions() -> str:
    """The cross compiler's, its linker's and QEMU's versions and the target's flags, for cache keys."""
    from tlblab.files import tool_version

    return (tool_version([CROSS_CC, "--version"], "capture_qemu") + tool_version([CROSS_LD, "--version"], "capture_qemu")
            + " ".join(CROSS_TARGET) + tool_version([QEMU, "--version"], "capture_qemu"))


def syscalls_of(trace: str | os.PathLike[str],
                whole: dict[str, Any] | None = None) -> list[tuple[int, int, int, int, int, int | None]]:
    """The system calls a QEMU capture recorded (its footer's `syscalls`), in the order the guest
    made them: (references before the call, the call's number, its first three arguments and its
    result, None for a call that never returned or whose result is a host's process or thread
    id, which would make captures differ). The arguments are QEMU's 64-bit widening of
    the guest's registers: an ARMv7 guest's are their low 32 bits. `whole` is the trace's
    `tlblab.trace.info` when the caller has it (it scans the whole trace)."""
    from tlblab.trace import info

    footer = (info(trace) if whole is None else whole).get("footer") or {}
    if "syscalls" not in footer:
        raise UserError(f"{os.fspath(trace)}: no system calls in its footer: not a capture of tlblab.capture_qemu "
                        "(or one made before it recorded them)")
    return [tuple(c) for c in footer["syscalls"]]
