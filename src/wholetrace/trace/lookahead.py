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

The pass is vectorised per chunk.  Every event gets a *level*: the depth of the activation
it belongs to (an ENTER belongs to the activation it starts, a LEAVE to the one it ends,
the arguments of an exception record to its activation).  For an exception record at
level ``D``, the last earlier event at level ``D`` is its activation's previous own event;
if it is not the event just before, children came between, and the first of them starts
right after it.  The last event of every level is carried from chunk to chunk.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from wholetrace.events import ENTER_BASE, EXC, LEAVE, RERAISE


def groups_ended_by_exceptions(chunks: Iterable[np.ndarray]) -> dict[int, int]:
    """For a witness stream: ordinal of the first ENTER of each group of children whose parent's
    next own event is an exception record -> the statement that raised (``s`` of ``EXC s``,
    ``r`` of ``RERAISE s r``)."""
    found: dict[int, int] = {}
    last_at: dict[int, tuple[int, int]] = {}   # level -> (stream index of its last event, ENTERs up to it)
    depth = enters = base = skip = 0            # skip: arguments of a record cut by the chunk's end
    want: list[tuple[int, int]] = []            # (stream index of a raising statement, group) still to read
    for chunk in chunks:
        ev = np.asarray(chunk, dtype=np.int64)
        n = len(ev)
        if want:
            found.update((group, int(ev[at - base])) for at, group in want if at < base + n)
            want = [(at, group) for at, group in want if at >= base + n]
        is_arg = np.zeros(n, bool)
        is_arg[:skip] = True
        codes = np.flatnonzero((ev == EXC) | (ev == RERAISE))
        codes = codes[codes >= skip]
        nargs = np.where(ev[codes] == EXC, 1, 2)
        for k in (1, 2):
            at = codes[nargs >= k] + k
            is_arg[at[at < n]] = True
        ends = codes + nargs + 1 - n
        skip = max(skip - n, int(ends.max()) if len(ends) else 0, 0)
        is_enter = ev <= -ENTER_BASE
        is_leave = (ev == LEAVE) & ~is_arg
        step = is_enter.astype(np.int64) - is_leave
        after = depth + np.cumsum(step)
        level = after - step + is_enter                 # depth before, +1 for an ENTER
        enter_upto = enters + np.cumsum(is_enter)       # ENTERs at or before each index
        order = np.argsort(level, kind="stable")
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n)
        for g, a in zip(codes.tolist(), nargs.tolist()):
            r = rank[g]
            if r > 0 and level[order[r - 1]] == level[g]:
                prev = int(order[r - 1])
                prev_at, prev_enters = base + prev, int(enter_upto[prev])
            else:
                prev_at, prev_enters = last_at.get(int(level[g]), (-1, 0))
            if prev_at < 0 or prev_at == base + g - 1:
                continue                                # no activation, or no children since its last own event
            if g + a < n:
                found[prev_enters] = int(ev[g + a])
            else:
                want.append((base + g + a, prev_enters))
        if n:
            sorted_levels = level[order]
            last = np.flatnonzero(np.append(sorted_levels[1:] != sorted_levels[:-1], True))
            for i in order[last].tolist():
                last_at[int(level[i])] = (base + i, int(enter_upto[i]))
            depth = int(after[-1])
            enters = int(enter_upto[-1])
        base += n
    return found
