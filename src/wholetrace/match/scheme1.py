"""Scheme 1 (path-matching paper, section 4.1): expand the whole grammar and run the stack
automaton over every symbol.  O(|T|) time, O(max nesting) space; the baseline of the others."""

from __future__ import annotations

import numpy as np

from wholetrace.kernels import automaton as K
from wholetrace.match.cftrace import CompressedStream
from wholetrace.match.query import Query
from wholetrace.match.result import StreamResult, finish, scan_state


def run(cs: CompressedStream, q: Query, stop_first: bool, cap: int) -> StreamResult:
    """Occurrences of ``q`` in the stream: the count (unless stopped at the first) and at
    most ``cap`` end positions."""
    g = cs.grammar
    stk, top = cs.new_stack()
    st = scan_state(top)
    ends = np.empty(cap, np.int64)
    frames = g.depth() + 2
    K.scan_grammar(g.off, g.rhs, 0, g.start_length, stk, st, q.delta, q.col, q.fid, q.m, ends, stop_first,
                   np.empty(frames, np.int64), np.empty(frames, np.int64))
    return finish(cs.sid, st, ends, 1)
