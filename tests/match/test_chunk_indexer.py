"""The chunk index made online (``cftrace.ChunkIndexer``: length and depth range unknown while
it is fed, as on compress's decoding thread) against a brute-force walk of the symbols."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wholetrace.match import cftrace
from wholetrace.match.symbols import DepthStats


def brute_chunks(sym: list[int], chunk_events: int, nfun: int) -> tuple[list, list, list, list, DepthStats]:
    """Per chunk: min depth (entry counted), exit depth, marked functions, stack at its start
    (levels from the stream's lowest depth, -1 where unknown)."""
    d, depths = 0, [0]
    for s in sym:
        d += -1 if s == 0 else 1 if s & 1 else 0
        depths.append(d)
    dmin, dmax = min(depths), max(depths)
    stats = DepthStats(events=len(sym), symbols=len(sym))
    stats.dmin, stats.dmax, stats.final = dmin, dmax, depths[-1]
    mins, exits, marks, stacks = [], [], [], []
    stack: dict[int, int] = {}     # depth -> function entered there
    for p, s in enumerate(sym):
        c = p // chunk_events
        if p % chunk_events == 0:
            mins.append(depths[p])
            marks.append(set())
            stacks.append([stack.get(lv, -1) for lv in range(dmin, depths[p])])
        if s & 1:
            stack[depths[p]] = s >> 1
            if s >> 1 < nfun:
                marks[c].add(s >> 1)
        elif s != 0 and depths[p] > dmin and stack.get(depths[p] - 1, -1) >= 0:
            if stack[depths[p] - 1] < nfun:
                marks[c].add(stack[depths[p] - 1])
        mins[c] = min(mins[c], depths[p + 1])
        if len(exits) <= c:
            exits.append(0)
        exits[c] = depths[p + 1]
    return mins, exits, marks, stacks, stats


symbols = st.lists(st.one_of(st.just(0), st.integers(0, 5).map(lambda f: 2 * f + 1),
                             st.integers(0, 9).map(lambda b: 2 * b + 2)), max_size=300)


@settings(max_examples=150, deadline=None)
@given(symbols, st.integers(1, 40), st.integers(1, 50))
def test_online_chunk_index_equals_brute_force(sym: list[int], chunk_events: int, piece: int) -> None:
    nfun = 5   # function 5 has no row: its bit is dropped, as for the stored index
    got_chunks: list[list[int]] = []
    chunker = cftrace.ChunkIndexer(chunk_events, nfun, lambda c, a: got_chunks.append(a.tolist()))
    a = np.array(sym, np.int32)
    for i in range(0, len(a), piece):
        chunker.feed(a[i:i + piece])
    mins, exits, marks, stacks, stats = brute_chunks(sym, chunk_events, nfun)
    index, off, pool = chunker.finish(stats)
    assert index.min_depth.tolist() == mins
    assert index.exit_depth.tolist() == exits
    assert [set(np.flatnonzero(index.marked(f)).tolist()) for f in range(nfun)] == [
        {c for c, m in enumerate(marks) if f in m} for f in range(nfun)]
    assert [pool[off[c]:off[c + 1]].tolist() for c in range(len(mins))] == stacks
    assert sum(got_chunks, []) == sym and all(len(c) == chunk_events for c in got_chunks[:-1])


def test_a_stream_that_starts_deep_inside_calls() -> None:
    """A stream whose head was lost leaves functions it never entered: 40 levels below 0
    (the stack's base is lowered several times while it is fed one symbol at a time)."""
    sym = [2] + [0] * 40 + [3, 4, 0, 5, 6] * 3
    mins, exits, marks, stacks, stats = brute_chunks(sym, 7, 3)
    chunker = cftrace.ChunkIndexer(7, 3, lambda c, a: None)
    for s in sym:
        chunker.feed(np.array([s], np.int32))
    index, off, pool = chunker.finish(stats)
    assert stats.dmin == -40
    assert index.min_depth.tolist() == mins and index.exit_depth.tolist() == exits
    assert [pool[off[c]:off[c + 1]].tolist() for c in range(len(mins))] == stacks


def test_statistics_of_another_stream_are_refused() -> None:
    chunker = cftrace.ChunkIndexer(4, 2, lambda c, a: None)
    chunker.feed(np.array([1, 2, 0], np.int32))
    with pytest.raises(ValueError):
        chunker.finish(DepthStats(events=5, symbols=5))
