"""Edge weightings for placement: the Ball–Larus static loop heuristic and feedback from counts."""

from __future__ import annotations

from collections.abc import Sequence

from wholetrace.errors import InternalError
from wholetrace.instrument.flowgraph import (
    FlowGraph,
    loop_back_edges,
    natural_loops,
    reachable,
    topological_order,
)
from wholetrace.plain import FrozenRecord

#: The heuristic's assumption: every loop iterates this many times per entry.
LOOP_ITERATIONS = 10
#: Smallest branch probability kept, so every edge carries some weight.
_MIN_PROB = 1e-9


class EdgeWeights(FrozenRecord):
    """A weighting: one nonnegative weight per edge id, plus the virtual EXIT→ENTRY edge."""

    _fields = ('edges', 'virtual')

    def __init__(self, edges: tuple[float, ...], virtual: float = 1.0) -> None:
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "virtual", virtual)

    def node_weight(self, graph: FlowGraph, node: int) -> float:
        """Sum of the weights entering ``node`` (the virtual edge enters ENTRY)."""
        w = sum(self.edges[e] for e in graph.in_edges[node])
        return w + (self.virtual if node == graph.entry else 0.0)


def _targets(graph: FlowGraph, back: frozenset[int],
             loops: dict[int, frozenset[int]], order: list[int]) -> list[float]:
    """Branch probabilities from the heuristic's target flows, one per edge.

    Walks the graph without back edges in topological order: ENTRY gets 1, a loop
    header gets (1 + LOOP_ITERATIONS) × its entering flow N, each of a loop's E exit
    edges asks for N/E, and the remaining flow of a node is split evenly among its other
    out-edges.  Exits asking for more than a node can give are scaled down.
    """
    n_edges = len(graph.edges)
    containing: list[list[int]] = [[] for _ in range(graph.num_nodes)]
    for h, body in loops.items():
        for v in body:
            containing[v].append(h)
    exits_of: dict[int, int] = {h: 0 for h in loops}
    for src, dst in graph.edges:
        for h in containing[src]:
            if dst not in loops[h]:
                exits_of[h] += 1
    entering: dict[int, float] = {}
    flow_in = [0.0] * graph.num_nodes
    flow_in[graph.entry] += 1.0
    target = [0.0] * n_edges
    prob = [0.0] * n_edges
    for v in order:
        weight = flow_in[v]
        if v in loops:
            entering[v] = weight
            weight *= 1 + LOOP_ITERATIONS
        outs = graph.out_edges[v]
        if not outs:
            continue
        exits: dict[int, float] = {}
        for e in outs:
            dst = graph.edges[e][1]
            asks = [entering.get(h, 0.0) / exits_of[h] for h in containing[v] if dst not in loops[h]]
            if asks:
                exits[e] = min(asks)
        others = [e for e in outs if e not in exits]
        exit_total = sum(exits.values())
        if not others:  # every out-edge leaves a loop: they share the whole flow
            if exit_total == 0:
                exits = {e: 1.0 for e in exits}
                exit_total = float(len(exits))
            scale = weight / exit_total
        else:  # leave at least half of the flow to the edges that stay in the loop
            scale = weight / 2 / exit_total if exit_total > weight / 2 else 1.0
        for e, t in exits.items():
            target[e] = t * scale
        rest = weight - sum(target[e] for e in exits)
        for e in others:
            target[e] = rest / len(others)
        for e in outs:
            p = target[e] / weight if weight > 0 else 1.0 / len(outs)
            prob[e] = max(p, _MIN_PROB)
        total = sum(prob[e] for e in outs)
        for e in outs:
            prob[e] /= total
            if e not in back:
                flow_in[graph.edges[e][1]] += target[e]
    return prob


def _solve_flow(graph: FlowGraph, back: frozenset[int], order: list[int], prob: list[float]) -> list[float]:
    """Expected visits of each node for a walk from ENTRY with branch probabilities ``prob``.

    Visits are affine in the unknown back-edge inflow of each loop header, so one
    topological pass over the acyclic part plus a small dense solve (one unknown per
    header) gives the exact conserved flow.
    """
    headers = sorted({graph.edges[e][1] for e in back})
    col = {h: i + 1 for i, h in enumerate(headers)}
    k = len(headers)
    leak = [1.0] * graph.num_nodes
    stuck = set(range(graph.num_nodes)) - reachable(graph, graph.exit, forward=False)
    for v in stuck:  # nodes that cannot reach EXIT leak as if their loop had an exit
        leak[v] = LOOP_ITERATIONS / (1 + LOOP_ITERATIONS)
    # visits[v] = [constant, coefficient of each header's back-edge inflow]
    visits = [[0.0] * (k + 1) for _ in range(graph.num_nodes)]
    visits[graph.entry][0] = 1.0
    for h in headers:
        visits[h][col[h]] += 1.0
    for v in order:
        for e in graph.out_edges[v]:
            if e not in back:
                f = prob[e] * leak[v]
                dst = visits[graph.edges[e][1]]
                for j, x in enumerate(visits[v]):
                    dst[j] += x * f
    system = [[1.0 if i == j else 0.0 for j in range(k)] for i in range(k)]
    rhs = [0.0] * k
    for e in back:
        src, h = graph.edges[e]
        row = col[h] - 1
        f = prob[e] * leak[src]
        rhs[row] += visits[src][0] * f
        for j in range(k):
            system[row][j] -= visits[src][j + 1] * f
    inflow = _solve(system, rhs)
    x = [vis[0] + sum(c * i for c, i in zip(vis[1:], inflow)) for vis in visits]
    return [float(max(x[graph.edges[e][0]], 0.0) * prob[e] * leak[graph.edges[e][0]])
            for e in range(len(graph.edges))]


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Solve ``a x = b`` by Gaussian elimination with partial pivoting (one row per loop
    header, so tiny: plain Python beats a numpy call here)."""
    n = len(b)
    m = [row[:] + [rhs] for row, rhs in zip(a, b)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-300:
            raise InternalError("weighting: singular flow system")
        m[c], m[p] = m[p], m[c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            if f:
                for j in range(c, n + 1):
                    m[r][j] -= f * m[c][j]
    out = [0.0] * n
    for c in range(n - 1, -1, -1):
        out[c] = (m[c][n] - sum(m[c][j] * out[j] for j in range(c + 1, n))) / m[c][c]
    return out


def static_weights(graph: FlowGraph) -> EdgeWeights:
    """The paper's heuristic weighting for one activation (virtual EXIT→ENTRY edge = 1).

    Each loop iterates LOOP_ITERATIONS times, a loop entered N times with E exit edges
    gives each exit N/E, branches split evenly among non-exit edges, and the result is
    made to conserve flow at every node that reaches EXIT.
    """
    back = loop_back_edges(graph)
    order = topological_order(graph, back)
    if order is None:  # pragma: no cover - loop_back_edges guarantees acyclicity
        raise InternalError("weighting: graph without back edges still has a cycle")
    loops = natural_loops(graph, back)
    prob = _targets(graph, back, loops, order)
    weights = _solve_flow(graph, back, order, prob)
    virtual = float(sum(weights[e] for e in graph.in_edges[graph.exit]))
    return EdgeWeights(tuple(weights), virtual)


def feedback_weights(graph: FlowGraph, edge_counts: Sequence[int | float],
                     activations: int | None = None) -> EdgeWeights:
    """A weighting from measured edge counts (a previous recording).

    Edges never executed are ordered by the static heuristic, scaled so that all of it
    together weighs less than one execution and never overrides a measured difference.
    """
    if len(edge_counts) != len(graph.edges):
        raise InternalError(f"feedback weights: {len(edge_counts)} counts for {len(graph.edges)} edges")
    if any(c < 0 for c in edge_counts):
        raise InternalError("feedback weights: negative edge count")
    static = static_weights(graph)
    total = sum(static.edges) + static.virtual
    eps = 1e-3 / total if total > 0 else 0.0
    measured = [float(c) for c in edge_counts]
    if activations is None:
        activations = int(sum(measured[e] for e in graph.in_edges[graph.exit]))
    edges = tuple(m + eps * s for m, s in zip(measured, static.edges))
    return EdgeWeights(edges, float(activations) + eps * static.virtual)
