"""Stream buffers as flushed: the ints the probes appended to a list, as int32 events.

Probes append to a Python ``list`` (``runtime.streams.Stream.buf``): ``list.append`` of a
constant int stores a reference, where ``array('i').append`` parses its argument with
``PyArg_Parse`` at several times the cost (``benchmarks/fold.py``, docs/design.md
"Per-activation cost").  The recorder converts each chunk once, as it flushes, with
``struct`` (a converter per item: ~8.5 ns an event) rather than ``array('i', chunk)`` (which
parses a format string per item: ~15 ns an event), since the flusher holds the GIL meanwhile.
"""

from __future__ import annotations

import _struct as struct   # what struct.py re-exports (its module: ~0.4 M instructions at start-up; rstart15)
from wholetrace.store.cmods import ArrayType as array   # cmods' (store/cmods.py): never the program's

from wholetrace.errors import StoreError

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Sequence

_EMPTY = array("i")   # new arrays are slices of it: ``array()`` is an audit event a program's hook would see
assert _EMPTY.itemsize == 4, "int32 events need a 4-byte C int"
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
#: Events packed per ``struct`` call (its argument tuple is built from a slice).
PACK = 8192
_PACK = struct.Struct(f"={PACK}i")
assert _PACK.size == 4 * PACK


def _pack(chunk: Sequence[int], n: int) -> "array[int] | None":
    """The first ``n`` values of ``chunk`` as int32, None if one is no int32 value."""
    full = n - n % PACK
    out = _EMPTY[:]
    try:
        for i in range(0, full, PACK):
            out.frombytes(_PACK.pack(*chunk[i:i + PACK]))
        out.frombytes(struct.pack(f"={n - full}i", *chunk[full:n]))
    except struct.error:
        return None
    return out


def take_events(buf: list[int], n: int) -> "array[int]":
    """The first ``n`` values of a stream buffer as int32 events (``chunk_events``), then
    removed from it; values appended meanwhile (other threads, between two slices) stay."""
    out = _pack(buf, n)
    if out is None:         # refused as chunk_events refuses it, the values taken off all the same
        raw = buf[:n]
        del buf[:n]
        return chunk_events(raw)
    del buf[:n]
    return out


def chunk_events(chunk: Sequence[int]) -> "array[int]":
    """``chunk`` (ints as the probes appended them) as int32 events (an ``array('i')``: the
    recording process never imports numpy, a fifth of a short recording's start-up);
    anything else (a value no probe records, one outside int32) is a :class:`StoreError`,
    not a silently wrapped event."""
    out = _pack(chunk, len(chunk))
    if out is not None:
        return out
    try:        # the same chunk again, for array's error (which names what was wrong)
        return array("i", chunk)
    except OverflowError:
        raise StoreError("a probe recorded a value outside int32") from None
    except (TypeError, ValueError) as exc:
        raise StoreError(f"a probe recorded a value that is no event ({exc})") from None
