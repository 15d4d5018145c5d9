"""Capture speed of `tlblab trace record`: tlblab's Valgrind tool beside Lackey, on real programs.

For each program (Debian stand-ins for the seeds' MiBench / PARSEC / LibLinear runs, see
docs/traces.md, plus `ls -lR` and `gzip`) this runs it natively, under Valgrind's Nulgrind
(`--tool=none`: Valgrind's own floor), under tlblab's tool with `--count-only=yes` (the same
instrumentation, counting instead of writing: this tool's floor), then captures it with
`tlblab trace record` (tlblab's tool, the whole run) and with `--tool lackey` (a window of
references: Lackey is 10-30 times slower). It reports references, capture rate (M refs/s),
slowdown against native (whole runs only), and trace bytes per reference.
Inputs are generated deterministically in a temporary directory. Programs that are not
installed are reported as skipped (scripts/debian-packages.txt lists their packages).
"""

from __future__ import annotations

import os
import platform
import random
import shutil
import statistics
import struct
import subprocess
import tempfile
import time

from tlblab.reproduce_timings import cpu_model

NAME = "capture"


def _inputs(d: str, scale: int) -> dict[str, str]:
    rng = random.Random(1)
    # 1024x768: at 256x192 (MiBench's small input) cjpeg makes 2.5 M references, so Valgrind's
    # start-up (0.3 s) would be most of what is timed.
    w, h = 1024 * scale, 768 * scale
    ppm = os.path.join(d, "img.ppm")
    with open(ppm, "wb") as f:
        f.write(f"P6 {w} {h} 255\n".encode())
        f.write(bytes(((x * 7 + y * 3 + (x * y) % 17) & 255) for y in range(h) for x in range(w) for _ in range(3)))
    words = os.path.join(d, "words.txt")
    with open(words, "w") as f:
        for _ in range(20000 * scale):
            f.write("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 12))) + "\n")
    svm = os.path.join(d, "data.svm")
    with open(svm, "w") as f:
        for _ in range(2000 * scale):
            label = rng.choice((-1, 1))
            feats = " ".join(f"{j}:{rng.gauss(label * 0.3, 1):.3f}" for j in range(1, 29))  # HIGGS has 28
            f.write(f"{label} {feats}\n")
    doc = os.path.join(d, "doc.man")
    with open(doc, "w") as f:
        f.write(".TH DOC 1\n.SH NAME\ndoc \\- a generated manual page\n.SH DESCRIPTION\n")
        for i in range(300 * scale):
            f.write(f".PP\nParagraph {i}. " + " ".join(rng.choice(("translation", "lookaside", "buffer", "page", "walk", "entry")) for _ in range(60)) + "\n")
    subprocess.run(["cjpeg", "-outfile", os.path.join(d, "img.jpg"), ppm], check=False, capture_output=True)
    return {"ppm": ppm, "words": words, "svm": svm, "doc": doc, "jpg": os.path.join(d, "img.jpg"), "dir": d}


def _programs(i: dict[str, str]) -> dict[str, tuple[list[str], str | None, str | None]]:
    """name -> (argv, stdin file, stdout file); no shells, Lackey must see the program itself."""
    d = i["dir"]
    bc = os.path.join(d, "math.bc")
    with open(bc, "w") as f:
        f.write("scale=40\nfor(i=1;i<400;i++) x=e(l(i)/3)+s(i)*c(i)\nquit\n")
    return {
        "cjpeg": (["cjpeg", "-outfile", os.path.join(d, "o.jpg"), i["ppm"]], None, None),
        "djpeg": (["djpeg", "-outfile", os.path.join(d, "o.ppm"), i["jpg"]], None, None),
        "sort": (["sort", "-o", os.path.join(d, "sorted.txt"), i["words"]], None, None),
        "pamedge": (["pamedge", i["ppm"]], None, os.path.join(d, "edge.pam")),
        "bc": (["bc", "-l", bc], None, os.path.join(d, "bc.out")),
        # troff itself: the `groff` driver only forks troff and grotty, which Lackey would not see.
        "troff": (["troff", "-man", "-Tutf8", i["doc"]], None, os.path.join(d, "doc.txt")),
        "liblinear": (["liblinear-train", "-q", i["svm"], os.path.join(d, "model")], None, None),
        "ls -lR": (["ls", "-lR", "/usr/share/doc"], None, os.path.join(d, "ls.txt")),
        "gzip": (["gzip", "-9", "-c", i["ppm"]], None, os.path.join(d, "img.ppm.gz")),
    }


def _timed(argv: list[str], stdin: str | None, stdout: str | None, env: dict | None = None) -> float:
    with open(stdin or os.devnull, "rb") as fi, open(stdout or os.devnull, "wb") as fo:
        t0 = time.perf_counter()
        subprocess.run(argv, check=False, stdin=fi, stdout=fo, stderr=subprocess.DEVNULL, env=env)
        return time.perf_counter() - t0


def _count_only(tool_dir: str, argv, stdin, stdout, d: str) -> tuple[float, int]:
    """Seconds and references of a run under tlblab's tool with --count-only=yes."""
    words = os.path.join(d, "count.bin")
    env = dict(os.environ, VALGRIND_LIB=tool_dir)
    with open(words, "wb") as w:
        with open(stdin or os.devnull, "rb") as fi, open(stdout or os.devnull, "wb") as fo:
            t0 = time.perf_counter()
            subprocess.run(["valgrind", "-q", "--tool=tlblab", "--count-only=yes", f"--out-fd={w.fileno()}", *argv],
                           check=False, stdin=fi, stdout=fo, stderr=subprocess.DEVNULL, env=env,
                           pass_fds=(w.fileno(),))
            secs = time.perf_counter() - t0
    with open(words, "rb") as f:
        tail = f.read()[-24:]
    fetches, loads, stores = struct.unpack("<3Q", tail)
    return secs, fetches + loads + stores


def run(quick: bool) -> dict:
    from tlblab import trace

    if shutil.which("valgrind") is None:
        return {"skipped": "valgrind not installed"}
    tool_dir = trace.tool_dir()
    lackey_window = 2_000_000 if quick else 20_000_000
    # tlblab's tool captures whole runs (bc's is 2.6 G references), but not in --quick mode.
    tlblab_limit = 100_000_000 if quick else None
    out: dict = {"host": platform.node(), "cpu": cpu_model() or platform.processor() or "unknown", "load_average_at_start": os.getloadavg()[0],
                 "lackey_window_references": lackey_window}
    with tempfile.TemporaryDirectory() as d:
        inputs = _inputs(d, 1)
        for name, (argv, stdin, stdout) in _programs(inputs).items():
            if shutil.which(argv[0]) is None:
                out[name] = {"skipped": f"{argv[0]} not installed"}
                continue
            native = statistics.median(_timed(argv, stdin, stdout) for _ in range(1 if quick else 3))
            env = dict(os.environ, VALGRIND_LIB=tool_dir)
            nulgrind = _timed(["valgrind", "-q", "--tool=none", *argv], stdin, stdout, env)
            count_secs, count_refs = _count_only(tool_dir, argv, stdin, stdout, d)
            row: dict = {"argv": " ".join(argv), "native_seconds": round(native, 4),
                         "nulgrind_seconds": round(nulgrind, 3),
                         "count_only_seconds": round(count_secs, 3),
                         "count_only_mrefs_per_s": round(count_refs / count_secs / 1e6, 2)}
            for tool in ("tlblab", "lackey"):
                path = os.path.join(d, f"{name.replace(' ', '_')}.{tool}.tlbt")
                rep = trace.record(argv, path, stdin=stdin, stdout=stdout, tool=tool,
                                   limit=lackey_window if tool == "lackey" else tlblab_limit)
                s = rep["summary"]
                row[tool] = {
                    "references": s["accesses"],
                    "capture_seconds": round(rep["seconds"], 3),
                    "mrefs_per_s": round(rep["references_seen"] / rep["seconds"] / 1e6, 2),
                    # Only meaningful for complete runs (not stopped at the window's end).
                    "slowdown": round(rep["seconds"] / native, 1) if native > 0 and not rep["killed_at_limit"] else None,
                    "bytes_per_ref": round(os.path.getsize(path) / max(s["accesses"], 1), 3),
                    "stream_bytes_per_ref": round(rep["stream_bytes"] / max(rep["references_seen"], 1), 2),
                    "whole_run": not rep["killed_at_limit"],
                }
                os.remove(path)
            row["speedup_over_lackey"] = round(row["tlblab"]["mrefs_per_s"] / max(row["lackey"]["mrefs_per_s"], 1e-9), 1)
            out[name] = row
    out["load_average_at_end"] = os.getloadavg()[0]
    return out
