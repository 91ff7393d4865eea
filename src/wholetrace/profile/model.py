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
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from wholetrace.ids import ENTRY
from wholetrace.trace.shape import FunctionShape

if TYPE_CHECKING:
    from wholetrace.instrument.cfg import CFG
    from wholetrace.store.reader import FunctionInfo
    from wholetrace.trace.facts import StoredFacts


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
    source_lines: tuple[list[str], int, int] | None = field(default=None, repr=False, compare=False)  # FunctionInfo's

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


class Idle:
    """A function that never ran, summed up from its registry row alone (its CFG is not
    parsed): what reports list for it (no block, call, line or branch counts)."""

    calls = 0
    weight = 0

    def __init__(self, info: FunctionInfo, facts: StoredFacts | None = None) -> None:
        self.info = info
        self.facts = facts        # the recording's stored lines and branches, if it has them

    fid = property(lambda self: self.info.fid)
    file = property(lambda self: self.info.file)
    qualname = property(lambda self: self.info.qualname)
    firstline = property(lambda self: self.info.firstline)
    lastline = property(lambda self: self.info.lastline)
    source = property(lambda self: self.info.source)

    @property
    def kind(self) -> str:
        """``function``, ``module``, ...: from the registry header (older rows: from the CFG)."""
        kind = self.info.kind
        return str(self.info.cfg.get("kind")) if kind is None else kind

    @property
    def nlines(self) -> int:
        return self.lastline - self.firstline + 1

    def __repr__(self) -> str:
        return f"Idle({self.fid}, {self.qualname!r})"


def ran(p: FunctionProfile | Idle) -> bool:
    """Whether a function ran (a profile of zero counts did not: reports list it as `Idle`)."""
    return not isinstance(p, Idle) and (p.weight > 0 or p.calls > 0)


def summary(p: FunctionProfile | Idle) -> Idle:
    """The `Idle` summary of a function that never ran."""
    if isinstance(p, Idle):
        return p
    from wholetrace.store.reader import FunctionInfo

    return Idle(FunctionInfo(p.fid, p.file, p.qualname, p.firstline, p.lastline, p.source, "", kind=p.kind))


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
    lines, sids, cols = p.shape.line_first.tolist()
    return dict(zip(lines, zip(cols, sids)))


def line_counts(profiles: Iterable[FunctionProfile]) -> dict[str, dict[int, int]]:
    """file -> line -> count (the first statement starting on the line)."""
    files: dict[str, int] = {}
    parts = []
    for p in profiles:
        lf = p.shape.line_first
        fi = files.setdefault(p.file, len(files))
        if lf.shape[1]:
            n = lf.shape[1]
            parts.append(np.stack([np.full(n, fi), lf[0], lf[2], np.full(n, p.fid),
                                   np.asarray(p.stmts, np.int64)[lf[1]]]))
    out: dict[str, dict[int, int]] = {f: {} for f in files}
    if not parts:
        return out
    file, line, col, fid, count = np.concatenate(parts, axis=1)
    order = np.lexsort((fid, col, line, file))
    f, ln = file[order], line[order]
    first = np.ones(len(order), bool)
    first[1:] = (f[1:] != f[:-1]) | (ln[1:] != ln[:-1])
    pick = order[first]
    names = list(files)
    bounds = np.searchsorted(file[pick], np.arange(len(names) + 1))
    lines, counts = line[pick].tolist(), count[pick].tolist()
    for i, name in enumerate(names):
        out[name] = dict(zip(lines[bounds[i]:bounds[i + 1]], counts[bounds[i]:bounds[i + 1]]))
    return out


def branches(p: FunctionProfile) -> list[Branch]:
    """Every branch of the function's predicate blocks, in block then edge order (an edge
    count below 0 means not measured: that edge is left out)."""
    rows = p.shape.branch_rows
    if not rows.shape[1]:
        return []
    block, index, line, eid = rows
    taken = np.asarray(p.edges)[eid].tolist()
    ran = (np.asarray(p.blocks)[block] > 0).tolist()
    found: list[Branch] = []
    names: Counter[str] = Counter()
    last = -1
    for j, (b, k, ln, name) in enumerate(zip(block.tolist(), index.tolist(), line.tolist(), p.shape.branch_names)):
        if taken[j] < 0:
            continue   # not measured (count-naive counts blocks only)
        if b != last:
            names.clear()
            last = b
        names[name] += 1
        if names[name] > 1:
            name = f"{name}#{names[name]}"
        found.append(Branch(ln, b, k, name, taken[j] if ran[j] else None))
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
