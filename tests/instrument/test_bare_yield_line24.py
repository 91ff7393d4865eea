"""A generator whose statement starts with a bare ``yield`` gives a program's tracer the events plain Python gives.

The ``None`` the yield wrapper sends (``(yield (None, wt.a(LEAVE), ...)[0])``) had no position:
the compiler gave it the line of the instruction before it, the prologue's (the ``def`` or
decorator line), so a program's ``sys.settrace`` tracer saw a ``line`` event there before the
yield's own line, in every trace mode (found with ``@types.coroutine def pause(): yield``, the
hand-driven coroutines' awaitable of ``tests/regen/test_hand_wrapped24.py``).  Oracle: the
tracer's events of the plain run.
"""

from __future__ import annotations

import pytest

from wtutil import run_plain, run_recorded

PROGRAM = '''\
import sys
import types

events = []


def tracer(frame, event, arg):
    if frame.f_code.co_filename != __file__ or frame.f_code.co_name == "tracer":
        return None
    events.append((frame.f_code.co_name, event, frame.f_lineno))
    return tracer


@types.coroutine
def pause():
    yield


def bare():
    yield


def assigned():
    x = yield
    yield x


def valued(n):
    yield n
    yield


async def co():
    await pause()
    return 1


def drive(c):
    try:
        while True:
            c.send(None)
    except StopIteration as e:
        return e.value


sys.settrace(tracer)
print(list(pause()), list(bare()), list(assigned()), list(valued(2)), drive(co()))
g = assigned()
next(g)
print(g.send(5))
sys.settrace(None)
print(len(events), events)
'''


@pytest.mark.parametrize("mode", ["blocks", "witness", "branches", "path", "full"])
def test_tracer_events_as_plain(tmp_path, mode: str) -> None:
    script = tmp_path / "bare.py"
    script.write_text(PROGRAM)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    res = run_recorded(script, tmp_path / f"{mode}.wt", mode=mode)
    assert (res.returncode, res.stdout, res.stderr) == (plain.returncode, plain.stdout, plain.stderr), mode
