"""Stream buffers as flushed: the ints the probes appended to a list, as int32 events.

Probes append to a Python ``list`` (``runtime.streams.Stream.buf``): ``list.append`` of a
constant int stores a reference, where ``array('i').append`` parses its argument with
``PyArg_Parse`` at several times the cost (``benchmarks/fold.py``, docs/design.md
"Per-activation cost").  The recorder converts each chunk once, as it flushes.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from wholetrace.errors import StoreError

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def chunk_events(chunk: Sequence[int]) -> np.ndarray:
    """``chunk`` (ints as the probes appended them) as int32 events; anything else (a value
    no probe records) is a :class:`StoreError`, not a silently wrapped event."""
    try:
        raw = np.fromiter(chunk, np.int64, len(chunk))
    except (TypeError, ValueError, OverflowError) as exc:
        raise StoreError(f"a probe recorded a value that is no event ({exc})") from None
    if raw.size and (int(raw.min()) < INT32_MIN or int(raw.max()) > INT32_MAX):
        raise StoreError("a probe recorded a value outside int32")
    return raw.astype(np.int32)
