"""The interner stops mid-chunk to grow its table, key list or a stream's stack, and resumes where it
stopped (wave 14 keeps the stream's state in locals and stores it back at each stop): against the
pure-Python twins (``naive_intern`` + ``group_codes``), in chunks of 1, 7 and 500 events; and, from
tiny arrays, with the stops falling amid an ENTER_CHAIN wrap and a spent SEQ budget, in random chunks."""

from __future__ import annotations

import numpy as np
import pytest

from naive_groups import canonical, group_codes
from test_online import naive_intern
from wholetrace.events import EXC, LEAVE, enter_code
from wholetrace.kernels import wpp_intern as K
from wholetrace.wpp.intern import PATH_GROUP, PATH_LEAVE_AT, EventInterner, events_of

L = PATH_LEAVE_AT
KERNEL = K.intern_chunk    # (``check_tiny`` counts its stops through a wrapper)


def keys(t) -> list[tuple[int, int, int]]:  # type: ignore[no-untyped-def]
    return list(zip(t.kind.tolist(), t.fid.tolist(), t.value.tolist()))


def wide_deep_stream(rng: np.random.Generator, n: int) -> list[int]:
    """Calls up to ~150 deep (the stack starts at 64 frames), over 400 functions with ~40 paths
    each (several thousand distinct terminals: the table starts at 2,048 keys), with exceptions
    (EXC s r) and plain LEAVEs among them."""
    out: list[int] = []
    depth = 0
    for _ in range(n):
        r = rng.random()
        if depth == 0 or (r < 0.45 and depth < 150):
            out.append(enter_code(int(rng.integers(0, 400))))
            depth += 1
        elif r < 0.6:
            out.append(L + int(rng.integers(0, 40)))
            depth -= 1
        elif r < 0.63:
            out += [EXC, int(rng.integers(0, 5)), int(rng.integers(-1, 6))]
            out.append(LEAVE)
            depth -= 1
        else:
            out.append(int(rng.integers(0, 40)))
    return out


def check(step: int) -> None:
    rng = np.random.default_rng(14)
    streams = {0: wide_deep_stream(rng, 6000), 1: wide_deep_stream(rng, 3000) + [enter_code(7), enter_code(8)]}
    it = EventInterner(1 + 3, L, fuse=True, group=PATH_GROUP)   # PATH terminals, as interner_for("path")
    it.set_path_functions(np.arange(400))
    got = {}
    for sid, ev in streams.items():
        parts = [it.codes(sid, np.array(ev[i:i + step], np.int32)) for i in range(0, len(ev), step)]
        got[sid] = np.concatenate(parts + [it.finish(sid)])
    assert len(it) > 2048                                     # the table grew
    assert max(len(st) for st, _ in it._streams.values()) > 64   # a stack grew
    fused, table = naive_intern(streams, 4, L, frozenset(range(400)), fuse=True)
    cons: dict[tuple[int, int, int], int] = {}
    mine = canonical(keys(it.terminals()), cons)
    state: dict[str, int] = {}
    twin = table
    want = {}
    for sid in streams:
        want[sid], twin = group_codes(fused[sid], twin, PATH_GROUP, L, state=state)
    theirs = canonical(twin, cons)
    for sid in streams:
        assert [mine[c] for c in got[sid]] == [theirs[c] for c in want[sid]]


@pytest.mark.nojit
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")   # the hash wraps on purpose
@pytest.mark.parametrize("step", [7, 500])
def test_resumes_after_growth_nojit(step: int) -> None:
    check(step)


@pytest.mark.parametrize("step", [1, 7, 500])
def test_resumes_after_growth(step: int) -> None:
    check(step)


def chain_stream(rng: np.random.Generator, n: int, nf: int = 6) -> list[int]:
    """Runs of 2-4 ENTERs and then a value (the innermost activation's first path, or LEAVE_PATH + p:
    an activation of one path), so nearly every call is an ENTER_CHAIN wrap; paths, returns, LEAVEs
    and EXC s r between them.  Everything runs above a base activation (the wraps' outermost ENTER is
    never the stack's bottom frame) over few functions and paths (keys and SEQ groups recur)."""
    out = [enter_code(nf), 0]
    depth = 1
    while len(out) < n:
        r = rng.random()
        if r < 0.35 and depth < 40:
            k = int(rng.integers(2, 5))
            out += [enter_code(int(rng.integers(0, nf))) for _ in range(k)]
            depth += k
            if rng.random() < 0.3:
                out.append(L + int(rng.integers(0, 3)))
                depth -= 1
            else:
                out.append(int(rng.integers(0, 3)))
        elif r < 0.55 and depth > 1:
            out.append(L + int(rng.integers(0, 3)))
            depth -= 1
        elif r < 0.6 and depth > 1:
            out += [EXC, int(rng.integers(0, 3)), int(rng.integers(-1, 3)), LEAVE]
            depth -= 1
        elif r < 0.63 and depth > 1:
            out.append(LEAVE)
            depth -= 1
        else:
            out.append(int(rng.integers(0, 4)))
    return out


def check_tiny(seed: int, n: int, budget: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """Two streams of ``chain_stream``, one after the other, in random chunks of 1-50 events,
    through an interner that starts from a 4-slot table, a 1-key list and 1-frame stacks (so the
    growth stops are many and fall anywhere, amid a wrap too) with SEQ budget ``budget``; against
    the twins.  Returns (stops amid a wrap, SEQ keys the twin's budget refused)."""
    rng = np.random.default_rng(seed)
    nf = 4
    streams = {0: chain_stream(rng, n, nf), 1: chain_stream(rng, n // 2, nf) + [enter_code(1), enter_code(2)]}
    it = EventInterner(K.K_PATH, L, fuse=True, group=PATH_GROUP, seq_budget=budget)
    it.set_path_functions(np.arange(nf + 1))
    it._keys = np.full(4, K.EMPTY, np.int64)    # no constructor seam for the sizes: set them here
    it._ids = np.zeros(4, np.int64)
    it._tstate[K.T_BITS] = 2
    it._syms = np.empty(1, np.int64)
    for sid in streams:
        it._streams[sid] = (np.empty(1, np.int64), np.zeros(K.S_SIZE, np.int64))
    amid = [0]

    def counting(*a):  # type: ignore[no-untyped-def]
        pos, m, why = KERNEL(*a)
        events, sstate = a[0], a[9]   # a stop amid a wrap: ENTERs still wait, a value of theirs was taken
        if why != K.ST_DONE and sstate[K.S_PEND] > 0 and pos > 0 and events[pos - 1] >= 0:
            amid[0] += 1
        return pos, m, why

    monkeypatch.setattr(K, "intern_chunk", counting)
    got = {}
    for sid, ev in streams.items():
        parts, i = [], 0
        while i < len(ev):
            step = int(rng.integers(1, 51))
            parts.append(it.codes(sid, np.array(ev[i:i + step], np.int32)))
            i += step
        got[sid] = np.concatenate(parts + [it.finish(sid)])
        assert events_of(got[sid], it.terminals()).tolist() == ev
    fused, table = naive_intern(streams, 4, L, frozenset(range(nf + 1)), fuse=True)
    cons: dict[tuple[int, int, int], int] = {}
    mine = canonical(keys(it.terminals()), cons)
    state: dict[str, int] = {}
    twin = table
    for sid in streams:
        want, twin = group_codes(fused[sid], twin, PATH_GROUP, L, budget, state)
        theirs = canonical(twin, cons)
        assert [mine[c] for c in got[sid]] == [theirs[c] for c in want], (seed, sid)
    assert int(it._tstate[K.T_SEQ]) == state["seq"] == sum(1 for k in twin if k[0] == K.K_SEQ), seed
    return amid[0], state.get("refused", 0)


@pytest.mark.nojit
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")   # the hash wraps on purpose
def test_resumes_amid_a_wrap_with_a_spent_budget_nojit(monkeypatch: pytest.MonkeyPatch) -> None:
    amid = refused = 0
    for seed in range(2):
        a, r = check_tiny(seed, 800, [(0, 1), (2, 1)][seed], monkeypatch)
        amid, refused = amid + a, refused + r
    assert amid > 0 and refused > 0


@pytest.mark.parametrize("budget", [(0, 1), (2, 1)])
def test_resumes_amid_a_wrap_with_a_spent_budget(budget: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded streams: the stops amid a wrap and the budget's refusals actually happen."""
    amid = refused = 0
    for seed in range(10):
        a, r = check_tiny(100 + 10 * budget[0] + seed, 1500, budget, monkeypatch)
        amid, refused = amid + a, refused + r
    assert amid >= 10 and refused > 100
