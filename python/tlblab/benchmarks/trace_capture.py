"""Capture speed of `tlblab trace record` (Valgrind Lackey, streamed) on the seeds' real programs.

For each program (Debian stand-ins for the seeds' MiBench / PARSEC / LibLinear runs, see
docs/traces.md) this runs it natively, then under `tlblab trace record`, and reports references
captured, capture rate (M refs/s), slowdown against native, and trace bytes per reference.
Inputs are generated deterministically in a temporary directory. Programs that are not
installed are reported as skipped (scripts/debian-packages.txt lists their packages).
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time

NAME = "trace_capture"


def _inputs(d: str, scale: int) -> dict[str, str]:
    rng = random.Random(1)
    w, h = 256 * scale, 192 * scale
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
    }


def run(quick: bool) -> dict:
    from tlblab import trace

    if shutil.which("valgrind") is None:
        return {"skipped": "valgrind not installed"}
    out: dict = {}
    with tempfile.TemporaryDirectory() as d:
        inputs = _inputs(d, 1)
        for name, (argv, stdin, stdout) in _programs(inputs).items():
            if shutil.which(argv[0]) is None:
                out[name] = {"skipped": f"{argv[0]} not installed"}
                continue
            natives = []
            for _ in range(1 if quick else 3):
                with open(stdin or os.devnull, "rb") as fi, open(stdout or os.devnull, "wb") as fo:
                    t0 = time.perf_counter()
                    subprocess.run(argv, check=False, stdin=fi, stdout=fo, stderr=subprocess.DEVNULL)
                    natives.append(time.perf_counter() - t0)
            path = os.path.join(d, f"{name}.tlbt")
            # A window of the run: long programs are stopped after `limit` references.
            rep = trace.record(argv, path, limit=2_000_000 if quick else 20_000_000, stdin=stdin, stdout=stdout)
            s = rep["summary"]
            native = statistics.median(natives)
            out[name] = {
                "argv": " ".join(argv),
                "references": s["accesses"],
                "instr": s["instr"],
                "loads": s["loads"],
                "stores": s["stores"],
                "capture_seconds": round(rep["seconds"], 2),
                "capture_mrefs_per_s": round(rep["references_seen"] / rep["seconds"] / 1e6, 2),
                "native_seconds": round(native, 4),
                # Only meaningful for complete runs (not stopped at the limit).
                "slowdown": round(rep["seconds"] / native, 1) if native > 0 and not rep["killed_at_limit"] else None,
                "bytes_per_ref": round(os.path.getsize(path) / max(s["accesses"], 1), 3),
                "stopped_at_limit": rep["killed_at_limit"],
            }
    return out
