"""The context-mixing coder's primitives: context hashes, adaptive probabilities, the successor table and the binary arithmetic coder.

Shared by the loop of ``kernels/sequitur_code.py`` (which inlines them) and, for the arithmetic
coder, by ``kernels/order0_code.py``.  Everything is integer arithmetic, so an encoder and its
decoder make bit-identical predictions on every machine.
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel, prefetch

_inl = kernel(nrt=False, inline=True)
_hot = kernel(nrt=False)
_U = np.uint64  # every array index is cast to unsigned: numba then adds no negative-index wrap-around

ST_OK = 0
ST_CORRUPT = 1
ST_SHORT = 2  # output buffer too small
ST_GROW = 3  # (internal) the successor table must grow before the symbol st[S_I]

@_inl
def _h(x, y):  # type: ignore[no-untyped-def]
    """32-bit hash combining x and y (both below 2**32; no intermediate exceeds 2**63, so the
    pure-Python twin computes the same values)."""
    return ((((x * 0x2F0B4C2D + y + 1) & 0xFFFFFFFF) * 0x5BD1E995) >> 11) & 0xFFFFFFFF


@_inl
def _contexts(a, i, hs, o, k6):  # type: ignore[no-untyped-def]
    """Context hashes of orders 0, 1, 2, 3, 4 and (if k6) 6 before a[i] into hs (each includes
    the previous symbol, so a rank means one symbol); returns the order-5 hash (the match model's)."""
    h = np.int64(0)
    h5 = np.int64(0)
    for k in range(1, 7 if k6 else 6):
        h = _h(h, (np.int64(a[_U(i - k)]) + 1) if i >= k else 0)
        if k <= 4:
            hs[_U(o + k)] = h
        elif k == 6:
            hs[_U(o + 5)] = h
        else:  # k == MINLEN
            h5 = h
    hs[_U(o)] = 0
    return h5


@_inl
def _sm_update(t, i, y, dt, limit):  # type: ignore[no-untyped-def]
    """Adaptive probability t[i] (22-bit p << 10 | count) moves towards bit y."""
    v = np.int64(t[_U(i)])
    n = v & 1023
    p = v >> 10
    p += (((y << 22) - p) * dt[_U(n)]) >> 16
    if n < limit:
        n += 1
    t[_U(i)] = np.uint32((p << 10) | n)


# Successor lists, in one open-addressing table keyed by pairs (k1, k2), k1 = 4 * s1 + tag:
# tag 0: (s1, 0) -> number of successors; tag 1: (s1, symbol) -> rank; tag 2: (s1, rank) -> symbol.


@_inl
def _succ_find(keys, k1, k2):  # type: ignore[no-untyped-def]
    """Slot of (k1, k2) in the table (or the empty slot where it goes)."""
    mask = len(keys) // 2 - 1
    i = _h(_h(k1 >> 32, k1 & 0xFFFFFFFF), k2) & mask
    while keys[_U(2 * i)] != -1 and (keys[_U(2 * i)] != k1 or keys[_U(2 * i + 1)] != k2):
        i = (i + 1) & mask
    return i


@_inl
def _succ_prefetch(keys, vals, k1, k2):  # type: ignore[no-untyped-def]
    """Start loading the home slot of (k1, k2) (key and value)."""
    i = _h(_h(k1 >> 32, k1 & 0xFFFFFFFF), k2) & (len(keys) // 2 - 1)
    prefetch(keys, 2 * i)
    prefetch(vals, i)


@_inl
def _succ_get(keys, vals, k1, k2, default):  # type: ignore[no-untyped-def]
    i = _succ_find(keys, k1, k2)
    return vals[_U(i)] if keys[_U(2 * i)] != -1 else default


@_inl
def _succ_put(keys, vals, k1, k2, v):  # type: ignore[no-untyped-def]
    i = _succ_find(keys, k1, k2)
    keys[_U(2 * i)] = k1
    keys[_U(2 * i + 1)] = k2
    vals[_U(i)] = v


def _succ_grow(keys: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The successor table at twice the size (same contents: lookups give the same answers)."""
    nk = np.full(2 * len(keys), -1, np.int64)
    nv = np.zeros(len(vals) * 2, np.int64)
    _succ_rehash(keys, vals, nk, nv)
    return nk, nv


@_hot
def _succ_rehash(keys, vals, nk, nv):  # type: ignore[no-untyped-def]
    for i in range(len(vals)):
        if keys[_U(2 * i)] != -1:
            _succ_put(nk, nv, keys[_U(2 * i)], keys[_U(2 * i + 1)], vals[_U(i)])


@_inl
def _code_bit(x1, x2, xc, bp, buf, decode, p, y):  # type: ignore[no-untyped-def]
    """Code bit y (encoder) or decode one, with P(1) = p / 4096, on the coder's words (low,
    high, decoder's code word, buffer position) kept in locals by the caller:
    -> (x1, x2, xc, bp, bit); bit -1 if buf is full."""
    xmid = x1 + ((x2 - x1) >> 12) * p + ((((x2 - x1) & 0xFFF) * p) >> 12)
    if decode:
        y = 1 if xc <= xmid else 0
    if y:
        x2 = xmid
    else:
        x1 = xmid + 1
    while ((x1 ^ x2) & 0xFF000000) == 0:
        if decode:
            xc = ((xc << 8) & 0xFFFFFFFF) | (buf[_U(bp)] if bp < len(buf) else 0)
        else:
            if bp >= len(buf):
                return x1, x2, xc, bp, -1
            buf[_U(bp)] = x2 >> 24
        bp += 1
        x1 = (x1 << 8) & 0xFFFFFFFF
        x2 = ((x2 << 8) & 0xFFFFFFFF) | 255
    return x1, x2, xc, bp, y
