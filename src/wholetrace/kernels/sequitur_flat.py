"""Numba kernels over a flat grammar (``off``/``rhs``): order, lengths, frequencies,
range expansion and the storage streams of ``grammar.encoding``."""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel

_U = np.uint64  # unsigned indices: numba adds no negative-index wrap-around (docs/design-sequitur.md)


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
    lo = off[_U(r)]
    hi = off[_U(r + 1)] - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if pos[_U(mid)] <= t:
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
    skip = i - pos[_U(k)]
    ks[0] = k
    ends[0] = off[1]
    sp = 1
    w = 0
    while w < n:
        top = sp - 1
        k = ks[_U(top)]
        if k == ends[_U(top)]:
            sp -= 1
            continue
        ks[_U(top)] = k + 1
        x = rhs[_U(k)]
        if x >= 0:
            out[_U(w)] = x
            w += 1
        else:
            c = -x
            k2 = _locate(off, pos, c, skip)
            skip -= pos[_U(k2)]
            ks[_U(sp)] = k2
            ends[_U(sp)] = off[_U(c + 1)]
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
