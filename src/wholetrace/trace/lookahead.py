"""First pass over a witness stream: which groups of child activations an exception record ends.

A *group* is a run of child activations between two own events of their parent (witnesses,
block ids of a passed-through function, exception records, its ENTER or LEAVE).  When the
parent's next own event after a group is an exception record (``EXC s``, or ``RERAISE s r``
for a re-raise from ``r``), the children may have been implicit calls (a property,
``__eq__``, a generator closed while the exception unwinds a ``for``) made by blocks
*before* the call block the parent would otherwise be placed at; the decoder
(``kernels.decode``, and its twin ``regen.driver``) must then stop the parent at the raising
block, before it emits the group.  It reads that from this pass.

Groups are keyed by the ordinal of their first ENTER in the stream (0 for the first ENTER:
the activation number the decoder gives it), so the decoder, which counts ENTERs as it goes,
can look them up without positions.

The pass is ``kernels.lookahead``, one event at a time with the last event of every level
carried from chunk to chunk (the kernel's docstring says how).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from wholetrace.kernels import lookahead as K
from wholetrace.trace.readonly import read_only


def groups_ended_by_exceptions(chunks: Iterable[np.ndarray], *, capacity: int = 1024,
                               levels: int = 64) -> dict[int, int]:
    """For a witness stream: ordinal of the first ENTER of each group of children whose parent's
    next own event is an exception record -> the statement that raised (``s`` of ``EXC s``,
    ``r`` of ``RERAISE s r``); ``capacity``: pairs taken from the kernel at a time; ``levels``:
    the first size of the per-level arrays (both grow as needed)."""
    found: dict[int, int] = {}
    meta = np.zeros(K.META_SIZE, np.int64)
    last_at = np.full(max(levels, 1), -1, np.int64)
    last_en = np.zeros(len(last_at), np.int64)
    keys = np.zeros(max(capacity, 1), np.int64)
    vals = np.zeros(max(capacity, 1), np.int64)
    for chunk in chunks:
        ev = read_only(np.ascontiguousarray(chunk, dtype=np.int32))   # one kernel signature
        pos = 0
        while True:
            pos, status = K.groups(ev, pos, meta, last_at, last_en, keys, vals)
            if status == K.ST_NEED_LEVEL:
                last_at = np.concatenate([last_at, np.full(len(last_at), -1, np.int64)])
                last_en = np.concatenate([last_en, np.zeros(len(last_en), np.int64)])
                continue
            n = int(meta[K.M_NOUT])
            if n:                                # in stream order: a later pair replaces an earlier one
                found.update(zip(keys[:n].tolist(), vals[:n].tolist()))
                meta[K.M_NOUT] = 0
            if status == K.ST_DONE:
                break
    return found
