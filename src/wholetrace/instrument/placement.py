"""Counter and witness placement on a function's CFG by maximum spanning tree (Ball & Larus).

Reference: T. Ball and J. R. Larus, "Optimally Profiling and Tracing Programs"
(sections 3.1 and 4), in ``../shared/seeds/``.

Invariant (profiling).  The virtual edge EXIT→ENTRY is added and seeded into the tree.
The tree edges form a spanning tree of the undirected graph (a spanning forest if the
graph is not connected); every other edge is a *chord* and gets a counter.  A set of
edges whose complement has no undirected cycle fixes every edge count by flow
conservation, so the chord counts determine all counts, and choosing the tree of
maximum weight minimises the expected number of counter increments.  With the graph
connected, #chords = (|E| + 1) − |V| + 1, counting the virtual edge in |E| + 1.

Invariant (tracing).  An edge set is a witness placement iff the unwitnessed edges
contain no directed cycle and no diamond (two distinct paths between the same nodes).
Blocking witnesses come first (no branch may see a call block or EXIT without passing
a witness; in Python no execution may pass from one call block to another without one),
then the spanning-tree phases run with those edges excluded and all its chords are
witnessed too.  A forest has no undirected cycle, so the result solves the tracing
problem; ``verify_witnesses`` checks it independently.

Phases (shared by both problems, each a function below): ``build_edges``,
``sort_by_weight``, ``spanning_tree`` (union-find), ``chords``.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from functools import cached_property

from wholetrace.errors import InternalError
from wholetrace.instrument.flowgraph import FlowGraph, reachable, topological_order, validate
from wholetrace.instrument.weighting import EdgeWeights
from wholetrace.plain import FrozenRecord

#: Token in witness sets for "reaches EXIT without a witness" (the paper's EOF).
EOF = -1


class WeightedEdge(namedtuple("WeightedEdge", ("weight", "id", "src", "dst", "virtual"))):
    """One edge as the spanning-tree phases see it (``weight: float, id: int, src: int, dst: int,
    virtual: bool``; the virtual edge has id ``graph.virtual_edge``).  From collections, not
    typing.NamedTuple: typing is not imported by a recording."""

    __slots__ = ()


class CounterPlacement(FrozenRecord):
    """Where the counters go: ``chords`` get one each; ``tree`` edges are derived."""

    _fields = ('chords', 'tree', 'cost')

    def __init__(self, chords: tuple[int, ...], tree: tuple[int, ...], cost: float) -> None:
        object.__setattr__(self, "chords", chords)
        object.__setattr__(self, "tree", tree)
        object.__setattr__(self, "cost", cost)

    @property
    def num_counters(self) -> int:
        """Number of counters (= number of chords)."""
        return len(self.chords)


class WitnessPlacement(FrozenRecord):
    """Witnessed edges (witness id = position in ``witnessed``) and how they were chosen."""

    _fields = ('witnessed', 'blocking', 'tree', 'cost', 'has_blocking_property', 'separates_calls')

    def __init__(self, witnessed: tuple[int, ...], blocking: frozenset[int] = frozenset(), tree: tuple[int, ...] = (),
                 cost: float = 0.0, has_blocking_property: bool = False, separates_calls: bool = False) -> None:
        object.__setattr__(self, "witnessed", witnessed)
        object.__setattr__(self, "blocking", blocking)
        object.__setattr__(self, "tree", tree)
        object.__setattr__(self, "cost", cost)
        object.__setattr__(self, "has_blocking_property", has_blocking_property)
        object.__setattr__(self, "separates_calls", separates_calls)

    @cached_property
    def witness_of_edge(self) -> dict[int, int]:
        """Edge id → witness id for every witnessed edge."""
        return {e: i for i, e in enumerate(self.witnessed)}

    @classmethod
    def from_edges(cls, graph: FlowGraph, edges: Sequence[int], *,
                   weights: Sequence[float] | None = None) -> WitnessPlacement:
        """A hand-made placement (single-procedure, as in the paper's section 4.1)."""
        witnessed = tuple(edges)
        if len(set(witnessed)) != len(witnessed) or any(not 0 <= e < len(graph.edges) for e in witnessed):
            raise InternalError("witness placement: duplicate or unknown edge id")
        cost = sum(weights[e] for e in witnessed) if weights is not None else 0.0
        return cls(witnessed, cost=cost)


# ---------------------------------------------------------------- spanning-tree phases

def _edge_weights(graph: FlowGraph, weights: EdgeWeights | Sequence[float]) -> tuple[list[float], float]:
    if isinstance(weights, EdgeWeights):
        per_edge, virtual = list(weights.edges), weights.virtual
    else:
        per_edge, virtual = [float(w) for w in weights], 1.0
    if len(per_edge) != len(graph.edges):
        raise InternalError(f"placement: {len(per_edge)} weights for {len(graph.edges)} edges")
    if any(w < 0 for w in per_edge):
        raise InternalError("placement: negative edge weight")
    return per_edge, virtual


def build_edges(graph: FlowGraph, weights: EdgeWeights | Sequence[float], *,
                with_virtual: bool) -> list[WeightedEdge]:
    """Phase 1: the weighted edge list, optionally with the virtual EXIT→ENTRY edge."""
    per_edge, virtual = _edge_weights(graph, weights)
    out = [WeightedEdge(per_edge[e], e, s, d, False) for e, (s, d) in enumerate(graph.edges)]
    if with_virtual:
        out.append(WeightedEdge(virtual, graph.virtual_edge, graph.exit, graph.entry, True))
    return out


def sort_by_weight(edges: Sequence[WeightedEdge], rank: Sequence[int] | None = None) -> list[WeightedEdge]:
    """Phase 2: the virtual edge first (the seed), then heaviest first; ties go to the higher
    ``rank`` (an edge whose probe would cost more), then to the lower edge id."""
    if rank is None:
        return sorted(edges, key=lambda e: (not e.virtual, -e.weight, e.id))
    return sorted(edges, key=lambda e: (not e.virtual, -e.weight, 0 if e.virtual else -rank[e.id], e.id))


class UnionFind:
    """Disjoint sets over ``0 .. n-1`` with path halving and union by size."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, x: int) -> int:
        """Representative of ``x``'s set."""
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> bool:
        """Merge the sets of ``a`` and ``b``; False if they were already one set."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return True


def spanning_tree(num_nodes: int, ordered: Sequence[WeightedEdge],
                  excluded: frozenset[int] = frozenset()) -> list[WeightedEdge]:
    """Phase 3: Kruskal over ``ordered`` — keep each edge that joins two components."""
    sets = UnionFind(num_nodes)
    return [e for e in ordered if e.id not in excluded and sets.union(e.src, e.dst)]


def chords(edges: Sequence[WeightedEdge], tree: Sequence[WeightedEdge],
           excluded: frozenset[int] = frozenset()) -> list[WeightedEdge]:
    """Phase 4: the edges neither in the tree nor excluded, by edge id."""
    in_tree = {e.id for e in tree}
    return sorted((e for e in edges if e.id not in in_tree and e.id not in excluded), key=lambda e: e.id)


# ---------------------------------------------------------------- profiling

def place_counters(graph: FlowGraph, weights: EdgeWeights | Sequence[float],
                   rank: Sequence[int] | None = None) -> CounterPlacement:
    """Counters on the chords of a maximum spanning tree seeded with EXIT→ENTRY.

    ``rank`` (per edge, optional) breaks ties between equal weights: higher-ranked edges
    join the tree first, so a dearer probe form is chosen only when it saves increments.
    """
    validate(graph, require_reachable=False)
    edges = build_edges(graph, weights, with_virtual=True)
    tree = spanning_tree(graph.num_nodes, sort_by_weight(edges, rank))
    if not tree or not tree[0].virtual:  # pragma: no cover - the seed always joins two nodes
        raise InternalError("placement: virtual edge not in the spanning tree")
    chosen = chords(edges, tree)
    return CounterPlacement(
        chords=tuple(e.id for e in chosen),
        tree=tuple(sorted(e.id for e in tree if not e.virtual)),
        cost=float(sum(e.weight for e in chosen)),
    )


# ---------------------------------------------------------------- tracing

def blockers(graph: FlowGraph, node: int) -> set[int]:
    """The paper's blocking edges of ``node``: the out-edge of the nearest branching node
    on every branch-free path into ``node``."""
    found: set[int] = set()
    seen = {node}
    todo = [node]
    while todo:
        v = todo.pop()
        for e in graph.in_edges[v]:
            src = graph.edges[e][0]
            if graph.is_branching(src):
                found.add(e)
            elif src not in seen:
                seen.add(src)
                todo.append(src)
    return found


def call_separators(graph: FlowGraph, witnessed: set[int], avoid: frozenset[int] = frozenset()) -> set[int]:
    """Out-edges of call blocks to witness so that no execution passes from one call block
    to the next without a witness (so each ENTER can be attributed to its call block).

    After far blocking, a branching node never sees a call block, so only the single
    out-edge of a non-branching call block can be chosen — the lightest edge of the
    branch-free chain it starts.  An edge of ``avoid`` (its probe would run before code the
    block's end may still run: ``instrument.witnesses.drop_edges``) gives way to the next edge
    of that chain when that costs no path a witness (:func:`_along_chain`).
    """
    extra: set[int] = set()
    for c in sorted(graph.call_nodes):
        for e in graph.out_edges[c]:
            if e in witnessed or e in extra:
                continue
            ahead = reachable(graph, graph.edges[e][1], skip_edges=frozenset(witnessed | extra))
            if ahead & graph.call_nodes:
                f, replaced = _along_chain(graph, e, avoid, witnessed, extra)
                extra -= replaced
                extra.add(f)
    return extra


def _along_chain(graph: FlowGraph, e: int, avoid: frozenset[int], witnessed: set[int],
                 extra: set[int]) -> tuple[int, set[int]]:
    """``e``, or while it is in ``avoid``, the single out-edge of its target ``v`` (a block
    that is neither a call block nor branching, whose out-edge is not witnessed yet), and
    the separators it replaces.  Cost-neutral: each other in-edge of ``v`` must be an
    ``avoid`` edge or a call separator of ``extra`` (then dropped: the moved edge separates
    its call block too), so every path through ``v`` pays one witness there, as before."""
    f, seen, replaced = e, {e}, set()
    while f in avoid:
        v = graph.edges[f][1]
        if v in graph.call_nodes or v == graph.exit or len(graph.out_edges[v]) != 1:
            return e, set()
        others = set(graph.in_edges[v]) - avoid
        if not others <= extra:
            return e, set()
        f = graph.out_edges[v][0]
        if f in witnessed or f in extra or f in seen:
            return e, set()
        seen.add(f)
        replaced |= others
    return f, replaced


def place_witnesses(graph: FlowGraph, weights: EdgeWeights | Sequence[float], *,
                    blocking: Literal["far", "near"] = "far",
                    separate_calls: bool = True, avoid: frozenset[int] = frozenset()) -> WitnessPlacement:
    """Witnesses solving the multi-procedure tracing problem at low cost.

    ``blocking="far"`` uses the paper's blockers sets (``"near"``: every in-edge of a call
    block and of EXIT, for comparison).  ``separate_calls`` adds Python's need that a
    witness lies between any two call blocks of an execution.  The maximum spanning tree
    (without the virtual edge) then runs with these edges excluded; its chords are
    witnessed as well.  ``avoid``: edges the call separators pass over where they can
    (:func:`call_separators`).
    """
    validate(graph, require_reachable=False)
    per_edge, _ = _edge_weights(graph, weights)
    targets = set(graph.call_nodes) | {graph.exit}
    placed: set[int] = set()
    for v in sorted(targets):
        placed |= blockers(graph, v) if blocking == "far" else set(graph.in_edges[v])
    if separate_calls:
        placed |= call_separators(graph, placed, avoid)
    excluded = frozenset(placed)
    edges = build_edges(graph, per_edge, with_virtual=False)
    tree = spanning_tree(graph.num_nodes, sort_by_weight(edges), excluded)
    witnessed = sorted(placed | {e.id for e in chords(edges, tree, excluded)})
    return WitnessPlacement(
        witnessed=tuple(witnessed),
        blocking=excluded,
        tree=tuple(sorted(e.id for e in tree)),
        cost=float(sum(per_edge[e] for e in witnessed)),
        has_blocking_property=True,
        separates_calls=separate_calls,
    )


def witness_sets(graph: FlowGraph, placement: WitnessPlacement) -> dict[int, frozenset[int]]:
    """For every out-edge of a branching node: the witnesses (and EOF) it can see first.

    Raises InternalError if the unwitnessed edges contain a directed cycle.
    """
    wid = placement.witness_of_edge
    free = frozenset(wid)
    order = topological_order(graph, free)
    if order is None:
        raise InternalError("witness placement: directed cycle of unwitnessed edges")
    ahead: list[frozenset[int]] = [frozenset()] * graph.num_nodes
    for v in reversed(order):
        seen: set[int] = {EOF} if v == graph.exit else set()
        for e in graph.out_edges[v]:
            seen |= {wid[e]} if e in wid else ahead[graph.edges[e][1]]
        ahead[v] = frozenset(seen)
    return {e: (frozenset({wid[e]}) if e in wid else ahead[graph.edges[e][1]])
            for v in range(graph.num_nodes) if graph.is_branching(v) for e in graph.out_edges[v]}


def verify_witnesses(graph: FlowGraph, placement: WitnessPlacement) -> None:
    """Raise InternalError unless ``placement`` solves the tracing problem for ``graph``.

    Checks: no directed cycle and no diamond among unwitnessed edges; disjoint witness
    sets at every branching node; and, when the placement claims them, the blocking
    property and the separation of call blocks.
    """
    wid = placement.witness_of_edge
    if len(wid) != len(placement.witnessed) or any(not 0 <= e < len(graph.edges) for e in wid):
        raise InternalError("witness placement: duplicate or unknown edge id")
    free = frozenset(wid)
    sets = witness_sets(graph, placement)  # also rejects directed cycles
    for v in range(graph.num_nodes):
        arrivals: dict[int, int] = {}
        for w in _unwitnessed_arrivals(graph, v, free):
            arrivals[w] = arrivals.get(w, 0) + 1
            if arrivals[w] > 1:
                raise InternalError(f"witness placement: diamond of unwitnessed edges from node {v} to {w}")
        if graph.is_branching(v):
            seen: set[int] = set()
            for e in graph.out_edges[v]:
                if seen & sets[e]:
                    raise InternalError(f"witness placement: node {v} has overlapping witness sets")
                seen |= sets[e]
            if placement.has_blocking_property:
                for e in graph.out_edges[v]:
                    if e in free:
                        continue
                    ahead = reachable(graph, graph.edges[e][1], skip_edges=free)
                    if graph.exit in ahead or ahead & graph.call_nodes:
                        raise InternalError(f"witness placement: branch edge {e} sees a call block or EXIT")
    if placement.separates_calls:
        for c in graph.call_nodes:
            for e in graph.out_edges[c]:
                if e not in free and reachable(graph, graph.edges[e][1], skip_edges=free) & graph.call_nodes:
                    raise InternalError(f"witness placement: call block {c} reaches a call block unwitnessed")


def _unwitnessed_arrivals(graph: FlowGraph, start: int, free: frozenset[int]) -> list[int]:
    """Every arrival at a node by an unwitnessed edge during a search from ``start`` that
    does not re-expand nodes (a node arriving twice means two distinct paths: a diamond)."""
    arrivals: list[int] = []
    seen = {start}
    todo = [start]
    while todo:
        v = todo.pop()
        for e in graph.out_edges[v]:
            if e in free:
                continue
            w = graph.edges[e][1]
            arrivals.append(w)
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return arrivals
