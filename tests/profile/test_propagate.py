"""Tests of count propagation from chord counters (flow conservation, extra measured edges)."""

import random

import pytest
from hypothesis import given, settings, strategies as st

from wholetrace.errors import InternalError
from wholetrace.instrument.flowgraph import FlowGraph, random_flow_graph
from wholetrace.instrument.placement import CounterPlacement, place_counters
from wholetrace.instrument.weighting import static_weights
from wholetrace.profile.propagate import (
    ExtraEdge,
    early_exit_edges,
    edge_counts_of_walk,
    propagate_counts,
)

P, Q, A, B, R, C, X = range(7)
FIG1 = FlowGraph(7, P, X, ((P, Q), (P, X), (Q, A), (Q, B), (A, R), (B, R), (R, X), (R, C), (C, P)),
                 back_edges=frozenset({8}))
E_PQ, E_PX, E_QA, E_QB, E_AR, E_BR, E_RX, E_RC, E_CP = range(9)
# P Q A R C P Q B R EXIT
FIG3_RUN = [E_PQ, E_QA, E_AR, E_RC, E_CP, E_PQ, E_QB, E_BR, E_RX]


@pytest.mark.nojit
def test_figure3_counts_from_optimal_chords() -> None:
    placement = place_counters(FIG1, static_weights(FIG1))
    truth = edge_counts_of_walk(FIG1, FIG3_RUN)
    counts = propagate_counts(FIG1, placement, {e: truth[e] for e in placement.chords})
    assert list(counts.edges) == truth
    assert counts.activations == 1
    assert counts.nodes == (2, 2, 1, 1, 2, 1, 1)


def test_figure3_case_a_placement_also_solves() -> None:
    case_a = CounterPlacement(chords=(E_PQ, E_QA, E_PX, E_RX), tree=(E_QB, E_AR, E_BR, E_RC, E_CP), cost=16.75)
    truth = edge_counts_of_walk(FIG1, FIG3_RUN * 1)
    counts = propagate_counts(FIG1, case_a, [truth[e] for e in case_a.chords])
    assert list(counts.edges) == truth


# Figure 4: ENTRY branches to A or B, both join at C before EXIT; the run calls exit() in A.
F4 = FlowGraph(5, 0, 1, ((0, 2), (0, 3), (2, 4), (3, 4), (4, 1)))


@pytest.mark.nojit
def test_figure4_early_termination_needs_an_extra_edge() -> None:
    truth = [1, 0, 0, 0, 0]
    placements = [
        CounterPlacement(chords=(1, 2), tree=(0, 3, 4), cost=0.0),  # as drawn: ENTRY->A not measured
        CounterPlacement(chords=(0, 3), tree=(1, 2, 4), cost=0.0),
        CounterPlacement(chords=(3, 4), tree=(0, 1, 2), cost=0.0),
        place_counters(F4, static_weights(F4)),
    ]
    for placement in placements:
        measured = {e: truth[e] for e in placement.chords}
        try:
            wrong = propagate_counts(F4, placement, measured)
        except InternalError:
            pass  # unbalanced
        else:
            assert list(wrong.edges) != truth  # silently wrong
        counts = propagate_counts(F4, placement, measured, early_exit_edges([2], F4.exit))
        assert list(counts.edges) == truth
        assert counts.activations == 1
        assert counts.nodes == (1, 1, 1, 0, 0)
        assert counts.extra == (ExtraEdge(2, 1, 1),)


def test_bad_inputs_are_internal_errors() -> None:
    placement = place_counters(FIG1, static_weights(FIG1))
    with pytest.raises(InternalError):
        propagate_counts(FIG1, placement, [1])
    with pytest.raises(InternalError):
        propagate_counts(FIG1, placement, {0: 1})
    with pytest.raises(InternalError):  # more flow leaves the loop than ever entered it
        propagate_counts(FIG1, placement, {e: 5 if e in (E_PX, E_RX) else 0 for e in placement.chords})


def _activation(g: FlowGraph, rng: random.Random, raises: bool, cut: int | None):
    """One activation: static edges taken, dynamic edges (src, dst), the node where it was cut."""
    v, edges, extra, backs = g.entry, [], [], 0
    targets = [x for x in range(g.num_nodes) if x != g.entry]
    steps = 0
    while v != g.exit:
        if cut is not None and steps >= cut and v != g.entry:
            extra.append((v, g.exit))
            return edges, extra
        steps += 1
        if raises and v != g.entry and len(extra) < 3 and rng.random() < 0.1:
            dst = rng.choice(targets)
            extra.append((v, dst))
            v = dst
            continue
        outs = g.out_edges[v]
        if backs >= 30:
            outs = tuple(e for e in outs if e not in g.back_edges) or outs
        e = outs[rng.randrange(len(outs))]
        backs += e in g.back_edges
        edges.append(e)
        v = g.edges[e][1]
    return edges, extra


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 16), extra=st.integers(0, 10), loops=st.integers(0, 6),
       runs=st.integers(1, 4), raises=st.booleans(), cut=st.none() | st.integers(0, 40),
       random_weights=st.booleans())
def test_random_executions_counts_recovered(seed: int, n: int, extra: int, loops: int, runs: int,
                                            raises: bool, cut: int | None, random_weights: bool) -> None:
    rng = random.Random(seed)
    g = random_flow_graph(rng, n, extra_edges=extra, loops=loops)
    weights = [rng.random() for _ in g.edges] if random_weights else static_weights(g)
    placement = place_counters(g, weights)
    assert len(placement.chords) == (len(g.edges) + 1) - g.num_nodes + 1
    taken: list[int] = []
    dynamic: list[tuple[int, int, int]] = []
    for i in range(runs):
        edges, dyn = _activation(g, rng, raises, cut if i == runs - 1 else None)
        taken += edges
        dynamic += [(s, d, 1) for s, d in dyn]
    truth = edge_counts_of_walk(g, taken)
    counts = propagate_counts(g, placement, [truth[e] for e in placement.chords], dynamic)
    assert list(counts.edges) == truth
    assert counts.activations == runs
    nodes = [0] * g.num_nodes
    for e in taken:
        nodes[g.edges[e][1]] += 1
    for _s, d, c in dynamic:
        nodes[d] += c
    nodes[g.entry] += runs
    assert list(counts.nodes) == nodes


def test_dynamic_entries_and_isolated_handler() -> None:
    # ENTRY 0 -> A 2 -> B 4 -> EXIT 1; handler H 3 (dynamic entry) falls through to B;
    # handler H2 5 has no static edge at all (it re-raises out of the function).
    g = FlowGraph(6, 0, 1, ((0, 2), (2, 4), (4, 1), (3, 4)))
    placement = place_counters(g, static_weights(g))
    # run 1: A raises into H, then B, EXIT; run 2: A raises into H2, which re-raises to EXIT
    truth = [2, 0, 1, 1]
    dynamic = [(2, 3, 1), (2, 5, 1), (5, 1, 1)]
    counts = propagate_counts(g, placement, [truth[e] for e in placement.chords], dynamic)
    assert list(counts.edges) == truth
    assert counts.activations == 2
    assert counts.nodes == (2, 2, 2, 1, 1, 1)
