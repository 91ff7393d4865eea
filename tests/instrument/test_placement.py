"""Tests of counter placement (maximum spanning tree) and witness placement with blocking."""

import itertools
import random

import pytest
from hypothesis import given, settings, strategies as st

from wholetrace.errors import InternalError
from wholetrace.instrument.flowgraph import FlowGraph, random_flow_graph
from wholetrace.instrument.placement import (
    WitnessPlacement,
    blockers,
    build_edges,
    place_counters,
    place_witnesses,
    sort_by_weight,
    spanning_tree,
    verify_witnesses,
)
from wholetrace.instrument.weighting import static_weights

P, Q, A, B, R, C, X = range(7)
FIG1_EDGES = ((P, Q), (P, X), (Q, A), (Q, B), (A, R), (B, R), (R, X), (R, C), (C, P))
FIG1 = FlowGraph(7, P, X, FIG1_EDGES, back_edges=frozenset({8}))
E_PQ, E_PX, E_QA, E_QB, E_AR, E_BR, E_RX, E_RC, E_CP = range(9)


@pytest.mark.nojit
def test_figure3_optimal_chords_cost_11_5() -> None:
    w = static_weights(FIG1)
    placement = place_counters(FIG1, w)
    assert placement.cost == pytest.approx(11.5)
    assert sum(w.edges) + w.virtual - placement.cost == pytest.approx(42.0)  # tree incl. EXIT->P
    chords = set(placement.chords)
    assert {E_PX, E_RX} <= chords
    assert len(chords & {E_QA, E_QB, E_AR, E_BR}) == 2
    assert placement.num_counters == len(FIG1.edges) + 1 - FIG1.num_nodes + 1
    assert set(placement.chords).isdisjoint(placement.tree)
    assert set(placement.chords) | set(placement.tree) == set(range(9))


def cheapest_chords(g: FlowGraph, w: list[float]) -> float:
    """Brute force: the least total weight of the edges left out of a spanning tree that holds
    the virtual edge EXIT -> ENTRY (every tree of ``num_nodes - 2`` real edges is tried)."""
    best = float("inf")
    for tree in itertools.combinations(range(len(g.edges)), g.num_nodes - 2):  # + the virtual edge
        parent = list(range(g.num_nodes))

        def find(x: int) -> int:
            while parent[x] != x:
                x = parent[x]
            return x

        ok = True
        for s, d in [g.edges[e] for e in tree] + [(g.exit, g.entry)]:
            rs, rd = find(s), find(d)
            if rs == rd:
                ok = False
                break
            parent[rs] = rd
        if ok:
            best = min(best, sum(w[e] for e in range(len(g.edges)) if e not in tree))
    return best


def test_figure3_no_spanning_tree_is_cheaper() -> None:
    w = static_weights(FIG1).edges
    assert cheapest_chords(FIG1, list(w)) == pytest.approx(11.5)
    # the placement of Figure 3 case (a) — P->Q, Q->A and both exits measured — costs 16.75
    assert sum(w[e] for e in (E_PQ, E_QA, E_PX, E_RX)) == pytest.approx(16.75)


def test_phases_seed_the_virtual_edge() -> None:
    edges = build_edges(FIG1, [0.0] * 9, with_virtual=True)
    ordered = sort_by_weight(edges)
    assert ordered[0].virtual and ordered[0].id == FIG1.virtual_edge
    tree = spanning_tree(FIG1.num_nodes, ordered)
    assert tree[0].virtual and len(tree) == FIG1.num_nodes - 1
    with pytest.raises(InternalError):
        place_counters(FIG1, [1.0] * 8)
    with pytest.raises(InternalError):
        place_counters(FIG1, [-1.0] + [1.0] * 8)


# A graph built after the caption of the paper's Figure 8: call blocks B, H, I (B also branches).
F8_A, F8_X, F8_B, F8_C, F8_D, F8_E, F8_H, F8_I = range(8)
FIG8 = FlowGraph(
    8, F8_A, F8_X,
    ((F8_A, F8_B), (F8_A, F8_C), (F8_B, F8_D), (F8_B, F8_E), (F8_E, F8_D),
     (F8_D, F8_H), (F8_H, F8_I), (F8_I, F8_X), (F8_C, F8_X)),
    call_nodes=frozenset({F8_B, F8_H, F8_I}),
)
FIG8_W = [6, 4, 1, 5, 5, 6, 6, 6, 4]
F8_BD, F8_HI = 2, 6


def test_figure8_far_blocking_needs_no_extra_witness() -> None:
    assert blockers(FIG8, F8_H) == {F8_BD, 3}
    far = place_witnesses(FIG8, FIG8_W, separate_calls=False)
    near = place_witnesses(FIG8, FIG8_W, blocking="near", separate_calls=False)
    verify_witnesses(FIG8, far)
    verify_witnesses(FIG8, near)
    assert set(far.witnessed) == set(far.blocking) == {0, 1, F8_BD, 3}  # no chord added
    assert F8_HI not in far.witnessed
    assert F8_HI in near.witnessed  # redundant witness of near placement
    assert F8_BD in set(near.witnessed) - near.blocking  # the extra ("white dot") witness
    assert far.cost < near.cost
    # Python's extra need: a witness between the consecutive call blocks H and I
    py = place_witnesses(FIG8, FIG8_W)
    verify_witnesses(FIG8, py)
    assert set(py.witnessed) == {0, 1, F8_BD, 3, F8_HI}


def test_verify_rejects_diamond_and_ambiguous_sets() -> None:
    diamond = FlowGraph(4, 0, 1, ((0, 2), (0, 3), (2, 1), (3, 1)))
    with pytest.raises(InternalError):
        verify_witnesses(diamond, WitnessPlacement.from_edges(diamond, []))
    verify_witnesses(diamond, WitnessPlacement.from_edges(diamond, [0]))
    with pytest.raises(InternalError):  # a branch still sees EXIT without a witness
        verify_witnesses(diamond, WitnessPlacement(witnessed=(0,), has_blocking_property=True))
    cycle = FlowGraph(4, 0, 1, ((0, 2), (2, 3), (3, 2), (3, 1)))
    with pytest.raises(InternalError):
        verify_witnesses(cycle, WitnessPlacement.from_edges(cycle, []))


graph_params = dict(seed=st.integers(0, 2**32), n=st.integers(1, 16), extra=st.integers(0, 10),
                    loops=st.integers(0, 6))


@settings(max_examples=80, deadline=None)
@given(**graph_params, random_weights=st.booleans())
def test_random_counter_placement_sizes(seed: int, n: int, extra: int, loops: int, random_weights: bool) -> None:
    rng = random.Random(seed)
    g = random_flow_graph(rng, n, extra_edges=extra, loops=loops)
    w = [rng.random() * 10 for _ in g.edges] if random_weights else static_weights(g)
    placement = place_counters(g, w)
    assert len(placement.chords) == (len(g.edges) + 1) - g.num_nodes + 1
    assert len(placement.tree) == g.num_nodes - 2


@settings(max_examples=80, deadline=None)
@given(**graph_params, calls=st.floats(0, 1), separate=st.booleans(), near=st.booleans())
def test_random_witness_placement_verifies(seed: int, n: int, extra: int, loops: int, calls: float,
                                           separate: bool, near: bool) -> None:
    rng = random.Random(seed)
    g = random_flow_graph(rng, n, extra_edges=extra, loops=loops, call_fraction=calls)
    placement = place_witnesses(g, static_weights(g), blocking="near" if near else "far",
                                separate_calls=separate)
    verify_witnesses(g, placement)
    assert placement.blocking <= set(placement.witnessed)
    assert set(placement.tree).isdisjoint(placement.witnessed)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 6), extra=st.integers(0, 5), loops=st.integers(0, 3))
def test_random_counter_placement_is_a_maximum_spanning_tree(seed: int, n: int, extra: int, loops: int) -> None:
    """On small random graphs no spanning tree leaves cheaper chords (brute force over all trees)."""
    rng = random.Random(seed)
    g = random_flow_graph(rng, n, extra_edges=extra, loops=loops)
    w = [float(rng.randrange(0, 20)) for _ in g.edges]
    placement = place_counters(g, w)
    assert placement.cost == pytest.approx(cheapest_chords(g, w))
    assert placement.cost == pytest.approx(sum(w[e] for e in placement.chords))


def _paths(g: FlowGraph, longest: int) -> list[tuple[int, ...]]:
    """Every ENTRY -> EXIT path (as edge ids) of at most ``longest`` edges."""
    out: list[tuple[int, ...]] = []
    todo: list[tuple[int, tuple[int, ...]]] = [(g.entry, ())]
    while todo:
        v, path = todo.pop()
        if v == g.exit:
            out.append(path)
            continue
        if len(path) < longest:
            todo += [(g.edges[e][1], path + (e,)) for e in g.out_edges[v]]
    return out


@settings(max_examples=60, deadline=None)
@given(**graph_params, calls=st.floats(0, 1), separate=st.booleans())
def test_random_witness_placement_is_unambiguous_on_every_short_path(seed: int, n: int, extra: int, loops: int,
                                                                       calls: float, separate: bool) -> None:
    """Independently of ``verify_witnesses``: no two ENTRY -> EXIT paths (up to 12 edges) of a
    small random graph write the same witness sequence."""
    rng = random.Random(seed)
    g = random_flow_graph(rng, min(n, 7), extra_edges=min(extra, 4), loops=min(loops, 2), call_fraction=calls)
    placement = place_witnesses(g, static_weights(g), separate_calls=separate)
    wid = placement.witness_of_edge
    seen: dict[tuple[int, ...], tuple[int, ...]] = {}
    for path in _paths(g, 12):
        key = tuple(wid[e] for e in path if e in wid)
        assert seen.setdefault(key, path) == path, (key, path, seen[key])
