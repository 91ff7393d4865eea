"""Invariants of the builder's digram table (linear probing, backward-shift deletion) and node blocks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wholetrace.grammar import GrammarBuilder
from wholetrace.kernels import sequitur as K

from naive_sequitur import naive_sequitur
from test_sequitur_properties import sequences

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


def fingerprint(v1: int, v2: int) -> int:
    """The table's 31-bit fingerprint, recomputed with Python integers."""
    key = ((v1 & 0xFFFFFFFF) << 32) | (v2 & 0xFFFFFFFF)
    return ((key * 0x9E3779B97F4A7C15) % (1 << 64)) >> 33


def check_table(b: GrammarBuilder) -> None:
    nd, rguard, _rcount, _rfree, tab, _stack, meta = b._st  # type: ignore[misc]
    bits = int(meta[K.M_TBITS])
    slots = len(tab) // 2
    assert slots == 1 << bits
    used = 0
    for j in range(slots):
        n = int(tab[2 * j + 1])
        if n == K.T_EMPTY:
            continue
        assert n >= 0, "no tombstones"
        used += 1
        assert nd[4 * n + K.SL] == j  # the node knows its slot
        nxt = int(nd[4 * n + K.NX])
        assert nd[4 * n + K.SL] != K.GUARD and nd[4 * nxt + K.SL] != K.GUARD
        fp = fingerprint(int(nd[4 * n + K.VL]), int(nd[4 * nxt + K.VL]))
        assert tab[2 * j] == fp
        home = fp >> (31 - bits)
        k = home  # every slot from the home slot to j is occupied, else a lookup would stop early
        while k != j:
            assert tab[2 * k + 1] != K.T_EMPTY
            k = (k + 1) % slots
    assert used == meta[K.M_TUSED]
    for n in range(int(meta[K.M_FRESH])):  # every node that claims a slot is indexed there
        s = int(nd[4 * n + K.SL])
        if s >= 0:
            assert tab[2 * s + 1] == n
    phase = int(meta[K.M_NODE_PHASE])  # a live rule's guard starts a 64-byte line
    assert (nd.ctypes.data + 16 * phase) % 64 == 0
    for r in range(1, int(meta[K.M_RFRESH])):
        if rguard[r] != K.NIL and b.stats()["node_capacity"] == (1 << 14):  # not moved by growth
            assert (rguard[r] - phase) % 4 == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequences(), st.booleans(), st.integers(1, 700))
def test_table_invariants_after_any_feeding(seq: np.ndarray, lookahead: bool, chunk: int) -> None:
    b = GrammarBuilder(lookahead=lookahead)
    for i in range(0, len(seq), chunk):
        b.feed(seq[i : i + chunk])
        check_table(b)
    assert np.array_equal(b.finish().expand(), seq)


def test_table_invariants_across_rebuilds() -> None:
    # ~50 K distinct digrams: the table is rebuilt twice and runs wrap around its end
    seq = np.random.default_rng(7).integers(0, 1000, 60_000)
    b = GrammarBuilder()
    for i in range(0, len(seq), 20_000):
        b.feed(seq[i : i + 20_000])
    assert len(b._st[4]) // 2 > 1 << 15  # type: ignore[index]
    check_table(b)
    g = b.finish()
    assert np.array_equal(g.expand(), seq)


@pytest.mark.nojit
def test_table_invariants_pure_python() -> None:
    seq = np.random.default_rng(3).integers(0, 3, 600)
    b = GrammarBuilder()
    b.feed(seq)
    check_table(b)
    g = b.finish()
    assert naive_sequitur(seq.tolist(), False) == [g.rule(k).tolist() for k in range(g.num_rules + 1)]
