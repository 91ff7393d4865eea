"""Numba context-mixing coder of a symbol sequence (the compact storage of SEQUITUR grammars).

Each symbol is replaced by its *rank* among the symbols seen after the previous one (in order
of first appearance; rank = list length means a new successor, whose value follows in
binary), and the rank is coded bit by bit (Elias-gamma binarisation) with a binary
arithmetic coder.  The probability of each bit mixes (logistic mixing, as in Mahoney's lpaq1)
adaptive predictions from hashed contexts of orders 0-4 and 6 and from a match model that
follows the last earlier occurrence of the current context.  Everything is integer arithmetic,
so encoder and decoder (one kernel, ``decode`` flag) make bit-identical predictions on every
machine.  Measured choices: docs/design-sequitur.md.  Here: the format's constants, the
coder's driver (:func:`cm_code`) and loop, the grammar's expansion (:func:`expand_into`); the
primitives the loop inlines (context hashes, adaptive probabilities, the successor table, the
arithmetic coder) are in ``kernels/cm_parts.py``.
"""

from __future__ import annotations

import types

import numpy as np

from wholetrace.kernels._jit import kernel, prefetch
from wholetrace.kernels.cm_parts import (ST_CORRUPT, ST_GROW, ST_OK, ST_SHORT, _code_bit, _contexts, _h, _sm_update,
                                         _succ_get, _succ_grow, _succ_prefetch, _succ_put)

_inl = kernel(nrt=False, inline=True)
_hot = kernel(nrt=False)
_U = np.uint64  # every array index is cast to unsigned: numba then adds no negative-index wrap-around

NORD = 6  # hashed context models: orders 0, 1, 2, 3, 4, 6
ALL_MODELS = (1 << NORD) - 1  # bit m of a model mask enables context model m
NIN = NORD + 2  # + match model + bias
MINLEN = 5  # symbols hashed to find a match
MAXLEN = 31
APM_CTX = 1 << 12
LIMIT = 127  # adaptation of a context's probability slows to 1/(LIMIT + 1.5)
P_ORDER3 = 3  # flag mode (versions 5 and 6): the predicted symbol last followed the same order-3 context
P_MODES = (1, 2, 3, 4, 5, 9, 10, 11, 12, 13)  # low 3 bits: the context (orders 1, 2, 3, 4, 6);
#                                             8: the match model's symbol when there is a match
# the coder's resumable state (int64 array): arithmetic coder (low, high, decoder's code word,
# buffer position), next symbol, match pointer and length, successor table use
S_X1, S_X2, S_X, S_BP, S_I, S_MPTR, S_MLEN, S_SUSED = range(8)
# scratch (int64 array): context hashes, mixer inputs, context slots, next symbol's context
# hashes and slots (the encoder's look-ahead), each model's table index (24-31 unused)
O_HS, O_IN, O_SLOT, O_HSN, O_SLOTN, O_CI = 0, 8, 16, 32, 40, 48

_SQ = np.array([1, 2, 3, 6, 10, 16, 27, 45, 73, 120, 194, 310, 488, 747, 1101, 1546, 2047, 2549, 2994,
                3348, 3607, 3785, 3901, 3975, 4022, 4050, 4068, 4079, 4085, 4089, 4092, 4093, 4094],
               np.int64)


def _squash_py(d: int) -> int:
    if d > 2047:
        return 4095
    if d < -2047:
        return 1
    w = d & 127
    i = (d >> 7) + 16
    return int((_SQ[i] * (128 - w) + _SQ[i + 1] * w + 64) >> 7)


def tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(squash over -2047..2047, stretch over 0..4095, adaptation rates): integer tables."""
    sq = np.array([_squash_py(d) for d in range(-2047, 2048)], np.int64)
    st = np.empty(4096, np.int64)
    pi = 0
    for x in range(-2047, 2048):
        v = _squash_py(x)
        st[pi : v + 1] = x
        pi = max(pi, v + 1)
    st[pi:] = 2047
    dt = np.array([(1 << 16) * 2 // (2 * n + 3) for n in range(1024)], np.int64)
    return sq, st, dt


@_hot
def expand_into(off, rhs, out, ks, ends, rid, at, pos, ln):  # type: ignore[no-untyped-def]
    """The whole expansion of S (rule i = rhs[off[i]:off[i+1]], rule r referenced as -r) into
    out, depth first; ks, ends, rid, at: the walk's stack (next symbol, end, rule, where its
    expansion began; one entry per rule suffices: a rule never contains itself); pos, ln: per
    rule where its first expansion lies in out and its length (pos -1 until then: later
    references copy it from there).  -> symbols written (len(out) when the grammar fits out)."""
    ks[0] = off[0]
    ends[0] = off[1]
    rid[0] = 0
    at[0] = 0
    sp = 1
    w = 0
    while sp > 0:
        top = sp - 1
        k = ks[_U(top)]
        if k == ends[_U(top)]:
            r = rid[_U(top)]
            pos[_U(r)] = at[_U(top)]
            ln[_U(r)] = w - at[_U(top)]
            sp -= 1
            continue
        ks[_U(top)] = k + 1
        x = rhs[_U(k)]
        if x >= 0:
            if w >= len(out):
                return len(out) + 1
            out[_U(w)] = x
            w += 1
        elif pos[_U(-x)] >= 0:  # expanded before: copy (the copy lies wholly before w)
            p = pos[_U(-x)]
            m = ln[_U(-x)]
            if w + m > len(out):
                return len(out) + 1
            for j in range(m):
                out[_U(w + j)] = out[_U(p + j)]
            w += m
        else:
            if sp >= len(ks):
                return -1
            ks[_U(sp)] = off[_U(-x)]
            ends[_U(sp)] = off[_U(-x + 1)]
            rid[_U(sp)] = -x
            at[_U(sp)] = w
            sp += 1
    return w


@_inl
def _rank_setup(a, i, decode, skeys, svals, s1, mlen, mptr):  # type: ignore[no-untyped-def]
    """(successor count, rank (encoder), v = rank + 1, its bit length - 1, the match model's
    expected v, its bit length - 1, whether the match model predicts a rank) of symbol i."""
    cnt = _succ_get(skeys, svals, 4 * s1, 0, 0)
    erank = np.int64(-1)
    if mlen > 0:  # expected rank from the match model
        erank = _succ_get(skeys, svals, 4 * s1 + 1, np.int64(a[_U(mptr)]), -1)
    r = np.int64(0)
    if not decode:
        if mlen > 0 and a[_U(mptr)] == a[_U(i)]:
            r = erank  # the same lookup (erank >= 0: a match's symbol followed s1 before)
        else:
            r = _succ_get(skeys, svals, 4 * s1 + 1, np.int64(a[_U(i)]), cnt)
    v = r + 1
    nb = 0
    while (v >> (nb + 1)) > 0:
        nb += 1
    ev = erank + 1
    enb = 0
    if erank >= 0:
        while (ev >> (enb + 1)) > 0:
            enb += 1
    return cnt, r, v, nb, ev, enb, erank >= 0


def cm_code(a: np.ndarray, n: int, rawbits: int, buf: np.ndarray, decode: bool, tbits: int, sq: np.ndarray,
            stt: np.ndarray, dt: np.ndarray, models: int, pmode: int = 0, pshift: int = 2) -> tuple[int, int]:
    """Encode a[:n] into buf (decode=False) or decode buf into a[:n] (decode=True).

    Symbols are non-negative below 2**rawbits; ``models`` is the mask of the context models
    used (a disabled model's mixer input is 0; ALL_MODELS codes as before masks existed);
    the match and prediction tables have 2**(tbits - pshift) entries.
    -> (bytes written or read, status).  The tables are made here; the kernel ``_cm_run``
    allocates nothing (compiled without numba's reference counting, which cost a call per
    array use in its loop) and returns ST_GROW when the successor table must grow."""
    tsize = 1 << tbits
    ctab = np.full(NORD * tsize, 2048 << 20, np.uint32)  # p = 1/2, count 0
    mtab = np.full(64 * 2, 2048 << 20, np.uint32)  # match model: (length, expected bit)
    rawtab = np.full(1 << 16, 2048 << 20, np.uint32)
    init = sq[np.clip((np.arange(33) - 16) * 128 + 2047, 0, 4094)] * 16
    apm = np.tile(init.astype(np.int32), APM_CTX + 256)  # + the flag's (versions 5 and 6)
    w = np.full((16 * 8 + 16) * NIN, 1 << 14, np.int64)  # 128 weight sets + 16 for the flag
    psize = 1 << max(10, min(22, tbits - pshift))  # match and prediction tables (version 6: pshift 3)
    ptab = np.zeros(psize if pmode else 1, np.int64)
    mhash = np.zeros(psize, np.int64)
    skeys = np.full(2 << 12, -1, np.int64)
    svals = np.zeros(1 << 12, np.int64)
    sc = np.zeros(56, np.int64)
    st = np.zeros(8, np.int64)
    st[S_X2] = 0xFFFFFFFF
    if decode:
        for _ in range(4):
            st[S_X] = (st[S_X] << 8) | (int(buf[st[S_BP]]) if st[S_BP] < len(buf) else 0)
            st[S_BP] += 1
    while True:
        run = _cm_run_text if (not decode and (models & ALL_MODELS, pmode) == _TEXT) else _cm_run
        status = run(a, n, rawbits, buf, decode, tbits, sq, stt, dt, models & ALL_MODELS, ctab, mtab, rawtab,
                         apm, w, mhash,
                         skeys, svals, sc, st, pmode, ptab)
        if status != ST_GROW:
            return int(st[S_BP]), int(status)
        skeys, svals = _succ_grow(skeys, svals)


def _cm_loop(a, n, rawbits, buf, decode, tbits, sq, stt, dt, amask, ctab, mtab, rawtab, apm, w, mhash,  # type: ignore[no-untyped-def]
             skeys, svals, sc, st, pmode, ptab):
    """The coder's loop from symbol st[S_I] on (state in ``st``, tables as cm_code made them;
    ``amask``: the enabled context models as bits).  Compiled twice (``_cm_run``, ``_cm_run_text``):
    in the second, the globals _DECODE, _AMASK, _PMODE replace those arguments by constants."""
    if _AMASK >= 0:
        decode = _DECODE
        amask = _AMASK
        pmode = _PMODE
    tsize = np.int64(1) << tbits
    tmask = tsize - 1
    x1 = st[S_X1]  # the arithmetic coder's words, in locals (written back on return)
    x2 = st[S_X2]
    xc = st[S_X]
    bp = st[S_BP]
    mptr = st[S_MPTR]
    mlen = st[S_MLEN]
    sused = st[S_SUSED]
    h5n = np.int64(0)
    ahead = False
    k6 = (amask >> 5) & 1 != 0 or (pmode & 7) == 5  # the order-6 hash is used
    for i in range(st[S_I], n):
        if 2 * (sused + 3) > len(svals):  # a new successor could not be registered: grow first
            st[S_I] = i
            st[S_MPTR] = mptr
            st[S_MLEN] = mlen
            st[S_SUSED] = sused
            st[S_X1] = x1
            st[S_X2] = x2
            st[S_X] = xc
            st[S_BP] = bp
            return ST_GROW
        s1 = np.int64(a[_U(i - 1)]) + 1 if i >= 1 else np.int64(0)
        if ahead:  # computed (and prefetched) while coding the previous symbol
            h5 = h5n
            if pmode != 0:
                sc[_U(O_HS + (pmode & 7))] = sc[_U(O_HSN + (pmode & 7))]
            for m in range(NORD):
                if (amask >> m) & 1:
                    sc[_U(O_SLOT + m)] = sc[_U(O_SLOTN + m)]
        else:
            h5 = _contexts(a, i, sc, O_HS, k6)
            for m in range(NORD):
                if (amask >> m) & 1:
                    sc[_U(O_SLOT + m)] = (_h(sc[_U(O_HS + m)], m) * 16) & tmask
        if not decode and i + 1 < n:  # the encoder knows the next contexts: start loading them
            h5n = _contexts(a, i + 1, sc, O_HSN, k6)
            for m in range(NORD):
                if (amask >> m) & 1:
                    sn = (_h(sc[_U(O_HSN + m)], m) * 16) & tmask
                    sc[_U(O_SLOTN + m)] = sn
                    prefetch(ctab, m * tsize + sn)
            prefetch(mhash, h5n & (len(mhash) - 1))
            if pmode != 0:
                prefetch(ptab, (sc[_U(O_HSN + (pmode & 7))] >> 4) & (len(ptab) - 1))
            s1n = np.int64(a[_U(i)]) + 1
            _succ_prefetch(skeys, svals, 4 * s1n, 0)  # its successor count and rank
            _succ_prefetch(skeys, svals, 4 * s1n + 1, np.int64(a[_U(i + 1)]))
            ahead = True
        # match model: look up the last occurrence of the last MINLEN symbols
        if i >= MINLEN:
            chk = h5 >> 24  # 8 check bits: most unrelated candidates are rejected unread
            hm = h5 & (len(mhash) - 1)
            if mlen == 0:
                cand = mhash[_U(hm)] >> 8
                if cand > 0 and (mhash[_U(hm)] & 255) == chk:
                    ln = 0
                    while ln < MAXLEN and cand - 1 - ln >= 0 and a[_U(cand - 1 - ln)] == a[_U(i - 1 - ln)]:
                        ln += 1
                    if ln >= MINLEN:
                        mlen = ln
                        mptr = cand
            mhash[_U(hm)] = (i << 8) | chk
        # versions 5 and 6: first a flag "the symbol is the predicted one" (the symbol that last followed
        # the predicting context, or the match model's); only when it is not, the rank
        pv = np.int64(-1)
        hp = np.int64(0)
        if pmode != 0:
            hp = (sc[_U(O_HS + (pmode & 7))] >> 4) & (len(ptab) - 1)
            if (pmode & 8) != 0 and mlen > 0:
                pv = np.int64(a[_U(mptr)])
            else:
                pe = ptab[_U(hp)]
                if (pe >> 32) == (s1 & 0x7FFFFFFF):
                    pv = pe & 0xFFFFFFFF
        hit = False
        cnt = np.int64(0)
        r = np.int64(0)
        v = np.int64(1)
        nb = 0
        ev = np.int64(0)
        enb = 0
        agree = False
        phase = 0  # 0: unary part, 1: low bits, 2: the flag
        if pv >= 0:
            phase = 2
            agree = mlen > 0
        else:
            cnt, r, v, nb, ev, enb, agree = _rank_setup(a, i, decode, skeys, svals, s1, mlen, mptr)
        # code v = r + 1 = 1 b_{k-1} .. b_0: k unary ones, a zero, then the k low bits
        dk = 0  # decoded unary length / bit count
        pos = 0
        low = 1
        while True:
            # the decisions of ranks below 15 share one 16-entry (64-byte) line per model
            if phase == 2:
                node = 15
                ebit = (1 if np.int64(a[_U(mptr)]) == pv else 0) if agree else 0
            elif phase == 0:
                node = pos if pos < 4 else 16 + min(pos, 31)
                ebit = (1 if pos < enb else 0) if agree else 0
            else:
                node = ((4 if dk == 1 else (5 if dk == 2 else 8)) + low - 1 if dk <= 3 else
                        64 + 64 * min(dk, 23) + min(low, 63))
                ebit = ((ev >> (dk - 1 - pos)) & 1) if agree else 0
            if node >= 16:  # rare: a second line, elsewhere in the table
                node = 16 + (_h(node, 7) & 0xFFFF) * 16
            ml = min(mlen, 15) if agree else 0
            if phase == 2:
                mi = 64 + ml * 2 + ebit
                ws = (128 + ml) * NIN
                actx = APM_CTX + (s1 & 0xFF)
            else:
                mi = ml * 4 + ebit * 2 + (1 if phase else 0)
                ws = (ml * 8 + (min(pos, 3) if phase == 0 else 4 + min(dk - 1, 3))) * NIN
                actx = ((s1 & 0xFF) * 16 + (pos if phase == 0 else 4 + min(dk - 1, 2) * 4 + min(pos, 3)))  # < APM_CTX
            # predictions, mixed as they are read (only the enabled models and, while it
            # agrees, the match model: the others' inputs are 0 and would add nothing)
            dot = 256 * w[_U(ws + NORD + 1)]
            for m in range(NORD):  # a constant trip count: unrolled, no index array read
                if not (amask >> m) & 1:
                    continue
                ci = m * tsize + ((sc[_U(O_SLOT + m)] + node) & tmask)
                sc[_U(O_CI + m)] = ci
                x = stt[_U(np.int64(ctab[_U(ci)]) >> 20)]
                sc[_U(O_IN + m)] = x
                dot += x * w[_U(ws + m)]
            xm = np.int64(0)
            if agree:
                xm = stt[_U(np.int64(mtab[_U(mi)]) >> 20)]
                dot += xm * w[_U(ws + NORD)]
            dot >>= 16
            if dot > 2047:
                dot = 2047
            if dot < -2047:
                dot = -2047
            p = sq[_U(dot + 2047)]
            sa = dot + 2048
            aj = sa >> 7
            aw = sa & 127
            ai = actx * 33 + aj
            pa = (apm[_U(ai)] * (128 - aw) + apm[_U(ai + 1)] * aw) >> 11
            p = (p + 3 * pa) >> 2
            p = max(1, min(4095, p))
            # code the bit
            if phase == 2:
                y = 1 if (not decode and np.int64(a[_U(i)]) == pv) else 0
            elif phase == 0:
                y = 1 if pos < nb else 0
            else:
                y = (v >> (dk - 1 - pos)) & 1
            x1, x2, xc, bp, y = _code_bit(x1, x2, xc, bp, buf, decode, p, y)
            if y < 0:
                return ST_SHORT
            # update
            aj2 = ai + (1 if aw >= 64 else 0)  # final stage (APM): the nearer bin learns
            apm[_U(aj2)] += ((y << 16) + (y << 5) - y - y - apm[_U(aj2)]) >> 7
            err = (y << 12) - p
            w[_U(ws + NORD + 1)] += (256 * err) >> 12
            for m in range(NORD):
                if not (amask >> m) & 1:
                    continue
                w[_U(ws + m)] += (sc[_U(O_IN + m)] * err) >> 12
                _sm_update(ctab, sc[_U(O_CI + m)], y, dt, LIMIT)
            if agree:
                w[_U(ws + NORD)] += (xm * err) >> 12
                _sm_update(mtab, mi, y, dt, 1023)
                if y != ebit:
                    agree = False
            if phase == 2:
                if y:
                    hit = True
                    break
                # not the predicted symbol: its rank follows (a match that predicted it is wrong)
                cnt, r, v, nb, ev, enb, agree = _rank_setup(a, i, decode, skeys, svals, s1, mlen, mptr)
                if mlen > 0 and np.int64(a[_U(mptr)]) == pv:
                    agree = False
                phase = 0
            elif phase == 0:
                if y:
                    pos += 1
                    if pos > 40:
                        return ST_CORRUPT
                else:
                    dk = pos
                    phase = 1
                    pos = 0
                    if dk == 0:
                        break
            else:
                low = low * 2 + y
                pos += 1
                if pos == dk:
                    break
        if hit:
            if decode:
                a[_U(i)] = pv
        else:
            r = low - 1 if dk > 0 else 0
            if r > cnt:
                return ST_CORRUPT
            if r == cnt:  # a new successor of s1: its value, bit by bit, order-0 tree
                sym = np.int64(a[_U(i)]) if not decode else np.int64(0)
                node = 1
                for b in range(rawbits - 1, -1, -1):
                    ri = node & 0xFFFF
                    p = max(1, min(4095, np.int64(rawtab[_U(ri)]) >> 20))
                    x1, x2, xc, bp, y = _code_bit(x1, x2, xc, bp, buf, decode, p, (sym >> b) & 1)
                    if y < 0:
                        return ST_SHORT
                    _sm_update(rawtab, ri, y, dt, 30)
                    node = node * 2 + y
                if decode:
                    sym = node - (np.int64(1) << rawbits)
                    a[_U(i)] = sym
                # register the new successor: (s1, sym) -> rank, (s1, rank) -> sym, count
                _succ_put(skeys, svals, 4 * s1 + 1, sym, cnt)
                _succ_put(skeys, svals, 4 * s1 + 2, cnt, sym)
                if cnt == 0:
                    sused += 1
                _succ_put(skeys, svals, 4 * s1, 0, cnt + 1)
                sused += 2
            elif decode:
                sym = _succ_get(skeys, svals, 4 * s1 + 2, r, -1)
                if sym < 0:
                    return ST_CORRUPT
                a[_U(i)] = sym
        if pmode != 0:
            ptab[_U(hp)] = ((s1 & 0x7FFFFFFF) << 32) | np.int64(a[_U(i)])
        # match model: extend the match (a new one is looked up before the next symbol)
        if mlen > 0 and a[_U(mptr)] == a[_U(i)]:
            mlen = min(mlen + 1, MAXLEN)
            mptr += 1
        else:
            mlen = 0
    st[S_I] = n
    if not decode:
        for _ in range(4):  # flush x1
            if bp >= len(buf):
                return ST_SHORT
            buf[_U(bp)] = x1 >> 24
            bp += 1
            x1 = (x1 << 8) & 0xFFFFFFFF
    st[S_X1] = x1
    st[S_X2] = x2
    st[S_X] = xc
    st[S_BP] = bp
    return ST_OK

_DECODE, _AMASK, _PMODE = False, -1, 0  # the generic loop: the arguments


def _specialised(decode: bool, amask: int, pmode: int):  # type: ignore[no-untyped-def]
    """_cm_loop compiled with decode, amask and pmode as constants (numba folds global values):
    its model loops unroll to the enabled models only and the other mode's branches vanish."""
    name = f"_cm_run_{int(decode)}_{amask}_{pmode}"  # its own name: its own entry in numba's cache
    f = types.FunctionType(_cm_loop.__code__, {**globals(), "_DECODE": decode, "_AMASK": amask, "_PMODE": pmode},
                           name)
    f.__qualname__ = name
    return _hot(f)


_cm_run = _hot(_cm_loop)
#: the text-like encoder's settings (orders 2-3 + the order-3 flag: the model ladder's choice for
#: textlike), about 10% less coder time there with the same bytes (docs/design-sequitur.md, wave 10)
_TEXT = (0b001100, P_ORDER3)
_cm_run_text = _specialised(False, *_TEXT)
