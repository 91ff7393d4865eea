"""Minimal hot subpaths: the O(E·L) kernel against the brute-force reference semantics
(``naive_hot``), the Figure 5 example, and sanity against the expanded sequence."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grammars import expand, grammar_rules, make_grammar, random_grammar
from naive_hot import naive_hot
from wholetrace.errors import GrammarError, UsageError
from wholetrace.grammar import sequitur
from wholetrace.wpp.hot import hot_subpaths
from wholetrace.wpp.queries import occurrences


def fast_vs_reference(rules: list[list[int]], costs: list[int], min_len: int, L: int, min_cost: int) -> int:
    """Assert equal reports, prefixes and suffix starts; return the number of reports."""
    g = make_grammar(rules)
    res = hot_subpaths(g, costs, min_cost=min_cost, max_length=L, min_length=min_len)
    ref = naive_hot(rules, costs, min_len, L, min_cost)
    got = Counter(zip(res.reports.rule.tolist(), res.reports.start.tolist(), res.reports.length.tolist()))
    want = Counter((r, s, n) for r, sc in ref.items() for s, n in sc.reports)
    assert got == want
    for r, sc in ref.items():
        assert res.prefix_length[r] == sc.prefix, r
        if sc.prefix < len(expand(rules, r)):
            assert res.suffix_start[r] == sc.suffix_start, r
    freq = g.frequencies()
    for i in range(len(res.reports)):
        r, s, n = int(res.reports.rule[i]), int(res.reports.start[i]), int(res.reports.length[i])
        sub = expand(rules, r)[s:s + n]
        assert res.reports.symbols(i).tolist() == sub
        assert res.reports.cost[i] == sum(costs[x] for x in sub) * freq[r]
    return len(res.reports)


# ---------------------------------------------------------------- Figure 5

FIG5 = [[-1, -1, -1], [-2, -3], [0, 1], [1, 2]]   # S -> A A A, A -> B C, B -> a b, C -> b c


@pytest.mark.nojit
def test_figure5_toy() -> None:
    """abbcabbcabbc, unit costs, length 2..3, cost >= 6: ab and bc (spec §3.2)."""
    g = make_grammar(FIG5)
    assert g.frequencies().tolist() == [1, 3, 3, 3]
    res = hot_subpaths(g, [1, 1, 1], min_cost=6, max_length=3, min_length=2)
    assert [(h.symbols, h.frequency, h.cost) for h in res.subpaths] == [((0, 1), 3, 6), ((1, 2), 3, 6)]
    assert fast_vs_reference(FIG5, [1, 1, 1], 2, 3, 6) == 2
    # bb and ca are hot too (cost 2x3 and, as an LCA-less sequence, 2x2 = 4 at A): not minimal here
    assert occurrences(g, [1, 1]) == 3 and occurrences(g, [2, 0]) == 2


def test_figure5_lower_threshold_finds_more() -> None:
    g = make_grammar(FIG5)
    res = hot_subpaths(g, [1, 1, 1], min_cost=3, max_length=3, min_length=1)
    # every single symbol of B and C is hot at frequency 3
    assert {h.symbols for h in res.subpaths} == {(0,), (1,), (2,)}
    assert fast_vs_reference(FIG5, [1, 1, 1], 1, 3, 3) == 4


def test_fix_iii_suffix_never_takes_back_reported_symbols() -> None:
    """S -> a C, C -> x x x x, L = 3: S reports "a x x" inside C's prefix; its window must
    continue after it (positions 3, 4), not with C's whole suffix (positions 2..4)."""
    rules = [[0, -1], [1, 1, 1, 1]]
    res = hot_subpaths(make_grammar(rules), [2, 0], min_cost=2, max_length=3, min_length=3)
    assert [(h.symbols, h.rules) for h in res.subpaths] == [((0, 1, 1), (0,))]
    assert res.suffix_start[0] == 3
    assert fast_vs_reference(rules, [2, 0], 3, 3, 2) == 1


@pytest.mark.parametrize("rules, costs, min_len, L, min_cost, reports", [
    # S -> B A a, A -> a, B -> D E a, D -> a F, F -> a b a, E -> (empty): E(S) = a a b a a a a.
    # B (a a b a a, 5 > L symbols) freezes S's prefix at a a b a (fix i); S's window continues
    # from B's suffix a b a a and reports a a a a at 3..6, so S's prefix must end at 3.
    ([[-2, -1, 0], [0], [-3, -5, 0], [0, -4], [0, 1, 0], []], [2, 0], 1, 4, 7, [(0, 3, 4)]),
    # S -> b R, R -> C b, C -> a a b a a: R reports b a a b at 2..5 after C froze its prefix at
    # a a b a; with the stale prefix S re-reported b + a a b, taking back R's symbol b.
    ([[1, -1], [-2, 1], [0, 0, 1, 0, 0]], [0, 3], 1, 4, 6, [(1, 2, 4)]),
])
def test_fix_iv_report_cuts_a_frozen_prefix(rules: list[list[int]], costs: list[int], min_len: int, L: int,
                                            min_cost: int, reports: list[tuple[int, int, int]]) -> None:
    """A report that starts inside a prefix frozen by a non-covering child cuts the prefix back."""
    res = hot_subpaths(make_grammar(rules), costs, min_cost=min_cost, max_length=L, min_length=min_len)
    assert list(zip(res.reports.rule.tolist(), res.reports.start.tolist(), res.reports.length.tolist())) == reports
    assert res.prefix_length[reports[0][0]] == reports[0][1]
    fast_vs_reference(rules, costs, min_len, L, min_cost)


# ---------------------------------------------------------------- random grammars

@settings(max_examples=400, deadline=None)
@given(rules=random_grammar(), data=st.data())
def test_random_grammars_equal_reference(rules: list[list[int]], data: st.DataObject) -> None:
    nt = max([x for r in rules for x in r if x >= 0], default=0) + 1
    costs = data.draw(st.lists(st.integers(0, 3), min_size=nt, max_size=nt))
    L = data.draw(st.integers(1, 8))
    min_len = data.draw(st.integers(1, L))
    min_cost = data.draw(st.integers(1, 30))
    fast_vs_reference(rules, costs, min_len, L, min_cost)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 400), alphabet=st.integers(1, 5),
       L=st.integers(1, 12), min_cost=st.integers(1, 60), lookahead=st.booleans())
def test_sequitur_grammars_equal_reference(seed: int, n: int, alphabet: int, L: int, min_cost: int,
                                           lookahead: bool) -> None:
    rng = random.Random(seed)
    period = [rng.randrange(alphabet) for _ in range(rng.randint(1, 7))]
    seq = [period[i % len(period)] if rng.random() < 0.9 else rng.randrange(alphabet) for i in range(n)]
    g = sequitur(np.array(seq), lookahead=lookahead)
    costs = [rng.randint(0, 3) for _ in range(alphabet)]
    min_len = rng.randint(1, L)
    fast_vs_reference(grammar_rules(g), costs, min_len, L, min_cost)


def test_sanity_on_expanded_sequence() -> None:
    """Every subpath occurs in the expansion, has min..max length, and true count x unit cost
    >= reported cost >= C; the frequency is a lower bound of the true count."""
    rng = random.Random(7)
    seq = []
    for _ in range(300):
        seq += rng.choice([[1, 2, 3], [1, 2, 4, 5], [6], [1, 7, 7, 7, 7, 2]])
    g = sequitur(np.array(seq))
    costs = np.array([0, 1, 2, 1, 3, 1, 1, 1])
    text = np.array(seq)
    for L, min_len, C in [(5, 2, 40), (20, 3, 100), (50, 1, 300), (3, 3, 10)]:
        res = hot_subpaths(g, costs, min_cost=C, max_length=L, min_length=min_len)
        assert res.subpaths
        for h in res.subpaths:
            assert min_len <= h.length <= L and h.cost >= C
            assert h.cost == h.frequency * h.unit_cost == h.frequency * int(costs[list(h.symbols)].sum())
            true = count_naive(text, h.symbols)
            assert true == occurrences(g, h.symbols)
            assert true >= h.frequency >= 1 and true * h.unit_cost >= h.cost
        assert len({h.symbols for h in res.subpaths}) == len(res.subpaths)


def count_naive(text: np.ndarray, pat: tuple[int, ...]) -> int:
    m = len(pat)
    p = np.array(pat)
    return sum(1 for i in range(len(text) - m + 1) if np.array_equal(text[i:i + m], p))


def test_bad_inputs() -> None:
    g = make_grammar(FIG5)
    with pytest.raises(UsageError):
        hot_subpaths(g, [1, 1], min_cost=1)  # too few costs
    with pytest.raises(UsageError):
        hot_subpaths(g, [1, -1, 1], min_cost=1)
    with pytest.raises(UsageError):
        hot_subpaths(g, [1.5, 1, 1], min_cost=1)  # type: ignore[list-item]
    with pytest.raises(UsageError):
        hot_subpaths(g, [1, 1, 1], min_cost=0)
    with pytest.raises(UsageError):
        hot_subpaths(g, [1, 1, 1], min_cost=1, max_length=2, min_length=3)
    with pytest.raises(UsageError):
        hot_subpaths(g, [1, 1, 1], min_cost=1, max_length=10**9)
    with pytest.raises(UsageError):
        hot_subpaths(g, [2**47, 1, 1], min_cost=1, max_length=2**16)
    cyclic = make_grammar([[-1], [0, -2], [1, -1]])
    with pytest.raises(GrammarError):
        hot_subpaths(cyclic, [1, 1], min_cost=1)
    dangling = make_grammar([[-3, 0]])
    with pytest.raises(GrammarError):
        hot_subpaths(dangling, [1], min_cost=1)
