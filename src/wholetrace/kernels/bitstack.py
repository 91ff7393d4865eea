"""Kernels: bit stacks of variable-length prediction records (hit runs, misses) in uint64 words.

A *bit stack* is a ``uint64`` array read as a string of bits, bit ``p`` at word ``p >> 6``,
bit ``p & 63`` (least significant first), and a height ``top``: the bits ``[0, top)`` are
the records, anything at or above ``top`` is garbage.  Records are pushed and popped at the
top, so every field is written bottom-up and read top-down.  Three records exist:

* ``1`` + idx                  one hit (``idx`` has ``ib`` bits; 0 bits for FCM and DFCM)
* ``01`` + idx + gamma(c-T+1)  a run of ``c >= T`` hits with the same idx
* ``00`` + uint(z)             one miss; ``z`` is the predictor's 64-bit miss payload

read from the top (the first bit named is the highest one).  A maximal run of ``c`` hits
with the same idx is one ``01`` record if ``c >= T`` and ``c`` single records otherwise, so
the bits of a stack depend only on the sequence of predictions it holds (the *canonical*
form).  ``gamma(x)``, ``x >= 1``: ``N`` zeros, then the ``N + 1`` bits of ``x`` (read as one
``2N + 1``-bit field it is ``x`` itself).  ``uint(z)``: ``gamma(L + 1)`` with ``L`` the bit
length of ``z``, then the low ``L - 1`` bits of ``z`` (its leading one is implied).

The top record of a stack is kept *unpacked* in registers (``st[o + KIND/IDX/CNT]``, payload
``pay[pw]``): pushing a hit onto a hit run and popping one off it only changes a counter; a
record is packed (``flush``) when another one is pushed over it and unpacked when the one
above it is popped.  Invariant: a stack with records always has its top record unpacked.

Every read checks ``top`` and every write checks the capacity ``cap`` (bits): on corrupt
bits a kernel returns ``ERR_CORRUPT`` or ``ERR_FULL`` instead of touching memory it must not.
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel

U64 = np.uint64
_ONE = U64(1)
_ZERO = U64(0)

#: status codes (negative) returned by the kernels
ERR_CORRUPT = -1
ERR_FULL = -2
ERR_RANGE = -3

#: kinds of the unpacked top record
EMPTY = 0
HIT = 1
MISS = 2

#: offsets of one stack's fields in the int64 state array (a stack uses 4 slots from ``o``)
TOP = 0
KIND = 1
IDX = 2
CNT = 3

#: largest record in bits (a miss of a 64-bit payload: 2 + 13 + 63), plus slack for runs
MAX_RECORD_BITS = 96
#: largest gamma prefix accepted (run counts below 2**31)
_MAX_GAMMA_N = 31


@kernel(nrt=False, inline=True)
def bitlen(x):  # type: ignore[no-untyped-def]
    """Number of significant bits of the uint64 ``x`` (0 for 0)."""
    n = 0
    if x >> U64(32):
        x >>= U64(32)
        n += 32
    if x >> U64(16):
        x >>= U64(16)
        n += 16
    if x >> U64(8):
        x >>= U64(8)
        n += 8
    if x >> U64(4):
        x >>= U64(4)
        n += 4
    if x >> U64(2):
        x >>= U64(2)
        n += 2
    if x >> U64(1):
        x >>= U64(1)
        n += 1
    if x:
        n += 1
    return n


@kernel(nrt=False, inline=True)
def get_bits(bits, start, w):  # type: ignore[no-untyped-def]
    """The ``w`` bits (0..64) at ``[start, start + w)`` as a uint64; the caller checks bounds."""
    if w == 0:
        return _ZERO
    word = start >> 6
    off = start & 63
    x = bits[word] >> U64(off)
    if off + w > 64:
        x |= bits[word + 1] << U64(64 - off)
    if w < 64:
        x &= (_ONE << U64(w)) - _ONE
    return x


@kernel(nrt=False, inline=True)
def put_bits(bits, start, w, v):  # type: ignore[no-untyped-def]
    """Write the low ``w`` bits (0..64) of ``v`` at ``[start, start + w)``; bits above are clobbered."""
    if w == 0:
        return
    if w < 64:
        v &= (_ONE << U64(w)) - _ONE
    word = start >> 6
    off = start & 63
    low = (_ONE << U64(off)) - _ONE
    bits[word] = (bits[word] & low) | (v << U64(off))
    if off + w > 64:
        bits[word + 1] = v >> U64(64 - off)


@kernel(nrt=False, inline=True)
def lead_zeros(bits, top):  # type: ignore[no-untyped-def]
    """How many zero bits lie directly below ``top`` (counting at most 64)."""
    w = top if top < 64 else 64
    if w <= 0:
        return 0
    return w - bitlen(get_bits(bits, top - w, w))


@kernel(nrt=False)
def put_gamma(bits, top, cap, x):  # type: ignore[no-untyped-def]
    """Push gamma(x), ``1 <= x < 2**32``; returns the new top or ERR_FULL."""
    w = 2 * bitlen(x) - 1
    if top + w > cap:
        return ERR_FULL
    put_bits(bits, top, w, x)
    return top + w


@kernel(nrt=False)
def get_gamma(bits, top):  # type: ignore[no-untyped-def]
    """Pop gamma(x); returns (new top, x) or (ERR_CORRUPT, 0)."""
    n = lead_zeros(bits, top)
    w = 2 * n + 1
    if n > _MAX_GAMMA_N or w > top:
        return ERR_CORRUPT, _ZERO
    return top - w, get_bits(bits, top - w, w)


@kernel(nrt=False)
def put_uint(bits, top, cap, z):  # type: ignore[no-untyped-def]
    """Push uint(z) for any uint64 ``z``; returns the new top or ERR_FULL."""
    ln = bitlen(z)
    if ln >= 2:
        if top + ln - 1 > cap:
            return ERR_FULL
        put_bits(bits, top, ln - 1, z)
        top += ln - 1
    return put_gamma(bits, top, cap, U64(ln + 1))


@kernel(nrt=False)
def get_uint(bits, top):  # type: ignore[no-untyped-def]
    """Pop uint(z); returns (new top, z) or (ERR_CORRUPT, 0)."""
    top, x = get_gamma(bits, top)
    if top < 0 or x > U64(65):
        return ERR_CORRUPT, _ZERO
    ln = np.int64(x) - 1
    if ln == 0:
        return top, _ZERO
    if ln == 1:
        return top, _ONE
    if ln - 1 > top:
        return ERR_CORRUPT, _ZERO
    low = get_bits(bits, top - (ln - 1), ln - 1)
    return top - (ln - 1), (_ONE << U64(ln - 1)) | low


@kernel(nrt=False)
def flush(bits, cap, st, o, pay, pw, ib, runmin):  # type: ignore[no-untyped-def]
    """Pack the unpacked top record into the bits (the caller then replaces it). Status."""
    kind = st[o + KIND]
    top = st[o + TOP]
    if kind == HIT:
        idx = U64(st[o + IDX])
        c = st[o + CNT]
        if c < runmin:
            if top + c * (ib + 1) > cap:
                return ERR_FULL
            for _ in range(c):
                put_bits(bits, top, ib, idx)
                put_bits(bits, top + ib, 1, _ONE)
                top += ib + 1
        else:
            top = put_gamma(bits, top, cap, U64(c - runmin + 1))
            if top < 0 or top + ib + 2 > cap:
                return ERR_FULL
            put_bits(bits, top, ib, idx)
            put_bits(bits, top + ib, 2, _ONE)
            top += ib + 2
    elif kind == MISS:
        top = put_uint(bits, top, cap, pay[pw])
        if top < 0 or top + 2 > cap:
            return ERR_FULL
        put_bits(bits, top, 2, _ZERO)
        top += 2
    st[o + TOP] = top
    return 0


@kernel(nrt=False)
def unpack(bits, st, o, pay, pw, ib, runmin):  # type: ignore[no-untyped-def]
    """Pop the top packed record into the registers (EMPTY if there is none). Status."""
    top = st[o + TOP]
    if top == 0:
        st[o + KIND] = EMPTY
        return 0
    if get_bits(bits, top - 1, 1) == _ONE:
        if top < ib + 1:
            return ERR_CORRUPT
        idx = get_bits(bits, top - 1 - ib, ib)
        top -= ib + 1
        c = 1
        while c < runmin - 1 and top >= ib + 1 and get_bits(bits, top - 1, 1) == _ONE \
                and get_bits(bits, top - 1 - ib, ib) == idx:
            top -= ib + 1
            c += 1
        st[o + KIND] = HIT
        st[o + IDX] = np.int64(idx)
        st[o + CNT] = c
    else:
        if top < 2:
            return ERR_CORRUPT
        if get_bits(bits, top - 2, 1) == _ONE:
            top -= 2
            if top < ib:
                return ERR_CORRUPT
            idx = get_bits(bits, top - ib, ib)
            top, x = get_gamma(bits, top - ib)
            if top < 0:
                return ERR_CORRUPT
            st[o + KIND] = HIT
            st[o + IDX] = np.int64(idx)
            st[o + CNT] = np.int64(x) + runmin - 1
        else:
            top, z = get_uint(bits, top - 2)
            if top < 0:
                return ERR_CORRUPT
            st[o + KIND] = MISS
            pay[pw] = z
    st[o + TOP] = top
    return 0


@kernel(nrt=False)
def pop(bits, st, o, pay, pw, ib, runmin):  # type: ignore[no-untyped-def]
    """Pop one prediction: (HIT, idx, 0), (MISS, 0, payload), or (error status, 0, 0)."""
    kind = st[o + KIND]
    if kind == HIT:
        idx = st[o + IDX]
        c = st[o + CNT] - 1
        st[o + CNT] = c
        if c == 0:
            s = unpack(bits, st, o, pay, pw, ib, runmin)
            if s < 0:
                return s, 0, _ZERO
        return HIT, idx, _ZERO
    if kind == MISS:
        z = pay[pw]
        s = unpack(bits, st, o, pay, pw, ib, runmin)
        if s < 0:
            return s, 0, _ZERO
        return MISS, 0, z
    return ERR_CORRUPT, 0, _ZERO


@kernel(nrt=False)
def push(bits, cap, st, o, pay, pw, ib, runmin, kind, idx, z):  # type: ignore[no-untyped-def]
    """Push one prediction (HIT with idx, or MISS with payload z). Status."""
    cur = st[o + KIND]
    if kind == HIT and cur == HIT and st[o + IDX] == idx:
        st[o + CNT] += 1
        return 0
    if cur != EMPTY:
        s = flush(bits, cap, st, o, pay, pw, ib, runmin)
        if s < 0:
            return s
    st[o + KIND] = kind
    st[o + IDX] = idx
    st[o + CNT] = 1
    pay[pw] = z
    return 0


@kernel(nrt=False)
def canonical(bits, st, o, pay, pw, ib, runmin, dst, dcap):  # type: ignore[no-untyped-def]
    """Copy the stack into ``dst`` with its top record packed; returns its height or a status.

    ``dst`` must hold ``dcap`` bits plus one spare word; ``st`` and ``pay`` are left unchanged.
    """
    top = st[o + TOP]
    if top > dcap:
        return ERR_FULL
    for w in range((top + 63) >> 6):
        dst[w] = bits[w]
    save_top = st[o + TOP]
    s = flush(dst, dcap, st, o, pay, pw, ib, runmin)
    height = st[o + TOP]
    st[o + TOP] = save_top
    if s < 0:
        return s
    return height
