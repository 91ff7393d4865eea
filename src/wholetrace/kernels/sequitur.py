"""Numba kernels of the SEQUITUR / SEQUITUR(1) builder: array linked lists, digram hash table.

Kernels over the flat grammar (lengths, expansion, storage) are in ``sequitur_flat``.
"""

from __future__ import annotations

import numba
import numpy as np

from wholetrace.kernels._jit import kernel
from wholetrace.kernels._jit import prefetch as _prefetch

# The incremental kernels allocate nothing: they are compiled without NRT (see
# kernels/_jit.py), which removes the atomic reference counting of the state arrays on
# every internal call (about 6x).  Entry points that allocate use plain ``kernel``.
_hot = kernel(nrt=False)
_inl = kernel(nrt=False, inline=True)  # small helpers of the hot path

if numba.config.DISABLE_JIT:  # pure-Python twin: numpy warns on the hash's intended wrap-around
    import warnings

    warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning, __name__)

# ---------------------------------------------------------------------------
# Builder state: the tuple (nd, rguard, rcount, rkey, tab, stack, meta).
# nd: int32, 4 per node: next, prev, value, slot.  value is a terminal t >= 0 or
#   -(r + 1) for a reference to rule r; a rule's guard node carries -(r + 1) too
#   and has slot GUARD.  slot is the digram-table slot indexing the digram that
#   starts at this node, or -1.  Rule 0 is S; node 0 is its guard.
# rguard/rcount: guard node and reference count of each rule (rguard of a free rule links the
#   free list); rkey: the check word (_chk) of the body of a rule whose table entry is tagged
#   (see _occupy): with the entry's fingerprint it identifies the body exactly.
# tab: int32, 2 per slot: 32-bit fingerprint of the digram (_fp) and the node of
#   its indexed occurrence (T_EMPTY when free).  Linear probing from the slot given
#   by the fingerprint's top bits, deletion by backward shift (no tombstones); a
#   fingerprint match is confirmed on the node's values, so lookups are exact.  The
#   index maps each digram to at most one occurrence, like the reference's hash
#   table, and is never stale.  A new rule's guard and body nodes are one aligned
#   block of four nodes (one cache line), and the slot of the digram checked next is
#   prefetched before the work that precedes the check.
# stack: work stack replacing the reference's recursion; meta: scalars (M_*).
# ---------------------------------------------------------------------------
NIL = -1
GUARD = -2
T_EMPTY = -1
NX, PV, VL, SL = 0, 1, 2, 3

M_FREE_HEAD = 0
M_FRESH = 1
M_RFREE_HEAD = 2  # first free rule id (-1: none); the list continues through rguard
M_RFRESH = 3
M_TUSED = 4
# 5: unused (was the tombstone count)
M_TBITS = 6
M_LOOKAHEAD = 7
M_HAS_PENDING = 8
M_PENDING = 9
M_HAS_LA = 10
M_LA = 11
M_NSYMS = 12
M_OVERFLOW = 13
M_LIVE_RULES = 14
M_LIVE_NODES = 15
M_MAX_SP = 16
M_NODE_PHASE = 17  # node ids = this (mod 4) start a 64-byte line of nd (set by the Python layer)
M_HAS_NEXT = 18  # the symbol appended after the current one is known (only prefetches use it)
M_NEXT = 19
M_BODY = 20  # the first body node of the rule _new_rule just made (the second is in M_BODY + 1)
M_REUSED = 22  # rules laid out on free nodes instead of a fresh line (statistics, tests)
META_SIZE = 23

ST_DONE = 0
ST_NEED_NODES = 1
ST_NEED_RULES = 2
ST_NEED_TABLE = 3

MARGIN_NODES = 4096
MARGIN_RULES = 1024
MARGIN_TABLE = 4096
MAX_LOAD_NUM = 5  # rebuild the table when more than 5/8 of the slots are used
MAX_LOAD_DEN = 8
MAX_SYMBOL = (1 << 31) - 1

F_CHECK = 0
F_SUBST_RIGHT = 1
F_NEW_SECOND = 2
F_UTILITY = 3
F_SUBST = 4
F_UTILITY_TAG = 5  # rule utility after a tagged find: the kind word also holds the slot (<< 8)

# Every array index of the hot kernels is cast to unsigned: numba then emits no
# negative-index wrap-around (a compare and select per access, ~120 accesses on the hot
# path, and it keeps LLVM from folding address arithmetic).  No index here is negative.
_U = np.uint64

_C1 = np.uint64(0x9E3779B97F4A7C15)
_S32 = np.uint64(32)
_UM32 = np.uint64(0xFFFFFFFF)
_M32 = np.int64(0xFFFFFFFF)


@_inl
def _key(v1, v2):  # type: ignore[no-untyped-def]
    """Digram (v1, v2) packed into one int64 (exact)."""
    return ((np.int64(v1) & _M32) << 32) | (np.int64(v2) & _M32)


@_inl
def _s32(x):  # type: ignore[no-untyped-def]
    """The int32 with the bits of x (0 <= x < 2**32)."""
    return np.int32((np.int64(x) ^ 0x80000000) - 0x80000000)


@_inl
def _fpk(key):  # type: ignore[no-untyped-def]
    """32-bit fingerprint of a packed digram: the top half of a multiplicative hash (one
    multiplication by an odd constant: a bijection of the 64-bit key).  Its top ``bits`` bits
    are the home slot, so a rebuild needs no nodes."""
    return _s32((np.uint64(key) * _C1) >> _S32)


@_inl
def _chk(key):  # type: ignore[no-untyped-def]
    """The bottom half of the same hash: with the fingerprint it determines the key."""
    return _s32((np.uint64(key) * _C1) & _UM32)


@_inl
def _fp(v1, v2):  # type: ignore[no-untyped-def]
    """32-bit fingerprint of digram (v1, v2)."""
    return _fpk(_key(v1, v2))


@_inl
def _home(fp, bits):  # type: ignore[no-untyped-def]
    """Home slot of a fingerprint in a table of 2**bits slots."""
    return (np.int64(fp) & _M32) >> (32 - bits)


@_inl
def _ref_node(nd, rguard, ref):  # type: ignore[no-untyped-def]
    """The indexed node of a table entry: ``ref`` itself, or the first body node of rule
    -(ref + 2) when the entry is tagged as that rule's whole body."""
    if ref >= 0:
        return ref
    return nd[_U(4 * rguard[_U(-ref - 2)] + NX)]


@_inl
def _prefetch_slot(tab, meta, v1, v2):  # type: ignore[no-untyped-def]
    """Start loading the home slot of digram (v1, v2), to be checked after the work at hand."""
    _prefetch(tab, np.int64(2) * _home(_fp(v1, v2), meta[M_TBITS]))


@_inl
def _is_guard(nd, n):  # type: ignore[no-untyped-def]
    return nd[_U(4 * n + SL)] == GUARD


@_inl
def _find(nd, rkey, tab, meta, fp, key, v1, v2):  # type: ignore[no-untyped-def]
    """(slot, True) if digram (v1, v2) is indexed, else (empty slot to insert at, False).
    A slot matches on the fingerprint, then on the indexed node's values, or for an entry
    tagged as a rule's whole body on that rule's packed body (exact either way)."""
    bits = meta[M_TBITS]
    mask = (np.int64(1) << bits) - 1
    i = _home(fp, bits)
    while True:
        n = tab[_U(2 * i + 1)]
        if n == T_EMPTY:
            return i, False
        if tab[_U(2 * i)] == fp:
            if n >= 0:
                if nd[_U(4 * n + VL)] == v1 and nd[_U(4 * nd[_U(4 * n + NX)] + VL)] == v2:
                    return i, True
            elif rkey[_U(-n - 2)] == _chk(key):  # fingerprint + check = the whole hash
                return i, True
        i = (i + 1) & mask


@_inl
def _occupy(nd, rguard, rkey, tab, meta, slot, found, fp, key, n, m):  # type: ignore[no-untyped-def]
    """Make node n (followed by m) the indexed occurrence of digram key, stored at slot.  If
    the digram is the whole body of a rule other than S, the entry is tagged as that rule's
    (-(r + 2)) and the hash's other half kept in rkey[r]: a lookup then finds the rule without
    reading the node (a rule's body is never reached by an append, so the tag stays true
    until the entry is replaced or removed; _expand unties it when the body moves)."""
    if found:
        old = _ref_node(nd, rguard, tab[_U(2 * slot + 1)])
        if old != n:
            nd[_U(4 * old + SL)] = NIL
    else:
        meta[M_TUSED] += 1
        tab[_U(2 * slot)] = fp
    mine = nd[_U(4 * n + SL)]
    if mine >= 0 and mine != slot:  # pragma: no cover - a node is indexed under one digram only
        meta[M_OVERFLOW] = 1
    ref = n
    p = nd[_U(4 * n + PV)]
    if _is_guard(nd, p) and _is_guard(nd, nd[_U(4 * m + NX)]):
        r = -nd[_U(4 * p + VL)] - 1
        if r != 0:
            rkey[_U(r)] = _chk(key)
            ref = -(r + 2)
    tab[_U(2 * slot + 1)] = ref
    nd[_U(4 * n + SL)] = slot


@_hot
def _idx_set(nd, rguard, rkey, tab, meta, n):  # type: ignore[no-untyped-def]
    """Index the digram starting at n, replacing any other occurrence in the index."""
    m = nd[_U(4 * n + NX)]
    if _is_guard(nd, n) or _is_guard(nd, m):
        return
    v1 = nd[_U(4 * n + VL)]
    v2 = nd[_U(4 * m + VL)]
    key = _key(v1, v2)
    fp = _fpk(key)
    slot, found = _find(nd, rkey, tab, meta, fp, key, v1, v2)
    _occupy(nd, rguard, rkey, tab, meta, slot, found, fp, key, n, m)


@_inl
def _vacate(nd, rguard, tab, meta, s):  # type: ignore[no-untyped-def]
    """Empty slot s and close the gap (backward-shift deletion: no tombstones).  Each entry
    after s in its run moves back into the hole unless its home slot lies after the hole."""
    meta[M_TUSED] -= 1
    mask = (np.int64(1) << meta[M_TBITS]) - 1
    bits = meta[M_TBITS]
    hole = np.int64(s)
    j = (hole + 1) & mask
    while True:
        n = tab[_U(2 * j + 1)]
        if n == T_EMPTY:
            break
        home = _home(tab[_U(2 * j)], bits)
        if ((j - home) & mask) >= ((j - hole) & mask):  # home is at or before the hole
            tab[_U(2 * hole)] = tab[_U(2 * j)]
            tab[_U(2 * hole + 1)] = n
            nd[_U(4 * _ref_node(nd, rguard, n) + SL)] = hole
            hole = j
        j = (j + 1) & mask
    tab[_U(2 * hole + 1)] = T_EMPTY


@_inl
def _idx_clear(nd, rguard, tab, meta, n):  # type: ignore[no-untyped-def]
    """Forget the digram starting at n if n is its indexed occurrence."""
    s = nd[_U(4 * n + SL)]
    if s >= 0:
        nd[_U(4 * n + SL)] = NIL
        _vacate(nd, rguard, tab, meta, s)


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
def _delete_node(nd, rguard, rcount, rkey, tab, meta, n):  # type: ignore[no-untyped-def]
    _join(nd, rguard, rkey, tab, meta, nd[_U(4 * n + PV)], nd[_U(4 * n + NX)])
    _idx_clear(nd, rguard, tab, meta, n)
    v = nd[_U(4 * n + VL)]
    if v < 0:
        rcount[_U(-v - 1)] -= 1
    _free_node(nd, meta, n)


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
def _push(stack, meta, sp, kind, a, b):  # type: ignore[no-untyped-def]
    if sp + 3 > len(stack):
        meta[M_OVERFLOW] = 1
        return sp
    stack[_U(sp)] = kind
    stack[_U(sp + 1)] = a
    stack[_U(sp + 2)] = b
    sp += 3
    if sp > meta[M_MAX_SP]:
        meta[M_MAX_SP] = sp
    return sp


@_inl
def _substitute(nd, rguard, rcount, rkey, tab, stack, meta, sp, x, r):  # type: ignore[no-untyped-def]
    """Replace the digram at x by rule r, then schedule the checks of its neighbours."""
    q = nd[_U(4 * x + PV)]
    z = nd[_U(4 * nd[_U(4 * x + NX)] + NX)]  # checked with the new symbol if the left check does nothing
    if not _is_guard(nd, z):
        _prefetch_slot(tab, meta, -(r + 1), nd[_U(4 * z + VL)])
    elif z == 0 and meta[M_HAS_NEXT] != 0:  # the new symbol ends S: (r, next input) is checked
        _prefetch_slot(tab, meta, -(r + 1), meta[M_NEXT])  # next, unless the cascade goes on
    _delete_node(nd, rguard, rcount, rkey, tab, meta, nd[_U(4 * q + NX)])
    _delete_node(nd, rguard, rcount, rkey, tab, meta, nd[_U(4 * q + NX)])
    y = _alloc_node(nd, rcount, meta, -(r + 1))
    _insert_after(nd, rguard, rkey, tab, meta, q, y)
    sp = _push(stack, meta, sp, F_SUBST_RIGHT, q, 0)
    return _push(stack, meta, sp, F_CHECK, q, 0)


@_hot
def _expand(nd, rguard, rcount, rkey, tab, meta, s):  # type: ignore[no-untyped-def]
    """Inline the rule that s (the first symbol of a rule body) is the last user of,
    replaying the reference's sequence of links so the index ends up identical."""
    left = nd[_U(4 * s + PV)]
    right = nd[_U(4 * s + NX)]
    r = -nd[_U(4 * s + VL)] - 1
    g = rguard[_U(r)]
    f = nd[_U(4 * g + NX)]
    last = nd[_U(4 * g + PV)]
    fs = nd[_U(4 * f + SL)]
    if fs >= 0 and tab[_U(2 * fs + 1)] < T_EMPTY:  # the body moves into another rule: untag
        tab[_U(2 * fs + 1)] = f
    _join(nd, rguard, rkey, tab, meta, last, f)  # deleting the rule's guard closes its body ring
    _idx_clear(nd, rguard, tab, meta, s)
    nd[_U(4 * s + VL)] = 0  # the reference unlinks s as a plain symbol of value 0
    _join(nd, rguard, rkey, tab, meta, left, right)
    _free_node(nd, meta, s)
    _join(nd, rguard, rkey, tab, meta, left, f)
    _join(nd, rguard, rkey, tab, meta, last, right)
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


@_inl
def _run_check(nd, rguard, rcount, rkey, tab, stack, meta, a0):  # type: ignore[no-untyped-def]
    """check(a0) and every substitution it cascades into, in the reference's order."""
    sp = _push(stack, meta, 0, F_CHECK, a0, 0)
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
                sp = _push(stack, meta, sp, F_UTILITY_TAG | (slot << 8), r, key)
                sp = _push(stack, meta, sp, F_SUBST, a, r)
                ret = 1
                continue
            if x == a or nd[_U(4 * x + NX)] == a or b == x:  # overlapping run such as aaa
                continue
            if _is_body(nd, x):  # the digram is a whole rule: use it
                r = -nd[_U(4 * nd[_U(4 * x + PV)] + VL)] - 1
                q = nd[_U(4 * a + PV)]  # the next check is (q, r)
                if not _is_guard(nd, q):
                    _prefetch_slot(tab, meta, nd[_U(4 * q + VL)], -(r + 1))
                sp = _push(stack, meta, sp, F_UTILITY, r, 0)
                sp = _push(stack, meta, sp, F_SUBST, a, r)
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
            r = _new_rule(nd, rguard, rcount, meta)
            q = nd[_U(4 * x + PV)]  # the next check is (q, r)
            if not _is_guard(nd, q):
                _prefetch_slot(tab, meta, nd[_U(4 * q + VL)], -(r + 1))
            g = rguard[_U(r)]
            n1 = _take_node(nd, rcount, meta[M_BODY], v1)
            _insert_after(nd, rguard, rkey, tab, meta, g, n1)
            n2 = _take_node(nd, rcount, meta[M_BODY + 1], v2)
            _insert_after(nd, rguard, rkey, tab, meta, n1, n2)
            sp = _push(stack, meta, sp, F_NEW_SECOND, r, a)
            sp = _push(stack, meta, sp, F_SUBST, x, r)
            ret = 1
        elif kind == F_SUBST:  # the one site of the substitution (inlined once)
            sp = _substitute(nd, rguard, rcount, rkey, tab, stack, meta, sp, a, a2)
        elif kind == F_SUBST_RIGHT:
            if ret == 0:
                sp = _push(stack, meta, sp, F_CHECK, nd[_U(4 * a + NX)], 0)
        elif kind == F_NEW_SECOND:
            q = nd[_U(4 * a2 + PV)]  # the next check is (q, a)
            if not _is_guard(nd, q):
                _prefetch_slot(tab, meta, nd[_U(4 * q + VL)], -(a + 1))
            _idx_set(nd, rguard, rkey, tab, meta, nd[_U(4 * rguard[_U(a)] + NX)])
            sp = _push(stack, meta, sp, F_UTILITY, a, 0)
            sp = _push(stack, meta, sp, F_SUBST, a2, a)
        elif kind == F_UTILITY_TAG:  # as F_UTILITY, but if the entry found is unchanged the
            # rule's body is still the digram (a2 packed), so its first symbol is known
            s = kw >> 8
            if tab[_U(2 * s + 1)] == -(a + 2) and tab[_U(2 * s)] == _fpk(a2) and rkey[_U(a)] == _chk(a2):
                v = a2 >> 32
            else:
                v = nd[_U(4 * nd[_U(4 * rguard[_U(a)] + NX)] + VL)]
            if v < 0 and rcount[_U(-v - 1)] == 1:
                _expand(nd, rguard, rcount, rkey, tab, meta, nd[_U(4 * rguard[_U(a)] + NX)])
            ret = 1
        else:  # F_UTILITY: rule utility for the rule just used
            f = nd[_U(4 * rguard[_U(a)] + NX)]
            v = nd[_U(4 * f + VL)]
            if v < 0 and rcount[_U(-v - 1)] == 1:
                _expand(nd, rguard, rcount, rkey, tab, meta, f)
            ret = 1
    return ret


@_inl
def _append(nd, rguard, rcount, rkey, tab, stack, meta, c):  # type: ignore[no-untyped-def]
    last = nd[_U(PV)]
    if last != 0:
        _prefetch_slot(tab, meta, nd[_U(4 * last + VL)], c)
    y = _alloc_node(nd, rcount, meta, c)
    _insert_after(nd, rguard, rkey, tab, meta, nd[_U(PV)], y)
    meta[M_NSYMS] += 1
    _run_check(nd, rguard, rcount, rkey, tab, stack, meta, nd[_U(4 * y + PV)])


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
