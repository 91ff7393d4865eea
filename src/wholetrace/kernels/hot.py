"""Minimal hot subpaths on a grammar DAG in O(E·L): postorder, prefix/suffix windows (Larus 1999, Fig. 7)."""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel

ST_OK = 0
ST_CYCLE = 1
ST_FULL = 2


@kernel
def postorder(off, rhs, all_rules):  # type: ignore[no-untyped-def]
    """Rules reachable from S (rule 0; with ``all_rules``, then every other rule too), each
    after the rules it uses (a depth-first postorder); ST_CYCLE if a rule derives itself."""
    nr = len(off) - 1
    state = np.zeros(nr, np.int8)  # 0 unseen, 1 on the stack, 2 done
    order = np.empty(nr, np.int64)
    st_r = np.empty(nr, np.int64)
    st_k = np.empty(nr, np.int64)
    n = 0
    for root in range(nr if all_rules else 1):
        if state[root] != 0:
            continue
        st_r[0] = root
        st_k[0] = off[root]
        sp = 1
        state[root] = 1
        while sp > 0:
            r = st_r[sp - 1]
            k = st_k[sp - 1]
            if k == off[r + 1]:
                sp -= 1
                state[r] = 2
                order[n] = r
                n += 1
                continue
            st_k[sp - 1] = k + 1
            x = rhs[k]
            if x < 0:
                c = -x
                if state[c] == 1:
                    return order[:0], ST_CYCLE
                if state[c] == 0:
                    state[c] = 1
                    st_r[sp] = c
                    st_k[sp] = off[c]
                    sp += 1
    return order[:n], ST_OK


@kernel
def peak_live(off, rhs, order):  # type: ignore[no-untyped-def]
    """References to each rule from the rules of ``order``, and the most rules whose prefix and
    suffix must be kept at once when rules are visited in ``order`` and freed after last use."""
    nr = len(off) - 1
    refs = np.zeros(nr, np.int64)
    for t in range(len(order)):
        r = order[t]
        for k in range(off[r], off[r + 1]):
            if rhs[k] < 0:
                refs[-rhs[k]] += 1
    left = refs.copy()
    live = 0
    peak = 0
    for t in range(len(order)):
        r = order[t]
        live += 1
        if live > peak:
            peak = live
        for k in range(off[r], off[r + 1]):
            if rhs[k] < 0:
                c = -rhs[k]
                left[c] -= 1
                if left[c] == 0:
                    live -= 1
    return refs, peak


@kernel(nrt=False)
def hot_scan(off, rhs, lens, freq, cost, order, refs, min_len, max_len, min_cost,  # type: ignore[no-untyped-def]
             pre, suf, free, slot, plen, sstart, left, win, reps, soff, syms):
    """Report the minimal hot subpaths of every rule in ``order`` (children before parents).

    Each rule R scans its right-hand side with a window of its last <= L symbols: its own
    terminals, and for each child C the part of C's expansion before any subpath reported
    inside C (C's prefix, at most L symbols).  A window of at least ``min_len`` symbols whose
    cost times f(R) reaches ``min_cost`` is reported and the window restarts.  After a child
    whose prefix does not cover it, the window becomes C's suffix (the symbols after the last
    subpath reported inside C, at most L), minus what R itself reported already.  R's prefix
    stops at its first report or at such a child, and never reaches into a report (fix iv).

    Working arrays come from the caller (nothing is allocated): ``pre``/``suf`` hold one
    prefix and one suffix row of L symbols per live rule (``peak_live`` rows), ``free`` the
    free rows, ``slot``/``plen``/``sstart``/``left`` one entry per rule, ``win`` L symbols.
    Report i goes to ``reps[i] = (rule, start offset in E(rule), length, cost)`` and its
    symbols to ``syms[soff[i]:soff[i+1]]``.  Returns (reports, ST_OK) or, when ``reps`` or
    ``syms`` is full, (reports so far, ST_FULL): the caller enlarges them and runs again.
    On return ``plen``/``sstart`` hold every rule's prefix length and suffix start.
    """
    L = max_len
    npk = len(free)
    for i in range(npk):
        free[i] = npk - 1 - i
    nfree = npk
    for r in range(len(left)):
        left[r] = refs[r]
        slot[r] = -1
        plen[r] = 0
        sstart[r] = 0
    cap = len(reps)
    scap = len(syms)
    nrep = 0
    soff[0] = 0
    for t in range(len(order)):
        r = order[t]
        nfree -= 1
        sr = free[nfree]
        slot[r] = sr
        fr = freq[r]
        head = 0
        cnt = 0
        wcost = 0
        pl = 0
        frozen = False
        pos = 0
        for k in range(off[r], off[r + 1]):
            x = rhs[k]
            c = -1
            n_sym = 1
            if x < 0:
                c = -x
                n_sym = plen[c]
            t0 = pos
            for o in range(n_sym):
                y = x if c < 0 else pre[slot[c], o]
                if not frozen and pl < L:
                    pre[sr, pl] = y
                    pl += 1
                if cnt == L:  # slide: drop the oldest symbol
                    wcost -= cost[win[head]]
                    head += 1
                    if head == L:
                        head = 0
                    cnt -= 1
                j = head + cnt
                if j >= L:
                    j -= L
                win[j] = y
                cnt += 1
                wcost += cost[y]
                if cnt >= min_len and wcost * fr >= min_cost:
                    base = soff[nrep]
                    if nrep == cap or base + cnt > scap:
                        return nrep, ST_FULL
                    j = head
                    for q in range(cnt):
                        syms[base + q] = win[j]
                        j += 1
                        if j == L:
                            j = 0
                    reps[nrep, 0] = r
                    reps[nrep, 1] = pos - cnt + 1
                    reps[nrep, 2] = cnt
                    reps[nrep, 3] = wcost * fr
                    soff[nrep + 1] = base + cnt
                    nrep += 1
                    # the prefix stops before the reported subpath (fix ii), even when a
                    # non-covering child froze it already (fix iv): after such a child the
                    # window restarts from the child's suffix, which can overlap the prefix
                    if pos - cnt + 1 < pl:
                        pl = pos - cnt + 1
                    frozen = True
                    head = 0
                    cnt = 0
                    wcost = 0
                pos += 1
            if c >= 0:
                if plen[c] < lens[c]:  # C does not cover: continue from its suffix
                    wstart = pos - cnt
                    snew = t0 + sstart[c]
                    if wstart > snew:  # fix (iii): never take back what R reported inside C
                        snew = wstart
                    pos = t0 + lens[c]
                    cnt = pos - snew
                    sc = slot[c]
                    slen = lens[c] - sstart[c]
                    head = 0
                    wcost = 0
                    for q in range(cnt):
                        y = suf[sc, slen - cnt + q]
                        win[q] = y
                        wcost += cost[y]
                    frozen = True  # fix (i)
                left[c] -= 1
                if left[c] == 0:
                    free[nfree] = slot[c]
                    nfree += 1
        plen[r] = pl
        sstart[r] = pos - cnt
        if pl < lens[r]:  # keep the suffix for the parents
            j = head
            for q in range(cnt):
                suf[sr, q] = win[j]
                j += 1
                if j == L:
                    j = 0
    return nrep, ST_OK
