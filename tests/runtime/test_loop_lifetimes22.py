"""Loops whose ``continue`` crosses cleanup (``instrument.loopwrap``): the wrapper keeps no item and
no awaitable between steps, so ``__del__`` runs and ``sys.getrefcount`` reads as in plain
(review22e HIGH-1, wave 22: a ``zip`` of the item held it until the next step)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wtutil import run_plain, run_recorded

REFC = 'import sys, asyncio, weakref\ndef f(xs):\n    for x in xs:\n        try:\n            print("refcount", sys.getrefcount(x))\n            continue\n        finally:\n            pass\nf([object(), object()])\nclass Aw:\n    def __init__(self, v): self.v = v\n    def __await__(self):\n        return self.v\n        yield\n    def __del__(self): print("del awaitable", self.v)\nclass It:\n    def __init__(self): self.i = 0\n    def __aiter__(self): return self\n    def __anext__(self):\n        self.i += 1\n        if self.i > 2: raise StopAsyncIteration\n        return Aw(self.i)\nasync def main():\n    async for x in It():\n        try:\n            print("body", x)\n            continue\n        finally:\n            pass\n    print("end")\nasyncio.run(main())\n'

LIFE = 'import gc, asyncio\nclass Item:\n    def __init__(self, n): self.n = n\n    def __del__(self): print("del item", self.n)\ndef items():\n    for n in range(3):\n        yield Item(n)\ndef f():\n    for x in items():\n        try:\n            if x.n == 1:\n                del x\n                print("after del 1")\n                continue\n            n = x.n\n            del x\n            print("after del", n)\n        finally:\n            print("finally")\n    print("loop done")\nf()\n# exhausted: plain frees last item? loop var holds it\ndef g():\n    it = iter([Item(10)])\n    for x in it:\n        try:\n            del x\n            print("body")\n            continue\n        finally:\n            pass\n    print("g done")\ng()\nclass AIt:\n    def __init__(self): self.i = 0\n    def __aiter__(self): return self\n    async def __anext__(self):\n        self.i += 1\n        if self.i > 2: raise StopAsyncIteration\n        return Item(100 + self.i)\nasync def h():\n    async for x in AIt():\n        try:\n            del x\n            print("abody")\n            continue\n        finally:\n            pass\n    print("h done")\nasyncio.run(h())\n'


@pytest.mark.parametrize("mode", ["blocks", "count", "count-naive", "witness", "branches", "path"])
@pytest.mark.parametrize("name", ["refc", "life"])
def test_items_released_as_plain(tmp_path: Path, name: str, mode: str) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text({"refc": REFC, "life": LIFE}[name])
    plain = run_plain(script)
    got = run_recorded(script, tmp_path / "r.wt", mode=mode)
    assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr)
