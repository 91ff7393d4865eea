"""The SEQUITUR builder's state layout and its digram table: hashing, probing, indexing, deletion.

Shared by ``sequitur_rules`` (node and rule operations) and ``sequitur`` (the append loop, which
inlines everything here).  numba's cache watches only the file that defines a kernel, so the
kernels of these three modules key their cache on all three files (``_jit.cache_depends``).
"""

from __future__ import annotations

import numba
import numpy as np

from wholetrace.kernels._jit import kernel
from wholetrace.kernels._jit import prefetch as _prefetch

# The incremental kernels allocate nothing: they are compiled without NRT (see
# kernels/_jit.py), which removes the atomic reference counting of the state arrays on
# every internal call (about 6x).
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
M_EXTENDED = 23  # rule churn's shortcuts taken (kernels/sequitur_rules.py _extend; statistics, tests)
META_SIZE = 24

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
