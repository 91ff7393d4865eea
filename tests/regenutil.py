"""Shared by the regeneration tests: read witness/branches recordings back as block streams and
compare them with a `blocks` recording of the same program (activation form, DESIGN.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wholetrace.analysis.activations import activation_form
from wholetrace.events import ENTER_BASE, EXC, LEAVE
from wholetrace.instrument.cfg import CFG
from wholetrace.regen.recording import as_blocks
from wholetrace.store import Recording

KINDS = ("witness", "branches")


def children_follow_calls(events: np.ndarray, cfgs: dict[int, CFG]) -> list[str]:
    """Child activations whose parent's last own event is not a call-capable block (only
    implicit calls may do that; a child after an exception record is not checked)."""
    problems: list[str] = []
    stack: list[tuple[int, list[int]]] = []
    vals = events.tolist()
    i = 0
    while i < len(vals):
        v = vals[i]
        i += 1
        if v <= -ENTER_BASE:
            if stack and stack[-1][1] and stack[-1][1][-1] >= 0:
                fid, own = stack[-1]
                cfg = cfgs[fid]
                if not any(cfg.stmts[s].calls for s in cfg.blocks[own[-1]].stmts) and len(problems) < 10:
                    problems.append(f"{cfg.qualname}: child {-v - ENTER_BASE} after block {own[-1]}")
            stack.append((-v - ENTER_BASE, []))
        elif v == LEAVE:
            if stack:
                stack.pop()
        elif v == EXC:
            if stack:
                stack[-1][1].append(EXC)
            i += 1
        elif stack:
            stack[-1][1].append(v)
    return problems


def streams_of(path: Path) -> tuple[str, list[np.ndarray], dict[int, CFG], int]:
    """(mode, the block streams (regenerated for witness/branches), CFGs, events recorded)."""
    with Recording(path) as rec:
        mode = str(rec.meta.get("mode"))
        view = as_blocks(rec)
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
        recorded = sum(s.n_events for s in rec.streams())
        return mode, [view.events(s.sid) for s in rec.streams()], cfgs, recorded


def compare(base: Path, other: Path, *, exact: bool) -> dict[str, int]:
    """Assert ``other`` (a witness/branches recording) regenerates ``base`` (blocks): the same
    activation form, and the same events unless an implicit call explains the difference
    (``exact``: the same events)."""
    mode_b, blocks, cfgs_b, n_blocks = streams_of(base)
    mode_o, regen, cfgs_o, n_other = streams_of(other)
    assert mode_b == "blocks" and mode_o in KINDS
    assert [c.fingerprint for _, c in sorted(cfgs_b.items())] == [c.fingerprint for _, c in sorted(cfgs_o.items())]
    assert len(blocks) == len(regen), "different number of streams"
    identical = 0
    for a, b in zip(blocks, regen):
        assert activation_form(a) == activation_form(b), f"{other.name}: activation forms differ"
        same = np.array_equal(a, b)
        identical += same
        if exact:
            assert same, f"{other.name}: regenerated stream differs from the blocks stream"
        elif not same:   # only a child started by an implicit call may sit elsewhere
            assert children_follow_calls(a, cfgs_b), f"{other.name}: streams differ without an implicit call"
    return {"blocks events": n_blocks, "recorded events": n_other, "identical streams": identical}
