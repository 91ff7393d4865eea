"""Kernels: the bit stacks of the value-predictor codecs (records, gamma codes, the unpacked top record)."""

# Split from ``kernels.predict`` (wave 18), whose header describes the bit stacks, their records
# and the codec; ``kernels.predict`` re-exports every public name and keys the numba cache of all
# its parts on all of them (``_jit.cache_depends``).

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import config, types
from numba.extending import intrinsic

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


@intrinsic
def _leading_zeros(typingctx, x):  # type: ignore[no-untyped-def]
    """LLVM ``ctlz`` of a uint64 (64 for 0): branch-free, unlike a binary search."""
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.int64(x), codegen


if config.DISABLE_JIT:
    def bitlen(x):  # type: ignore[no-untyped-def]
        """Number of significant bits of the uint64 ``x`` (0 for 0)."""
        return int(x).bit_length()
else:
    @kernel(nrt=False, inline=True)
    def bitlen(x):  # type: ignore[no-untyped-def]
        """Number of significant bits of the uint64 ``x`` (0 for 0)."""
        return 64 - _leading_zeros(x)


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
def flush_slow(bits, cap, st, o, pay, pw, ib, runmin):  # type: ignore[no-untyped-def]
    """:func:`flush` for records over 64 bits (a run or a miss), field by field. Status."""
    top = st[o + TOP]
    if st[o + KIND] == HIT:
        top = put_gamma(bits, top, cap, U64(st[o + CNT] - runmin + 1))
        if top < 0 or top + ib + 2 > cap:
            return ERR_FULL
        put_bits(bits, top, ib, U64(st[o + IDX]))
        put_bits(bits, top + ib, 2, _ONE)
        top += ib + 2
    else:
        top = put_uint(bits, top, cap, pay[pw])
        if top < 0 or top + 2 > cap:
            return ERR_FULL
        put_bits(bits, top, 2, _ZERO)
        top += 2
    st[o + TOP] = top
    return 0


@kernel(nrt=False)
def unpack_slow(bits, st, o, pay, pw, ib, runmin):  # type: ignore[no-untyped-def]
    """:func:`unpack` for a run or miss record (top bit 0) that does not fit in the 64-bit
    window, field by field. Status."""
    top = st[o + TOP]
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


@kernel(nrt=False, inline=True)
def _window(bits, top):  # type: ignore[no-untyped-def]
    """The (up to) 64 bits below ``top`` with bit ``top - 1`` as the most significant; ``top > 0``."""
    if top >= 64:
        return get_bits(bits, top - 64, 64)
    return get_bits(bits, 0, top) << U64(64 - top)


@kernel(nrt=False, inline=True)
def unpack(bits, st, o, pay, pw, ib, runmin):  # type: ignore[no-untyped-def]
    """Pop the top packed record into the registers (EMPTY if there is none). Status.

    Decodes from one 64-bit window below the top; records that do not fit in it go to
    :func:`unpack_slow` (same result).
    """
    top = st[o + TOP]
    if top == 0:
        st[o + KIND] = EMPTY
        return 0
    x = _window(bits, top)
    avail = top if top < 64 else 64
    mask = (_ONE << U64(ib)) - _ONE
    if x >> U64(63):
        g = ib + 1
        if g > avail:
            return ERR_CORRUPT
        idx = (x >> U64(63 - ib)) & mask
        c = 1
        y = x << U64(g)
        while c < runmin - 1 and (c + 1) * g <= avail and (y >> U64(63)) and ((y >> U64(63 - ib)) & mask) == idx:
            c += 1
            y <<= U64(g)
        st[o + KIND] = HIT
        st[o + IDX] = np.int64(idx)
        st[o + CNT] = c
        st[o + TOP] = top - c * g
        return 0
    if avail < 2:
        return ERR_CORRUPT
    used = 2 + ib if (x >> U64(62)) & _ONE else 2
    if used >= avail:
        return unpack_slow(bits, st, o, pay, pw, ib, runmin)
    y = x << U64(used)
    n = 64 - bitlen(y)
    w = 2 * n + 1
    if y == _ZERO or used + w > avail:
        return unpack_slow(bits, st, o, pay, pw, ib, runmin)
    gx = y >> U64(64 - w)
    used += w
    if used == 2 + ib + w and (x >> U64(62)) & _ONE:
        st[o + KIND] = HIT
        st[o + IDX] = np.int64((x >> U64(62 - ib)) & mask)
        st[o + CNT] = np.int64(gx) + runmin - 1
        st[o + TOP] = top - used
        return 0
    if gx > U64(65):
        return ERR_CORRUPT
    ln = np.int64(gx) - 1
    z = _ZERO
    if ln == 1:
        z = _ONE
    elif ln >= 2:
        if used + ln - 1 > avail:
            return unpack_slow(bits, st, o, pay, pw, ib, runmin)
        z = (_ONE << U64(ln - 1)) | ((x << U64(used)) >> U64(64 - (ln - 1)))
        used += ln - 1
    st[o + KIND] = MISS
    pay[pw] = z
    st[o + TOP] = top - used
    return 0


@kernel(nrt=False, inline=True)
def flush(bits, cap, st, o, pay, pw, ib, runmin):  # type: ignore[no-untyped-def]
    """Pack the unpacked top record into the bits (the caller then replaces it). Status.

    Builds the record in one register and writes it at once; records longer than 64 bits
    go to :func:`flush_slow` (same result).
    """
    kind = st[o + KIND]
    top = st[o + TOP]
    if kind == HIT:
        idx = U64(st[o + IDX])
        c = st[o + CNT]
        if c < runmin:
            g = ib + 1
            one = idx | (_ONE << U64(ib))
            rec = _ZERO
            for j in range(c):
                rec |= one << U64(j * g)
            w = c * g
        else:
            x = U64(c - runmin + 1)
            wg = 2 * bitlen(x) - 1
            w = wg + ib + 2
            if w > 64:
                return flush_slow(bits, cap, st, o, pay, pw, ib, runmin)
            rec = x | (idx << U64(wg)) | (_ONE << U64(wg + ib))
    elif kind == MISS:
        z = pay[pw]
        ln = bitlen(z)
        low = ln - 1 if ln >= 2 else 0
        lg = U64(ln + 1)
        wg = 2 * bitlen(lg) - 1
        w = low + wg + 2
        if w > 64:
            return flush_slow(bits, cap, st, o, pay, pw, ib, runmin)
        rec = lg << U64(low)
        if low > 0:
            rec |= z & ((_ONE << U64(low)) - _ONE)
    else:
        return 0
    if top + w > cap:
        return ERR_FULL
    put_bits(bits, top, w, rec)
    st[o + TOP] = top + w
    return 0


@kernel(nrt=False, inline=True)
def pop(bits, st, o, pay, pw, ib, runmin):  # type: ignore[no-untyped-def]
    """Pop one prediction: (HIT, idx, 0), (MISS, 0, payload), or (error status, 0, 0)."""
    kind = st[o + KIND]
    idx = st[o + IDX]
    z = pay[pw]
    if kind == HIT:
        c = st[o + CNT] - 1
        st[o + CNT] = c
        if c > 0:
            return HIT, idx, _ZERO
        z = _ZERO
    elif kind != MISS:
        return ERR_CORRUPT, 0, _ZERO
    s = unpack(bits, st, o, pay, pw, ib, runmin)  # the record below becomes the top
    if s < 0:
        return s, 0, _ZERO
    return kind, idx if kind == HIT else 0, z


@kernel(nrt=False)
def unpack_call(bits, st, o, pay, pw, ib, runmin):  # type: ignore[no-untyped-def]
    """:func:`unpack` as a called function, for the places that are not hot."""
    return unpack(bits, st, o, pay, pw, ib, runmin)


@kernel(nrt=False, inline=True)
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

