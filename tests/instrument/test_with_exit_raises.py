"""An exception out of a ``with`` item's ``__exit__``/``__aexit__`` is the with exit's, not the ``with``
statement's first block's: count reads the same counts as blocks (review19a MED-1, review19c P4)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cleanup_check import assert_count_is_blocks, record_modes
from regenutil import compare

pytestmark = pytest.mark.compat

CTX = '''\
class Ctx:
    def __init__(self, n=0): self.n = n
    def __enter__(self): return self
    def __exit__(self, t, v, tb):
        if t is KeyError or self.n == 1:
            raise ValueError(self.n)
        return t is TypeError
class ACtx(Ctx):
    async def __aenter__(self): return self
    async def __aexit__(self, t, v, tb): return self.__exit__(t, v, tb)
'''

# Each program: the exit raises after the body raised (WITH_EXCEPT_START), on a normal
# completion (the __exit__(None, None, None) call), in a loop, for the second item of a
# multi-item with, in an async with (the __aexit__ await), at module level (the runtime's
# ExceptionSites); and __enter__ / the item's expression raising (still the with-enter's).
PROGRAMS = {
    "body_raises": '''
        def wi(k):
            try:
                with Ctx():
                    if k == 0:
                        raise KeyError(k)
            except ValueError:
                print("wi", k)
        for k in range(3):
            wi(k)
        ''',
    "normal_exit": '''
        def wn(k):
            try:
                with Ctx(k):
                    x = k + 1
                print("after", x)
            except ValueError:
                print("caught", k)
        for k in range(3):
            wn(k)
        ''',
    "loop": '''
        def wl(k):
            for i in range(4):
                try:
                    with Ctx():
                        if i == 0:
                            raise KeyError(k)
                        if i == 1:
                            raise TypeError(k)
                        if i == 2:
                            continue
                except ValueError as e:
                    print("wl", k, i, e)
        for k in range(3):
            wl(k)
        ''',
    "items": '''
        def wm(k):
            try:
                with Ctx(0) as a, Ctx(k) as b, Ctx(2 * k) as c:
                    y = k
                print("y", y)
            except ValueError as e:
                print("items", k, e)
        for k in range(3):
            wm(k)
        ''',
    "async": '''
        import asyncio
        async def wa(k):
            try:
                async with ACtx(k):
                    if k == 2:
                        raise KeyError(k)
            except ValueError as e:
                print("async", k, e)
        for k in range(3):
            asyncio.run(wa(k))
        ''',
    "module": '''
        for k in range(3):
            try:
                with Ctx(k):
                    if k == 2:
                        raise KeyError(k)
            except ValueError as e:
                print("module", k, e)
        ''',
    "enter_raises": '''
        class Bad:
            def __enter__(self): raise ValueError("enter")
            def __exit__(self, *a): return False
        def we(k):
            try:
                with (Ctx(k) if k else Bad()) as c:
                    z = 1
                print("z", z)
            except ValueError as e:
                print("we", k, e)
        for k in range(3):
            we(k)
        ''',
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_with_exit_raising_count_equals_blocks(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(CTX + textwrap.dedent(PROGRAMS[name]))
    wts = record_modes(script, ("blocks", "count", "witness"), tmp_path)
    assert_count_is_blocks(wts, name)
    compare(wts["blocks"], wts["witness"], exact=True)
