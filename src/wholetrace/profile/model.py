"""Per-function counts (`FunctionProfile`) and what reports derive from them: line and branch counts.

Rules.  A line's count is the count of the first statement starting on it (within a
function the lowest statement id; across functions sharing a line, the statement with the
smallest column).  A *predicate* is a block with two or more static out-edges; its line is
the line of its last statement, and each out-edge is one branch, named by its edge kind,
or by its target's first line when kinds repeat (``"exit"`` for EXIT).  Dynamic exception
edges are not branches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from wholetrace.ids import ENTRY, EXIT
from wholetrace.trace.shape import FunctionShape

if TYPE_CHECKING:
    from wholetrace.instrument.cfg import CFG


@dataclass(eq=False)
class FunctionProfile:
    """Counts of one function (one code body): per block, per statement, per static edge
    (``edges[i]`` is edge ``i`` of the CFG; -1 where a mode does not measure it)."""

    shape: FunctionShape
    blocks: np.ndarray
    stmts: np.ndarray
    edges: np.ndarray
    source: str = ""                      # the function's source lines from ``firstline``
    activations: int | None = None        # ENTER events (generator resumptions included)

    fid = property(lambda self: self.shape.fid)
    file = property(lambda self: self.shape.file)
    qualname = property(lambda self: self.shape.qualname)
    firstline = property(lambda self: self.shape.firstline)
    lastline = property(lambda self: self.shape.lastline)
    kind = property(lambda self: self.shape.kind)

    @property
    def cfg(self) -> CFG:
        """The full CFG (built on first use)."""
        return self.shape.cfg

    @cached_property
    def calls(self) -> int:
        """Activations started: executions of ENTRY's out-edges (or ENTER events if none)."""
        started = int(self.edges[self.shape.edge_src == ENTRY].sum()) if self.shape.nedges else 0
        return started if started or self.activations is None else int(self.activations)

    @cached_property
    def weight(self) -> int:
        """Total block executions: how hot the function is."""
        return int(np.asarray(self.blocks).sum())


@dataclass(frozen=True)
class Branch:
    """One static out-edge of a predicate block with its count (``taken`` None: block never ran)."""

    line: int
    block: int
    index: int
    name: str
    taken: int | None


def first_stmts(p: FunctionProfile) -> dict[int, tuple[int, int]]:
    """line -> (column, statement id) of the function's first statement starting there."""
    first: dict[int, tuple[int, int]] = {}
    for sid, (line, col) in enumerate(zip(p.shape.stmt_line.tolist(), p.shape.stmt_col.tolist())):
        if line not in first:
            first[line] = (col, sid)
    return first


def line_counts(profiles: Iterable[FunctionProfile]) -> dict[str, dict[int, int]]:
    """file -> line -> count (the first statement starting on the line)."""
    best: dict[str, dict[int, tuple[int, int, int]]] = {}
    for p in profiles:
        per = best.setdefault(p.file, {})
        stmts = p.stmts
        for line, (col, sid) in first_stmts(p).items():
            cand = (col, p.fid, int(stmts[sid]))
            old = per.get(line)
            if old is None or cand[:2] < old[:2]:
                per[line] = cand
    return {f: {ln: c for ln, (_col, _fid, c) in sorted(per.items())} for f, per in best.items()}


def branches(p: FunctionProfile) -> list[Branch]:
    """Every branch of the function's predicate blocks, in block then edge order."""
    sh = p.shape
    found: list[Branch] = []
    outs_of = sh.out_edges
    kinds_of = sh.edge_kind
    for b, outs in enumerate(outs_of):
        if len(outs) < 2 or b == ENTRY or not sh.block_stmts[b]:
            continue
        line = int(sh.stmt_line[sh.block_stmts[b][-1]])
        kinds = Counter(kinds_of[i] for i in outs)
        names: Counter[str] = Counter()
        ran = int(p.blocks[b]) > 0
        for k, i in enumerate(outs):
            name = kinds_of[i]
            if kinds[name] > 1:
                dst = int(sh.edge_dst[i])
                first = sh.block_stmts[dst]
                name = "exit" if dst == EXIT else str(int(sh.stmt_line[first[0]])) if first else str(dst)
            taken = int(p.edges[i])
            if taken < 0:
                continue   # not measured (count-naive counts blocks only)
            names[name] += 1
            if names[name] > 1:
                name = f"{name}#{names[name]}"
            found.append(Branch(line, b, k, name, taken if ran else None))
    return found


def branch_counts(profiles: Iterable[FunctionProfile]) -> dict[str, dict[int, dict[str, int]]]:
    """file -> predicate line -> branch name -> count."""
    out: dict[str, dict[int, dict[str, int]]] = {}
    for p in profiles:
        per = out.setdefault(p.file, {})
        for br in branches(p):
            slot = per.setdefault(br.line, {})
            name = br.name if br.name not in slot else f"{br.name}@{p.qualname}"
            slot[name] = br.taken or 0
    return {f: dict(sorted(per.items())) for f, per in out.items() if per}


def hottest(profiles: Iterable[FunctionProfile]) -> list[FunctionProfile]:
    """Hottest first (most block executions), then by file, first line and name."""
    return sorted(profiles, key=lambda p: (-p.weight, p.file, p.firstline, p.qualname))


def by_key(profiles: Sequence[FunctionProfile]) -> dict[tuple[str, str, int], FunctionProfile]:
    """Profiles keyed by (file, qualname, first line): the same function across recordings."""
    return {(p.file, p.qualname, p.firstline): p for p in profiles}
