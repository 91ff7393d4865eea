"""Which coroutine activations record LEAVE/ENTER at their awaits (``wt.d``, the hand-driven
flag of ``instrument.awaits.hand_flag``): false for an asyncio task's coroutine and what it
awaits, true for coroutines driven by ``send`` from plain code, from a task's coroutine and
from another thread (MED-3a, docs/design.md, wave 21).  The program reads the flag of the
activation that calls ``flag`` from its frame (recorded in blocks mode)."""

from __future__ import annotations

import sys
from pathlib import Path
from textwrap import dedent

from wtutil import run_plain, run_recorded

PROGRAM = dedent('''\
    import asyncio, sys, threading, types
    seen = []
    @types.coroutine
    def pause():
        yield
    def flag(name):
        seen.append((name, bool(sys._getframe(1).f_locals.get("wt.d", "unset"))))
    async def leaf(tag):
        flag("leaf:" + tag)
        await asyncio.sleep(0)
    async def mid(tag):
        flag("mid:" + tag)
        await leaf(tag)
    async def byhand_leaf(tag):
        flag("byhand_leaf:" + tag)
        await pause()
    async def byhand(tag):
        flag("byhand:" + tag)
        await byhand_leaf(tag)
        await pause()
    def drive(c):
        try:
            while True:
                c.send(None)
        except StopIteration:
            pass
    async def agen():
        flag("agen")
        for i in range(2):
            await asyncio.sleep(0)
            yield i
    async def task_main():
        flag("task_main")
        await mid("awaited")
        drive(byhand("in_task"))
        await asyncio.gather(mid("gather"))
        async for i in agen():
            pass
        await asyncio.create_task(mid("created"))
    drive(byhand("plain"))
    asyncio.run(task_main())
    th = threading.Thread(target=drive, args=(byhand("thread"),))
    th.start(); th.join()
    print(" ".join(f"{n}={int(v)}" for n, v in seen))
''')

WANT = ("byhand:plain=1 byhand_leaf:plain=1 task_main=0 mid:awaited=0 leaf:awaited=0 byhand:in_task=1 "
        "byhand_leaf:in_task=1 mid:gather=0 leaf:gather=0 agen=1 mid:created=0 leaf:created=0 "
        "byhand:thread=1 byhand_leaf:thread=1")


def test_hand_driven_flag(tmp_path: Path) -> None:
    script = tmp_path / "flags.py"
    script.write_text(PROGRAM)
    assert run_plain(script).stdout.split() == [w.split("=")[0] + "=1" for w in WANT.split()]   # unset: "unset" is true
    got = run_recorded(script, tmp_path / "flags.wt")
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == WANT.split(), sys.version
