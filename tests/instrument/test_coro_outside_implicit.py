"""Implicit awaits (``async with`` enter/exit, ``async for``'s ``__anext__``, async
comprehensions) in coroutines driven by hand and in asyncio tasks: every trace mode's counts
equal count mode's (which equal the ``sys.settrace`` tracer's), and witness/branches/path
regenerate blocks' streams event for event (MED-3a, docs/design.md, wave 20)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracles.settrace_lines import line_counts
from regenutil import compare
from test_coro_outside import PROGRAMS as SIX, _record
from wtutil import assert_same_counts, compare_lines, profiles

BODY = '''\
class CM:
    def __init__(self, swallow=False, fail=False):
        self.swallow, self.fail = swallow, fail
    async def __aenter__(self):
        await pause()
        if self.fail:
            raise KeyError("enter")
        return self
    async def __aexit__(self, *exc):
        await pause()
        return self.swallow
async def agen(n):
    for i in range(n):
        await pause()
        yield i
async def early():
    async with CM() as c:
        return 7
async def main():
    out = []
    async with CM() as a, CM() as b:
        out.append(a is not b)
    async with CM(swallow=True):
        raise ValueError("swallowed")
    try:
        async with CM(fail=True):
            out.append("never")
    except KeyError:
        out.append("enter failed")
    try:
        async with CM():
            raise TypeError("through")
    except TypeError:
        out.append("through")
    async for i in agen(4):
        if i == 1:
            continue
        if i == 3:
            break
        out.append(i)
    else:
        out.append("no break")
    async for i in agen(2):
        out.append(i)
    else:
        out.append("exhausted")
    out.append([i * 2 async for i in agen(3)])
    out.append({i: await early() for i in range(2)})
    out.append(await early())
    return out
'''

PROGRAMS = {
    "implicit_by_hand": '''\
import types
@types.coroutine
def pause():
    return (yield)
''' + BODY + '''\
c = main()
n = 0
try:
    while True:
        c.send(None)
        n += 1
except StopIteration as e:
    print(n, e.value)
''',
    "implicit_in_task": '''\
import asyncio
async def pause():
    await asyncio.sleep(0)
''' + BODY + '''\
async def wrapped():
    out = []
    async for i in agen(3):     # continue crosses a finally: the loop iterates through afor_wrapper
        try:
            if i == 1:
                continue
            out.append(i)
        finally:
            out.append("f")
    return out
print(asyncio.run(main()), asyncio.run(wrapped()))
''',
    # review21a HIGH-2: an async generator whose first step a task drives, then driven by hand
    # (its await suspends at a types.coroutine yield while plain code runs an instrumented helper)
    "agen_task_then_hand": '''\
import asyncio, types
@types.coroutine
def pause():
    v = yield "p"
    return v
mode = ["task"]
async def ps():
    if mode[0] == "task":
        await asyncio.sleep(0)
    else:
        await pause()
async def ag():
    i = 0
    while i < 4:
        i += 1
        await ps()
        yield i
async def consume(a):
    v = await a.__anext__()
    print("task got", v)
a = ag()
loop = asyncio.new_event_loop(); loop.run_until_complete(consume(a))
mode[0] = "hand"
def helper(k):
    s = 0
    for j in range(k):
        s += j
    return s
for _ in range(2):
    c = a.asend(None)
    print("yielded", c.send(None))
    print("helper", helper(3))
    try:
        c.send(None)
    except StopIteration as e:
        print("got", e.value)
    print("helper", helper(2))
''',
}

MODES = (("blocks",), ("witness",), ("branches",), ("path", "--no-wpp"), ("path", "--wpp"), ("full",))


def _script(tmp: Path, name: str) -> Path:
    script = tmp / f"{name}.py"
    script.write_text({**SIX, **PROGRAMS}[name])
    return script


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_count_mode_equals_settrace(name: str, tmp_path: Path) -> None:
    script = _script(tmp_path, name)
    wt = _record(script, tmp_path, "count")
    assert compare_lines(wt, {str(script)}, line_counts(script, [], {str(script)})) > 0


@pytest.mark.parametrize("mode", MODES, ids="-".join)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_trace_modes_equal_count(name: str, mode: tuple[str, ...], tmp_path: Path) -> None:
    script = _script(tmp_path, name)
    counted = profiles(_record(script, tmp_path, "count"))
    assert_same_counts(profiles(_record(script, tmp_path, *mode)), counted, mode)


@pytest.mark.parametrize("name", sorted(PROGRAMS) + sorted(SIX))
def test_regenerates_blocks(name: str, tmp_path: Path) -> None:
    """witness, branches and raw path streams regenerate blocks' activation form, event for
    event but where an implicit call explains the difference: by hand, the async generator the
    ``break`` drops is closed there (no asyncio finaliser hook), an activation between two of
    ``main``'s blocks that the witness/path streams place at the next block, as any implicit call."""
    script = _script(tmp_path, name)
    blocks = _record(script, tmp_path, "blocks")
    for mode in (("witness",), ("branches",), ("path", "--no-wpp")):
        compare(blocks, _record(script, tmp_path, *mode), exact=name != "implicit_by_hand")
