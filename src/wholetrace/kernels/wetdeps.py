"""WET kernels: last-writer data dependences over an access log, and slicing over the dependence graph.

Data dependences follow Zhang and Gupta, "Whole Execution Traces and Their Applications",
ACM TACO 2(3), 2005, §2 (a use of a location depends on the instance that last defined it),
with whole-object accesses for Python containers (spec wet.md §6.4): a use of an element or
attribute ``(o, k)`` depends on the later of the last def of ``(o, k)`` and the last whole
def of ``o``; a use of the whole object depends on its last whole def and on every element
def since, gathered under one *merge* node so that each element def is merged once.

Class attributes (``wet/classes.py``): an ``NS`` access makes the last writer of a class
namespace entry the last writer of the attribute location in its ``fallback`` column, and a
use of an attribute location that was never defined follows ``up`` (instance -> class -> base)
to the nearest defined one.

Invariant: every dependence pair (use, def) has def < use for real instances (merge nodes
are numbered after every instance, ``n_inst + m``, and depend only on earlier instances).
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel

USE, DEF, WUSE, WDEF, NS = 0, 1, 2, 3, 4


@kernel
def data_deps(inst: np.ndarray, op: np.ndarray, loc: np.ndarray, fallback: np.ndarray,
              obj_of: np.ndarray, up: np.ndarray, n_loc: int,
              n_inst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(use instance, def instance, location, number of merge nodes) in log order.

    ``obj_of[l]`` is the whole-object location of an element/attribute location ``l``, else -1;
    ``fallback[a]`` is the instance a use with no def depends on (the call that bound a
    parameter), else -1, and for an ``NS`` access the attribute location it defines;
    ``up[l]`` is the location a use of a never-defined ``l`` falls back to, else -1.  Status:
    a location id outside ``[0, n_loc)`` is skipped."""
    n = inst.shape[0]
    cap = 2 * n + 1
    out_use = np.empty(cap, np.int64)
    out_def = np.empty(cap, np.int64)
    out_loc = np.empty(cap, np.int64)
    last = np.full(n_loc, -1, np.int64)
    wdef = np.full(n_loc, -1, np.int64)
    summ = np.full(n_loc, -1, np.int64)
    head = np.full(n_loc, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    k = 0
    m = 0
    for a in range(n):
        i = inst[a]
        l = loc[a]
        if l < 0 or l >= n_loc:
            continue
        o = op[a]
        if o == USE:
            d = last[l]
            if d < 0:                             # never defined: the class's attribute
                u = up[l]
                h = 0
                while u >= 0 and h < n_loc:
                    if last[u] >= 0:
                        if last[u] != i:
                            out_use[k] = i
                            out_def[k] = last[u]
                            out_loc[k] = u
                            k += 1
                        break
                    u = up[u]
                    h += 1
            w = obj_of[l]
            if w >= 0 and wdef[w] > d:
                d = wdef[w]
            if d < 0:
                d = fallback[a]
            if d >= 0 and d != i:
                out_use[k] = i
                out_def[k] = d
                out_loc[k] = l
                k += 1
        elif o == NS:
            t = fallback[a]
            if last[l] >= 0 and 0 <= t < n_loc:   # the entry's writer writes the attribute
                last[t] = last[l]
        elif o == DEF:
            last[l] = i
            w = obj_of[l]
            if w >= 0:
                nxt[a] = head[w]
                head[w] = a
        elif o == WUSE:
            d = summ[l]
            if head[l] >= 0:
                g = n_inst + m
                m += 1
                if d >= 0:
                    out_use[k] = g
                    out_def[k] = d
                    out_loc[k] = l
                    k += 1
                p = head[l]
                while p >= 0:
                    out_use[k] = g
                    out_def[k] = inst[p]
                    out_loc[k] = loc[p]
                    k += 1
                    p = nxt[p]
                head[l] = -1
                summ[l] = g
                d = g
            if d >= 0 and d != i:
                out_use[k] = i
                out_def[k] = d
                out_loc[k] = l
                k += 1
        elif o == WDEF:
            wdef[l] = i
            summ[l] = i
            last[l] = i
            head[l] = -1
    return out_use[:k], out_def[:k], out_loc[:k], m


@kernel
def closure(indptr: np.ndarray, targets: np.ndarray, start: np.ndarray, forward: bool,
            n_real: int) -> np.ndarray:
    """Nodes reachable from ``start`` over a CSR graph (``start`` included), as a bool mask.

    Ids are times, and a call instance spans its callees: it uses its callee's return value,
    defined later than the call starts.  So each node is reached with a time bound, the part of
    its execution that matters: backward, a *ceiling* (only what happened before it: a
    dependence ``d`` is followed only if ``d < ceiling``); forward, a *floor* (a dependent
    ``u`` is followed only if ``u > floor``, except the call that uses a return value, whose
    part after the return is then reached).  Forward, a node is visited again when its bound
    widens; backward, nodes are expanded in decreasing ceiling order (``_closure_back``), once.

    Nodes from ``n_real`` on are merge nodes (numbered after every instance, not by time):
    they are passed through, as if each use they stand for depended on each def they merge
    directly (a merge node takes the bound the real node before it gives)."""
    if not forward:
        return _closure_back(indptr, targets, start, n_real)
    n = indptr.shape[0] - 1
    big = np.int64(1) << 62
    bound = np.full(n, big, np.int64)
    cap = 2 * (n + start.shape[0]) + 16
    st_node = np.empty(cap, np.int64)
    st_bound = np.empty(cap, np.int64)
    top = 0
    for s in start:
        if 0 <= s < n:
            bound[s] = -1
            st_node[top] = s
            st_bound[top] = -1
            top += 1
    while top > 0:
        top -= 1
        v = st_node[top]
        c = st_bound[top]
        if c != bound[v]:
            continue                      # a wider bound was pushed since
        for e in range(indptr[v], indptr[v + 1]):
            t = targets[e]
            if t < 0 or t >= n:
                continue
            if t >= n_real:               # into a merge node: the floor of the def
                nb = c if v >= n_real else max(c, v)
            elif v >= n_real:             # out of a merge node: a later use
                if t <= c:
                    continue
                nb = c
            elif t > v:
                if t <= c:
                    continue
                nb = max(c, v)
            else:
                nb = v
            if nb >= bound[t]:
                continue
            bound[t] = nb
            if top == cap:
                st_node, st_bound, cap = _doubled(st_node, top), _doubled(st_bound, top), 2 * cap
            st_node[top] = t
            st_bound[top] = nb
            top += 1
    return bound < big


@kernel
def _doubled(a: np.ndarray, n: int) -> np.ndarray:
    """A copy of ``a`` twice as long, its first ``n`` items kept (a growing stack)."""
    b = np.empty(2 * a.shape[0], np.int64)
    b[:n] = a[:n]
    return b


@kernel
def _closure_back(indptr: np.ndarray, targets: np.ndarray, start: np.ndarray, n_real: int) -> np.ndarray:
    """The backward case of :func:`closure`, expanding each node once.

    A node passes on a ceiling no higher than its own (``min(c, v)`` or ``c``), so the final
    ceiling of a node is the widest bottleneck over the paths that reach it.  Expanding nodes
    in decreasing ceiling order (Dijkstra's order for bottleneck paths) finds it the first
    time a node is taken: what is taken later is no higher and cannot widen it.  Ceilings are
    node ids (or "none", kept as key ``n``), so the order is a bucket queue scanned from ``n``
    down: O(nodes + edges).  The depth-first order of the forward case re-expanded a node
    each time its ceiling widened, quadratic on long recordings."""
    n = indptr.shape[0] - 1
    big = np.int64(1) << 62
    bound = np.full(n, -2, np.int64)
    done = np.zeros(n, np.bool_)
    head = np.full(n + 1, -1, np.int64)           # bucket (ceiling, n = none) -> its last entry
    cap = 2 * start.shape[0] + 1024
    e_node = np.empty(cap, np.int64)
    e_next = np.empty(cap, np.int64)
    cnt = 0
    for s in start:
        if 0 <= s < n and bound[s] < big:
            bound[s] = big
            e_node[cnt] = s
            e_next[cnt] = head[n]
            head[n] = cnt
            cnt += 1
    cur = n
    while cur >= 0:
        p = head[cur]
        if p < 0:
            cur -= 1
            continue
        head[cur] = e_next[p]
        v = e_node[p]
        c = big if cur == n else np.int64(cur)
        if done[v] or bound[v] != c:
            continue                               # stale entry: v was raised or taken since
        done[v] = True
        for e in range(indptr[v], indptr[v + 1]):
            t = targets[e]
            if t < 0 or t >= n or done[t]:
                continue
            if t >= n_real:                        # into a merge node: the ceiling of the use
                nb = c if v >= n_real else min(c, v)
            else:
                if t >= c:
                    continue
                nb = min(c, v) if t < v else c
            if nb <= bound[t]:
                continue
            bound[t] = nb
            if cnt == cap:
                e_node, e_next, cap = _doubled(e_node, cnt), _doubled(e_next, cnt), 2 * cap
            key = n if nb == big else nb
            e_node[cnt] = t
            e_next[cnt] = head[key]
            head[key] = cnt
            cnt += 1
    return bound > -2


@kernel
def csr(srcs: tuple, dsts: tuple, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, targets) of the edges ``srcs[p][k] -> dsts[p][k]`` (parts p in order) over nodes
    ``[0, n)``, each node's targets in edge order: a counting sort, no concatenation of the
    parts.  Edges whose source is outside ``[0, n)`` are dropped."""
    indptr = np.zeros(n + 1, np.int64)
    for src in srcs:
        for k in range(src.shape[0]):
            s = src[k]
            if 0 <= s < n:
                indptr[s + 1] += 1
    for v in range(n):
        indptr[v + 1] += indptr[v]
    fill = indptr[:n].copy()
    targets = np.empty(indptr[n], np.int64)
    for p in range(len(srcs)):
        src = srcs[p]
        dst = dsts[p]
        for k in range(src.shape[0]):
            s = src[k]
            if 0 <= s < n:
                targets[fill[s]] = dst[k]
                fill[s] += 1
    return indptr, targets
