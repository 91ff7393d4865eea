"""Stream buffers as flushed: a probe's list of ints to int32 events, folded entry blocks restored.

Probes append to a Python ``list`` (``runtime.streams.Stream.buf``): ``list.append`` of a
constant int stores a reference, where ``array('i').append`` parses its argument through
``PyArg_Parse`` at several times the cost (``benchmarks/fold.py``).  The recorder converts
each chunk once, as it flushes (:func:`chunk_events`).

Folding (docs/design.md, "Per-activation folding"): a function whose entry block has ENTRY as
its only predecessor (``instrument.modes.folded_entry``) records no probe for it: its ENTER
implies it.  The recorder restores the block right after each such ENTER as it flushes, so
stored streams are exactly what they were without folding and no reader changes.  ``table``
maps a fid to its folded entry block, -1 where nothing is folded (generators and coroutines,
whose ENTER also marks a resumption, are never folded).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from wholetrace.events import ENTER_BASE
from wholetrace.errors import StoreError

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def chunk_events(chunk: Sequence[int], table: np.ndarray | None) -> np.ndarray:
    """``chunk`` (ints as probes appended them) as int32 events with the folded entry blocks of
    ``table`` inserted after their ENTER."""
    try:
        raw = np.fromiter(chunk, np.int64, len(chunk))
    except (TypeError, ValueError, OverflowError) as exc:
        raise StoreError(f"a probe recorded a value that is no event ({exc})") from None
    if raw.size and (int(raw.min()) < INT32_MIN or int(raw.max()) > INT32_MAX):
        raise StoreError("a probe recorded a value outside int32")
    if table is None or not table.size:
        return raw.astype(np.int32)
    at = np.flatnonzero(raw <= -ENTER_BASE)
    fids = -raw[at] - ENTER_BASE
    known = fids < table.size
    at, fids = at[known], fids[known]
    entry = table[fids]
    folded = entry >= 0
    if not folded.any():
        return raw.astype(np.int32)
    return np.insert(raw, at[folded] + 1, entry[folded]).astype(np.int32)


def unfolded_length(chunk: Sequence[int], table: np.ndarray | None) -> int:
    """How many events ``chunk`` stores as (its length plus the folded entries it implies)."""
    if table is None or not table.size or not len(chunk):
        return len(chunk)
    raw = np.fromiter(chunk, np.int64, len(chunk))
    fids = -raw[raw <= -ENTER_BASE] - ENTER_BASE
    fids = fids[fids < table.size]
    return len(chunk) + int(np.count_nonzero(table[fids] >= 0))


class FoldTable:
    """The folded entry block of every registered fid (grown as files are registered)."""

    def __init__(self) -> None:
        self._entries: list[int] = []
        self._array: np.ndarray | None = None

    def register(self, fid_base: int, entries: Sequence[Any]) -> None:
        """Functions ``fid_base ..`` fold ``entries`` (-1: nothing folded)."""
        grow = fid_base + len(entries) - len(self._entries)
        if grow > 0:
            self._entries.extend([-1] * grow)
        self._entries[fid_base:fid_base + len(entries)] = [int(e) for e in entries]
        self._array = None

    @property
    def array(self) -> np.ndarray | None:
        """The table as an int64 array, None if no function folds anything."""
        arr = self._array
        if arr is None:
            entries = list(self._entries)
            arr = self._array = np.array(entries, np.int64) if any(e >= 0 for e in entries) \
                else np.zeros(0, np.int64)
        return arr if arr.size else None
