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
from wholetrace.match.result import StreamResult
from wholetrace.match.scheme2 import Summaries


def run(cs: CompressedStream, q: Query, stop_first: bool, cap: int) -> StreamResult:
    """Occurrences of ``q``, folding only the segments marked for ``q.fid``."""
    marked = cs.segments.marked(q.fid)
    s = Summaries(cs.grammar, q)
    for g in np.flatnonzero(marked).tolist():
        s.ensure(int(cs.seg_item[g]), int(cs.seg_item[g + 1]))
    idx = cs.segments
    return s.fold(cs, cs.seg_item, cs.seg_pos, idx.min_depth, idx.exit_depth, marked, stop_first, cap, 4)
