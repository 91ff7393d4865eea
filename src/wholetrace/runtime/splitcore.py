"""Full mode's chunk split with numpy: one int64 image of an event list in, the events and the stored value-log arrays out.

Runs in the split server (``runtime.splitserver``), a process of its own, so numpy is never
imported into the program's process while it runs; in-process only where there is no server
(a fork child of the program, a ``ValueLog`` made without a recorder).  Stateless: the
recording's per-stream counters come with each request and go back with the reply
(docs/design.md, "WET capture log", "Full mode's split server, wave 18").
"""

from __future__ import annotations

import numpy as np

from wholetrace.runtime.buffers import INT32_MAX, INT32_MIN
from wholetrace.runtime.splitpure import SplitError, dispatch
from wholetrace.runtime.values import (_MARK_MAX, _SHIFT, _SLOT_MASK, BIGINT, BYTES, COMPLEX, FLOAT, STR,
                                       SWITCH_TAG)
from wholetrace.runtime.wetlayout import pack_chunk, pack_objects
from wholetrace.store.schema import compress

TYPE_CHECKING = False
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

#: One stored array of a reply: (name, dtype string, shape, zstd blob) for ``put_compressed_array``.
Stored = tuple  # (str, str, tuple[int, ...], bytes)


def _stored(name: str, arr: Any) -> Stored:
    arr = np.ascontiguousarray(arr)
    return (name, arr.dtype.str, tuple(arr.shape), compress(arr.tobytes()))


def split(image: bytes, done: int, rec_done: int, side: bytes, bigs: bytes) -> tuple[Any, ...]:
    """Split one chunk: ``image`` is its items as little-endian int64 (a marker carried over from
    the stream's previous chunk first; ints beyond 64 bits as 0), ``done``/``rec_done`` the events
    and records of the stream stored so far, ``side`` the int64 payloads (float bits, content
    hashes) of the stream's side list from its start, ``bigs`` (index in ``image``, content hash)
    int64 pairs of the wide ints.  Returns (events as int32 bytes, carried marker or None, side
    payloads used, records stored, stored arrays or None when the chunk has no record)."""
    a = np.frombuffer(image, np.int64)             # (little-endian: the flusher's side swaps elsewhere)
    n = a.size
    mk = _markers(a)
    carry = None
    if mk.size and mk[-1] == n - 1:                # its payload is not appended yet
        carry = int(a[-1])
        n -= 1
        a = a[:n]
        mk = mk[:-1]
    isev = np.ones(n, bool)
    isev[mk] = False
    isev[mk + 1] = False
    cf = a[isev]
    if cf.size and (int(cf.min()) < INT32_MIN or int(cf.max()) > INT32_MAX):
        raise SplitError("a probe recorded a value outside int32")
    events = cf.astype("<i4").tobytes()
    k = mk.size
    if k == 0:
        return events, carry, 0, 0, None
    pos = done + mk - 2 * np.arange(k)             # events stored before each record (2 items a record)
    u = -a[mk]
    tag = (u >> _SHIFT) - 1
    slot = u & _SLOT_MASK
    val = a[mk + 1]
    out: list[Stored] = []
    sw = np.flatnonzero(tag == SWITCH_TAG)
    if sw.size:                                    # (record index in the stream, position, number)
        at = rec_done + sw - np.arange(sw.size)
        out.append(_stored("wet.switch", np.stack([at, pos[sw], val[sw]], 1)))
        keep = tag != SWITCH_TAG
        pos, tag, slot, val, mk = pos[keep], tag[keep], slot[keep], val[keep], mk[keep]
        k = mk.size                                # may be 0: the chunk is stored all the same
    tag = tag.astype(np.uint8)
    used = _side(tag, val, np.frombuffer(side, "<i8"))
    if bigs:                                       # ints beyond int64: contents, like str
        pairs = np.frombuffer(bigs, "<i8").reshape(-1, 2)
        j = np.flatnonzero(np.isin(mk + 1, pairs[:, 0]))
        if j.size:
            tag[j] = BIGINT
            val[j] = pairs[np.searchsorted(pairs[:, 0], mk[j] + 1), 1]
    for name, data in pack_chunk(pos.astype(np.int64), slot, tag, val).items():
        out.append(_stored(f"wet.{name}", data))
    return events, carry, used, k, out


def _side(tag: Any, val: Any, side: Any) -> int:
    """Put the side payloads into the records whose values waited in the side list (floats,
    str, bytes, complex), in order; return how many were used."""
    at = np.flatnonzero((tag == FLOAT) | (tag == STR) | (tag == BYTES) | (tag == COMPLEX))
    m = at.size
    if m > side.size:
        raise SplitError("value records without their values")
    if m:
        val[at] = side[:m]
    return m


def objects(image: bytes) -> Stored:
    """The stored object table (``wetlayout.pack_objects``) of (serial, type index) int64 pairs."""
    return _stored("wet.objects", pack_objects(np.frombuffer(image, "<i8").reshape(-1, 2)))


def _markers(a: Any) -> Any:
    """Indices of the record markers in one chunk of an event list (int64).

    Every item at or below ``_MARK_MAX`` is a marker or a payload (a program int may be that
    low); events never are.  A payload follows its marker, so a run of such items starts with
    a marker (the item before the run is an event, or a payload that is not that low) and
    alternates marker, payload."""
    idx = np.flatnonzero(a <= _MARK_MAX)
    if not idx.size:
        return idx
    start = np.ones(idx.size, bool)
    start[1:] = idx[1:] != idx[:-1] + 1
    run0 = np.maximum.accumulate(np.where(start, idx, 0))
    return idx[((idx - run0) & 1) == 0]


def handle(request: tuple[Any, ...]) -> tuple[Any, ...]:
    """One request of the server's protocol: ("split", *args) or ("objects", image); the reply
    is ("ok", *result) (flat: the events' image a buffer of the message) or ("err", message)."""
    return dispatch(split, objects, request)
