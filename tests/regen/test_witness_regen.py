"""Tests of regeneration of block sequences from witness traces (Figure 7, lazily, with events)."""

import random

import pytest
from hypothesis import given, settings, strategies as st

from wholetrace.errors import InternalError
from wholetrace.instrument.flowgraph import FlowGraph, random_flow_graph
from wholetrace.instrument.placement import WitnessPlacement, place_witnesses, verify_witnesses
from wholetrace.instrument.weighting import static_weights
from wholetrace.regen.witness import FunctionRegenerator, regenerate, witnesses_of_edges

# The paper's Figure 6: predicates P (root), B and C; witnesses t on P->A, u on B->A, v on B->C.
P, X, A, B, C = range(5)
FIG6 = FlowGraph(5, P, X, ((P, A), (B, A), (B, C), (P, B), (A, C), (C, P), (C, X)))
T, U, V = 0, 1, 2
FIG6_W = WitnessPlacement.from_edges(FIG6, [0, 1, 2])


@pytest.mark.nojit
def test_figure6_trace_t_u_v_eof() -> None:
    verify_witnesses(FIG6, FIG6_W)
    assert list(regenerate(FIG6, FIG6_W, [T, U, V])) == [P, A, C, P, B, A, C, P, B, C, X]
    assert witnesses_of_edges(FIG6_W, [0, 4, 5, 3, 1, 4, 5, 3, 2, 6]) == [T, U, V]


def test_figure6_without_witness_on_p_a_is_ambiguous() -> None:
    bad = WitnessPlacement.from_edges(FIG6, [1, 2])
    with pytest.raises(InternalError):
        verify_witnesses(FIG6, bad)
    # (P A C P B C EXIT) and (P B C EXIT) both write (v, EOF)
    assert witnesses_of_edges(bad, [0, 4, 5, 3, 2, 6]) == witnesses_of_edges(bad, [3, 2, 6])


def test_lazy_steps_and_bad_traces() -> None:
    regen = FunctionRegenerator(FIG6, FIG6_W, track_edges=True)
    assert regen.start() == [P]
    assert regen.feed(T) == [A]  # stops at the target of the witnessed edge
    assert regen.feed(U) == [C, P, B, A]
    assert regen.jump(C, X) == [C, X]  # raised in C, propagated out of the function
    assert regen.done and regen.finish() == []
    assert regen.edges == [0, 4, 5, 3, 1, 4, None]
    assert list(regenerate(FIG6, FIG6_W, [U])) == [P, B, A, C, X]
    with pytest.raises(InternalError):
        list(regenerate(FIG6, FIG6_W, [9]))  # no such witness
    with pytest.raises(InternalError):
        regen.feed(T)  # activation already over


def _events(g: FlowGraph, placement: WitnessPlacement, rng: random.Random, raises: bool):
    """A random execution as the runtime would record it, and its true block/edge sequences."""
    wid = placement.witness_of_edge
    v, backs = g.entry, 0
    nodes, edges, events = [v], [], []
    targets = [x for x in range(g.num_nodes) if x != g.entry]
    n_raise = 0
    while v != g.exit:
        if raises and v != g.entry and n_raise < 3 and rng.random() < 0.1:
            n_raise += 1
            dst = rng.choice(targets)
            events.append(("raise", v, dst))
            edges.append(None)
        else:
            outs = g.out_edges[v]
            if backs >= 30:
                outs = tuple(e for e in outs if e not in g.back_edges) or outs
            e = outs[rng.randrange(len(outs))]
            backs += e in g.back_edges
            if e in wid:
                events.append(("w", wid[e]))
            edges.append(e)
            dst = g.edges[e][1]
        v = dst
        nodes.append(v)
        while v in g.call_nodes and rng.random() < 0.6:
            events.append(("enter", v))
    if not events or events[-1][0] != "raise" or events[-1][2] != g.exit:
        events.append(("leave",))
    return nodes, edges, events


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 16), extra=st.integers(0, 10), loops=st.integers(0, 6),
       calls=st.floats(0, 1), raises=st.booleans(), near=st.booleans(), runs=st.integers(1, 3))
def test_random_executions_regenerate_exactly(seed: int, n: int, extra: int, loops: int, calls: float,
                                              raises: bool, near: bool, runs: int) -> None:
    rng = random.Random(seed)
    g = random_flow_graph(rng, n, extra_edges=extra, loops=loops, call_fraction=calls)
    placement = place_witnesses(g, static_weights(g), blocking="near" if near else "far")
    verify_witnesses(g, placement)
    for _ in range(runs):
        nodes, edges, events = _events(g, placement, rng, raises)
        if not raises:
            witnesses = [ev[1] for ev in events if ev[0] == "w"]
            assert list(regenerate(g, placement, witnesses)) == nodes
        regen = FunctionRegenerator(g, placement, track_edges=True)
        out = regen.start()
        for ev in events:
            if ev[0] == "w":
                out += regen.feed(ev[1])
            elif ev[0] == "enter":
                out += regen.to_call()
                assert regen.pc == ev[1]  # the child activation is attributed to its call block
                assert out[-1] == ev[1]
            elif ev[0] == "raise":
                out += regen.jump(ev[1], ev[2])
            else:
                out += regen.finish()
        assert out == nodes
        assert regen.edges == edges
        assert regen.done


def test_dynamic_entries_regenerate() -> None:
    # ENTRY 0 -> A 2 (call) -> B 4 -> EXIT 1; handler H 3 falls through to B; H2 5 has no static edges
    g = FlowGraph(6, 0, 1, ((0, 2), (2, 4), (4, 1), (3, 4)), call_nodes=frozenset({2}))
    placement = place_witnesses(g, static_weights(g))
    verify_witnesses(g, placement)
    regen = FunctionRegenerator(g, placement)
    out = regen.start() + regen.to_call()
    assert out == [0, 2]
    out += regen.jump(2, 3) + regen.finish()
    assert out == [0, 2, 3, 4, 1]
    regen = FunctionRegenerator(g, placement)
    out = regen.start() + regen.jump(2, 5) + regen.jump(5, 1)
    assert out == [0, 2, 5, 1] and regen.done
