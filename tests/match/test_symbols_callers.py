"""Recorded events to F/B/E symbols (EXC pairs dropped across chunk edges, depth range) and the
caller chains at given positions, against plain-Python walks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import symbols_of, traces
from wholetrace.errors import StoreError
from wholetrace.match.callers import chains
from wholetrace.match.cftrace import from_symbols
from wholetrace.match.symbols import DepthStats, kind, sym_b, sym_f, to_symbols

LEAVE, EXC, ENTER_BASE = -1, -2, 8        # the recorded event codes (wholetrace/events.py)


def _raw(events, data):
    """Recorded int32 events of F/B/E events, with EXC <stmt> pairs sprinkled in."""
    out = []
    for e in events:
        if data.draw(st.integers(0, 4)) == 0:
            out += [EXC, data.draw(st.integers(-1, 9))]
        out.append(LEAVE if e[0] == "E" else -(ENTER_BASE + e[1]) if e[0] == "F" else e[1])
    return out


@settings(max_examples=80, deadline=None)
@given(events=traces(), data=st.data())
def test_to_symbols_drops_exc_pairs_across_chunk_edges(events, data):
    raw = np.array(_raw(events, data), np.int32)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=5)))
    pieces = np.split(raw, cuts)
    stats = DepthStats()
    got = np.concatenate([np.zeros(0, np.int32)] + list(to_symbols(pieces, stats)))
    want = symbols_of(events)
    assert np.array_equal(got, want)
    depth = np.cumsum([1 if e[0] == "F" else -1 if e[0] == "E" else 0 for e in events]) if events else [0]
    assert (stats.dmin, stats.dmax, stats.final) == (min(0, int(np.min(depth))), max(0, int(np.max(depth))),
                                                      int(depth[-1]) if events else 0)
    assert stats.events == len(raw) and stats.symbols == len(want)
    assert [kind(s) for s in want] == [(e[0], e[1] if len(e) > 1 else 0) for e in events]


def test_codec_and_unknown_event_code():
    assert (sym_f(3), sym_b(3), kind(0)) == (7, 8, ("E", 0))
    with pytest.raises(StoreError, match="unknown event code at event 1"):
        list(to_symbols([np.array([5, -3, 4], np.int32)], DepthStats()))


@settings(max_examples=80, deadline=None)
@given(events=traces(), data=st.data())
def test_caller_chains_equal_a_stack_walk(events, data):
    sym = symbols_of(events)
    if not len(sym):
        return
    cs = from_symbols(sym, chunk_events=data.draw(st.integers(1, 8)))
    pos = data.draw(st.lists(st.integers(0, len(sym) - 1), min_size=1, max_size=6))
    got = chains(cs, pos)
    for p, chain in zip(pos, got):
        stack: list[int] = []
        lost = 0
        for e in events[:p + 1]:
            if e[0] == "F":
                stack.append(e[1])
            elif e[0] == "E":
                if stack:
                    stack.pop()
                else:
                    lost += 1
        assert [f for f in chain if f >= 0] == stack, (p, chain)
