"""The interner stops mid-chunk to grow its table, key list or a stream's stack, and resumes where it
stopped (wave 14 keeps the stream's state in locals and stores it back at each stop): against the
pure-Python twins (``naive_intern`` + ``group_codes``), in chunks of 1, 7 and 500 events."""

from __future__ import annotations

import numpy as np
import pytest

from naive_groups import canonical, group_codes
from test_online import naive_intern
from wholetrace.events import EXC, LEAVE, enter_code
from wholetrace.wpp.intern import PATH_GROUP, PATH_LEAVE_AT, EventInterner

L = PATH_LEAVE_AT


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
