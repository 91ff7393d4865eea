"""Kernels: a stored stream of the value-predictor codecs (two flat arrays) and the cursor walking it."""

# Split from ``kernels.predict`` (wave 18), whose header describes segments and parks;
# ``kernels.predict`` re-exports every public name and keys the numba cache of all its parts on
# all of them (``_jit.cache_depends``).

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel
from wholetrace.kernels.predict_bits import ERR_RANGE, canonical
from wholetrace.kernels.predict_codec import (G_BCAP, G_FCAP, G_LEN, G_MID, G_START, N_PARAMS, N_SEGCOLS, N_STATE,
                                              P_C, P_IB, P_K, P_M, P_NSEG, P_RUN, P_SHIFT, S_I, S_P, S_SEG, _OB,
                                              _OF, _PB, _PF, decode_segment, goto, load_park, run)

# A stored stream is two flat arrays, so that a call from Python passes few arguments (numba
# unboxes each array argument, a fixed cost that dominated the walks of short streams):
#   bi (int64):  the params (N_PARAMS), the word count of the bits, the table entry count,
#                the segment table (nseg x N_SEGCOLS), the table indices
#   bu (uint64): the bits of every park, the table entries, the context values
BI_WORDS = N_PARAMS
BI_ENTRIES = N_PARAMS + 1
BI_SEGS = N_PARAMS + 2


@kernel(inline=True)
def unflatten(bi, bu):  # type: ignore[no-untyped-def]
    """The params, segment table, bits, table indices and entries, and contexts of a stream."""
    nseg = bi[P_NSEG]
    end = BI_SEGS + nseg * N_SEGCOLS
    nw = bi[BI_WORDS]
    ne = bi[BI_ENTRIES]
    return (bi[:N_PARAMS], bi[BI_SEGS:end].reshape((nseg, N_SEGCOLS)), bu[:nw], bi[end:end + ne],
            bu[nw:nw + ne], bu[nw + ne:])


@kernel(nrt=False, inline=True)
def work_size(bi, nw):  # type: ignore[no-untyped-def]
    """Length of a cursor's work array (uint64) for bit stacks of ``nw`` words: F bits, B
    bits, F table, B table, context, payload registers, back to back."""
    return 2 * nw + 2 * (np.int64(1) << (64 - bi[P_SHIFT])) + max(bi[P_C], 1) + 2


@kernel(inline=True)
def work_views(bi, ws):  # type: ignore[no-untyped-def]
    """The F bits, B bits, F table, B table, context and payloads inside a work array."""
    size = np.int64(1) << (64 - bi[P_SHIFT])
    c = max(bi[P_C], 1)
    nw = (ws.shape[0] - 2 * size - c - 2) // 2
    a = 2 * nw
    b = a + 2 * size
    return ws[:nw], ws[nw:a], ws[a:a + size], ws[a + size:b], ws[b:b + c], ws[b + c:b + c + 2]


@kernel
def decode_run(bi, bu, s, keep, lo, hi, out, first, step):  # type: ignore[no-untyped-def]
    """Decode segment ``s`` from its park in one call (the scratch arrays are made here):
    values ``lo <= k < hi`` go to ``out[first + step * (k - lo)]`` (``step`` 1 or -1), and
    the whole segment to ``keep`` when it has room for it (else only what ``lo..hi`` needs
    is decoded).  Status."""
    prm, segs, words, tidx, tval, cxv = unflatten(bi, bu)
    g = segs[s]
    L = g[G_LEN]
    work = np.zeros(work_size(bi, (max(g[G_FCAP], g[G_BCAP]) + 63) // 64 + 1), np.uint64)
    fb, bb, ft, bt, cx, pay = work_views(bi, work)
    st = np.zeros(N_STATE, np.int64)
    r = load_park(prm, s, segs, words, tidx, tval, cxv, fb, bb, ft, bt, cx, st, pay)
    if r < 0:
        return r
    if keep.shape[0] >= L:
        seg = keep
        a, b = np.int64(0), L
    else:
        seg = np.empty(L, np.uint64)
        a, b = lo, hi
    r = decode_segment(prm, L, g[G_MID], a, b, fb, bb, ft, bt, cx, st, pay, seg)
    if r < 0:
        return r
    o = first
    for k in range(lo, hi):
        out[o] = seg[k]
        o += step
    return 0


# ----------------------------------------------------------------------------- cursor


@kernel(nrt=False)
def _last_internal(prm, L):  # type: ignore[no-untyped-def]
    r = L - prm[P_C]
    return r if r > 0 else 0


@kernel(nrt=False)
def _enter(prm, s, local, segs, words, tidx, tval, cxv, fb, bb, ft, bt, cx, st, pay):  # type: ignore[no-untyped-def]
    """Load segment ``s`` and walk to local position ``local`` (0..L). Status."""
    r = load_park(prm, s, segs, words, tidx, tval, cxv, fb, bb, ft, bt, cx, st, pay)
    if r < 0:
        return r
    L = segs[s, G_LEN]
    target = local if local < _last_internal(prm, L) else _last_internal(prm, L)
    r = goto(prm, target, fb, segs[s, G_FCAP], bb, segs[s, G_BCAP], st, pay, ft, bt, cx)
    st[S_P] = local
    return r


@kernel(nrt=False)
def cursor_seek(prm, q, segs, words, tidx, tval, cxv, fb, bb, ft, bt, cx, st, pay):  # type: ignore[no-untyped-def]
    """Move the cursor to global position ``q`` (0..m); ``st[S_SEG] < 0`` means not loaded.

    Within the current segment it walks from where it is if that is nearer than the park.
    """
    m = prm[P_M]
    if q < 0 or q > m:
        return ERR_RANGE
    K = prm[P_K]
    nseg = prm[P_NSEG]
    s = q // K
    if s >= nseg:
        s = nseg - 1
    local = q - segs[s, G_START]
    L = segs[s, G_LEN]
    li = _last_internal(prm, L)
    target = local if local < li else li
    if st[S_SEG] == s:
        here = st[S_I] - target
        park = segs[s, G_MID] - target
        if (here if here >= 0 else -here) <= (park if park >= 0 else -park):
            r = goto(prm, target, fb, segs[s, G_FCAP], bb, segs[s, G_BCAP], st, pay, ft, bt, cx)
            st[S_P] = local
            return r
    return _enter(prm, s, local, segs, words, tidx, tval, cxv, fb, bb, ft, bt, cx, st, pay)


@kernel(nrt=False)
def cursor_walk(prm, forward, count, out, segs, words, tidx, tval, cxv, fb, bb, ft, bt, cx,
                st, pay):  # type: ignore[no-untyped-def]
    """Up to ``count`` moves: forward returns the value at the position then moves right;
    backward moves left then returns the value there.  Values go to ``out[0:k]``; returns
    ``k`` (fewer at either end of the stream) or a negative status.

    Positions ``p < L - c`` of a segment are reached by predictor steps (internal position
    ``i == p``); the last ``c`` positions are read from the context (``i == L - c``).
    """
    nseg = prm[P_NSEG]
    k = np.int64(0)  # not a literal: numba would compile callees once more for Literal[int](0)
    while k < count:
        s = st[S_SEG]
        L = segs[s, G_LEN]
        li = _last_internal(prm, L)
        p = st[S_P]
        i = st[S_I]
        if forward:
            if p >= L:
                return k
            if p < li:
                steps = min(count - k, li - p)
                r = run(prm, forward, steps, out, k, fb, segs[s, G_FCAP], bb, segs[s, G_BCAP], st, pay, ft, bt, cx)
                if r < 0:
                    return r
                k += steps
                p += steps
            else:
                out[k] = cx[p - i]
                k += 1
                p += 1
            st[S_P] = p
            if p == L and s + 1 < nseg:
                r = _enter(prm, s + 1, np.int64(0), segs, words, tidx, tval, cxv, fb, bb, ft, bt, cx, st, pay)
                if r < 0:
                    return r
        else:
            if p == 0:
                if s == 0:
                    return k
                r = _enter(prm, s - 1, segs[s - 1, G_LEN], segs, words, tidx, tval, cxv, fb, bb, ft,
                           bt, cx, st, pay)
                if r < 0:
                    return r
                continue
            if p <= i:
                steps = min(count - k, p)
                r = run(prm, forward, steps, out, k, fb, segs[s, G_FCAP], bb, segs[s, G_BCAP], st, pay, ft, bt,
                        cx)
                if r < 0:
                    return r
                k += steps
                p -= steps
            else:
                p -= 1
                out[k] = cx[p - i]
                k += 1
            st[S_P] = p
    return count


@kernel(nrt=False)
def cursor_state(prm, segs, fb, bb, st, pay, fdst, bdst, heights):  # type: ignore[no-untyped-def]
    """Canonical F and B bits of the cursor into ``fdst``/``bdst``; heights[0:2]. Status."""
    s = st[S_SEG]
    h = canonical(fb, st, _OF, pay, _PF, prm[P_IB], prm[P_RUN], fdst, segs[s, G_FCAP])
    if h < 0:
        return h
    heights[0] = h
    h = canonical(bb, st, _OB, pay, _PB, prm[P_IB], prm[P_RUN], bdst, segs[s, G_BCAP])
    if h < 0:
        return h
    heights[1] = h
    return 0




# ----------------------------------------------------------------------------- calls from Python
# A cursor is the stream's (bi, bu), a work array ``ws`` (work_views) and its state ``st``.


@kernel
def walk(bi, bu, ws, st, forward, count, out):  # type: ignore[no-untyped-def]
    """:func:`cursor_walk` on a flattened stream and work array."""
    prm, segs, words, tidx, tval, cxv = unflatten(bi, bu)
    fb, bb, ft, bt, cx, pay = work_views(bi, ws)
    return cursor_walk(prm, forward, count, out, segs, words, tidx, tval, cxv, fb, bb, ft, bt, cx, st, pay)


@kernel
def seek(bi, bu, ws, st, q):  # type: ignore[no-untyped-def]
    """:func:`cursor_seek` on a flattened stream and work array."""
    prm, segs, words, tidx, tval, cxv = unflatten(bi, bu)
    fb, bb, ft, bt, cx, pay = work_views(bi, ws)
    return cursor_seek(prm, q, segs, words, tidx, tval, cxv, fb, bb, ft, bt, cx, st, pay)
