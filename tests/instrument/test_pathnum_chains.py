"""Forced chains in path numbering (``pathnum.choose_cuts`` with quiet blocks): the cut into a call
block is left out only where the regenerator can infer it, checked against brute-force path
enumeration on the original graph (every path that takes such an edge runs, from where it starts,
through quiet single-successor blocks only), plus the numbering oracles of ``test_pathnum``."""

from __future__ import annotations

import ast
import random
import textwrap

from hypothesis import given, settings, strategies as st

from test_pathnum import BRUTE_LIMIT, check_numbering, enumerate_paths, oracle_starts
from wholetrace.instrument.cfg import build_module
from wholetrace.instrument.flowgraph import FlowGraph, random_flow_graph
from wholetrace.instrument.pathnum import number_cfg, number_paths, quiet_blocks, quiet_statement


def uncut_call_edges(num) -> set[int]:  # type: ignore[no-untyped-def]
    g = num.graph
    return {e for e, (s, d) in enumerate(g.edges) if d in g.call_nodes and s != g.entry and e not in num.cuts}


def chain_oracle(num, quiet: set[int], dynamic: set[int]) -> None:  # type: ignore[no-untyped-def]
    """Every enumerated path that takes an uncut edge into a call block (not from ENTRY) has
    only quiet blocks with one successor before it, from its first block on."""
    g = num.graph
    uncut = uncut_call_edges(num)
    starts = oracle_starts(g, num.cuts, dynamic)
    for p in enumerate_paths(g, num.cuts, starts, BRUTE_LIMIT):
        blocks = [] if p.start == g.entry else [p.start]
        for e in p.edges:
            if e in uncut:
                assert blocks and all(b in quiet and b not in g.call_nodes and len(g.out_edges[b]) == 1
                                      for b in blocks), (p, e)
            blocks.append(g.edges[e][1])


def test_entry_chain_is_not_cut() -> None:
    # ENTRY -> 2 (quiet) -> 3 (call) -> EXIT
    g = FlowGraph(4, 0, 1, ((0, 2), (2, 3), (3, 1)), call_nodes=frozenset({3}))
    assert number_paths(g).cuts == {1}
    num = number_paths(g, quiet={2})
    assert num.cuts == frozenset() and num.num_paths == 1 and num.quiet == {2}
    assert check_numbering(num) == 1


def test_two_quiet_blocks_then_a_call() -> None:
    # ENTRY -> 2 -> 3 -> 4 (call) -> EXIT; 3 is also reached by a cut from 4 (a loop through 4)
    g = FlowGraph(5, 0, 1, ((0, 2), (2, 3), (3, 4), (4, 1), (4, 3)), frozenset({4}), frozenset({4}))
    assert number_paths(g, quiet={2}).cuts == {2}            # 3 is not quiet: cut 3->4
    num = number_paths(g, quiet={2, 3})
    # 3 has an uncut way in from 4 (a call block): the back edge 4->3 is not needed once 3->4 is
    # cut, so the chain does not hold and 3->4 stays cut (skipping it instead would bring the
    # back edge's cut back: one record per iteration either way)
    assert num.cuts == {2}
    g3 = FlowGraph(5, 0, 1, ((0, 2), (2, 3), (3, 4), (4, 1)), call_nodes=frozenset({4}))
    num3 = number_paths(g3, quiet={2, 3})
    assert num3.cuts == frozenset() and number_paths(g3, quiet={3}).cuts == {2}
    chain_oracle(num, {2, 3}, set())
    assert check_numbering(num) == num.num_paths


def test_a_branch_or_an_uncut_way_in_keeps_the_cut() -> None:
    # 2 branches to 3 (call) and 4; 4 -> 3
    g = FlowGraph(5, 0, 1, ((0, 2), (2, 3), (2, 4), (4, 3), (3, 1)), call_nodes=frozenset({3}))
    num = number_paths(g, quiet={2, 4})
    assert num.cuts == {1, 3}       # 2 has two successors; 4 is reached from 2, which branches
    # a quiet block reached by an uncut edge from a call block: 2 (call) -> 3 (quiet) -> 4 (call)
    g2 = FlowGraph(5, 0, 1, ((0, 2), (2, 3), (3, 4), (4, 1)), call_nodes=frozenset({2, 4}))
    assert number_paths(g2, quiet={3}).cuts == {2}


def test_dynamic_entry_starts_a_chain() -> None:
    # 5 is a handler (no normal way in): 5 (quiet) -> 3 (call)
    g = FlowGraph(6, 0, 1, ((0, 2), (2, 3), (3, 1), (5, 3)), call_nodes=frozenset({2, 3}))
    num = number_paths(g, starts={5}, quiet={5})
    assert num.cuts == {1}
    chain_oracle(num, {5}, {5})
    assert check_numbering(num, {5}) == num.num_paths


graph_params = dict(seed=st.integers(0, 2**32), n=st.integers(1, 14), extra=st.integers(0, 8),
                    loops=st.integers(0, 5), calls=st.floats(0, 1), dyn=st.integers(0, 3),
                    quiet=st.floats(0, 1))


@settings(max_examples=200, deadline=None)
@given(**graph_params)
def test_random_graphs_with_quiet_blocks(seed: int, n: int, extra: int, loops: int, calls: float,
                                         dyn: int, quiet: float) -> None:
    rng = random.Random(seed)
    g = random_flow_graph(rng, n, extra_edges=extra, loops=loops, call_fraction=calls)
    dynamic = {rng.randrange(2, g.num_nodes) for _ in range(dyn)} if g.num_nodes > 2 else set()
    q = {v for v in range(2, g.num_nodes) if rng.random() < quiet}
    num = number_paths(g, starts=dynamic, quiet=q)
    larus = number_paths(g, starts=dynamic)
    assert uncut_call_edges(larus) == set()
    assert num.cuts - larus.cuts <= set(g.back_edges) | {e for e, (_s, d) in enumerate(g.edges) if d not in g.call_nodes}
    if num.num_paths <= BRUTE_LIMIT:
        chain_oracle(num, q, dynamic)
    assert check_numbering(num, dynamic) == num.num_paths or num.num_paths > BRUTE_LIMIT


def _stmt(src: str) -> ast.stmt:
    return ast.parse(textwrap.dedent(src)).body[0]


def test_quiet_statements() -> None:
    quiet = ['x = y', 'x = 1', 'x = y = None', 'x: int = 0', 'pass', '"doc"', 'x = (a, [b, 1])', 'x = {}',
             'a, b = c, d']
    loud = ['x = y.z', 'x.y = 1', 'x[0] = 1', 'x = y + 1', 'x += 1', 'x = f()', 'a, b = c', 'x: int',
            'x = {1: 2}', 'x = [*y]', 'del x', 'f()', 'assert x', 'x = y[0]', 'x = -y', 'x = y or z',
            'x = lambda: 1', 'x = f"{y}"', 'return x', 'raise E', 'import m']
    assert [s for s in quiet if not quiet_statement(_stmt(s))] == []
    assert [s for s in loud if quiet_statement(_stmt(s))] == []


def test_quiet_blocks_of_a_cfg() -> None:
    src = textwrap.dedent('''
        def f(r, xs):
            d = r
            assert isinstance(d, int)
            for x in xs:
                y = x
                g(y)
            e = d.real
            g(e)
        def gen(n):
            i = n
            yield i
    ''')
    cfgs = {c.qualname: c for c in build_module(src)}
    f = cfgs["f"]
    blocks = {f.stmts[b.stmts[0]].line: b.id for b in f.blocks[2:]}
    q = quiet_blocks(f)
    assert blocks[3] in q and blocks[6] in q            # d = r; y = x
    assert blocks[8] not in q                            # e = d.real (a property could run)
    num = number_cfg(f)
    g_ = num.graph
    uncut = {g_.edges[e] for e in uncut_call_edges(num)}
    assert uncut == {(blocks[3], blocks[4])}            # y = x follows the for-next header: cut
    assert quiet_blocks(cfgs["gen"]) == frozenset()      # a chain never ends at a yield
    # a CFG read back from a recording has no statements' AST: renumbered without quiet blocks
    from wholetrace.instrument.cfg import CFG
    back = CFG.from_json(f.to_json())
    assert quiet_blocks(back) == frozenset()
    assert number_cfg(back, quiet=q).cuts == num.cuts
    assert uncut_call_edges(number_cfg(back)) == set()
