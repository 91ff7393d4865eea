"""The line and branch rows of every function of a report, built in bulk (numpy columns, not one object per line).

Reports list every function, those that never ran at zero.  A function that ran brings its
parsed shape (``trace.shape``); one that never ran is an `Idle` summary whose lines and
branches come from the recording's stored facts (``trace.facts``) when it has them, else
from its CFG (parsed here, all such functions in one batch).  The rules are those of
``profile.model``: a line's count is its first statement's (across functions sharing the
line, the lowest column, then the lowest function id); a branch is an out-edge of a
predicate block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np

from wholetrace.profile.model import FunctionProfile, Idle
from wholetrace.trace.facts import branch_name

if TYPE_CHECKING:
    from wholetrace.trace.shape import FunctionShape

Entry = Union[FunctionProfile, Idle]


@dataclass
class ReportRows:
    """Columns of one report.  ``files`` by index; lines: one row per (file, line), by file
    then line; branches: one row per measured branch, by entry, block and edge (``taken``
    -1: its block never ran; ``names`` unique within their block, as ``model.branches``)."""

    files: list[str]
    line_file: np.ndarray
    line_no: np.ndarray
    line_count: np.ndarray
    br_file: np.ndarray
    br_pos: np.ndarray            # index of the entry the branch belongs to
    br_block: np.ndarray
    br_index: np.ndarray
    br_line: np.ndarray
    br_taken: np.ndarray
    names: list[str]


def _idle_shapes(idle: list[Idle]) -> list[FunctionShape]:
    from wholetrace.trace.shape import parse_shapes

    return parse_shapes([(e.fid, e.info.cfg, e.file, e.qualname) for e in idle]) if idle else []


def take(arrays: list[np.ndarray], index: np.ndarray, sizes: list[int]) -> np.ndarray:
    """``arrays[k][index[part k]]`` of every k, as one int64 array, where ``index`` is the
    concatenation of parts of ``sizes`` (one gather instead of one per function)."""
    if not arrays:
        return np.zeros(0, np.int64)
    lengths = np.fromiter(map(len, arrays), np.int64, len(arrays))
    base = np.cumsum(lengths) - lengths
    return np.concatenate(arrays).astype(np.int64, copy=False)[np.repeat(base, sizes) + index]


def report_rows(entries: Sequence[Entry]) -> ReportRows:
    """The rows of ``entries`` (in their order; see the module doc)."""
    files: dict[str, int] = {}
    file_of = np.array([files.setdefault(e.file, len(files)) for e in entries], np.int64)
    # (entry index, shape, stmt counts, edge counts, block counts) of everything with a shape
    shaped: list[tuple[int, FunctionShape, np.ndarray | None, np.ndarray | None, np.ndarray | None]] = []
    stored: dict[int, int] = {}                  # fid -> entry index, for facts read from the file
    facts = None
    unparsed: list[tuple[int, Idle]] = []
    for i, e in enumerate(entries):
        if isinstance(e, FunctionProfile):
            shaped.append((i, e.shape, e.stmts, e.edges, e.blocks))
        elif e.facts is not None and e.facts.has(e.fid) and (facts is None or e.facts is facts):
            facts = e.facts
            stored[e.fid] = i
        else:
            unparsed.append((i, e))
    for (i, _e), sh in zip(unparsed, _idle_shapes([e for _i, e in unparsed])):
        shaped.append((i, sh, None, None, None))
    shaped.sort(key=lambda t: t[0])

    # lines: (entry, line, column, fid, count) of each function's first statement per line;
    # branches: (entry, block, index, line, shown count, count): columns gathered, joined once
    # (counts of an idle function's shape: zeros, its branches' blocks never ran)
    l_pos, l_fid, l_rows, l_stmts = [], [], [], []
    for i, sh, stmts, _edges, _blocks in shaped:
        lf = sh.line_first
        if lf.shape[1]:
            l_pos.append(i)
            l_fid.append(sh.fid)
            l_rows.append(lf)
            l_stmts.append(stmts if stmts is not None else np.zeros(sh.nstmts, np.int64))
    lparts, bparts = [], []
    if l_rows:
        lf = np.concatenate(l_rows, axis=1)
        sizes = [r.shape[1] for r in l_rows]
        lparts.append(np.stack([np.repeat(l_pos, sizes), lf[0], lf[2], np.repeat(l_fid, sizes),
                                take(l_stmts, lf[1], sizes)]))
    gathered = _gather_branches([(i, sh, edges, blocks) for i, sh, _s, edges, blocks in shaped])
    names: list[str] = []
    if gathered is not None:
        owner, br, taken, ran, names = gathered
        bparts.append(np.stack([owner, br[0], br[1], br[2], np.where(ran, taken, np.minimum(taken, -1)), taken]))
    if stored:
        fids = np.fromiter(stored, np.int64, len(stored))
        pos = np.full(len(facts.covered), -1, np.int64)  # type: ignore[union-attr]
        pos[fids] = np.fromiter(stored.values(), np.int64, len(stored))
        ln = facts.lines  # type: ignore[union-attr]
        ln = ln[:, pos[ln[0]] >= 0]
        lparts.append(np.stack([pos[ln[0]], ln[1], ln[3], ln[0], np.zeros(ln.shape[1], np.int64)]))
        br = facts.branches  # type: ignore[union-attr]
        br = br[:, pos[br[0]] >= 0]
        zero = np.zeros(br.shape[1], np.int64)
        bparts.append(np.stack([pos[br[0]], br[1], br[2], br[3], zero - 1, zero]))
        codes, which = np.unique(br[5], return_inverse=True)
        table = [branch_name(c) for c in codes.tolist()]
        names += [table[j] for j in which.tolist()]
    # lines: per (file, line) the row of lowest column, then lowest fid
    if lparts:
        pos, line, col, fid, count = np.concatenate(lparts, axis=1)
        file = file_of[pos]
        order = np.lexsort((fid, col, line, file))
        f, lno = file[order], line[order]
        first = np.ones(len(order), bool)
        first[1:] = (f[1:] != f[:-1]) | (lno[1:] != lno[:-1])
        pick = order[first]
        line_file, line_no, line_count = file[pick], line[pick], count[pick]
    else:
        line_file = line_no = line_count = np.zeros(0, np.int64)
    # branches: by entry, then as each function lists them; unmeasured edges (count < 0) left out
    if bparts:
        rows = np.concatenate(bparts, axis=1)
        order = np.argsort(rows[0], kind="stable")
        order = order[rows[5, order] >= 0]
        pos, block, index, line, shown, _raw = rows[:, order]
        names = [names[j] for j in order.tolist()]
    else:
        pos = block = index = line = shown = np.zeros(0, np.int64)
    return ReportRows(list(files), line_file, line_no, line_count, file_of[pos], pos, block, index, line,
                      shown, _unique_in_block(pos, block, names))


@dataclass
class BranchRows:
    """The measured branches of some profiles, by profile (``pos``: its index), block and
    edge: line, shown count (-1: its block never ran), name (unique within its block)."""

    pos: np.ndarray
    line: np.ndarray
    taken: np.ndarray
    names: list[str]


def branch_rows(profiles: Sequence[FunctionProfile]) -> BranchRows:
    """The branches of ``profiles`` (what ``model.branches`` lists for each), as columns."""
    gathered = _gather_branches([(i, p.shape, np.asarray(p.edges), np.asarray(p.blocks))
                                 for i, p in enumerate(profiles)])
    if gathered is None:
        zero = np.zeros(0, np.int64)
        return BranchRows(zero, zero, zero, [])
    owner, br, taken, ran, names = gathered
    keep = np.flatnonzero(taken >= 0)               # unmeasured edges (count-naive) left out
    if len(keep) < len(taken):
        names = [names[j] for j in keep.tolist()]
    owner, block, line = owner[keep], br[0][keep], br[2][keep]
    shown = np.where(ran[keep], taken[keep], -1)
    return BranchRows(owner, line, shown, _unique_in_block(owner, block, names))


def _gather_branches(items: Sequence[tuple[int, FunctionShape, np.ndarray | None, np.ndarray | None]]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]] | None:
    """Every branch row of ``items`` (position, shape, edge counts, block counts; counts None:
    zeros) as columns: owner position, the shapes' rows joined, edge count, whether its block
    ran, names.  None when no item has a branch."""
    pos, rows, edge_n, block_n = [], [], [], []
    names: list[str] = []
    for i, sh, edges, blocks in items:
        br = sh.branch_rows
        if br.shape[1]:
            pos.append(i)
            rows.append(br)
            edge_n.append(edges if edges is not None else np.zeros(sh.nedges, np.int64))
            block_n.append(blocks if blocks is not None else np.zeros(sh.nblocks, np.int64))
            names += sh.branch_names
    if not rows:
        return None
    sizes = [r.shape[1] for r in rows]
    br = np.concatenate(rows, axis=1)
    owner = np.repeat(np.array(pos, np.int64), sizes)
    return owner, br, take(edge_n, br[3], sizes), take(block_n, br[0], sizes) > 0, names


def _unique_in_block(pos: np.ndarray, block: np.ndarray, names: list[str]) -> list[str]:
    """A name repeated at one block gets ``#2``, ``#3``, ... (only where some block repeats one)."""
    if not names:
        return names
    key = pos * (int(block.max()) + 1) + block
    codes: dict[str, int] = {}
    code = np.array([codes.setdefault(n, len(codes)) for n in names], np.int64)
    pair = key * len(codes) + code
    _, inverse, times = np.unique(pair, return_inverse=True, return_counts=True)
    repeated = np.flatnonzero(times[inverse] > 1)
    if not repeated.size:
        return names
    out = list(names)
    seen: dict[tuple[int, str], int] = {}
    for j in repeated.tolist():
        k = (int(key[j]), names[j])
        seen[k] = seen.get(k, 0) + 1
        if seen[k] > 1:
            out[j] = f"{names[j]}#{seen[k]}"
    return out
