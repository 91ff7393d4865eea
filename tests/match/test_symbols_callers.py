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


def _rows_twin(rows: list[tuple[int, int, int]]) -> list[int]:
    """F/B/E symbols of decoded rows (fid, dst, eid), from the row kinds of trace.decode.Rows."""
    out = []
    for fid, dst, eid in rows:
        if eid == -2:                    # EID_ENTER
            out.append(2 * fid + 1)
        elif eid == -3:                  # EID_LEAVE
            out.append(0)
        elif dst >= 2:                   # an edge (eid >= 0) or exception edge (-1) into a block
            out.append(2 * dst + 2)
    return out


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_rows_symbols_equal_the_row_kinds(data):
    """Rows of every kind (edges to EXIT and exceptions leaving included), cut into batches."""
    from wholetrace.match.symbols import rows_symbols
    from wholetrace.trace.decode import Rows

    rows = data.draw(st.lists(st.tuples(st.integers(0, 9), st.integers(-1, 9), st.integers(-3, 5)), max_size=60))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=4)))
    arr = np.zeros((6, len(rows)), np.int64)
    if rows:
        arr[[1, 3, 4]] = np.array(rows, np.int64).T
    stats = DepthStats()
    got = [s.copy() for s in rows_symbols((Rows(p) for p in np.split(arr, cuts, axis=1)), stats)]
    want = _rows_twin(rows)
    assert np.concatenate([np.zeros(0, np.int32)] + got).tolist() == want
    depth = np.cumsum([1 if s & 1 else -1 if s == 0 else 0 for s in want]) if want else [0]
    assert (stats.dmin, stats.dmax, stats.final) == (min(0, int(np.min(depth))), max(0, int(np.max(depth))),
                                                      int(depth[-1]))
    blocks_events = sum(1 if e != -1 else 2 + (d >= 2) for _, d, e in rows if e < 0 or d >= 2)
    assert stats.symbols == len(want) and stats.events == blocks_events
