"""Exact grammars of the shared SEQUITUR vectors (small ones always, large ones under -m slow)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wholetrace.grammar import Grammar, GrammarBuilder, sequitur

from naive_sequitur import naive_sequitur

# pure-Python twin (NUMBA_DISABLE_JIT=1): numpy warns on the hash's intended wrap-around
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

SMALL = {
    "abcabcabcabc": "S→A A; A→B B; B→a b c",
    "abcdbcabcd": "S→A B A; A→a B d; B→b c",
    "11111211111": "S→A B 2 B A; A→1 1; B→A 1",
    "1212131214": "S→A B 3 B 4; A→1 2; B→A 1",
    "abbcabbcabbc": "S→A A A; A→a b b c",
    "abbbabcbb": "S→A B A c B; A→a b; B→b b",
    "aaaaaa": "S→A A A; A→a a",
    "aacaacbcbdaacbcbdebcbd": "S→A B B e C; A→a a c; B→A C; C→b c b d",
}
LOOKAHEAD = {"11111211111": "S→C 2 C; A→1 1; C→A A 1"}


def canonical(spec: str) -> list[list[int]]:
    """Rules of a README grammar, renumbered by first appearance from S (as Grammar does)."""
    rules = {}
    for part in spec.split("; "):
        head, body = part.split("→")
        rules[head] = body.split()
    number = {"S": 0}
    order = ["S"]

    def visit(name: str) -> None:
        for tok in rules[name]:
            if tok in rules and tok not in number:
                number[tok] = len(order)
                order.append(tok)
                visit(tok)

    visit("S")
    return [[-number[t] if t in rules else ord(t) for t in rules[n]] for n in order]


def as_lists(g: Grammar) -> list[list[int]]:
    return [g.rule(i).tolist() for i in range(g.num_rules + 1)]


def codes(s: str) -> np.ndarray:
    return np.frombuffer(s.encode(), np.uint8)


@pytest.mark.nojit
@pytest.mark.parametrize("text", sorted(SMALL))
def test_small_vector(text: str) -> None:
    g = sequitur(codes(text))
    assert as_lists(g) == canonical(SMALL[text])
    g.check()
    assert bytes(g.expand().astype(np.uint8)).decode() == text
    assert naive_sequitur(codes(text)) == canonical(SMALL[text])


@pytest.mark.nojit
@pytest.mark.parametrize("text", sorted(LOOKAHEAD))
def test_lookahead_vector(text: str) -> None:
    g = sequitur(codes(text), lookahead=True)
    assert as_lists(g) == canonical(LOOKAHEAD[text])
    assert naive_sequitur(codes(text), lookahead=True) == canonical(LOOKAHEAD[text])
    g.check()


@pytest.mark.nojit
def test_small_vector_chunked_one_symbol_at_a_time() -> None:
    for la in (False, True):
        for text in SMALL:
            b = GrammarBuilder(lookahead=la)
            for c in codes(text):
                b.feed([int(c)])
            assert b.finish() == sequitur(codes(text), lookahead=la)


# --------------------------------------------------------------------------- large
LARGE = {  # rules, rhs, len_S, max rule length (vectors README)
    "loopy": (107_781, 668_993, 452_099, 5),
    "loopy_noisy": (153_051, 1_349_598, 1_043_212, 4),
    "markov": (353_761, 2_344_361, 1_635_293, 4),
    "textlike": (202_334, 1_212_780, 744_523, 182),
    "rand4": (18_564, 197_325, 160_191, 3),
}


def vectors_dir() -> Path:
    """The generated large vectors, made by the shared gen.py into a cache dir if needed."""
    repo = Path(__file__).resolve().parents[2]
    src = Path(os.environ.get("WHOLETRACE_VECTORS", repo.parent / "shared" / "vectors"))
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "wholetrace" / "vectors"
    missing = [n for n in LARGE if not (cache / f"{n}.u16").exists()]
    if missing:
        if not (src / "gen.py").exists():
            pytest.skip(f"vector generator not found at {src}")
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(src / "gen.py"), str(cache), *missing], check=True,
                       stdout=subprocess.DEVNULL)
    return cache


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LARGE))
def test_large_vector(name: str) -> None:
    a = np.fromfile(vectors_dir() / f"{name}.u16", np.uint16)
    b = GrammarBuilder(expected_symbols=a.size)
    for i in range(0, a.size, 1 << 20):
        b.feed(a[i : i + (1 << 20)])
    g = b.finish()
    assert (g.num_rules, g.num_symbols, g.start_length, g.max_rule_length) == LARGE[name]
    g.check()
    assert np.array_equal(g.expand(), a)
    assert Grammar.from_bytes(g.to_bytes()) == g
