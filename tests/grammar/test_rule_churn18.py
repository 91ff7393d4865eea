"""Rule utility's expansion (kernels/sequitur_rules.py ``_expand``, wave 18): grammar and digram index after every symbol against the naive twin."""

from __future__ import annotations

import itertools

import pytest

from test_rule_churn17 import churny, step_by_step

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

# Inputs on which a mutant of _expand's kept run-of-three re-indexes gives a wrong state (found by
# a search over short strings, shortest failing prefix): without run2 (the ring's v v v ending at f).
WITNESSES = {
    "run2": "aaabaaab",
}


@pytest.mark.parametrize("lookahead", [False, True])
@pytest.mark.parametrize("name", sorted(WITNESSES))
def test_expansion_witnesses(name: str, lookahead: bool) -> None:
    step_by_step([ord(c) - ord("a") for c in WITNESSES[name]], lookahead)


@pytest.mark.parametrize("lookahead", [False, True])
def test_every_small_string_step_by_step(lookahead: bool) -> None:
    """Every string over {0, 1} to length 9 and over {0, 1, 2} to length 6 (first symbol 0, the
    others are renamings; 0 is a terminal, the value the reference gives an inlined symbol).
    Each string's state is compared after its last symbol only: the states after its shorter
    prefixes are those of the shorter strings of the sweep (the builder and the twin are fed the
    same symbols one at a time from empty), each compared once; every string's grammar at
    ``finish`` is compared as before."""
    for alphabet, longest in ((2, 9), (3, 6)):
        for n in range(1, longest + 1):
            for rest in itertools.product(range(alphabet), repeat=n - 1):
                step_by_step([0, *rest], lookahead, last_only=True)


@pytest.mark.parametrize("lookahead", [False, True])
def test_churny_strings_step_by_step(lookahead: bool) -> None:
    for seed in range(12):
        step_by_step(churny(100 + seed, 120, 2 + seed % 4), lookahead)


@pytest.mark.nojit
def test_expansion_witnesses_pure_python() -> None:
    for lookahead in (False, True):
        for w in WITNESSES.values():
            step_by_step([ord(c) - ord("a") for c in w], lookahead)
