"""Seed 000's model of `tlblab host migrate` on this host (`--predict`): the host's probed machine
with its last-level cache as the LLC probe found it (`host_prediction_machine`), and the
migration benchmark's dep and rewarm+dep times simulated on it beside the re-warm this host
measured (`host_migrate_prediction`; docs/technique-tlb_migration.md). A library module of the
host tools: it runs the `host_migrate` workload, and no seed folder's code.
"""

from __future__ import annotations

from pathlib import Path

import tlblab


def _mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs)


# The host-like preset `tlblab probe` and sysfs gave on the development VM of 2026-11-25 (family 6
# model 167, docs/data/): the prediction's default machine when this host has no probe of its own.
# Package data (docs/data/host-xeon-2vcpu.toml links to it), so an installed wheel has it too.
HOST_PRESET = str(Path(__file__).resolve().parents[1] / "data" / "host-xeon-2vcpu.toml")
HOST_NS = (1, 4, 16, 64, 256, 1024, 4096)
# `tlblab host ptwarm`'s verdict threshold (ns per line of the LLC probe; ptwarm_config.probe_threshold_ns).
LLC_SHARED_BELOW_NS = 40.0


def host_prediction_machine(machine: str | dict, llc_probe_ns: float) -> tuple[dict, list[str]]:
    """The host's machine for the prediction: `machine` (this host's `tlblab probe --out`: its TLBs,
    walker latency and L2 latency measured by timing) with its last-level cache as the LLC probe of
    `tlblab host ptwarm` found it: shared between the two CPUs when a chase of lines the other CPU
    has just read costs less than 40 ns per line, each CPU's own otherwise. That chase's ns per line
    is what the migrated thread pays for a line its old CPU left: an L3 hit when the L3 is shared
    (the L3's latency), a transfer from the other L3 when it is not (the model's memory latency,
    the level the destination's misses go to then). Returns the machine and a line per number
    saying where it came from."""
    m = tlblab.machine_config(machine)
    ghz = m["frequency_mhz"] / 1000.0
    notes = [f"machine: {m['name']} ({m.get('source', '')})"]
    llc = max((c for c in m["cache"] if c.get("kind", "unified") != "instr"), key=lambda c: c["level"])
    shared = 0 < llc_probe_ns < LLC_SHARED_BELOW_NS
    cycles = max(1, round(llc_probe_ns * ghz))
    probe = (f"tlblab host ptwarm's LLC probe: {llc_probe_ns:.1f} ns per line of the other CPU's lines "
             f"({'shared' if shared else 'NOT shared'}, threshold {LLC_SHARED_BELOW_NS:.0f} ns) = {cycles} cycles "
             f"at {ghz:.2f} GHz")
    llc["shared"] = shared
    if shared:
        llc["latency"] = cycles
        llc["source"] = f"{probe}; size and ways from {m['name']}"
    else:
        llc["source"] = f"each CPU's own ({probe}); latency, size and ways from {m['name']}"
        m["memory"]["latency"] = cycles
        m["memory"]["source"] = f"a line another CPU's L3 holds: {probe}"
        notes.append(f"memory: {m['memory']['source']}")
    notes.append(f"{llc['name']}: {llc['source']}")
    for c in m["cache"]:
        if c["level"] < llc["level"] and c.get("kind", "unified") != "instr":
            notes.append(f"{c['name']}: {c['latency']} cycles ({c.get('source', '')})")
    notes.append(f"walker: {m['walker']['latency']} cycles of fixed latency")
    return m, notes


def _preload_line(preload: dict, stride: int) -> tuple[float, float]:
    """(fixed ns, ns per page) of the host's re-warm alone (migrate_bench's `preload`: the median
    time of tlbmig_check() after a migration at 1 and P registered pages)."""
    p1, pp = preload["pages"]
    t1, tp = preload["ns_median"][str(stride)]
    per_page = max(0.0, (tp - t1) / (pp - p1))
    return max(0.0, t1 - per_page), per_page


def host_migrate_prediction(preload: dict, llc_probe_ns: float, machine: str | dict = HOST_PRESET,
                            ns=HOST_NS, strides=(4096, 69632), evict_pages: int = 4096,
                            cap: int = 4096, iterations: int = 3, evict_bytes: int = 1 << 20) -> dict:
    """The model's prediction for `tlblab host migrate` from the host's own measured numbers.

    `dep` is simulated: the `host_migrate` workload (migrate_bench step for step: evict on B, chase
    on A, migrate, chase on B) on `machine` (the probe's TLBs, walker and L2 latencies) with the
    L3 as `host_prediction_machine` makes it from the LLC probe (`llc_probe_ns`): a shared L3 keeps
    the lines and page-table entries the migration leaves behind, as the host's does. `rewarm+dep`
    is the host's measured re-warm (`preload`, migrate_bench's re-warm alone at 1 and 384 pages,
    taken as a line in N: fixed + per page x min(N, cap)) plus the simulated chase after it (the
    `host_migrate` workload with `rewarm=1`: every line loaded, then the chase, the TLB and caches
    warm). Nothing is fitted to the `dep` or `rewarm+dep` numbers it is compared with.

    Returns ns per pass: {S/N/dep, S/N/rewarm+dep, S/N/gain}, S/first_win_n (the first N from which
    re-warming wins at every larger N; 0 when it never does), S/best_gain and S/best_gain_n, and
    `notes` (where each input came from)."""
    m, notes = host_prediction_machine(machine, llc_probe_ns)
    ghz = m["frequency_mhz"] / 1000.0
    out: dict = {}
    for s in strides:
        fixed, per_page = _preload_line(preload, s)
        notes.append(f"stride {s}: re-warm measured on this host, {fixed:.0f} ns + {per_page:.1f} ns per page")
        wins = []
        for n in ns:
            wl = (f"host_migrate:pages={n},stride={s},evict={evict_pages},evict_lines={evict_bytes // 64},"
                  f"iterations={iterations}")
            off = tlblab.simulate(m, wl).phase_frame()
            on = tlblab.simulate(m, wl + ",rewarm=1").phase_frame()
            dep = _mean(off[off["name"] == "retouch"]["cycles"]) / ghz
            warm = _mean(on[on["name"] == "retouch"]["cycles"]) / ghz
            rew = fixed + per_page * min(n, cap) + warm
            out[f"{s}/{n}/dep"] = dep
            out[f"{s}/{n}/rewarm+dep"] = rew
            out[f"{s}/{n}/gain"] = dep / rew if rew else 0.0
            # Ours only: the simulated in-order cost of loading the lines one by one (what the
            # re-warm would cost without the host's overlapped prefetches).
            out[f"{s}/{n}/rewarm_in_order"] = _mean(on[on["name"] == "rewarm"]["cycles"]) / ghz
            wins.append(rew < dep)
        first = 0
        for n, w in zip(reversed(ns), reversed(wins)):
            if not w:
                break
            first = n
        out[f"{s}/first_win_n"] = float(first)
        best = max(ns, key=lambda n: out[f"{s}/{n}/gain"])
        out[f"{s}/best_gain"] = out[f"{s}/{best}/gain"]
        out[f"{s}/best_gain_n"] = float(best)
    out["notes"] = notes
    return out
