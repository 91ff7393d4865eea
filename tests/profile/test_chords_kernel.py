"""The batched chord propagation kernel (``kernels.chords``) against its twin ``propagate_counts``
(one function at a time), on random flow graphs with counts from random walks (the walk is the
ground truth) and with measured extra edges; corrupt counts give a status, never a crash."""

from __future__ import annotations

import random

import numpy as np
import pytest

from wholetrace.errors import InternalError
from wholetrace.instrument.flowgraph import FlowGraph, random_flow_graph
from wholetrace.instrument.placement import place_counters
from wholetrace.instrument.weighting import static_weights
from wholetrace.kernels.chords import ST_CYCLE, ST_NEGATIVE, ST_OK, ST_UNBALANCED, propagate_chords
from wholetrace.profile.propagate import ExtraEdge, propagate_counts


def _walks(graph: FlowGraph, rng: random.Random, runs: int) -> tuple[list[int], list[ExtraEdge]]:
    """Edge counts of ``runs`` random walks from ENTRY (each at most 200 steps; a walk cut
    short ends with an early-exit edge to EXIT)."""
    counts = [0] * len(graph.edges)
    early: dict[int, int] = {}
    outs = graph.out_edges
    for _ in range(runs):
        v = graph.entry
        for _step in range(200):
            if v == graph.exit:
                break
            e = rng.choice(outs[v])
            counts[e] += 1
            v = graph.edges[e][1]
        else:
            early[v] = early.get(v, 0) + 1
    return counts, [ExtraEdge(v, graph.exit, n) for v, n in sorted(early.items())]


def _batch(cases: list[tuple[FlowGraph, tuple[int, ...], list[int], list[ExtraEdge]]]):  # type: ignore[no-untyped-def]
    """Run the kernel on ``(graph, chords, chord counts, extra edges)`` of many functions."""
    nb = np.array([g.num_nodes for g, *_ in cases], np.int64)
    ne = np.array([len(g.edges) for g, *_ in cases], np.int64)
    nbase, ebase = np.cumsum(nb) - nb, np.cumsum(ne) - ne
    src = np.array([s for g, *_ in cases for s, _ in g.edges], np.int64)
    dst = np.array([d for g, *_ in cases for _, d in g.edges], np.int64)
    known = np.full(len(src), -1, np.int64)
    balance = np.zeros(int(nb.sum()), np.int64)
    for f, (_g, chords, counts, extra) in enumerate(cases):
        known[ebase[f] + np.array(chords, np.int64)] = counts
        for x in extra:
            balance[nbase[f] + x.dst] += x.count
            balance[nbase[f] + x.src] -= x.count
    edges, nodes = np.zeros(len(src), np.int64), np.zeros(len(balance), np.int64)
    acts, status = np.zeros(len(cases), np.int64), np.full(len(cases), -1, np.int64)
    propagate_chords(np.stack([nbase, nb, ebase, ne], axis=1), src, dst, known, balance, edges, nodes, acts, status)
    return [(status[f], edges[ebase[f]:ebase[f] + ne[f]].tolist(), nodes[nbase[f]:nbase[f] + nb[f]].tolist(),
             int(acts[f])) for f in range(len(cases))]


@pytest.mark.nojit
@pytest.mark.parametrize("seed", range(4))
def test_kernel_equals_its_twin_on_random_walks(seed: int) -> None:
    rng = random.Random(seed)
    cases, truths = [], []
    for _ in range(40):
        graph = random_flow_graph(rng, rng.randrange(0, 14), extra_edges=rng.randrange(4), loops=rng.randrange(3))
        counts, extra = _walks(graph, rng, rng.randrange(0, 6))
        placement = place_counters(graph, static_weights(graph))
        cases.append((graph, placement.chords, [counts[e] for e in placement.chords], extra))
        twin = propagate_counts(graph, placement, [counts[e] for e in placement.chords], extra)
        assert list(twin.edges) == counts                               # the twin recovers the walk
        node_in = [0] * graph.num_nodes                                 # the kernel's nodes: static inflow
        for e, (_s, d) in enumerate(graph.edges):                       # and activations (extra edges are
            node_in[d] += counts[e]                                     # added by its caller)
        node_in[graph.entry] += twin.activations
        truths.append((counts, node_in, twin.activations))
    for (status, edges, nodes, acts), (counts, node_in, activations) in zip(_batch(cases), truths):
        assert (status, edges, nodes, acts) == (ST_OK, counts, node_in, activations)


@pytest.mark.nojit
@pytest.mark.parametrize("seed", range(3))
def test_corrupt_counts_give_the_twins_error_as_a_status(seed: int) -> None:
    """Random chord sets (not always a spanning tree's complement) with random counts: where
    the twin raises, the kernel's status names the same failure; elsewhere the same counts."""
    from wholetrace.instrument.placement import CounterPlacement

    rng = random.Random(100 + seed)
    cases, twins = [], []
    for _ in range(60):
        graph = random_flow_graph(rng, rng.randrange(0, 8), extra_edges=rng.randrange(3), loops=rng.randrange(2))
        ne = len(graph.edges)
        chords = tuple(sorted(rng.sample(range(ne), rng.randrange(ne + 1))))
        counts = [rng.randrange(4) for _ in chords]
        extra = [ExtraEdge(rng.randrange(graph.num_nodes), graph.exit, rng.randrange(1, 3))
                 for _ in range(rng.randrange(2))]
        tree = tuple(e for e in range(ne) if e not in chords)
        try:
            twins.append(propagate_counts(graph, CounterPlacement(chords, tree, 0.0), counts, extra))
        except InternalError as err:
            twins.append(str(err))
        cases.append((graph, chords, counts, extra))
    want = {"cycle": ST_CYCLE, "conservation": ST_UNBALANCED, "negative": ST_NEGATIVE}
    kinds = set()
    for (status, edges, _nodes, acts), twin in zip(_batch(cases), twins):
        if isinstance(twin, str):
            assert status == next(v for k, v in want.items() if k in twin), twin
        else:
            assert (status, edges, acts) == (ST_OK, list(twin.edges), twin.activations)
        kinds.add(int(status))
    assert kinds >= {ST_OK, ST_CYCLE, ST_UNBALANCED}, kinds     # the cases reach each failure (negative: rarely)
