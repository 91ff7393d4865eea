"""Per-activation probes on list buffers (``runtime.buffers``): every activation's entry
block recorded once, in every trace mode.

Oracles: the sys.settrace line counts (``tests/oracles``) on a program whose functions test
the entry of an activation (a loop at the top re-enters the entry block; generators resumed by
``send``/``throw``; exceptions raised in the entry block; coroutines), in every trace mode; the
recursion limit hit at entry against the program's own count; ``int.to_bytes`` per value as
the twin of the flush conversion (which packs with ``struct``).
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oracles.settrace_lines import line_counts
from wtutil import ENV, compare_lines, run_plain, run_recorded
from wholetrace.store import schema
from wholetrace.events import LEAVE, enter_code
from wholetrace.runtime.buffers import chunk_events

ENTRIES = '''
    import sys

    def plain(x):
        y = x + 1
        return y

    def top_while(n):
        while n > 0:
            n -= 1
        return n

    def top_for(xs):
        for x in xs:
            if x < 0:
                return x
        return 0

    def raises_at_entry(x):
        return 1 // x

    def raises_later(x):
        if x:
            return [][x]
        return x

    def gen(n):
        got = yield n
        while got:
            try:
                got = yield got * 2
            except KeyError:
                got = yield -1
        return "done"

    async def no_await(x):
        return x * 3

    async def awaits(x):
        import asyncio
        await asyncio.sleep(0)
        return x + 1

    class C:
        def __init__(self, v):
            self.v = v

        @property
        def bad(self):
            raise AttributeError("bad")

        def __getattr__(self, name):
            return len(name)

    def run():
        total = 0
        for i in range(4):
            total += plain(i) + top_while(i) + top_for([i, -i])
            try:
                total += raises_at_entry(i % 2)
            except ZeroDivisionError:
                total += 100
            try:
                total += raises_later(i % 2)
            except IndexError:
                total += 1000
        g = gen(2)
        print(next(g), g.send(5), g.throw(KeyError("k")), g.send(0) if False else None)
        try:
            g.send(0)
        except StopIteration as e:
            print("stop", e.value)
        import asyncio
        print(asyncio.run(no_await(4)), asyncio.run(awaits(4)))
        c = C(3)
        print(c.bad, c.v)
        print(total)

    run()
'''


@pytest.mark.parametrize("mode", ["blocks", "witness", "branches", "path", "full"])
def test_activation_entries_against_the_oracle(mode: str, tmp_path: Path) -> None:
    script = tmp_path / "entries.py"
    script.write_text(textwrap.dedent(ENTRIES))
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    oracle = line_counts(script, [], {str(script)})
    out = tmp_path / f"{mode}.wt"
    proc = run_recorded(script, out, mode=mode, options=("--no-cache",))
    assert (proc.returncode, proc.stdout, proc.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert compare_lines(out, {str(script)}, oracle) >= 30


DEEP = '''
    import sys

    def deep(n):
        global DEPTH
        DEPTH = n
        return deep(n + 1)

    sys.setrecursionlimit(120)
    try:
        deep(0)
    except RecursionError as e:
        print("limit", type(e).__name__)
    print(DEPTH)
'''


def test_recursion_limit_hit_at_entry(tmp_path: Path) -> None:
    """The settrace oracle cannot count here (its tracer changes the depth reached): the
    program counts its own activations, and each entered one records its entry block once."""
    from wtutil import profiles

    script = tmp_path / "deep.py"
    script.write_text(textwrap.dedent(DEEP))
    plain = run_plain(script)
    out = tmp_path / "blocks.wt"
    proc = run_recorded(script, out, options=("--no-cache",))
    assert proc.returncode == plain.returncode == 0
    depth = int(proc.stdout.split()[-1])
    prof = next(p for (_f, q, _l), p in profiles(out).items() if q == "deep")
    stmt = next(i for i, st in enumerate(prof.cfg.stmts) if st.line == 6)   # DEPTH = n
    assert int(prof.stmts[stmt]) == depth + 1


def test_chunk_events_are_the_int32_events_the_store_writes() -> None:
    """The flushed chunk, as the writer stores it, is the chunk packed as little-endian int32."""
    from wholetrace.runtime.buffers import PACK

    rnd = random.Random(7)
    sizes = [rnd.randint(0, 30) for _ in range(200)] + [PACK - 1, PACK, PACK + 1, 3 * PACK + 5]
    for size in sizes:
        chunk = [rnd.choice([LEAVE, -2, 0, 4, 9, enter_code(rnd.randint(0, 9)), rnd.randint(-2**31, 2**31 - 1),
                             -2**31, 2**31 - 1]) for _ in range(size)]
        got = schema.events_to_le_int32(chunk_events(chunk))
        assert bytes(memoryview(got).cast("B")) == b"".join(v.to_bytes(4, "little", signed=True) for v in chunk)


def test_take_events_takes_the_first_values_off_the_buffer() -> None:
    """The flusher's form: the first n values converted and removed, the rest left in place."""
    from wholetrace.errors import StoreError
    from wholetrace.runtime.buffers import PACK, take_events

    rnd = random.Random(3)
    for size, n in ((0, 0), (5, 3), (PACK + 7, PACK + 2), (2 * PACK, 2 * PACK)):
        buf = [rnd.randint(-2**31, 2**31 - 1) for _ in range(size)]
        before = list(buf)
        got = take_events(buf, n)
        assert list(got) == before[:n] and buf == before[n:]
    buf = [1, 1 << 40, 3]
    with pytest.raises(StoreError):
        take_events(buf, 2)
    assert buf == [3]


def test_recording_does_not_import_numpy(tmp_path: Path) -> None:
    """A recording process in a trace or count mode never imports numpy (a fifth of a short
    recording's start-up); `full` mode does, for its value log."""
    prog = tmp_path / "p.py"
    prog.write_text("import sys\nprint(sorted(m for m in ('numpy', 'numba') if m in sys.modules))\n")
    for mode in ("blocks", "count", "witness", "path"):
        out = subprocess.run([sys.executable, "-m", "wholetrace", "record", "-q", "--mode", mode, "-o",
                              str(tmp_path / f"{mode}.wt"), str(prog)], capture_output=True, text=True,
                             env=ENV, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout == "[]\n", (mode, out.stdout)


def test_chunk_events_rejects_values_that_are_no_events() -> None:
    from wholetrace.errors import StoreError

    with pytest.raises(StoreError):
        chunk_events([1, 1 << 40])
    with pytest.raises(StoreError):
        chunk_events([1, None])  # type: ignore[list-item]
    with pytest.raises(StoreError):
        chunk_events([1, 2.0])  # type: ignore[list-item]
    with pytest.raises(StoreError):
        chunk_events([0] * 9000 + [-(1 << 31) - 1])   # past the first packed slice
