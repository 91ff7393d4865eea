"""`naive_decode.check_stream` (the former ``analysis.validate``), the well-formedness oracle of
generated-program traces: well-formed streams pass, and each kind of damage is reported."""

from __future__ import annotations

import numpy as np
import pytest

from naive_decode import check_stream
from wholetrace.events import EXC, LEAVE, enter_code
from wholetrace.instrument.cfg import build_module

SOURCE = '''\
def f(x):
    try:
        if x:
            x = 1
        y = g(x)
    except KeyError:
        y = 0
    return y
def gen(n):
    yield n
    return 1
'''
# f: B2 "if x" -> B3 "x = 1" / B4 "y = g(x)"; B3 -> B4 -> B6 "return y" -> EXIT; B5 (handler) -> B6
# gen: B2 "yield n" -> B3 "return 1" -> EXIT
CFGS = dict(enumerate(build_module(SOURCE)))
F, GEN = 1, 2
B, X, E = (lambda b: b), (lambda s: [EXC, s]), LEAVE


def problems(*events: object, complete: bool = True, split: int = 3) -> list[str]:
    flat: list[int] = []
    for e in events:
        flat += e if isinstance(e, list) else [e]  # type: ignore[list-item]
    ev = np.array(flat, np.int32)
    return check_stream([ev[i:i + split] for i in range(0, len(ev), split)], CFGS, complete=complete)


def test_the_cfgs_are_the_ones_described() -> None:
    f, gen = CFGS[F], CFGS[GEN]
    assert (f.qualname, gen.qualname) == ("f", "gen")
    assert {(e.src, e.dst) for e in f.edges} == {(0, 2), (2, 3), (2, 4), (3, 4), (4, 6), (5, 6), (6, 1)}
    assert [b.id for b in f.blocks if b.dynamic_entry] == [5]


@pytest.mark.parametrize("events", [
    [enter_code(F), 2, 3, 4, 6, LEAVE],                              # x true
    [enter_code(F), 2, 4, *X(2), 5, 6, LEAVE],                       # g raised KeyError, handled
    [enter_code(F), 2, 4, enter_code(F), 2, 4, 6, LEAVE, 6, LEAVE],  # a nested activation
    [enter_code(F), 2, 4, *X(2), LEAVE],                             # an exception left f
    [enter_code(GEN), 2, LEAVE, enter_code(GEN), 3, LEAVE],          # suspended at the yield, resumed
])
def test_well_formed_streams_pass(events: list[int]) -> None:
    assert problems(*events) == []


@pytest.mark.parametrize("events, complete, expected", [
    ([enter_code(F), 2, 6, LEAVE], True, "B2 -> B6 is not a CFG edge"),
    ([enter_code(F), 2, 4, *X(2), 6, LEAVE], True, "exception edge enters B6, not a handler"),
    ([enter_code(F), 2, 4, 6], True, "1 activation(s) never left"),
    ([enter_code(F), 9, LEAVE], True, "block 9 does not exist"),
    ([enter_code(7)], True, "ENTER of unknown function 7"),
    ([enter_code(F), 4, 6, LEAVE], True, "activation starts at B4"),
    ([enter_code(F), 2, LEAVE], True, "LEAVE after B2, which has no edge to EXIT"),
    ([2, enter_code(F), 2, 3, 4, 6, LEAVE], True, "B outside any activation"),
    ([enter_code(F), 2, *X(99), 5, 6, LEAVE], True, "exception origin statement 99 does not exist"),
])
def test_each_damage_is_reported(events: list[int], complete: bool, expected: str) -> None:
    found = problems(*events, complete=complete)
    assert any(expected in p for p in found), found


def test_an_open_activation_passes_when_the_stream_may_be_incomplete() -> None:
    assert problems(enter_code(F), 2, 4, 6, complete=False) == []
