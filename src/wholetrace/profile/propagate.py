"""Derive every edge and block count of a function from its chord counters by flow conservation."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from wholetrace.errors import InternalError
from wholetrace.instrument.flowgraph import FlowGraph
from wholetrace.instrument.placement import CounterPlacement


@dataclass(frozen=True)
class ExtraEdge:
    """A measured edge outside the static CFG: a dynamic exception edge (raising block →
    handler or EXIT) or an early-termination edge (active block → EXIT, the paper's Figure 4)."""

    src: int
    dst: int
    count: int


@dataclass(frozen=True)
class FlowCounts:
    """All counts of one function: per edge id, per node, activations (virtual EXIT→ENTRY)."""

    edges: tuple[int, ...]
    nodes: tuple[int, ...]
    activations: int
    extra: tuple[ExtraEdge, ...] = ()


def early_exit_edges(active_nodes: Iterable[int], exit_node: int) -> list[ExtraEdge]:
    """One edge to EXIT per frame still active when the program ended (merged by node)."""
    per_node: dict[int, int] = {}
    for v in active_nodes:
        per_node[v] = per_node.get(v, 0) + 1
    return [ExtraEdge(v, exit_node, c) for v, c in sorted(per_node.items())]


def merge_extra(edges: Iterable[ExtraEdge | tuple[int, int, int]]) -> tuple[ExtraEdge, ...]:
    """Extra edges summed per (src, dst), sorted."""
    total: dict[tuple[int, int], int] = {}
    for x in edges:
        src, dst, count = (x.src, x.dst, x.count) if isinstance(x, ExtraEdge) else x
        total[(src, dst)] = total.get((src, dst), 0) + count
    return tuple(ExtraEdge(s, d, c) for (s, d), c in sorted(total.items()))


def _chord_map(placement: CounterPlacement, chord_counts: Mapping[int, int] | Sequence[int]) -> dict[int, int]:
    if isinstance(chord_counts, Mapping):
        counts = {int(e): int(c) for e, c in chord_counts.items()}
        if set(counts) != set(placement.chords):
            raise InternalError("propagate: chord counts do not match the placement's chords")
        return counts
    if len(chord_counts) != len(placement.chords):
        raise InternalError(f"propagate: {len(chord_counts)} counts for {len(placement.chords)} chords")
    return {e: int(c) for e, c in zip(placement.chords, chord_counts)}


def propagate_counts(graph: FlowGraph, placement: CounterPlacement,
                     chord_counts: Mapping[int, int] | Sequence[int],
                     extra: Iterable[ExtraEdge | tuple[int, int, int]] = ()) -> FlowCounts:
    """Every edge count from the chord counts (by id, or in ``placement.chords`` order).

    ``extra`` are measured edges outside the CFG (exception edges, early termination);
    they enter the flow equations as known counts.  Tree edges — the virtual EXIT→ENTRY
    edge among them, whose count is the number of activations — are solved leaf by leaf.
    Raises InternalError if the counts are inconsistent (a negative or unbalanced result).
    """
    known = _chord_map(placement, chord_counts)
    extras = merge_extra(extra)
    n = graph.num_nodes
    # balance[v] = (known inflow) - (known outflow); at the end every node balances.
    balance = [0] * n
    for e, c in known.items():
        src, dst = graph.edges[e]
        balance[dst] += c
        balance[src] -= c
    for x in extras:
        if not (0 <= x.src < n and 0 <= x.dst < n) or x.count < 0:
            raise InternalError(f"propagate: bad extra edge {x}")
        balance[x.dst] += x.count
        balance[x.src] -= x.count
    virtual = graph.virtual_edge
    ends = {e: graph.edges[e] for e in placement.tree}
    ends[virtual] = (graph.exit, graph.entry)
    incident: list[list[int]] = [[] for _ in range(n)]
    for e, (src, dst) in ends.items():
        incident[src].append(e)
        incident[dst].append(e)
    unknown = [len(x) for x in incident]
    solved: dict[int, int] = {}
    leaves = deque(v for v in range(n) if unknown[v] == 1)
    while leaves:
        v = leaves.popleft()
        if unknown[v] != 1:
            continue
        e = next(t for t in incident[v] if t not in solved)
        src, dst = ends[e]
        count = -balance[v] if dst == v else balance[v]
        solved[e] = count
        balance[src] -= count
        balance[dst] += count
        unknown[src] -= 1
        unknown[dst] -= 1
        other = src if dst == v else dst
        if unknown[other] == 1:
            leaves.append(other)
    if len(solved) != len(ends):
        raise InternalError("propagate: tree edges left unsolved (the tree has a cycle)")
    if any(balance):
        raise InternalError("propagate: counts violate flow conservation")
    if any(c < 0 for c in solved.values()):
        raise InternalError("propagate: negative derived count (missing extra edges?)")
    edge_counts = [0] * len(graph.edges)
    for e, c in known.items():
        edge_counts[e] = c
    for e, c in solved.items():
        if e != virtual:
            edge_counts[e] = c
    activations = solved[virtual]
    node_counts = [0] * n
    for e, (_src, dst) in enumerate(graph.edges):
        node_counts[dst] += edge_counts[e]
    for x in extras:
        node_counts[x.dst] += x.count
    node_counts[graph.entry] += activations
    return FlowCounts(tuple(edge_counts), tuple(node_counts), activations, extras)


def edge_counts_of_walk(graph: FlowGraph, edges: Iterable[int]) -> list[int]:
    """Edge counts of executions given as their edge ids (for oracles and tests)."""
    counts = [0] * len(graph.edges)
    for e in edges:
        counts[e] += 1
    return counts
