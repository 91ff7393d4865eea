"""A context copied into another OS thread (explore22 HIGH-2; wave 22's tests, ctx22, the fix of wave 23): each thread's code goes to
a stream of that thread, a task's code to the task's stream.

``asyncio.to_thread``, ``run_in_executor(None, ctx.run, ...)``, ``loop.call_soon_threadsafe`` (the
callback runs in the loop's thread in the caller's context) and ``copy_context().run`` in a pool
run code in another thread than the one whose stream the context named.  Before wave 23 that code
appended to the other thread's stream: misattributed events, and an unreadable recording when both
threads appended at once (``counts``: "invalid event").  Oracles: the ``sys.settrace`` line tracer
(blocks), count mode's counts (each trace mode), and the thread each function runs in (known from
the program: each stream may hold only activations of its own thread's functions).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from naive_decode import raw_events
from oracles.settrace_lines import line_counts
from wholetrace.store import Recording
from wtutil import assert_same_counts, compare_lines, profiles, run_plain, run_recorded

# slow: only in a worker thread; busy: only in the main thread (stream of task Task-1)
OVERLAP = '''\
import asyncio, contextvars, threading
go = threading.Event()
def slow(n):
    go.wait()
    t = 0
    for k in range(n):
        if k % 3:
            t += 1
    return t
def busy(n):
    t = 0
    for k in range(n):
        t += k % 7
        if k == 100:
            go.set()             # the worker runs beside the rest of this loop, in Task-1's context
    return t
async def main():
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(None, contextvars.copy_context().run, slow, 150000)
    print(busy(150000) > 0)
    print(await fut)
asyncio.run(main())
'''

PROGRAMS = {
    "overlap": (OVERLAP, {"slow": "asyncio_0", "busy": "Task-1"}),
    # asyncio.to_thread: the worker runs in a copy of the task's context
    "to_thread": ('''\
import asyncio
def slow(n):
    t = 0
    for k in range(n):
        if k % 3:
            t += 1
    return t
def busy(n):
    return sum(k % 7 for k in range(n))
async def main():
    r = await asyncio.to_thread(slow, 3000)
    print(r, busy(2000))
asyncio.run(main())
''', {"slow": "asyncio_0", "busy": "Task-1"}),
    # call_soon_threadsafe: cb runs in the loop's (main) thread in the worker's context
    "threadsafe": ('''\
import asyncio, threading
def cb(i):
    if i % 2:
        return i
    return -i
def spin(n):
    t = 0
    for k in range(n):
        t += k % 7
    return t
def worker(loop, n, done):
    for i in range(n):
        loop.call_soon_threadsafe(cb, i)
        spin(20)
    loop.call_soon_threadsafe(done.set)
async def main():
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    th = threading.Thread(target=worker, args=(loop, 300, done), name="W")
    th.start()
    await done.wait()
    th.join()
    print("done")
asyncio.run(main())
''', {"cb": "MainThread", "spin": "W", "worker": "W"}),
    # no asyncio: one context run in a pool thread, then in the main thread again
    "pool": ('''\
import contextvars
from concurrent.futures import ThreadPoolExecutor
def slow(n):
    t = 0
    for k in range(n):
        if k % 3:
            t += 1
    return t
def busy(n):
    t = 0
    for k in range(n):
        t += k % 7
    return t
ctx = contextvars.copy_context()
with ThreadPoolExecutor(1, thread_name_prefix="P") as ex:
    print(ex.submit(ctx.run, slow, 3000).result(), ex.submit(ctx.run, slow, 30).result())
print(ctx.run(busy, 3000))
''', {"slow": "P_0", "busy": "MainThread"}),
}

TRACE_MODES = ("blocks", "witness", "branches", "path", "full")


def _record(tmp: Path, name: str, mode: str, *options: str, source: str | None = None) -> tuple[Path, Path]:
    """``record`` program ``name`` (or ``source``), whose output must be plain's."""
    script = tmp / f"{name}.py"
    script.write_text(PROGRAMS[name][0] if source is None else source)
    plain = run_plain(script)
    wt = tmp / f"{name}.{mode}{''.join(options)}.wt"
    got = run_recorded(script, wt, mode=mode, options=options)
    assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr), (mode, got.stderr[-2000:])
    return script, wt


def _functions_by_stream(wt: Path) -> dict[str, set[str]]:
    """Stream name -> the qualnames of the activations its events open."""
    out: dict[str, set[str]] = {}
    with Recording(wt) as rec:
        names = {f.fid: f.qualname for f in rec.functions()}
        for st in rec.streams():
            got = out.setdefault(st.name, set())
            got.update(names[v] for kind, v in raw_events(rec.iter_chunks(st.sid)) if kind == "F")
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_thread_has_its_own_stream(name: str, tmp_path: Path) -> None:
    """Each function's activations are in streams of the thread (or task) it ran in; blocks'
    line counts are the settrace tracer's."""
    script, wt = _record(tmp_path, name, "blocks")
    where = PROGRAMS[name][1]
    for stream, functions in _functions_by_stream(wt).items():
        for f in functions & where.keys():
            assert where[f] == stream, (f, "ran in", where[f], "recorded in", stream)
    assert compare_lines(wt, {str(script)}, line_counts(script, [], {str(script)})) > 0


@pytest.mark.parametrize("mode", TRACE_MODES + ("path --wpp",))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_trace_modes_read_and_equal_count(name: str, mode: str, tmp_path: Path) -> None:
    """Every trace mode's recording reads, with count mode's counts."""
    _script, counted = _record(tmp_path, name, "count")
    mode, *options = mode.split()
    _script, wt = _record(tmp_path, name, mode, *options)
    assert_same_counts(profiles(wt), profiles(counted), (name, mode))


LAZY = '''\
import asyncio, importlib, sys
sys.path.insert(0, "")
def busy(n):
    return sum(k % 7 for k in range(n))
async def main():
    m = await asyncio.to_thread(importlib.import_module, "lazymod")
    print(m.C.x, m.t, busy(2000))
asyncio.run(main())
'''

LAZYMOD = '''\
def g(k):
    if k % 2:
        return k
    return 0
class C:
    x = 0
    for i in range(50):
        if i % 3:
            x += 1
t = 0
for k in range(40):
    t += g(k)
'''


@pytest.mark.parametrize("mode", ("blocks", "witness", "full"))
def test_module_and_class_bodies_in_a_copied_context(mode: str, tmp_path: Path) -> None:
    """A module imported by ``asyncio.to_thread`` (a lazy import in a worker thread, the task's
    context): its body, a class body and a function it calls go to the worker thread's stream
    (module and class bodies check the thread through ``Streams.here``); blocks' lines are the
    settrace tracer's; each mode's counts are count mode's."""
    (tmp_path / "lazymod.py").write_text(LAZYMOD)
    _script, counted = _record(tmp_path, "lazy", "count", source=LAZY)
    script, wt = _record(tmp_path, "lazy", mode, source=LAZY)
    assert_same_counts(profiles(wt), profiles(counted), ("lazy", mode))
    if mode != "blocks":
        return
    for stream, functions in _functions_by_stream(wt).items():
        if functions & {"g", "C"}:
            assert stream == "asyncio_0", (functions, "recorded in", stream)
    files = {str(script), str(tmp_path / "lazymod.py")}
    oracle = line_counts(script, [], files)
    assert compare_lines(wt, files, oracle) > 0


def test_copies_of_one_context_share_a_stream_in_a_thread(tmp_path: Path) -> None:
    """300 ``call_soon_threadsafe`` callbacks, each in its own copy of the worker's context, run
    in the loop's thread: one stream there for all of them (not one a callback)."""
    _script, wt = _record(tmp_path, "threadsafe", "blocks")
    with Recording(wt) as rec:
        names = sorted(st.name for st in rec.streams())
    assert names == ["MainThread", "MainThread", "Task-1", "W"], names
