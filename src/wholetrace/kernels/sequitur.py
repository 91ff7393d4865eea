"""Numba kernels of SEQUITUR / SEQUITUR(1): array linked lists, digram hash table, expansion."""

from __future__ import annotations

import numba
import numpy as np

from wholetrace.kernels._jit import kernel

# The incremental kernels allocate nothing.  Compiling them without NRT removes the
# atomic reference counting of the state arrays on every internal call, which
# otherwise dominated the run time (about 6x).  Entry points that allocate use kernel.
_hot = numba.njit(cache=True, nogil=True, _nrt=False)

if numba.config.DISABLE_JIT:  # pure-Python twin: numpy warns on the hash's intended wrap-around
    import warnings

    warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning, __name__)

# ---------------------------------------------------------------------------
# Builder state: the tuple (nd, rguard, rcount, rfree, tab, stack, meta).
# nd: int32, 4 per node: next, prev, value, slot.  value is a terminal t >= 0 or
#   -(r + 1) for a reference to rule r; a rule's guard node carries -(r + 1) too
#   and has slot GUARD.  slot is the digram-table slot indexing the digram that
#   starts at this node, or -1.  Rule 0 is S; node 0 is its guard.
# rguard/rcount: guard node and reference count of each rule; rfree: free rule ids.
# tab: int64, 2 per slot: packed digram key (value1 << 32 | value2, 32 bits each)
#   and the node of the indexed occurrence (T_EMPTY / T_TOMB when free).  Linear
#   probing; the index maps each digram to at most one occurrence, like the
#   reference's hash table, and is never stale.
# stack: work stack replacing the reference's recursion; meta: scalars (M_*).
# ---------------------------------------------------------------------------
NIL = -1
GUARD = -2
T_EMPTY = -1
T_TOMB = -2
NX, PV, VL, SL = 0, 1, 2, 3

M_FREE_HEAD = 0
M_FRESH = 1
M_RFREE_TOP = 2
M_RFRESH = 3
M_TUSED = 4
M_TTOMB = 5
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
META_SIZE = 20

ST_DONE = 0
ST_NEED_NODES = 1
ST_NEED_RULES = 2
ST_NEED_TABLE = 3

MARGIN_NODES = 4096
MARGIN_RULES = 1024
MARGIN_TABLE = 4096
MAX_LOAD_NUM = 3  # rebuild the table when (used + deleted) > 3/4 of the slots
MAX_LOAD_DEN = 4
MAX_SYMBOL = (1 << 31) - 1

F_CHECK = 0
F_SUBST_RIGHT = 1
F_NEW_SECOND = 2
F_UTILITY = 3

_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xBF58476D1CE4E5B9)
_S31 = np.uint64(31)
_M32 = np.int64(0xFFFFFFFF)


@_hot
def _key(v1, v2):  # type: ignore[no-untyped-def]
    return ((np.int64(v1) & _M32) << 32) | (np.int64(v2) & _M32)


@_hot
def _slot0(key, bits):  # type: ignore[no-untyped-def]
    h = np.uint64(key) * _C1
    h = (h ^ (h >> _S31)) * _C2
    return np.int64(h >> np.uint64(64 - bits))


@_hot
def _is_guard(nd, n):  # type: ignore[no-untyped-def]
    return nd[4 * n + SL] == GUARD


@_hot
def _find(tab, meta, key):  # type: ignore[no-untyped-def]
    """(slot, True) if the digram key is indexed, else (slot to insert at, False)."""
    bits = meta[M_TBITS]
    mask = (np.int64(1) << bits) - 1
    i = _slot0(key, bits)
    ins = -1
    while True:
        n = tab[2 * i + 1]
        if n == T_EMPTY:
            return (i if ins < 0 else ins), False
        if n == T_TOMB:
            if ins < 0:
                ins = i
        elif tab[2 * i] == key:
            return i, True
        i = (i + 1) & mask


@_hot
def _digram(nd, n):  # type: ignore[no-untyped-def]
    return _key(nd[4 * n + VL], nd[4 * nd[4 * n + NX] + VL])


@_hot
def _occupy(nd, tab, meta, slot, found, key, n):  # type: ignore[no-untyped-def]
    """Make node n the indexed occurrence of digram key, stored at slot."""
    if found:
        old = tab[2 * slot + 1]
        if old != n:
            nd[4 * old + SL] = NIL
    else:
        if tab[2 * slot + 1] == T_TOMB:
            meta[M_TTOMB] -= 1
        meta[M_TUSED] += 1
        tab[2 * slot] = key
    mine = nd[4 * n + SL]
    if mine >= 0 and mine != slot:  # defensive: never index one node twice
        tab[2 * mine + 1] = T_TOMB
        meta[M_TUSED] -= 1
        meta[M_TTOMB] += 1
    tab[2 * slot + 1] = n
    nd[4 * n + SL] = slot


@_hot
def _idx_set(nd, tab, meta, n):  # type: ignore[no-untyped-def]
    """Index the digram starting at n, replacing any other occurrence in the index."""
    m = nd[4 * n + NX]
    if _is_guard(nd, n) or _is_guard(nd, m):
        return
    key = _key(nd[4 * n + VL], nd[4 * m + VL])
    slot, found = _find(tab, meta, key)
    _occupy(nd, tab, meta, slot, found, key, n)


@_hot
def _idx_clear(nd, tab, meta, n):  # type: ignore[no-untyped-def]
    """Forget the digram starting at n if n is its indexed occurrence."""
    s = nd[4 * n + SL]
    if s >= 0:
        tab[2 * s + 1] = T_TOMB
        nd[4 * n + SL] = NIL
        meta[M_TUSED] -= 1
        meta[M_TTOMB] += 1


@_hot
def _join(nd, tab, meta, left, right):  # type: ignore[no-untyped-def]
    """Link left -> right, forgetting left's old digram; a run of three equal symbols
    that loses its indexed pair gets its other pair indexed (as the reference does)."""
    if nd[4 * left + NX] != NIL:
        _idx_clear(nd, tab, meta, left)
        pr = nd[4 * right + PV]
        nr = nd[4 * right + NX]
        v = nd[4 * right + VL]
        if pr != NIL and nr != NIL and v == nd[4 * pr + VL] and v == nd[4 * nr + VL]:
            _idx_set(nd, tab, meta, right)
        pl = nd[4 * left + PV]
        nl = nd[4 * left + NX]
        v = nd[4 * left + VL]
        if pl != NIL and nl != NIL and v == nd[4 * nl + VL] and v == nd[4 * pl + VL]:
            _idx_set(nd, tab, meta, pl)
    nd[4 * left + NX] = right
    nd[4 * right + PV] = left


@_hot
def _alloc_node(nd, rcount, meta, v):  # type: ignore[no-untyped-def]
    n = meta[M_FREE_HEAD]
    if n != NIL:
        meta[M_FREE_HEAD] = nd[4 * n + NX]
    else:
        n = meta[M_FRESH]
        if 4 * (n + 2) > len(nd):  # the last node is scratch, used only on overflow
            meta[M_OVERFLOW] = 1
            n = len(nd) // 4 - 1
        else:
            meta[M_FRESH] = n + 1
    meta[M_LIVE_NODES] += 1
    nd[4 * n + NX] = NIL
    nd[4 * n + PV] = NIL
    nd[4 * n + VL] = v
    nd[4 * n + SL] = NIL
    if v < 0:
        rcount[-v - 1] += 1
    return n


@_hot
def _free_node(nd, meta, n):  # type: ignore[no-untyped-def]
    nd[4 * n + NX] = meta[M_FREE_HEAD]
    nd[4 * n + PV] = NIL
    nd[4 * n + SL] = NIL
    meta[M_FREE_HEAD] = n
    meta[M_LIVE_NODES] -= 1


@_hot
def _delete_node(nd, rcount, tab, meta, n):  # type: ignore[no-untyped-def]
    _join(nd, tab, meta, nd[4 * n + PV], nd[4 * n + NX])
    _idx_clear(nd, tab, meta, n)
    v = nd[4 * n + VL]
    if v < 0:
        rcount[-v - 1] -= 1
    _free_node(nd, meta, n)


@_hot
def _insert_after(nd, tab, meta, a, y):  # type: ignore[no-untyped-def]
    _join(nd, tab, meta, y, nd[4 * a + NX])
    _join(nd, tab, meta, a, y)


@_hot
def _new_rule(nd, rguard, rcount, rfree, meta):  # type: ignore[no-untyped-def]
    top = meta[M_RFREE_TOP]
    if top > 0:
        r = np.int64(rfree[top - 1])
        meta[M_RFREE_TOP] = top - 1
    else:
        r = meta[M_RFRESH]
        if r >= len(rguard) - 1:
            meta[M_OVERFLOW] = 1
            r = len(rguard) - 1
        else:
            meta[M_RFRESH] = r + 1
    meta[M_LIVE_RULES] += 1
    rcount[r] = 0
    g = _alloc_node(nd, rcount, meta, 0)
    nd[4 * g + VL] = -(r + 1)
    nd[4 * g + SL] = GUARD
    nd[4 * g + NX] = g
    nd[4 * g + PV] = g
    rguard[r] = g
    return r


@_hot
def _push(stack, meta, sp, kind, a, b):  # type: ignore[no-untyped-def]
    if sp + 3 > len(stack):
        meta[M_OVERFLOW] = 1
        return sp
    stack[sp] = kind
    stack[sp + 1] = a
    stack[sp + 2] = b
    sp += 3
    if sp > meta[M_MAX_SP]:
        meta[M_MAX_SP] = sp
    return sp


@_hot
def _substitute(nd, rcount, tab, stack, meta, sp, x, r):  # type: ignore[no-untyped-def]
    """Replace the digram at x by rule r, then schedule the checks of its neighbours."""
    q = nd[4 * x + PV]
    _delete_node(nd, rcount, tab, meta, nd[4 * q + NX])
    _delete_node(nd, rcount, tab, meta, nd[4 * q + NX])
    y = _alloc_node(nd, rcount, meta, -(r + 1))
    _insert_after(nd, tab, meta, q, y)
    sp = _push(stack, meta, sp, F_SUBST_RIGHT, q, 0)
    return _push(stack, meta, sp, F_CHECK, q, 0)


@_hot
def _expand(nd, rguard, rcount, rfree, tab, meta, s):  # type: ignore[no-untyped-def]
    """Inline the rule that s (the first symbol of a rule body) is the last user of,
    replaying the reference's sequence of links so the index ends up identical."""
    left = nd[4 * s + PV]
    right = nd[4 * s + NX]
    r = -nd[4 * s + VL] - 1
    g = rguard[r]
    f = nd[4 * g + NX]
    last = nd[4 * g + PV]
    _join(nd, tab, meta, last, f)  # deleting the rule's guard closes its body ring
    _idx_clear(nd, tab, meta, s)
    nd[4 * s + VL] = 0  # the reference unlinks s as a plain symbol of value 0
    _join(nd, tab, meta, left, right)
    _free_node(nd, meta, s)
    _join(nd, tab, meta, left, f)
    _join(nd, tab, meta, last, right)
    _idx_set(nd, tab, meta, last)
    rguard[r] = NIL
    rcount[r] = 0
    rfree[meta[M_RFREE_TOP]] = r
    meta[M_RFREE_TOP] += 1
    meta[M_LIVE_RULES] -= 1
    _free_node(nd, meta, g)


@_hot
def _is_body(nd, x):  # type: ignore[no-untyped-def]
    """Whether the digram at x is the whole right side of a rule."""
    return _is_guard(nd, nd[4 * x + PV]) and _is_guard(nd, nd[4 * nd[4 * x + NX] + NX])


@_hot
def _run_check(nd, rguard, rcount, rfree, tab, stack, meta, a0):  # type: ignore[no-untyped-def]
    """check(a0) and every substitution it cascades into, in the reference's order."""
    sp = _push(stack, meta, 0, F_CHECK, a0, 0)
    ret = 0
    lookahead = meta[M_LOOKAHEAD] != 0
    while sp > 0:
        sp -= 3
        kind = stack[sp]
        a = stack[sp + 1]
        a2 = stack[sp + 2]
        if kind == F_CHECK:
            b = nd[4 * a + NX]
            ret = 0
            if _is_guard(nd, a) or _is_guard(nd, b):
                continue
            v1 = nd[4 * a + VL]
            v2 = nd[4 * b + VL]
            key = _key(v1, v2)
            slot, found = _find(tab, meta, key)
            if not found:
                _occupy(nd, tab, meta, slot, False, key, a)
                continue
            x = tab[2 * slot + 1]
            if x == a or nd[4 * x + NX] == a or b == x:  # overlapping run such as aaa
                continue
            if _is_body(nd, x):  # the digram is a whole rule: use it
                r = -nd[4 * nd[4 * x + PV] + VL] - 1
                sp = _push(stack, meta, sp, F_UTILITY, r, 0)
                sp = _substitute(nd, rcount, tab, stack, meta, sp, a, r)
                ret = 1
                continue
            if lookahead and meta[M_HAS_LA] != 0 and nd[4 * b + NX] == 0:
                # SEQUITUR(1): b ends S and (b, next input) is a rule: wait for it
                s2, f2 = _find(tab, meta, _key(v2, meta[M_LA]))
                if f2 and _is_body(nd, tab[2 * s2 + 1]):
                    continue
            r = _new_rule(nd, rguard, rcount, rfree, meta)
            g = rguard[r]
            n1 = _alloc_node(nd, rcount, meta, v1)
            _insert_after(nd, tab, meta, g, n1)
            n2 = _alloc_node(nd, rcount, meta, v2)
            _insert_after(nd, tab, meta, n1, n2)
            sp = _push(stack, meta, sp, F_NEW_SECOND, r, a)
            sp = _substitute(nd, rcount, tab, stack, meta, sp, x, r)
            ret = 1
        elif kind == F_SUBST_RIGHT:
            if ret == 0:
                sp = _push(stack, meta, sp, F_CHECK, nd[4 * a + NX], 0)
        elif kind == F_NEW_SECOND:
            _idx_set(nd, tab, meta, nd[4 * rguard[a] + NX])
            sp = _push(stack, meta, sp, F_UTILITY, a, 0)
            sp = _substitute(nd, rcount, tab, stack, meta, sp, a2, a)
        else:  # F_UTILITY: rule utility for the rule just used
            f = nd[4 * rguard[a] + NX]
            v = nd[4 * f + VL]
            if v < 0 and rcount[-v - 1] == 1:
                _expand(nd, rguard, rcount, rfree, tab, meta, f)
            ret = 1
    return ret


@_hot
def _append(nd, rguard, rcount, rfree, tab, stack, meta, c):  # type: ignore[no-untyped-def]
    y = _alloc_node(nd, rcount, meta, c)
    _insert_after(nd, tab, meta, nd[PV], y)
    meta[M_NSYMS] += 1
    _run_check(nd, rguard, rcount, rfree, tab, stack, meta, nd[4 * y + PV])


@_hot
def room(nd, rguard, tab, meta):  # type: ignore[no-untyped-def]
    """ST_DONE if every structure has room for one more symbol's cascade, else what to grow."""
    if len(nd) // 4 - 1 - meta[M_LIVE_NODES] < MARGIN_NODES:
        return ST_NEED_NODES
    if len(rguard) - 1 - meta[M_LIVE_RULES] < MARGIN_RULES:
        return ST_NEED_RULES
    if (meta[M_TUSED] + meta[M_TTOMB] + MARGIN_TABLE) * MAX_LOAD_DEN > (len(tab) // 2) * MAX_LOAD_NUM:
        return ST_NEED_TABLE
    return ST_DONE


@_hot
def feed(nd, rguard, rcount, rfree, tab, stack, meta, chunk, start):  # type: ignore[no-untyped-def]
    """Append chunk[start:] to S; returns (position reached, stop reason)."""
    lookahead = meta[M_LOOKAHEAD] != 0
    for i in range(start, len(chunk)):
        why = room(nd, rguard, tab, meta)
        if why != ST_DONE:
            return i, why
        c = np.int64(chunk[i])
        if lookahead:
            if meta[M_HAS_PENDING] != 0:
                meta[M_HAS_LA] = 1
                meta[M_LA] = c
                _append(nd, rguard, rcount, rfree, tab, stack, meta, meta[M_PENDING])
            meta[M_PENDING] = c
            meta[M_HAS_PENDING] = 1
        else:
            _append(nd, rguard, rcount, rfree, tab, stack, meta, c)
        if meta[M_OVERFLOW] != 0:
            return i + 1, ST_DONE
    return len(chunk), ST_DONE


@_hot
def flush(nd, rguard, rcount, rfree, tab, stack, meta):  # type: ignore[no-untyped-def]
    """Process the symbol held back for look-ahead, with no look-ahead (end of input)."""
    if meta[M_HAS_PENDING] != 0:
        meta[M_HAS_LA] = 0
        meta[M_HAS_PENDING] = 0
        _append(nd, rguard, rcount, rfree, tab, stack, meta, meta[M_PENDING])


@_hot
def rehash(nd, tab, new_tab, bits):  # type: ignore[no-untyped-def]
    """Move every indexed digram into the empty table new_tab of 2**bits slots."""
    mask = (np.int64(1) << bits) - 1
    used = 0
    for i in range(len(tab) // 2):
        n = tab[2 * i + 1]
        if n < 0:
            continue
        key = tab[2 * i]
        j = _slot0(key, bits)
        while new_tab[2 * j + 1] != T_EMPTY:
            j = (j + 1) & mask
        new_tab[2 * j] = key
        new_tab[2 * j + 1] = n
        nd[4 * n + SL] = j
        used += 1
    return used


@kernel
def extract(nd, rguard, nrules):  # type: ignore[no-untyped-def]
    """Flatten the live grammar: rules numbered by first appearance (S = 0) -> (off, rhs)."""
    newid = np.full(len(rguard), -1, np.int64)
    order = np.empty(nrules, np.int64)
    newid[0] = 0
    order[0] = 0
    nr = 1
    stk = np.empty(nrules + 1, np.int64)
    sp = 0
    cur = nd[4 * rguard[0] + NX]
    total = 0
    while True:
        if nd[4 * cur + SL] == GUARD:  # end of a body
            if sp == 0:
                break
            sp -= 1
            cur = stk[sp]
            continue
        total += 1
        v = nd[4 * cur + VL]
        if v < 0 and newid[-v - 1] < 0:
            r = -v - 1
            newid[r] = nr
            order[nr] = r
            nr += 1
            stk[sp] = nd[4 * cur + NX]
            sp += 1
            cur = nd[4 * rguard[r] + NX]
        else:
            cur = nd[4 * cur + NX]
    off = np.zeros(nr + 1, np.int64)
    rhs = np.empty(total, np.int64)
    k = 0
    for i in range(nr):
        g = rguard[order[i]]
        n = nd[4 * g + NX]
        while n != g:
            v = nd[4 * n + VL]
            rhs[k] = v if v >= 0 else -newid[-v - 1]
            k += 1
            n = nd[4 * n + NX]
        off[i + 1] = k
    return off, rhs


# ---------------------------------------------------------------------------


@kernel
def topo_order(off, rhs):  # type: ignore[no-untyped-def]
    """Rules ordered parents-before-children (Kahn); -1 entries mean a cycle/unreachable rule."""
    nr = len(off) - 1
    indeg = np.zeros(nr, np.int64)
    for k in range(len(rhs)):
        if rhs[k] < 0:
            indeg[-rhs[k]] += 1
    order = np.full(nr, -1, np.int64)
    head = 0
    tail = 0
    for r in range(nr):
        if indeg[r] == 0:
            order[tail] = r
            tail += 1
    while head < tail:
        r = order[head]
        head += 1
        for k in range(off[r], off[r + 1]):
            if rhs[k] < 0:
                c = -rhs[k]
                indeg[c] -= 1
                if indeg[c] == 0:
                    order[tail] = c
                    tail += 1
    return order


@kernel
def rule_lengths(off, rhs, order):  # type: ignore[no-untyped-def]
    """Expansion length of every rule, and pos[k]: offset of symbol k inside its rule's expansion."""
    nr = len(off) - 1
    lens = np.zeros(nr, np.int64)
    pos = np.empty(len(rhs), np.int64)
    for t in range(nr - 1, -1, -1):
        r = order[t]
        acc = 0
        for k in range(off[r], off[r + 1]):
            pos[k] = acc
            x = rhs[k]
            acc += 1 if x >= 0 else lens[-x]
        lens[r] = acc
    return lens, pos


@kernel
def rule_frequencies(off, rhs, order):  # type: ignore[no-untyped-def]
    """How many times each rule occurs in the expansion of S (paths from S in the DAG)."""
    nr = len(off) - 1
    freq = np.zeros(nr, np.int64)
    freq[0] = 1
    for t in range(nr):
        r = order[t]
        fr = freq[r]
        for k in range(off[r], off[r + 1]):
            if rhs[k] < 0:
                freq[-rhs[k]] += fr
    return freq


@kernel
def _locate(off, pos, r, t):  # type: ignore[no-untyped-def]
    """Index k in rule r's body of the symbol whose expansion covers local offset t."""
    lo = off[r]
    hi = off[r + 1] - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if pos[mid] <= t:
            lo = mid
        else:
            hi = mid - 1
    return lo


@kernel
def expand_range(off, rhs, lens, pos, depth, i, j):  # type: ignore[no-untyped-def]
    """Symbols i..j-1 of the expansion of S."""
    n = j - i
    out = np.empty(max(n, 0), np.int64)
    if n <= 0:
        return out
    ks = np.empty(depth + 2, np.int64)
    ends = np.empty(depth + 2, np.int64)
    k = _locate(off, pos, 0, i)
    skip = i - pos[k]
    ks[0] = k
    ends[0] = off[1]
    sp = 1
    w = 0
    while w < n:
        top = sp - 1
        k = ks[top]
        if k == ends[top]:
            sp -= 1
            continue
        ks[top] = k + 1
        x = rhs[k]
        if x >= 0:
            out[w] = x
            w += 1
        else:
            c = -x
            k2 = _locate(off, pos, c, skip)
            skip -= pos[k2]
            ks[sp] = k2
            ends[sp] = off[c + 1]
            sp += 1
    return out


@kernel
def rule_depths(off, rhs, order):  # type: ignore[no-untyped-def]
    """Height of the grammar DAG: the longest chain of nested rules below S."""
    nr = len(off) - 1
    h = np.zeros(nr, np.int64)
    for t in range(nr - 1, -1, -1):
        r = order[t]
        m = 0
        for k in range(off[r], off[r + 1]):
            if rhs[k] < 0 and h[-rhs[k]] + 1 > m:
                m = h[-rhs[k]] + 1
        h[r] = m
    return h[0] if nr > 0 else 0


# ---------------------------------------------------------------------------
# Storage kernels: the grammar as a depth-first walk from S in which the first
# occurrence of each rule carries its body inline (rules are numbered in that
# order, so a new rule needs no id) and later occurrences name the rule.
# ---------------------------------------------------------------------------


@kernel
def preorder_encode(off, rhs):  # type: ignore[no-untyped-def]
    """-> (kinds uint8: 0 terminal, 1 new rule, 2 known rule; body lengths of new rules;
    terminals; known-rule references as newest id - id); ok False if not canonical."""
    nr = len(off) - 1
    kinds = np.empty(len(rhs), np.uint8)
    blens = np.empty(max(nr - 1, 0), np.int64)
    terms = np.empty(len(rhs), np.int64)
    refs = np.empty(len(rhs), np.int64)
    nk = nb = nt = nf = 0
    stk_r = np.empty(nr + 1, np.int64)
    stk_k = np.empty(nr + 1, np.int64)
    stk_r[0] = 0
    stk_k[0] = off[0]
    sp = 1
    newest = 0
    ok = True
    while sp > 0:
        r = stk_r[sp - 1]
        k = stk_k[sp - 1]
        if k == off[r + 1]:
            sp -= 1
            continue
        stk_k[sp - 1] = k + 1
        x = rhs[k]
        if x >= 0:
            kinds[nk] = 0
            terms[nt] = x
            nt += 1
        elif -x == newest + 1:
            newest += 1
            kinds[nk] = 1
            blens[nb] = off[newest + 1] - off[newest]
            nb += 1
            stk_r[sp] = newest
            stk_k[sp] = off[newest]
            sp += 1
        elif -x <= newest:
            kinds[nk] = 2
            refs[nf] = newest + x
            nf += 1
        else:
            ok = False
            break
        nk += 1
    return kinds[:nk], blens[:nb], terms[:nt], refs[:nf], ok and nb == nr - 1


@kernel
def preorder_decode(kinds, len_s, blens, terms, refs):  # type: ignore[no-untyped-def]
    """Inverse of preorder_encode -> (off, rhs); ok False if the streams are inconsistent."""
    nr = len(blens) + 1
    off = np.empty(nr + 1, np.int64)
    off[0] = 0
    off[1] = len_s
    for i in range(len(blens)):
        off[i + 2] = off[i + 1] + blens[i]
    rhs = np.empty(off[nr], np.int64)
    if len(kinds) != off[nr] or len_s < 0:
        return off, rhs, False
    stk_r = np.empty(nr + 1, np.int64)
    stk_k = np.empty(nr + 1, np.int64)
    stk_r[0] = 0
    stk_k[0] = 0
    sp = 1
    newest = nt = nf = 0
    for i in range(len(kinds)):
        while sp > 0 and stk_k[sp - 1] == off[stk_r[sp - 1] + 1]:
            sp -= 1
        if sp == 0:
            return off, rhs, False
        k = stk_k[sp - 1]
        stk_k[sp - 1] = k + 1
        kd = kinds[i]
        if kd == 0:
            if nt >= len(terms):
                return off, rhs, False
            rhs[k] = terms[nt]
            nt += 1
        elif kd == 1:
            newest += 1
            if newest >= nr or blens[newest - 1] < 2:
                return off, rhs, False
            rhs[k] = -newest
            stk_r[sp] = newest
            stk_k[sp] = off[newest]
            sp += 1
        else:
            if nf >= len(refs) or refs[nf] < 0 or refs[nf] >= newest:
                return off, rhs, False
            rhs[k] = -(newest - refs[nf])
            nf += 1
    return off, rhs, newest == nr - 1 and nt == len(terms) and nf == len(refs)


@kernel
def varint_encode(a):  # type: ignore[no-untyped-def]
    """LEB128 bytes of non-negative int64 values."""
    out = np.empty(len(a) * 10, np.uint8)
    j = 0
    for i in range(len(a)):
        x = np.uint64(a[i])
        while x >= 128:
            out[j] = np.uint8((x & np.uint64(127)) | np.uint64(128))
            x >>= np.uint64(7)
            j += 1
        out[j] = np.uint8(x)
        j += 1
    return out[:j].copy()


@kernel
def varint_decode(buf, n):  # type: ignore[no-untyped-def]
    """n values from LEB128 bytes -> (values, ok)."""
    out = np.empty(n, np.int64)
    j = 0
    for i in range(n):
        x = np.int64(0)
        shift = 0
        while True:
            if j >= len(buf) or shift > 56:
                return out, False
            b = np.int64(buf[j])
            j += 1
            x |= (b & 127) << shift
            shift += 7
            if b < 128:
                break
        out[i] = x
    return out, j == len(buf)
