"""All four schemes against the brute-force oracle (tests/match/naive_match.py) on generated
nested traces, over SEQUITUR grammars, random bracketings and flat start rules, every chunk
size and segment count; the kernels' summaries and indexes against their slow twins."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive_twins as twin
from naive_match import brute_ends, decode
from strategies import BLOCKS, FUNCS, bracketing, queries, symbols_of, traces
from wholetrace.grammar import Grammar
from wholetrace.match.cftrace import coarsen, coarsen_segments, from_symbols
from wholetrace.match.engine import SCHEMES, match
from wholetrace.match.query import Query
from wholetrace.match.scheme2 import Summaries

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _grammar(kind: str, sym: np.ndarray, data) -> Grammar | None:
    if kind == "sequitur":
        return None
    if kind == "flat":
        return Grammar(np.array([0, len(sym)]), sym.astype(np.int64))
    off, rhs = bracketing([int(x) for x in sym], data.draw)
    return Grammar(off, rhs)


def _stream(data, events):
    sym = symbols_of(events)
    kind = data.draw(st.sampled_from(["sequitur", "bracketing", "flat"]), label="grammar")
    ce = data.draw(st.sampled_from([1, 2, 3, 5, len(sym) + 1]), label="chunk_events")
    segs = data.draw(st.integers(1, max(1, len(sym))), label="segments")
    cs = from_symbols(sym, chunk_events=ce, segments=segs, grammar=_grammar(kind, sym, data))
    # indexes merged to fit their byte budget (match.store.fit_indexes): units of 2**k chunks
    # or segments stay exact
    coarsen_segments(cs, 2 ** data.draw(st.integers(0, 3), label="segment merge"))
    m = 2 ** data.draw(st.integers(0, 3), label="chunk merge")
    cs.chunks, cs.chunk_merge = coarsen(cs.chunks, m), m
    return cs


@SETTINGS
@given(data=st.data())
def test_every_scheme_equals_brute_force(data):
    events = data.draw(traces(), label="events")
    fid, path = data.draw(queries(events), label="query")
    cs = _stream(data, events)
    want = brute_ends(events, fid, path)
    q = Query(fid, path)
    cap = data.draw(st.integers(0, len(want) + 1), label="cap")
    for scheme, run in SCHEMES.items():
        full = run(cs, q, False, len(want) + 1)
        assert (full.count, list(full.ends), full.complete) == (len(want), want, True), scheme
        part = run(cs, q, False, cap)
        assert (part.count, list(part.ends)) == (len(want), want[:cap]), scheme
        first = run(cs, q, True, 1)
        assert list(first.ends) == want[:1], scheme
        assert first.complete == (not want), scheme


@SETTINGS
@given(data=st.data())
def test_summaries_equal_the_spec_fold_of_each_rule(data):
    """Each rule's kernel summary = the spec's leaf fold (naive twin) over its expansion."""
    events = data.draw(traces(), label="events")
    fid, path = data.draw(queries(events), label="query")
    cs = _stream(data, events)
    g = cs.grammar
    s = Summaries(g, Query(fid, path))
    s.ensure(0, g.start_length)
    m = len(path)
    for r in range(1, len(g.off) - 1):
        want = twin.summary(_expand(g, r), fid, path)
        assert (s.d[r], s.plen[r], s.len[r], s.cnt[r]) == (want.d, len(want.push), want.n, want.cnt_def), r
        assert list(s.push[s.poff[r]:s.poff[r] + s.plen[r]]) == want.push
        for j in range(want.d + 1):
            t = s.tails[s.toff[r] + j]
            assert list(s.t_out[t]) == want.tails[j].out[1:], (r, j)
            assert list(s.t_cnt[t]) == want.tails[j].cnt[1:], (r, j)
            assert want.tails[j].out[0] == -1 and want.tails[j].cnt[0] == 0
        assert m + 1 == s.t_out.shape[1]


@SETTINGS
@given(events=traces(), start=st.lists(st.integers(-1, 3), max_size=6), data=st.data())
def test_twin_apply_equals_twin_automaton(events, start, data):
    """The twin's algebra itself (spec 5): apply(summary(u), stack) = scheme 1 on u from that
    stack (up to leading -1 padding), and summary(u + v) = compose(summary(u), summary(v))."""
    fid, path = data.draw(queries(events))
    start = [min(x, len(path) - 1) for x in start]
    sym = [int(x) for x in symbols_of(events)]
    st_, ends = twin.automaton(sym, fid, path, start)
    x = twin.summary(sym, fid, path)
    st2, count = twin.apply(x, start)
    assert count == len(ends)
    pad = len(st2) - len(st_)
    assert pad >= 0 and st2[pad:] == st_ and all(v == -1 for v in st2[:pad])
    cut = data.draw(st.integers(0, len(sym)))
    joined = twin.compose(twin.summary(sym[:cut], fid, path), twin.summary(sym[cut:], fid, path))
    assert (joined.d, joined.push, joined.cnt_def) == (x.d, x.push, x.cnt_def)
    assert [(t.out, t.cnt) for t in joined.tails] == [(t.out, t.cnt) for t in x.tails]


@SETTINGS
@given(data=st.data())
def test_indexes_equal_the_naive_unit_index(data):
    events = data.draw(traces(), label="events")
    cs = _stream(data, events)
    sym = [int(x) for x in symbols_of(events)]
    nfun = cs.chunks.bits.shape[0]
    for idx, bounds in ((cs.chunks, list(range(0, len(sym), cs.chunk_events * cs.chunk_merge)) + [len(sym)]),
                        (cs.segments, [int(p) for p in cs.seg_pos])):
        want = twin.unit_index(sym, bounds if len(sym) else [0], nfun)
        if not sym and idx is cs.chunks:
            assert idx.units == 0
            continue
        assert list(idx.min_depth) == [w[0] for w in want]
        assert list(idx.exit_depth) == [w[1] for w in want]
        for f in range(FUNCS):
            assert list(np.flatnonzero(idx.marked(f))) == [i for i, w in enumerate(want) if f in w[2]], f
        # consecutive units: exit depth of one = entry of the next; the minimum counts both
        assert all(lo <= ex for lo, ex in zip(idx.min_depth, idx.exit_depth))


@SETTINGS
@given(data=st.data())
def test_the_whole_streams_unit_equals_the_naive_one(data):
    """A one-unit index is not stored (``match.store._put_index``): what the reader derives
    from the stream record and the grammar must be the naive index of the whole stream."""
    from wholetrace.match.store import whole_unit

    events = data.draw(traces(), label="events")
    cs = _stream(data, events)
    sym = [int(x) for x in symbols_of(events)]
    nfun = cs.chunks.bits.shape[0]
    (want,) = twin.unit_index(sym, [0, len(sym)], nfun)
    got = whole_unit(cs.grammar, cs.stats, nfun)
    assert (list(got.min_depth), list(got.exit_depth)) == ([want[0]], [want[1]])
    assert {f for f in range(nfun) if got.marked(f)[0]} == set(want[2])


@SETTINGS
@given(events=traces(), data=st.data())
def test_metamorphic_relations(events, data):
    fid, path = data.draw(queries(events))
    sym = symbols_of(events)
    q = Query(fid, path)
    base = match([from_symbols(sym, chunk_events=7, segments=5)], q, 4, "count").count
    # inserting a complete invocation without the target function changes nothing but positions
    other = (fid + 1) % FUNCS
    ins = [("F", other), ("B", 0), ("F", (fid + 2) % FUNCS), ("B", 1), ("E",), ("B", 2), ("E",)]
    at = data.draw(st.integers(0, len(events)))
    more = events[:at] + ins + events[at:]
    assert match([from_symbols(symbols_of(more), segments=3)], q, 2, "count").count == base
    # relabelling blocks bijectively in trace and path, and renaming other functions
    perm = data.draw(st.permutations(range(BLOCKS)))
    fperm = {f: (f if f == fid else FUNCS + f) for f in range(FUNCS)}
    relab = [("B", perm[e[1]]) if e[0] == "B" else ("F", fperm[e[1]]) if e[0] == "F" else e for e in events]
    q2 = Query(fid, tuple(perm[b] for b in path))
    assert match([from_symbols(symbols_of(relab), segments=4)], q2, 3, "count").count == base
    # a longer path occurs at most as often; one block = its executions inside the function
    b = data.draw(st.integers(0, BLOCKS - 1))
    assert match([from_symbols(sym)], Query(fid, path + (b,)), 1, "count").count <= base
    inner = _innermost_count(events, fid, b)
    assert match([from_symbols(sym)], Query(fid, (b,)), 2, "count").count == inner


def test_engine_modes_over_several_streams():
    f0 = [("F", 0), ("B", 1), ("B", 2), ("E",)]
    streams = [from_symbols(symbols_of(f0 * k), sid=sid, chunk_events=3, segments=2)
               for sid, k in ((0, 0), (1, 2), (2, 3))]
    q = Query(0, (1, 2))
    for scheme in (1, 2, 3, 4, "auto"):
        a = match(streams, q, scheme, "default")
        assert (a.count, a.occurrences) == (5, ((1, 2),))
        a = match(streams, q, scheme, "first")
        assert (a.count, a.occurrences) == (None, ((1, 2),))
        assert [r.sid for r in a.streams] == [0, 1]     # stopped at the first stream that has one
        a = match(streams, q, scheme, "all", limit=3)
        assert (a.count, a.occurrences) == (5, ((1, 2), (1, 6), (2, 2)))
        a = match(streams, q, scheme, "all")
        assert a.occurrences == ((1, 2), (1, 6), (2, 2), (2, 6), (2, 10))
        assert match(streams, q, scheme, "count").occurrences == ()


def _innermost_count(events, fid, b):
    stack, n = [], 0
    for e in events:
        if e[0] == "F":
            stack.append(e[1])
        elif e[0] == "E":
            if stack:
                stack.pop()
        elif stack and stack[-1] == fid and e[1] == b:
            n += 1
    return n


def _expand(g: Grammar, r: int) -> list[int]:
    """Rule ``r``'s expansion, by recursion over off/rhs (not through Grammar's kernels)."""
    out: list[int] = []
    for y in g.rule(r).tolist():
        out += _expand(g, -y) if y < 0 else [y]
    return out


def test_decode_roundtrip():
    ev = [("F", 3), ("B", 0), ("E",)]
    assert decode(symbols_of(ev)) == ev


@pytest.mark.nojit
def test_schemes_on_fixed_random_traces():
    """A few seeded traces through every scheme (run also with NUMBA_DISABLE_JIT=1, where the
    kernels execute as plain Python)."""
    import random

    rng = random.Random(12)

    def inv(depth):
        out = [("F", rng.randrange(3))]
        for _ in range(rng.randrange(5)):
            out += inv(depth + 1) if depth < 4 and rng.random() < 0.3 else [("B", rng.randrange(3))]
        return out + [("E",)]

    for _ in range(25):
        events = inv(0) * rng.randrange(1, 4) + inv(0)
        events = events[rng.randrange(3):]
        fid, path = rng.randrange(3), tuple(rng.randrange(3) for _ in range(rng.randrange(1, 4)))
        want = brute_ends(events, fid, path)
        cs = from_symbols(symbols_of(events), chunk_events=rng.randrange(1, 6), segments=rng.randrange(1, 9))
        for scheme, run in SCHEMES.items():
            r = run(cs, Query(fid, path), False, 100)
            assert (r.count, list(r.ends)) == (len(want), want), scheme
