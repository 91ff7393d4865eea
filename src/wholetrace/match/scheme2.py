"""Scheme 2 (path-matching paper, section 4.2, Figs. 4-5): match on the grammar itself.

Every rule gets a summary composed bottom-up from its children's, then S is folded over a
concrete stack item by item (Fig. 5).  The paper's flags (prefix, suffix, internal, fentry,
fexit, freturn, foccur) are replaced by the stack-transformer summary of
shared/specs/matching.md 3.2, because Fig. 4 cannot express a level entered inside a rule
(a new invocation), treats a leaf as matching without its context, and tries the Y|Z
straddle before Z's own occurrences.  In the paper's terms ``fentry = d + 1`` and
``fexit = d + 1 + (pushed levels - d)``.  Invariant: applying a rule's summary to any stack
gives the stack, and adds the count, that scheme 1 gives on the rule's expansion.
"""

from __future__ import annotations

import numpy as np

from wholetrace.errors import InternalError
from wholetrace.grammar import Grammar
from wholetrace.kernels import automaton_summary as K
from wholetrace.match.cftrace import CompressedStream
from wholetrace.match.query import Query
from wholetrace.match.result import StreamResult, finish, scan_state


class Summaries:
    """The per-rule summaries of one grammar for one query, built on demand (arrays only)."""

    def __init__(self, grammar: Grammar, q: Query) -> None:
        self.g = grammar
        self.q = q
        nr = len(grammar.off) - 1
        self.state = np.zeros(nr, np.int8)
        self.d = np.zeros(nr, np.int64)
        self.plen = np.zeros(nr, np.int64)
        self.len = np.zeros(nr, np.int64)
        self.toff = np.zeros(nr, np.int64)
        self.poff = np.zeros(nr, np.int64)
        self.cnt = np.zeros(nr, np.int64)
        self.order = np.empty(nr, np.int64)
        out, cnt = q.leaf_transfers()
        self.leaf = np.arange(1, len(out), dtype=np.int64)     # column c -> transfer 1 + c
        self.t_out = out
        self.t_cnt = cnt
        self.tails = np.empty(1024, np.int64)
        self.push = np.empty(1024, np.int32)
        self.acc_tails = np.empty(64, np.int64)
        self.acc_push = np.empty(64, np.int32)
        self.meta = np.zeros(K.META_SIZE, np.int64)
        self.meta[K.M_NTRANS] = len(out)
        depth = grammar.depth() + 2
        self.frame_rule = np.empty(depth, np.int64)
        self.frame_k = np.empty(depth, np.int64)
        self._need = np.zeros(5, np.int64)

    def ensure(self, lo: int, hi: int) -> None:
        """Summarise every rule reachable from items ``lo..hi-1`` of S that has none yet."""
        g = self.g
        n = K.collect(g.off, g.rhs, lo, hi, self.state, self.d, self.plen, self.len, self.order,
                      self.frame_rule, self.frame_k, self._need)
        need = self._need
        if need[0] < 0:
            raise InternalError("grammar deeper than its depth() says")
        if n == 0:
            return
        self.tails = _room(self.tails, int(self.meta[K.M_NTAILS] + need[0]))
        self.push = _room(self.push, int(self.meta[K.M_NPUSH] + need[1]))
        rows = int(self.meta[K.M_NTRANS] + need[2])
        if rows > len(self.t_out):
            size = max(rows, len(self.t_out) * 3 // 2)
            self.t_out = np.resize(self.t_out, (size, self.q.m + 1))
            self.t_cnt = np.resize(self.t_cnt, (size, self.q.m + 1))
        self.acc_tails = _room(self.acc_tails, int(need[3]))
        self.acc_push = _room(self.acc_push, int(need[4]))
        bad = K.summarize(g.off, g.rhs, self.order, n, self.state, self.d, self.plen, self.toff, self.poff,
                          self.cnt, self.tails, self.push, self.t_out, self.t_cnt, self.meta, self.leaf,
                          self.q.col, self.q.fid, self.q.m, self.acc_tails, self.acc_push)
        if bad:
            raise InternalError("a rule's summary disagrees with its structure (corrupt grammar)")

    def fold(self, cs: CompressedStream, seg_item: np.ndarray, seg_pos: np.ndarray, seg_min: np.ndarray,
             seg_exit: np.ndarray, marked: np.ndarray, stop_first: bool, cap: int, scheme: int,
             state: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> StreamResult:
        """Apply S segment by segment (unmarked ones skipped by the index), from the stream's
        start or from ``state`` (stack, scan state, ends buffer) left by an earlier fold of the
        segments before; count, and collect at most ``cap`` end positions."""
        if state is None:
            stk, top = cs.new_stack()
            state = (stk, scan_state(top), np.empty(cap, np.int64))
        stk, st, ends = state
        q = self.q
        K.fold(self.g.off, self.g.rhs, seg_item, seg_pos, seg_min, seg_exit, marked, cs.dmin, stk, st,
               self.d, self.plen, self.len, self.toff, self.poff, self.cnt, self.tails, self.push, self.t_out,
               self.t_cnt, q.delta, q.col, q.fid, q.m, ends, stop_first, self.frame_rule, self.frame_k)
        return finish(cs.sid, st, ends, scheme)

    def nbytes(self) -> int:
        """Memory held by the summaries built so far."""
        used = int(self.meta[K.M_NTRANS])
        return int(used * (self.q.m + 1) * 12 + self.meta[K.M_NTAILS] * 8 + self.meta[K.M_NPUSH] * 4
                   + int((self.state == K.R_DONE).sum()) * 48)


def _room(a: np.ndarray, n: int) -> np.ndarray:
    return a if n <= len(a) else np.resize(a, max(n, len(a) * 3 // 2))


def run(cs: CompressedStream, q: Query, stop_first: bool, cap: int) -> StreamResult:
    """Occurrences of ``q``: summaries of every rule, then one fold over S."""
    s = Summaries(cs.grammar, q)
    n_items = cs.grammar.start_length
    s.ensure(0, n_items)
    one = np.array([0, n_items], np.int64)
    zero = np.zeros(1, np.int64)
    return s.fold(cs, one, np.array([0, cs.n], np.int64), zero, zero, np.ones(1, np.bool_), stop_first, cap, 2)
