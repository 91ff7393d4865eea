"""The acyclic graph of Ball–Larus path numbering: cuts, dummy edges, path counts (phases 1-4 of ``instrument.pathnum``)."""

# Split from ``instrument.pathnum`` (wave 17), whose header states the invariant and cites the
# papers: removing the cut edges leaves a DAG; each cut u→v becomes d_out(u→v) = u→EXIT and
# d_in(v) = ENTRY→v; dynamic entries, unreachable nodes and dead ends get dummies too.

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Sequence

from wholetrace.errors import InternalError
from wholetrace.instrument.chains import forced_chain_edges
from wholetrace.instrument.flowgraph import FlowGraph, loop_back_edges, topological_order
from wholetrace.instrument.weighting import EdgeWeights

TYPE_CHECKING = False   # typing is not imported by a recording (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:
    from typing import Literal

#: Cut policies: ``"calls"`` cuts back edges and edges into call-capable blocks (Larus);
#: ``"loops"`` cuts back edges only (paths span calls).
if TYPE_CHECKING:
    CutPolicy = Literal["calls", "loops"]

# DAG edge kinds
REAL, D_IN, D_OUT, D_DEAD = "real", "d_in", "d_out", "d_dead"


class DagEdge(namedtuple("DagEdge", ("src", "dst", "kind", "ref"))):
    """An edge of the path DAG (``src: int, dst: int, kind: str, ref: int``): ``ref`` is the CFG
    edge id (real, d_out) or the block (d_in, d_dead)."""

    __slots__ = ()


def choose_cuts(graph: FlowGraph, policy: CutPolicy = "calls", quiet: Iterable[int] = ()) -> frozenset[int]:
    """Phase 1: back edges (declared, plus retreating edges if a cycle remains), and with
    policy ``"calls"`` every edge into a call-capable block except out of ENTRY (ENTER already
    says that the activation starts there) and except the last edge of a *forced chain*
    (:func:`forced_chain_edges`: the regenerator infers it at the first child) — and then only
    the back edges still needed to break a cycle (:func:`needed_back_edges`).  ``quiet``: the
    blocks that cannot call at all (``quiet_blocks``); none by default."""
    back = loop_back_edges(graph)
    if policy == "loops":
        return back
    if policy != "calls":
        raise InternalError(f"path numbering: unknown cut policy {policy!r}")
    calls = frozenset(e for e, (s, d) in enumerate(graph.edges) if d in graph.call_nodes and s != graph.entry)
    quiet = frozenset(quiet) - graph.call_nodes
    skip: frozenset[int] = frozenset()
    while True:   # skipping cuts may bring back edges back; that only shortens chains: a fixpoint
        cuts = (calls - skip) | needed_back_edges(graph, back, calls - skip)
        chains = forced_chain_edges(graph, cuts, quiet) if quiet else frozenset()
        now = (skip & chains) if skip else (calls & chains)
        if now == skip:
            return cuts
        skip = now


def needed_back_edges(graph: FlowGraph, back: frozenset[int], cuts: frozenset[int]) -> frozenset[int]:
    """The back edges that still close a cycle once ``cuts`` are made.  A loop whose every
    iteration enters a call block is already cut by the cut into it: cutting its back edge too
    would end a second path per iteration (a record) that tells nothing the call cut does not.
    Greedy, in edge order: a back edge is dropped if the graph stays acyclic without it."""
    kept = set(back - cuts)
    for e in sorted(kept):
        if topological_order(graph, cuts | frozenset(kept - {e})) is not None:
            kept.discard(e)
    return frozenset(kept)


def build_dag(graph: FlowGraph, cuts: frozenset[int], starts: Iterable[int] = ()) -> tuple[list[DagEdge], list[int]]:
    """Phase 2: the DAG edges — uncut real edges, d_out per cut edge, d_in per start (cut
    targets, ``starts``, and nodes left without a way in) and d_dead per block without
    successors.  Returns the edges and the sorted start blocks."""
    g = graph
    dag = [DagEdge(s, d, REAL, e) for e, (s, d) in enumerate(g.edges) if e not in cuts]
    dag += [DagEdge(g.edges[e][0], g.exit, D_OUT, e) for e in sorted(cuts)]
    start_set = {g.edges[e][1] for e in cuts} | {v for v in starts if v not in (g.entry, g.exit)}
    indeg = [0] * g.num_nodes
    for e in dag:
        indeg[e.dst] += 1
    # a node nobody reaches any more (a dynamic entry, dead code) starts paths of its own
    reached = _reach(g.num_nodes, g.entry, dag, start_set)
    for v in range(g.num_nodes):
        if v not in reached and v not in (g.entry, g.exit) and indeg[v] == 0:
            start_set.add(v)
    dag += [DagEdge(g.entry, v, D_IN, v) for v in sorted(start_set)]
    has_out = {e.src for e in dag}
    dag += [DagEdge(v, g.exit, D_DEAD, v) for v in range(g.num_nodes) if v not in has_out and v != g.exit]
    if len(_reach(g.num_nodes, g.entry, dag, ())) != g.num_nodes:  # pragma: no cover - see above
        raise InternalError("path numbering: nodes unreachable after adding starts")
    return dag, sorted(start_set)


def _reach(n: int, entry: int, dag: Sequence[DagEdge], starts: Iterable[int]) -> set[int]:
    adj: list[list[int]] = [[] for _ in range(n)]
    for e in dag:
        adj[e.src].append(e.dst)
    seen = {entry, *starts}
    todo = list(seen)
    while todo:
        v = todo.pop()
        for w in adj[v]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def _dag_graph(n: int, graph: FlowGraph, dag: Sequence[DagEdge]) -> FlowGraph:
    return FlowGraph(n, graph.entry, graph.exit, tuple((e.src, e.dst) for e in dag))


def dag_weights(graph: FlowGraph, dag: Sequence[DagEdge], weights: EdgeWeights) -> EdgeWeights:
    """Expected traversals of every DAG edge from the CFG's edge weights: a real edge keeps
    its weight, d_out(e) takes e's, d_in(v) the sum over the cuts into v, d_dead the flow
    into its block; the virtual edge carries everything that leaves ENTRY."""
    into = [0.0] * graph.num_nodes
    for e, (_s, d) in enumerate(graph.edges):
        into[d] += weights.edges[e]
    cut_into = [0.0] * graph.num_nodes
    for e in dag:
        if e.kind == D_OUT:
            cut_into[graph.edges[e.ref][1]] += weights.edges[e.ref]
    out: list[float] = []
    for e in dag:
        if e.kind in (REAL, D_OUT):
            out.append(float(weights.edges[e.ref]))
        elif e.kind == D_IN:
            out.append(cut_into[e.ref])
        else:
            out.append(into[e.ref])
    virtual = weights.virtual + sum(w for w, e in zip(out, dag) if e.kind == D_IN)
    return EdgeWeights(tuple(out), virtual)


def count_paths(graph: FlowGraph, dag: Sequence[DagEdge], weights: Sequence[float]) -> tuple[list[int], list[int]]:
    """Phase 3: NumPaths per node and Val per DAG edge.  Each node's out-edges are numbered
    heaviest first (real edges out of ENTRY before d_in), so the likely edge gets Val 0."""
    n = graph.num_nodes
    order = topological_order(_dag_graph(n, graph, dag))
    if order is None:
        raise InternalError("path numbering: cut edges leave a cycle")
    outs: list[list[int]] = [[] for _ in range(n)]
    for i, e in enumerate(dag):
        outs[e.src].append(i)
    num = [0] * n
    val = [0] * len(dag)
    for v in reversed(order):
        if v == graph.exit:
            num[v] = 1
            continue
        total = 0
        for i in sorted(outs[v], key=lambda i: (dag[i].kind != REAL, -weights[i], i)):
            val[i] = total
            total += num[dag[i].dst]
        num[v] = total
    return num, val


def paths_to(graph: FlowGraph, dag: Sequence[DagEdge]) -> list[int]:
    """Number of DAG paths from ENTRY to each node."""
    order = topological_order(_dag_graph(graph.num_nodes, graph, dag))
    assert order is not None
    to = [0] * graph.num_nodes
    to[graph.entry] = 1
    outs: list[list[int]] = [[] for _ in range(graph.num_nodes)]
    for e in dag:
        outs[e.src].append(e.dst)
    for v in order:
        for w in outs[v]:
            to[w] += to[v]
    return to


def limit_paths(graph: FlowGraph, cuts: frozenset[int], starts: Iterable[int], limit: int
                ) -> tuple[frozenset[int], bool]:
    """Phase 4: while the DAG has more than ``limit`` paths, cut every uncut in-edge of the
    node with the most paths through it (paths to it × paths from it), as a call block is
    cut.  Returns the cuts and whether the count is within ``limit``."""
    starts = tuple(starts)
    while True:
        dag, _ = build_dag(graph, cuts, starts)
        num, _ = count_paths(graph, dag, [0.0] * len(dag))
        if num[graph.entry] <= limit:
            return cuts, True
        to = paths_to(graph, dag)
        best, best_v = 0, -1
        for v in range(graph.num_nodes):
            if v in (graph.entry, graph.exit):
                continue
            if not any(e not in cuts and graph.edges[e][0] != graph.entry for e in graph.in_edges[v]):
                continue
            through = to[v] * num[v]
            if through > best:
                best, best_v = through, v
        if best_v < 0 or best <= 1:
            return cuts, False
        cuts = cuts | {e for e in graph.in_edges[best_v] if graph.edges[e][0] != graph.entry}
