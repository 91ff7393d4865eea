"""Every edge and block count of many functions from their chord counters, in one kernel (flow conservation).

Knuth and Stevenson, "Optimal measurement points for program frequency counts", BIT 13
(1973), and Ball and Larus, "Optimally profiling and tracing programs", ACM TOPLAS 16(4)
(1994): counting the edges off a spanning tree of the control-flow graph (closed by a
virtual EXIT -> ENTRY edge) determines every other edge count, because at each node the
inflow equals the outflow.  Invariant: a node with one unknown incident tree edge fixes
that edge's count; peeling such leaves solves the whole tree when the unknown edges form
a spanning tree.

The Python twin is ``profile.propagate.propagate_counts`` (one function, dicts); this
kernel runs it over the concatenated graphs of every function of a recording, the status
of each function telling what went wrong (``ST_*``), never raising.
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel

#: Per function status.
ST_OK, ST_CYCLE, ST_UNBALANCED, ST_NEGATIVE = 0, 1, 2, 3
#: Columns of ``fn``: first node (global), nodes, first edge (global), edges.
FN_NBASE, FN_NB, FN_EBASE, FN_NE = 0, 1, 2, 3
ENTRY, EXIT = 0, 1


@kernel
def propagate_chords(fn: np.ndarray, src: np.ndarray, dst: np.ndarray, known: np.ndarray, balance: np.ndarray,
                     edges: np.ndarray, nodes: np.ndarray, acts: np.ndarray, status: np.ndarray) -> None:
    """For each function ``f`` (row of ``fn``): ``known[e] >= 0`` is a chord's count, ``-1`` a
    tree edge's; ``balance`` holds the measured extra edges' inflow less outflow per node
    (global ids; updated in place).  Fills ``edges`` (every edge's count), ``nodes``
    (inflow of static edges, plus the activations at ENTRY), ``acts`` and ``status``."""
    max_nb, max_ne = 1, 1
    for f in range(fn.shape[0]):
        max_nb = max(max_nb, fn[f, FN_NB])
        max_ne = max(max_ne, fn[f, FN_NE] + 1)
    deg = np.zeros(max_nb, np.int64)
    start = np.zeros(max_nb + 1, np.int64)
    adj = np.zeros(2 * max_ne, np.int64)
    fill = np.zeros(max_nb, np.int64)
    solved = np.zeros(max_ne, np.bool_)
    queue = np.zeros(2 * max_nb + 2, np.int64)
    for f in range(fn.shape[0]):
        nb0, nb, e0, ne = fn[f, FN_NBASE], fn[f, FN_NB], fn[f, FN_EBASE], fn[f, FN_NE]
        for e in range(e0, e0 + ne):          # chords' counts into the balance
            c = known[e]
            if c >= 0:
                balance[nb0 + dst[e]] += c
                balance[nb0 + src[e]] -= c
        for v in range(nb):
            deg[v] = 0
        ntree = 0
        for e in range(e0, e0 + ne):
            if known[e] < 0:
                deg[src[e]] += 1
                deg[dst[e]] += 1
                ntree += 1
        deg[EXIT] += 1                        # the virtual EXIT -> ENTRY edge (local id ne)
        deg[ENTRY] += 1
        start[0] = 0
        for v in range(nb):
            start[v + 1] = start[v] + deg[v]
            fill[v] = start[v]
        for e in range(e0, e0 + ne):
            if known[e] < 0:
                adj[fill[src[e]]] = e - e0
                fill[src[e]] += 1
                adj[fill[dst[e]]] = e - e0
                fill[dst[e]] += 1
        adj[fill[EXIT]] = ne
        fill[EXIT] += 1
        adj[fill[ENTRY]] = ne
        fill[ENTRY] += 1
        for e in range(ne + 1):
            solved[e] = False
        head, tail = 0, 0
        for v in range(nb):
            if deg[v] == 1:
                queue[tail] = v
                tail += 1
        nsolved = 0
        act = 0
        while head < tail:
            v = queue[head]
            head += 1
            if deg[v] != 1:
                continue
            t = -1
            for k in range(start[v], start[v + 1]):
                if not solved[adj[k]]:
                    t = adj[k]
                    break
            if t == ne:
                s, d = EXIT, ENTRY
            else:
                s, d = src[e0 + t], dst[e0 + t]
            count = -balance[nb0 + v] if d == v else balance[nb0 + v]
            solved[t] = True
            nsolved += 1
            if t == ne:
                act = count
            else:
                edges[e0 + t] = count
            balance[nb0 + s] -= count
            balance[nb0 + d] += count
            deg[s] -= 1
            deg[d] -= 1
            other = s if d == v else d
            if deg[other] == 1:
                queue[tail] = other
                tail += 1
        if nsolved != ntree + 1:
            status[f] = ST_CYCLE
            continue
        bad = False
        for v in range(nb):
            if balance[nb0 + v] != 0:
                bad = True
        if bad:
            status[f] = ST_UNBALANCED
            continue
        negative = act < 0
        for e in range(e0, e0 + ne):
            if known[e] < 0 and edges[e] < 0:
                negative = True
        if negative:
            status[f] = ST_NEGATIVE
            continue
        for e in range(e0, e0 + ne):
            if known[e] >= 0:
                edges[e] = known[e]
            nodes[nb0 + dst[e]] += edges[e]
        nodes[nb0 + ENTRY] += act
        acts[f] = act
        status[f] = ST_OK
