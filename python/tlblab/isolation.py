"""TLB isolation of a periodic task set: prove that no task can evict another's translations, or
name the pages and sets that conflict; bound each task's TLB misses per job; plan colors.

Seed 003 shows task isolation by measurement (§6.0.8-6.0.10) and leaves the per-job WCET input
as future work (Ch. 8). This module decides it from the layout alone, for one set-associative
TLB level indexed by the low bits of the page number (the level tlb_malloc colors):

* **Occupancy.** Each task's pages (from `tlb_malloc` colors, from a glibc-`malloc` model of its
  allocation calls, or given as addresses) are counted per set, with the ways OS noise holds
  (§6.0.6). A set whose pages (all tasks' plus noise) fit its ways never evicts anything after
  the warm-up: every page in it stays resident. A set shared by two or more tasks whose pages do
  not fit is an *inter-task conflict*: the pages there are named.
* **Bound.** Under fixed-priority preemptive scheduling (rate monotonic, §5), a job of task i
  runs in at most 1 + P_i uninterrupted segments, P_i the releases of higher-priority tasks in its
  window (its response time when execution times are given and the response-time analysis
  converges within the period, else the period: the seed's jobs end at their next release).
  Within a segment only task i touches the TLB, so each of its pages in a set misses at most
  once per segment as long as the task alone fits that set (LRU and FIFO: a_i(s) ≤ ways; tree-PLRU:
  a_i(s) ≤ log2(ways) + 1, the most-recently-used pages PLRU is guaranteed to keep). So the
  misses per job (after the warm-up job 0) are at most Σ_s a_i(s) · (1 + P_i) over the sets s
  that do not fit; a set that the task alone overflows (or random replacement) has no bound.
* **Warm-up.** Sets that fit after the warm-ups may still lose a job page before its task's first
  job to another task. With page lists only (`warmup_pages`) isolate names every set where that
  can happen in some order of the accesses; with every task's `warmup_order` (its warm-up's pages
  by last touch) and an LRU level it replays the warm-ups through each set and names only the
  sets where that order lets it happen (`_ordered_warmup_conflict`).

    >>> import tlblab
    >>> rep = tlblab.isolate("python/tlblab/seeds/s003_tlb_coloring/reproductions/table6_1_colored.toml")
    >>> rep.isolated, rep.bounds
    >>> print(rep.text())

The task-set file format is in docs/technique-tlb_coloring-isolation.md.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlblab.errors import UserError

PAGE = 4096
LEN_BYTES = 8  # tlb_malloc stores an allocation's length before it (seed 003 §4.0.3)

# The glibc malloc model of the simulator's rt task sets (crates/tlblab-trace/src/workloads/
# rt_glibc.rs; sources there): 64 MiB-aligned thread arenas handed out below 0x7ffff0000000,
# 64 MiB apart, first user pointer 0x8c0 in, chunks of request + 8 rounded to 16, and requests of
# 128 KiB or more in their own mapping.
GLIBC_ARENA_TOP = 0x7FFF_F000_0000
GLIBC_HEAP_MAX = 64 << 20
GLIBC_FIRST = 0x8C0
GLIBC_MMAP_THRESHOLD = 128 << 10
GLIBC_MMAP_TOP = 0x7FFF_C000_0000
COLOR_BASE = 0x4000_0000  # where the verifier's colored arena starts (aligned to sets x 4 KiB)


@dataclass
class Geometry:
    machine: str
    level: str
    sets: int
    ways: int
    replacement: str
    reserved: int = 0
    noise: dict[int, int] = field(default_factory=dict)  # set -> ways the OS holds

    def safe_pages(self) -> int | None:
        """Pages of one task a set may hold with each missing at most once per segment."""
        r = self.replacement.lower()
        if r in ("lru", "fifo"):
            return self.ways
        if r in ("plru", "tree_plru", "treeplru", "pseudo_lru"):
            return int(math.log2(self.ways)) + 1
        return None  # random, or a policy with no such guarantee


@dataclass
class TaskIn:
    name: str
    period: float
    phase: float = 0.0
    exec: float | None = None
    placement: str = "pages"
    colors: list[int] | None = None
    large_colors: list[int] = field(default_factory=list)
    allocations: list[int] = field(default_factory=list)
    addresses: list[int] = field(default_factory=list)
    passes: int = 1
    # pages the task's warm-up (job 0) touches besides those of its jobs, by address
    warmup_addresses: list[int] = field(default_factory=list)
    # the pages it touches before the task set's first periodic job (its warm-up job and what it
    # runs after it until its first release), in the order of their last touch (oldest first)
    warmup_order: list[int] | None = None
    # filled by placement: page number -> what it holds
    pages: dict[int, str] = field(default_factory=dict)


@dataclass
class Report:
    geometry: Geometry
    tasks: list[TaskIn]
    occupancy: dict[int, dict[str, int]]  # set -> task -> pages
    conflicts: list[dict[str, Any]]  # inter-task
    overflows: list[dict[str, Any]]  # one task alone (with noise) beyond the ways
    preemptions: dict[str, int]
    bounds: dict[str, int | None]
    window: dict[str, str]
    # sets that overflow only with the warm-ups' pages: one miss per page at most, first jobs
    warmup_conflicts: list[dict[str, Any]] = field(default_factory=list)
    # per task, the bound of its first job after the warm-ups (the warm-up conflicts' pages added)
    first_job_bounds: dict[str, int | None] = field(default_factory=dict)
    # the warm-up conflicts come from replaying every task's warm-up order through the set's LRU
    # (True), or from the page lists alone, any pair in an overflowing set taken to conflict (False)
    warmup_ordered: bool = False

    @property
    def isolated(self) -> bool:
        return not self.conflicts and not self.warmup_conflicts

    def text(self) -> str:
        g = self.geometry
        lines = [f"TLB {g.level} of {g.machine}: {g.sets} sets x {g.ways} ways, {g.replacement}"
                 + (f", {g.reserved} reserved sets" if g.reserved else "")]
        names = [t.name for t in self.tasks]
        lines.append("set  " + "  ".join(f"{n:>5}" for n in names) + "  noise  total")
        for s in range(g.sets):
            occ = self.occupancy.get(s, {})
            total = next((c["total"] for c in self.conflicts if c["set"] == s), None) or next(
                (o["total"] for o in self.overflows if o["set"] == s), None) or (sum(occ.values()) + g.noise.get(s, 0))
            if total == 0:
                continue
            mark = "  <- conflict" if any(c["set"] == s for c in self.conflicts) else (
                "  <- overflow" if any(o["set"] == s for o in self.overflows) else "")
            lines.append(f"{s:>3}  " + "  ".join(f"{occ.get(n, 0):>5}" for n in names)
                         + f"  {g.noise.get(s, 0):>5}  {total:>5}{mark}")
        if self.isolated:
            lines.append("ISOLATED: no set holds pages of two or more tasks beyond its "
                         f"{g.ways} ways, so no task can evict another's translations")
        else:
            lines.append(f"CONFLICTS in {len(self.conflicts)} set(s):")
            for c in self.conflicts:
                who = "; ".join(f"{t}: " + ", ".join(p for p in pages) for t, pages in c["pages"].items())
                lines.append(f"  set {c['set']}: {c['total']} pages > {g.ways} ways "
                             f"(noise {c['noise']}): {who}")
        for o in self.overflows:
            lines.append(f"  set {o['set']}: {o['task']} alone (with noise {o['noise']}) needs "
                         f"{o['total']} > {g.ways} ways: intra-task/OS conflict")
        if self.warmup_conflicts and self.warmup_ordered:
            lines.append(f"WARM-UP CONFLICTS in {len(self.warmup_conflicts)} set(s), the warm-ups' page order "
                         f"replayed through the set's {g.ways}-way LRU: a job page another task's warm-up "
                         "pushed out, or that another task's first job can push out past the warm-ups' "
                         "pages still above it; each misses at most once, in its task's first job:")
            for c in self.warmup_conflicts:
                lines.append(f"  set {c['set']}: " + "; ".join(c["why"]))
        elif self.warmup_conflicts:
            lines.append(f"WARM-UP CONFLICTS in {len(self.warmup_conflicts)} set(s): with the pages the warm-ups "
                         "touch (job 0) the set overflows; each page of a job there misses at most once, "
                         "in its task's first job after the warm-ups:")
            for c in self.warmup_conflicts:
                who = "; ".join(f"{t}: " + ", ".join(p for p in pages) for t, pages in c["pages"].items())
                lines.append(f"  set {c['set']}: {c['total']} pages > {g.ways} ways (noise {c['noise']}): {who}")
        lines.append("misses per job after the warm-up, at most:")
        for t in self.tasks:
            b = self.bounds[t.name]
            first = self.first_job_bounds.get(t.name, b)
            more = f"; first job {first}" if first != b and first is not None else ""
            lines.append(f"  {t.name}: {'unbounded' if b is None else b}  "
                         f"({self.preemptions[t.name]} preemptions, window {self.window[t.name]}{more})")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"isolated": self.isolated, "conflicts": self.conflicts, "overflows": self.overflows,
                "warmup_conflicts": self.warmup_conflicts, "warmup_ordered": self.warmup_ordered,
                "bounds": self.bounds, "first_job_bounds": self.first_job_bounds, "preemptions": self.preemptions,
                "occupancy": {str(s): o for s, o in sorted(self.occupancy.items())},
                "geometry": {"machine": self.geometry.machine, "level": self.geometry.level,
                             "sets": self.geometry.sets, "ways": self.geometry.ways,
                             "replacement": self.geometry.replacement,
                             "reserved": self.geometry.reserved,
                             "noise": {str(k): v for k, v in self.geometry.noise.items()}},
                "pages": {t.name: [hex(p << 12) for p in sorted(t.pages)] for t in self.tasks}}


# ---------------------------------------------------------------------------------------------
# Loading

def _int(where: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise UserError(f"{where}: expected a non-negative integer, found {v!r}")
    return v


def _num(where: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise UserError(f"{where}: expected a non-negative number, found {v!r}")
    return float(v)


def _geometry(doc: dict[str, Any], where: str, base: Path | None) -> Geometry:
    from tlblab.sim import machine_config

    machine = doc.get("machine", "xeon-e5-2650")
    if not isinstance(machine, str):
        raise UserError(f"{where}: 'machine' expects a preset name or a machine file, found {machine!r}")
    spec = machine
    if base is not None and (machine.endswith(".toml") or machine.endswith(".json")):
        p = Path(machine)
        spec = str(p if p.is_absolute() else base / p)
    try:
        cfg = machine_config(spec)
    except (ValueError, OSError) as e:
        raise UserError(f"{where}: machine {machine!r}: {e}") from None
    level = doc.get("level")
    tlbs = cfg.get("tlb") or []
    if level is None:
        data = [t for t in tlbs if t.get("kind") != "instr"]
        if not data:
            raise UserError(f"{where}: machine {machine!r} has no data TLB level")
        tlb = min(data, key=lambda t: t["level"])
    else:
        found = [t for t in tlbs if t["name"] == level]
        if not found:
            raise UserError(f"{where}: 'level' expects one of {', '.join(t['name'] for t in tlbs)}, found {level!r}")
        tlb = found[0]
    ways, entries = tlb["ways"], int(tlb["entries"])
    if not isinstance(ways, int) or ways >= entries:
        raise UserError(f"{where}: TLB level {tlb['name']} is fully associative: it has no colors")
    index = tlb.get("index", {"type": "low_bits"})
    kind = index.get("type") if isinstance(index, dict) else index
    if kind != "low_bits":
        raise UserError(f"{where}: TLB level {tlb['name']} is not indexed by the low bits of the page "
                        f"number ({kind}): its sets are not colors")
    repl = tlb.get("replacement", "lru")
    if isinstance(repl, dict):
        repl = repl.get("type", "lru")
    sets = entries // ways
    reserved = _int(f"{where}: reserved", doc.get("reserved", 0))
    if reserved >= sets:
        raise UserError(f"{where}: reserved must be below the {sets} sets, found {reserved}")
    noise: dict[int, int] = {}
    for k, v in (doc.get("noise") or {}).items():
        try:
            s = int(k)
        except ValueError:
            raise UserError(f"{where}: [noise] keys are set numbers, found {k!r}") from None
        if s >= sets:
            raise UserError(f"{where}: [noise] set {s} is beyond the {sets} sets")
        noise[s] = _int(f"{where}: noise.{k}", v)
    return Geometry(machine=machine, level=tlb["name"], sets=sets, ways=ways, replacement=str(repl),
                    reserved=reserved, noise=noise)


def _task(i: int, t: Any, where: str) -> TaskIn:
    w = f"{where}: task {i + 1}"
    if not isinstance(t, dict):
        raise UserError(f"{w}: expected a [[task]] table")
    known = {"name", "period", "phase", "exec", "placement", "colors", "large_colors", "allocations",
             "pages", "passes", "warmup_pages", "warmup_order"}
    for k in t:
        if k not in known:
            raise UserError(f"{w}: unknown field {k!r} (expected {', '.join(sorted(known))})")
    name = t.get("name", f"T{i + 1}")
    if "period" not in t:
        raise UserError(f"{w} ({name}): 'period' (ms) is required")
    period = _num(f"{w}: period", t["period"])
    if period <= 0:
        raise UserError(f"{w}: period must be positive")
    placement = t.get("placement", "pages" if "pages" in t and "allocations" not in t else "tlb_malloc")
    if placement not in ("tlb_malloc", "glibc", "pages"):
        raise UserError(f"{w}: placement expects tlb_malloc, glibc or pages, found {placement!r}")
    allocs = [_int(f"{w}: allocations", a) for a in t.get("allocations", [])]
    if any(a == 0 for a in allocs):
        raise UserError(f"{w}: allocations must be positive sizes in bytes")
    colors = t.get("colors")
    if colors is not None:
        colors = [_int(f"{w}: colors", c) for c in colors]
    warm = [_int(f"{w}: warmup_pages", p) for p in t.get("warmup_pages", [])]
    order = None
    if "warmup_order" in t:
        if not isinstance(t["warmup_order"], list):
            raise UserError(f"{w} ({name}): warmup_order expects a list of page addresses")
        order = [_int(f"{w}: warmup_order", p) for p in t["warmup_order"]]
        pages = [p >> 12 for p in order]
        if len(set(pages)) != len(pages):
            raise UserError(f"{w} ({name}): warmup_order lists each page once, at its last touch")
        if "warmup_pages" not in t:
            warm = order
    return TaskIn(name=str(name), period=period, phase=_num(f"{w}: phase", t.get("phase", 0.0)),
                  exec=None if "exec" not in t else _num(f"{w}: exec", t["exec"]), placement=placement,
                  colors=colors, large_colors=[_int(f"{w}: large_colors", c) for c in t.get("large_colors", [])],
                  allocations=allocs, addresses=[_int(f"{w}: pages", p) for p in t.get("pages", [])],
                  passes=_int(f"{w}: passes", t.get("passes", 1)) or 1,
                  warmup_addresses=warm, warmup_order=order)


def load(source: str | Path | dict[str, Any]) -> tuple[Geometry, list[TaskIn]]:
    """Reads a task-set file (or the same as a dict)."""
    if isinstance(source, dict):
        doc, where, base = source, "task set", None
    else:
        path = Path(source)
        where, base = str(path), path.parent
        try:
            doc = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise UserError(f"{path}: no such file") from None
        except tomllib.TOMLDecodeError as e:
            raise UserError(f"{path}: {e}") from None
    for k in doc:
        if k not in ("machine", "level", "reserved", "noise", "task"):
            raise UserError(f"{where}: unknown field {k!r} (expected machine, level, reserved, noise, task)")
    g = _geometry(doc, where, base)
    raw = doc.get("task")
    if not isinstance(raw, list) or not raw:
        raise UserError(f"{where}: expected at least one [[task]]")
    tasks = [_task(i, t, where) for i, t in enumerate(raw)]
    if len({t.name for t in tasks}) != len(tasks):
        raise UserError(f"{where}: task names must be unique")
    return g, tasks


# ---------------------------------------------------------------------------------------------
# Placement

def _place_tlb_malloc(g: Geometry, t: TaskIn, used: dict[tuple[int, int], int], where: str) -> None:
    """tlb_malloc (seed 003 §3, Eq. 3.1-3.2): small color c is set R + c of every period of M
    pages; an allocation of at most a page goes to the task's colors in turn, packed first-fit
    into that color's current page (with its LEN_BYTES); a larger one takes ceil(size / 4 KiB) ≤ R
    reserved sets of the period its large color names."""
    small = g.sets - g.reserved
    colors = t.colors or []
    if any(c >= small for c in colors):
        raise UserError(f"{where}: {t.name}: colors must be below the {small} small colors")
    if any(c >= g.ways for c in t.large_colors):
        raise UserError(f"{where}: {t.name}: large colors must be below the {g.ways} ways (Corollary 1)")
    fill: dict[int, int] = {}  # color -> bytes used in its current page
    cur: dict[int, int] = {}  # color -> period of its current page
    turn = 0
    large = list(t.large_colors)
    for k, size in enumerate(t.allocations):
        if size + LEN_BYTES > PAGE:
            n = math.ceil((size + LEN_BYTES) / PAGE)
            if n > g.reserved:
                raise UserError(f"{where}: {t.name}: allocation {k + 1} ({size} bytes) needs {n} contiguous pages; "
                                f"tlb_malloc serves at most R = {g.reserved} (seed 003 Eq. 3.1)")
            if not large:
                raise UserError(f"{where}: {t.name}: allocation {k + 1} ({size} bytes) is large and the task has no large_colors left")
            lc = large.pop(0)
            base = COLOR_BASE + lc * g.sets * PAGE
            for j in range(n):
                t.pages[(base >> 12) + j] = f"alloc {k + 1} (large color {lc}, page {j})"
            continue
        if not colors:
            raise UserError(f"{where}: {t.name}: tlb_malloc placement needs 'colors' (or run with --plan)")
        c = colors[turn % len(colors)]
        turn += 1
        if c not in cur or fill[c] + size + LEN_BYTES > PAGE:
            p = used.get((c, 0), 0)
            used[(c, 0)] = p + 1
            # periods 0..ways-1 hold the large colors' reserved sets; small pages may use any.
            cur[c], fill[c] = p, 0
        fill[c] += size + LEN_BYTES
        vpn = (COLOR_BASE >> 12) + cur[c] * g.sets + g.reserved + c
        t.pages.setdefault(vpn, f"alloc {k + 1} (color {c})")


def _place_glibc(index: int, t: TaskIn) -> None:
    nxt = GLIBC_ARENA_TOP - (index + 1) * GLIBC_HEAP_MAX + GLIBC_FIRST
    mmap_top = GLIBC_MMAP_TOP - index * (1 << 30)
    for k, size in enumerate(t.allocations):
        if size >= GLIBC_MMAP_THRESHOLD:
            ln = math.ceil((size + 16) / PAGE) * PAGE
            mmap_top -= ln + PAGE
            p = mmap_top + 16
        else:
            p = nxt
            nxt += max((size + 8 + 15) & ~15, 32)
        for vpn in range(p >> 12, (p + size - 1 >> 12) + 1):
            t.pages.setdefault(vpn, f"alloc {k + 1} (glibc {hex(p)})")


def place(g: Geometry, tasks: list[TaskIn], where: str = "task set") -> None:
    used: dict[tuple[int, int], int] = {}
    for i, t in enumerate(tasks):
        t.pages = {}
        if t.placement == "tlb_malloc":
            _place_tlb_malloc(g, t, used, where)
        elif t.placement == "glibc":
            _place_glibc(i, t)
        for a in t.addresses:
            t.pages.setdefault(a >> 12, f"page {hex(a)}")
        if not t.pages:
            raise UserError(f"{where}: {t.name}: no pages (give allocations or pages)")


# ---------------------------------------------------------------------------------------------
# Analysis

def _priority_order(tasks: list[TaskIn]) -> list[int]:
    return sorted(range(len(tasks)), key=lambda i: (tasks[i].period, i))


def _preemptions(tasks: list[TaskIn]) -> tuple[dict[str, int], dict[str, str]]:
    order = _priority_order(tasks)
    pre: dict[str, int] = {}
    win: dict[str, str] = {}
    for rank, i in enumerate(order):
        hp = [tasks[j] for j in order[:rank]]
        t = tasks[i]
        w = t.period
        how = "period"
        if t.exec is not None and all(h.exec is not None for h in hp):
            r = t.exec
            for _ in range(1000):  # response-time analysis (Joseph & Pandya)
                nr = t.exec + sum(math.ceil(r / h.period - 1e-12) * h.exec for h in hp)
                if nr > t.period or abs(nr - r) < 1e-12:
                    r = nr
                    break
                r = nr
            if r <= t.period:
                w, how = r, f"response time {r:g} ms"
        pre[t.name] = sum(math.ceil(w / h.period - 1e-12) for h in hp)
        win[t.name] = how
    return pre, win


def analyze(g: Geometry, tasks: list[TaskIn]) -> Report:
    occ: dict[int, dict[str, int]] = {}
    where: dict[int, dict[str, list[str]]] = {}
    for t in tasks:
        for vpn, what in sorted(t.pages.items()):
            s = vpn % g.sets
            occ.setdefault(s, {}).setdefault(t.name, 0)
            occ[s][t.name] += 1
            where.setdefault(s, {}).setdefault(t.name, []).append(f"{hex(vpn << 12)} [{what}]")
    # A page two tasks share is one translation: the set's total counts distinct pages.
    distinct: dict[int, set[int]] = {}
    for t in tasks:
        for vpn in t.pages:
            distinct.setdefault(vpn % g.sets, set()).add(vpn)
    conflicts, overflows = [], []
    for s in sorted(occ):
        total = len(distinct[s]) + g.noise.get(s, 0)
        if total <= g.ways:
            continue
        if len(occ[s]) >= 2:
            conflicts.append({"set": s, "total": total, "noise": g.noise.get(s, 0), "pages": where[s]})
        else:
            (name,) = occ[s]
            overflows.append({"set": s, "task": name, "total": total, "noise": g.noise.get(s, 0)})
    # Warm-up conflicts: a set that fits its ways with the jobs' pages may still overflow with
    # the pages the warm-ups touch (job 0: allocation, first writes, binding the first library
    # calls; `warmup_pages`: every page the warm-up touches). The warm-ups run in the file's task
    # order before any job (seed 003 Alg. 4: main creates the tasks in order, each runs its
    # t_init at once), so a page of task i's jobs that its warm-up touched can be pushed out by
    # what comes after it: i's own warm-up pages, the later tasks' warm-ups, and the other
    # tasks' job pages, never by an earlier task's warm-up (older than i's pages under LRU); a
    # job page the warm-up did not touch is a first touch, not an eviction. Under LRU each page of a job there misses at most once:
    # after every job page of the set has been touched once they are its most recent (at most
    # `ways` of them), and nothing else comes in.
    warm_all = [{a >> 12 for a in t.warmup_addresses} for t in tasks]
    warm_pages = [w - set(t.pages) for w, t in zip(warm_all, tasks)]
    named = {c["set"] for c in conflicts} | {o["set"] for o in overflows}
    warmup_conflicts = []
    ordered = g.replacement.lower() == "lru" and all(t.warmup_order is not None for t in tasks)
    for s in sorted(occ) if ordered else []:
        if s not in named:
            c = _ordered_warmup_conflict(g, tasks, s)
            if c is not None:
                warmup_conflicts.append(c)
    for s in [] if ordered else sorted(occ):
        if s in named:
            continue
        for i, t in enumerate(tasks):
            mine = {v for v in t.pages if v % g.sets == s}
            if not mine & warm_all[i]:
                continue  # its job pages here were not in the TLB before its first job: first touches
            others = {v for j, u in enumerate(tasks) if j != i for v in u.pages if v % g.sets == s}
            later = {v for j in range(i + 1, len(tasks)) for v in warm_all[j] if v % g.sets == s}
            own = {v for v in warm_pages[i] if v % g.sets == s}
            if not (others | later) - mine:
                continue  # nothing of another task's comes after: not an inter-task conflict
            total = len(mine | others | later | own) + g.noise.get(s, 0)
            if total <= g.ways:
                continue
            pages: dict[str, list[str]] = {}
            for j, u in enumerate(tasks):
                ps = [f"{hex(v << 12)} [{u.pages[v]}]" for v in sorted(u.pages) if v % g.sets == s]
                if j >= i:
                    ps += [f"{hex(v << 12)} [warm-up]" for v in sorted(warm_pages[j]) if v % g.sets == s]
                if ps:
                    pages[u.name] = ps
            warmup_conflicts.append({"set": s, "task": t.name, "total": total, "noise": g.noise.get(s, 0),
                                     "pages": pages})
            break  # one entry per set: the first task (in warm-up order) whose pages can go
    pre, win = _preemptions(tasks)
    safe = g.safe_pages()
    bounds: dict[str, int | None] = {}
    bad = {c["set"] for c in conflicts} | {o["set"] for o in overflows}
    for t in tasks:
        b: int | None = 0
        for s in bad:
            a = occ[s].get(t.name, 0)
            if a == 0:
                continue
            if safe is None or a > safe:
                b = None
                break
            b += a * (1 + pre[t.name])
        bounds[t.name] = b
    first: dict[str, int | None] = {}
    for t in tasks:
        b = bounds[t.name]
        first[t.name] = None if b is None else b + sum(occ[c["set"]].get(t.name, 0) for c in warmup_conflicts)
    return Report(geometry=g, tasks=tasks, occupancy=occ, conflicts=conflicts, overflows=overflows,
                  preemptions=pre, bounds=bounds, window=win, warmup_conflicts=warmup_conflicts,
                  first_job_bounds=first, warmup_ordered=ordered)


def _ordered_warmup_conflict(g: Geometry, tasks: list[TaskIn], s: int) -> dict[str, Any] | None:
    """The warm-up conflict of set s (one whose pages fit its ways after the warm-ups) with every
    task's warm-up order known: the warm-ups run one after another in the file's task order
    (seed 003 Alg. 4), each touching its pages in `warmup_order` (last touch, oldest first: all an
    LRU set keeps of one task's run), through the set's LRU of `ways` minus the noise's ways. A
    job page of task i then misses in i's first job because of another task when
    * another task's warm-up pushed it out (the fill that did is named), or
    * it is still in the set, and the pages above it there (A) with the job pages of every task
      other than itself reach the ways: only then can the first jobs push it out before i touches
      it again, and only by a fill of a job page not in A; another task must own one of those.
    Once a job page has been touched again only job pages can be newer than it, and they fit.
    None when no job page of the set can so miss."""
    ways = g.ways - g.noise.get(s, 0)
    stack: list[int] = []  # most recent first
    evicted_by: dict[int, tuple[int, int]] = {}  # page -> (task, page) of the fill that last pushed it out
    for j, t in enumerate(tasks):
        for a in t.warmup_order or []:
            v = a >> 12
            if v % g.sets != s:
                continue
            if v in stack:
                stack.remove(v)
            evicted_by.pop(v, None)
            stack.insert(0, v)
            while len(stack) > max(ways, 0):
                evicted_by[stack.pop()] = (j, v)
    jobs = {v for t in tasks for v in t.pages if v % g.sets == s}
    owners = {v: {j for j, t in enumerate(tasks) if v in t.pages} for v in jobs}
    pages: dict[str, list[str]] = {}
    why: list[str] = []
    victim = None

    def add(j: int, v: int) -> None:
        pages.setdefault(tasks[j].name, [])
        entry = f"{hex(v << 12)} [{tasks[j].pages.get(v, 'warm-up')}]"
        if entry not in pages[tasks[j].name]:
            pages[tasks[j].name].append(entry)

    for i, t in enumerate(tasks):
        for v in sorted(p for p in t.pages if p % g.sets == s):
            by, evictor = evicted_by.get(v, (i, 0))
            if by != i:
                add(i, v)
                add(by, evictor)
                why.append(f"{t.name}'s {hex(v << 12)} pushed out by {tasks[by].name}'s warm-up fill of "
                           f"{hex(evictor << 12)}")
                victim = victim or t.name
            elif v in stack:
                above = set(stack[:stack.index(v)])
                reach = above | (jobs - {v})
                fills = {q for q in jobs - above - {v} if owners[q] - {i}}
                if len(reach) >= ways and fills:
                    add(i, v)
                    for q in sorted(fills):
                        for j in sorted(owners[q] - {i}):
                            add(j, q)
                    why.append(f"{t.name}'s {hex(v << 12)} has {len(above)} warm-up page(s) above it and "
                               f"{len(jobs - {v})} other job page(s) in the set ({g.ways} ways, noise "
                               f"{g.noise.get(s, 0)}): a first job of "
                               + ", ".join(sorted({tasks[j].name for q in fills for j in owners[q] - {i}}))
                               + " can push it out")
                    victim = victim or t.name
    if victim is None:
        return None
    total = len(jobs | {a >> 12 for t in tasks for a in t.warmup_order or [] if (a >> 12) % g.sets == s})
    return {"set": s, "task": victim, "total": total + g.noise.get(s, 0), "noise": g.noise.get(s, 0),
            "pages": pages, "why": why}


def isolate(source: str | Path | dict[str, Any]) -> Report:
    """Loads a task-set file (or dict), places its pages and analyzes them (see the module)."""
    g, tasks = load(source)
    place(g, tasks, str(source) if not isinstance(source, dict) else "task set")
    return analyze(g, tasks)


# ---------------------------------------------------------------------------------------------
# Planning

def plan(source: str | Path | dict[str, Any]) -> tuple[dict[str, dict[str, list[int]]] | None, str]:
    """Assigns colors to the tlb_malloc tasks so that the set is isolated: each task gets colors
    of its own whose free ways (the ways minus noise and the pages of tasks placed otherwise)
    hold its small pages, largest demand first, and large colors (periods of the R reserved
    sets) for its large allocations. Returns (assignment, explanation); assignment is None when
    no conflict-free assignment exists, and the explanation says why."""
    g, tasks = load(source)
    where = str(source) if not isinstance(source, dict) else "task set"
    small = g.sets - g.reserved
    # Pages of tasks not colored by the planner (glibc, explicit) take ways first.
    fixed = [t for t in tasks if t.placement != "tlb_malloc"]
    if fixed:
        place(g, fixed, where)
    taken = dict(g.noise)
    for t in fixed:
        for vpn in t.pages:
            s = vpn % g.sets
            taken[s] = taken.get(s, 0) + 1
    for t in tasks:  # explicit pages of the colored tasks (their stacks) take ways too
        if t.placement == "tlb_malloc":
            for vpn in {a >> 12 for a in t.addresses}:
                s = vpn % g.sets
                taken[s] = taken.get(s, 0) + 1
    free = {c: g.ways - taken.get(g.reserved + c, 0) for c in range(small)}
    # Demand: small pages (first-fit packing into pages) and large allocations per task.
    demand: dict[str, int] = {}
    large: dict[str, list[int]] = {}
    for t in tasks:
        if t.placement != "tlb_malloc":
            continue
        pages, fill = 0, PAGE
        for size in t.allocations:
            if size + LEN_BYTES > PAGE:
                large.setdefault(t.name, []).append(math.ceil((size + LEN_BYTES) / PAGE))
                continue
            if fill + size + LEN_BYTES > PAGE:
                pages, fill = pages + 1, 0
            fill += size + LEN_BYTES
        demand[t.name] = pages
    need_r = max((n for ls in large.values() for n in ls), default=0)
    if need_r > g.reserved:
        return None, (f"a large allocation needs {need_r} contiguous pages but only R = {g.reserved} sets are "
                      f"reserved (seed 003 Eq. 3.1: max_alloc_size = page_size x R); set reserved = {need_r}")
    # Large colors: one per large allocation, each a way in every reserved set.
    lfree = min((g.ways - taken.get(s, 0) for s in range(g.reserved)), default=0)
    nlarge = sum(len(v) for v in large.values())
    if nlarge > lfree:
        return None, (f"{nlarge} large allocations need {nlarge} large colors but the reserved sets have "
                      f"{lfree} free ways (noise and fixed pages hold the rest)")
    out: dict[str, dict[str, list[int]]] = {}
    next_large = 0
    avail = sorted((c for c in range(small) if free[c] > 0), key=lambda c: (-free[c], c))
    for name in sorted(demand, key=lambda n: (-demand[n], n)):
        got, cap = [], 0
        while cap < demand[name]:
            if not avail:
                have = sum(free[c] for c in range(small) if free[c] > 0)
                total = sum(demand.values())
                return None, (f"{name} needs {demand[name]} pages in colors of its own; the clean ways run out "
                              f"(the tasks need {total} small pages in exclusive colors, the {small} small colors "
                              f"have {have} free ways, and a color cannot be split between tasks without "
                              f"letting them conflict)")
            c = avail.pop(0)
            got.append(c)
            cap += free[c]
        out[name] = {"colors": sorted(got),
                     "large_colors": list(range(next_large, next_large + len(large.get(name, []))))}
        next_large += len(large.get(name, []))
    for t in tasks:
        if t.placement == "tlb_malloc" and t.name not in out:
            out[t.name] = {"colors": [], "large_colors": []}
    return out, (f"{len(out)} task(s) colored in disjoint colors that fit their pages beside the noise"
                 + (f"; {nlarge} large allocation(s) in the R = {g.reserved} reserved sets" if nlarge else ""))


def apply_plan(source: str | Path | dict[str, Any], assignment: dict[str, dict[str, list[int]]]) -> Report:
    g, tasks = load(source)
    for t in tasks:
        if t.name in assignment:
            t.colors = assignment[t.name]["colors"]
            t.large_colors = assignment[t.name]["large_colors"]
    place(g, tasks, str(source) if not isinstance(source, dict) else "task set")
    return analyze(g, tasks)


# ---------------------------------------------------------------------------------------------
# Simulation check

def simulate(report: Report, jobs: int = 6, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Runs the same pages under rate-monotonic scheduling in the engine (`tlblab.rt`), each job
    touching its task's pages `passes` times, and returns per task the most misses any job
    after the warm-up took at the analyzed level, beside the bound. Periods and phases in ms
    become cycles at the machine's frequency. The bound's premise (a job ends within its
    period) is reported as `deadline_missed`."""
    from tlblab.rt import simulate_taskset
    from tlblab.sim import machine_config

    g = report.geometry
    mhz = float(machine_config(g.machine).get("frequency_mhz", 1000.0))
    cyc = lambda ms: int(round(ms * mhz * 1000))  # noqa: E731
    spec = [{"name": t.name, "phase": cyc(t.phase), "period": cyc(t.period), "deadline": 0,
             "pages": [vpn << 12 for vpn in sorted(t.pages)], "passes": t.passes} for t in report.tasks]
    r = simulate_taskset(g.machine, spec, jobs, seed=seed)
    lv = r.stats["tlb_levels"].index(g.level)
    out: dict[str, dict[str, Any]] = {}
    for i, t in enumerate(report.tasks):
        js = [j for j in r.stats["jobs"] if j["task"] == i and j["job"] >= 1]
        out[t.name] = {"max_misses": max((j["tlb_misses"][lv] for j in js), default=0),
                       "bound": report.bounds[t.name],
                       "deadline_missed": any(j["deadline_missed"] for j in js),
                       "jobs": len(js)}
    return out
