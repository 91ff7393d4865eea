"""Coroutines driven outside an asyncio task (``send``/``throw``/``close`` by hand, ``asend`` of
async generators, a coroutine resumed in another thread, a loop of ``send(None)`` over many
coroutines) that suspend in an ``await``: count mode against the ``sys.settrace`` line tracer,
and the trace modes (MED-3a, docs/design.md "Coroutines driven outside an asyncio task, wave 20").

The trace modes were wrong on these before wave 20's fix (every one of them, `blocks` included:
the suspended coroutine's activation stayed open in its driver's stream and the driver's next
block was read as the coroutine's): an ``await`` is now a generator suspension."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracles.settrace_lines import line_counts
from wtutil import assert_same_counts, compare_lines, profiles, run_plain, run_recorded

PAUSE = '''\
import types
@types.coroutine
def pause():
    v = yield "p"
    return v
'''

PROGRAMS = {
    # counts19's minimal reproducer: two sends, no ``async with``, no ``close``
    "send_twice": PAUSE + '''\
async def f():
    await pause()
    return 1
c = f()
c.send(None)
try:
    c.send(None)
except StopIteration:
    pass
print("done")
''',
    # review18c's aclose.py: ``close`` of a coroutine suspended in ``__aenter__``
    "close_in_aenter": PAUSE + '''\
class A:
    async def __aenter__(self):
        await pause()
        return self
    async def __aexit__(self, *a):
        return True
async def f():
    async with A():
        pass
c = f()
c.send(None)
c.close()
print("closed")
''',
    # an async generator driven by hand: ``asend`` awaitables sent to, one thrown into
    "asend_athrow": PAUSE + '''\
async def ag():
    for i in range(3):
        await pause()
        yield i
a = ag()
c = a.asend(None)
c.send(None)
try:
    c.send(None)
except StopIteration as e:
    print("got", e.value)
c2 = a.asend(None)
c2.send(None)
try:
    c2.throw(ValueError)
except ValueError:
    print("thrown")
''',
    # a trio-style loop: round robin of ``send(None)`` over several coroutines
    "round_robin": '''\
import types
@types.coroutine
def pause():
    return (yield)
async def worker(n):
    total = 0
    for i in range(n):
        total += i
        await pause()
    return total
def loop(coros):
    out = []
    while coros:
        c = coros.pop(0)
        try:
            c.send(None)
            coros.append(c)
        except StopIteration as e:
            out.append(e.value)
    return out
print(loop([worker(3), worker(4), worker(2)]))
''',
    # started in the main thread, finished in another
    "other_thread": '''\
import threading, types
@types.coroutine
def pause():
    return (yield)
async def f():
    x = 1
    await pause()
    x += 1
    return x
c = f()
c.send(None)
def other():
    try:
        c.send(None)
    except StopIteration as e:
        print("thread got", e.value)
t = threading.Thread(target=other)
t.start()
t.join()
''',
    # inside an asyncio task, a coroutine driven by hand (not awaited) that awaits asyncio.sleep
    "inside_task": '''\
import asyncio
async def sub():
    await asyncio.sleep(0)
    return 5
async def t():
    c = sub()
    try:
        while True:
            c.send(None)
            await asyncio.sleep(0)
    except StopIteration as e:
        return e.value
print(asyncio.run(t()))
''',
}

TRACE_MODES = ("blocks", "witness", "branches", "path", "full")


def _script(tmp: Path, name: str) -> Path:
    script = tmp / f"{name}.py"
    script.write_text(PROGRAMS[name])
    return script


def _record(script: Path, tmp: Path, mode: str, *options: str) -> Path:
    """``record --mode MODE [options]``, whose output must be plain's."""
    plain = run_plain(script)
    wt = tmp / f"{script.stem}.{mode}{''.join(options)}.wt"
    got = run_recorded(script, wt, mode=mode, options=options)
    assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr), (mode, options)
    return wt


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_count_mode_equals_settrace(name: str, tmp_path: Path) -> None:
    """Count mode keeps no stream: its line counts are the settrace tracer's."""
    script = _script(tmp_path, name)
    wt = _record(script, tmp_path, "count")
    assert compare_lines(wt, {str(script)}, line_counts(script, [], {str(script)})) > 0


@pytest.mark.parametrize("mode", TRACE_MODES)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_trace_modes_equal_count(name: str, mode: str, tmp_path: Path) -> None:
    """Each trace mode's counts (block, statement, edge, call) are count mode's."""
    script = _script(tmp_path, name)
    counted = profiles(_record(script, tmp_path, "count"))
    assert_same_counts(profiles(_record(script, tmp_path, mode)), counted, mode)
