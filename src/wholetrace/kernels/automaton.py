"""Kernels: the path-matching stack automaton (scheme 1) over F/B/E symbols, flat or as a grammar.

The automaton follows the path-matching paper's Scheme 1 (section 4.1): one KMP state per
active invocation, 0..m for invocations of the target function, -1 for any other.  Symbols are
the F/B/E terminals of ``wholetrace.match.symbols``: ``E = 0``, ``F(f) = 2f + 1``, ``B(b) = 2b + 2``.

The stack ``stk`` is indexed by *absolute depth*: slot ``depth - dmin + 1`` holds the state
of the level entered at ``depth``, slot 0 is a sentinel -1 (a block with no enclosing ENTER
reads it and is ignored), ``dmin <= 0`` is the lowest depth the stream reaches (E events
before any F pop the virtual -1 levels of a truncated head).  ``st`` carries the scan state
between calls: ``st[S_TOP]`` (slots in use), ``st[S_COUNT]`` (occurrences), ``st[S_NENDS]``
(end positions written to ``ends``; counting continues past its capacity), ``st[S_STATUS]``.
Kernels never index outside their arrays: a stack that would under- or overflow sets
``ST_BAD`` and stops.
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel

S_TOP = 0
S_COUNT = 1
S_NENDS = 2
S_STATUS = 3
S_POS = 4       # fused grammar scan: expansion position reached
STATE_SIZE = 5

ST_OK = 0
ST_FOUND = 1    # stop_first was set and an occurrence was found
ST_BAD = 2      # the stack left its bounds: the depth statistics do not describe the symbols


@kernel(nrt=False, inline=True)
def _block(s, pos, stk, top, delta, col, m, st, ends, stop_first):  # type: ignore[no-untyped-def]
    """One B symbol at absolute position ``pos``; returns True if the scan must stop."""
    q = stk[top - 1]
    if q < 0:
        return False
    b = (s >> 1) - 1
    c = col[b] if b < col.shape[0] else delta.shape[1] - 1
    q = delta[q, c]
    stk[top - 1] = q
    if q == m:
        n = st[S_NENDS]
        if n < ends.shape[0]:
            ends[n] = pos
            st[S_NENDS] = n + 1
        st[S_COUNT] += 1
        if stop_first:
            st[S_STATUS] = ST_FOUND
            return True
    return False


@kernel(nrt=False)
def scan(sym, pos0, stk, st, delta, col, target, m, ends, stop_first):  # type: ignore[no-untyped-def]
    """Run the automaton over ``sym`` (positions ``pos0 ..``); returns the status."""
    top = st[S_TOP]
    cap = stk.shape[0]
    enter = 2 * target + 1
    for i in range(sym.shape[0]):
        s = sym[i]
        if s == 0:
            if top <= 1:
                st[S_STATUS] = ST_BAD
                break
            top -= 1
        elif s & 1:
            if top >= cap:
                st[S_STATUS] = ST_BAD
                break
            stk[top] = 0 if s == enter else -1
            top += 1
        elif _block(s, pos0 + i, stk, top, delta, col, m, st, ends, stop_first):
            break
    st[S_TOP] = top
    return st[S_STATUS]


@kernel(nrt=False, inline=True)
def _symbol(s, pos, stk, top, enter, delta, col, m, st, ends, stop_first):  # type: ignore[no-untyped-def]
    """One symbol; returns the new top, 0 if the stack left its bounds, -1 to stop (found)."""
    if s == 0:
        return top - 1 if top > 1 else 0
    if s & 1:
        if top >= stk.shape[0]:
            return 0
        stk[top] = 0 if s == enter else -1
        return top + 1
    if _block(s, pos, stk, top, delta, col, m, st, ends, stop_first):
        return -1
    return top


@kernel(nrt=False)
def scan_grammar(off, rhs, lo, hi, stk, st, delta, col, target, m, ends, stop_first,
                 frame_rule, frame_k):  # type: ignore[no-untyped-def]
    """Expand items ``lo..hi-1`` of rule 0 (S) depth-first and run the automaton on every
    symbol, without materialising the expansion; ``st[S_POS]`` is the position of item ``lo``
    on entry and of the next unread symbol on return.  ``frame_*`` hold the descent (at least
    the grammar's depth + 1 entries)."""
    top = st[S_TOP]
    enter = 2 * target + 1
    pos = st[S_POS]
    nf = frame_rule.shape[0]
    for item in range(lo, hi):
        x = rhs[item]
        if x >= 0:
            top = _symbol(x, pos, stk, top, enter, delta, col, m, st, ends, stop_first)
            pos += 1
            if top <= 0:
                break
            continue
        frame_rule[0] = -x
        frame_k[0] = off[-x]
        depth = 1
        while depth > 0:
            r = frame_rule[depth - 1]
            k = frame_k[depth - 1]
            end = off[r + 1]
            child = 0
            while k < end:
                y = rhs[k]
                k += 1
                if y < 0:
                    child = -y
                    break
                top = _symbol(y, pos, stk, top, enter, delta, col, m, st, ends, stop_first)
                pos += 1
                if top <= 0:
                    break
            if top <= 0:
                break
            if child == 0:
                depth -= 1
                continue
            frame_k[depth - 1] = k
            if depth >= nf:
                top = 0
                break
            frame_rule[depth] = child
            frame_k[depth] = off[child]
            depth += 1
        if top <= 0:
            break
    if top == 0:
        st[S_STATUS] = ST_BAD
    elif top > 0:
        st[S_TOP] = top
    st[S_POS] = pos
    return st[S_STATUS]
