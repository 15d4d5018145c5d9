"""Reference model of the coloring allocator's placement algorithm (docs/color.md, "Placement
algorithm"), written from the document, not from the C. tests/test_color_parity.py replays random
request sequences through it and through the C allocator (runtime/bench/color_trace) and requires
identical offsets. A simulator port (crates/tlblab-core) can be checked against either."""

from __future__ import annotations

HDR, MIN_BLOCK, ALIGN, SL_LOG2, SL_COUNT, FL_SHIFT, CTL_FIXED = 16, 32, 16, 3, 8, 7, 136


def msb(x: int) -> int:
    return x.bit_length() - 1


def mapping(size: int) -> tuple[int, int]:
    if size < 1 << FL_SHIFT:
        return 0, size >> 4
    m = msb(size)
    return m - FL_SHIFT + 1, (size >> (m - SL_LOG2)) ^ SL_COUNT


def fl_count_for(pool: int) -> int:
    return 1 if pool < 1 << FL_SHIFT else msb(pool) - FL_SHIFT + 2


def ctl_bytes(pool: int) -> int:
    return (CTL_FIXED + fl_count_for(pool) * SL_COUNT * 8 + 15) & ~15


def adjust(n: int) -> int:
    if n == 0 or n > 1 << 40:
        return 0
    return max(MIN_BLOCK, (n + HDR + ALIGN - 1) & ~(ALIGN - 1))


class Heap:
    def __init__(self, fl_count: int):
        self.fl_count = fl_count
        self.lists: dict[tuple[int, int], list[int]] = {}
        self.size: dict[int, int] = {}       # block offset -> size (0 = sentinel)
        self.free: dict[int, bool] = {}
        self.prev: dict[int, int] = {}       # block offset -> prev_size

    def insert(self, b: int) -> None:
        self.lists.setdefault(mapping(self.size[b]), []).insert(0, b)

    def remove(self, b: int) -> None:
        self.lists[mapping(self.size[b])].remove(b)

    def nonempty(self, fl: int, sl: int) -> bool:
        return bool(self.lists.get((fl, sl)))

    def find(self, need: int) -> int | None:
        rounded = need + (1 << (msb(need) - SL_LOG2)) - 1 if need >= 1 << FL_SHIFT else need
        fl, sl = mapping(rounded)
        b = None
        if fl < self.fl_count:
            cands = [(f, s) for f in range(fl, self.fl_count) for s in range(SL_COUNT)
                     if (f > fl or s >= sl) and self.nonempty(f, s)]
            if cands:
                b = self.lists[cands[0]][0]
        if b is None:
            fl, sl = mapping(need)
            if fl < self.fl_count and self.nonempty(fl, sl) and self.size[self.lists[(fl, sl)][0]] >= need:
                b = self.lists[(fl, sl)][0]
        if b is not None:
            self.remove(b)
        return b

    def split_tail(self, b: int, need: int) -> None:
        have = self.size[b]
        if have - need >= MIN_BLOCK:
            r = b + need
            self.size[b], self.size[r], self.free[r], self.prev[r] = need, have - need, True, need
            self.prev[r + have - need] = have - need
            self.insert(r)
        self.free[b] = False

    def give_back(self, b: int) -> None:
        size = self.size[b]
        p = b - self.prev[b]
        if self.prev[b] and self.free.get(p):
            self.remove(p)
            del self.size[b], self.free[b], self.prev[b]
            size += self.size[p]
            b = p
        n = b + size
        if self.free[n]:
            self.remove(n)
            size += self.size[n]
            del self.size[n], self.free[n], self.prev[n]
        self.size[b], self.free[b] = size, True
        self.prev[b + size] = size
        self.insert(b)


class Arena:
    def __init__(self, sets: int, ways: int, reserved: int = 0, periods: int = 0, slot_shift: int = 12):
        self.sets, self.reserved, self.periods = sets, reserved, periods or ways
        self.slot = 1 << slot_shift
        self.period_bytes = sets * self.slot
        self.small = sets - reserved
        self.large = self.periods if reserved else 0
        self.heaps: list[Heap] = []
        for c in range(self.small + self.large):
            pools = self.pools(c)
            h = Heap(fl_count_for(self.slot if c < self.small else reserved * self.slot))
            for i in [0, *range(len(pools) - 1, 0, -1)]:
                lo, hi = pools[i]
                h.size[lo], h.free[lo], h.prev[lo] = hi - lo - HDR, True, 0
                h.size[hi - HDR], h.free[hi - HDR], h.prev[hi - HDR] = 0, False, hi - lo - HDR
                h.insert(lo)
            self.heaps.append(h)

    def pools(self, c: int) -> list[tuple[int, int]]:
        if c < self.small:
            out = [(i * self.period_bytes + (self.reserved + c) * self.slot,
                    i * self.period_bytes + (self.reserved + c + 1) * self.slot) for i in range(self.periods)]
            cb = ctl_bytes(self.slot)
        else:
            s = (c - self.small) * self.period_bytes
            out = [(s, s + self.reserved * self.slot)]
            cb = ctl_bytes(self.reserved * self.slot)
        out[0] = (out[0][0] + cb, out[0][1])
        return out

    def color_of(self, off: int) -> int:
        k = off // self.slot
        s = k % self.sets
        return s - self.reserved if s >= self.reserved else self.small + k // self.sets

    def malloc(self, n: int, c: int) -> int | None:
        need = adjust(n)
        if need == 0 or c >= len(self.heaps):
            return None
        h = self.heaps[c]
        b = h.find(need)
        if b is None:
            return None
        h.split_tail(b, need)
        return b + HDR

    def aligned(self, al: int, n: int, c: int) -> int | None:
        if al <= ALIGN:
            return self.malloc(n, c)
        if al & (al - 1) or al > self.slot or c >= len(self.heaps):
            return None
        need = adjust(n)
        if need == 0:
            return None
        h = self.heaps[c]
        b = h.find(need + al + MIN_BLOCK)
        if b is None:
            return None
        pay = b + HDR
        # Offsets are relative to a base aligned to a period, which is a multiple of al.
        a = -(-pay // al) * al
        if a != pay and a - pay < MIN_BLOCK:
            a = -(-(pay + MIN_BLOCK) // al) * al
        gap = a - pay
        if gap:
            have = h.size[b]
            nb = b + gap
            h.size[b], h.free[b] = gap, True
            h.size[nb], h.free[nb], h.prev[nb] = have - gap, False, gap
            h.prev[nb + have - gap] = have - gap
            h.insert(b)
            b = nb
        h.split_tail(b, need)
        return b + HDR

    def free(self, p: int | None) -> None:
        if p is not None:
            self.heaps[self.color_of(p)].give_back(p - HDR)

    def realloc(self, p: int, n: int) -> int | None:
        if n == 0:
            self.free(p)
            return None
        need = adjust(n)
        if need == 0:
            return None
        c = self.color_of(p)
        h = self.heaps[c]
        b = p - HDR
        have = h.size[b]
        nx = b + have
        if need > have and h.free[nx] and have + h.size[nx] >= need:
            h.remove(nx)
            have += h.size[nx]
            del h.size[nx], h.free[nx], h.prev[nx]
            h.size[b] = have
            h.prev[b + have] = have
        if need <= have:
            if have - need >= MIN_BLOCK:
                r = b + need
                h.size[b] = need
                h.size[r], h.free[r], h.prev[r] = have - need, False, need
                h.give_back(r)
            return p
        q = self.malloc(n, c)
        if q is not None:
            h.give_back(b)
        return q
