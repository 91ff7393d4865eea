"""`trace.lookahead`, the decoder's first pass over witness streams, against an event-by-event
twin with a stack, on hand-made streams, on random well-nested streams cut into chunks
everywhere, and on the witness streams of real recordings."""

from __future__ import annotations

import random
import textwrap
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inline_programs import INLINE
from wholetrace.events import ENTER_BASE, EXC, LEAVE, RERAISE, enter_code
from wholetrace.trace.lookahead import groups_ended_by_exceptions
from wholetrace.store import Recording
from wtutil import run_recorded


def naive_groups(chunks: Iterable[np.ndarray]) -> dict[int, int]:
    """The first pass event by event, with a stack (the twin of the vectorised pass)."""
    found: dict[int, int] = {}
    stack: list[int] = []           # per open activation: ordinal of its open group's first ENTER, or -1
    enters = 0                      # ENTERs seen so far
    base = 0                        # stream index of the current chunk's first value
    free = 0                        # stream index of the first value that is not an argument of an EXC
    last = 0                        # stream index just after the previous structural event and its arguments
    want_at, want_group = -1, -1    # where the raising statement of the last record lies, and the group it ends
    for chunk in chunks:
        n = len(chunk)
        if want_at >= 0 and want_at < base + n:
            found[want_group] = int(chunk[want_at - base])
            want_at = -1
        for p in np.flatnonzero(chunk < 0).tolist():
            g = base + p
            if g < free:
                continue                                    # an argument of an EXC (statement id -1)
            v = int(chunk[p])
            if g > last and stack:
                stack[-1] = -1                              # own events of the running activation came between
            last = g + 1
            if v <= -ENTER_BASE:
                if stack and stack[-1] < 0:
                    stack[-1] = enters
                stack.append(-1)
                enters += 1
            elif v == LEAVE:
                if stack:
                    stack.pop()
            elif v == EXC or v == RERAISE:
                nargs = 1 if v == EXC else 2
                if stack:
                    if stack[-1] >= 0:
                        if g + nargs < base + n:
                            found[stack[-1]] = int(chunk[p + nargs])
                        else:
                            want_at, want_group = g + nargs, stack[-1]
                    stack[-1] = -1
                free = last = g + 1 + nargs
        base += n
    return found


F = enter_code


@pytest.mark.nojit
def test_hand_made_stream() -> None:
    ev = [F(0), 3,                              # activation 0 (ENTER #0), a witness
          F(1), 2, LEAVE, F(1), LEAVE,          # two children (#1, #2) ...
          EXC, 5, 7,                            # ... then 0's exception record: group #1 -> 5
          F(2), EXC, -1, LEAVE,                 # a child (#3) ending in its own exception (no group in it)
          RERAISE, 4, 9, LEAVE]                 # 0's re-raise after child #3: group #3 -> 9 (the site)
    want = {1: 5, 3: 9}
    arr = np.array(ev, np.int32)
    for size in range(1, len(ev) + 1):
        chunks = [arr[i:i + size] for i in range(0, len(arr), size)]
        assert groups_ended_by_exceptions(chunks) == naive_groups(chunks) == want, size
        assert groups_ended_by_exceptions(chunks, capacity=1, levels=4) == want, size    # the kernel's growth paths


def _random_stream(rng: random.Random, size: int) -> np.ndarray:
    out: list[int] = []
    depth = 0
    while len(out) < size:
        x = rng.random()
        if x < 0.25 or depth == 0:
            out.append(F(rng.randrange(5)))
            depth += 1
        elif x < 0.5:
            out.append(LEAVE)
            depth -= 1
        elif x < 0.7:
            out += [EXC, rng.randrange(-1, 6)] + ([rng.randrange(0, 9)] if rng.random() < 0.5 else [])
        elif x < 0.8:
            out += [RERAISE, rng.randrange(-1, 6), rng.randrange(-1, 6)]
            if rng.random() < 0.5:
                out += [LEAVE]
                depth -= 1
        else:
            out.append(rng.randrange(0, 9))
    return np.array(out + [LEAVE] * depth, np.int32)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32), size=st.integers(1, 300), cut=st.integers(1, 40))
def test_random_streams_cut_anywhere(seed: int, size: int, cut: int) -> None:
    ev = _random_stream(random.Random(seed), size)
    chunks = [ev[i:i + cut] for i in range(0, len(ev), cut)]
    want = naive_groups([ev])
    assert groups_ended_by_exceptions(chunks) == want
    assert groups_ended_by_exceptions(chunks, capacity=1, levels=4) == want       # pairs taken one by one, small level arrays


def test_real_witness_streams(tmp_path: Path) -> None:
    found = 0
    for name in ("exceptions", "generators", "finally_with"):
        script = tmp_path / f"{name}.py"
        script.write_text(textwrap.dedent(INLINE[name]))
        wt = tmp_path / f"{name}.wt"
        assert run_recorded(script, wt, mode="witness").returncode == 0
        with Recording(wt) as rec:
            for s in rec.streams():
                ev = rec.events(s.sid)
                want = naive_groups([ev])
                found += len(want)
                assert groups_ended_by_exceptions([ev[i:i + 97] for i in range(0, len(ev), 97)]) == want
    assert found > 0
