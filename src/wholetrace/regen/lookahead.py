"""First pass over a witness stream: which groups of child activations an exception record ends.

A *group* is a run of child activations between two own events of their parent (witnesses,
block ids of a passed-through function, exception records, LEAVE).  When the parent's next
own event after a group is an exception record (``EXC s``, or ``RERAISE s r`` for a re-raise
from ``r``), the children may
have been implicit calls (a property, ``__eq__``, a generator closed while the exception
unwinds a ``for``) made by blocks *before* the call block the parent would otherwise be
placed at; the regenerator (``regen.driver``) must then stop the parent at the raising block,
before it emits the group.  It reads that from this pass.

Groups are keyed by the ordinal of their first ENTER in the stream (0 for the first ENTER),
so the regenerator, which counts ENTERs as it goes, can look them up without positions.
The pass touches only the negative values (structure) of each chunk and their arguments.
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
    stack: list[int] = []           # per open activation: ordinal of its open group's first ENTER, or -1
    enters = 0                      # ENTERs seen so far
    base = 0                        # stream index of the current chunk's first value
    free = 0                        # stream index of the first value that is not an argument of an EXC
    last = 0                        # stream index just after the previous structural event and its arguments
    want_at, want_group = -1, -1    # where the raising statement of the last record lies, and the group it ends
    for chunk in chunks:
        n = len(chunk)
        if want_at >= 0 and want_at < base + n:
            found[want_group] = int(chunk[want_at - base])
            want_at = -1
        for p in np.flatnonzero(chunk < 0).tolist():
            g = base + p
            if g < free:
                continue                                    # an argument of an EXC (statement id -1)
            v = int(chunk[p])
            if g > last and stack:
                stack[-1] = -1                              # own events of the running activation came between
            last = g + 1
            if v <= -ENTER_BASE:
                if stack and stack[-1] < 0:
                    stack[-1] = enters
                stack.append(-1)
                enters += 1
            elif v == LEAVE:
                if stack:
                    stack.pop()
            elif v == EXC or v == RERAISE:
                nargs = 1 if v == EXC else 2
                if stack:
                    if stack[-1] >= 0:
                        if g + nargs < base + n:
                            found[stack[-1]] = int(chunk[p + nargs])
                        else:
                            want_at, want_group = g + nargs, stack[-1]
                    stack[-1] = -1
                free = last = g + 1 + nargs
        base += n
    return found
