"""Path registers that could read as "no path open", and the lift that rules them out."""

from __future__ import annotations

from collections.abc import Sequence

from wholetrace.events import LEAVE, NO_PATH
from wholetrace.instrument.flowgraph import FlowGraph, topological_order
from wholetrace.instrument.pathnum import DagEdge, _dag_graph

#: The stream's "no path open" registers: LEAVE (-1), and NO_PATH or below.
_NO_PATH_OPEN, _NO_PATH_AT_MOST = LEAVE, NO_PATH


def register_range(graph: FlowGraph, dag: Sequence[DagEdge], inc: Sequence[int]) -> list[tuple[int, int] | None]:
    """Per node, (lowest, highest) register the probes can leave on entering it (the increments
    of a path's start edge and real edges so far), None for ENTRY, EXIT and nodes no path enters."""
    n = graph.num_nodes
    rng: list[tuple[int, int] | None] = [None] * n
    rng[graph.entry] = (0, 0)
    order = topological_order(_dag_graph(n, graph, dag))
    assert order is not None
    ins: list[list[int]] = [[] for _ in range(n)]
    for i, e in enumerate(dag):
        if e.dst != graph.exit:
            ins[e.dst].append(i)
    for v in order:
        if v in (graph.entry, graph.exit):
            continue
        got = [(rng[dag[i].src][0] + inc[i], rng[dag[i].src][1] + inc[i])  # type: ignore[index]
               for i in ins[v] if rng[dag[i].src] is not None]
        rng[v] = (min(a for a, _ in got), max(b for _, b in got)) if got else None
    rng[graph.entry] = None
    return rng


def _reaches(graph: FlowGraph, dag: Sequence[DagEdge], inc: Sequence[int], value: int, cap: int = 1 << 14) -> bool:
    """Can the register be exactly ``value`` on entering some node?  (True, to be safe, once
    a node's set of registers grows past ``cap`` values.)"""
    n = graph.num_nodes
    regs: list[set[int]] = [set() for _ in range(n)]
    regs[graph.entry].add(0)
    order = topological_order(_dag_graph(n, graph, dag))
    assert order is not None
    outs: list[list[int]] = [[] for _ in range(n)]
    for i, e in enumerate(dag):
        if e.dst != graph.exit:
            outs[e.src].append(i)
    for v in order:
        if v != graph.entry and value in regs[v]:
            return True
        for i in outs[v]:
            regs[dag[i].dst].update(r + inc[i] for r in regs[v])
            if len(regs[dag[i].dst]) > cap:
                return True
    return False


def lift_registers(graph: FlowGraph, dag: Sequence[DagEdge], inc: list[int]) -> list[int]:
    """Keep every register a register (docs/design.md "Path mode, wave 12"): negative
    increments can make a register of -1 (LEAVE, which an exception record reads as "no path
    open", ``events.NO_PATH``) reachable mid-function.  If some node's register range holds
    such a value, add ``c`` to every edge out of ENTRY (a store anyway: the entry's
    initialisation, a reset, a handler's start value) and subtract it from every edge into EXIT
    (a record: folded into its constant): every ENTRY→EXIT path takes one of each, so every
    id is unchanged, and every register moves up by ``c`` = minus the lowest, to 0 or above."""
    rng = [r for r in register_range(graph, dag, inc) if r is not None]
    if not any(lo <= _NO_PATH_AT_MOST or lo <= _NO_PATH_OPEN <= hi for lo, hi in rng):
        return inc
    if not _reaches(graph, dag, inc, _NO_PATH_OPEN) and min(lo for lo, _ in rng) > _NO_PATH_AT_MOST:
        return inc
    c = -min(lo for lo, _ in rng)
    return [k + (c if e.src == graph.entry else 0) - (c if e.dst == graph.exit else 0) for k, e in zip(inc, dag)]


#: An exception record carries the register as an int32 event (the flusher refuses anything else).
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def registers_fit(graph: FlowGraph, dag: Sequence[DagEdge], inc: Sequence[int]) -> bool:
    """Does every register the probes can leave (lifted or not) fit an int32 event?  A register
    is a sum of increments along a DAG path (at most one per node), so below ``2**31 / nodes``
    per increment nothing needs walking (every function of the corpus); else the ranges are."""
    if max((abs(k) for k in inc), default=0) * max(graph.num_nodes, 1) <= INT32_MAX:
        return True
    return all(lo >= INT32_MIN and hi <= INT32_MAX
               for r in register_range(graph, dag, inc) if r is not None for lo, hi in (r,))
