"""Kernels: LEB128 varints of uint64 arrays (encode, bounds-checked decode), zigzag deltas, and
fixed-width bit packing."""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel

U64 = np.uint64

#: most bytes one uint64 takes
MAX_BYTES = 10
#: decode status: the bytes end inside a varint, or a varint is longer than 64 bits
ERR_TRUNCATED = -1
ERR_OVERLONG = -2
#: decode status: a segment's bytes go on after its last value
ERR_TRAILING = -3


@kernel(nrt=False)
def encode_uvarints(vals, out, pos):  # type: ignore[no-untyped-def]
    """Append LEB128 of every value of ``vals`` to ``out`` from byte ``pos``; returns the end.

    ``out`` must have room for ``MAX_BYTES`` per value.
    """
    for i in range(vals.shape[0]):
        x = vals[i]
        while x >= U64(0x80):
            out[pos] = np.uint8((x & U64(0x7F)) | U64(0x80))
            x >>= U64(7)
            pos += 1
        out[pos] = np.uint8(x)
        pos += 1
    return pos


@kernel(nrt=False)
def decode_uvarints(buf, pos, end, out):  # type: ignore[no-untyped-def]
    """Read ``out.shape[0]`` LEB128 values from ``buf[pos:end]``; returns the position after
    them, or ERR_TRUNCATED / ERR_OVERLONG.  Never reads at or past ``end``."""
    for i in range(out.shape[0]):
        x = U64(0)
        shift = 0
        while True:
            if pos >= end:
                return ERR_TRUNCATED
            b = U64(buf[pos])
            pos += 1
            if shift == 63 and b > U64(1):
                return ERR_OVERLONG
            x |= (b & U64(0x7F)) << U64(shift)
            if b < U64(0x80):
                break
            shift += 7
            if shift > 63:
                return ERR_OVERLONG
        out[i] = x
    return pos


@kernel(nrt=False)
def inflate(buf, pos, end, n, delta, seg, lo, hi, out, first, step):  # type: ignore[no-untyped-def]
    """Decode one segment of ``n`` LEB128 zigzag values (``delta``: zigzag deltas, the first
    from 0) from ``buf[pos:end]`` in one pass: value ``k`` goes to ``seg[k]`` when ``seg``
    holds ``n`` values, and the values ``lo <= k < hi`` also go to ``out[first + step * (k -
    lo)]`` (``step`` 1 or -1: a backward walk fills ``out`` in its own order, so both
    directions cost the same).  Without ``seg`` decoding stops after value ``hi - 1``;
    once value ``n - 1`` is decoded, the bytes must end there.  Returns 0, ERR_TRUNCATED,
    ERR_OVERLONG or ERR_TRAILING; never reads at or past ``end``."""
    # the LEB128 loop of decode_uvarints, written out again on purpose: the same loop as an
    # inlined helper returning (position or status, value) made cursor walks 25 % slower
    keep = seg.shape[0] >= n
    stop = n if keep else hi
    prev = U64(0)
    o = first
    for k in range(stop):
        x = U64(0)
        shift = 0
        while True:
            if pos >= end:
                return ERR_TRUNCATED
            b = U64(buf[pos])
            pos += 1
            if shift == 63 and b > U64(1):
                return ERR_OVERLONG
            x |= (b & U64(0x7F)) << U64(shift)
            if b < U64(0x80):
                break
            shift += 7
            if shift > 63:
                return ERR_OVERLONG
        v = (x >> U64(1)) ^ (U64(0) - (x & U64(1)))
        if delta:
            prev = prev + v
            v = prev
        if keep:
            seg[k] = v
        if k >= lo and k < hi:
            out[o] = v
            o += step
    if stop == n and pos != end:
        return ERR_TRAILING
    return 0


@kernel(nrt=False)
def copy_run(src, lo, hi, out, first, step):  # type: ignore[no-untyped-def]
    """``out[first + step * (k - lo)] = src[k]`` for ``lo <= k < hi`` (``step`` 1 or -1)."""
    if step == 1:
        for k in range(hi - lo):
            out[first + k] = src[lo + k]
    else:
        for k in range(hi - lo):
            out[first - k] = src[lo + k]


@kernel(nrt=False)
def zigzag_deltas(vals, out):  # type: ignore[no-untyped-def]
    """``out[i] = zigzag(vals[i] - vals[i-1])`` (``vals[-1]`` taken as 0), wrapping mod 2**64."""
    prev = U64(0)
    for i in range(vals.shape[0]):
        d = vals[i] - prev
        out[i] = (d << U64(1)) ^ (U64(0) - (d >> U64(63)))
        prev = vals[i]


@kernel(nrt=False)
def undo_zigzag_deltas(z, out):  # type: ignore[no-untyped-def]
    """Inverse of :func:`zigzag_deltas`."""
    prev = U64(0)
    for i in range(z.shape[0]):
        d = (z[i] >> U64(1)) ^ (U64(0) - (z[i] & U64(1)))
        prev = prev + d
        out[i] = prev


@kernel(nrt=False)
def pack_fixed(vals, base, width, out):  # type: ignore[no-untyped-def]
    """Write ``vals[i] - base`` as ``width``-bit fields (0..64, least significant bit first)
    into the zeroed uint64 words ``out``, which must hold ``len(vals) * width`` bits."""
    if width == 0:
        return
    mask = U64(0xFFFFFFFFFFFFFFFF) >> U64(64 - width)
    for i in range(vals.shape[0]):
        v = (vals[i] - base) & mask
        p = i * width
        off = p & 63
        out[p >> 6] |= v << U64(off)
        if off + width > 64:
            out[(p >> 6) + 1] |= v >> U64(64 - off)


@kernel(nrt=False)
def unpack_run(words, base, width, lo, hi, out, first, step):  # type: ignore[no-untyped-def]
    """``out[first + step * (i - lo)] = field(i) + base`` for fields ``lo..hi-1`` (``step`` 1
    or -1); the caller checks that ``words`` holds ``hi * width`` bits."""
    if width == 0:
        for i in range(hi - lo):
            out[first + step * i] = base
        return
    mask = U64(0xFFFFFFFFFFFFFFFF) >> U64(64 - width)
    o = first
    for i in range(lo, hi):
        p = i * width
        off = p & 63
        x = words[p >> 6] >> U64(off)
        if off + width > 64:
            x |= words[(p >> 6) + 1] << U64(64 - off)
        out[o] = (x & mask) + base
        o += step
