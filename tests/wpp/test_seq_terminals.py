"""SEQ terminals (wave 12): the interner joins up to ``group`` fused terminals at calls and returns;
against the pure-Python twin in chunks of 1, 2 and 97, exact expansion, readers without recursion."""

from __future__ import annotations

import numpy as np
import pytest

from naive_groups import canonical, group_codes
from test_online import naive_intern, path_stream
from wholetrace.events import LEAVE, enter_code
from wholetrace.grammar import sequitur
from wholetrace.wpp.intern import PATH_GROUP, PATH_LEAVE_AT, EventInterner, events_of, interner_for, terminal_widths
from wholetrace.wpp.symbols import ENTER, ENTER_CHAIN, ENTER_PATH, FUSED, PATH, SEQ, split_entered

L = PATH_LEAVE_AT


def keys(t) -> list[tuple[int, int, int]]:  # type: ignore[no-untyped-def]
    return list(zip(t.kind.tolist(), t.fid.tolist(), t.value.tolist()))


def intern_chunked(it: EventInterner, streams: dict[int, list[int]], step: int) -> dict[int, np.ndarray]:
    """Each stream's codes, fed in chunks of ``step`` events, streams in turn; each expands exactly."""
    got = {}
    for sid, ev in streams.items():
        got[sid] = np.concatenate([it.codes(sid, np.array(ev[i:i + step], np.int32)) for i in range(0, len(ev), step)]
                                  + [it.finish(sid)])
        assert events_of(got[sid], it.terminals()).tolist() == ev
    return got


@pytest.mark.nojit
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")   # the hash wraps on purpose
@pytest.mark.parametrize("group", [2, 4])
@pytest.mark.parametrize("step", [97, 1, 2])
def test_groups_match_the_twin_across_chunk_boundaries(group: int, step: int) -> None:
    """Chunks of 1 and 2 events put a group's parts (and a fused ENTER's halves) in different chunks."""
    rng = np.random.default_rng(5)
    streams = {0: path_stream(rng, 4000), 1: path_stream(rng, 2500), 2: path_stream(rng, 300) + [enter_code(4)]}
    fns = frozenset(range(50))
    it = EventInterner(PATH, L, fuse=True, group=group)
    it.set_path_functions(np.arange(50))
    got = intern_chunked(it, streams, step)
    fused, table = naive_intern(streams, PATH, L, fns, fuse=True)
    cons: dict[tuple[int, int, int], int] = {}
    mine = canonical(keys(it.terminals()), cons)
    n_seq = 0
    for sid in streams:
        want, twin = group_codes(fused[sid], table, group, L)
        theirs = canonical(twin, cons)
        assert [mine[c] for c in got[sid]] == [theirs[c] for c in want]
        assert len(want) < len(fused[sid])
        n_seq += sum(1 for c in want if twin[c][0] == SEQ)
    assert n_seq > 100
    widths = terminal_widths(it.terminals())
    assert int(widths[got[0]].sum()) == len(streams[0])


def test_calls_and_returns_are_grouped() -> None:
    """A caller's path, a leaf call, the caller's next path, another leaf call, the caller's exit:
    groups of at most 4 terminals, split back into one terminal an event."""
    ev = [enter_code(0), 3,                      # F0P3 (cut at a call block)
          enter_code(1), L + 2, 5,               # leaf 1 returns, 0 goes on with path 5 (cut)
          enter_code(2), L + 1, L + 6,           # leaf 2 returns, 0 returns
          enter_code(0), 3, 7, 8, LEAVE, 9]       # a loop: cut, cut (no seam), LEAVE, value
    it = interner_for("path")
    it.set_path_functions([0, 1, 2])
    codes = it.codes(0, np.array(ev, np.int32), final=True)
    t = it.terminals()
    got = [t.label(int(c)) for c in codes]
    assert got == [f"F0P3+F1P{L + 2}+P5@0+F2P{L + 1}", f"P{L + 6}@0+F0P3", "P7@0", "P8@0", "E", "P9@-1"]
    assert PATH_GROUP == 4 and int(t.kind[codes[0]]) == SEQ
    assert len(t.components(int(codes[0]))) == 4
    assert t.parts(int(codes[0])) == [(ENTER, 0, 0), (PATH, 0, 3), (ENTER, 1, 0), (PATH, 1, L + 2), (PATH, 0, 5),
                                      (ENTER, 2, 0), (PATH, 2, L + 1)]
    assert events_of(codes, t).tolist() == ev
    (g,), terms = split_entered([sequitur(codes)], t)
    assert events_of(g.expand(), terms).tolist() == ev
    assert not np.any(np.isin(terms.kind[g.expand()], FUSED))


def test_a_group_around_a_deep_chain() -> None:
    """A cut path, then ENTERs 5,000 deep before the first value: one SEQ around one ENTER_CHAIN;
    it expands, labels, splits and counts without recursion, in chunks of 7."""
    ev = [enter_code(3), 4] + [enter_code(1)] * 5000 + [enter_code(2), L + 1] + [L] * 5000 + [L + 2]
    it = interner_for("path")
    it.set_path_functions([1, 2, 3])
    codes = np.concatenate([it.codes(0, np.array(ev[i:i + 7], np.int32)) for i in range(0, len(ev), 7)] + [it.finish(0)])
    t = it.terminals()
    first = int(codes[0])
    assert int(t.kind[first]) == SEQ and int(t.kind[t.components(first)[1]]) == ENTER_CHAIN
    assert events_of(codes, t).tolist() == ev
    assert t.label(first) == "F3P4+" + "F1>" * 5000 + f"F2P{L + 1}+P{L}@1+P{L}@1"   # 4 terminals at most
    assert int(terminal_widths(t)[first]) == 2 + 5001 + 1 + 1 + 1
    (g,), terms = split_entered([sequitur(codes)], t)
    assert events_of(g.expand(), terms).tolist() == ev


def test_no_group_without_the_option() -> None:
    """``EventInterner(fuse=True)`` alone is wave 10's interner: no SEQ (what recordings of
    terminal version 2 hold, and read as they did)."""
    ev = [enter_code(0), 3, enter_code(1), L + 2, 5, enter_code(2), L + 1, L + 6]
    it = EventInterner(PATH, L, fuse=True)
    codes = it.codes(0, np.array(ev, np.int32), final=True)
    t = it.terminals()
    assert not np.any(t.kind == SEQ) and len(codes) == 5
    assert np.any(t.kind == ENTER_PATH)
    assert events_of(codes, t).tolist() == ev


def dispatch_stream(rng: np.random.Generator, n: int, fns: int = 60) -> list[int]:
    """A data-dependent dispatch loop (the review's p2): main (function 0) calls fs[a](fs[b](fs[c](x)))
    with random a, b, c among ``fns`` leaves of 3 paths, each call site its own cut path of main."""
    ev = [enter_code(0)]
    for _ in range(n):
        for site in range(3):
            ev += [site, enter_code(1 + int(rng.integers(0, fns))), L + int(rng.integers(0, 3))]
        ev.append(3)
    return ev + [L + 4]


@pytest.mark.nojit
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")   # the hash wraps on purpose
@pytest.mark.parametrize("step", [97, 1, 2])
def test_the_seq_budget_matches_the_twin_across_chunk_boundaries(step: int) -> None:
    """A small budget (floor 24, 1 SEQ per other terminal), spent early by random dispatch: the
    kernel and the twin stop making SEQ keys at the same event however the streams are chunked,
    the count carried from one stream to the next; past it, groups still grow by keys they hold."""
    rng = np.random.default_rng(11)
    streams = {0: dispatch_stream(rng, 300, fns=6), 1: path_stream(rng, 60), 2: dispatch_stream(rng, 200, fns=6)}
    budget = (24, 1)
    it = EventInterner(PATH, L, fuse=True, group=PATH_GROUP, seq_budget=budget)
    it.set_path_functions(np.arange(61))
    got = intern_chunked(it, streams, step)
    t = it.terminals()
    n_seq = int(np.count_nonzero(t.kind == SEQ))
    assert n_seq <= max(budget[0], budget[1] * (len(t.kind) - n_seq))
    fused, table = naive_intern(streams, PATH, L, frozenset(range(61)), fuse=True)
    cons: dict[tuple[int, int, int], int] = {}
    mine = canonical(keys(t), cons)
    state: dict[str, int] = {}
    twin = table
    late = 0
    for sid in streams:
        want, twin = group_codes(fused[sid], twin, PATH_GROUP, L, budget, state)
        theirs = canonical(twin, cons)
        assert [mine[c] for c in got[sid]] == [theirs[c] for c in want], sid
        if sid == 2:   # after the budget was spent: groups made only of keys held
            late = sum(1 for c in want if twin[c][0] == SEQ)
    assert state["seq"] == n_seq and state["refused"] > 100 and late > 50   # spent, and groups still made


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_data_dependent_dispatch_keeps_the_table_bounded() -> None:
    """60 leaves called in random triples: without the budget nearly every group is a new SEQ key
    (the table grows with the trace); with the default one it stops at the floor, and the events
    still come back exactly."""
    ev = dispatch_stream(np.random.default_rng(3), 20000)
    sizes = {}
    for name, budget in {"none": (1 << 40, 0), "default": None}.items():
        it = EventInterner(PATH, L, fuse=True, group=PATH_GROUP, **({"seq_budget": budget} if budget else {}))
        it.set_path_functions(np.arange(61))
        codes = np.concatenate([it.codes(0, np.array(ev[i:i + 4096], np.int32)) for i in range(0, len(ev), 4096)]
                               + [it.finish(0)])
        t = it.terminals()
        assert events_of(codes, t).tolist() == ev
        sizes[name] = (int(np.count_nonzero(t.kind == SEQ)), int(np.count_nonzero(t.kind != SEQ)), len(codes))
    from wholetrace.kernels.wpp_intern import SEQ_BUDGET_K, SEQ_BUDGET_MIN
    assert sizes["none"][0] > 10000                     # grows with the trace (15.6 K)
    n_seq, other, _ = sizes["default"]
    assert other == sizes["none"][1] < 200
    assert n_seq == max(SEQ_BUDGET_MIN, SEQ_BUDGET_K * other)
    assert sizes["default"][2] < len(ev) // 2           # still grouped: fewer terminals than half the events


def test_group_needs_fuse() -> None:
    """A group joins fused terminals: asking for one without ``fuse`` is a usage error."""
    from wholetrace.errors import UsageError
    with pytest.raises(UsageError, match="group needs fuse"):
        EventInterner(PATH, L, group=4)
