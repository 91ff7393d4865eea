"""The Ball-Larus path profile of a `path` recording, counted from its WPP's grammar frequencies without expanding it.

Each full path is one terminal (``p``, or ``LEAVE_PATH + p`` when it returns; fused terminals are
split first, ``wpp.view.split_view``), so its count is the terminal's occurrence count (Σ_R f(R) × its count in RHS(R), ``wpp.queries.terminal_counts``).
The values after an exception record are operands, not paths (``EXC s r [H]``, ``RERAISE s x r
[H]``, ``events``): the records are counted as grams, a marker with its next four terminals at
their least common ancestor (``wpp.queries.marker_grams``), their operands are taken off the
path counts, and each register ``r`` counts one truncated path.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from wholetrace.errors import UsageError
from wholetrace.wpp.meaning import LEAVE_PATH, RERAISE_CODE, path_blocks, statement_lines, truncated_blocks
from wholetrace.wpp.queries import marker_grams, terminal_counts
from wholetrace.wpp.symbols import EXC, PATH
from wholetrace.wpp.view import WppView, split_view

#: Terminals after a marker read as its record: EXC s r H; RERAISE s x r H.
GRAM = 4


@dataclass(frozen=True)
class PathCount:
    """Path ``pid`` of function ``fid`` ran ``count`` times (``truncated``: cut short by an exception)."""

    fid: int
    pid: int
    truncated: bool
    blocks: tuple[int, ...]
    count: int


def path_profile(view: WppView) -> list[PathCount]:
    """Every path that ran in any stream of a `path` recording, with its count."""
    if view.symbol_kind != "path":
        raise UsageError(f"`paths` needs a path recording (record --mode path); this {view.mode} recording "
                         "has no path ids (`wholetrace hot` works on it)")
    view = split_view(view)      # fused ENTER_PATH/ENTER_CHAIN terminals (wave 10): their paths are PATH terminals
    t = view.terminals
    counts = np.zeros(len(t), np.int64)
    truncated: dict[tuple[int, int, tuple[int, ...]], int] = defaultdict(int)
    is_path = (t.kind == PATH) & (t.fid >= 0)
    markers = (t.kind == EXC) | ((t.fid < 0) & (t.value == RERAISE_CODE))
    for s in view.streams:
        counts += terminal_counts(s.grammar, len(t))[: len(t)]
        grams, weights = marker_grams(s.grammar, markers, GRAM)
        for row, w in zip(grams.tolist(), weights.tolist()):
            _take_record(view, row, int(w), counts, truncated)
    out = []
    for x in np.flatnonzero(is_path & (counts > 0)):
        f, v = int(t.fid[x]), int(t.value[x])
        if view.numbering(f) is None:
            continue   # a function recorded with block ids: no paths
        found = path_blocks(view, f, v)
        if found is not None:
            out.append(PathCount(f, found[1], False, found[0], int(counts[x])))
    merged: dict[tuple[int, int, bool, tuple[int, ...]], int] = defaultdict(int)
    for p in out:
        merged[p.fid, p.pid, p.truncated, p.blocks] += p.count    # p and LEAVE_PATH + p are one path
    for (f, pid, blocks), n in truncated.items():
        merged[f, pid, True, blocks] += n
    return [PathCount(f, pid, tr, blocks, n) for (f, pid, tr, blocks), n in merged.items() if n > 0]


def _take_record(view: WppView, row: list[int], w: int, counts: np.ndarray,
                 truncated: dict[tuple[int, int, tuple[int, ...]], int]) -> None:
    """Count one exception record (a gram of ``view.terminals`` ids, -1 past the end)."""
    t = view.terminals
    head = row[0]
    reraise = int(t.kind[head]) != EXC
    ops = row[1:]
    if not reraise:
        f, stmt = int(t.fid[head]), int(t.value[head])
        if f not in view.cfgs or view.numbering(f) is None:
            return    # a function recorded with block ids: EXC s then the handler's block, as in blocks mode
        reg_at, raised = 0, -1
    else:
        if ops[0] < 0 or int(t.kind[ops[0]]) != PATH:
            return
        f, stmt = int(t.fid[ops[0]]), int(t.value[ops[0]])
        if f not in view.cfgs or view.numbering(f) is None:
            return
        for o in ops[:2]:          # s and x
            if o >= 0:
                counts[o] -= w
        reg_at = 2
        raised = int(t.value[ops[1]]) if ops[1] >= 0 and int(t.kind[ops[1]]) == PATH else -1   # x: where it left
    r = ops[reg_at]
    if r < 0 or int(t.kind[r]) != PATH or int(t.fid[r]) != f:
        return
    counts[r] -= w
    cut = truncated_blocks(view, f, int(t.value[r]), stmt, raised)
    if cut is not None:
        truncated[f, cut[1], cut[0]] += w
    h = ops[reg_at + 1] if reg_at + 1 < len(ops) else -1
    if h >= 0 and int(t.kind[h]) == PATH and int(t.fid[h]) == f and int(t.value[h]) < LEAVE_PATH:
        counts[h] -= w           # the handler block H: the next path starts there


def paths_json(view: WppView, profile: list[PathCount], *, function: str | None = None,
               limit: int = 10) -> list[dict[str, Any]]:
    """Per function (most paths run first): ``{"function", "file", "count", "distinct", "paths":
    [{"id", "count", "blocks", "lines", "truncated", "next"}]}``, at most ``limit`` paths each (0: all),
    most frequent first; ``lines`` has the source line of every statement on the path, in order."""
    by_fn: dict[int, list[PathCount]] = defaultdict(list)
    for p in profile:
        if function is None or function in view.cfgs[p.fid].qualname:
            by_fn[p.fid].append(p)
    if function is not None and not by_fn:
        raise UsageError(f"{view.path}: no function matching {function!r} ran a path")
    out = []
    for f, ps in by_fn.items():
        ps.sort(key=lambda p: (-p.count, p.truncated, p.pid))
        shown = ps if limit <= 0 else ps[:limit]
        num = view.numbering(f)
        out.append({"function": view.cfgs[f].qualname, "file": view.files.get(f, ""),
                    "count": sum(p.count for p in ps), "distinct": len(ps),
                    "paths": [{"id": p.pid, "count": p.count, "blocks": list(p.blocks),
                               "lines": statement_lines(view, f, p.blocks), "truncated": p.truncated,
                               "next": _next(num, p)}
                              for p in shown]})
    out.sort(key=lambda fn: (-fn["count"], fn["function"]))
    return out


def _next(num: Any, p: PathCount) -> int | None:
    """Where the activation goes on after path ``p``: the block its cut enters, or None (it
    returns, or an exception cut it short)."""
    if num is None or p.truncated:
        return None
    end = num.decode(p.pid).end
    return int(num.graph.edges[end][1]) if end >= 0 else None
