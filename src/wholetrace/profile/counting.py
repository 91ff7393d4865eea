"""Exact counts from a `count` / `count-naive` recording: chord counters propagated over the CFG."""

from __future__ import annotations

from typing import Any

import numpy as np

from wholetrace.errors import InternalError, StoreError
from wholetrace.ids import EXIT
from wholetrace.instrument.cfg import CFG
from wholetrace.instrument.flowgraph import from_cfg
from wholetrace.instrument.placement import CounterPlacement
from wholetrace.profile.propagate import ExtraEdge, propagate_counts
from wholetrace.profile.report import FunctionProfile

UNKNOWN = -1


def _extras(cfg: CFG, exc: list[tuple[int, int, int]], early: list[int]) -> tuple[list[ExtraEdge], np.ndarray]:
    """Exception and early-exit edges as measured extra edges, and the statements they cut short."""
    cut = np.zeros(len(cfg.stmts), np.int64)
    extra: list[ExtraEdge] = []
    for src, dst, n in exc + [(s, EXIT, 1) for s in early]:
        if not 0 <= src < len(cfg.stmts) or cfg.stmts[src].block < 0:
            raise InternalError(f"{cfg.qualname}: exception edge from unknown statement {src}")
        blk = cfg.stmts[src].block
        extra.append(ExtraEdge(blk, dst, n))
        stmts = cfg.blocks[blk].stmts
        for later in stmts[stmts.index(src) + 1:]:
            cut[later] += n
    return extra, cut


def _complete_edges(cfg: CFG, blocks: np.ndarray, edges: np.ndarray, extra: list[ExtraEdge]) -> None:
    """Fill unknown edge counts where a block has exactly one unknown out-edge (flow conservation)."""
    out_extra = np.zeros(len(cfg.blocks), np.int64)
    for x in extra:
        out_extra[x.src] += x.count
    changed = True
    while changed:
        changed = False
        for b in range(2, len(cfg.blocks)):
            outs = [i for i, e in enumerate(cfg.edges) if e.src == b]
            unknown = [i for i in outs if edges[i] == UNKNOWN]
            if len(unknown) == 1:
                known = sum(int(edges[i]) for i in outs if edges[i] != UNKNOWN)
                edges[unknown[0]] = max(int(blocks[b]) - known - int(out_extra[b]), 0)
                changed = True
    for i, e in enumerate(cfg.edges):   # ENTRY's edge: the activations that started
        if e.src == 0 and edges[i] == UNKNOWN and len([x for x in cfg.edges if x.src == 0]) == 1:
            others = [int(edges[j]) for j, f in enumerate(cfg.edges) if f.dst == e.dst and j != i]
            if UNKNOWN in others:
                continue          # another way into the block is not known either
            inflow = sum(others) + sum(x.count for x in extra if x.dst == e.dst)
            edges[i] = max(int(blocks[e.dst]) - inflow, 0)


def function_counts(cfg: CFG, plan: dict[str, Any], counters: np.ndarray,
                    exc: list[tuple[int, int, int]], early: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(block counts, statement counts, edge counts) of one function of a count recording."""
    base = int(plan["counter_base"])
    extra, cut = _extras(cfg, exc, early)
    nb = len(cfg.blocks)
    edges = np.full(len(cfg.edges), UNKNOWN, np.int64)
    if plan["strategy"] == "chords":
        chords = [int(e) for e in plan["chords"]]
        chord_counts = [int(counters[base + k]) for k in range(len(chords))]
        placement = CounterPlacement(chords=tuple(chords),
                                     tree=tuple(i for i in range(len(cfg.edges)) if i not in set(chords)), cost=0.0)
        flow = propagate_counts(from_cfg(cfg), placement, chord_counts, extra)
        edges[:] = flow.edges
        blocks = np.array(flow.nodes, np.int64)
        blocks[:2] = 0
    else:  # a counter per block (and per instrumentable edge for "full")
        blocks = np.zeros(nb, np.int64)
        real = list(range(2, nb))
        blocks[2:] = counters[base: base + len(real)]
        for k, e in enumerate(plan.get("counted_edges", [])):
            edges[int(e)] = counters[base + len(real) + k]
        _complete_edges(cfg, blocks, edges, extra)
    stmts = np.array([blocks[s.block] if s.block >= 0 else 0 for s in cfg.stmts], np.int64) - cut
    return blocks, stmts, edges


def profiles_from_count_recording(rec: Any) -> list[FunctionProfile]:
    """Profiles of every function of an open `count` or `count-naive` recording."""
    counters = rec.get_array("counters")
    exc_rows = rec.get_array("exception_edges")
    early_rows = rec.get_array("early_exits")
    if counters is None:
        raise StoreError("count recording has no counters (the run did not finish, or they were lost)")
    exc: dict[int, list[tuple[int, int, int]]] = {}
    for f, s, d, n in (exc_rows.tolist() if exc_rows is not None else []):
        exc.setdefault(int(f), []).append((int(s), int(d), int(n)))
    early: dict[int, list[int]] = {}
    for f, s in (early_rows.tolist() if early_rows is not None else []):
        early.setdefault(int(f), []).append(int(s))
    out = []
    for f in rec.functions():
        desc = f.cfg
        cfg = CFG.from_json(desc)
        blocks, stmts, edges = function_counts(cfg, desc["plan"], counters, exc.get(f.fid, []), early.get(f.fid, []))
        out.append(FunctionProfile(f.fid, f.file, f.qualname, cfg, blocks, stmts, edges, f.source))
    return out
