"""Turn the user's FUNCTION and PATH words into a function id and a checked block path."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from wholetrace.errors import UsageError
from wholetrace.ids import FIRST_BLOCK
from wholetrace.instrument.cfg import CFG


def label(f: Any) -> str:
    """``qualname@file:firstline``, as `wholetrace trace` names a function."""
    return f"{f.qualname}@{f.file}:{f.firstline}"


def find_function(functions: Sequence[Any], spec: str) -> Any:
    """The registry entry named by ``spec``: a qualname (must be unique), ``qualname@file:line``
    or ``file:line`` (the line of the ``def``); the file may be given by any path suffix."""
    if "@" in spec:
        qual, _, where = spec.partition("@")
        hits = [f for f in _at(functions, where, spec) if f.qualname == qual]
    elif ":" in spec and spec.rpartition(":")[2].isdigit():
        hits = list(_at(functions, spec, spec))
    else:
        hits = [f for f in functions if f.qualname == spec]
    if not hits:
        raise UsageError(f"no function {spec!r} in the recording")
    if len(hits) > 1:
        names = ", ".join(label(f) for f in hits[:4]) + (", ..." if len(hits) > 4 else "")
        raise UsageError(f"function {spec!r} is ambiguous: {names}; name it as qualname@file:line")
    return hits[0]


def _at(functions: Sequence[Any], where: str, spec: str) -> list[Any]:
    file, _, line = where.rpartition(":")
    if not line.isdigit() or not file:
        raise UsageError(f"cannot read {spec!r}: expected qualname@FILE:LINE or FILE:LINE")
    n = int(line)
    exact = [f for f in functions if f.firstline == n and f.file == file]
    if exact:
        return exact
    want = os.path.normpath(file)
    return [f for f in functions if f.firstline == n and _suffix(os.path.normpath(f.file), want)]


def _suffix(path: str, tail: str) -> bool:
    return path == tail or path.endswith(os.sep + tail.lstrip(os.sep)) or os.path.abspath(tail) == path


def check_path(cfg: CFG, blocks: Sequence[int], name: str) -> tuple[int, ...]:
    """``blocks`` if it is a path of ``cfg``: real blocks, each step a CFG edge or an exception
    edge into a handler's first block (a dynamic entry)."""
    nblocks = len(cfg.blocks)
    for b in blocks:
        if not FIRST_BLOCK <= b < nblocks:
            raise UsageError(f"block {b} is not a block of {name} (its blocks are B{FIRST_BLOCK}..B{nblocks - 1})")
    edges = {(e.src, e.dst) for e in cfg.edges}
    for a, b in zip(blocks, blocks[1:]):
        if (a, b) not in edges and not cfg.blocks[b].dynamic_entry:
            raise UsageError(f"B{a} -> B{b} is not an edge of {name}: the path is not a path of its CFG")
    return tuple(int(b) for b in blocks)


def blocks_of_lines(cfg: CFG, lines: Sequence[int], name: str) -> tuple[int, ...]:
    """The block path meant by source ``lines``: each line stands for the blocks holding a
    statement that starts on it; consecutive lines in one block count once; of the block
    sequences this allows exactly one must be a path of the CFG."""
    cands: list[list[int]] = []
    for ln in lines:
        bs = sorted({s.block for s in cfg.stmts if s.line == ln and s.block >= FIRST_BLOCK})
        if not bs:
            raise UsageError(f"line {ln} holds no statement of {name} ({cfg.firstline}-{cfg.lastline})")
        cands.append(bs)
    edges = {(e.src, e.dst) for e in cfg.edges} | {(a, b.id) for b in cfg.blocks if b.dynamic_entry
                                                    for a in range(len(cfg.blocks))}
    paths: list[list[int]] = [[b] for b in cands[0]]
    for k in range(1, len(cands)):
        nxt = []
        for p in paths:
            for b in cands[k]:
                if b == p[-1] and lines[k] != lines[k - 1]:
                    nxt.append(p)
                elif (p[-1], b) in edges:
                    nxt.append(p + [b])
        paths = [list(x) for x in {tuple(p) for p in nxt}]
    if not paths:
        raise UsageError(f"lines {' '.join(map(str, lines))} are not a path of {name}'s CFG")
    if len(paths) > 1:
        shown = "; ".join(" ".join(f"B{b}" for b in p) for p in sorted(paths)[:3])
        raise UsageError(f"lines {' '.join(map(str, lines))} of {name} are ambiguous ({shown}); give block ids")
    return tuple(paths[0])
