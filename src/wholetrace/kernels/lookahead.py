"""Numba kernel of the first pass over a witness stream (``trace.lookahead``): one event at a time.

For each exception record (``EXC s``, ``RERAISE s r``) it finds the previous own event of the
record's activation: the last earlier event at the same *level* (the depth of the activation an
event belongs to: an ENTER belongs to the activation it starts, a LEAVE to the one it ends, the
arguments of a record to its activation).  If that event is not the one just before, children
came between, and the group they form is keyed by the number of ENTERs up to that event (the
activation number of its first child).  The group maps to the statement that raised (``s``, or
``r`` for a re-raise).

Invariant: the pairs found are a pure function of the events read so far, whatever the
chunking; all state lives in ``meta`` and the per-level arrays ``last_at`` / ``last_en`` (the
stream index of each level's last event and the ENTERs up to it), so a stream is fed chunk by
chunk.  Growth by status, as in ``kernels.decode``: ST_NEED_OUT (the caller takes the pairs
and resets ``meta[M_NOUT]``), ST_NEED_LEVEL (deeper level arrays); the event at ``pos`` is then
read again.  Malformed input (a LEAVE outside any activation) stays at level 0 and never reads
outside the arrays; the decoder reports it.
"""

from __future__ import annotations

import numpy as np

from wholetrace.events import ENTER_BASE, EXC, LEAVE, RERAISE
from wholetrace.kernels._jit import cache_depends, kernel

M_DEPTH, M_ENTERS, M_INDEX, M_ARGS, M_ARGI, M_WANT, M_KEY, M_NOUT = range(8)
META_SIZE = 8
ST_DONE, ST_NEED_OUT, ST_NEED_LEVEL = 0, 1, 2


@kernel(nrt=False)
def groups(ev, pos, meta, last_at, last_en, keys, vals):  # type: ignore[no-untyped-def]
    """Read ``ev[pos:]``; appends (group, raising statement) pairs to ``keys``/``vals``;
    returns (position reached, status).  ``last_at`` starts filled with -1."""
    n = ev.shape[0]
    cap = keys.shape[0]
    while pos < n:
        v = np.int64(ev[pos])
        i = meta[M_INDEX]
        depth = meta[M_DEPTH]
        if depth + 1 >= last_at.shape[0]:
            return pos, ST_NEED_LEVEL
        if meta[M_ARGS] > 0:                     # an argument of a record: its activation's level
            meta[M_ARGI] += 1
            if meta[M_ARGI] == meta[M_WANT] and meta[M_KEY] >= 0:
                if meta[M_NOUT] >= cap:
                    meta[M_ARGI] -= 1
                    return pos, ST_NEED_OUT
                keys[meta[M_NOUT]] = meta[M_KEY]
                vals[meta[M_NOUT]] = v
                meta[M_NOUT] += 1
            meta[M_ARGS] -= 1
            level = depth
        elif v <= -ENTER_BASE:
            meta[M_ENTERS] += 1
            depth += 1
            meta[M_DEPTH] = depth
            level = depth
        elif v == LEAVE:
            level = depth
            if depth > 0:
                meta[M_DEPTH] = depth - 1
        elif v == EXC or v == RERAISE:
            level = depth
            prev = last_at[level]
            meta[M_KEY] = last_en[level] if level > 0 and prev >= 0 and prev != i - 1 else -1
            meta[M_ARGS] = 1 if v == EXC else 2
            meta[M_WANT] = meta[M_ARGS]
            meta[M_ARGI] = 0
        else:
            level = depth
        last_at[level] = i
        last_en[level] = meta[M_ENTERS]
        meta[M_INDEX] = i + 1
        pos += 1
    return pos, ST_DONE


# numba keys a kernel only on its own file: key these on events.py too, whose codes they inline
cache_depends(("wholetrace.events", __name__))
