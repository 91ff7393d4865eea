"""Kernels: the value predictors (FCM, DFCM, last-n value and stride), their steps, encoding and parks."""

# Split from ``kernels.predict`` (wave 18), whose header describes the predictors and the walk of a
# segment between its two stacks; ``kernels.predict`` re-exports every public name and keys the
# numba cache of all its parts on all of them (``_jit.cache_depends``).

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel
from wholetrace.kernels.predict_bits import CNT, HIT, IDX, KIND, MISS, U64, canonical, pop, push, unpack_call

FCM = 0
DFCM = 1
LASTV = 2
LASTS = 3

RIGHT = 0  # context to the right of the value (stack F)
LEFT = 1   # context to the left of the value (stack B)

#: params array (int64): family, n, c (context values), shift (64 - table bits), index bits,
#: run threshold, segment count, stream length, segment size K
P_FAM, P_N, P_C, P_SHIFT, P_IB, P_RUN, P_NSEG, P_M, P_K = range(9)
N_PARAMS = 9

#: state array (int64) of a cursor: segment, local position p, internal position i, then the
#: four fields of stack F (from OF) and of stack B (from OB); payload registers pay[0] (F), pay[1] (B)
S_SEG, S_P, S_I = 0, 1, 2
OF = 3
OB = 7
N_STATE = 11

#: columns of the segment table (int64, one row per segment)
G_START, G_LEN, G_MID, G_FBITS, G_BBITS, G_FWORD, G_BWORD, G_FTOFF, G_FTCNT, G_BTOFF, G_BTCNT, \
    G_CXOFF, G_FCAP, G_BCAP = range(14)
N_SEGCOLS = 14

#: the same offsets as int64 values: a literal int argument makes numba compile a callee once
#: per distinct literal, so calls pass these
_OF, _OB, _PF, _PB = np.int64(OF), np.int64(OB), np.int64(0), np.int64(1)

_SEED = U64(0x243F6A8885A308D3)
_M1 = U64(0x9E3779B97F4A7C15)
_M2 = U64(0xC2B2AE3D27D4EB4F)


@kernel(nrt=False, inline=True)
def zigzag(d):  # type: ignore[no-untyped-def]
    """Map the two's-complement uint64 ``d`` to a small uint64 when |d| is small."""
    return (d << U64(1)) ^ (U64(0) - (d >> U64(63)))


@kernel(nrt=False, inline=True)
def unzigzag(z):  # type: ignore[no-untyped-def]
    return (z >> U64(1)) ^ (U64(0) - (z & U64(1)))


@kernel(nrt=False, inline=True)
def near(a, base, c, side, d):  # type: ignore[no-untyped-def]
    """The ``d``-th nearest context value: ``a[base:base+c]`` holds the context in stream order."""
    if side == RIGHT:
        return a[base + d]
    return a[base + c - 1 - d]


@kernel(nrt=False, inline=True)
def ctx_key(fam, a, base, c, side, n, shift):  # type: ignore[no-untyped-def]
    """Table index of a context: hash of the n nearest values (FCM) or strides (DFCM)."""
    h = _SEED
    for d in range(n):
        x = near(a, base, c, side, d)
        if fam == DFCM:
            x = x - near(a, base, c, side, d + 1)
        h = (h ^ x) * _M1
        h ^= h >> U64(29)
    return np.int64((h * _M2) >> U64(shift))


@kernel(nrt=False, inline=True)
def compress(fam, tab, a, base, c, side, n, shift, t):  # type: ignore[no-untyped-def]
    """Predict ``t`` from its context; returns the record (HIT, idx, 0) or (MISS, 0, payload)."""
    if fam == FCM or fam == DFCM:
        k = ctx_key(fam, a, base, c, side, n, shift)
        w = tab[k]
        e = t
        if fam == DFCM:
            e = t - near(a, base, c, side, 0)
        if w == e:
            return HIT, 0, U64(0)
        tab[k] = e
        return MISS, 0, zigzag(w - e)
    v0 = near(a, base, c, side, 0)
    if fam == LASTV:
        for d in range(n):
            if near(a, base, c, side, d) == t:
                return HIT, d, U64(0)
        return MISS, 0, zigzag(t - v0)
    e = t - v0
    for d in range(n):
        if near(a, base, c, side, d) - near(a, base, c, side, d + 1) == e:
            return HIT, d, U64(0)
    return MISS, 0, zigzag(e - (v0 - near(a, base, c, side, 1)))


@kernel(nrt=False, inline=True)
def expand(fam, tab, a, base, c, side, n, shift, kind, idx, z):  # type: ignore[no-untyped-def]
    """Inverse of :func:`compress`: the value of a record, restoring the evicted table entry."""
    if fam == FCM or fam == DFCM:
        k = ctx_key(fam, a, base, c, side, n, shift)
        e = tab[k]
        if kind == MISS:
            tab[k] = e + unzigzag(z)
        if fam == FCM:
            return e
        return near(a, base, c, side, 0) + e
    v0 = near(a, base, c, side, 0)
    if fam == LASTV:
        if kind == HIT:
            return near(a, base, c, side, idx)
        return v0 + unzigzag(z)
    if kind == HIT:
        return v0 + (near(a, base, c, side, idx) - near(a, base, c, side, idx + 1))
    return v0 + (v0 - near(a, base, c, side, 1)) + unzigzag(z)


@kernel(nrt=False, inline=True)
def params_of(prm):  # type: ignore[no-untyped-def]
    """family, n, context values, hash shift, index bits, run threshold."""
    return prm[P_FAM], prm[P_N], prm[P_C], prm[P_SHIFT], prm[P_IB], prm[P_RUN]


# ----------------------------------------------------------------------------- steps
#
# A forward step (i -> i+1) pops v[i+c] off B (its left context is cx) and pushes v[i] onto F
# (its right context is then cx); a backward step mirrors it.  Kernels pass the direction as
# a run-time bool, never a literal, so that numba compiles ``run`` once.


@kernel(nrt=False)
def run(prm, forward, count, out, o, fb, fcap, bb, bcap, st, pay, ft, bt, cx):  # type: ignore[no-untyped-def]
    """``count`` steps in one direction; with ``o >= 0`` the value at each position passed
    (forward: left, ``cx[0]`` before the step; backward: reached, ``cx[0]`` after it) goes
    to ``out[o + k]``. Status.

    Forward pops stack P = B (table ``bt``, left context) and pushes Q = F (``ft``, right
    context); backward swaps the roles.  P's and Q's top records and the parameters stay in
    locals (numba cannot keep them in registers through the array stores otherwise); pop
    and push run only when a record starts or ends.
    """
    fam, n, c, sh, ib, runmin = params_of(prm)
    if forward:
        pbits, qbits, qcap, pt, qt = bb, fb, fcap, bt, ft
        po, ppw, pside, qo, qpw, qside = _OB, _PB, LEFT, _OF, _PF, RIGHT
    else:
        pbits, qbits, qcap, pt, qt = fb, bb, bcap, ft, bt
        po, ppw, pside, qo, qpw, qside = _OF, _PF, RIGHT, _OB, _PB, LEFT
    pk, pi, pc = st[po + KIND], st[po + IDX], st[po + CNT]
    qk, qi, qc = st[qo + KIND], st[qo + IDX], st[qo + CNT]
    status = 0
    done = 0
    for k in range(count):
        if forward and o >= 0:
            out[o + k] = cx[0]
        if pk == HIT and pc > 1:  # inside a run of hits: no bit work
            pc -= 1
            kind, idx, z = HIT, pi, U64(0)
        else:
            st[po + KIND], st[po + IDX], st[po + CNT] = pk, pi, pc
            kind, idx, z = pop(pbits, st, po, pay, ppw, ib, runmin)
            pk, pi, pc = st[po + KIND], st[po + IDX], st[po + CNT]
            if kind < 0:
                status = kind
                break
        v = expand(fam, pt, cx, 0, c, pside, n, sh, kind, idx, z)
        if forward:
            t = cx[0]
            for d in range(c - 1):
                cx[d] = cx[d + 1]
            cx[c - 1] = v
        else:
            t = cx[c - 1]
            for d in range(c - 1, 0, -1):
                cx[d] = cx[d - 1]
            cx[0] = v
        kind, idx, z = compress(fam, qt, cx, 0, c, qside, n, sh, t)
        if kind == HIT and qk == HIT and qi == idx:
            qc += 1
        else:
            st[qo + KIND], st[qo + IDX], st[qo + CNT] = qk, qi, qc
            r = push(qbits, qcap, st, qo, pay, qpw, ib, runmin, kind, idx, z)
            qk, qi, qc = st[qo + KIND], st[qo + IDX], st[qo + CNT]
            if r < 0:
                status = r
                break
        if not forward and o >= 0:
            out[o + k] = v
        done += 1
    st[po + KIND], st[po + IDX], st[po + CNT] = pk, pi, pc
    st[qo + KIND], st[qo + IDX], st[qo + CNT] = qk, qi, qc
    st[S_I] += done if forward else -done
    return status


@kernel(nrt=False)
def goto(prm, target, fb, fcap, bb, bcap, st, pay, ft, bt, cx):  # type: ignore[no-untyped-def]
    """Walk the internal position to ``target`` one step at a time. Status."""
    i = st[S_I]
    return run(prm, i < target, abs(target - i), cx, np.int64(-1), fb, fcap, bb, bcap, st, pay, ft, bt, cx)


# ----------------------------------------------------------------------------- encoding


@kernel(nrt=False)
def _snapshot(prm, bits, st, o, pay, pw, tab, snap, snapcap, tsnap):  # type: ignore[no-untyped-def]
    for k in range(tab.shape[0]):
        tsnap[k] = tab[k]
    return canonical(bits, st, o, pay, pw, prm[P_IB], prm[P_RUN], snap, snapcap)


@kernel(nrt=False)
def encode_segment(prm, vals, mid, fb, ft, fsnap, ftsnap, bb, bt, bsnap, btsnap, st, pay,
                   cap, out):  # type: ignore[no-untyped-def]
    """Compress one segment ``vals`` (``len > c``) parked at internal position ``mid``.

    ``ft``/``bt`` must be zero.  Fills ``fsnap``/``bsnap`` with the canonical F and B bits at
    ``mid``, ``ftsnap``/``btsnap`` with the tables there, and ``out`` with: F bits and B bits
    at ``mid``, then F and B heights after compressing the whole segment (the most either
    stack holds, up to one record).  All bit arrays hold ``cap`` bits.  Returns a status.
    """
    fam, n, c, shift, ib, run = params_of(prm)
    L = vals.shape[0]
    last = L - c
    for k in range(8):
        st[OF + k] = 0
    for j in range(last):
        if j == mid:
            h = _snapshot(prm, fb, st, _OF, pay, _PF, ft, fsnap, cap, ftsnap)
            if h < 0:
                return h
            out[0] = h
        kind, idx, z = compress(fam, ft, vals, j + 1, c, RIGHT, n, shift, vals[j])
        s = push(fb, cap, st, _OF, pay, _PF, ib, run, kind, idx, z)
        if s < 0:
            return s
    if mid == last:
        h = _snapshot(prm, fb, st, _OF, pay, _PF, ft, fsnap, cap, ftsnap)
        if h < 0:
            return h
        out[0] = h
    for j in range(L - 1, c - 1, -1):
        if j == mid + c - 1:
            h = _snapshot(prm, bb, st, _OB, pay, _PB, bt, bsnap, cap, btsnap)
            if h < 0:
                return h
            out[1] = h
        kind, idx, z = compress(fam, bt, vals, j - c, c, LEFT, n, shift, vals[j])
        s = push(bb, cap, st, _OB, pay, _PB, ib, run, kind, idx, z)
        if s < 0:
            return s
    if mid == 0:
        h = _snapshot(prm, bb, st, _OB, pay, _PB, bt, bsnap, cap, btsnap)
        if h < 0:
            return h
        out[1] = h
    out[2] = st[OF]
    out[3] = st[OB]
    return 0


# ----------------------------------------------------------------------------- parks


@kernel(nrt=False)
def load_park(prm, s, segs, words, tidx, tval, cxv, fb, bb, ft, bt, cx, st, pay):  # type: ignore[no-untyped-def]
    """Put the cursor arrays in the state stored for segment ``s`` (at its ``mid``). Status."""
    g = segs[s]
    L = g[G_LEN]
    c = prm[P_C]
    ib = prm[P_IB]
    run = prm[P_RUN]
    st[S_SEG] = s
    st[S_I] = g[G_MID]
    st[S_P] = g[G_MID]
    for k in range(ft.shape[0]):
        ft[k] = U64(0)
        bt[k] = U64(0)
    for e in range(g[G_FTCNT]):
        ft[tidx[g[G_FTOFF] + e]] = tval[g[G_FTOFF] + e]
    for e in range(g[G_BTCNT]):
        bt[tidx[g[G_BTOFF] + e]] = tval[g[G_BTOFF] + e]
    cc = c if c < L else L
    for d in range(cc):
        cx[d] = cxv[g[G_CXOFF] + d]
    for d in range(cc, c):
        cx[d] = U64(0)
    for w in range((g[G_FBITS] + 63) >> 6):
        fb[w] = words[g[G_FWORD] + w]
    for w in range((g[G_BBITS] + 63) >> 6):
        bb[w] = words[g[G_BWORD] + w]
    for k in range(8):
        st[OF + k] = 0
    st[OF] = g[G_FBITS]
    st[OB] = g[G_BBITS]
    r = unpack_call(fb, st, _OF, pay, _PF, ib, run)
    if r < 0:
        return r
    return unpack_call(bb, st, _OB, pay, _PB, ib, run)


@kernel(nrt=False)
def decode_segment(prm, L, mid, lo, hi, fb, bb, ft, bt, cx, st, pay, seg):  # type: ignore[no-untyped-def]
    """From a loaded park, fill ``seg[lo:hi]`` (and ``seg`` between them and ``mid``) by
    popping F leftward and B rightward only: one table look-up per value. Status."""
    fam, n, c, shift, ib, run = params_of(prm)
    cc = c if c < L else L
    for d in range(cc):
        seg[mid + d] = cx[d]
    for j in range(mid - 1, lo - 1, -1):
        kind, idx, z = pop(fb, st, _OF, pay, _PF, ib, run)
        if kind < 0:
            return kind
        seg[j] = expand(fam, ft, seg, j + 1, c, RIGHT, n, shift, kind, idx, z)
    for j in range(mid + c, hi):
        kind, idx, z = pop(bb, st, _OB, pay, _PB, ib, run)
        if kind < 0:
            return kind
        seg[j] = expand(fam, bt, seg, j - c, c, LEFT, n, shift, kind, idx, z)
    return 0
