"""`count` and `count-naive` against the `blocks` trace on programs that stress the runtime:
generators (send/throw/close), exceptions at several depths, finally/with, threads switching
every microsecond, asyncio tasks, and threads, generators and coroutines not finished when
the program ends."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from inline_programs import INLINE
from wholetrace.store import Recording
from wtutil import assert_same_counts, profiles, run_plain, run_recorded

THREADS = '''
    import sys
    import threading
    sys.setswitchinterval(1e-6)

    def work(k, n):
        total = 0
        for i in range(n):
            if (i + k) % 3 == 0:
                total += step(i)
            elif i % 5 == 0:
                total -= 1
            else:
                total += 2
        return total

    def step(i):
        if i & 1:
            return i
        return -i

    results = [0] * 6
    def run(k):
        results[k] = work(k, 20000)

    ts = [threading.Thread(target=run, args=(k,)) for k in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(results)
'''

ASYNC = '''
    import asyncio

    async def worker(name, n):
        acc = 0
        for i in range(n):
            if i % 2:
                await asyncio.sleep(0)
                acc += i
            else:
                acc -= 1
        return acc

    async def main():
        got = await asyncio.gather(*(worker(f"w{k}", 50 + k) for k in range(4)))
        print(got)

    asyncio.run(main())
'''

# The daemon thread is still inside `wait_forever` (and its caller) when the program ends:
# the paper's Figure 4 case — each active frame adds one edge to EXIT.
STILL_RUNNING = '''
    import threading

    started = threading.Event()
    never = threading.Event()

    def wait_forever(k):
        for i in range(k):
            if i == k - 1:
                started.set()
                never.wait()
        return k

    def body():
        return wait_forever(3) + 1

    threading.Thread(target=body, daemon=True).start()
    started.wait()

    def finish(n):
        if n > 2:
            raise SystemExit(0)
        return n

    for i in range(5):
        print(finish(i))
'''

# Generators left suspended when the program ends (one inside ``yield from``, one with a
# ``finally`` that prints): recorded as the interpreter closes them at exit.
SUSPENDED = '''
    def numbers():
        i = 0
        while True:
            if i % 2:
                yield i
            i += 1

    def outer(n):
        try:
            for k in range(n):
                if k == 2:
                    yield from numbers()
        finally:
            print("outer closed")

    g = numbers()
    print(next(g), next(g))
    h = outer(5)
    print(next(h))
'''

# Counts still held in locals (a loop's counter is added to the list when the activation
# ends): a thread blocked for good in its 7th iteration, and a coroutine left suspended in
# its 4th; by hand, the loop bodies ran 7 and 4 times, their odd branches 3 and 2 times.
HELD_IN_LOCALS = '''
    import threading

    started = threading.Event()
    never = threading.Event()

    def spin(n):
        total = 0
        for i in range(n):
            if i % 2:
                total += i
            if i == 6:
                started.set()
                never.wait()
        return total

    class Tick:
        def __await__(self):
            yield "tick"

    async def co(n):
        total = 0
        for i in range(n):
            if i % 2:
                total += i
            await Tick()
        return total

    threading.Thread(target=spin, args=(100,), daemon=True).start()
    started.wait()
    c = co(10)
    for _ in range(4):
        c.send(None)
    print("done")
'''

# Bodies whose statements are all global/nonlocal have no block: their one edge, ENTRY ->
# EXIT, is what counts their calls (3 of declare, 2 of inner, 1 of the class body).
NO_BLOCKS = '''
    def declare():
        global A

    def outer():
        x = 1
        def inner():
            nonlocal x
        inner()
        inner()
        return x

    class A:
        global A

    for _ in range(3):
        declare()
    print(outer(), A)
'''

PROGRAMS = {**INLINE, "suspended": SUSPENDED, "no_blocks": NO_BLOCKS, "threads": THREADS, "asyncio": ASYNC, "still_running": STILL_RUNNING}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_count_modes_agree_with_blocks(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"prog_{name}.py"
    script.write_text(textwrap.dedent(PROGRAMS[name]))
    plain = run_plain(script)
    got = {}
    for mode in ("blocks", "count", "count-naive"):
        out = tmp_path / f"{mode}.wt"
        proc = run_recorded(script, out, mode=mode)
        assert (proc.returncode, proc.stdout, proc.stderr) == (plain.returncode, plain.stdout, plain.stderr), mode
        got[mode] = profiles(out)
    for mode in ("count", "count-naive"):
        assert_same_counts(got["blocks"], got[mode], mode, edges=mode == "count")


def test_threads_switching_lose_no_increment(tmp_path: Path) -> None:
    """Six threads switching every microsecond: the counts are the arithmetic of the loop."""
    script = tmp_path / "threads.py"
    script.write_text(textwrap.dedent(THREADS))
    out = tmp_path / "count.wt"
    assert run_recorded(script, out, mode="count").returncode == 0
    by_name = {key[1]: p for key, p in profiles(out).items()}
    step_calls = sum(1 for k in range(6) for i in range(20000) if (i + k) % 3 == 0)
    assert by_name["work"].calls == 6
    assert by_name["step"].calls == step_calls
    odd = sum(1 for k in range(6) for i in range(20000) if (i + k) % 3 == 0 and i & 1)
    cfg = by_name["step"].cfg
    ret_i = next(b.id for b in cfg.blocks[2:] if b.stmts and cfg.stmts[b.stmts[0]].line == cfg.firstline + 2)
    assert int(np.asarray(by_name["step"].blocks)[ret_i]) == odd


def test_counts_held_in_locals_of_unfinished_frames(tmp_path: Path) -> None:
    script = tmp_path / "prog_held.py"
    script.write_text(textwrap.dedent(HELD_IN_LOCALS))
    plain = run_plain(script)
    out = tmp_path / "count.wt"
    proc = run_recorded(script, out, mode="count")
    assert (proc.returncode, proc.stdout, proc.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    by_name = {key[1]: p for key, p in profiles(out).items()}
    with Recording(out) as rec:
        plans = {f.qualname: f.cfg["plan"] for f in rec.functions()}
    assert plans["spin"]["local_counters"] and plans["co"]["local_counters"]  # the case under test
    for name, body, odd in (("spin", 7, 3), ("co", 4, 2)):
        prof = by_name[name]
        first = prof.cfg.firstline
        lines = {prof.cfg.stmts[i].line - first: int(c) for i, c in enumerate(prof.stmts)}
        assert lines[3] == body and lines[4] == odd, (name, lines)   # "if i % 2", "total += i"
