"""Kernels: F/B/E symbols from recorded events, the chunk and segment indexes, caller chains.

Symbols: ``E = 0``, ``F(f) = 2f + 1``, ``B(b) = 2b + 2`` (``wholetrace.match.symbols``).
Depths are absolute: 0 at the start of the stream, +1 after F, -1 after E; a stream whose
head was lost can go below 0.  ``fstack[depth - dmin]`` holds the function entered at
``depth`` (-1: unknown, a level opened before the stream starts).
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel

_U = np.uint64  # unsigned indices: numba adds no negative-index wrap-around (docs/design-sequitur.md)


_LEAVE = -1
_EXC = -2
_ENTER_BASE = 8

# state slots of to_symbols
C_PENDING_EXC = 0
C_DEPTH = 1
C_DMIN = 2
C_DMAX = 3
C_BAD = 4       # position (in the input) of the first unknown event code + 1, else 0
C_SEEN = 5      # events consumed so far
C_SIZE = 6

# state slots of index_pass
I_DEPTH = 0
I_SEG = 1       # current segment
I_NSTACK = 2    # fill level of the chunk entry-stack pool
I_BAD = 3
I_DONE = 4      # chunk_pass: symbols of the piece consumed when it stopped
I_SIZE = 5

# chunk_pass stops (before the symbol st[I_DONE] of the piece, nothing of it done) when:
CP_LOW = 2      # the depth would go below the stack's base: lower the base and resume
CP_HIGH = 3     # the function stack is full: grow it and resume
CP_POOL = 4     # the chunk-stack pool is full: grow it and resume


@kernel(nrt=False)
def to_symbols(ev, out, st):  # type: ignore[no-untyped-def]
    """Translate one chunk of recorded int32 events into F/B/E symbols (EXC pairs dropped,
    also across chunk edges); track the depth range.  Returns how many symbols were written
    to ``out`` (at least ``len(ev)`` long)."""
    n = 0
    depth = st[C_DEPTH]
    dmin = st[C_DMIN]
    dmax = st[C_DMAX]
    pending = st[C_PENDING_EXC]
    for i in range(ev.shape[0]):
        v = ev[i]
        if pending:
            pending = 0
            continue
        if v >= 0:
            out[n] = 2 * v + 2
        elif v == _LEAVE:
            out[n] = 0
            depth -= 1
            if depth < dmin:
                dmin = depth
        elif v == _EXC:
            pending = 1
            continue
        elif v <= -_ENTER_BASE:
            out[n] = 2 * (-v - _ENTER_BASE) + 1
            depth += 1
            if depth > dmax:
                dmax = depth
        else:
            if st[C_BAD] == 0:
                st[C_BAD] = st[C_SEEN] + i + 1
            continue
        n += 1
    st[C_DEPTH] = depth
    st[C_DMIN] = dmin
    st[C_DMAX] = dmax
    st[C_PENDING_EXC] = pending
    st[C_SEEN] += ev.shape[0]
    return n


_EID_EXC = -1
_EID_ENTER = -2
_EID_LEAVE = -3


@kernel(nrt=False)
def rows_to_symbols(fid, dst, eid, out, st):  # type: ignore[no-untyped-def]
    """F/B/E symbols of decoded rows (``kernels.decode``'s columns FID, DST, EID): ENTER ->
    F(fid), LEAVE -> E, an edge into a block -> B(dst), an exception edge into a handler ->
    B(handler) (the EXC pair of the `blocks` encoding dropped, as ``to_symbols`` does); state
    as ``to_symbols``, ``C_SEEN`` counting the `blocks` events the rows stand for.  Returns
    how many symbols were written to ``out`` (at least as long as the rows)."""
    n = 0
    depth = st[C_DEPTH]
    dmin = st[C_DMIN]
    dmax = st[C_DMAX]
    seen = st[C_SEEN]
    for i in range(eid.shape[0]):
        e = eid[i]
        d = dst[i]
        if e >= 0:
            if d >= 2:
                out[n] = 2 * d + 2
                n += 1
                seen += 1
        elif e == _EID_ENTER:
            out[n] = 2 * fid[i] + 1
            n += 1
            seen += 1
            depth += 1
            if depth > dmax:
                dmax = depth
        elif e == _EID_LEAVE:
            out[n] = 0
            n += 1
            seen += 1
            depth -= 1
            if depth < dmin:
                dmin = depth
        elif e == _EID_EXC:
            seen += 2
            if d >= 2:
                out[n] = 2 * d + 2
                n += 1
                seen += 1
        elif st[C_BAD] == 0:
            st[C_BAD] = i + 1
    st[C_DEPTH] = depth
    st[C_DMIN] = dmin
    st[C_DMAX] = dmax
    st[C_SEEN] = seen
    return n


@kernel(nrt=False, inline=True)
def _mark(bits, f, unit):  # type: ignore[no-untyped-def]
    if 0 <= f < bits.shape[0]:
        bits[_U(f), _U(unit >> 3)] |= 1 << (unit & 7)


@kernel(nrt=False, inline=True)
def _step(s, depth, fstack, dmin, st):  # type: ignore[no-untyped-def]
    """Depth after symbol ``s`` and the function its unit bit goes to (-1: none); -1 levels
    below ``dmin`` or above the stack set ``st[I_BAD]`` (the depth returned is then dmin - 1)."""
    f = -1
    if s == 0:
        depth -= 1
        if depth < dmin:
            st[I_BAD] = 1
    elif s & 1:
        f = s >> 1
        if depth - dmin >= fstack.shape[0]:
            st[I_BAD] = 1
            return dmin - 1, -1
        fstack[_U(depth - dmin)] = f
        depth += 1
    elif depth > dmin:
        f = fstack[_U(depth - 1 - dmin)]
    return depth, f


@kernel(nrt=False)
def chunk_pass(sym, pos0, fstack, base, st, chunk_events, chunk_min, chunk_exit, chunk_bits,
               stack_off, stack_pool):  # type: ignore[no-untyped-def]
    """One piece of the stream (positions ``pos0 ..``) through the chunk index builder.

    Per chunk (fixed ``chunk_events`` positions): the minimum depth, counting the entry
    (``chunk_min``), the depth at the end (``chunk_exit``), and a bit per function: set iff
    the chunk holds a block whose innermost invocation is that function, or its F symbol.
    At each chunk start the function stack, levels from ``base`` (depths below it were never
    seen so far), is appended to ``stack_pool`` (from ``stack_off[c]``).  The stream's depth
    range need not be known: returns 0 when the piece is done, else CP_LOW / CP_HIGH / CP_POOL
    with ``st[I_DONE]`` symbols consumed (the caller makes room and passes the rest)."""
    depth = st[I_DEPTH]
    c = pos0 // chunk_events  # the chunk of p, followed without a division per symbol
    start = c * chunk_events
    status = 0
    i = 0
    while i < sym.shape[0]:
        s = sym[_U(i)]
        if s == 0 and depth - 1 < base:
            status = CP_LOW
            break
        if s & 1 and depth - base >= fstack.shape[0]:
            status = CP_HIGH
            break
        p = pos0 + i
        if p - start == chunk_events:
            c += 1
            start += chunk_events
        if p == start:
            k = st[I_NSTACK]
            if k + depth - base > stack_pool.shape[0]:
                status = CP_POOL
                break
            chunk_min[_U(c)] = depth
            stack_off[_U(c)] = k
            for j in range(depth - base):
                stack_pool[_U(k + j)] = fstack[_U(j)]
            st[I_NSTACK] = k + depth - base
            stack_off[_U(c + 1)] = k + depth - base
        depth, f = _step(s, depth, fstack, base, st)
        if f >= 0:
            _mark(chunk_bits, f, c)
        if depth < chunk_min[_U(c)]:
            chunk_min[_U(c)] = depth
        chunk_exit[_U(c)] = depth
        i += 1
    st[I_DEPTH] = depth
    st[I_DONE] = i
    return status


@kernel(nrt=False)
def segment_pass(sym, pos0, fstack, dmin, st, seg_pos, seg_min, seg_exit, seg_bits):  # type: ignore[no-untyped-def]
    """One piece of the expansion (positions ``pos0 ..``) through the segment index builder:
    per segment (starting at ``seg_pos``) the same depths and bits as ``chunk_pass``'s.
    Returns 0, or 1 if the stack left its bounds."""
    depth = st[I_DEPTH]
    g = st[I_SEG]
    nseg = seg_pos.shape[0] - 1
    for i in range(sym.shape[0]):
        p = pos0 + i
        while g + 1 < nseg and p >= seg_pos[_U(g + 1)]:
            g += 1
            seg_min[_U(g)] = depth
        depth, f = _step(sym[_U(i)], depth, fstack, dmin, st)
        if st[I_BAD]:
            return 1
        if f >= 0:
            _mark(seg_bits, f, g)
        if depth < seg_min[_U(g)]:
            seg_min[_U(g)] = depth
        seg_exit[_U(g)] = depth
    st[I_DEPTH] = depth
    st[I_SEG] = g
    return 0


@kernel(nrt=False)
def caller_chains(sym, pos0, fstack, depth, dmin, positions, out_off, out_pool):  # type: ignore[no-untyped-def]
    """Scan ``sym`` (positions ``pos0 ..``) from a known function stack (``depth``, levels from
    ``dmin``) and copy the stack as it is at each of the sorted ``positions`` into
    ``out_pool[out_off[j]:out_off[j + 1]]`` (``out_off[0]`` set by the caller).  Returns how
    many positions were served (fewer if one lies outside ``sym`` or the stack broke)."""
    j = 0
    npos = positions.shape[0]
    for i in range(sym.shape[0]):
        if j >= npos:
            break
        s = sym[i]
        if s == 0:
            depth -= 1
            if depth < dmin:
                break
        elif s & 1:
            if depth - dmin >= fstack.shape[0]:
                break
            fstack[depth - dmin] = s >> 1
            depth += 1
        while j < npos and positions[j] == pos0 + i:
            k = out_off[j]
            if k + depth - dmin > out_pool.shape[0]:
                return j
            for t in range(depth - dmin):
                out_pool[k + t] = fstack[t]
            out_off[j + 1] = k + depth - dmin
            j += 1
    return j
