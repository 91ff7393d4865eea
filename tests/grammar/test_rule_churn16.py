"""Rule churn (a new rule (R, c) whose R is then inlined): grammars against the naive twin, the table after every symbol."""

from __future__ import annotations

import numpy as np
import pytest

from wholetrace.grammar import GrammarBuilder

from naive_sequitur import naive_sequitur
from test_sequitur_table import check_table

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


def churn(seed: int, pieces: int, alphabet: int) -> np.ndarray:
    """Long strings repeated with a few symbols of noise between the copies: each repeat after
    the second grows a rule one symbol at a time (new rule (R, c), then R inlined)."""
    rng = np.random.default_rng(seed)
    words = [rng.integers(0, alphabet, rng.integers(4, 30)) for _ in range(4)]
    parts = []
    for _ in range(pieces):
        parts.append(words[int(rng.integers(0, 4))])
        parts.append(rng.integers(0, alphabet, rng.integers(0, 3)))
    return np.concatenate(parts).astype(np.int64)


def _rules(seq: np.ndarray, lookahead: bool, chunk: int, check: bool) -> list[list[int]]:
    b = GrammarBuilder(lookahead=lookahead)
    for i in range(0, len(seq), chunk):
        b.feed(seq[i : i + chunk])
        if check:
            check_table(b)
    g = b.finish()
    return [g.rule(k).tolist() for k in range(g.num_rules + 1)]


@pytest.mark.parametrize("lookahead", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_churn_against_twin_table_after_every_symbol(seed: int, lookahead: bool) -> None:
    seq = churn(seed, 60, 5 + 10 * seed)
    assert _rules(seq, lookahead, 1, True) == naive_sequitur(seq.tolist(), lookahead)


@pytest.mark.nojit
def test_churn_pure_python() -> None:
    seq = churn(4, 14, 6)
    for lookahead in (False, True):
        assert _rules(seq, lookahead, 7, True) == naive_sequitur(seq.tolist(), lookahead)
