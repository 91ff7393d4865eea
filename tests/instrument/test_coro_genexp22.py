"""An await in a generator expression's first iterable (run by the coroutine itself; the rest of the
expression runs in the generator's own frame): since wave 21 the await wrapper's assignment
expression made such a module a SyntaxError, so it was left uninstrumented (coro22, wave 22)."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from wtutil import assert_same_counts, profiles, run_plain, run_recorded

GENEXP = dedent('''\
    import asyncio, types
    @types.coroutine
    def pause():
        yield
    async def h(n):
        await pause() if n else await asyncio.sleep(0)
        return [1, 2]
    async def f(n):
        s = sum(x for x in await h(n))
        t = list(x * y for x in await h(n) for y in (1, 2))
        return s, t
    c = f(1)
    try:
        while True:
            c.send(None)
    except StopIteration as e:
        print(e.value)
    print(asyncio.run(f(0)))
''')


@pytest.mark.parametrize("mode", ["blocks", "witness", "path"])
def test_await_in_generator_expression_iterable(tmp_path: Path, mode: str) -> None:
    """An await in a generator expression's first iterable (the coroutine's own suspension):
    the module is instrumented (an assignment expression there made it a SyntaxError: left
    uninstrumented), by hand and by a task, and counts are count mode's."""
    script = tmp_path / "genexp.py"
    script.write_text(GENEXP)
    plain = run_plain(script)
    got = run_recorded(script, tmp_path / "g.wt", mode=mode)
    assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    counted = run_recorded(script, tmp_path / "g.count.wt", mode="count")
    assert (counted.returncode, counted.stdout, counted.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    want = profiles(tmp_path / "g.count.wt")
    assert any(key[1] == "f" for key in want)
    assert_same_counts(want, profiles(tmp_path / "g.wt"), mode)
