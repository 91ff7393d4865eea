"""Hypothesis strategies for matching tests: nested F/B/E traces, queries, grammars of a trace."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from naive_match import encode

FUNCS = 4
BLOCKS = 3


@st.composite
def invocation(draw, depth: int = 0) -> list:
    """F f, 0-5 items (blocks from {0,1,2} so ids collide across functions, nested calls), E."""
    out = [("F", draw(st.integers(0, FUNCS - 1)))]
    for _ in range(draw(st.integers(0, 5))):
        if depth < 6 and draw(st.integers(0, 3)) == 0:
            out += draw(invocation(depth + 1))
        else:
            out.append(("B", draw(st.integers(0, BLOCKS - 1))))
    out.append(("E",))
    return out


@st.composite
def traces(draw) -> list:
    """Sub-traces repeated k times (so SEQUITUR builds deep rules), head and tail cut at random."""
    ev: list = []
    for _ in range(draw(st.integers(1, 4))):
        part = draw(invocation())
        ev += part * draw(st.integers(1, 4))
    if draw(st.booleans()):
        ev = ev[draw(st.integers(0, len(ev) // 3)):]
    if draw(st.booleans()):
        ev = ev[:len(ev) - draw(st.integers(0, len(ev) // 3))]
    return ev


@st.composite
def queries(draw, events: list) -> tuple[int, tuple[int, ...]]:
    """(function, path of length 1-4); half the time the path is cut from a real invocation."""
    fid = draw(st.integers(0, FUNCS - 1))
    m = draw(st.integers(1, 4))
    if draw(st.booleans()):
        own = _own_blocks(events)
        runs = [(f, bs) for f, bs in own if len(bs) >= m]
        if runs:
            fid, bs = draw(st.sampled_from(runs))
            i = draw(st.integers(0, len(bs) - m))
            return fid, tuple(bs[i:i + m])
    return fid, tuple(draw(st.lists(st.integers(0, BLOCKS - 1), min_size=m, max_size=m)))


def _own_blocks(events: list) -> list:
    out, stack = [], []
    for e in events:
        if e[0] == "F":
            stack.append((e[1], []))
        elif e[0] == "E":
            if stack:
                out.append(stack.pop())
        elif stack:
            stack[-1][1].append(e[1])
    return out + stack


def bracketing(symbols: list[int], draw) -> tuple[np.ndarray, np.ndarray]:
    """A random straight-line grammar of ``symbols``: S is a few random pieces, each a random
    binary bracketing (every rule used once)."""
    rules: list[list[int]] = [[]]

    def build(lo: int, hi: int) -> int:
        if hi - lo == 1:
            return symbols[lo]
        cut = draw(st.integers(lo + 1, hi - 1))
        left, right = build(lo, cut), build(cut, hi)
        rules.append([left, right])
        return -(len(rules) - 1)

    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(symbols) - 1)), max_size=4)))) if symbols else []
    bounds = [0] + [c for c in cuts if 0 < c < len(symbols)] + ([len(symbols)] if symbols else [])
    rules[0] = [build(a, b) for a, b in zip(bounds, bounds[1:])]
    off = np.cumsum([0] + [len(r) for r in rules])
    rhs = np.array([x for r in rules for x in r], np.int64)
    return off, rhs


def symbols_of(events: list) -> np.ndarray:
    return np.array(encode(events), np.int32)
