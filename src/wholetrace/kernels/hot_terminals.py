"""Dense terminal codes of a `blocks` event stream: (function, block), ENTER f, LEAVE, EXC (function, statement)."""

from __future__ import annotations

import numpy as np

from wholetrace.events import ENTER_BASE, EXC, LEAVE
from wholetrace.kernels._jit import cache_depends, kernel

ST_OK = 0
ST_BAD_EVENT = 1      # an event code blocks streams never hold
ST_BAD_FUNCTION = 2   # ENTER of a function id outside the registry
ST_BAD_BLOCK = 3      # a block id outside its function's CFG
ST_OUTSIDE = 4        # a block, EXC or LEAVE with no activation open


@kernel
def block_codes(events, bbase, nblocks, xbase, nstmts, enter0, leave_code, exc0):  # type: ignore[no-untyped-def]
    """One code per symbol of ``events``: ``bbase[f] + b`` for block b of the running function
    f, ``enter0 + f`` for ENTER f, ``leave_code`` for LEAVE, and ``exc0 + xbase[f] + s`` for
    EXC s (``s = nstmts[f]`` when the statement is unknown).  Returns (codes, count, status,
    index of the offending event)."""
    n = len(events)
    codes = np.empty(n, np.int64)
    cap = 1024
    stack = np.empty(cap, np.int64)
    sp = 0
    m = 0
    i = 0
    nf = len(nblocks)
    while i < n:
        v = events[i]
        if v >= 0:
            if sp == 0:
                return codes[:m], m, ST_OUTSIDE, i
            f = stack[sp - 1]
            if v >= nblocks[f]:
                return codes[:m], m, ST_BAD_BLOCK, i
            codes[m] = bbase[f] + v
        elif v == LEAVE:
            if sp == 0:
                return codes[:m], m, ST_OUTSIDE, i
            sp -= 1
            codes[m] = leave_code
        elif v == EXC:
            if sp == 0 or i + 1 >= n:
                return codes[:m], m, ST_OUTSIDE, i
            f = stack[sp - 1]
            i += 1
            s = events[i]
            if s < 0 or s >= nstmts[f]:
                s = nstmts[f]
            codes[m] = exc0 + xbase[f] + s
        elif v <= -ENTER_BASE:
            f = -v - ENTER_BASE
            if f >= nf:
                return codes[:m], m, ST_BAD_FUNCTION, i
            if sp == cap:
                cap *= 2
                bigger = np.empty(cap, np.int64)
                bigger[:sp] = stack[:sp]
                stack = bigger
            stack[sp] = f
            sp += 1
            codes[m] = enter0 + f
        else:
            return codes[:m], m, ST_BAD_EVENT, i
        m += 1
        i += 1
    return codes[:m], m, ST_OK, n


# numba keys a kernel only on its own file: key these on events.py too, whose codes they inline
cache_depends(("wholetrace.events", __name__))
