"""Stored layout of one chunk of the WET value log: byte planes, position deltas, value back-references.

A chunk's records are four int64 columns (``pos``, ``slot``, ``tag``, ``val``; ``runtime.values``).
Stored as they are, zstd sees eight-byte words whose high bytes are zero and whose low bytes
change at every record, and finds little.  Layout 2 (meta ``wet_layout = 2``) stores:

* ``wet.pos``: the positions as deltas (the first one absolute), ``wet.slot``: the slot
  ids, both as *byte planes* (``planes``: the n int64 values as an (8, n) uint8 array, byte
  ``j`` of every value in row ``j``), so the always-zero high bytes become runs;
* ``wet.tag`` as before (uint8);
* ``wet.ref``: per record, 0 or the distance back to an earlier record of the chunk with the
  same token (tag and payload), and ``wet.val``: the payloads of the records with ref 0 only,
  both as byte planes.  Objects, small ints and floats recur (a loop reads the value a
  statement wrote a few records earlier): a recurring token costs a periodic distance
  instead of eight bytes.

The object table ``wet.objects`` ((serial, type index) rows, serials increasing) is stored
as the byte planes of the serial deltas over those of the type indices: a (16, n) uint8 array.

Invariant: ``unpack_chunk(*pack_chunk(pos, slot, tag, val)) == (pos, slot, tag, val)``
(tests/wet/test_layout.py checks it against the plain columns on generated chunks).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Meta value ``wet_layout`` of recordings stored this way (absent: plain int64 columns).
LAYOUT = 2
_MIX = np.int64(-7046029254386353131)     # odd 64-bit constants of the bucket hash
_GOLD = np.uint64(0x9E3779B97F4A7C15)


def planes(a: Any) -> np.ndarray:
    """int64 values as an (8, n) uint8 array of byte planes (little-endian byte j in row j)."""
    a = np.ascontiguousarray(a, dtype="<i8")
    return np.ascontiguousarray(a.view(np.uint8).reshape(-1, 8).T)


def unplanes(b: np.ndarray) -> np.ndarray:
    """The inverse of :func:`planes`."""
    b = np.asarray(b, np.uint8).reshape(8, -1)
    return np.ascontiguousarray(b.T).view("<i8").reshape(-1).astype(np.int64)


def buckets(tag: np.ndarray, val: np.ndarray) -> np.ndarray:
    """A 16-bit hash of each token (tag, val): the top bits of a multiplicative hash."""
    with np.errstate(over="ignore"):
        key = (np.asarray(val, np.int64) + np.asarray(tag).astype(np.int64) * _MIX).view(np.uint64)
        return ((key * _GOLD) >> np.uint64(48)).astype(np.uint16)


def back_refs(tag: np.ndarray, val: np.ndarray) -> np.ndarray:
    """Per record: the distance back to the latest earlier record of its hash bucket if that
    record carries the same token, else 0.

    One stable (radix) sort of 16-bit buckets: neighbours in that order are a record and the
    latest earlier record of its bucket.  A recurring token is missed only when another
    token of its bucket came in between (rare at the short distances loops repeat values
    at); a reference never names a different token.
    """
    n = val.size
    ref = np.zeros(n, np.int64)
    if n < 2:
        return ref
    order = np.argsort(buckets(tag, val), kind="stable")
    st, sv = tag[order], val[order]
    same = np.flatnonzero((st[1:] == st[:-1]) & (sv[1:] == sv[:-1]))
    later, earlier = order[same + 1], order[same]
    ref[later] = later - earlier
    return ref


def pack_chunk(pos: np.ndarray, slot: np.ndarray, tag: np.ndarray, val: np.ndarray) -> dict[str, np.ndarray]:
    """The stored arrays of one chunk (``wet.<name>``), layout 2."""
    ref = back_refs(tag, val)
    return {"pos": planes(np.diff(pos, prepend=0)), "slot": planes(slot), "tag": np.asarray(tag, np.uint8),
            "ref": planes(ref), "val": planes(val[ref == 0])}


def unpack_chunk(got: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The int64 columns ``pos, slot, val`` and the uint8 ``tag`` of one stored chunk, layout 2.

    Raises ValueError on arrays that do not fit together (damaged recording)."""
    pos = np.cumsum(unplanes(got["pos"]))
    slot = unplanes(got["slot"])
    tag = np.asarray(got["tag"], np.uint8)
    ref = unplanes(got["ref"])
    lit = unplanes(got["val"])
    n = pos.size
    idx = np.arange(n, dtype=np.int64)
    if not (slot.size == tag.size == ref.size == n) or int((ref == 0).sum()) != lit.size \
            or bool(((ref < 0) | (ref > idx)).any()):
        raise ValueError("value-log chunk arrays do not fit together")
    val = np.zeros(n, np.int64)
    val[ref == 0] = lit
    src = idx - ref                  # each record points at an earlier one, literals at themselves
    while True:                      # pointer doubling: every chain ends at its literal
        nxt = src[src]
        if np.array_equal(nxt, src):
            break
        src = nxt
    return {"pos": pos, "slot": slot, "tag": tag, "val": val[src]}


def pack_objects(rows: np.ndarray) -> np.ndarray:
    """The stored object table, layout 2, of (serial, type index) rows."""
    rows = np.asarray(rows, np.int64).reshape(-1, 2)
    return np.concatenate([planes(np.diff(rows[:, 0], prepend=0)), planes(rows[:, 1])])


def unpack_objects(b: np.ndarray) -> np.ndarray:
    """(serial, type index) rows of a stored object table, layout 2 (ValueError if damaged)."""
    b = np.asarray(b)
    if b.ndim != 2 or b.shape[0] != 16:
        raise ValueError("object table of the wrong shape")
    return np.stack([np.cumsum(unplanes(b[:8])), unplanes(b[8:])], axis=1)
