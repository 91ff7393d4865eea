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


def hashes(v1: np.ndarray, v2: np.ndarray) -> np.ndarray:
    """The table's 64-bit digram hashes (top half: fingerprint, bottom half: a tagged rule's
    check word), recomputed with wrapping uint64 arithmetic."""
    key = ((v1.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64) << np.uint64(32)) | (
        v2.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)
    return key * np.uint64(0x9E3779B97F4A7C15)


def run_ending_at(occupied: np.ndarray, j: np.ndarray) -> np.ndarray:
    """For each slot ``j``, the length of the run of occupied slots ending at it, cyclically (the
    table's length plus one past ``j`` when no slot is empty): ``j`` minus the nearest empty slot
    before it, found among the empty slots by binary search rather than by a running maximum
    over every slot (that took half of ``check_table``'s time after every symbol)."""
    slots = len(occupied)
    empty = np.flatnonzero(~occupied)
    if len(empty) == 0:
        return j + slots + 1
    k = np.searchsorted(empty, j, side="right") - 1
    return j - np.where(k >= 0, empty[np.maximum(k, 0)], empty[-1] - slots)


def check_table(b: GrammarBuilder) -> None:
    """The table's invariants, checked over whole arrays (a feeding of one symbol at a time
    checks the table after every symbol)."""
    nd, rguard, _rcount, rkey, tab, _stack, meta = b._st  # type: ignore[misc]
    bits = int(meta[K.M_TBITS])
    slots = len(tab) // 2
    assert slots == 1 << bits
    refs = tab[1::2].astype(np.int64)
    occupied = refs != K.T_EMPTY
    j = np.flatnonzero(occupied)
    ref = refs[j]
    # an entry tagged -(r + 2) is the whole body of rule r (not S), indexed at its first node
    tagged = ref <= -2
    r = -ref[tagged] - 2
    assert (r >= 1).all() and (rguard[r] >= 0).all()
    n = ref.copy()
    n[tagged] = nd[4 * rguard[r].astype(np.int64) + K.NX]
    assert len(j) == meta[K.M_TUSED]
    prv = nd[4 * n + K.PV].astype(np.int64)
    after = nd[4 * nd[4 * n + K.NX].astype(np.int64) + K.NX].astype(np.int64)
    whole = (nd[4 * prv + K.SL] == K.GUARD) & (nd[4 * after + K.SL] == K.GUARD) & (nd[4 * prv + K.VL] != -1)
    assert np.array_equal(whole, tagged), "tagged exactly when the digram is a rule's whole body"
    h = hashes(nd[4 * n + K.VL], nd[4 * nd[4 * n + K.NX].astype(np.int64) + K.VL])
    assert np.array_equal(rkey[r].astype(np.uint32), (h[tagged] & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    assert (nd[4 * n + K.SL] == j).all()  # the node knows its slot
    nxt = nd[4 * n + K.NX].astype(np.int64)
    assert (nd[4 * n + K.SL] != K.GUARD).all() and (nd[4 * nxt + K.SL] != K.GUARD).all()
    fp = hashes(nd[4 * n + K.VL], nd[4 * nxt + K.VL]) >> np.uint64(32)
    assert (tab[2 * j].astype(np.uint32).astype(np.uint64) == fp).all()
    # every slot from the home slot to j is occupied, else a lookup would stop early: the run of
    # occupied slots ending at j (cyclically) is at least as long as the distance from home
    home = (fp >> np.uint64(32 - bits)).astype(np.int64)
    assert (run_ending_at(occupied, j) >= (j - home) % slots + 1).all()
    fresh = np.arange(int(meta[K.M_FRESH]))  # every node that claims a slot is indexed there
    s = nd[4 * fresh + K.SL].astype(np.int64)
    claims = s >= 0
    claimed = tab[2 * s[claims] + 1].astype(np.int64)
    back = claimed.copy()
    back[claimed <= -2] = nd[4 * rguard[-claimed[claimed <= -2] - 2].astype(np.int64) + K.NX]
    assert (back == fresh[claims]).all()
    phase = int(meta[K.M_NODE_PHASE])  # a live rule's guard starts a 64-byte line
    assert (nd.ctypes.data + 16 * phase) % 64 == 0
    if b.stats()["node_capacity"] == (1 << 14) and meta[K.M_REUSED] == 0:  # not moved by growth, all fresh lines
        guards = rguard[1 : int(meta[K.M_RFRESH])].astype(np.int64)
        live = guards[guards >= 0]  # a free rule's rguard links the free list
        assert ((live - phase) % 4 == 0).all()


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


def trace_like(iterations: int) -> np.ndarray:
    """A loop over four call shapes, each iteration taking one of three variants of each."""
    rng = np.random.default_rng(5)
    shapes = [rng.integers(0, 40, rng.integers(3, 12)) for _ in range(12)]
    return np.concatenate([shapes[k] for k in (rng.integers(0, 3, iterations) * 4 + np.arange(iterations) % 4)])


def test_nodes_reused_when_rules_come_and_go() -> None:
    # a trace-like stream (a loop over a few call shapes, each iteration one of three variants)
    # makes and inlines rules all the time: ~0.6 new rules per symbol.  Laid out on fresh 64-byte
    # lines only, the node array grew by a line per new rule (~600 K nodes here for ~11 K live);
    # the rules' nodes now come off the free list once a third of the nodes are free.
    seq = trace_like(40_000)
    for lookahead in (False, True):
        b = GrammarBuilder(lookahead=lookahead)
        for i in range(0, len(seq), 50_000):
            b.feed(seq[i : i + 50_000])
        check_table(b)
        st = b.stats()
        assert int(b._st[6][K.M_REUSED]) > 0  # type: ignore[index]
        assert st["node_capacity"] <= 2 * st["live_nodes"] + 4 * K.MARGIN_NODES
        g = b.finish()
        assert np.array_equal(g.expand(), seq)
        one = GrammarBuilder(lookahead=lookahead, expected_symbols=len(seq))  # another layout, same grammar
        one.feed(seq)
        assert one.finish() == g


@pytest.mark.nojit
def test_nodes_reused_pure_python() -> None:
    # the free-list layout of new rules in the pure-Python twin, against the naive builder
    seq = trace_like(400)
    for lookahead in (False, True):
        b = GrammarBuilder(lookahead=lookahead)
        b.feed(seq[:1000])
        b.feed(seq[1000:])
        assert int(b._st[6][K.M_REUSED]) > 0  # type: ignore[index]
        check_table(b)
        g = b.finish()
        assert naive_sequitur(seq.tolist(), lookahead) == [g.rule(k).tolist() for k in range(g.num_rules + 1)]


def test_check_table_finds_a_hole_in_a_probe_run() -> None:
    """An empty slot between an entry's home slot and its slot (a lookup would stop there) fails
    the run check (``run_ending_at``), whatever computes the runs."""
    for seed in range(20):
        b = GrammarBuilder()
        b.feed(np.random.default_rng(seed).integers(0, 60, 4000))
        check_table(b)
        nd, rguard, _rcount, _rkey, tab, _stack, meta = b._st  # type: ignore[misc]
        occupied = tab[1::2].astype(np.int64) != K.T_EMPTY
        j = np.flatnonzero(occupied)
        ref = tab[2 * j + 1].astype(np.int64)
        n = ref.copy()
        n[ref <= -2] = nd[4 * rguard[-ref[ref <= -2] - 2].astype(np.int64) + K.NX]
        fp = hashes(nd[4 * n + K.VL], nd[4 * nd[4 * n + K.NX].astype(np.int64) + K.VL]) >> np.uint64(32)
        home = (fp >> np.uint64(32 - int(meta[K.M_TBITS]))).astype(np.int64)
        displaced = np.flatnonzero(home != j)
        if len(displaced):
            break
    else:
        pytest.fail("no displaced entry to punch a hole before")
    i = int(displaced[0])
    occupied[home[i]] = False
    assert run_ending_at(occupied, j[i : i + 1])[0] < (j[i] - home[i]) % len(occupied) + 1
    tab[2 * home[i] + 1] = K.T_EMPTY
    meta[K.M_TUSED] -= 1
    with pytest.raises(AssertionError):
        check_table(b)
