"""Measuring the host's TLBs by timing alone, from Python.

    >>> import tlblab.probe as tp
    >>> r = tp.probe(quick=True)            # ≈ 10-20 s; every number a median with its spread
    >>> print(tp.format_text(r))             # what `tlblab probe` prints
    >>> r.summary_frame()                    # pandas: name, value, spread, confidence, CPUID, …
    >>> tp.host_toml(r)                      # a machine preset `tlblab simulate --machine` accepts

The measurements run in Rust (`crates/tlblab-probe`); this module turns the report into text,
DataFrames, a machine preset, and the measured-vs-simulated validation. Measured values never
come from CPUID: CPUID's declared values are printed beside them and disagreements flagged.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import re
import statistics
from dataclasses import dataclass
from typing import Any

from tlblab import _native, interruptible
from tlblab.errors import UserError
from tlblab.files import atomic_write

SECTIONS: list[str] = list(_native.probe_sections())


@dataclass
class ProbeResult:
    """The probe's report (`raw` is the JSON from `tlblab_probe::probe::ProbeReport`)."""

    raw: dict[str, Any]

    def measured(self, name: str) -> dict[str, Any] | None:
        """The summary entry whose name starts with `name` (e.g. "L2 DTLB entries")."""
        for m in self.raw["summary"]:
            if m["name"].startswith(name):
                return m
        return None

    def value(self, name: str) -> float | None:
        m = self.measured(name)
        return None if m is None else m["value"]

    def summary_frame(self):
        """One row per headline number."""
        import pandas as pd

        return pd.DataFrame([{**m, "spread": tuple(m["spread"]) if m["spread"] else None} for m in self.raw["summary"]])

    def sweep_frame(self, which: str = "dtlb"):
        """The capacity sweep (`dtlb`, `itlb` or `random`): N, test/control/excess medians and IQRs."""
        import pandas as pd

        rows = self.raw[{"dtlb": "dtlb_sweep", "itlb": "itlb_sweep", "random": "random_sweep"}[which]]
        return pd.DataFrame([
            {"n": r["n"], "test_ns": r["test"]["median"], "control_ns": r["control"]["median"],
             "excess_ns": r["excess"]["median"], "excess_iqr": r["excess"]["q3"] - r["excess"]["q1"]}
            for r in rows
        ])


def probe(*, quick: bool = False, sections: list[str] | None = None, cpu: int | None = None,
          other_cpu: int | None = None, seed: int = 1, reps: int | None = None,
          window_ms: float | None = None, trials: int | None = None, raise_priority: bool = True,
          validation_curve: bool = False) -> ProbeResult:
    """Runs the probe on this machine (Linux x86-64). `sections` picks from `SECTIONS`."""
    for s in sections or []:
        if s not in SECTIONS:
            raise UserError(f"unknown probe section '{s}': expected one of {', '.join(SECTIONS)}")
    opts = {"quick": quick, "seed": seed, "cpu": cpu, "other_cpu": other_cpu, "sections": sections or [],
            "reps": reps, "window_ms": window_ms, "trials": trials, "raise_priority": raise_priority,
            "validation_curve": validation_curve}
    return ProbeResult(json.loads(interruptible.call(_native.probe, json.dumps(opts))))


SIMULATED_SECTIONS = ["dtlb", "l1_assoc", "l2_index"]


def probe_simulated(machine: str | dict[str, Any], *, quick: bool = False, sections: list[str] | None = None,
                    seed: int = 1, reps: int | None = None, trials: int | None = None,
                    noise: str = "vm") -> ProbeResult:
    """The probe's data-TLB sections on a simulated host: `machine` (a preset name, machine file or
    description) timed by the simulator, with the disturbances of a shared VM added (`noise="vm"`)
    or none. What the probe would read on a host with that machine's TLBs; deterministic for a
    seed. Its CPUID fields declare the machine's own TLBs (docs/probe.md, "Simulated hosts")."""
    from tlblab import machine_config

    for s in sections or []:
        if s not in SIMULATED_SECTIONS:
            raise UserError(f"probe section '{s}' cannot run on a simulated host: expected one of "
                            f"{', '.join(SIMULATED_SECTIONS)}")
    if noise not in ("vm", "none"):
        raise UserError(f"noise '{noise}': expected vm or none")
    try:
        m = machine_config(machine)
    except ValueError as e:
        raise UserError(str(e).splitlines()[0]) from None
    opts = {"quick": quick, "seed": seed, "sections": sections or [], "reps": reps, "trials": trials}
    try:
        raw = interruptible.call(_native.probe_simulated, json.dumps(m), json.dumps(opts), noise)
    except ValueError as e:
        raise UserError(str(e).splitlines()[0]) from None
    return ProbeResult(json.loads(raw))


def _fmt_value(m: dict[str, Any]) -> str:
    v = m["value"]
    if v is None:
        return "-"
    unit = m["unit"]
    if unit == "entries":
        return f"{v:.0f}"
    if unit == "ns":
        return f"{v:.2f} ns"
    return f"{v:.2f}"


def _fmt_spread(m: dict[str, Any]) -> str:
    s = m["spread"]
    if not s:
        return ""
    if m["unit"] == "entries":
        return f"{s[0]:.0f}..{s[1]:.0f}"
    return f"{s[0]:.2f}..{s[1]:.2f}"


def format_text(r: ProbeResult) -> str:
    """The human-readable summary `tlblab probe` prints."""
    from tlblab.report_text import format_table

    raw = r.raw
    c = raw["cpuid"]
    second = "" if raw["other_cpu"] is None else f" (second CPU {raw['other_cpu']})"
    hyper = f", hypervisor {c['hypervisor']}" if c["hypervisor"] else ""
    lines = [f"tlblab probe {'(quick) ' if raw['quick'] else ''}on CPU {raw['cpu']}{second}: "
             f"{c['brand'] or c['vendor']} (family {c['family']:#x}, model {c['model']:#x}){hyper}"]
    rows = []
    for m in raw["summary"]:
        flag = "DISAGREES" if m["disagrees"] else ""
        rows.append([m["name"], _fmt_value(m), _fmt_spread(m), m["confidence"], m["cpuid"] or "", flag])
    lines.append(format_table(["measured (timing only)", "value", "spread", "confidence", "CPUID declares", ""], rows))
    notes = [f"  {m['name']}: {m['note']}" for m in raw["summary"] if m["note"] and m["unit"] != "ns"]
    if notes:
        lines.append("notes:")
        lines.extend(notes)
    w, rerun = raw["windows"]
    lb, la = raw["loadavg_before"], raw["loadavg_after"]
    lines.append(f"load average {lb} before, {la} after; {rerun} of {w} timing windows were re-run because "
                 f"another task took the CPU; priority {'raised' if raw['priority_raised'] else 'normal'}; "
                 f"{raw['seconds']:.1f} s")
    for e in raw["errors"]:
        lines.append(f"warning: {e}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The host preset


def _ghz(r: ProbeResult) -> float:
    """Core clock estimate: a dependent L1D hit is 4 cycles on Zen 3 and Intel cores since
    Sandy Bridge (AMD #56665 §2.11), so f = 4 / (L1 hit ns). The VM does not expose the clock."""
    hit = r.value("load, L1 DTLB hit")
    if not hit or hit <= 0:
        return 3.0
    return 4.0 / hit


_CPUINFO = "/proc/cpuinfo"


def default_base(r: ProbeResult) -> str:
    """The preset whose unmeasured fields a host machine keeps: zen3-virt (nested paging: every
    guest walk reference and the final address go through a host walk, seed 001 §2.2.4) when the
    probe ran in a VM (CPUID's hypervisor signature, or the `hypervisor` flag of /proc/cpuinfo),
    else zen3. A guest's walks are two-dimensional; a preset without them underestimated the
    probe's own chase by 42-82% past the L2 DTLB's reach (docs/probe.md, --validate)."""
    if r.raw.get("cpuid", {}).get("hypervisor"):
        return "zen3-virt"
    try:
        with open(_CPUINFO, encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return "zen3-virt" if " hypervisor" in line else "zen3"
    except OSError:
        pass
    return "zen3"


_SYSFS_CACHE = "/sys/devices/system/cpu/cpu0/cache"


def sysfs_caches(root: str | None = None) -> list[dict[str, Any]]:
    """This CPU's caches as Linux describes them (`/sys/devices/system/cpu/cpu0/cache/index*`):
    level, kind ("data", "instr", "unified"), size in bytes, ways, line bytes. Empty when absent."""
    root = root or _SYSFS_CACHE
    out = []
    kinds = {"Data": "data", "Instruction": "instr", "Unified": "unified"}
    try:
        names = sorted(n for n in os.listdir(root) if n.startswith("index"))
    except OSError:
        return []
    for n in names:
        def rd(f: str) -> str:
            with open(os.path.join(root, n, f), encoding="utf-8") as fh:
                return fh.read().strip()
        try:
            size = rd("size")
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
            out.append({"level": int(rd("level")), "kind": kinds.get(rd("type"), "unified"),
                        "size": int(size.rstrip("KMG")) * mult, "ways": int(rd("ways_of_associativity")),
                        "line": int(rd("coherency_line_size"))})
        except (OSError, ValueError):
            continue
    return out


def host_machine(r: ProbeResult, base: str | None = None, *, sysfs: bool = True) -> dict[str, Any]:
    """A machine description for the simulator: `base` preset (default: `default_base`) with the
    measured TLB values.

    Measured: L1/L2 DTLB entries (and L1 associativity, L2 ways), L1/L2 ITLB entries when their
    confidence is not "unclear", the L2-hit latency, the core clock estimate. Everything else
    (caches, memory, walker, page-walk caches) stays the base preset's, with its sources.
    """
    from tlblab import machine_config

    base = base or default_base(r)
    m = machine_config(base)
    # The private caches (levels 1-2) from sysfs: the probe's chains and their controls live in
    # them, and a base preset's L1D of 32 KiB against the Intel VM's 48 KiB put the simulated
    # L1D misses at 512 lines instead of 768 (--validate: +56-93% at 609-724 pages). The shared
    # level stays the base's (this VM reports a 480 MiB L3 of 491520 sets, not credible), and so
    # do the latencies (sysfs has none).
    for hc in sysfs_caches() if sysfs else []:
        if hc["level"] > 2:
            continue
        for c in m.get("cache", []):
            if c["level"] == hc["level"] and c["kind"] == hc["kind"]:
                sets = hc["size"] // max(1, hc["ways"] * hc["line"])
                if sets < 1 or sets & (sets - 1):
                    break
                c.update(size=hc["size"], ways=hc["ways"], line=hc["line"])
                c["source"] = (f"sysfs cache/index (level {hc['level']} {hc['kind']}: {hc['size'] >> 10} KiB, "
                               f"{hc['ways']}-way, {hc['line']} B lines); latency kept from {base}")
                break
    ghz = _ghz(r)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    host = platform.node() or "this host"
    m["name"] = "host"
    # The base preset's energies are its parts' (docs/energy.md), not this host's: none is measured.
    m.pop("energy", None)
    m["description"] = f"measured by tlblab probe on {host}, {stamp}; other fields from preset {base}"
    m["source"] = f"tlblab probe (timing only) on {host}, {stamp}; unmeasured fields: preset {base}"
    m["frequency_mhz"] = int(round(ghz * 1000))
    l2_pen = r.measured("L1 DTLB miss, L2 DTLB hit")
    want = {("data", 1): "L1 DTLB entries", ("data", 2): "L2 DTLB entries",
            ("instr", 1): "L1 ITLB entries", ("instr", 2): "L2 ITLB entries"}
    for t in m["tlb"]:
        key = (t["kind"], t["level"])
        if key not in want:
            continue
        meas = r.measured(want[key])
        if key == ("data", 2):
            _write_set_index(r, t)
        if meas is None or meas["value"] is None or meas["confidence"] == "unclear":
            t["source"] = f"{t.get('source', '')} (tlblab probe: not measured clearly here; kept from {base})"
            continue
        entries = int(meas["value"])
        ways = t["ways"]
        assoc = r.measured("L1 DTLB associativity") if key == ("data", 1) else None
        if assoc is not None and assoc["note"].startswith("fully associative"):
            ways = "full"
        l1_ways = (re.match(r"(\d+)-way, \d+ sets", assoc["note"])
                   if assoc is not None and assoc["confidence"] != "unclear" else None)
        if l1_ways:
            ways = int(l1_ways.group(1))  # e.g. the Intel VM's 6-way, 16 sets (96 entries)
        org = r.measured("L2 DTLB organisation") if key == ("data", 2) else None
        org_ways = re.match(r"(\d+)-way", org["note"]) if org and org["confidence"] != "unclear" else None
        # The entries read as the conflict sets' sets x ways carry those ways at the entries'
        # confidence, whatever the organisation line says: it may be unclear over one stride the
        # trials disagree on (Zen 4, 2026-11-26: 128 x 24 read with the entries, the base's 16
        # ways kept, and 3072 / 16 = 192 sets written, a geometry nothing read).
        conflict = (re.match(r"from the conflict sets: (\d+) sets × (\d+) ways", meas["note"])
                    if key == ("data", 2) and not org_ways else None)
        org_sets = re.match(r"\d+-way, (\d+) sets", org["note"]) if org_ways else None
        if org_ways:
            ways = int(org_ways.group(1))
        elif conflict:
            ways = int(conflict.group(2))
        # The sets measured (the organisation line's, or the conflict sets' in the entries line)
        # are written as measured: rounding the entries to whole sets of the ways instead wrote a
        # quick probe's 4078 (Zen 5, 256 x 16, 2026-11-29 19:19 UTC) as 255 sets, which the host
        # tools cannot color ("not a power-of-two number of sets"). The organisation line is
        # inferred with the entries the entries line reports, so its sets x ways is that reading.
        sets_read = int(org_sets.group(1)) if org_sets else int(conflict.group(1)) if conflict else None
        if ways != "full":
            ways = int(ways)
            entries = (sets_read * ways if sets_read
                       else max(ways, int(round(entries / ways)) * ways))  # the engine needs whole sets
        t["entries"] = entries
        t["ways"] = ways
        t["source"] = (f"tlblab probe: {meas['value']:.0f} entries measured ({meas['confidence']} confidence, "
                       f"spread {_fmt_spread(meas)}; CPUID: {meas['cpuid']})"
                       + ("" if ways == "full" else
                          f"; {ways} ways measured (conflict sets, {org['confidence']} confidence)" if org_ways else
                          f"; {ways} ways measured (conflict sets, with the entries; the organisation line "
                          f"unclear)" if conflict else
                          f"; {ways} ways measured (page-stride sweep, {assoc['confidence']} confidence)"
                          if l1_ways else f"; ways kept from {base} (not measured clearly)"))
    # The L2-hit cost is a measurement of its own (the plateau between the knees), clear even
    # where the L2's entries are not (the Intel VM's STLB): written whenever it is not unclear.
    l2d = next((t for t in m["tlb"] if (t["kind"], t["level"]) in (("data", 2), ("unified", 2))), None)
    if l2d is not None and l2_pen and l2_pen["value"] and l2_pen["confidence"] != "unclear":
        l2d["latency"] = max(1, int(round(l2_pen["value"] * ghz)))
        l2d["source"] = (f"{l2d.get('source', '')}; latency {l2_pen['value']:.2f} ns × {ghz:.2f} GHz "
                         f"(tlblab probe: L1 DTLB miss, L2 DTLB hit, {l2_pen['confidence']} confidence)")
    _write_l2_cache_latency(r, m, ghz, base, sysfs)
    _write_l3_and_memory_latency(r, m, ghz, base, sysfs)
    if l2d is not None:
        _write_replacement(r, l2d)
    if l2d is not None and "walker" in m:
        _write_walk_latency(r, m, l2d, ghz, base)
    if l2d is not None:
        _write_foreign(r, m, l2d, base)
    return m


def _write_replacement(r: ProbeResult, l2d: dict[str, Any]) -> None:
    """Writes the L2 DTLB as a random chain over every set sees it when the probe reads its
    replacement as random-like (`ProbeReport::l2_replacement`, the "L2 DTLB replacement (random
    chain)" line): `replacement = "random"`, and, when the chain keeps at least a way a set fewer
    than the level has (the stride-1 trials' rise below sets x ways), the ways it keeps.

    Why the ways the chain keeps and not the level's: on the Zen 4 host (docs/probe.md) the
    conflict sets read 128 x 24 = 3072 (CPUID's 3072), one set alone keeps 24 pages, but a random
    chain over every set starts losing pages at 2399-2418 (18.7-18.9 a set) in every run, and past
    that it follows the engine's random replacement of 19 ways within 0.05-0.09 of the miss share
    from 0.75 to 1.25 x 3072 pages. What holds the rest is not established (not time: the same
    loss with the lap 4x faster; not the page-table lines or the index: the same at 64 sets in
    three layouts; it grows with the sets the chain spans). The ways are rounded down: a random
    level of w ways starts losing pages at sets x w, so no later than the measured rise."""
    rep = r.raw.get("l2_replacement")
    meas = r.measured("L2 DTLB entries")
    if (not rep or rep["shape"]["shape"] != "RandomLike" or l2d.get("ways") == "full"
            or meas is None or meas["confidence"] == "unclear"):
        # Only onto a level whose entries the probe wrote: a base preset's level kept because the
        # reading was unclear is not the level the envelope was read on.
        return
    sets, pages = int(rep["sets"]), int(rep["chain_pages"])
    ways = int(l2d["ways"])
    l2d["replacement"] = "random"
    note = (f"; replacement random: tlblab probe read the stride-1 envelope as random-like (it took "
            f"{rep['shape']['share']:.2f} of its rise to {rep['shape']['top_at']} pages by "
            f"{rep['shape']['at']}; LRU takes all of it)")
    if int(l2d["entries"]) // ways == sets and pages // sets < ways:
        kept = max(1, pages // sets)
        note += (f"; {kept} of the {ways} ways written: a random chain over every set starts losing "
                 f"pages at {pages} ({pages / sets:.1f} a set of {sets}), rounded down to whole ways "
                 f"(the level's {sets} x {ways} = {sets * ways} entries stay in the probe's report and "
                 f"its {ways} ways in hardware_ways)")
        l2d["ways"] = kept
        l2d["entries"] = sets * kept
        l2d["hardware_ways"] = ways  # the host tools color by the structure (TlbConfig::hardware_ways)
    l2d["source"] = f"{l2d.get('source', '')}{note}"


def l2_cache_latency(r: ProbeResult, l1d_bytes: int, l2_bytes: int) -> dict[str, Any] | None:
    """The L2 cache's load-to-use latency, measured by the probe's own data-cache chase: the
    capacity sweep's control (one line per element, 64 to a page, in random order, so neither
    the TLB nor the prefetchers take part) at the points whose footprint lies between 4× the L1D
    and half the L2, where a random cyclic chain finds almost nothing in the L1D and everything
    in the L2; the median of their median windows. None with fewer than 2 such points.

    Why: `--validate` kept the base preset's L2 latency (zen3-virt: 12 cycles), and the error at
    724-1218 pages, where the chain's lines leave the L1D, was put down to it (docs/probe.md)."""
    rows = [x for x in r.raw.get("dtlb_sweep") or []
            if x.get("control") and 4 * l1d_bytes <= 64 * x["n"] <= l2_bytes // 2]
    if len(rows) < 2:
        return None
    med = sorted(x["control"]["median"] for x in rows)
    return {"ns": med[len(med) // 2], "points": len(rows), "n_lo": rows[0]["n"], "n_hi": rows[-1]["n"],
            "range": [med[0], med[-1]]}


def _write_l2_cache_latency(r: ProbeResult, m: dict[str, Any], ghz: float, base: str, sysfs: bool) -> None:
    """Writes the L2 cache's latency measured by `l2_cache_latency` (sizes from sysfs: without
    them the footprints cannot be placed, and the base's latency stays)."""
    caches = sysfs_caches() if sysfs else []
    l1d = next((c["size"] for c in caches if c["level"] == 1 and c["kind"] == "data"), None)
    l2 = next((c["size"] for c in caches if c["level"] == 2), None)
    c2 = next((c for c in m.get("cache", []) if c["level"] == 2), None)
    if not (l1d and l2 and c2):
        return
    lat = l2_cache_latency(r, l1d, l2)
    if lat is None:
        return
    old = c2.get("latency")
    c2["latency"] = max(1, int(round(lat["ns"] * ghz)))
    c2["source"] = (f"{c2.get('source', '')}; latency from tlblab probe: the data-cache chase (the capacity "
                    f"sweep's packed control) at {lat['n_lo']}-{lat['n_hi']} lines ({lat['points']} points, "
                    f"{lat['range'][0]:.2f}-{lat['range'][1]:.2f} ns) {lat['ns']:.2f} ns × {ghz:.2f} GHz "
                    f"= {c2['latency']} cycles (was {old}, {base})")


#: What the L3's source says when the file's L3 is the share this host gets of it
#: (`_write_l3_and_memory_latency`); `tlblab probe --out` looks for it to say so.
L3_SHARE = "the share of it this host gets"


def _chase_ns(p: dict[str, Any]) -> float:
    """A windowed-chase point's latency for the machine file: the fastest of its sweeps' medians
    (`MemoryPoint::sweeps`; a report without sweeps: the median of its windows). Why the fastest:
    on a guest whose L3 is shared with other tenants' cores the chase reads the L3 at two speeds
    seconds apart (the Zen 4 guest, 2026-11-30: 2 MiB at 52.0 ns in one reading, 13.1-13.9 ns in
    the next two), and the machine file models this host undisturbed, as `tlblab host predict`'s
    quiet-phase times measure it (docs/host-predict.md, "The L3's share")."""
    sweeps = p.get("sweeps") or []
    return min(sweeps) if sweeps else p["ns"]["median"]


def l3_and_memory_latency(r: ProbeResult, l2_bytes: int, l3_bytes: int) -> dict[str, Any]:
    """The L3's and memory's load-to-use latencies, and the share of the L3 this host gets, from
    the probe's windowed chase (`ProbeReport::memory_chase`, crates/tlblab-probe/src/measure/memory.rs:
    lines of one 2 MiB window at a time in random order, so a page walks at most once every 64
    loads and no prefetcher follows).

    Each point's latency is `_chase_ns` (the fastest sweep's median). Memory's latency is the
    median of the points of 4x the L3 (sysfs's size) and more. The L3's
    candidates are the points from 4x the L2 (a lap finds almost nothing in the L2) to half the
    L3's size (a lap over the whole L3 misses in its fuller sets); those that sit on the L3's plateau are the first ones, in size order, below the midpoint
    between the fastest candidate and memory, and the L3's latency is the median of those within
    25% of the fastest (a point between is partly served from memory). The
    first candidate past the plateau is where a lap stopped finding its lines in the L3: on a
    guest whose L3 is shared with other tenants' cores that happens well inside sysfs's size (the
    Zen 4 guest, 2026-11-30: 14.2-14.7 ns at 4-6 MiB, 78 ns at 8 MiB, 92-96 ns from 12 MiB, of a
    32 MiB L3). Then `share_bytes` is the capacity this host gets: the geometric mean of the
    plateau's last footprint and that point's (the capacity lies between them). A level with no
    point in its range is absent; without a point past the plateau the whole L3 is this host's
    (no `share_bytes`)."""
    pts = sorted(r.raw.get("memory_chase") or [], key=lambda p: p["bytes"])
    out: dict[str, Any] = {}

    def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
        med = sorted(_chase_ns(p) for p in rows)
        return {"ns": statistics.median(med), "points": len(rows), "mib": [rows[0]["bytes"] >> 20, rows[-1]["bytes"] >> 20],
                "range": [med[0], med[-1]]}

    mem = [p for p in pts if p["bytes"] >= 4 * l3_bytes] or _memory_tail(pts, l2_bytes)
    if mem:
        out["memory"] = summary(mem)
        if mem[0]["bytes"] < 4 * l3_bytes:
            out["memory"]["tail"] = True
    cands = [p for p in pts if 4 * l2_bytes <= p["bytes"] <= l3_bytes // 2]
    if not cands:
        return out
    plateau, past = cands, None
    if mem:
        cut = (min(_chase_ns(p) for p in cands) + out["memory"]["ns"]) / 2
        n = next((i for i, p in enumerate(cands) if _chase_ns(p) >= cut), len(cands))
        plateau, past = cands[:max(n, 1)], (cands[n] if 0 < n < len(cands) else None)
        out["cut_ns"] = cut
    # The latency from the plateau's flat part: a point within 25% of the fastest. A point short of
    # the midpoint but above that (the Zen 4 guest's 8 MiB at 36.4 ns, 2026-11-30 16:12 UTC) is
    # partly served from memory: it places the share's edge, it is not the L3's latency.
    fastest = min(_chase_ns(p) for p in plateau)
    out["L3"] = summary([p for p in plateau if _chase_ns(p) <= 1.25 * fastest])
    if past is not None:
        lo, hi = plateau[-1], past
        out["L3"]["share_bytes"] = int(math.sqrt(lo["bytes"] * hi["bytes"]))
        out["L3"]["share_between"] = [lo["bytes"] >> 20, hi["bytes"] >> 20, _chase_ns(hi)]
    return out


def _memory_tail(pts: list[dict[str, Any]], l2_bytes: int) -> list[dict[str, Any]]:
    """Memory's points when the chase does not reach 4x sysfs's L3: the chase's last points, where
    they level off on a plateau clearly slower than the L3. Why: a guest whose L3 is a whole
    socket's (the Intel Xeon VM, 2026-12-01: sysfs lists a 480 MiB L3, the chase runs to 256 MiB)
    has no point past 4x the L3, so memory kept the base preset's latency and no share of the L3
    could be placed, while its chase read 35-41 ns at 4-6 MiB and 101-106 ns at 32-256 MiB: the
    guest gets a share of that L3 and the rest is memory. The tail is the longest run of last
    points within 10% of their median, at least 2 spanning 2x in footprint (the quick probe's
    chase ends at 128 and 256 MiB), and it counts only
    when its median is at least twice the fastest point past 4x the L2 before it (an L3 hit costs
    a fraction of a memory access; a host that owns a large L3 whole reads one flat plateau from
    4x its L2 on, and has no tail by this rule)."""
    past_l2 = [p for p in pts if p["bytes"] >= 4 * l2_bytes]
    best: list[dict[str, Any]] = []
    for i in range(len(past_l2) - 1, -1, -1):
        tail = past_l2[i:]
        mid = statistics.median(_chase_ns(p) for p in tail)
        if any(abs(_chase_ns(p) - mid) > 0.10 * mid for p in tail):
            break
        best = tail
    if len(best) < 2 or best[-1]["bytes"] < 2 * best[0]["bytes"]:
        return []
    before = past_l2[: len(past_l2) - len(best)]
    if not before or statistics.median(_chase_ns(p) for p in best) < 2 * min(_chase_ns(p) for p in before):
        return []
    return best


def _write_l3_and_memory_latency(r: ProbeResult, m: dict[str, Any], ghz: float, base: str, sysfs: bool) -> None:
    """Writes what `l3_and_memory_latency` measured into the machine's last cache level (the L3,
    where sysfs lists one) and `memory.latency`: the L3's latency, and its size where this host
    gets only a share of it (`share_bytes`: the level keeps sysfs's ways and line, its sets are
    the share's, a whole number). Why: the machine files kept a preset's L3 latency and seed 001
    Table 5.1's memory latency (330 cycles) on every host, which the host predictions' walks past
    the L2 depend on; and on the Zen 4 guest the L3's latency read over 4-16 MiB was memory's
    (90.5 ns, 334 cycles) because 8 and 16 MiB were past the share this guest gets of the 32 MiB
    L3 (docs/host-predict.md, "The L3's share"). Without sysfs sizes the footprints cannot be
    placed, and the base's latencies and size stay."""
    caches = sysfs_caches() if sysfs else []
    l2 = next((c["size"] for c in caches if c["level"] == 2), None)
    l3 = next((c["size"] for c in caches if c["level"] == 3), None)
    c3 = next((c for c in m.get("cache", []) if c["level"] == 3), None)
    if not (l2 and l3 and c3):
        return
    lat = l3_and_memory_latency(r, l2, l3)
    what = ("tlblab probe: the windowed chase (2 MiB windows, lines in random order; a point's fastest sweep, "
            "this host undisturbed)")
    if "L3" in lat:
        x, old = lat["L3"], c3.get("latency")
        c3["latency"] = max(1, int(round(x["ns"] * ghz)))
        c3["source"] = (f"{c3.get('source', '')}; latency from {what} over {x['mib'][0]}-{x['mib'][1]} MiB "
                        f"({x['points']} points, {x['range'][0]:.1f}-{x['range'][1]:.1f} ns) {x['ns']:.1f} ns × "
                        f"{ghz:.2f} GHz = {c3['latency']} cycles (was {old}, {base})")
        if "share_bytes" in x:
            lo, hi, hi_ns = x["share_between"]
            way_bytes = int(c3["line"]) * int(c3["ways"])
            sets = max(1, x["share_bytes"] // way_bytes)
            old_size = c3.get("size")
            c3["size"] = sets * way_bytes
            c3["source"] += (f"; size: {L3_SHARE}, {c3['size'] / (1 << 20):.2f} MiB ({sets} sets of "
                             f"{c3['ways']} ways; sysfs lists {l3 >> 20} MiB, was {old_size}): the chase found its "
                             f"lines in the L3 up to {lo} MiB and not at {hi} MiB ({hi_ns:.1f} ns, past the "
                             f"midpoint {lat['cut_ns']:.1f} ns to memory), the geometric mean of the two")
    if "memory" in lat and "memory" in m:
        x, old = lat["memory"], m["memory"].get("latency")
        m["memory"]["latency"] = max(1, int(round(x["ns"] * ghz)))
        tail = (f"; the chase's last points, as it does not reach 4x the {l3 >> 20} MiB L3 sysfs lists: they level "
                "off at least twice as slow as the L3's" if x.get("tail") else "")
        m["memory"]["source"] = (f"{m['memory'].get('source', '')}; latency from {what} over {x['mib'][0]}-"
                                 f"{x['mib'][1]} MiB ({x['points']} points, {x['range'][0]:.1f}-{x['range'][1]:.1f} ns) "
                                 f"{x['ns']:.1f} ns × {ghz:.2f} GHz = {m['memory']['latency']} cycles (was {old}, "
                                 f"{base}; a walk every 64 loads at most is included{tail})")


def walk_past_l2(r: ProbeResult, l2_entries: int) -> dict[str, Any] | None:
    """The translation cost per access of the probe's own chain once every access misses the
    L2 DTLB: the median excess (test − control, so the data caches cancel) of the capacity sweep's
    points from 1.4× the L2's entries on, their median; None with fewer than 2 such points.

    Why the median windows and not the lower envelope: this is the cost a program pays on this
    host, interference included (the hypervisor's nested walk under a neighbour's load), which is
    what the written preset is to predict; the envelope (printed beside it) is the undisturbed
    walk. Why from 1.4× the entries: a random chain over 1.4 C pages misses the level on all but
    ≈ C/1.4C of its accesses under LRU; the points further up (to 4× C) check that the cost has
    levelled off (the page-table lines of 8448 pages, 66 KiB, still fit the L2 cache)."""
    rows = [x for x in r.raw.get("dtlb_sweep") or [] if x["n"] >= 1.4 * l2_entries]
    if len(rows) < 2:
        return None
    med = sorted(x["excess"]["median"] for x in rows)
    env = sorted(x["test_low"] - x["control_low"] for x in rows)
    return {"ns": med[len(med) // 2], "envelope_ns": env[len(env) // 2], "points": len(rows),
            "n_lo": rows[0]["n"], "n_hi": rows[-1]["n"], "range": [med[0], med[-1]]}


def _write_walk_latency(r: ProbeResult, m: dict[str, Any], l2d: dict[str, Any], ghz: float, base: str) -> None:
    """Sets the walker's fixed cost so that a simulated walk of the probe's chain past the L2 costs
    what the probe measured (`walk_past_l2`), the loads of the walk staying the engine's.

    The measured cost per access past the L2 is L2 lookup + (share of accesses that walk) x walk.
    The engine's walk is the walker's fixed latency plus its page-table loads through the caches
    (two-dimensional under [virtualization]); the loads follow the preset's caches and page-walk
    caches, so the walker's latency takes the difference. Per capacity-sweep point from 1.4x the
    L2's entries on (the points `walk_past_l2` takes), one warm chase of that length (two runs
    differenced) gives the simulated share of accesses that walk, f, and the cycles of loads per
    walk; latency = (measured excess x GHz - L2 latency) / f - loads; the written latency is the
    median over the points. Under LRU f = 1 from about 1.1x the entries on; under random
    replacement (the Zen 4 host's L2) a chain of 1.4-3.7x the entries still hits on 10-50% of its
    accesses, so dividing by f keeps those hits from being read as cheap walks. On the Intel VM
    the preset's walk was 14-15 ns against 18-21 measured (a nested walk under load). This is a
    measurement of the walk, not a fit of the validation curve: it uses the capacity sweep's
    excess, not the validation sweep's times."""
    from tlblab import simulate

    entries = int(l2d["entries"])
    w = walk_past_l2(r, entries)
    if w is None:
        return
    rows = [x for x in r.raw["dtlb_sweep"] if x["n"] >= 1.4 * entries]
    old = int(m["walker"].get("latency", 0))
    l2_lat = float(l2d.get("latency", 0))
    per_point = []
    for x in rows:
        n = x["n"]
        acc = max(100_000, 24 * n)
        try:
            a = simulate(m, f"chase:pages={n},accesses={acc}", seed=0).total
            b = simulate(m, f"chase:pages={n},accesses={2 * acc}", seed=0).total
        except (ValueError, OSError):  # an invalid base preset is reported where the machine is used
            return
        walks = b["walks"] - a["walks"]
        if walks <= 0:
            continue
        share = walks / acc
        loads = (b["walk_cycles"] - a["walk_cycles"]) / walks - old
        per_point.append(((x["excess"]["median"] * ghz - l2_lat) / share - loads, share, loads))
    if not per_point:
        return
    per_point.sort()
    lat_f, share, loads = per_point[len(per_point) // 2]
    lat = max(0, int(round(lat_f)))
    m["walker"]["latency"] = lat
    shares = sorted(p[1] for p in per_point)
    # The walker table has no `source` field; the level whose misses these walks are says it.
    l2d["source"] = f"{l2d.get('source', '')}; " + (
        f"walker latency from tlblab probe: walk past the L2 DTLB {w['ns']:.1f} ns per access (median excess of {w['points']} sweep "
        f"points, {w['n_lo']}-{w['n_hi']} pages: {w['range'][0]:.1f}-{w['range'][1]:.1f} ns; lower envelope "
        f"{w['envelope_ns']:.1f} ns); per point, (excess x {ghz:.2f} GHz - L2 latency {l2_lat:.0f}) / the simulated "
        f"share of accesses that walk ({shares[0]:.2f}-{shares[-1]:.2f}) - {base}'s walk loads "
        f"({loads:.0f} cycles at the median point): the walker's fixed latency is {lat} cycles, the median "
        f"over the points (was {old})")


def foreign_miss_fraction(n: int, every: float, sets: int, ways: int) -> float:
    """The fraction of a random cyclic chain's references over `n` pages that miss an LRU level of
    `sets` x `ways` into which one foreign entry (a fresh page, its set uniform) is inserted every
    `every` references: the closed form of the `foreign_entries` technique
    (crates/tlblab-core/src/techniques/foreign_entries.rs). The chain's pages spread evenly over
    the sets (k or k + 1 a set, as consecutive pages do under the low-bit and XOR indexes); a page
    is re-referenced after one lap of n references, in which its set received F ~ Binomial(n /
    every, 1 / sets) foreign entries besides its k - 1 chain neighbours, so it misses iff
    F >= ways - k + 1. The L1 in front of the level is left out (its hits are a few % of a chain
    this long)."""
    trials = max(0, int(round(n / every)))
    p = 1.0 / sets

    def tail(need: int) -> float:  # P(F >= need)
        if need <= 0:
            return 1.0
        if need > trials:
            return 0.0
        if p >= 1.0:
            return 1.0
        pmf, below = (1.0 - p) ** trials, 0.0
        for i in range(need):
            below += pmf
            pmf *= (trials - i) / (i + 1) * p / (1.0 - p)
        return max(0.0, 1.0 - below)

    k, extra = divmod(n, sets)
    missed = (sets - extra) * k * tail(ways - k + 1) + extra * (k + 1) * tail(ways - k)
    return missed / n


def foreign_rate(r: ProbeResult, sets: int, ways: int) -> dict[str, Any] | None:
    """N of `foreign_entries` (one foreign entry every N references) for an L2 DTLB of `sets` x
    `ways`, from the capacity sweep: its miss fraction at each point, (excess − L2-hit cost) /
    (walk past the L2 − L2-hit cost) (both measured by the probe: "L1 DTLB miss, L2 DTLB hit" and
    `walk_past_l2`), gives n50, the chain length where half the references miss (linear between
    the two points around 0.5, which may reach past the entries); N is the inverse of
    `foreign_miss_fraction(n50, N) = 0.5` (bisection). An LRU level of these entries with no
    foreign entries reaches 0.5 only at entries + sets / 2 (the sweep's points, ≈ 15% apart,
    interpolate it to ≈ 2100 for 2048 entries on the Intel VM), so an n50 at or below the entries
    is what foreign occupants do; otherwise None (none seen). Uses the capacity sweep only, never
    the validation sweep. (Until 2026-11-26 08:45 the bound was one page a set below the entries:
    two of five runs then read n50 = 1924 and 1962 for 2048 entries, 34-36% of the chain missing at
    1722 pages where LRU alone misses none, wrote no foreign entries, and validated 41-52% low
    there.)

    Why the half point and not each point: the measured rise is gentler than the closed form's
    (Intel VM: 2% at 528 pages, 10% at 1056, 48% at 1722); the points each invert to a different
    N (≈ 1 at 861 to ≈ 4 at 1722), and the half point is where the miss fraction is measured
    with the most signal against the noise of both costs."""
    entries = sets * ways
    pen = r.measured("L1 DTLB miss, L2 DTLB hit")
    w = walk_past_l2(r, entries)
    l1 = r.measured("L1 DTLB entries")
    if pen is None or not pen.get("value") or pen["confidence"] == "unclear" or w is None:
        return None
    hit, walk = float(pen["value"]), float(w["ns"])
    if walk <= hit + 1.0:
        return None
    lo = 2 * int(l1["value"]) if l1 is not None and l1.get("value") else 0
    pts = [(x["n"], (x["excess"]["median"] - hit) / (walk - hit))
           for x in r.raw.get("dtlb_sweep") or [] if lo <= x["n"] <= 1.25 * entries]
    pts.sort()
    n50 = None
    for (n0, m0), (n1, m1) in zip(pts, pts[1:]):
        if m0 < 0.5 <= m1:
            n50 = n0 + (0.5 - m0) / (m1 - m0) * (n1 - n0)
            break
    if n50 is None or n50 > entries:
        return None
    n50i = int(round(n50))
    a, b = 0.01, 1e7  # the fraction falls as N grows
    for _ in range(80):
        mid = (a * b) ** 0.5
        if foreign_miss_fraction(n50i, mid, sets, ways) > 0.5:
            a = mid
        else:
            b = mid
    exact = (a * b) ** 0.5
    return {"every": max(1, int(round(exact))), "exact": exact, "n50": n50, "hit_ns": hit, "walk_ns": walk,
            "points": [(n, round(m, 3)) for n, m in pts]}


def _write_foreign(r: ProbeResult, m: dict[str, Any], l2d: dict[str, Any], base: str) -> None:
    """Writes `[technique] foreign_entries` (every N references, into the L2 DTLB) when the probe
    sees the level lose the chain's pages before it is full (`foreign_rate`), and says where N
    came from in the level's `source`. A base preset's own technique is kept (one per run)."""
    if l2d.get("ways") == "full" or m.get("technique") or l2d.get("replacement") == "random":
        # A random level written with the ways the chain keeps (`_write_replacement`) already
        # loses the pages the foreign entries would take; the closed form is LRU's.
        return
    ways = int(l2d["ways"])
    sets = int(l2d["entries"]) // ways
    f = foreign_rate(r, sets, ways)
    if f is None:
        return
    m["technique"] = {"name": "foreign_entries", "every": f["every"], "level": l2d["name"]}
    l2d["source"] = f"{l2d.get('source', '')}; " + (
        f"foreign entries (technique foreign_entries) from tlblab probe: the capacity sweep's miss fraction "
        f"(excess − L2 hit {f['hit_ns']:.2f} ns) / (walk {f['walk_ns']:.1f} − L2 hit) reaches 0.5 at "
        f"{f['n50']:.0f} pages ({f['n50'] / sets:.1f} a set, {ways} ways), which an LRU level of "
        f"{sets} x {ways} reaches with one foreign entry every {f['exact']:.2f} references "
        f"(closed form, tlblab.probe.foreign_miss_fraction): every = {f['every']}")


def xor_index(si: dict[str, Any] | None) -> dict[str, Any] | None:
    """The engine's `index = {type = "xor", a, b}` for a set index the probe measured
    (`ProbeReport.l2_set_index`) that is an XOR of two equal, adjacent ranges of VPN bits
    (VPN bits 0..b-1 XOR b..2b-1, TLBleed's "XOR-7" for b = 7); None for any other function
    (low bits, or a fold the engine cannot express) or an unclear measurement."""
    if not si or si.get("confidence") == "unclear" or si.get("unclear"):
        return None
    b = len(si["basis"])
    if b == 0 or si["basis"] != list(range(b)):
        return None
    folds = {bit: y for bit, y in si["folds"]}
    if any(folds.get(b + j) != 1 << j for j in range(b)):
        return None
    if any(y != 0 for bit, y in folds.items() if bit >= 2 * b):
        return None
    return {"type": "xor", "a": [12, 12 + b - 1], "b": [12 + b, 12 + 2 * b - 1]}


def _write_set_index(r: ProbeResult, t: dict[str, Any]) -> None:
    """Writes the measured set index of the L2 DTLB into its level `t` when the level has that
    many sets (the written or kept entries / ways)."""
    si = r.raw.get("l2_set_index")
    x = xor_index(si)
    if x is None or t["ways"] == "full":
        return
    sets = 1 << len(si["basis"])
    if t["entries"] // int(t["ways"]) != sets:
        return
    t["index"] = x
    t["source"] = (f"{t.get('source', '')}; index measured by tlblab probe (conflict pairs): "
                   f"address bits {x['a'][0]}-{x['a'][1]} XOR {x['b'][0]}-{x['b'][1]}, {sets} sets")


def host_toml(r: ProbeResult, base: str | None = None) -> str:
    """`host_machine` as TOML text (the format of presets/*.toml)."""
    return preset_text(host_machine(r, base), "host.toml")


def preset_text(machine: dict[str, Any], path: str) -> str:
    """`machine` as the text of a machine file named `path`: JSON for a `.json` name, else TOML
    (the format of presets/*.toml), written by the Rust configuration crate
    (`tlblab.machines.machine_file_text`): validated, and parsed back to the same machine."""
    from tlblab.machines import machine_file_text

    return machine_file_text(machine, path)


def write_preset(path: str, machine: dict[str, Any]) -> None:
    """Writes `machine` to `path` as a machine file (`preset_text`), whole or not at all."""
    write_atomic(path, preset_text(machine, path))


def validation_errors(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """The median and the worst |relative error| of `validate`'s rows."""
    errs = sorted(abs(x["error"]) for x in rows)
    return errs[len(errs) // 2], errs[-1]


def write_atomic(path: str, text: str) -> None:
    """Writes via a temporary file and rename, so no partial file is ever left behind."""
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise UserError(f"{path}: directory {d} does not exist")
    try:
        atomic_write(path, text)
    except OSError as e:
        raise UserError(f"{path}: cannot write: {e.strerror}") from None


# ---------------------------------------------------------------------------------------------
# Validation: the probe's own microbenchmark through the simulator


def validate(r: ProbeResult, machine: dict[str, Any] | str, *, accesses_per_page: int = 24,
             min_accesses: int = 100_000, seed: int = 0) -> list[dict[str, Any]]:
    """Simulates the probe's random-order chase (the `chase` workload: one load per page, varying
    line) for every N of `r`'s validation sweep on `machine`, and returns measured vs simulated ns
    per access with the relative error. Needs a report made with `validation_curve=True`."""
    from tlblab import machine_config, simulate

    rows = r.raw.get("random_sweep") or []
    if not rows:
        raise UserError("the probe report has no validation sweep (run the probe with --validate)")
    cfg = machine if isinstance(machine, dict) else machine_config(machine)
    ghz = cfg["frequency_mhz"] / 1000.0
    out = []
    for row in rows:
        n = row["n"]
        acc = max(min_accesses, accesses_per_page * n)
        res = simulate(cfg, f"chase:pages={n},accesses={acc}", seed=seed)
        # Exclude the cold start (first-touch faults, compulsory misses): the probe warms up too.
        # Simulate twice as many accesses and take the difference of the two runs' cycles.
        res2 = simulate(cfg, f"chase:pages={n},accesses={2 * acc}", seed=seed)
        cyc = (res2.cycles - res.cycles) / acc
        sim_ns = cyc / ghz
        meas = row["test"]["median"]
        out.append({"pages": n, "measured_ns": meas, "measured_iqr": row["test"]["q3"] - row["test"]["q1"],
                    "simulated_ns": sim_ns, "error": (sim_ns - meas) / meas})
    return out


def validation_speed_note(r: ProbeResult, rows: list[dict[str, Any]], *, tolerance: float = 0.05) -> str | None:
    """Whether the host ran at another speed during the validation sweep than when the probe
    measured the load-to-use latency the written clock comes from (`_ghz`: the L1D hit is 4
    cycles): the validation sweep's points below half the L1 DTLB (L1 hits only) against the
    probe's "load, L1 DTLB hit" line. None when they agree within `tolerance` or either is
    missing; otherwise a sentence for the user, since every simulated ns then carries the change.

    Why: on the Zen 4 VM (2026-11-26, batch 6 run f3) the probe read 1.157 ns for an L1 hit
    (1.084 in the other nine runs; an L2 DTLB hit 2.18 ns against 1.90, a walk 97 cycles against
    59-67), the validation sweep a minute later 1.08 ns: the simulation of that file read +5..+7%
    at L1 hits, +16% at L2 hits and +49..+68% past the L2. A neighbour's phase, not the model.
    The tolerance, 5%: in the other 14 full runs of batches 4-6 the sweep's median read
    1.08-1.12 ns against the probe's 1.084 (up to 3.3%, run f2 of batch 6, whose errors at L1
    hits were -2..-8%: the points' own spread)."""
    hit = r.measured("load, L1 DTLB hit")
    l1 = r.measured("L1 DTLB entries")
    if hit is None or not hit.get("value") or l1 is None or not l1.get("value"):
        return None
    small = sorted(x["measured_ns"] for x in rows if x["pages"] <= l1["value"] / 2)
    if len(small) < 3:
        return None
    now = small[len(small) // 2]
    then = float(hit["value"])
    change = then / now - 1
    if abs(change) <= tolerance:
        return None
    return (f"note: an L1 DTLB hit took {then:.2f} ns when the probe measured it and {now:.2f} ns in the "
            f"validation sweep (the median of its {len(small)} points up to {int(l1['value'] / 2)} pages): the host "
            f"ran {100 * abs(change):.0f}% {'slower' if change > 0 else 'faster'} while the probe measured the "
            f"clock and latencies it wrote than during the validation sweep, and the errors above include that")


def plot_validation(rows: list[dict[str, Any]], path: str, title: str = "") -> None:
    """Measured vs simulated ns per access over N, written as a PNG (temp file + rename)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [x["pages"] for x in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(ns, [x["measured_ns"] for x in rows], "o-", label="measured (median)")
    ax.plot(ns, [x["simulated_ns"] for x in rows], "s--", label="simulated (host preset)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("pages in the random pointer chase (N)")
    ax.set_ylabel("ns per access")
    ax.set_title(title or "tlblab probe --validate")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    finally:
        plt.close(fig)
