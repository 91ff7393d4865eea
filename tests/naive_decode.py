"""Slow reference twins of the decoding kernel, written as plain Python walks over raw events.

* ``raw_events``: the F/B/X/E reading of an event stream (no CFG needed).
* ``activation_form``: each activation's own events and child count, in preorder.
* ``count_events``: block, statement, edge and ENTER counts of `blocks` streams with a stack
  of (function, last block): the logic of the former ``kernels/tracecount.count_blocks`` and
  ``profile/report.trace_edge_counts``.  A resumed generator continues from a suspended
  ``yield`` block (the lowest-numbered one holding a suspended activation) with an edge to the
  block it records next; a resumption that leaves without a block and without a child took
  such a block's edge to EXIT (and that suspension is used up).
* ``check_stream``: well-formedness of a `blocks` stream against the CFGs (the former
  ``analysis/validate.check_stream``).
The witness regenerator's twin is ``wholetrace.regen.driver.regenerate_stream``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from wholetrace.events import ENTER_BASE, EXC, LEAVE
from wholetrace.ids import ENTRY, EXIT
from wholetrace.instrument.cfg import CFG

Activation = tuple[int, tuple[int, ...], int]


def raw_events(chunks: Iterable[np.ndarray]) -> Iterator[tuple[str, int]]:
    """("F", fid) / ("B", block) / ("X", stmt) / ("E", 0), across chunk edges."""
    pending_exc = False
    for chunk in chunks:
        for v in np.asarray(chunk).tolist():
            if pending_exc:
                pending_exc = False
                yield "X", v
            elif v >= 0:
                yield "B", v
            elif v == LEAVE:
                yield "E", 0
            elif v == EXC:
                pending_exc = True
            elif v <= -ENTER_BASE:
                yield "F", -v - ENTER_BASE
            else:
                raise ValueError(f"unknown event code {v}")


def activation_form(events: np.ndarray) -> list[Activation]:
    """Every activation as (fid, its own blocks and ``EXC s`` records, number of children),
    in preorder; entry 0 (fid -1) collects whatever lies outside any activation."""
    acts: list[list] = [[-1, [], 0]]
    stack = [0]
    vals = np.asarray(events).tolist()
    i = 0
    while i < len(vals):
        v = vals[i]
        i += 1
        if v <= -ENTER_BASE:
            acts[stack[-1]][2] += 1
            stack.append(len(acts))
            acts.append([-v - ENTER_BASE, [], 0])
        elif v == LEAVE:
            if len(stack) > 1:
                stack.pop()
        elif v == EXC:
            acts[stack[-1]][1] += [EXC, vals[i] if i < len(vals) else -1]
            i += 1
        else:
            acts[stack[-1]][1].append(v)
    return [(f, tuple(own), n) for f, own, n in acts]


def count_events(streams: Iterable[np.ndarray], cfgs: dict[int, CFG]) -> dict[int, tuple[np.ndarray, ...]]:
    """fid -> (block counts, statement counts, edge counts, ENTER count) of `blocks` streams."""
    index = {f: {(int(e.src), int(e.dst)): i for i, e in enumerate(c.edges)} for f, c in cfgs.items()}
    susp = {f: sorted(b.id for b in c.blocks if any(c.stmts[s].suspends for s in b.stmts)) for f, c in cfgs.items()}
    blocks = {f: np.zeros(len(c.blocks), np.int64) for f, c in cfgs.items()}
    edges = {f: np.zeros(len(c.edges), np.int64) for f, c in cfgs.items()}
    cut = {f: np.zeros(len(c.stmts), np.int64) for f, c in cfgs.items()}
    enters = {f: 0 for f in cfgs}
    pool: dict[tuple[int, int], int] = {}

    def resume(f: int, v: int, pooled: bool) -> int | None:
        for y in susp[f]:
            if (not pooled or pool.get((f, y), 0) > 0) and (y, v) in index[f]:
                if pooled:
                    pool[(f, y)] -= 1
                return y
        return None

    for ev in streams:
        stack: list[list] = []       # [fid, last block | None, after EXC, had a child]
        vals = np.asarray(ev).tolist()
        i = 0
        while i < len(vals):
            v = vals[i]
            i += 1
            if v <= -ENTER_BASE:
                if stack:
                    stack[-1][3] = True
                f = -v - ENTER_BASE
                enters[f] += 1
                stack.append([f, None, False, False])
            elif v == EXC:
                s = vals[i] if i < len(vals) else -1
                i += 1
                fr = stack[-1]
                f, cfg = fr[0], cfgs[fr[0]]
                if fr[1] is None and cfg.is_generator and s >= 0:
                    y = cfg.stmts[s].block          # thrown in at a suspended yield
                    if y in susp[f]:
                        if pool.get((f, y), 0) > 0:
                            pool[(f, y)] -= 1
                        fr[1] = y
                last = fr[1]
                if s >= 0 and last is not None and cfg.stmts[s].block == last:
                    blk = cfg.blocks[last].stmts
                    for t in blk[blk.index(s) + 1:]:
                        cut[f][t] += 1
                fr[2] = True
            elif v == LEAVE:
                f, last, exc, child = stack.pop()
                if exc:
                    continue
                if last is None:
                    if cfgs[f].is_generator:
                        y = resume(f, EXIT, True) if not child else None
                        if y is not None:
                            edges[f][index[f][(y, EXIT)]] += 1
                    elif (ENTRY, EXIT) in index[f]:
                        edges[f][index[f][(ENTRY, EXIT)]] += 1
                elif last in susp[f]:
                    pool[(f, last)] = pool.get((f, last), 0) + 1
                elif (last, EXIT) in index[f]:
                    edges[f][index[f][(last, EXIT)]] += 1
            else:
                fr = stack[-1]
                f, last = fr[0], fr[1]
                blocks[f][v] += 1
                if fr[2]:
                    fr[2] = False
                elif last is None:
                    src = resume(f, v, True) if cfgs[f].is_generator else None
                    if src is None and (ENTRY, v) in index[f]:
                        src = ENTRY
                    if src is None and cfgs[f].is_generator:
                        src = resume(f, v, False)
                    if src is not None:
                        edges[f][index[f][(src, v)]] += 1
                elif (last, v) in index[f]:
                    edges[f][index[f][(last, v)]] += 1
                fr[1] = v
    out = {}
    for f, cfg in cfgs.items():
        st = np.array([blocks[f][s.block] if s.block >= 0 else 0 for s in cfg.stmts], np.int64) - cut[f]
        out[f] = (blocks[f], st, edges[f], enters[f])
    return out


def check_stream(chunks: Iterable[np.ndarray], cfgs: dict[int, CFG], *, complete: bool = True) -> list[str]:
    """Problems found in one `blocks` stream (empty when well formed): every B is a block of
    the running function; consecutive blocks of an activation are joined by a CFG edge, or
    an EXC came between them and the later one is a dynamic entry; an activation starts at
    ENTRY's successor (or, for a resumed generator, after a suspending block); a LEAVE
    without EXC follows a block with an edge to EXIT or a yield; with ``complete``, every
    ENTER has its LEAVE."""
    problems: list[str] = []
    succ = {f: {(e.src, e.dst) for e in c.edges} for f, c in cfgs.items()}
    resume_targets = {f: {e.dst for e in c.edges for s in c.blocks[e.src].stmts if c.stmts[s].suspends}
                      for f, c in cfgs.items()}
    stack: list[list] = []         # [fid, last block, after EXC]
    for i, (kind, v) in enumerate(raw_events(chunks)):
        if len(problems) > 20:
            break
        if kind == "F":
            if v not in cfgs:
                problems.append(f"event {i}: ENTER of unknown function {v}")
                return problems
            stack.append([v, -1, False])
            continue
        if not stack:
            problems.append(f"event {i}: {kind} outside any activation")
            continue
        act = stack[-1]
        cfg = cfgs[act[0]]
        where = f"event {i} in {cfg.qualname}"
        if kind == "B":
            if not (2 <= v < len(cfg.blocks)):
                problems.append(f"{where}: block {v} does not exist")
                continue
            if act[2]:
                if not cfg.blocks[v].dynamic_entry:
                    problems.append(f"{where}: exception edge enters B{v}, not a handler/finally/with-exit")
            elif act[1] == -1:
                if (ENTRY, v) not in succ[act[0]] and v not in resume_targets[act[0]]:
                    problems.append(f"{where}: activation starts at B{v}")
            elif (act[1], v) not in succ[act[0]]:
                problems.append(f"{where}: B{act[1]} -> B{v} is not a CFG edge")
            act[1], act[2] = v, False
        elif kind == "X":
            if v >= len(cfg.stmts):
                problems.append(f"{where}: exception origin statement {v} does not exist")
            act[2] = True
        else:  # E
            stack.pop()
            if act[2] or act[1] == -1:
                continue
            suspended = any(cfg.stmts[s].suspends for s in cfg.blocks[act[1]].stmts)
            if (act[1], EXIT) not in succ[act[0]] and not suspended:
                problems.append(f"{where}: LEAVE after B{act[1]}, which has no edge to EXIT")
    if complete and stack:
        problems.append(f"{len(stack)} activation(s) never left")
    return problems
