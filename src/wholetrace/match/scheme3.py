"""Scheme 3 (path-matching paper, section 4.3, Fig. 7): the symbol stream in zstd chunks; a
chunk the index does not mark for the function is skipped (an index unit may cover
``chunk_merge`` consecutive chunks), the others are decompressed and
scanned by the scheme-1 automaton.

Skip (corrected, shared/specs/matching.md 3.3): a chunk is marked iff it holds a block whose
innermost invocation is F *or an F symbol* (the paper's blocks-only bit skips a chunk that
ends right after entering F, leaving -1 where 0 belongs); skipping cuts the stack to the
chunk's minimum depth, entry included, and pads it with -1 levels to its exit depth.
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels import automaton as K
from wholetrace.match.cftrace import CompressedStream, UnitIndex
from wholetrace.match.query import Query
from wholetrace.match.result import StreamResult, finish, scan_state


def run(cs: CompressedStream, q: Query, stop_first: bool, cap: int) -> StreamResult:
    """Occurrences of ``q``, scanning only the chunks marked for ``q.fid``."""
    stk, top = cs.new_stack()
    st = scan_state(top)
    ends = np.empty(cap, np.int64)
    idx = cs.chunks
    base = 1 - cs.dmin
    m = cs.chunk_merge
    nchunks = -(-cs.n // cs.chunk_events)
    for u in np.flatnonzero(idx.marked(q.fid)).tolist() if idx.units else []:
        skip_to(stk, st, idx, u, base)
        for c in range(u * m, min(u * m + m, nchunks)):
            if st[K.S_STATUS] != K.ST_OK:
                break
            K.scan(cs.read_chunk(c), c * cs.chunk_events, stk, st, q.delta, q.col, q.fid, q.m, ends, stop_first)
        st[K.S_POS] = u + 1          # next unit to reach
        if st[K.S_STATUS] != K.ST_OK:
            break
    return finish(cs.sid, st, ends, 3)


def skip_to(stk: np.ndarray, st: np.ndarray, idx: UnitIndex, unit: int, base: int) -> None:
    """Skip the units from ``st[S_POS]`` up to ``unit`` (exclusive) by their index entries."""
    top = int(st[K.S_TOP])
    for u in range(int(st[K.S_POS]), unit):
        lo, hi = int(idx.min_depth[u]) + base, int(idx.exit_depth[u]) + base
        if lo < 1 or lo > top or hi > len(stk):
            st[K.S_STATUS] = K.ST_BAD
            return
        stk[lo:hi] = -1
        top = hi
    st[K.S_TOP] = top
