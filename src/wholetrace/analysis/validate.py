"""Well-formedness of a block trace against the CFGs: balanced activations, valid blocks, real edges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from wholetrace.analysis.traceview import iter_events
from wholetrace.ids import ENTRY, EXIT
from wholetrace.instrument.cfg import CFG


@dataclass
class _Act:
    fid: int
    last: int = -1          # last block, -1 before the first
    after_exc: bool = False


def check_stream(chunks: Iterable[np.ndarray], cfgs: dict[int, CFG], *, complete: bool = True) -> list[str]:
    """Problems found in one stream (empty when well formed).

    Checks: every B is a block of the running function; consecutive blocks of an activation
    are joined by a CFG edge, or an EXC event came between them and the later one is a dynamic
    entry; an activation starts at ENTRY's successor (or, for a resumed generator, after a
    suspending block); a LEAVE without EXC follows a block with an edge to EXIT or a yield;
    with ``complete``, every ENTER has its LEAVE.
    """
    problems: list[str] = []
    succ = {f: {(e.src, e.dst) for e in c.edges} for f, c in cfgs.items()}
    resume_targets = {f: {e.dst for e in c.edges for s in c.blocks[e.src].stmts if c.stmts[s].suspends}
                      for f, c in cfgs.items()}
    stack: list[_Act] = []
    for i, (kind, v) in enumerate(iter_events(chunks)):
        if len(problems) > 20:
            break
        if kind == "F":
            if v not in cfgs:
                problems.append(f"event {i}: ENTER of unknown function {v}")
                return problems
            stack.append(_Act(v))
            continue
        if not stack:
            problems.append(f"event {i}: {kind} outside any activation")
            continue
        act = stack[-1]
        cfg = cfgs[act.fid]
        where = f"event {i} in {cfg.qualname}"
        if kind == "B":
            if not (2 <= v < len(cfg.blocks)):
                problems.append(f"{where}: block {v} does not exist")
                continue
            if act.after_exc:
                if not cfg.blocks[v].dynamic_entry:
                    problems.append(f"{where}: exception edge enters B{v}, not a handler/finally/with-exit")
            elif act.last == -1:
                if (ENTRY, v) not in succ[act.fid] and v not in resume_targets[act.fid]:
                    problems.append(f"{where}: activation starts at B{v}")
            elif (act.last, v) not in succ[act.fid]:
                problems.append(f"{where}: B{act.last} -> B{v} is not a CFG edge")
            act.last, act.after_exc = v, False
        elif kind == "X":
            if v >= len(cfg.stmts):
                problems.append(f"{where}: exception origin statement {v} does not exist")
            act.after_exc = True
        else:  # E
            stack.pop()
            if act.after_exc or act.last == -1:
                continue
            suspended = any(cfg.stmts[s].suspends for s in cfg.blocks[act.last].stmts)
            if (act.last, EXIT) not in succ[act.fid] and not suspended:
                problems.append(f"{where}: LEAVE after B{act.last}, which has no edge to EXIT")
    if complete and stack:
        problems.append(f"{len(stack)} activation(s) never left")
    return problems
