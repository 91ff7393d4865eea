"""The SEQUITUR builder's grammar operations: nodes, links, new rules, substitution and rule utility's expansion.

The digram table they keep in step is ``sequitur_table``; the append loop that drives them is
``sequitur`` (which inlines them).
"""

from __future__ import annotations

import numba
import numpy as np

from wholetrace.kernels._jit import kernel
from wholetrace.kernels.sequitur_table import (F_CHECK, F_SUBST_RIGHT, GUARD, M_BODY, M_EXTENDED, M_FREE_HEAD,
                                               M_FRESH, M_HAS_NEXT, M_LIVE_NODES, M_LIVE_RULES, M_MAX_SP, M_NEXT,
                                               M_NODE_PHASE, M_OVERFLOW, M_REUSED, M_RFREE_HEAD, M_RFRESH, NIL, NX,
                                               PV, SL, T_EMPTY, VL, _U, _idx_clear, _idx_set, _is_guard,
                                               _prefetch_slot)

_hot = kernel(nrt=False)
_inl = kernel(nrt=False, inline=True)  # small helpers of the hot path

if numba.config.DISABLE_JIT:  # pure-Python twin: numpy warns on the hash's intended wrap-around
    import warnings

    warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning, __name__)


@_inl
def _join(nd, rguard, rkey, tab, meta, left, right):  # type: ignore[no-untyped-def]
    """Link left -> right, forgetting left's old digram; a run of three equal symbols
    that loses its indexed pair gets its other pair indexed (as the reference does)."""
    if nd[_U(4 * left + NX)] != NIL:
        _idx_clear(nd, rguard, tab, meta, left)
        pr = nd[_U(4 * right + PV)]
        nr = nd[_U(4 * right + NX)]
        v = nd[_U(4 * right + VL)]
        if pr != NIL and nr != NIL and v == nd[_U(4 * pr + VL)] and v == nd[_U(4 * nr + VL)]:
            _idx_set(nd, rguard, rkey, tab, meta, right)
        pl = nd[_U(4 * left + PV)]
        nl = nd[_U(4 * left + NX)]
        v = nd[_U(4 * left + VL)]
        if pl != NIL and nl != NIL and v == nd[_U(4 * nl + VL)] and v == nd[_U(4 * pl + VL)]:
            _idx_set(nd, rguard, rkey, tab, meta, pl)
    nd[_U(4 * left + NX)] = right
    nd[_U(4 * right + PV)] = left


@_inl
def _alloc_node(nd, rcount, meta, v):  # type: ignore[no-untyped-def]
    n = meta[M_FREE_HEAD]
    if n != NIL:
        meta[M_FREE_HEAD] = nd[_U(4 * n + NX)]
    else:
        n = meta[M_FRESH]
        if 4 * (n + 2) > len(nd):  # the last node is scratch, used only on overflow
            meta[M_OVERFLOW] = 1
            n = len(nd) // 4 - 1
        else:
            meta[M_FRESH] = n + 1
    meta[M_LIVE_NODES] += 1
    nd[_U(4 * n + NX)] = NIL
    nd[_U(4 * n + PV)] = NIL
    nd[_U(4 * n + VL)] = v
    nd[_U(4 * n + SL)] = NIL
    if v < 0:
        rcount[_U(-v - 1)] += 1
    return n


@_inl
def _pop_free(nd, meta):  # type: ignore[no-untyped-def]
    """A node off the free list (which holds at least one), emptied."""
    n = meta[M_FREE_HEAD]
    meta[M_FREE_HEAD] = nd[_U(4 * n + NX)]
    nd[_U(4 * n + NX)] = NIL
    nd[_U(4 * n + PV)] = NIL
    nd[_U(4 * n + VL)] = 0
    nd[_U(4 * n + SL)] = NIL
    return n


@_inl
def _alloc_block(nd, meta):  # type: ignore[no-untyped-def]
    """The guard node of a new rule; its two body nodes are meta[M_BODY], meta[M_BODY + 1].

    While the free list is short they are four fresh nodes in one 64-byte line (read together
    when the rule is used; the fourth joins the free list; a node id is a line start when it is
    M_NODE_PHASE mod 4).  Once more than a third of the nodes handed out are free (a grammar
    that makes and inlines rules all the time, such as a WPP's), the three come off the free
    list: fresh lines would grow the array by a line per new rule without bound (richards'
    stream: ~1.4 nodes per input symbol), and the recently freed nodes are in cache."""
    free = meta[M_FRESH] - meta[M_LIVE_NODES]
    if free >= 3 and 3 * free > meta[M_FRESH]:
        meta[M_REUSED] += 1
        meta[M_LIVE_NODES] += 3
        g = _pop_free(nd, meta)
        meta[M_BODY] = _pop_free(nd, meta)
        meta[M_BODY + 1] = _pop_free(nd, meta)
        return g
    base = meta[M_FRESH] + ((meta[M_NODE_PHASE] - meta[M_FRESH]) & 3)
    if 4 * (base + 5) > len(nd):  # the last node is scratch, used only on overflow
        meta[M_OVERFLOW] = 1
        base = len(nd) // 4 - 1
        meta[M_BODY] = base
        meta[M_BODY + 1] = base
        return base
    for n in range(meta[M_FRESH], base + 4):  # ids skipped to align, and the fourth node
        if n < base or n == base + 3:
            nd[_U(4 * n + NX)] = meta[M_FREE_HEAD]
            nd[_U(4 * n + PV)] = NIL
            nd[_U(4 * n + SL)] = NIL
            meta[M_FREE_HEAD] = n
    meta[M_FRESH] = base + 4
    meta[M_LIVE_NODES] += 3
    for n in range(base, base + 3):
        nd[_U(4 * n + NX)] = NIL
        nd[_U(4 * n + PV)] = NIL
        nd[_U(4 * n + VL)] = 0
        nd[_U(4 * n + SL)] = NIL
    meta[M_BODY] = base + 1
    meta[M_BODY + 1] = base + 2
    return base


@_inl
def _take_node(nd, rcount, n, v):  # type: ignore[no-untyped-def]
    """Node n, already counted live by _alloc_block, holding value v."""
    nd[_U(4 * n + VL)] = v
    if v < 0:
        rcount[_U(-v - 1)] += 1
    return n


@_inl
def _free_node(nd, meta, n):  # type: ignore[no-untyped-def]
    nd[_U(4 * n + NX)] = meta[M_FREE_HEAD]
    nd[_U(4 * n + PV)] = NIL
    nd[_U(4 * n + SL)] = NIL
    meta[M_FREE_HEAD] = n
    meta[M_LIVE_NODES] -= 1


@_inl
def _insert_after(nd, rguard, rkey, tab, meta, a, y):  # type: ignore[no-untyped-def]
    _join(nd, rguard, rkey, tab, meta, y, nd[_U(4 * a + NX)])
    _join(nd, rguard, rkey, tab, meta, a, y)


@_hot
def _new_rule(nd, rguard, rcount, meta):  # type: ignore[no-untyped-def]
    r = meta[M_RFREE_HEAD]
    if r >= 0:  # free rules are a list through rguard: -(next + 2)
        meta[M_RFREE_HEAD] = -rguard[_U(r)] - 2
    else:
        r = meta[M_RFRESH]
        if r >= len(rguard) - 1:
            meta[M_OVERFLOW] = 1
            r = len(rguard) - 1
        else:
            meta[M_RFRESH] = r + 1
    meta[M_LIVE_RULES] += 1
    rcount[_U(r)] = 0
    g = _alloc_block(nd, meta)
    nd[_U(4 * g + VL)] = -(r + 1)
    nd[_U(4 * g + SL)] = GUARD
    nd[_U(4 * g + NX)] = g
    nd[_U(4 * g + PV)] = g
    rguard[_U(r)] = g
    return r


@_inl
def _put(stack, sp, kind, a, b):  # type: ignore[no-untyped-def]
    """Write one work item (kind, a, b) at stack[sp:]."""
    stack[_U(sp)] = kind
    stack[_U(sp + 1)] = a
    stack[_U(sp + 2)] = b


@_inl
def _push(stack, meta, sp, kind, a, b):  # type: ignore[no-untyped-def]
    if sp + 3 > len(stack):
        meta[M_OVERFLOW] = 1
        return sp
    _put(stack, sp, kind, a, b)
    return sp + 3


@_inl
def _push2(stack, meta, sp, k1, a1, b1, k2, a2, b2):  # type: ignore[no-untyped-def]
    """Two pushes with one room test (every push but the first of a cascade and F_SUBST_RIGHT's
    comes in a pair): the same stack as two ``_push``, except on overflow, which fails the build.
    Neither records the deepest point: ``sequitur._run_check`` keeps it in a local."""
    if sp + 6 > len(stack):
        meta[M_OVERFLOW] = 1
        return sp
    _put(stack, sp, k1, a1, b1)
    _put(stack, sp + 3, k2, a2, b2)
    return sp + 6


@_inl
def _substitute(nd, rguard, rcount, rkey, tab, stack, meta, sp, x, r):  # type: ignore[no-untyped-def]
    """Replace the digram at x by rule r, then schedule the checks of its neighbours.

    The reference deletes x and its successor w (two ``_join`` + ``_idx_clear`` + free), takes a
    node and inserts it after x's predecessor q (two more ``_join``).  This does the same table
    operations in the same order, with the same links written before each of them, but reads
    each value once (values and links do not change under the table operations, only ``SL``),
    and puts the rule's symbol on w itself: freeing w and taking a node pops w straight back
    off the free list, so the nodes end as the reference's (wave 12)."""
    q = nd[_U(4 * x + PV)]
    w = nd[_U(4 * x + NX)]
    z = nd[_U(4 * w + NX)]  # checked with the new symbol if the left check does nothing
    a = nd[_U(4 * x + VL)]
    b = nd[_U(4 * w + VL)]
    zv = nd[_U(4 * z + VL)]
    qv = nd[_U(4 * q + VL)]
    pl = nd[_U(4 * q + PV)]
    rv = -(r + 1)
    if not _is_guard(nd, z):
        _prefetch_slot(tab, meta, rv, zv)
    elif z == 0 and meta[M_HAS_NEXT] != 0:  # the new symbol ends S: (r, next input) is checked
        _prefetch_slot(tab, meta, rv, meta[M_NEXT])  # next, unless the cascade goes on
    pl_run = pl != NIL and qv == nd[_U(4 * pl + VL)]  # (pl, q) is a pair of equal symbols
    # delete x: join(q, w), then forget x's digram
    _idx_clear(nd, rguard, tab, meta, q)
    if z != NIL and b == a and b == zv:
        _idx_set(nd, rguard, rkey, tab, meta, w)
    if pl_run and qv == a:
        _idx_set(nd, rguard, rkey, tab, meta, pl)
    nd[_U(4 * q + NX)] = w
    nd[_U(4 * w + PV)] = q
    _idx_clear(nd, rguard, tab, meta, x)
    if a < 0:
        rcount[_U(-a - 1)] -= 1
    _free_node(nd, meta, x)
    # delete w: join(q, z), then forget w's digram
    _idx_clear(nd, rguard, tab, meta, q)
    nz = nd[_U(4 * z + NX)]
    if nz != NIL and zv == b and zv == nd[_U(4 * nz + VL)]:
        _idx_set(nd, rguard, rkey, tab, meta, z)
    if pl_run and qv == b:
        _idx_set(nd, rguard, rkey, tab, meta, pl)
    nd[_U(4 * q + NX)] = z
    nd[_U(4 * z + PV)] = q
    _idx_clear(nd, rguard, tab, meta, w)
    if b < 0:
        rcount[_U(-b - 1)] -= 1
    # w, freed and taken again, now holds r (free + alloc would leave exactly this)
    nd[_U(4 * w + NX)] = NIL
    nd[_U(4 * w + PV)] = NIL
    nd[_U(4 * w + VL)] = rv
    nd[_U(4 * w + SL)] = NIL
    rcount[_U(r)] += 1
    # insert w after q: join(w, z) (w is unlinked: links only), then join(q, w)
    nd[_U(4 * w + NX)] = z
    nd[_U(4 * z + PV)] = w
    _idx_clear(nd, rguard, tab, meta, q)
    if pl_run and qv == zv:
        _idx_set(nd, rguard, rkey, tab, meta, pl)
    nd[_U(4 * q + NX)] = w
    nd[_U(4 * w + PV)] = q
    return _push2(stack, meta, sp, F_SUBST_RIGHT, q, 0, F_CHECK, q, 0)


@_inl
def _expand(nd, rguard, rcount, rkey, tab, meta, s):  # type: ignore[no-untyped-def]
    """Inline the rule that s (the first symbol of a rule body) is the last user of,
    replaying the reference's sequence of links so the index ends up identical.

    The reference's four ``_join``s, less the run-of-three tests that cannot fire here (wave
    18): s's predecessor ``left`` is the host rule's guard (SL = GUARD: nothing to forget; its
    value, the host's symbol, is in no body of the host's and is not 0), and the expanded
    rule's guard holds the rule's own symbol, which its body does not contain.  What can fire
    is kept: (right, 0, 0) after s is given value 0 (terminal 0), and the runs the closed ring
    makes at f (run1) and before last (run2)."""
    left = nd[_U(4 * s + PV)]
    right = nd[_U(4 * s + NX)]
    r = -nd[_U(4 * s + VL)] - 1
    g = rguard[_U(r)]
    f = nd[_U(4 * g + NX)]
    last = nd[_U(4 * g + PV)]
    fs = nd[_U(4 * f + SL)]
    if fs >= 0 and tab[_U(2 * fs + 1)] < T_EMPTY:  # the body moves into another rule: untag
        tab[_U(2 * fs + 1)] = f
    # join(last, f): deleting the rule's guard closes its body ring (no run: g's value is r's)
    _idx_clear(nd, rguard, tab, meta, last)
    nd[_U(4 * last + NX)] = f
    nd[_U(4 * f + PV)] = last
    _idx_clear(nd, rguard, tab, meta, s)
    nd[_U(4 * s + VL)] = 0  # the reference unlinks s as a plain symbol of value 0
    # join(left, right): only right's side can be a run, (s = 0, right = 0, its next = 0)
    rv = nd[_U(4 * right + VL)]
    if rv == 0 and nd[_U(4 * nd[_U(4 * right + NX)] + VL)] == 0:
        _idx_set(nd, rguard, rkey, tab, meta, right)
    nd[_U(4 * left + NX)] = right
    nd[_U(4 * right + PV)] = left
    _free_node(nd, meta, s)
    # join(left, f): f's side is a run when the ring reads v v v around f (run1)
    fv = nd[_U(4 * f + VL)]
    if fv == nd[_U(4 * last + VL)] and fv == nd[_U(4 * nd[_U(4 * f + NX)] + VL)]:
        _idx_set(nd, rguard, rkey, tab, meta, f)
    nd[_U(4 * left + NX)] = f
    nd[_U(4 * f + PV)] = left
    # join(last, right): last's side is a run when the ring reads v v v ending at f (run2)
    _idx_clear(nd, rguard, tab, meta, last)
    lv = nd[_U(4 * last + VL)]
    pl = nd[_U(4 * last + PV)]
    if lv == fv and lv == nd[_U(4 * pl + VL)]:
        _idx_set(nd, rguard, rkey, tab, meta, pl)
    nd[_U(4 * last + NX)] = right
    nd[_U(4 * right + PV)] = last
    _idx_set(nd, rguard, rkey, tab, meta, last)
    rguard[_U(r)] = -(meta[M_RFREE_HEAD] + 2)  # NIL for the last free rule
    rcount[_U(r)] = 0
    meta[M_RFREE_HEAD] = r
    meta[M_LIVE_RULES] -= 1
    _free_node(nd, meta, g)


@_inl
def _is_body(nd, x):  # type: ignore[no-untyped-def]
    """Whether the digram at x is the whole right side of a rule."""
    return _is_guard(nd, nd[_U(4 * x + PV)]) and _is_guard(nd, nd[_U(4 * nd[_U(4 * x + NX)] + NX)])


@_hot
def _extend(nd, rguard, rcount, rkey, tab, stack, meta, sp, x, a):  # type: ignore[no-untyped-def]
    """Rule churn's shortcut: the repeated digram (R, c) at a, indexed at x, where R is used only
    at x and a.  The reference makes a rule s -> R c, replaces x then a by s (checking s's
    neighbours) and inlines R into s (rule utility): s ends as R's body plus c, used at x and a.
    Here R itself takes s's place: c moves to the end of R's body and the index gets the same
    entries under R's number (docs/design.md, wave 17).  Done, and 1 returned, only where the
    reference's steps are known to do nothing else (its checks of s's new digrams find nothing,
    no run of three equal symbols is re-indexed but the one the expansion of a body starting and
    ending with one value does, replicated as run1/run2); else 0 and the caller takes the
    reference's path."""
    b = nd[_U(4 * a + NX)]
    w = nd[_U(4 * x + NX)]
    z1 = nd[_U(4 * w + NX)]
    z2 = nd[_U(4 * b + NX)]
    q1 = nd[_U(4 * x + PV)]
    q2 = nd[_U(4 * a + PV)]
    if z1 == a or z2 == x or sp + 9 > len(stack):  # x's digram and a's adjacent; no room for the reference's pushes
        return 0
    c = nd[_U(4 * b + VL)]
    q1v = nd[_U(4 * q1 + VL)]
    q2v = nd[_U(4 * q2 + VL)]
    z1v = nd[_U(4 * z1 + VL)]
    z2v = nd[_U(4 * z2 + VL)]
    gq1 = _is_guard(nd, q1)
    gq2 = _is_guard(nd, q2)
    gz1 = _is_guard(nd, z1)
    gz2 = _is_guard(nd, z2)
    if q1v == q2v and not gq1 and not gq2:  # the check of (q2, s) would find (q1, s)
        return 0
    if z1v == z2v and not gz1 and not gz2:  # the check of (s, z2) would find (s, z1)
        return 0
    # the reference's substitutions re-index a run of three equal symbols around x and a: not here
    if z1v == c and nd[_U(4 * nd[_U(4 * z1 + NX)] + VL)] == c:
        return 0
    if q1v == nd[_U(4 * nd[_U(4 * q1 + PV)] + VL)] and (q1v == c or q1v == z1v):
        return 0
    if z2v == c and z2 != q1 and nd[_U(4 * nd[_U(4 * z2 + NX)] + VL)] == c:  # z2 == q1: next is s there
        return 0
    if q2 != z1 and q2v == nd[_U(4 * nd[_U(4 * q2 + PV)] + VL)] and (q2v == c or q2v == z2v):
        return 0
    r = -nd[_U(4 * x + VL)] - 1
    g = rguard[_U(r)]
    f = nd[_U(4 * g + NX)]
    last = nd[_U(4 * g + PV)]
    if f == last:  # a one-symbol rule: the reference's expansion indexes its ring's (v, v)
        return 0
    # R's body first and last equal: inlining it re-indexes a run of three in the ring it closes
    fv = nd[_U(4 * f + VL)]
    run1 = fv == nd[_U(4 * last + VL)] and fv == nd[_U(4 * nd[_U(4 * f + NX)] + VL)]
    run2 = fv == nd[_U(4 * last + VL)] and fv == nd[_U(4 * nd[_U(4 * last + PV)] + VL)]
    if sp + 9 > meta[M_MAX_SP]:  # the reference's deepest point in these steps
        meta[M_MAX_SP] = sp + 9
    meta[M_EXTENDED] += 1
    # the digrams that go: (R, c) at x, (c, z1), (c, z2); (q, R) stays (it is the reference's
    # (q, s)) unless it is not indexed or becomes a rule's whole body (then indexed again below)
    _idx_clear(nd, rguard, tab, meta, x)
    _idx_clear(nd, rguard, tab, meta, w)
    _idx_clear(nd, rguard, tab, meta, b)
    again1 = not gq1 and (nd[_U(4 * q1 + SL)] < 0 or (_is_guard(nd, nd[_U(4 * q1 + PV)]) and gz1))
    again2 = not gq2 and (nd[_U(4 * q2 + SL)] < 0 or (_is_guard(nd, nd[_U(4 * q2 + PV)]) and gz2))
    if again1:
        _idx_clear(nd, rguard, tab, meta, q1)
    if again2:
        _idx_clear(nd, rguard, tab, meta, q2)
    fs = nd[_U(4 * f + SL)]
    if fs >= 0 and tab[_U(2 * fs + 1)] < T_EMPTY:  # R's body grows past two symbols: untag
        tab[_U(2 * fs + 1)] = f
    # unlink c after x (its node w becomes the end of R's body) and after a (b is freed)
    nd[_U(4 * x + NX)] = z1
    nd[_U(4 * z1 + PV)] = x
    nd[_U(4 * a + NX)] = z2
    nd[_U(4 * z2 + PV)] = a
    nd[_U(4 * last + NX)] = w
    nd[_U(4 * w + PV)] = last
    nd[_U(4 * w + NX)] = g
    nd[_U(4 * g + PV)] = w
    _free_node(nd, meta, b)
    if c < 0:
        rcount[_U(-c - 1)] -= 1
    # the digrams that come: (R, z1), (R, z2), (q, R) where needed, and R's new (last, c)
    _idx_set(nd, rguard, rkey, tab, meta, x)
    _idx_set(nd, rguard, rkey, tab, meta, a)
    if again1:
        _idx_set(nd, rguard, rkey, tab, meta, q1)
    if again2:
        _idx_set(nd, rguard, rkey, tab, meta, q2)
    if run1:
        _idx_set(nd, rguard, rkey, tab, meta, f)
    if run2:
        _idx_set(nd, rguard, rkey, tab, meta, nd[_U(4 * last + PV)])
    _idx_set(nd, rguard, rkey, tab, meta, last)
    return 1
