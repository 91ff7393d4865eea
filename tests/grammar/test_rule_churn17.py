"""Rule churn's shortcut (kernels/sequitur_rules.py ``_extend``): grammar and digram index after every symbol against the naive twin."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wholetrace.grammar import GrammarBuilder
from wholetrace.kernels import sequitur as K

import naive_sequitur as N
from test_rule_churn16 import churn
from test_sequitur_table import check_table

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

State = tuple[list[list[int]], list[tuple[int, int]]]


def _canonical(bodies: dict[object, list[object]], start: object, value: object) -> tuple[dict[object, int], list[object]]:
    """Rules numbered by first appearance in a depth-first walk from S (``value(item)``: a rule key or None)."""
    number = {start: 0}
    order = [start]
    stack = [iter(bodies[start])]
    while stack:
        for item in stack[-1]:
            r = value(item)
            if r is not None and r not in number:
                number[r] = len(order)
                order.append(r)
                stack.append(iter(bodies[r]))
                break
        else:
            stack.pop()
    return number, order


def kernel_state(b: GrammarBuilder) -> State:
    """The builder's live grammar (rules renumbered canonically) and the set of positions
    (rule, offset) its digram table indexes."""
    nd, rguard, _rc, _rk, tab, _stack, meta = b._st  # type: ignore[misc]
    nd = nd.astype(np.int64)
    bodies: dict[object, list[object]] = {}
    for r in range(int(meta[K.M_RFRESH])):
        g = int(rguard[r])
        if r and g < 0:
            continue  # a free rule (rguard links the free list)
        body, n = [], int(nd[4 * g + K.NX])
        while n != g:
            body.append(n)
            n = int(nd[4 * n + K.NX])
        bodies[r] = body
    number, order = _canonical(bodies, 0, lambda n: -int(nd[4 * n + K.VL]) - 1 if nd[4 * n + K.VL] < 0 else None)
    assert len(order) == len(bodies), "every live rule is reachable from S"
    where = {n: (number[r], i) for r in order for i, n in enumerate(bodies[r])}
    rules = [[int(nd[4 * n + K.VL]) if nd[4 * n + K.VL] >= 0 else -number[-int(nd[4 * n + K.VL]) - 1]
              for n in bodies[r]] for r in order]
    refs = tab[1::2].astype(np.int64)
    nodes = [int(ref) if ref >= 0 else int(nd[4 * int(rguard[-ref - 2]) + K.NX]) for ref in refs[refs != K.T_EMPTY]]
    return rules, sorted(where[n] for n in nodes)


def naive_state(g: N.Grammar) -> State:
    """The same for the naive twin (its index is a dict)."""
    rules_of: dict[object, list[N.Sym]] = {}
    todo = [g.start]
    while todo:
        r = todo.pop()
        if id(r) in rules_of:
            continue
        rules_of[id(r)] = r.body()
        todo.extend(s.value for s in rules_of[id(r)] if isinstance(s.value, N.Rule))
    number, order = _canonical(rules_of, id(g.start), lambda s: id(s.value) if isinstance(s.value, N.Rule) else None)
    where = {id(s): (number[r], i) for r in order for i, s in enumerate(rules_of[r])}
    rules = [[s.value if not isinstance(s.value, N.Rule) else -number[id(s.value)] for s in rules_of[r]] for r in order]
    return rules, sorted(where[id(s)] for s in g.index.values())


def step_by_step(seq: list[int], lookahead: bool, last_only: bool = False) -> int:
    """Feed one symbol at a time to the builder and the twin, comparing their states after each
    append (``last_only``: after the last one only, for sweeps that also check every prefix of
    ``seq`` on its own); returns how many times the builder took rule churn's shortcut."""
    b = GrammarBuilder(lookahead=lookahead)
    g = N.Grammar(lookahead)
    for i, x in enumerate(seq):
        b.feed(np.array([x]))
        if lookahead:  # the builder holds x back: it has appended seq[:i], the last with look-ahead x
            if i == 0:
                continue
            g.la = x
            g.append(seq[i - 1])
        else:
            g.append(x)
        if last_only and i < len(seq) - 1:
            continue
        assert kernel_state(b) == naive_state(g), (i, lookahead)
        check_table(b)  # entries tagged exactly when a rule's whole body, slots and check words right
    if lookahead and seq:
        g.la = None
        g.append(seq[-1])
    extended = int(b._st[6][K.M_EXTENDED])  # type: ignore[index]
    out = b.finish()
    assert [out.rule(k).tolist() for k in range(out.num_rules + 1)] == N.naive_sequitur(seq, lookahead)
    return extended


def churny(seed: int, n: int, alphabet: int) -> list[int]:
    """A loop over a few shapes of 3-9 symbols with variants and noise: the shapes' repeats
    grow rules one symbol at a time (rule churn), over a small alphabet (runs of equal symbols,
    adjacent copies: the shortcut's excluded cases)."""
    rng = np.random.default_rng(seed)
    shapes = [rng.integers(0, alphabet, rng.integers(3, 10)).tolist() for _ in range(5)]
    out: list[int] = []
    while len(out) < n:
        out += shapes[int(rng.integers(0, 5))] if rng.random() < 0.85 else rng.integers(0, alphabet, 2).tolist()
    return out[:n]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 5), st.integers(0, 700), st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_state_after_every_symbol(alphabet: int, n: int, seed: int, lookahead: bool, shaped: bool) -> None:
    rng = np.random.default_rng(seed)
    seq = churny(seed, n, alphabet) if shaped else rng.integers(0, alphabet, n).tolist()
    step_by_step(seq, lookahead)


@pytest.mark.parametrize("lookahead", [False, True])
def test_state_after_every_symbol_on_churn(lookahead: bool) -> None:
    for seed in (1, 2):
        assert step_by_step(churn(seed, 40, 5 + 10 * seed).tolist(), lookahead) > 100
    assert step_by_step(churny(3, 1500, 12), lookahead) > 100


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 5), st.integers(0, 4000), st.integers(0, 2**32 - 1), st.booleans(), st.integers(1, 900))
def test_chunked_against_twin(alphabet: int, n: int, seed: int, lookahead: bool, chunk: int) -> None:
    rng = np.random.default_rng(seed)
    seq = churny(seed, n, alphabet) if seed % 2 else rng.integers(0, alphabet, n).tolist()
    b = GrammarBuilder(lookahead=lookahead)
    cuts = np.cumsum(rng.integers(1, chunk + 1, len(seq) // 1 + 1))
    start = 0
    for end in cuts:
        if start >= len(seq):
            break
        b.feed(np.array(seq[start:int(end)], np.int64))
        start = int(end)
    g = b.finish()
    assert [g.rule(k).tolist() for k in range(g.num_rules + 1)] == N.naive_sequitur(seq, lookahead)


@pytest.mark.nojit
def test_state_after_every_symbol_pure_python() -> None:
    for lookahead in (False, True):
        assert step_by_step(churny(5, 260, 3), lookahead) > 0
        assert step_by_step(churn(4, 10, 6).tolist(), lookahead) > 10


# Inputs on which a mutant of the shortcut gives a wrong grammar (review17b): dropping the
# expansion's re-index of a run (run1, run2), or one of the run-of-three guards (g3, g4, g6).
WITNESSES = {
    "run1": "aaabaccaaabacaa",
    "run1-lookahead": "aaaaaabaaacaaaaaabaaadaaaaaabaaacaaaaaabaaa",
    "run2": "dddaadddadd",
    "g3": "bbbbddddddcbbbbddbdddd",
    "g4": "dddbaadabaacdd",
    "g6": "fdaeaaafdaaa",
}


@pytest.mark.parametrize("lookahead", [False, True])
@pytest.mark.parametrize("name", sorted(WITNESSES))
def test_review_witnesses(name: str, lookahead: bool) -> None:
    step_by_step([ord(c) for c in WITNESSES[name]], lookahead)


@pytest.mark.parametrize("lookahead", [False, True])
def test_every_two_symbol_string_up_to_12(lookahead: bool) -> None:
    """All strings over {0, 1} starting with 0 (the others are their renamings), lengths 1-12."""
    from wholetrace.grammar import sequitur
    for n in range(1, 13):
        for bits in range(1 << (n - 1)):
            seq = [(bits >> i) & 1 for i in range(n - 1)]
            seq = [0] + seq
            g = sequitur(np.array(seq, np.int64), lookahead=lookahead)
            assert [g.rule(k).tolist() for k in range(g.num_rules + 1)] == N.naive_sequitur(seq, lookahead), seq
