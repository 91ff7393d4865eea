"""Grammar queries against the expanded sequence: terminal counts, LCA occurrence counts of
a sequence, ranges of a rule's expansion."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grammars import expand, make_grammar, random_grammar
from wholetrace.errors import UsageError
from wholetrace.grammar import sequitur
from wholetrace.wpp.queries import expand_rule, lca_occurrences, occurrences, terminal_counts


def naive_count(text: list[int], pat: list[int]) -> int:
    m = len(pat)
    return sum(1 for i in range(len(text) - m + 1) if text[i:i + m] == pat)


@pytest.mark.nojit
def test_figure5_queries() -> None:
    g = make_grammar([[-1, -1, -1], [-2, -3], [0, 1], [1, 2]])  # abbcabbcabbc
    assert terminal_counts(g).tolist() == [3, 6, 3]
    assert occurrences(g, [2, 0]) == 2           # "ca": across the repeats of A, LCA S
    assert lca_occurrences(g, [2, 0]).tolist() == [2, 0, 0, 0]
    assert occurrences(g, [0, 1, 1, 2]) == 3      # "abbc" = A, LCA A (frequency 3)
    assert lca_occurrences(g, [0, 1, 1, 2]).tolist() == [0, 1, 0, 0]
    assert expand_rule(g, 1).tolist() == [0, 1, 1, 2]
    assert expand_rule(g, 0, 3, 9).tolist() == [2, 0, 1, 1, 2, 0]


@settings(max_examples=200, deadline=None)
@given(rules=random_grammar(), data=st.data())
def test_random_grammars(rules: list[list[int]], data: st.DataObject) -> None:
    g = make_grammar(rules)
    text = expand(rules, 0)
    nt = max([x for r in rules for x in r if x >= 0], default=0) + 1
    assert terminal_counts(g, nt).tolist() == np.bincount(text, minlength=nt).tolist()
    if text:
        i = data.draw(st.integers(0, len(text) - 1))
        j = data.draw(st.integers(i + 1, min(len(text), i + 8)))
        pat = text[i:j]
        assert occurrences(g, pat) == naive_count(text, pat) >= 1
    pat = data.draw(st.lists(st.integers(0, nt), min_size=1, max_size=4))
    assert occurrences(g, pat) == naive_count(text, pat)
    r = data.draw(st.integers(0, len(rules) - 1))
    full = expand(rules, r)
    a = data.draw(st.integers(0, len(full)))
    b = data.draw(st.integers(a, len(full)))
    assert expand_rule(g, r, a, b).tolist() == full[a:b]


def test_sequitur_grammar_occurrences() -> None:
    rng = random.Random(3)
    seq = [rng.choice([1, 1, 2, 3]) for _ in range(3000)]
    g = sequitur(np.array(seq))
    for m in (1, 2, 3, 5, 9):
        for _ in range(10):
            i = rng.randrange(len(seq) - m)
            pat = seq[i:i + m]
            assert occurrences(g, pat) == naive_count(seq, pat)
    assert terminal_counts(g).tolist() == np.bincount(seq).tolist()


def test_query_errors() -> None:
    g = make_grammar([[0, 1]])
    with pytest.raises(UsageError):
        expand_rule(g, 3)
    with pytest.raises(UsageError):
        expand_rule(g, 0, 1, 5)
    with pytest.raises(UsageError):
        occurrences(g, [-1])
    assert occurrences(g, []) == 0
