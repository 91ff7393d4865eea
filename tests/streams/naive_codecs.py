"""Slow plain-Python twins of the stream codecs: the tests' reference for every kernel.

Written from the spec (shared/specs/wet.md section 3, and the layout in
kernels/predict.py's docstring), not from the kernels: a stack is a Python list of
predictions, and its bits are derived from the whole list at once (maximal runs grouped
afresh) instead of the kernels' incremental push/pop with an unpacked top record.  Tables
are lists, values are Python ints masked to 64 bits.  ``paper_rule=True`` reproduces the
printed Figure 9 of Zhang & Gupta (a miss record keeps the value and decoding only re-sets
the table entry), which is lossy: the regression test shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MASK = (1 << 64) - 1
FCM, DFCM, LASTV, LASTS = 0, 1, 2, 3
SEED, M1, M2 = 0x243F6A8885A308D3, 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F
RUN_MIN = 4

FAMILIES = {"bfcm": FCM, "bdfcm": DFCM, "blast": LASTV, "blaststride": LASTS}


def zz(d: int) -> int:
    d &= MASK
    return ((d << 1) & MASK) ^ (MASK if d >> 63 else 0)


def unzz(z: int) -> int:
    return (z >> 1) ^ (MASK if z & 1 else 0)


@dataclass
class Spec:
    """One predictor codec: family, n, context values c, index bits, table bits."""

    family: int
    n: int
    tbits: int

    @property
    def c(self) -> int:
        return self.n + 1 if self.family in (DFCM, LASTS) else self.n

    @property
    def ib(self) -> int:
        return (self.n - 1).bit_length() if self.family in (LASTV, LASTS) else 0

    @property
    def table_size(self) -> int:
        return 1 << self.tbits

    @classmethod
    def named(cls, name: str, tbits: int) -> "Spec":
        fam, n = name.rsplit("-", 1)
        return cls(FAMILIES[fam], int(n), tbits if FAMILIES[fam] in (FCM, DFCM) else 0)


def table_key(spec: Spec, near: list[int]) -> int:
    h = SEED
    for d in range(spec.n):
        x = near[d] if spec.family == FCM else (near[d] - near[d + 1]) & MASK
        h = ((h ^ x) * M1) & MASK
        h ^= h >> 29
    return ((h * M2) & MASK) >> (64 - max(spec.tbits, 1))


def predict(spec: Spec, table: list[int], near: list[int], t: int, paper_rule: bool = False) -> tuple:
    """Compress value ``t`` whose context, nearest first, is ``near``: ('H', idx) or ('M', payload)."""
    if spec.family in (FCM, DFCM):
        k = table_key(spec, near)
        e = t if spec.family == FCM else (t - near[0]) & MASK
        if table[k] == e:
            return ("H", 0)
        evicted, table[k] = table[k], e
        return ("M", t) if paper_rule else ("M", zz(evicted - e))
    if spec.family == LASTV:
        for d in range(spec.n):
            if near[d] == t:
                return ("H", d)
        return ("M", zz(t - near[0]))
    stride = (t - near[0]) & MASK
    strides = [(near[d] - near[d + 1]) & MASK for d in range(spec.n)]
    for d, s in enumerate(strides):
        if s == stride:
            return ("H", d)
    return ("M", zz(stride - strides[0]))


def unpredict(spec: Spec, table: list[int], near: list[int], rec: tuple, paper_rule: bool = False) -> int:
    """Inverse of :func:`predict` (restores the evicted table entry)."""
    kind, x = rec
    if spec.family in (FCM, DFCM):
        k = table_key(spec, near)
        if paper_rule:
            if kind == "M":
                table[k] = x
            return table[k]
        e = table[k]
        if kind == "M":
            table[k] = (e + unzz(x)) & MASK
        return e if spec.family == FCM else (near[0] + e) & MASK
    if spec.family == LASTV:
        return near[x] if kind == "H" else (near[0] + unzz(x)) & MASK
    strides = [(near[d] - near[d + 1]) & MASK for d in range(spec.n)]
    if kind == "H":
        return (near[0] + strides[x]) & MASK
    return (near[0] + strides[0] + unzz(x)) & MASK


# ------------------------------------------------------------------ canonical bits


def _field(value: int, width: int) -> list[int]:
    return [(value >> b) & 1 for b in range(width)]


def _gamma(x: int) -> list[int]:
    return _field(x, 2 * x.bit_length() - 1)


def _uint(z: int) -> list[int]:
    ln = z.bit_length()
    return (_field(z, ln - 1) if ln >= 2 else []) + _gamma(ln + 1)


def canonical_bits(preds: list[tuple], ib: int) -> str:
    """The stack holding ``preds`` (pushed in that order) as a bit string, bottom bit first."""
    bits: list[int] = []
    k = 0
    while k < len(preds):
        kind, x = preds[k]
        if kind == "M":
            bits += _uint(x) + [0, 0]
            k += 1
            continue
        run = 1
        while k + run < len(preds) and preds[k + run] == ("H", x):
            run += 1
        if run < RUN_MIN:
            bits += (_field(x, ib) + [1]) * run
        else:
            bits += _gamma(run - RUN_MIN + 1) + _field(x, ib) + [1, 0]
        k += run
    return "".join(map(str, bits))


# ------------------------------------------------------------------ one segment


@dataclass
class Segment:
    """The bidirectional walker of one segment: F and B prediction lists, tables, context."""

    spec: Spec
    L: int
    i: int = 0
    f: list[tuple] = field(default_factory=list)
    b: list[tuple] = field(default_factory=list)
    ft: list[int] = field(default_factory=list)
    bt: list[int] = field(default_factory=list)
    cx: list[int] = field(default_factory=list)
    paper_rule: bool = False

    @property
    def last(self) -> int:
        return max(0, self.L - self.spec.c)

    @classmethod
    def parked(cls, spec: Spec, vals: list[int], mid: int, paper_rule: bool = False) -> "Segment":
        """The state at internal position ``mid``, computed from the definition."""
        c, L = spec.c, len(vals)
        seg = cls(spec, L, mid, ft=[0] * spec.table_size, bt=[0] * spec.table_size, paper_rule=paper_rule)
        seg.cx = list(vals[mid:mid + c]) + [0] * max(0, c - L)
        if L <= c:
            return seg
        for j in range(mid):
            seg.f.append(predict(spec, seg.ft, vals[j + 1:j + 1 + c], vals[j], paper_rule))
        for j in range(L - 1, mid + c - 1, -1):
            seg.b.append(predict(spec, seg.bt, vals[j - c:j][::-1], vals[j], paper_rule))
        return seg

    def forward(self) -> int:
        """One step right; returns the value decoded (v[i+c])."""
        c = self.spec.c
        v = unpredict(self.spec, self.bt, self.cx[::-1], self.b.pop(), self.paper_rule)
        t = self.cx[0]
        self.cx = self.cx[1:] + [v]
        self.f.append(predict(self.spec, self.ft, self.cx, t, self.paper_rule))
        self.i += 1
        assert len(self.cx) == c
        return v

    def backward(self) -> int:
        """One step left; returns the value decoded (v[i-1])."""
        v = unpredict(self.spec, self.ft, self.cx, self.f.pop(), self.paper_rule)
        t = self.cx[-1]
        self.cx = [v] + self.cx[:-1]
        self.b.append(predict(self.spec, self.bt, self.cx[::-1], t, self.paper_rule))
        self.i -= 1
        return v

    def goto(self, target: int) -> None:
        while self.i < target:
            self.forward()
        while self.i > target:
            self.backward()


# ------------------------------------------------------------------ whole stream


class Stream:
    """A twin of CompressedStream + PredictedCursor for one predictor codec."""

    def __init__(self, values: list[int], name: str, segment: int, tbits: int) -> None:
        self.values = [v & MASK for v in values]
        self.spec = Spec.named(name, tbits)
        self.segment = segment
        self.m = len(values)
        self.nseg = -(-self.m // segment)
        self.seg: Segment | None = None
        self.s = -1
        self.p = 0

    def vals(self, s: int) -> list[int]:
        return self.values[s * self.segment:(s + 1) * self.segment]

    def mid(self, s: int) -> int:
        return max(0, len(self.vals(s)) - self.spec.c) // 2

    def park(self, s: int) -> Segment:
        return Segment.parked(self.spec, self.vals(s), self.mid(s))

    def _enter(self, s: int, local: int) -> None:
        self.s, self.seg = s, self.park(s)
        self.seg.goto(min(local, self.seg.last))
        self.p = local

    def seek(self, q: int) -> None:
        s = min(q // self.segment, self.nseg - 1)
        local = q - s * self.segment
        if self.seg is not None and self.s == s:
            target = min(local, self.seg.last)
            if abs(self.seg.i - target) <= abs(self.mid(s) - target):
                self.seg.goto(target)
                self.p = local
                return
        self._enter(s, local)

    @property
    def pos(self) -> int:
        return self.s * self.segment + self.p

    def next(self) -> int | None:
        seg = self.seg
        assert seg is not None
        if self.p >= seg.L:
            return None
        v = seg.cx[self.p - seg.i]
        self.p += 1
        if self.p <= seg.last:
            seg.forward()
        if self.p == seg.L and self.s + 1 < self.nseg:
            self._enter(self.s + 1, 0)
        return v

    def prev(self) -> int | None:
        assert self.seg is not None
        if self.p == 0:
            if self.s == 0:
                return None
            self._enter(self.s - 1, len(self.vals(self.s - 1)))
        seg = self.seg
        self.p -= 1
        if self.p < seg.i:
            seg.backward()
        return seg.cx[self.p - seg.i]

    def state(self) -> dict[str, object]:
        seg = self.seg
        assert seg is not None
        return {"segment": self.s, "i": seg.i, "p": self.p, "context": list(seg.cx) or [0],
                "ftable": list(seg.ft) or [0], "btable": list(seg.bt) or [0],
                "fbits": canonical_bits(seg.f, self.spec.ib), "bbits": canonical_bits(seg.b, self.spec.ib)}


# ------------------------------------------------------------------ the codecs without predictor


def varint_bytes(values: list[int], segment: int) -> bytes:
    """Per segment LEB128 of zigzag deltas from 0, as the varint codec stores them."""
    out = bytearray()
    for start in range(0, len(values), segment):
        prev = 0
        for v in values[start:start + segment]:
            z = zz(v - prev)
            prev = v & MASK
            while z >= 0x80:
                out.append((z & 0x7F) | 0x80)
                z >>= 7
            out.append(z)
    return bytes(out)


def packed_width(values: list[int], signed: bool) -> int:
    vals = [v - (1 << 64) if signed and v >> 63 else v for v in (x & MASK for x in values)]
    return (max(vals) - min(vals)).bit_length() if vals else 0
