"""A program's own ``sys.settrace`` tracer sees the same events in its coroutines recorded as
plain: the await wrappers (LEAVE before, ENTER after, only when driven by hand) start no line
(review21a HIGH-1: two extra ``line`` events per ``await``; docs/design.md, wave 21)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wtutil import run_plain, run_recorded

PROGRAM = '''\
import asyncio, sys, types
ev = []
def tr(frame, event, arg):
    if frame.f_code.co_filename == __file__ and frame.f_code.co_name not in ("tr", "pause"):
        ev.append((frame.f_code.co_name, event, frame.f_lineno))
    return tr
@types.coroutine
def pause():
    yield
class Ctx:
    async def __aenter__(self):
        await asyncio.sleep(0)
        return self
    async def __aexit__(self, *a):
        await asyncio.sleep(0)
async def agen():
    for i in range(2):
        await asyncio.sleep(0)
        yield i
async def leaf(n):
    await asyncio.sleep(0)
    x = [v async for v in agen()]
    async with Ctx(): n += 1
    async for v in agen(): n += v
    return await asyncio.sleep(0, n + len(x))
async def main():
    a = await leaf(1)
    b = await asyncio.gather(leaf(2), leaf(3))
    return a + sum(b)
async def by_hand():
    await pause()
    v = (await pause(),
         1)
    return v
sys.settrace(tr)
print(asyncio.run(main()))
c = by_hand()
c.send(None); c.send(None)
try:
    c.send(None)
except StopIteration as e:
    print(e.value)
sys.settrace(None)
for e in ev:
    print(*e)
'''


@pytest.mark.parametrize("mode", ["blocks", "count", "witness", "path", "full"])
def test_tracer_events_in_coroutines_equal_plain(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    rec = run_recorded(script, tmp_path / "t.wt", mode=mode)
    assert (rec.returncode, rec.stderr) == (0, "")
    assert rec.stdout.splitlines() == plain.stdout.splitlines()
