"""Full mode's chunk split without numpy: ``splitcore``'s twin, the same stored bytes, for a fork child's flushes until it has a server.

A fork child of the program cannot use its parent's split server (the pipes are the parent's)
and must not import numpy inside its first flush: a child that ends 0.3 s after the fork
would end during the import, its part's transaction open, and keep nothing.  So until its own
server is joined (``splitserver.sibling``), the child splits here, item by item in Python
(about ten times slower than numpy per item; only a child's first flushes), with nothing to
import (docs/design.md, "Full mode in fork children, wave 22").  Stateless, like ``splitcore``.
"""

from __future__ import annotations

import sys
from itertools import compress as select, count

from wholetrace.runtime.values import (_MARK_MAX, _SHIFT, _SLOT_MASK, BIGINT, BYTES, COMPLEX, FLOAT, STR,
                                       SWITCH_TAG)
from wholetrace.store.cmods import ArrayType as array
from wholetrace.store.schema import compress

TYPE_CHECKING = False
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

_U64 = (1 << 64) - 1
_MIX = -7046029254386353131 & _U64        # ``wetlayout``'s bucket hash constants
_GOLD = 0x9E3779B97F4A7C15
_TAG_MIX = [t * _MIX for t in range(256)]
#: New arrays are slices of these: ``array()`` is an audit event (a fork child splits here).
_Q, _I = array("q"), array("i")
_SIDE_TAGS = frozenset((FLOAT, STR, BYTES, COMPLEX))
_LITTLE = sys.byteorder == "little"


class SplitError(Exception):
    """A chunk that cannot be split (the message becomes the recording's ``StoreError``; raised by
    ``splitcore`` too)."""


def _q(data: Any) -> Any:
    """Little-endian int64 bytes (any buffer: the flusher sends arrays) as an ``array('q')``."""
    a = _Q[:]
    a.frombytes(memoryview(data).cast("B"))
    if not _LITTLE:                                # pragma: no cover
        a.byteswap()
    return a


def _le(a: Any) -> bytes:
    if not _LITTLE:                                # pragma: no cover
        a = a[:]
        a.byteswap()
    return a.tobytes()


def _list_q(vals: list[int]) -> Any:
    q = _Q[:]
    q.fromlist(vals)
    return q


def _planes(vals: list[int]) -> tuple[str, tuple[int, ...], bytes]:
    """``wetlayout.planes``: (dtype, shape, bytes) of the (8, n) uint8 byte planes."""
    raw = _le(_list_q(vals))
    return "|u1", (8, len(vals)), b"".join(raw[j::8] for j in range(8))


def _stored(name: str, dtype: str, shape: tuple[int, ...], raw: bytes) -> tuple[str, str, tuple[int, ...], bytes]:
    return (name, dtype, shape, compress(raw))


def _markers(a: Any) -> list[int]:
    """``splitcore._markers``: in each run of items at or below ``_MARK_MAX``, every other one
    from its start.  (The items that low are found by a C loop: mostly the markers alone.)"""
    out: list[int] = []
    run0 = prev = -2
    for j in select(count(), map(_MARK_MAX.__ge__, a)):
        if j != prev + 1:
            run0 = j
        if not (j - run0) & 1:
            out.append(j)
        prev = j
    return out


def _refs(tag: list[int], val: list[int]) -> list[int]:
    """``wetlayout.back_refs``: the distance back to the latest earlier record of the same hash
    bucket when it carries the same token (a stable sort's neighbours are consecutive records
    of a bucket)."""
    last: dict[int, int] = {}
    ref = [0] * len(val)
    if len(val) < 2:
        return ref
    for i, (t, v) in enumerate(zip(tag, val)):
        b = ((((v + _TAG_MIX[t]) & _U64) * _GOLD) & _U64) >> 48
        e = last.get(b)
        if e is not None and tag[e] == t and val[e] == v:
            ref[i] = i - e
        last[b] = i
    return ref


def split(image: bytes, done: int, rec_done: int, side: bytes, bigs: bytes) -> tuple[Any, ...]:
    """``splitcore.split``: the same arguments, the same reply."""
    a = _q(image)
    n = len(a)
    mk = _markers(a)
    carry = None
    if mk and mk[-1] == n - 1:                     # its payload is not appended yet
        carry = a[-1]
        n -= 1
        mk.pop()
    keep = bytearray(b"\1") * n                    # the events: every item but markers and payloads
    for m in mk:
        keep[m] = keep[m + 1] = 0
    events = _I[:]
    try:
        events.fromlist(list(select(a, keep)))
    except OverflowError:
        raise SplitError("a probe recorded a value outside int32") from None
    events_image = _le(events)
    if not mk:
        return events_image, carry, 0, 0, None
    pos = [done + m - 2 * j for j, m in enumerate(mk)]
    tag = [(-a[m] >> _SHIFT) - 1 for m in mk]
    slot = [-a[m] & _SLOT_MASK for m in mk]
    val = [a[m + 1] for m in mk]
    out = []
    sw = [j for j, t in enumerate(tag) if t == SWITCH_TAG]
    if sw:                                         # (record index in the stream, position, number)
        rows = [x for i, j in enumerate(sw) for x in (rec_done + j - i, pos[j], val[j])]
        out.append(_stored("wet.switch", "<i8", (len(sw), 3), _le(_list_q(rows))))
        keep = [j for j, t in enumerate(tag) if t != SWITCH_TAG]
        pos, tag, slot, val, mk = ([c[j] for j in keep] for c in (pos, tag, slot, val, mk))
    k = len(mk)
    sides = _q(side)
    at = [j for j, t in enumerate(tag) if t in _SIDE_TAGS]
    if len(at) > len(sides):
        raise SplitError("value records without their values")
    for i, j in enumerate(at):
        val[j] = sides[i]
    if bigs:                                       # ints beyond int64: contents, like str
        pairs = _q(bigs)
        wide = dict(zip(pairs[0::2], pairs[1::2]))
        for j, m in enumerate(mk):
            h = wide.get(m + 1)
            if h is not None:
                tag[j], val[j] = BIGINT, h
    ref = _refs(tag, val)
    deltas = [p - q for p, q in zip(pos, [0, *pos[:-1]])]
    for name, vals in (("pos", deltas), ("slot", slot)):
        out.append(_stored(f"wet.{name}", *_planes(vals)))
    out.append(_stored("wet.tag", "|u1", (k,), bytes(tag)))
    out.append(_stored("wet.ref", *_planes(ref)))
    out.append(_stored("wet.val", *_planes([v for v, r in zip(val, ref) if not r])))
    return events_image, carry, len(at), k, out


def objects(image: bytes) -> tuple[str, str, tuple[int, ...], bytes]:
    """``splitcore.objects``: the stored object table of (serial, type index) int64 pairs."""
    rows = _q(image)
    serials = rows[0::2].tolist()
    deltas = [p - q for p, q in zip(serials, [0, *serials[:-1]])]
    a, b = _planes(deltas)[2], _planes(rows[1::2].tolist())[2]
    return _stored("wet.objects", "|u1", (16, len(serials)), a + b)


def dispatch(split_: Any, objects_: Any, request: tuple[Any, ...]) -> tuple[Any, ...]:
    """The reply to one request of the server's protocol, by ``split_``/``objects_`` (this
    module's or ``splitcore``'s): ("ok", *result) or ("err", message)."""
    try:
        if request[0] == "split":
            return ("ok", *split_(*request[1:]))
        if request[0] == "objects":
            return ("ok", *objects_(request[1]))
        return ("err", f"unknown request {request[0]!r}")
    except SplitError as exc:
        return ("err", str(exc))


def handle(request: tuple[Any, ...]) -> tuple[Any, ...]:
    """``splitcore.handle``."""
    return dispatch(split, objects, request)
