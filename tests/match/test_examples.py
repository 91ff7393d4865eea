"""The spec's worked cases (shared/specs/matching.md 5): the paper's Fig. 2, context and
interruption, the summary shape of aEbEcFdFgFh, the corrected chunk skip, and edge cases."""

from __future__ import annotations

import numpy as np
import pytest

import naive_twins as twin
from naive_match import brute_ends, naive_literal
from strategies import symbols_of
from wholetrace.kernels import automaton as K
from wholetrace.match.cftrace import from_symbols
from wholetrace.match.engine import SCHEMES
from wholetrace.match.query import Query
from wholetrace.match.scheme2 import Summaries
from wholetrace.grammar import Grammar

F = lambda f: ("F", f)  # noqa: E731
B = lambda b: ("B", b)  # noqa: E731
E = ("E",)
MAIN, F1 = 0, 1
FIG2 = [F(MAIN), B(1), B(2), F(F1), B(1), B(2), F(F1), B(1), B(2), E, B(3), E, B(3), E]


def _all_schemes(events, fid, path, **kw):
    cs = from_symbols(symbols_of(events), **kw)
    return {s: run(cs, Query(fid, tuple(path)), False, 100) for s, run in SCHEMES.items()}


@pytest.mark.nojit
@pytest.mark.parametrize("ce,segs", [(1, 1), (2, 3), (3, 100), (5, 2), (100, 7)])
def test_fig2_one_occurrence_ending_at_10(ce, segs):
    for scheme, r in _all_schemes(FIG2, F1, [1, 2, 3], chunk_events=ce, segments=segs).items():
        assert (r.count, r.ends) == (1, (10,)), scheme
    assert brute_ends(FIG2, F1, [1, 2, 3]) == [10]
    assert naive_literal(FIG2, [1, 2, 3]) == 0          # interruption: the literal run never appears


def test_fig2_automaton_states():
    """The stack before E2 is (-1,2), after F1 (-1,2,0), before the inner E (-1,2,2), then
    (-1,2), (-1,3) after B3 (a match) and (-1) at E4."""
    sym = [int(x) for x in symbols_of(FIG2)]
    path = (1, 2, 3)
    seen = [twin.automaton(sym[:k], F1, path)[0] for k in (6, 7, 9, 10, 11, 12)]
    assert seen == [[-1, 2], [-1, 2, 0], [-1, 2, 2], [-1, 2], [-1, 3], [-1]]
    cs = from_symbols(np.array(sym[:11]))               # the kernel stack after B3
    stk, top = cs.new_stack()
    st = np.zeros(K.STATE_SIZE, np.int64)
    st[K.S_TOP] = top
    q = Query(F1, path)
    K.scan(np.array(sym[:11], np.int32), 0, stk, st, q.delta, q.col, F1, 3, np.empty(4, np.int64), False)
    assert list(stk[1:st[K.S_TOP]]) == [-1, 3]


def test_context_a_path_split_over_two_invocations_is_no_occurrence():
    ev = [F(MAIN), B(1), B(2), F(F1), B(1), F(F1), B(1), B(2), E, B(3), E, B(3), E]
    for scheme, r in _all_schemes(ev, F1, [1, 2, 3], chunk_events=2, segments=3).items():
        assert r.count == 0, scheme
    # a filter on "blocks whose innermost function is F1" would join B1 | B2 B3 across invocations
    own = [e[1] for i, e in enumerate(ev) if e[0] == "B" and _innermost(ev, i) == F1]
    assert [own[i:i + 3] for i in range(len(own) - 2)].count([1, 2, 3]) == 1


def _innermost(ev, i):
    stack = []
    for e in ev[:i]:
        if e[0] == "F":
            stack.append(e[1])
        elif e[0] == "E":
            stack.pop()
    return stack[-1] if stack else None


def test_summary_shape_of_aEbEcFdFgFh():
    """d = 2 old levels popped, 3 new levels pushed: the paper's fentry 3, fexit 4."""
    a, b, c, d, g, h = (("B", 0),) * 6
    ev = [a, E, b, E, c, F(2), d, F(2), g, F(1), h]
    sym = symbols_of(ev)
    grammar = Grammar(np.array([0, 1, 1 + len(sym)]), np.concatenate([[-1], sym]).astype(np.int64))
    s = Summaries(grammar, Query(1, (0,)))
    s.ensure(0, 1)
    assert (s.d[1], s.plen[1]) == (2, 3)
    assert list(s.push[s.poff[1]:s.poff[1] + 3]) == [-1, -1, 1]   # h completed the path in F1's level
    assert s.cnt[1] == 1


def test_chunk_ending_right_after_entering_the_target_is_not_skipped():
    """The paper's blocks-only bit would skip chunk 1 (it holds no block of F1, only F(F1))
    and leave -1 where 0 belongs; the corrected index marks it."""
    ev = [F(MAIN), B(5), F(F1), B(1), B(2), E]
    cs = from_symbols(symbols_of(ev), chunk_events=3, segments=2)
    assert list(cs.chunks.marked(F1)) == [True, True]
    assert list(cs.segments.marked(F1)) == [True, True]
    for scheme, r in _all_schemes(ev, F1, [1, 2], chunk_events=3, segments=2).items():
        assert (r.count, r.ends) == (1, (4,)), scheme


def test_skip_pads_with_minus_one():
    """(-1) across an unmarked chunk that enters three levels and leaves none: (-1,-1,-1,-1)."""
    ev = [F(MAIN), F(2), F(3), F(2), B(0)]
    cs = from_symbols(symbols_of(ev), chunk_events=1)
    assert list(cs.chunks.min_depth) == [0, 1, 2, 3, 4]
    assert list(cs.chunks.exit_depth) == [1, 2, 3, 4, 4]
    assert not cs.chunks.marked(F1).any()


@pytest.mark.parametrize("events,path,want", [
    ([F(F1), B(1), B(1), B(1), E], [1, 1], [2, 3]),           # overlapping occurrences count
    ([F(F1), B(4), E, F(F1), B(4)], [4], [1, 4]),              # m = 1, trailing open invocation counts
    ([B(1), B(2), F(F1), B(1), B(2), E], [1, 2], [4]),         # blocks before any F are ignored
    ([E, E, F(F1), B(1), B(2), E, B(1), B(2)], [1, 2], [4]),   # a truncated head (leading E)
    ([B(2), E, F(F1), B(2)], [2], [3]),
    ([], [1], []),                                             # the empty trace
    ([F(F1), B(1), F(F1), B(1), B(2), E, B(2), E], [1, 2], [4, 6]),  # recursion: matched apart
    ([F(F1), B(1), B(9), B(2), E], [1, 2], []),                # a block not in P resets
])
def test_edge_cases(events, path, want):
    assert brute_ends(events, F1, path) == want
    for ce, segs in ((1, 1), (2, 2), (64, 64)):
        for scheme, r in _all_schemes(events, F1, path, chunk_events=ce, segments=segs).items():
            assert (r.count, list(r.ends)) == (len(want), want), (scheme, ce, segs)
