"""The chain of invocations (outermost first) active at given positions of a stream."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from wholetrace.kernels import automaton_index as K
from wholetrace.match.cftrace import CompressedStream


def chains(cs: CompressedStream, positions: Sequence[int]) -> list[list[int]]:
    """For each position, the function ids of the invocations open there, outermost first
    (-1 for a level opened before the stream starts).  Reads one chunk per chunk touched."""
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    out: list[list[int]] = [[] for _ in positions]
    levels = cs.stats.dmax - cs.stats.dmin
    i = 0
    while i < len(order):
        c = positions[order[i]] // cs.chunk_events
        group = [order[i]]
        while i + len(group) < len(order) and positions[order[i + len(group)]] // cs.chunk_events == c:
            group.append(order[i + len(group)])
        i += len(group)
        lo, hi = int(cs.chunk_stack_off[c]), int(cs.chunk_stack_off[c + 1])
        fstack = np.full(levels + 1, -1, np.int32)
        fstack[: hi - lo] = cs.chunk_stack[lo:hi]
        pos = np.array([positions[j] for j in group], np.int64)
        off = np.zeros(len(group) + 1, np.int64)
        pool = np.empty(max(1, len(group) * levels), np.int32)
        served = K.caller_chains(cs.read_chunk(c), c * cs.chunk_events, fstack, cs.dmin + hi - lo, cs.dmin,
                                 pos, off, pool)
        for k in range(served):
            out[group[k]] = [int(f) for f in pool[off[k]:off[k + 1]]]
    return out
