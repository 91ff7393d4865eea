"""The readers' walks over fused and SEQ terminals without Python loops (wave 13): ``kernels.wpp_parts.close_parts``
and ``symbols.split_entered`` against their Python twins (wave 12's loops, kept here) on tables with
thousands of SEQ terminals, a 5,000-deep chain and random streams; split grammars expand to the events."""

from __future__ import annotations

import numpy as np
import pytest

from test_online import path_stream
from test_seq_terminals import dispatch_stream
from wholetrace.events import enter_code
from wholetrace.grammar import Grammar, sequitur
from wholetrace.kernels.wpp_parts import close_parts
from wholetrace.wpp.intern import PATH_LEAVE_AT, events_of, interner_for
from wholetrace.wpp.symbols import ENTER, ENTER_CHAIN, ENTER_PATH, FUSED, PATH, SEQ, Terminals, split_entered

L = PATH_LEAVE_AT


def naive_close(terms: Terminals, need: np.ndarray) -> np.ndarray:
    """Wave 12's loop: a marked ENTER_CHAIN marks its inner terminal, a SEQ its two parts."""
    need = need.copy()
    for t in np.flatnonzero(np.isin(terms.kind, (ENTER_CHAIN, SEQ)))[::-1].tolist():
        if need[t]:
            need[int(terms.value[t])] = True
            if int(terms.kind[t]) == SEQ:
                need[int(terms.fid[t])] = True
    return need


def naive_split(grammars: list[Grammar], terms: Terminals) -> tuple[list[Grammar], Terminals]:
    """Wave 12's ``split_entered``, loop for loop."""
    fused = np.flatnonzero(np.isin(terms.kind, FUSED))
    n = len(terms)
    is_fused = np.zeros(n, bool)
    is_fused[fused] = True
    if not any(is_fused[g.rhs[g.rhs >= 0]].any() for g in grammars):
        return list(grammars), terms
    kind, fid, value = terms.kind.tolist(), terms.fid.tolist(), terms.value.tolist()
    index = {key: t for t, key in enumerate(zip(kind, fid, value))}

    def find(key: tuple[int, int, int]) -> int:
        if key not in index:
            index[key] = len(kind)
            kind.append(key[0])
            fid.append(key[1])
            value.append(key[2])
        return index[key]

    first, second = np.zeros(n, np.int64), np.zeros(n, np.int64)
    first_ref, second_ref = np.zeros(n, bool), np.zeros(n, bool)
    for t in fused.tolist():
        if kind[t] == SEQ:
            first[t], first_ref[t] = fid[t], is_fused[fid[t]]
            second[t], second_ref[t] = value[t], is_fused[value[t]]
            continue
        first[t] = find((ENTER, fid[t], 0))
        if kind[t] == ENTER_PATH:
            second[t] = find((PATH, fid[t], value[t]))
        else:
            second[t], second_ref[t] = value[t], True
    table = Terminals(np.array(kind, np.int8), np.array(fid, np.int32), np.array(value, np.int64))
    out = []
    for g in grammars:
        rhs = g.rhs
        hit = rhs >= 0
        hit[hit] = is_fused[rhs[hit]]
        need = np.zeros(n, bool)
        need[rhs[hit]] = True
        for t in fused[::-1].tolist():
            if need[t]:
                if first_ref[t]:
                    need[first[t]] = True
                if second_ref[t]:
                    need[second[t]] = True
        used = np.flatnonzero(need)
        if not len(used):
            out.append(g)
            continue
        nr = len(g.off) - 1
        rule_of = np.zeros(n, np.int64)
        rule_of[used] = nr + np.arange(len(used))
        new_rhs = rhs.copy()
        new_rhs[hit] = -rule_of[rhs[hit]]
        pair = [np.where(ref, -rule_of[np.where(ref, sym, 0)], sym)
                for sym, ref in ((first[used], first_ref[used]), (second[used], second_ref[used]))]
        new_rhs = np.concatenate([new_rhs, np.stack(pair, axis=1).reshape(-1)])
        new_off = np.concatenate([g.off, g.off[-1] + 2 * np.arange(1, len(used) + 1)])
        out.append(Grammar(new_off, new_rhs, lookahead=g.lookahead))
    return out, table


def interned(streams: dict[int, list[int]], path_fids: list[int]) -> tuple[list[np.ndarray], Terminals]:
    it = interner_for("path")
    it.set_path_functions(path_fids)
    codes = [np.concatenate([it.codes(sid, np.array(ev, np.int32)), it.finish(sid)]) for sid, ev in streams.items()]
    return codes, it.terminals()


def cases() -> list[tuple[str, dict[int, list[int]], list[int]]]:
    rng = np.random.default_rng(5)
    deep = [enter_code(3), 4] + [enter_code(1)] * 5000 + [enter_code(2), L + 1] + [L] * 5000 + [L + 2]
    return [("dispatch 600", {0: dispatch_stream(rng, 20000, fns=600), 1: dispatch_stream(rng, 3000, fns=600)},
             list(range(601))),
            ("deep chain", {0: deep}, [1, 2, 3]),
            ("random", {0: path_stream(rng, 4000), 1: path_stream(rng, 3000)}, list(range(0, 50, 2)))]


@pytest.mark.parametrize("case", range(3))
def test_close_parts_and_split_equal_the_loops(case: int) -> None:
    name, streams, fids = cases()[case]
    codes, terms = interned(streams, fids)
    if name == "dispatch 600":
        assert np.count_nonzero(terms.kind == SEQ) > 2000
    rng = np.random.default_rng(case)
    for p in (0.0, 0.01, 0.2, 1.0):
        need = rng.random(len(terms)) < p
        got = need.copy()
        count = close_parts(terms.kind, terms.fid, terms.value, got)
        want = naive_close(terms, need)
        assert np.array_equal(got, want) and count == int(want.sum())
    grammars = [sequitur(c) for c in codes]
    got_g, got_t = split_entered(grammars, terms)
    want_g, want_t = naive_split(grammars, terms)
    assert all(np.array_equal(getattr(got_t, f), getattr(want_t, f)) for f in ("kind", "fid", "value"))
    assert got_g == want_g
    for g, ev in zip(got_g, streams.values()):          # the oracle: the events themselves
        assert events_of(g.expand(), got_t).tolist() == ev
        assert not np.isin(got_t.kind[g.rhs[g.rhs >= 0]], FUSED).any()


@pytest.mark.nojit
def test_close_parts_small() -> None:
    """By hand: SEQ 5 = (SEQ 4, 3), SEQ 4 = (0, ENTER_CHAIN 2), ENTER_CHAIN 2 = (f, ENTER_PATH 1)."""
    t = Terminals(np.array([PATH, ENTER_PATH, ENTER_CHAIN, PATH, SEQ, SEQ, PATH], np.int8),
                  np.array([1, 2, 1, 1, 0, 4, 3], np.int32), np.array([7, 3, 1, 8, 2, 3, 9], np.int64))
    need = np.zeros(7, np.bool_)
    need[5] = True
    assert close_parts(t.kind, t.fid, t.value, need) == 6
    assert need.tolist() == [True] * 6 + [False]
    need = np.zeros(7, np.bool_)
    need[2] = True
    close_parts(t.kind, t.fid, t.value, need)
    assert need.tolist() == [False, True, True, False, False, False, False]


@pytest.mark.nojit
def test_close_parts_ignores_a_bad_part_id() -> None:
    """A malformed table (a part >= the table's length, a negative part, a part not before its
    terminal) marks nothing outside ``need`` (review13a MED-1: the JIT wrote past the array's end)."""
    for bad in (5, 4, 2, -1):     # beyond the table, = its length, itself, negative (would wrap to 3)
        t = Terminals(np.array([ENTER_PATH, ENTER_PATH, SEQ, PATH], np.int8),
                      np.array([0, 0, 0, 0], np.int32), np.array([0, 0, bad, 0], np.int64))
        big = np.zeros(8, np.bool_)
        need = big[:4]
        need[2] = True
        assert close_parts(t.kind, t.fid, t.value, need) == 2     # itself and its good part 0 (fid)
        assert big.tolist() == [True, False, True] + [False] * 5
        t.fid[2], t.value[2] = bad, 1                              # the bad id as the head
        big[:] = False
        big[2] = True
        assert close_parts(t.kind, t.fid, t.value, need) == 2
        assert big.tolist() == [False, True, True] + [False] * 5
