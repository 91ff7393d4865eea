"""Kernels: bidirectional value-predictor codecs (FCM, DFCM, last-n value, last-n stride).

After X. Zhang and R. Gupta, "Whole Execution Traces and Their Applications", ACM
Transactions on Architecture and Code Optimization 2(3), 2005, section 4 (bidirectional
FCM), with the predictors of Y. Sazeides and J. E. Smith (FCM, 1997), B. Goeman, H.
Vandierendonck and K. De Bosschere (differential FCM, HPCA 2001) and M. Burtscher and
N. B. Jeeradit (last-n value and stride, 2003).  Spec: ``shared/specs/wet.md`` section 3.

A segment of ``L`` values is kept as a window ``cx`` of ``c`` raw values at an internal
position ``i`` (``cx = v[i:i+c]``) between two bit stacks (described below):

* F holds ``v[0:i]`` compressed *forward* (``j = 0, 1, ...``), each value predicted from its
  *right* context ``v[j+1:j+1+c]`` with table ``ft``; it is decoded by popping, backward.
* B holds ``v[i+c:L]`` compressed *backward* (``j = L-1, L-2, ...``), each value predicted from
  its *left* context ``v[j-c:j]`` with table ``bt``; it is decoded by popping, forward.

A forward step pops ``v[i+c]`` from B and pushes ``v[i]`` onto F; a backward step mirrors it.
Both cost the same.  Undo rule (the correction of spec section 3.4; the paper's Figure 9
loses data): compressing a miss overwrites a table entry and the record keeps the *evicted*
entry, so decoding reads the value from the table and puts the evicted entry back.  Hence
the invariant: at internal position ``i`` the state (canonical F bits, ``ft``, B bits,
``bt``, ``cx``) is the forward compression of ``v[0:i]`` from an empty ``ft`` and the
backward compression of ``v[L-1:i+c-1:-1]`` from an empty ``bt``, whatever walk led there.

Predictions (``near(d)`` is the ``d``-th nearest context value on the context side):

* FCM    table[hash(near(0..n-1))] is the value; miss payload zigzag(evicted - value)
* DFCM   table[hash(strides near(d) - near(d+1), d < n)] is the stride ``value - near(0)``
* LASTV  hit idx ``d``: value == near(d), ``d < n``; miss payload zigzag(value - near(0))
* LASTS  hit idx ``d``: value - near(0) == near(d) - near(d+1); miss payload relative to d=0

Context sizes: ``c = n`` (FCM, LASTV) or ``n + 1`` (DFCM, LASTS).  A stream is cut into
segments of at most ``K`` values, each with fresh tables and stored *parked* at its middle
(``mid``), so reaching any position of a segment costs at most about ``K/2`` steps.

Bit stacks.  A *bit stack* is a ``uint64`` array read as a string of bits, bit ``p`` at
word ``p >> 6``, bit ``p & 63`` (least significant first), and a height ``top``: the bits ``[0, top)`` are
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

Everything is in this one module on purpose: numba's cache only notices edits to the file
that defines a kernel, so kernels inlining helpers from another module would go stale.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import config, types
from numba.extending import intrinsic

from wholetrace.kernels._jit import kernel

# ============================================================================= bit stacks

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


# ============================================================================= predictors

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
