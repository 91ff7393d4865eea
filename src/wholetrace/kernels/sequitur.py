"""Numba kernels of the SEQUITUR / SEQUITUR(1) builder: the append loop and its check cascade, the entry points.

The state layout and the digram table are in ``sequitur_table``, the grammar operations (links,
new rules, substitution, rule utility) in ``sequitur_rules``; this module inlines both and keeps
every kernel the Python layer calls (``room``, ``feed``, ``flush``, ``rehash``, ``extract``) and
every constant it reads.  Kernels over the flat grammar (lengths, expansion, storage) are in
``sequitur_flat``.
"""

from __future__ import annotations

import numba
import numpy as np

from wholetrace.kernels._jit import cache_depends, kernel
from wholetrace.kernels._jit import prefetch as _prefetch
from wholetrace.kernels.sequitur_rules import (_alloc_node, _expand, _extend, _insert_after, _is_body, _new_rule, _push,
                                               _push2, _substitute, _take_node)
from wholetrace.kernels.sequitur_table import *  # noqa: F403 - the state layout, read by the Python layer
from wholetrace.kernels.sequitur_table import (_U, _chk, _find, _fpk, _home, _idx_clear, _idx_set, _is_guard, _key,
                                               _occupy, _prefetch_slot, _ref_node)

# The incremental kernels allocate nothing: they are compiled without NRT (see
# kernels/_jit.py).  Entry points that allocate use plain ``kernel``.
_hot = kernel(nrt=False)
_inl = kernel(nrt=False, inline=True)  # small helpers of the hot path

if numba.config.DISABLE_JIT:  # pure-Python twin: numpy warns on the hash's intended wrap-around
    import warnings

    warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning, __name__)


@_inl
def _run_check(nd, rguard, rcount, rkey, tab, stack, meta, a0):  # type: ignore[no-untyped-def]
    """check(a0) and every substitution it cascades into, in the reference's order."""
    sp = _push(stack, meta, 0, F_CHECK, a0, 0)
    deepest = sp   # the stack's deepest point (M_MAX_SP, stored at the end): after each push site
    ret = 0
    lookahead = meta[M_LOOKAHEAD] != 0
    while sp > 0:
        sp -= 3
        kw = stack[_U(sp)]
        kind = kw & 255
        a = stack[_U(sp + 1)]
        a2 = stack[_U(sp + 2)]
        if kind == F_CHECK:
            b = nd[_U(4 * a + NX)]
            ret = 0
            if _is_guard(nd, a) or _is_guard(nd, b):
                continue
            v1 = nd[_U(4 * a + VL)]
            v2 = nd[_U(4 * b + VL)]
            key = _key(v1, v2)
            fp = _fpk(key)
            slot, found = _find(nd, rkey, tab, meta, fp, key, v1, v2)
            if not found:
                _occupy(nd, rguard, rkey, tab, meta, slot, False, fp, key, a, b)
                if nd[_U(4 * b + NX)] == 0 and meta[M_HAS_NEXT] != 0:  # b ends S: the next
                    _prefetch_slot(tab, meta, v2, meta[M_NEXT])  # append checks (b, next input)
                continue
            x = tab[_U(2 * slot + 1)]
            if x < 0:  # tagged: the whole body of rule r, found without reading its nodes
                r = -x - 2
                q = nd[_U(4 * a + PV)]  # the next check is (q, r)
                if _is_guard(nd, q):
                    if nd[_U(4 * q + VL)] == -(r + 1):  # a is that body itself
                        continue
                else:
                    _prefetch_slot(tab, meta, nd[_U(4 * q + VL)], -(r + 1))
                if v1 < 0:  # read by rule utility
                    _prefetch(rcount, -v1 - 1)
                sp = _push2(stack, meta, sp, F_UTILITY_TAG | (slot << 8), r, key, F_SUBST, a, r)
                deepest = max(deepest, sp)
                ret = 1
                continue
            if x == a or nd[_U(4 * x + NX)] == a or b == x:  # overlapping run such as aaa
                continue
            if _is_body(nd, x):  # the digram is a whole rule: use it
                r = -nd[_U(4 * nd[_U(4 * x + PV)] + VL)] - 1
                q = nd[_U(4 * a + PV)]  # the next check is (q, r)
                if not _is_guard(nd, q):
                    _prefetch_slot(tab, meta, nd[_U(4 * q + VL)], -(r + 1))
                sp = _push2(stack, meta, sp, F_UTILITY, r, 0, F_SUBST, a, r)
                deepest = max(deepest, sp)
                ret = 1
                continue
            if lookahead and meta[M_HAS_LA] != 0 and nd[_U(4 * b + NX)] == 0:
                # SEQUITUR(1): b ends S and (b, next input) is a rule: wait for it
                la = meta[M_LA]
                k2 = _key(v2, la)
                s2, f2 = _find(nd, rkey, tab, meta, _fpk(k2), k2, v2, la)
                if f2:
                    x2 = tab[_U(2 * s2 + 1)]
                    if x2 < 0 or _is_body(nd, x2):
                        continue
            if v1 < 0 and rcount[_U(-v1 - 1)] == 2 and _extend(nd, rguard, rcount, rkey, tab, stack, meta, sp, x, a):
                ret = 1  # rule churn: R, used only at x and a, took the place of the rule s -> R c
                continue
            r = _new_rule(nd, rguard, rcount, meta)
            q = nd[_U(4 * x + PV)]  # the next check is (q, r)
            if not _is_guard(nd, q):
                _prefetch_slot(tab, meta, nd[_U(4 * q + VL)], -(r + 1))
            g = rguard[_U(r)]
            n1 = _take_node(nd, rcount, meta[M_BODY], v1)
            _insert_after(nd, rguard, rkey, tab, meta, g, n1)
            n2 = _take_node(nd, rcount, meta[M_BODY + 1], v2)
            _insert_after(nd, rguard, rkey, tab, meta, n1, n2)
            sp = _push2(stack, meta, sp, F_NEW_SECOND, r, a, F_SUBST, x, r)
            deepest = max(deepest, sp)
            ret = 1
        elif kind == F_SUBST:  # the one site of the substitution (inlined once)
            sp = _substitute(nd, rguard, rcount, rkey, tab, stack, meta, sp, a, a2)
            deepest = max(deepest, sp)
        elif kind == F_SUBST_RIGHT:
            if ret == 0:
                sp = _push(stack, meta, sp, F_CHECK, nd[_U(4 * a + NX)], 0)
                deepest = max(deepest, sp)
        elif kind == F_NEW_SECOND:
            q = nd[_U(4 * a2 + PV)]  # the next check is (q, a)
            if not _is_guard(nd, q):
                _prefetch_slot(tab, meta, nd[_U(4 * q + VL)], -(a + 1))
            f = nd[_U(4 * rguard[_U(a)] + NX)]
            v = nd[_U(4 * f + VL)]
            if v < 0 and rcount[_U(-v - 1)] == 2:
                # Rule churn: the new rule's body is (R, c) and R's other use is at a2, which the
                # substitution below removes, so rule utility will inline R into this body and
                # _expand will vacate the body's entry.  In between, no check can meet (R, c):
                # R's one node is the body's and the body's checks are done.  Backward-shift
                # deletion leaves the table as if that entry had never been made, so it is not
                # made; only its check word (rkey) is kept, as _occupy would have written it.
                rkey[_U(a)] = _chk(_key(v, nd[_U(4 * nd[_U(4 * f + NX)] + VL)]))
            else:
                _idx_set(nd, rguard, rkey, tab, meta, f)
            sp = _push2(stack, meta, sp, F_UTILITY, a, 0, F_SUBST, a2, a)
            deepest = max(deepest, sp)
        else:  # F_UTILITY[_TAG]: rule utility for the rule just used, the one site of _expand (inlined)
            f = nd[_U(4 * rguard[_U(a)] + NX)]
            s = kw >> 8  # F_UTILITY_TAG: if the entry found is unchanged, the rule's body is still
            # the digram (a2 packed), so its first symbol is known without reading f
            if kind == F_UTILITY_TAG and tab[_U(2 * s + 1)] == -(a + 2) and tab[_U(2 * s)] == _fpk(a2) and rkey[_U(a)] == _chk(a2):
                v = a2 >> 32
            else:
                v = nd[_U(4 * f + VL)]
            if v < 0 and rcount[_U(-v - 1)] == 1:
                _expand(nd, rguard, rcount, rkey, tab, meta, f)
            ret = 1
    if deepest > meta[M_MAX_SP]:   # (_extend records the reference's deepest point in its steps itself)
        meta[M_MAX_SP] = deepest
    return ret


@_inl
def _append(nd, rguard, rcount, rkey, tab, stack, meta, c):  # type: ignore[no-untyped-def]
    last = nd[_U(PV)]
    if last != 0:
        _prefetch_slot(tab, meta, nd[_U(4 * last + VL)], c)
    y = _alloc_node(nd, rcount, meta, c)
    # _insert_after(last, y) with what is known here: y is new (no links: join(y, guard) only
    # links), last ends S (its digram with the guard is never indexed, but _idx_clear stays:
    # it tests one word), so neither side of join(last, y) can be a run of three (a value is
    # never -1, S's, and y has no predecessor yet)
    nd[_U(4 * y + NX)] = 0
    nd[_U(PV)] = y
    _idx_clear(nd, rguard, tab, meta, last)
    nd[_U(4 * last + NX)] = y
    nd[_U(4 * y + PV)] = last
    meta[M_NSYMS] += 1
    _run_check(nd, rguard, rcount, rkey, tab, stack, meta, last)


@_hot
def room(nd, rguard, tab, meta):  # type: ignore[no-untyped-def]
    """ST_DONE if every structure has room for one more symbol's cascade, else what to grow."""
    if len(nd) // 4 - 1 - max(meta[M_LIVE_NODES], meta[M_FRESH]) < MARGIN_NODES:
        return ST_NEED_NODES
    if len(rguard) - 1 - meta[M_LIVE_RULES] < MARGIN_RULES:
        return ST_NEED_RULES
    if (meta[M_TUSED] + MARGIN_TABLE) * MAX_LOAD_DEN > (len(tab) // 2) * MAX_LOAD_NUM:
        return ST_NEED_TABLE
    return ST_DONE


@_hot
def _feed_loop(nd, rguard, rcount, rkey, tab, stack, meta, chunk, start, final):  # type: ignore[no-untyped-def]
    """Append chunk[start:] to S (then, if ``final``, the symbol held back for look-ahead, with
    no look-ahead); returns (position reached, stop reason).  The one site of ``_append``, so
    ``_run_check`` is inlined once (a call passed its eight arrays as ~46 stack words a symbol)."""
    lookahead = meta[M_LOOKAHEAD] != 0
    n = len(chunk)
    i = start
    while True:
        if i < n:
            why = room(nd, rguard, tab, meta)
            if why != ST_DONE:
                return i, why
            c = np.int64(chunk[i])
            i += 1
            if lookahead:
                if meta[M_HAS_PENDING] == 0:
                    meta[M_PENDING] = c
                    meta[M_HAS_PENDING] = 1
                    continue
                meta[M_HAS_LA] = 1
                meta[M_LA] = c
                meta[M_HAS_NEXT] = 1
                meta[M_NEXT] = c
                sym = meta[M_PENDING]
                meta[M_PENDING] = c
            else:
                if i < n:
                    meta[M_HAS_NEXT] = 1
                    meta[M_NEXT] = chunk[i]
                else:
                    meta[M_HAS_NEXT] = 0
                sym = c
        elif final != 0 and meta[M_HAS_PENDING] != 0:
            meta[M_HAS_LA] = 0
            meta[M_HAS_NEXT] = 0
            meta[M_HAS_PENDING] = 0
            sym = meta[M_PENDING]
        else:
            break
        _append(nd, rguard, rcount, rkey, tab, stack, meta, sym)
        if meta[M_OVERFLOW] != 0:
            return i, ST_DONE
    return n, ST_DONE


@_hot
def feed(nd, rguard, rcount, rkey, tab, stack, meta, chunk, start):  # type: ignore[no-untyped-def]
    """Append chunk[start:] to S; returns (position reached, stop reason)."""
    return _feed_loop(nd, rguard, rcount, rkey, tab, stack, meta, chunk, np.int64(start), np.int64(0))


@_hot
def flush(nd, rguard, rcount, rkey, tab, stack, meta):  # type: ignore[no-untyped-def]
    """Process the symbol held back for look-ahead, with no look-ahead (end of input)."""
    _feed_loop(nd, rguard, rcount, rkey, tab, stack, meta, nd[:0], np.int64(0), np.int64(1))  # one signature: as feed's


@_hot
def rehash(nd, rguard, tab, new_tab, bits):  # type: ignore[no-untyped-def]
    """Move every indexed digram into the empty table new_tab of 2**bits slots."""
    mask = (np.int64(1) << bits) - 1
    used = 0
    for i in range(len(tab) // 2):
        n = tab[_U(2 * i + 1)]
        if n == T_EMPTY:
            continue
        fp = tab[_U(2 * i)]
        j = _home(fp, bits)
        while new_tab[_U(2 * j + 1)] != T_EMPTY:
            j = (j + 1) & mask
        new_tab[_U(2 * j)] = fp
        new_tab[_U(2 * j + 1)] = n
        nd[_U(4 * _ref_node(nd, rguard, n) + SL)] = j
        used += 1
    return used


@_inl
def _copy_body(nd, rguard, r, rhs, w):  # type: ignore[no-untyped-def]
    """Write rule r's body values at rhs[w:]; returns the end (stops at the end of rhs)."""
    g = rguard[_U(r)]
    n = nd[_U(4 * g + NX)]
    while n != g and w < len(rhs):
        rhs[_U(w)] = nd[_U(4 * n + VL)]
        w += 1
        n = nd[_U(4 * n + NX)]
    return w


@kernel
def extract(nd, rguard, nrules, total):  # type: ignore[no-untyped-def]
    """Flatten the live grammar: rules numbered by first appearance (S = 0) -> (off, rhs, ok).

    One walk over the nodes: a rule's body is copied when the rule is first met, and the
    depth-first walk that numbers the rules runs over the copies (which then lie in the new
    order), so each body's nodes are read once.  total is the number of body symbols."""
    newid = np.full(len(rguard), -1, np.int64)
    off = np.zeros(nrules + 1, np.int64)
    rhs = np.empty(total, np.int64)
    stk = np.empty(2 * (nrules + 1), np.int64)  # (position, end) of the bodies being walked
    newid[0] = 0
    w = _copy_body(nd, rguard, 0, rhs, 0)
    off[1] = w
    nr = 1
    sp = 0
    pos = 0
    end = w
    ok = True
    while True:
        if pos == end:
            if sp == 0:
                break
            sp -= 2
            pos = stk[sp]
            end = stk[sp + 1]
            continue
        v = rhs[pos]
        pos += 1
        if v < 0 and newid[-v - 1] < 0:
            r = -v - 1
            if nr >= nrules:
                ok = False
                break
            newid[r] = nr
            start = w
            w = _copy_body(nd, rguard, r, rhs, w)
            nr += 1
            off[nr] = w
            stk[sp] = pos
            stk[sp + 1] = end
            sp += 2
            pos = start
            end = w
    for k in range(w):
        v = rhs[k]
        if v < 0:
            rhs[k] = -newid[-v - 1]
    return off[: nr + 1], rhs[:w], ok and nr == nrules and w == total


# numba's cache watches only a kernel's own file; these inline each other across three files
cache_depends(("wholetrace.kernels.sequitur_table", "wholetrace.kernels.sequitur_rules", __name__))  # names: a
# module-valued global would be imported by the AOT stand-in (wpp/aot.py _python_parts)
