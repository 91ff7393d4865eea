"""Grammar queries over flat rules: terminal occurrence counts, ranges of a rule's expansion, LCA counts of a sequence."""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel


@kernel
def terminal_counts(off, rhs, freq, n):  # type: ignore[no-untyped-def]
    """Occurrences of each terminal 0..n-1 in the expansion of S: Σ_R f(R) × its count in RHS(R)."""
    out = np.zeros(n, np.int64)
    for r in range(len(off) - 1):
        fr = freq[r]
        if fr == 0:
            continue
        for k in range(off[r], off[r + 1]):
            x = rhs[k]
            if x >= 0:
                out[x] += fr
    return out


@kernel
def expand_into(off, rhs, lens, r, a, b, out, st_r, st_k):  # type: ignore[no-untyped-def]
    """Write symbols ``a .. b-1`` of rule ``r``'s expansion to ``out[0 : b-a]``; returns how
    many were written.  ``st_r``/``st_k`` are scratch stacks (one entry per nesting level)."""
    m = b - a
    if m <= 0:
        return 0
    cur = r
    k = off[cur]
    skip = a
    sp = 0
    while True:  # descend to the terminal at offset a
        x = rhs[k]
        ln = 1 if x >= 0 else lens[-x]
        if skip >= ln:
            skip -= ln
            k += 1
            continue
        if x >= 0:
            break
        st_r[sp] = cur
        st_k[sp] = k + 1
        sp += 1
        cur = -x
        k = off[cur]
    n = 0
    while n < m:
        if k == off[cur + 1]:
            sp -= 1
            cur = st_r[sp]
            k = st_k[sp]
            continue
        x = rhs[k]
        k += 1
        if x >= 0:
            out[n] = x
            n += 1
        else:
            st_r[sp] = cur
            st_k[sp] = k
            sp += 1
            cur = -x
            k = off[cur]
    return n


@kernel
def lca_counts(off, rhs, lens, freq, order, seq, depth):  # type: ignore[no-untyped-def]
    """For every rule R: occurrences of ``seq`` in E(R) whose least common ancestor is R (they
    start in one item of RHS(R) and end in a later one; a single symbol: R's own terminals).
    Summed with weights f(R) this counts every occurrence in the expansion of S exactly once."""
    nr = len(off) - 1
    m = len(seq)
    local = np.zeros(nr, np.int64)
    if m == 0:
        return local
    if m == 1:
        for t in range(len(order)):
            r = order[t]
            for k in range(off[r], off[r + 1]):
                if rhs[k] == seq[0]:
                    local[r] += 1
        return local
    fail = np.zeros(m, np.int64)  # KMP failure function
    j = 0
    for i in range(1, m):
        while j > 0 and seq[i] != seq[j]:
            j = fail[j - 1]
        if seq[i] == seq[j]:
            j += 1
        fail[i] = j
    text = np.empty(2 * m, np.int64)
    st_r = np.empty(depth + 2, np.int64)
    st_k = np.empty(depth + 2, np.int64)
    for t in range(len(order)):
        r = order[t]
        if freq[r] == 0:
            continue
        for k in range(off[r], off[r + 1] - 1):
            x = rhs[k]
            ln = 1 if x >= 0 else lens[-x]
            a = min(ln, m - 1)
            if a == 0:
                continue
            if x >= 0:
                text[0] = x
            else:
                expand_into(off, rhs, lens, -x, ln - a, ln, text, st_r, st_k)
            n = a
            need = m - 1
            q = k + 1
            while need > 0 and q < off[r + 1]:
                y = rhs[q]
                if y >= 0:
                    text[n] = y
                    n += 1
                    need -= 1
                else:
                    take = min(lens[-y], need)
                    expand_into(off, rhs, lens, -y, 0, take, text[n:], st_r, st_k)
                    n += take
                    need -= take
                q += 1
            j = 0
            for i in range(n):
                while j > 0 and text[i] != seq[j]:
                    j = fail[j - 1]
                if text[i] == seq[j]:
                    j += 1
                if j == m:
                    if i - m + 1 < a:
                        local[r] += 1
                    j = fail[j - 1]
    return local
