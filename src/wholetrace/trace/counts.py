"""Execution counts from decoded rows: block, edge and activation counts are `np.bincount`s.

A block runs once per row entering it (a static or an exception edge).  A statement runs
as often as its block, less the exceptions that left the block before it: an exception
edge whose origin statement lies in the block it leaves cuts the statements after that
origin (the rule of docs/design.md, "Exception edges").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wholetrace.kernels import decode as K
from wholetrace.trace.decode import Rows
from wholetrace.trace.shape import FunctionShape
from wholetrace.trace.tables import Tables


def _grown(acc: np.ndarray, size: int) -> np.ndarray:
    """``acc`` with room for ``size`` rows (doubled: the tables grow one function at a time)."""
    if len(acc) >= size:
        return acc
    out = np.zeros(max(size, 2 * len(acc)), np.int64)
    out[:len(acc)] = acc
    return out


@dataclass
class Tally:
    """Running counts over the rows of any number of streams, in the tables' flat layout."""

    tables: Tables
    block: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))   # per table block row
    edge: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))    # per table edge row
    cut: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))     # per statement row: exceptions it started
    enters: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per function: ENTER events

    def fit(self) -> None:
        """Grow the histograms to cover every table row loaded so far."""
        t = self.tables
        self.block = _grown(self.block, t.blk.n)
        self.edge = _grown(self.edge, t.edg.n)
        self.cut = _grown(self.cut, t.stm.n)
        self.enters = _grown(self.enters, len(t.fn))

    def add(self, rows: Rows) -> None:
        t = self.tables
        self.fit()
        K.tally(rows.data, len(rows), t.fn, t.stm.a, self.block, self.edge, self.cut, self.enters)

    # -- per function
    def blocks_of(self, sh: FunctionShape) -> np.ndarray:
        """Executions of each block of ``sh`` (ENTRY and EXIT count 0)."""
        return self._slice(self.block, K.FN_BBASE, sh.fid, sh.nblocks)

    def edges_of(self, sh: FunctionShape) -> np.ndarray:
        return self._slice(self.edge, K.FN_EBASE, sh.fid, sh.nedges)

    def stmts_of(self, sh: FunctionShape, blocks: np.ndarray | None = None) -> np.ndarray:
        """Executions of each statement of ``sh`` (its block's count less the exceptions that
        left the block before it)."""
        b = self.blocks_of(sh) if blocks is None else blocks
        live = sh.stmt_block >= 0
        out = np.where(live, b[np.where(live, sh.stmt_block, 0)], 0).astype(np.int64)
        _cut_short(sh, out, self._slice(self.cut, K.FN_SBASE, sh.fid, sh.nstmts))
        return out

    def stmt_counts(self) -> np.ndarray:
        """:meth:`stmts_of` of every loaded function at once, in the tables' statement rows
        (a function's statements are rows ``fn[fid, FN_SBASE]`` on; see :meth:`piece`)."""
        self.fit()
        t, fn = self.tables, self.tables.fn
        loaded = np.flatnonzero(fn[:, K.FN_READY] == 1)
        ns = fn[loaded, K.FN_NS]
        owner = np.repeat(loaded, ns)                    # the function of each statement row
        rows = np.repeat(fn[loaded, K.FN_SBASE], ns) + (np.arange(int(ns.sum())) - np.repeat(np.cumsum(ns) - ns, ns))
        sb = t.stm.a[rows].astype(np.int64)
        live = sb >= 0
        out = np.zeros(t.stm.n, np.int64)
        out[rows] = np.where(live, self.block[fn[owner, K.FN_BBASE] + np.where(live, sb, 0)], 0)
        for fid in np.unique(owner[self.cut[rows] > 0]).tolist():   # exceptions cut blocks short: rare
            sh = t.shapes[fid]
            lo = int(fn[fid, K.FN_SBASE])
            _cut_short(sh, out[lo:lo + sh.nstmts], self.cut[lo:lo + sh.nstmts])
        return out

    def piece(self, per_stmt: np.ndarray, sh: FunctionShape) -> np.ndarray:
        """Function ``sh``'s part of an array over the tables' statement rows (a view)."""
        return self._slice(per_stmt, K.FN_SBASE, sh.fid, sh.nstmts, copy=False)

    def per_function(self, shapes: list[FunctionShape], per_stmt: np.ndarray) -> list[tuple[np.ndarray, ...]]:
        """(blocks, statements, edges) of each of ``shapes`` (loaded functions): views of one
        copy of the block and edge counts and of ``per_stmt`` (:meth:`stmt_counts`), sliced
        with offsets read once (as :meth:`blocks_of`, :meth:`piece`, :meth:`edges_of`)."""
        self.fit()
        fn = self.tables.fn
        fids = np.array([sh.fid for sh in shapes], np.int64)
        if len(fids) and ((fids >= len(fn)) | (fn[np.minimum(fids, len(fn) - 1), K.FN_READY] != 1)).any():
            return [(self.blocks_of(sh), self.piece(per_stmt, sh), self.edges_of(sh)) for sh in shapes]
        block, edge = self.block.copy(), self.edge.copy()
        rows = fn[fids]
        out = []
        for b0, nb, s0, ns, e0, ne in zip(rows[:, K.FN_BBASE].tolist(), rows[:, K.FN_NB].tolist(),
                                          rows[:, K.FN_SBASE].tolist(), rows[:, K.FN_NS].tolist(),
                                          rows[:, K.FN_EBASE].tolist(), rows[:, K.FN_NE].tolist()):
            out.append((block[b0:b0 + nb], per_stmt[s0:s0 + ns], edge[e0:e0 + ne]))
        return out

    def activations_of(self, fid: int) -> int:
        return int(self.enters[fid]) if fid < len(self.enters) else 0

    def _slice(self, acc: np.ndarray, base: int, fid: int, n: int, *, copy: bool = True) -> np.ndarray:
        fn = self.tables.fn
        if fid >= len(fn) or fn[fid, K.FN_READY] != 1:
            return np.zeros(n, np.int64)
        lo = int(fn[fid, base])
        part = acc[lo:lo + n]
        if len(part) != n:
            return np.concatenate([part, np.zeros(n - len(part), np.int64)])
        return part.copy() if copy else part


def _cut_short(sh: FunctionShape, out: np.ndarray, started: np.ndarray) -> None:
    """Subtract from each statement of ``out`` the exceptions started by earlier statements of its block."""
    if started.any():
        for stmts in sh.block_stmts:
            run = 0
            for s in stmts:
                out[s] -= run
                run += int(started[s])
