"""Scheme 4 (path-matching paper, section 4.4, Fig. 10): S's right-hand side in segments with
an index; a segment the index does not mark for the function is skipped by its depths, and
summaries are built only for the rules reachable from marked segments (shared across them).

The skip and the marking are those of scheme 3 (corrected: the F symbol marks too); within a
marked segment items are applied through the scheme-2 summaries.
"""

from __future__ import annotations

import numpy as np

from wholetrace.match.cftrace import CompressedStream
from wholetrace.match.query import Query
from wholetrace.match.result import StreamResult, finish, scan_state
from wholetrace.match.scheme2 import Summaries


def run(cs: CompressedStream, q: Query, stop_first: bool, cap: int) -> StreamResult:
    """Occurrences of ``q``, folding only the segments marked for ``q.fid``; looking for the
    first one, summaries are built segment by segment up to the segment that holds it."""
    idx = cs.segments
    marked = idx.marked(q.fid)
    s = Summaries(cs.grammar, q)
    if not stop_first:
        for g in np.flatnonzero(marked).tolist():
            s.ensure(int(cs.seg_item[g]), int(cs.seg_item[g + 1]))
        return s.fold(cs, cs.seg_item, cs.seg_pos, idx.min_depth, idx.exit_depth, marked, False, cap, 4)
    stk, top = cs.new_stack()
    state = (stk, scan_state(top), np.empty(cap, np.int64))
    r = finish(cs.sid, state[1], state[2], 4)
    todo = np.flatnonzero(marked).tolist()
    done = 0
    for g in todo:
        s.ensure(int(cs.seg_item[g]), int(cs.seg_item[g + 1]))
        r = s.fold(cs, cs.seg_item[done:g + 2], cs.seg_pos[done:g + 2], idx.min_depth[done:g + 1],
                   idx.exit_depth[done:g + 1], marked[done:g + 1], True, cap, 4, state)
        done = g + 1
        if not r.complete:
            break
    return r
