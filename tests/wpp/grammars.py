"""Small grammars for the WPP tests: build from rule lists, expand naively, draw random ones."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from wholetrace.grammar import Grammar


def make_grammar(rules: list[list[int]]) -> Grammar:
    off = np.zeros(len(rules) + 1, np.int64)
    off[1:] = np.cumsum([len(r) for r in rules])
    rhs = np.array([x for r in rules for x in r], np.int64)
    return Grammar(off, rhs)


def grammar_rules(g: Grammar) -> list[list[int]]:
    return [[int(x) for x in g.rule(i)] for i in range(g.num_rules + 1)]


def expand(rules: list[list[int]], r: int) -> list[int]:
    out: list[int] = []
    for x in rules[r]:
        out.extend([x] if x >= 0 else expand(rules, -x))
    return out


@st.composite
def random_grammar(draw: st.DrawFn) -> list[list[int]]:
    n_rules = draw(st.integers(1, 6))
    alphabet = draw(st.integers(1, 4))
    rules: list[list[int]] = []
    for r in range(n_rules):
        body = draw(st.lists(st.one_of(st.integers(0, alphabet - 1),
                                       st.integers(r + 1, n_rules - 1).map(lambda x: -x) if r + 1 < n_rules
                                       else st.integers(0, alphabet - 1)),
                             min_size=0 if r else 1, max_size=5))
        rules.append(body)
    for r in range(1, n_rules):  # every rule reachable: referenced by some earlier rule
        if not any(-r in rules[q] for q in range(r)):
            q = draw(st.integers(0, r - 1))
            rules[q].insert(draw(st.integers(0, len(rules[q]))), -r)
    return rules
