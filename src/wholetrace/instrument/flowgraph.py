"""An abstract control-flow graph (plain data) and the graph helpers the placement algorithms share."""

from __future__ import annotations

from collections import deque
from functools import cached_property

from wholetrace.errors import InternalError
from wholetrace.ids import ENTRY, EXIT
from wholetrace.plain import FrozenRecord

TYPE_CHECKING = False   # typing is not imported by a recording (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:
    import random   # random_flow_graph's generator (a test helper: not imported by a recording)

    from wholetrace.instrument.cfg import CFG


class FlowGraph(FrozenRecord):
    """A function's CFG as plain data, independent of Python source.

    Nodes are ``0 .. num_nodes-1``; ``entry`` and ``exit`` name the pseudo-blocks ENTRY
    and EXIT (``wholetrace.ids.ENTRY``/``EXIT`` in CFGs built from source).  Edge ids are
    indexes into ``edges``; parallel edges and self loops are allowed.  ``back_edges``
    marks loop back edges (used only by the weighting heuristic); ``call_nodes`` marks
    call-capable blocks (used by witness blocking).
    """

    _fields = ('num_nodes', 'entry', 'exit', 'edges', 'back_edges', 'call_nodes')

    def __init__(self, num_nodes: int, entry: int, exit: int, edges: tuple[tuple[int, int], ...],
                 back_edges: frozenset[int] = frozenset(), call_nodes: frozenset[int] = frozenset()) -> None:
        object.__setattr__(self, "num_nodes", num_nodes)
        object.__setattr__(self, "entry", entry)
        object.__setattr__(self, "exit", exit)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "back_edges", back_edges)
        object.__setattr__(self, "call_nodes", call_nodes)

    @cached_property
    def out_edges(self) -> tuple[tuple[int, ...], ...]:
        """Edge ids leaving each node, in edge-id order."""
        out: list[list[int]] = [[] for _ in range(self.num_nodes)]
        for eid, (src, _dst) in enumerate(self.edges):
            out[src].append(eid)
        return tuple(tuple(x) for x in out)

    @cached_property
    def in_edges(self) -> tuple[tuple[int, ...], ...]:
        """Edge ids entering each node, in edge-id order."""
        inc: list[list[int]] = [[] for _ in range(self.num_nodes)]
        for eid, (_src, dst) in enumerate(self.edges):
            inc[dst].append(eid)
        return tuple(tuple(x) for x in inc)

    def successors(self, node: int) -> list[int]:
        """Targets of the out-edges of ``node`` (with repeats for parallel edges)."""
        return [self.edges[e][1] for e in self.out_edges[node]]

    def predecessors(self, node: int) -> list[int]:
        """Sources of the in-edges of ``node`` (with repeats for parallel edges)."""
        return [self.edges[e][0] for e in self.in_edges[node]]

    def is_branching(self, node: int) -> bool:
        """True if ``node`` has two or more out-edges (a predicate, counted per edge)."""
        return len(self.out_edges[node]) >= 2

    @property
    def virtual_edge(self) -> int:
        """Id given to the virtual EXIT→ENTRY edge by the placement algorithms."""
        return len(self.edges)


def reachable(graph: FlowGraph, start: int, *, forward: bool = True,
              skip_edges: frozenset[int] = frozenset()) -> set[int]:
    """Nodes reachable from ``start`` (backwards if ``forward`` is false), ignoring ``skip_edges``."""
    adj = graph.out_edges if forward else graph.in_edges
    end = 1 if forward else 0
    seen = {start}
    todo = [start]
    while todo:
        v = todo.pop()
        for e in adj[v]:
            if e in skip_edges:
                continue
            w = graph.edges[e][end]
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def validate(graph: FlowGraph, *, require_reachable: bool = True) -> None:
    """Raise InternalError unless ``graph`` is a well-formed CFG.

    Always: node and edge ids in range, ENTRY ≠ EXIT, EXIT without out-edges, back edges
    and call nodes valid.  With ``require_reachable``: every node is reachable from ENTRY
    and reaches EXIT (the paper's definition of a CFG).
    """
    n = graph.num_nodes
    if n < 2 or not (0 <= graph.entry < n and 0 <= graph.exit < n) or graph.entry == graph.exit:
        raise InternalError(f"flow graph: bad ENTRY/EXIT {graph.entry}/{graph.exit} for {n} nodes")
    for eid, (src, dst) in enumerate(graph.edges):
        if not (0 <= src < n and 0 <= dst < n):
            raise InternalError(f"flow graph: edge {eid} ({src}->{dst}) out of range")
    if graph.out_edges[graph.exit]:
        raise InternalError("flow graph: EXIT has out-edges")
    if any(not 0 <= e < len(graph.edges) for e in graph.back_edges):
        raise InternalError("flow graph: back edge id out of range")
    if any(not 0 <= v < n for v in graph.call_nodes):
        raise InternalError("flow graph: call node out of range")
    if graph.entry in graph.call_nodes or graph.exit in graph.call_nodes:
        raise InternalError("flow graph: ENTRY/EXIT cannot be call nodes")
    if require_reachable:
        fwd = reachable(graph, graph.entry)
        bwd = reachable(graph, graph.exit, forward=False)
        if len(fwd) != n:
            raise InternalError(f"flow graph: nodes {sorted(set(range(n)) - fwd)} unreachable from ENTRY")
        if len(bwd) != n:
            raise InternalError(f"flow graph: nodes {sorted(set(range(n)) - bwd)} cannot reach EXIT")


def topological_order(graph: FlowGraph, skip_edges: frozenset[int] = frozenset()) -> list[int] | None:
    """Topological order of all nodes using edges not in ``skip_edges``; None if they have a cycle."""
    indeg = [0] * graph.num_nodes
    for eid, (_s, d) in enumerate(graph.edges):
        if eid not in skip_edges:
            indeg[d] += 1
    ready = deque(v for v in range(graph.num_nodes) if indeg[v] == 0)
    order: list[int] = []
    while ready:
        v = ready.popleft()
        order.append(v)
        for e in graph.out_edges[v]:
            if e in skip_edges:
                continue
            d = graph.edges[e][1]
            indeg[d] -= 1
            if indeg[d] == 0:
                ready.append(d)
    return order if len(order) == graph.num_nodes else None


def retreating_edges(graph: FlowGraph, skip_edges: frozenset[int] = frozenset()) -> frozenset[int]:
    """Edges closing a cycle in a depth-first search from ENTRY (then from any unvisited node)."""
    on_stack = [False] * graph.num_nodes
    done = [False] * graph.num_nodes
    found: set[int] = set()
    roots = [graph.entry] + [v for v in range(graph.num_nodes) if v != graph.entry]
    for root in roots:
        if done[root]:
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        on_stack[root] = True
        while stack:
            v, i = stack[-1]
            outs = graph.out_edges[v]
            if i == len(outs):
                stack.pop()
                on_stack[v] = False
                done[v] = True
                continue
            stack[-1] = (v, i + 1)
            e = outs[i]
            if e in skip_edges:
                continue
            w = graph.edges[e][1]
            if on_stack[w]:
                found.add(e)
            elif not done[w]:
                on_stack[w] = True
                stack.append((w, 0))
    return frozenset(found)


def loop_back_edges(graph: FlowGraph) -> frozenset[int]:
    """The declared back edges, plus retreating edges if the rest still has a cycle."""
    declared = frozenset(graph.back_edges)
    if topological_order(graph, declared) is not None:
        return declared
    return declared | retreating_edges(graph, declared)


def natural_loops(graph: FlowGraph, back_edges: frozenset[int] | None = None) -> dict[int, frozenset[int]]:
    """Loop bodies by header: the header plus every node reaching a back edge's source without
    passing through the header (back edges sharing a header form one loop)."""
    if back_edges is None:
        back_edges = loop_back_edges(graph)
    loops: dict[int, set[int]] = {}
    for e in sorted(back_edges):
        src, header = graph.edges[e]
        body = loops.setdefault(header, {header})
        todo = [src] if src not in body else []
        body.add(src)
        while todo:
            v = todo.pop()
            for p in graph.predecessors(v):
                if p not in body:
                    body.add(p)
                    todo.append(p)
    return {h: frozenset(b) for h, b in loops.items()}


def random_flow_graph(rng: random.Random, num_real: int, *, extra_edges: int = 0, loops: int = 0,
                      call_fraction: float = 0.0) -> FlowGraph:
    """A random CFG for tests and benchmarks: ENTRY=0, EXIT=1, real blocks 2..; every node
    reachable from ENTRY and reaching EXIT; ``loops`` back edges (declared) to earlier blocks."""
    n = num_real + 2
    order = [0, *range(2, n), 1]
    pos = {v: i for i, v in enumerate(order)}
    edges: list[tuple[int, int]] = []
    for i in range(1, len(order)):
        edges.append((order[rng.randrange(i)], order[i]))
    has_out = {s for s, _ in edges}
    for i, v in enumerate(order[:-1]):
        if v not in has_out:
            edges.append((v, order[rng.randrange(i + 1, len(order))]))
    for _ in range(extra_edges):
        i = rng.randrange(len(order) - 1)
        edges.append((order[i], order[rng.randrange(i + 1, len(order))]))
    back: set[int] = set()
    for _ in range(loops if num_real else 0):
        u = rng.randrange(2, n)
        h = order[rng.randrange(1, pos[u] + 1)]
        back.add(len(edges))
        edges.append((u, h))
    calls = frozenset(v for v in range(2, n) if rng.random() < call_fraction)
    return FlowGraph(n, 0, 1, tuple(edges), frozenset(back), calls)




def from_cfg(cfg: CFG) -> FlowGraph:
    """The flow graph of a statement-level ``CFG`` (``instrument.cfg.CFG``).

    Nodes are block ids (ENTRY=0, EXIT=1), edge ids are indexes into ``cfg.edges``,
    ``back_edges`` come from ``Edge.back`` and ``call_nodes`` are the blocks whose first
    statement is call-capable or which hold a ``yield`` (suspension).
    """
    calls: set[int] = set()
    for blk in cfg.blocks:
        if not blk.stmts:
            continue
        if cfg.stmts[blk.stmts[0]].calls or any(cfg.stmts[s].suspends for s in blk.stmts):
            calls.add(blk.id)
    return FlowGraph(
        num_nodes=len(cfg.blocks),
        entry=ENTRY,
        exit=EXIT,
        edges=tuple((int(e.src), int(e.dst)) for e in cfg.edges),
        back_edges=frozenset(i for i, e in enumerate(cfg.edges) if e.back),
        call_nodes=frozenset(calls),
    )
