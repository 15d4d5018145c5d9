"""The TLB geometry the host tools work with: from a machine file (`tlblab probe --out host.toml`, or
any preset), or from a probe run of this host, never from a constant.

`geometry(machine)` reads it:
  * a path or preset name: that machine's data-TLB levels;
  * "probe": a quick probe of this host's data TLBs now (≈ 10-25 s, `tlblab probe --quick
    --sections dtlb,l1_assoc,l2_index,caches`), written to the cache below for the next tool;
  * None: $TLBLAB_HOST_MACHINE if set, else this host's cached probe
    (~/.cache/tlblab/host-<vendor>-<family>-<model>.w<WRITER>.toml), else "probe".
The colored level is the set-associative data (or unified) level with the most entries, as
`tlb_geometry_from_machine` picks it in the C library (runtime/src/color/machine.c).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from tlblab.errors import UserError


@dataclass(frozen=True)
class Geometry:
    l1_entries: int
    l2_entries: int
    sets: int
    ways: int
    source: str
    # Set by a level whose index is hashed (`index = {type = "xor"}`): what the colors mean.
    note: str = ""


def _cpu_key() -> str:
    """vendor-family-model of this CPU (/proc/cpuinfo), the cache key of its probed machine."""
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if ":" in line:
                    k, v = (x.strip() for x in line.split(":", 1))
                    info.setdefault(k, v)
                if not line.strip() and info:
                    break
    except OSError:
        pass
    parts = [info.get("vendor_id", "unknown"), info.get("cpu family", "0"), info.get("model", "0")]
    return "-".join(p.replace(" ", "_") for p in parts)


#: The machine file writer's version in the cached probe's name (`cache_path`): raised when
#: `tlblab.probe.host_machine` writes a field differently, so that a file written by the old
#: rules is not used as if it were this host's. 2 (2026-11-30): the L3's latency at its fastest
#: sweep and the share of it this host gets (docs/probe.md, "The L3's share"); a file of the rule
#: before read a guest's 32 MiB L3 at memory's latency. 3 (2026-12-01): memory's latency from the
#: chase's last points where it does not reach 4x sysfs's L3 (`probe._memory_tail`), and with it
#: the share of the L3 (a file of the rule before kept the base's memory latency and L3 on an
#: Intel VM whose sysfs lists a 480 MiB L3).
WRITER = 3


def cache_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tlblab", f"host-{_cpu_key()}.w{WRITER}.toml")


def from_machine(m: dict[str, Any], source: str) -> Geometry:
    """The data-path levels of a machine description (the dict `machine_config` returns)."""
    data = [t for t in m.get("tlb", []) if t.get("kind", "unified") != "instr"
            and "4KiB" in t.get("page_sizes", ["4KiB"])]
    if not data:
        raise UserError(f"{source}: no data TLB level for 4 KiB pages")
    data.sort(key=lambda t: t["level"])
    l1 = data[0]["entries"]
    colorable = [t for t in data if t["ways"] != "full" and int(t["ways"]) < t["entries"]
                 and t.get("index", {}).get("type", "low_bits") in ("low_bits", "xor")]
    if not colorable:
        raise UserError(f"{source}: no set-associative data TLB level indexed by low VPN bits or an XOR "
                        "fold to color (a fully associative level cannot be colored)")
    c = max(colorable, key=lambda t: t["entries"])
    ways = int(c["ways"])
    sets = c["entries"] // ways
    if sets * ways != c["entries"] or sets & (sets - 1):
        raise UserError(f"{source}: TLB level {c.get('name', c['level'])} has {c['entries']} entries / {ways} ways, "
                        "not a power-of-two number of sets")
    # A probed level whose random chains keep fewer ways than it has is written with the ways
    # they keep (the simulator's capacity) and `hardware_ways`, the ways each set is built with:
    # coloring places pages by set, so it sizes for the hardware's (TlbConfig::hardware_ways).
    ways = int(c.get("hardware_ways") or ways)
    l2 = max(sets * ways if t is c else t["entries"] for t in data)
    ix = c.get("index", {})
    if ix.get("type") == "xor":
        # A hashed index (the Intel VM's STLB: address bits 12-18 XOR 19-25, measured by the probe's
        # conflict pairs): pages equal in the low VPN bits are spread over every set, so coloring
        # for `sets` low-bit colors would color nothing. Colors are instead every VPN bit the hash
        # reads (2^(b_hi - 11) colors): pages of one color share one set; two different colors
        # can still share a set (each set has 2^(b_hi - 11) / sets colors), so "diff" separates
        # less than with a low-bits index.
        hi = int(ix["b"][1])
        colors = 1 << (hi - 11)
        note = (f"hashed index (address bits {ix['a'][0]}-{ix['a'][1]} XOR {ix['b'][0]}-{ix['b'][1]}, "
                f"{sets} sets), not low VPN bits: colored by the {hi - 11} VPN bits it reads "
                f"({colors} colors, one set each; {colors // sets} colors share each set)")
        return Geometry(l1_entries=l1, l2_entries=l2, sets=colors, ways=ways, source=source, note=note)
    return Geometry(l1_entries=l1, l2_entries=l2, sets=sets, ways=ways, source=source)


def probe_host(quiet: bool = False) -> str:
    """Probes this host's data TLBs (quick) and writes the machine file to the cache; returns its path."""
    from tlblab import machine_toml
    from tlblab import probe as tp

    if not quiet:
        print("tlblab: no machine file for this host: probing its data TLBs (tlblab probe --quick "
              "--sections dtlb,l1_assoc,l2_index,caches, ≈ 10-25 s) ...", file=sys.stderr, flush=True)
    r = tp.probe(quick=True, sections=["dtlb", "l1_assoc", "l2_index", "caches"])
    path = cache_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tp.write_atomic(path, machine_toml(tp.host_machine(r)))
    if not quiet:
        print(f"tlblab: wrote {path} (used by the host tools until removed)", file=sys.stderr)
    return path


def resolve_machine(machine: str | None) -> str:
    """The machine file or preset the host tools use for `machine` (module docstring): a quick
    probe of this host when it has none."""
    if machine is None:
        machine = os.environ.get("TLBLAB_HOST_MACHINE") or None
    if machine is None:
        path = cache_path()
        machine = path if os.path.exists(path) else "probe"
    if machine == "probe":
        machine = probe_host()
    return machine


def geometry(machine: str | None) -> Geometry:
    """See the module docstring."""
    from tlblab import machine_config

    machine = resolve_machine(machine)
    try:
        m = machine_config(machine)
    except UserError:
        raise
    except (ValueError, OSError) as e:
        raise UserError(f"--machine {machine}: {str(e).splitlines()[0]}") from None
    return from_machine(m, machine)
